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
        /// A standalone block's indentation taken from its content's first line.
        var intrinsicIndentation: String?
        /// The line break a standalone block pair removed after its close tag.
        var lineBreak: String?
    }

    enum Token {
        /// Text within one line; `endsLine` when it ends with the line break.
        case text(String, endsLine: Bool)
        case tag(Tag)
    }

    func error(_ message: String, line: Int, column: Int) -> MustacheError {
        MustacheError(message, template: name, line: line, column: column)
    }

    /// The tags' current delimiters, `{{` and `}}` until a `{{=<% %>=}}` tag changes them.
    struct Delimiters {
        var open: [Unicode.Scalar] = ["{", "{"]
        var close: [Unicode.Scalar] = ["}", "}"]
    }

    /// A position in the source: its line, and where that line starts.
    struct Cursor {
        var index = 0
        var line = 1
        var lineStart = 0
    }

    func tokenize() throws(MustacheError) -> [Token] {
        var tokens: [Token] = []
        var delimiters = Delimiters()
        var cursor = Cursor()
        var text = String.UnicodeScalarView()

        func flushText() {
            if !text.isEmpty { tokens.append(.text(String(text), endsLine: false)) }
            text = String.UnicodeScalarView()
        }

        while cursor.index < source.count {
            if matches(delimiters.open, at: cursor.index) {
                flushText()
                tokens.append(.tag(try readTag(&cursor, delimiters: &delimiters)))
            } else {
                let scalar = source[cursor.index]
                text.append(scalar)
                cursor.index += 1
                if scalar == "\n" {
                    tokens.append(.text(String(text), endsLine: true))
                    text = String.UnicodeScalarView()
                    cursor.line += 1
                    cursor.lineStart = cursor.index
                }
            }
        }
        flushText()
        return tokens
    }

    private func matches(_ delimiter: [Unicode.Scalar], at position: Int) -> Bool {
        guard position + delimiter.count <= source.count else { return false }
        for (offset, scalar) in delimiter.enumerated() where source[position + offset] != scalar { return false }
        return true
    }

    /// The tag whose opening delimiter is at the cursor, which moves past its closing one. A
    /// delimiter change takes effect here.
    private func readTag(_ cursor: inout Cursor, delimiters: inout Delimiters) throws(MustacheError) -> Tag {
        let (tagLine, tagColumn) = (cursor.line, cursor.index - cursor.lineStart + 1)
        var position = cursor.index + delimiters.open.count
        let (kind, closing, sigil) = tagKind(at: position, close: delimiters.close)
        position += sigil
        let contentStart = position
        while position < source.count, !matches(closing, at: position) {
            if source[position] == "\n" {
                cursor.line += 1
                cursor.lineStart = position + 1
            }
            position += 1
        }
        guard position < source.count else {
            let (open, close) = (String(String.UnicodeScalarView(delimiters.open)), String(String.UnicodeScalarView(delimiters.close)))
            throw error("unclosed tag: no '\(close)' after '\(open)'", line: tagLine, column: tagColumn)
        }
        var content = String(String.UnicodeScalarView(source[contentStart..<position]))
        cursor.index = position + closing.count
        if kind != .comment { content = content.trimmingWhitespace() }
        if kind == .setDelimiter {
            let parts = content.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 2, !parts.contains(where: { $0.contains("=") }) else {
                throw error("bad delimiter change '\(content)': write {{=<open> <close>=}} with two delimiters without '=' or spaces", line: tagLine, column: tagColumn)
            }
            delimiters = Delimiters(open: Array(parts[0].unicodeScalars), close: Array(parts[1].unicodeScalars))
        } else if kind != .comment, content.isEmpty {
            throw error("empty tag", line: tagLine, column: tagColumn)
        } else if kind != .comment, content.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" }), content != "." {
            throw error("tag name '\(content)' contains whitespace", line: tagLine, column: tagColumn)
        }
        return Tag(kind: kind, content: content, line: tagLine, column: tagColumn)
    }

    /// A tag's kind from the sigil after its opening delimiter, the delimiter that closes it, and
    /// the sigil's length (0 for a plain variable).
    private func tagKind(at position: Int, close: [Unicode.Scalar]) -> (TagKind, closing: [Unicode.Scalar], sigil: Int) {
        guard position < source.count else { return (.variable(escaped: true), close, 0) }
        switch source[position] {
        case "#": return (.section, close, 1)
        case "^": return (.inverted, close, 1)
        case "/": return (.close, close, 1)
        case "!": return (.comment, close, 1)
        case ">": return (.partial, close, 1)
        case "<": return (.parent, close, 1)
        case "$": return (.block, close, 1)
        case "=": return (.setDelimiter, ["="] + close, 1)
        case "&": return (.variable(escaped: false), close, 1)
        case "{": return (.variable(escaped: false), ["}"] + close, 1)
        default: return (.variable(escaped: true), close, 0)
        }
    }

    // MARK: - Standalone tag pairs (inheritance)

    /// A block or parent tag and its close tag, found before lines are judged standalone.
    private struct Pair {
        var open: Int
        var close: Int
        /// A block directly inside a parent: an argument that replaces the parent's block.
        var isArgument: Bool
    }

    /// Matches block and parent tags with their close tags. Unbalanced tags are left for the tree
    /// builder, which reports them with their positions.
    private func pairs(in tokens: [Token]) -> [Pair] {
        var open: [(index: Int, tag: Tag)] = []
        var found: [Pair] = []
        for (index, token) in tokens.enumerated() {
            guard case .tag(let tag) = token else { continue }
            switch tag.kind {
            case .section, .inverted, .block, .parent:
                open.append((index, tag))
            case .close:
                guard let last = open.last, last.tag.content == tag.content else { return found.sorted { $0.open < $1.open } }
                open.removeLast()
                if last.tag.kind == .block || last.tag.kind == .parent {
                    let enclosing = open.last?.tag.kind
                    found.append(Pair(open: last.index, close: index, isArgument: last.tag.kind == .block && enclosing == .parent))
                }
            default:
                continue
            }
        }
        return found.sorted { $0.open < $1.open }
    }

    private static func isBlank(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
    }

    /// The indices of the whitespace-only text tokens between the start of the tag's line and the
    /// tag, or nil when anything else stands there.
    private static func clearBefore(_ index: Int, in tokens: [Token]) -> [Int]? {
        var cursor = index - 1
        var blanks: [Int] = []
        while cursor >= 0 {
            guard case .text(let text, let endsLine) = tokens[cursor] else { return nil }
            if endsLine { break }
            guard isBlank(text) else { return nil }
            blanks.append(cursor)
            cursor -= 1
        }
        return blanks
    }

    /// The indices of the whitespace-only text tokens after the tag up to and including its line
    /// break (or the end of the template), or nil when anything else stands there.
    private static func clearAfter(_ index: Int, in tokens: [Token]) -> [Int]? {
        var cursor = index + 1
        var blanks: [Int] = []
        while cursor < tokens.count {
            guard case .text(let text, let endsLine) = tokens[cursor], isBlank(text) else { return nil }
            blanks.append(cursor)
            if endsLine { break }
            cursor += 1
        }
        return blanks
    }

    /// Applies the inheritance module's standalone rules (specification v1.4), which the
    /// one-tag-per-line rule cannot express:
    /// - a block or parent whose open tag begins its line and whose close tag ends one is
    ///   standalone, even with both tags on one line: the whitespace before the open tag becomes
    ///   its indentation, and the rest of the close tag's line goes (a block restores that line
    ///   break after its content);
    /// - a block's content starts on the line after its open tag when nothing follows the tag,
    ///   and ends at the start of its close tag's line when nothing precedes that tag;
    /// - such a block's first non-blank line gives its intrinsic indentation, which an argument
    ///   loses where it is written and a replaced block gives where it is expanded.
    /// Removed text becomes empty text tokens, so line boundaries stay for the line pass.
    func applyStandalonePairs(_ tokens: inout [Token]) {
        func blank(_ index: Int) {
            if case .text(_, let endsLine) = tokens[index] { tokens[index] = .text("", endsLine: endsLine) }
        }
        func text(_ index: Int) -> String {
            if case .text(let text, _) = tokens[index] { return text }
            return ""
        }
        func update(_ index: Int, _ change: (inout Tag) -> Void) {
            if case .tag(var tag) = tokens[index] {
                change(&tag)
                tokens[index] = .tag(tag)
            }
        }

        for pair in pairs(in: tokens) {
            guard case .tag(let openTag) = tokens[pair.open] else { continue }
            let isBlock = openTag.kind == .block
            let before = Self.clearBefore(pair.open, in: tokens)
            let after = Self.clearAfter(pair.close, in: tokens)
            let standalone = before != nil && after != nil
            if let before, let after {
                let indentation = before.reversed().map(text).joined()
                let lineBreak = after.map(text).joined().unicodeScalars.drop { $0 == " " || $0 == "\t" }
                before.forEach(blank)
                after.forEach(blank)
                update(pair.open) { tag in
                    tag.indentation = indentation
                    if isBlock, !lineBreak.isEmpty { tag.lineBreak = String(String.UnicodeScalarView(lineBreak)) }
                }
            }
            guard isBlock, pair.isArgument || standalone else { continue }

            // The content's own lines: from the line after the open tag to the close tag's line.
            guard let rest = Self.clearAfter(pair.open, in: tokens), let lastBlank = rest.last,
                case .text(_, endsLine: true) = tokens[lastBlank]
            else { continue }
            rest.forEach(blank)
            if let leading = Self.clearBefore(pair.close, in: tokens) { leading.forEach(blank) }

            guard let intrinsic = Self.firstLineIndentation(tokens, from: lastBlank + 1, upTo: pair.close) else { continue }
            update(pair.open) { $0.intrinsicIndentation = intrinsic }
            guard pair.isArgument, !intrinsic.isEmpty else { continue }
            var atLineStart = true
            for index in (lastBlank + 1)..<pair.close {
                guard case .text(let text, let endsLine) = tokens[index] else {
                    atLineStart = false
                    continue
                }
                if atLineStart {
                    let strip = min(intrinsic.count, text.prefix { $0 == " " || $0 == "\t" }.count)
                    tokens[index] = .text(String(text.dropFirst(strip)), endsLine: endsLine)
                }
                atLineStart = endsLine
            }
        }
    }

    /// The leading whitespace of the first line in `start..<end` that holds anything but
    /// whitespace; nil when there is none before `end`.
    private static func firstLineIndentation(_ tokens: [Token], from start: Int, upTo end: Int) -> String? {
        var leading = ""
        for index in start..<end {
            switch tokens[index] {
            case .tag:
                return leading
            case .text(let text, let endsLine):
                leading += text.prefix { $0 == " " || $0 == "\t" }
                if !isBlank(text) { return leading }
                if endsLine { leading = "" }
            }
        }
        return nil
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
                // A pair rule may already have taken the indentation.
                tag.indentation = tag.indentation ?? indentation
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
        var tokens = try tokenize()
        applyStandalonePairs(&tokens)
        tokens = removeStandaloneLines(tokens)
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
                    nodes.append(
                        .block(
                            Node.Block(
                                name: tag.content, nodes: children, indentation: tag.indentation,
                                intrinsicIndentation: tag.intrinsicIndentation, lineBreak: tag.lineBreak)))
                case .parent:
                    let children = try buildNodes(tokens, &position, closing: tag)
                    // Only blocks count inside a parent; other text is ignored.
                    var overrides: [String: Node.Block] = [:]
                    for case .block(let block) in children where overrides[block.name] == nil {
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
