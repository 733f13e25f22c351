/// Turns template text into nodes: a tokenizer that follows Set Delimiter tags, a pass that
/// removes standalone lines, and a tree builder that matches sections.
struct Parser {
    let name: String
    let source: [Unicode.Scalar]

    init(name: String, source: String) {
        self.name = name
        self.source = Array(source.unicodeScalars)
    }

    // MARK: - Tokens

    enum TagKind: Equatable {
        case variable(escaped: Bool)
        case section, inverted, close, comment, partial, parent, block, setDelimiter

        /// Tags that leave no output of their own, so a line holding only one of them disappears.
        var canStandAlone: Bool {
            if case .variable = self { return false }
            return true
        }
    }

    struct Tag {
        var kind: TagKind
        var content: String
        var line: Int
        var column: Int
        /// Set when the tag stood alone on its line: the whitespace before it.
        var indentation: String?
    }

    enum Token {
        /// Text within one line; `endsLine` when it ends with the line break.
        case text(String, endsLine: Bool)
        case tag(Tag)
    }

    func error(_ message: String, line: Int, column: Int) -> MustacheError {
        MustacheError(message, template: name, line: line, column: column)
    }

    func tokenize() throws(MustacheError) -> [Token] {
        var tokens: [Token] = []
        var open: [Unicode.Scalar] = ["{", "{"]
        var close: [Unicode.Scalar] = ["}", "}"]
        var index = 0
        var line = 1
        var lineStart = 0
        var text = String.UnicodeScalarView()

        func flushText() {
            if !text.isEmpty { tokens.append(.text(String(text), endsLine: false)) }
            text = String.UnicodeScalarView()
        }
        func matches(_ delimiter: [Unicode.Scalar], at position: Int) -> Bool {
            guard position + delimiter.count <= source.count else { return false }
            for (offset, scalar) in delimiter.enumerated() where source[position + offset] != scalar { return false }
            return true
        }

        while index < source.count {
            if matches(open, at: index) {
                flushText()
                let tagLine = line, tagColumn = index - lineStart + 1
                var cursor = index + open.count
                var kind = TagKind.variable(escaped: true)
                var closing = close
                if cursor < source.count {
                    switch source[cursor] {
                    case "#": kind = .section
                    case "^": kind = .inverted
                    case "/": kind = .close
                    case "!": kind = .comment
                    case ">": kind = .partial
                    case "<": kind = .parent
                    case "$": kind = .block
                    case "=": kind = .setDelimiter; closing = ["="] + close
                    case "&": kind = .variable(escaped: false)
                    case "{": kind = .variable(escaped: false); closing = ["}"] + close
                    default: cursor -= 1
                    }
                    cursor += 1
                }
                let contentStart = cursor
                while cursor < source.count, !matches(closing, at: cursor) {
                    if source[cursor] == "\n" { line += 1; lineStart = cursor + 1 }
                    cursor += 1
                }
                guard cursor < source.count else {
                    throw error("unclosed tag: no '\(String(String.UnicodeScalarView(close)))' after '\(String(String.UnicodeScalarView(open)))'", line: tagLine, column: tagColumn)
                }
                var content = String(String.UnicodeScalarView(source[contentStart..<cursor]))
                index = cursor + closing.count
                if kind != .comment { content = content.trimmingWhitespace() }
                if kind == .setDelimiter {
                    let parts = content.split(whereSeparator: { $0 == " " || $0 == "\t" })
                    guard parts.count == 2, !parts.contains(where: { $0.contains("=") }) else {
                        throw error("bad delimiter change '\(content)': write {{=<open> <close>=}} with two delimiters without '=' or spaces", line: tagLine, column: tagColumn)
                    }
                    open = Array(parts[0].unicodeScalars)
                    close = Array(parts[1].unicodeScalars)
                } else if kind != .comment, content.isEmpty {
                    throw error("empty tag", line: tagLine, column: tagColumn)
                } else if kind != .comment, content.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" }),
                          content != "." {
                    throw error("tag name '\(content)' contains whitespace", line: tagLine, column: tagColumn)
                }
                tokens.append(.tag(Tag(kind: kind, content: content, line: tagLine, column: tagColumn)))
            } else {
                let scalar = source[index]
                text.append(scalar)
                index += 1
                if scalar == "\n" {
                    tokens.append(.text(String(text), endsLine: true))
                    text = String.UnicodeScalarView()
                    line += 1
                    lineStart = index
                }
            }
        }
        flushText()
        return tokens
    }

    // MARK: - Standalone lines

    /// A line holding one tag that writes nothing, and otherwise only spaces and tabs, is removed
    /// whole: its indentation and its line break go with it.
    func removeStandaloneLines(_ tokens: [Token]) -> [Token] {
        var result: [Token] = []
        result.reserveCapacity(tokens.count)
        var lineTokens: [Token] = []

        func finishLine() {
            defer { lineTokens.removeAll(keepingCapacity: true) }
            var tags: [Tag] = []
            var indentation = ""
            var seenTag = false
            var whitespaceOnly = true
            for token in lineTokens {
                switch token {
                case .tag(let tag):
                    tags.append(tag)
                    seenTag = true
                case .text(let text, let endsLine):
                    let body = endsLine ? text.droppingLineBreak() : text
                    if !body.allSatisfy({ $0 == " " || $0 == "\t" }) { whitespaceOnly = false }
                    if !seenTag { indentation += body }
                }
            }
            if whitespaceOnly, tags.count == 1, tags[0].kind.canStandAlone {
                var tag = tags[0]
                tag.indentation = indentation
                result.append(.tag(tag))
            } else {
                result += lineTokens
            }
        }

        for token in tokens {
            lineTokens.append(token)
            if case .text(_, endsLine: true) = token { finishLine() }
        }
        if !lineTokens.isEmpty { finishLine() }
        return result
    }

    // MARK: - Tree

    func parse() throws(MustacheError) -> [Node] {
        let tokens = removeStandaloneLines(try tokenize())
        var position = 0
        let nodes = try buildNodes(tokens, &position, closing: nil)
        return nodes
    }

    private func path(_ content: String) -> [String] {
        content == "." ? ["."] : content.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    /// Builds nodes until the close tag of `closing` (or the end when nil).
    private func buildNodes(_ tokens: [Token], _ position: inout Int, closing: Tag?) throws(MustacheError) -> [Node] {
        var nodes: [Node] = []
        while position < tokens.count {
            let token = tokens[position]
            position += 1
            switch token {
            case .text(let text, _):
                if case .text(let previous)? = nodes.last {
                    nodes[nodes.count - 1] = .text(previous + text)
                } else {
                    nodes.append(.text(text))
                }
            case .tag(let tag):
                switch tag.kind {
                case .comment, .setDelimiter:
                    continue
                case .variable(let escaped):
                    nodes.append(.variable(path: path(tag.content), escaped: escaped, line: tag.line, column: tag.column))
                case .partial:
                    nodes.append(.partial(name: tag.content, indentation: tag.indentation ?? ""))
                case .section, .inverted:
                    let children = try buildNodes(tokens, &position, closing: tag)
                    nodes.append(.section(path: path(tag.content), inverted: tag.kind == .inverted, nodes: children))
                case .block:
                    let children = try buildNodes(tokens, &position, closing: tag)
                    nodes.append(.block(Node.Block(name: tag.content, nodes: children, indentation: tag.indentation)))
                case .parent:
                    let children = try buildNodes(tokens, &position, closing: tag)
                    // Only blocks count inside a parent; other text is ignored.
                    var overrides: [String: Node.Block] = [:]
                    for case .block(var block) in children where overrides[block.name] == nil {
                        if block.indentation != nil { block.nodes = Self.removingCommonIndentation(block.nodes) }
                        overrides[block.name] = block
                    }
                    nodes.append(.parent(name: tag.content, indentation: tag.indentation ?? "", overrides: overrides))
                case .close:
                    guard let closing else {
                        throw error("closing tag '\(tag.content)' has no opening section", line: tag.line, column: tag.column)
                    }
                    guard closing.content == tag.content else {
                        throw error("closing tag '\(tag.content)' does not match section '\(closing.content)' opened at \(closing.line):\(closing.column)", line: tag.line, column: tag.column)
                    }
                    return nodes
                }
            }
        }
        if let closing {
            throw error("unclosed section '\(closing.content)': add {{/\(closing.content)}}", line: closing.line, column: closing.column)
        }
        return nodes
    }

    /// Strips the whitespace every line of an override starts with, so the override's own
    /// indentation does not add to the one where the block is expanded. Only text that begins a
    /// line counts: text after a tag on the same line is left as it is.
    static func removingCommonIndentation(_ nodes: [Node]) -> [Node] {
        func isBlank(_ line: Substring) -> Bool { line.allSatisfy { $0 == " " || $0 == "\t" } }
        func indent(_ line: Substring) -> Int { line.prefix { $0 == " " || $0 == "\t" }.count }

        // Pass 1: the smallest indentation of a non-blank line start.
        var common = Int.max
        var atLineStart = true
        for node in nodes {
            guard case .text(let text) = node else {
                atLineStart = false
                continue
            }
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if (index > 0 || atLineStart), !isBlank(line) { common = min(common, indent(line)) }
            }
            atLineStart = text.hasSuffix("\n")
        }
        guard common != Int.max, common > 0 else { return nodes }

        // Pass 2: drop it from each line start.
        atLineStart = true
        return nodes.map { node in
            guard case .text(let text) = node else {
                atLineStart = false
                return node
            }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().map { index, line -> Substring in
                guard index > 0 || atLineStart else { return line }
                return line.dropFirst(min(indent(line), common))
            }
            atLineStart = text.hasSuffix("\n")
            return .text(lines.joined(separator: "\n"))
        }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" || first == "\n" || first == "\r" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" || last == "\n" || last == "\r" { slice.removeLast() }
        return String(slice)
    }

    /// The text without its final `\n` or `\r\n`.
    func droppingLineBreak() -> String {
        var scalars = unicodeScalars
        if scalars.last == "\n" { scalars.removeLast() }
        if scalars.last == "\r" { scalars.removeLast() }
        return String(scalars)
    }
}
