import TextEscaping

/// The output formats of diagnostics.
public enum DiagnosticFormat: String, Sendable, CaseIterable {
    /// Compiler style: `file:line:column: severity: message [code]`, the source line and a caret.
    case text
    /// A JSON array of `{file, line, column, severity, code, message}` objects.
    case json
    /// GitHub Actions workflow commands (`::error file=…,line=…,col=…::message`).
    case github
}

/// Turns diagnostics into text in one of the `DiagnosticFormat`s.
public struct DiagnosticRenderer: Sendable {
    /// The output format to render.
    public var format: DiagnosticFormat
    /// ANSI colours for the text format on a terminal.
    public var colored: Bool
    /// Looks up a file's text to quote the offending line; nil leaves the quote out.
    public var sources: @Sendable (String) -> SourceFile?

    /// Lines longer than this are shown as a window around the column.
    static let maximumQuotedWidth = 160

    /// Creates a renderer; without `sources` the text format prints no quoted lines.
    ///
    ///     let renderer = DiagnosticRenderer(format: .text, sources: { path in path == source.path ? source : nil })
    ///     let output = renderer.render(diagnostics)
    public init(
        format: DiagnosticFormat, colored: Bool = false,
        sources: @escaping @Sendable (String) -> SourceFile? = { _ in nil }
    ) {
        self.format = format
        self.colored = colored
        self.sources = sources
    }

    /// Renders all diagnostics; the text ends with a newline unless there is nothing to say
    /// (the JSON format always prints an array).
    public func render(_ diagnostics: [Diagnostic]) -> String {
        switch format {
        case .text: return diagnostics.map(renderText).joined()
        case .json: return renderJSON(diagnostics)
        case .github: return diagnostics.map(renderGitHub).joined()
        }
    }

    // MARK: - Text

    private func renderText(_ diagnostic: Diagnostic) -> String {
        var out = header(diagnostic.severity, diagnostic.message, diagnostic.location, code: diagnostic.code)
        out += quote(diagnostic.location, severity: diagnostic.severity)
        for note in diagnostic.notes {
            out += header(.note, note.message, note.location, code: nil)
            out += quote(note.location, severity: .note)
        }
        return out
    }

    private func header(_ severity: Severity, _ message: String, _ location: SourceLocation?, code: String?) -> String {
        var out = ""
        if let location {
            out += paint("\(location.file):\(location.line):\(location.column): ", Style.bold)
        }
        let severityColor =
            switch severity {
            case .error: Style.red
            case .warning: Style.magenta
            case .note: Style.cyan
            }
        out += paint("\(severity.rawValue):", severityColor + Style.bold)
        out += paint(" \(message)", Style.bold)
        if let code { out += " [\(code)]" }
        return out + "\n"
    }

    private func quote(_ location: SourceLocation?, severity: Severity) -> String {
        guard let location, let file = sources(location.file), let line = file.line(location.line) else {
            return ""
        }
        var characters = Array(line)
        var column = max(1, location.column)
        var prefix = ""
        if characters.count > Self.maximumQuotedWidth {
            let start = max(0, min(column - 60, characters.count - Self.maximumQuotedWidth))
            let end = min(characters.count, start + Self.maximumQuotedWidth)
            if start > 0 { prefix = "..." }
            characters = Array(characters[start..<end])
            column -= start
            column += prefix.count
        }
        let shown = prefix + String(characters)
        // Keep tabs in the caret line so it lines up with the quoted text in any tab width.
        var caret = ""
        for (index, character) in Array(shown).enumerated() where index < column - 1 {
            caret.append(character == "\t" ? "\t" : " ")
        }
        let visibleLength = max(1, min(location.length, max(1, shown.count - (column - 1))))
        caret += "^" + String(repeating: "~", count: visibleLength - 1)
        return shown + "\n" + paint(caret, Style.green + Style.bold) + "\n"
    }

    // MARK: - JSON

    private func renderJSON(_ diagnostics: [Diagnostic]) -> String {
        guard !diagnostics.isEmpty else { return "[]\n" }
        let objects = diagnostics.map { diagnostic -> String in
            var fields: [String] = []
            fields.append("\"file\": " + (diagnostic.location.map { TextEscaping.json($0.file) } ?? "null"))
            fields.append("\"line\": " + (diagnostic.location.map { String($0.line) } ?? "null"))
            fields.append("\"column\": " + (diagnostic.location.map { String($0.column) } ?? "null"))
            fields.append("\"severity\": " + TextEscaping.json(diagnostic.severity.rawValue))
            fields.append("\"code\": " + TextEscaping.json(diagnostic.code))
            fields.append("\"message\": " + TextEscaping.json(diagnostic.message))
            return "  {" + fields.joined(separator: ", ") + "}"
        }
        return "[\n" + objects.joined(separator: ",\n") + "\n]\n"
    }

    // MARK: - GitHub Actions

    private func renderGitHub(_ diagnostic: Diagnostic) -> String {
        let command =
            switch diagnostic.severity {
            case .error: "error"
            case .warning: "warning"
            case .note: "notice"
            }
        var properties: [String] = []
        if let location = diagnostic.location {
            properties.append("file=" + Self.githubProperty(location.file))
            properties.append("line=\(location.line)")
            properties.append("col=\(location.column)")
            properties.append("endColumn=\(location.column + location.length)")
        }
        properties.append("title=" + Self.githubProperty(diagnostic.code))
        var message = diagnostic.message
        for note in diagnostic.notes {
            message += "\n" + (note.location.map { "\($0.file):\($0.line):\($0.column): " } ?? "") + note.message
        }
        return "::\(command) \(properties.joined(separator: ","))::\(Self.githubData(message))\n"
    }

    static func githubData(_ value: String) -> String {
        value.replacingAll("%", with: "%25").replacingAll("\r", with: "%0D").replacingAll("\n", with: "%0A")
    }

    static func githubProperty(_ value: String) -> String {
        githubData(value).replacingAll(":", with: "%3A").replacingAll(",", with: "%2C")
    }

    // MARK: - Colour

    private enum Style {
        static let bold = "\u{1B}[1m"
        static let red = "\u{1B}[31m"
        static let green = "\u{1B}[32m"
        static let magenta = "\u{1B}[35m"
        static let cyan = "\u{1B}[36m"
        static let reset = "\u{1B}[0m"
    }

    private func paint(_ text: String, _ style: String) -> String {
        colored ? style + text + Style.reset : text
    }
}

extension String {
    /// Replaces every occurrence without Foundation, so this module stays dependency-free.
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for character in self {
            if character == target { out += replacement } else { out.append(character) }
        }
        return out
    }
}
