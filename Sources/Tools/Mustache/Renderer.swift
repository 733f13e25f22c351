/// Walks parsed nodes over a context stack and writes the output.
struct Renderer {
    let partials: [String: Template]
    let escaping: Escaping
    var output = ""
    /// Indentation of the standalone partials being rendered, added at each template line start.
    private var indentation = ""
    private var atLineStart = true

    /// Deep enough for any real template; stops runaway recursion through partials.
    static let maximumDepth = 200

    init(partials: [String: Template], escaping: Escaping) {
        self.partials = partials
        self.escaping = escaping
    }

    struct Context {
        var stack: [MustacheValue]
        /// Block overrides in effect; the outermost parent's win.
        var overrides: [String: Node.Block]
        var depth: Int
        /// The template being rendered, for error messages.
        var template: String
    }

    mutating func render(_ nodes: [Node], context: inout Context) throws(MustacheError) {
        for node in nodes {
            switch node {
            case .text(let text):
                writeTemplateText(text)
            case .variable(let path, let escaped, _, _):
                let text = lookup(path, in: context.stack).interpolated
                writeValue(escaped ? escaping.apply(text) : text)
            case .section(let path, let inverted, let children):
                let value = lookup(path, in: context.stack)
                if inverted {
                    if value.isFalsey { try render(children, context: &context) }
                    continue
                }
                switch value {
                case .null, .bool(false):
                    continue
                case .bool(true):
                    try render(children, context: &context)
                case .array(let items):
                    for item in items {
                        context.stack.append(item)
                        defer { context.stack.removeLast() }
                        try render(children, context: &context)
                    }
                default:
                    context.stack.append(value)
                    defer { context.stack.removeLast() }
                    try render(children, context: &context)
                }
            case .partial(let name, let partialIndentation):
                try expand(name, indentation: partialIndentation, overrides: [:], context: &context)
            case .parent(let name, let parentIndentation, let overrides):
                try expand(name, indentation: parentIndentation, overrides: overrides, context: &context)
            case .block(let block):
                // An override is indented as the block's content is (its intrinsic indentation),
                // or else as the block tag is; default content already carries its own.
                let override = context.overrides[block.name]
                let extra =
                    override != nil
                    ? block.intrinsicIndentation ?? block.indentation ?? ""
                    : block.intrinsicIndentation == nil ? block.indentation ?? "" : ""
                let saved = indentation
                indentation += extra
                try render(override?.nodes ?? block.nodes, context: &context)
                indentation = saved
                if let lineBreak = block.lineBreak, !atLineStart { writeTemplateText(lineBreak) }
            }
        }
    }

    private mutating func expand(
        _ name: String, indentation extra: String, overrides: [String: Node.Block], context: inout Context
    ) throws(MustacheError) {
        // A missing partial renders as nothing, as the specification says.
        guard let template = partials[name] else { return }
        guard context.depth < Self.maximumDepth else {
            throw MustacheError(
                "partials nest deeper than \(Self.maximumDepth) levels (recursion through '\(name)'?)",
                template: context.template, line: 1, column: 1)
        }
        var inner = context
        inner.depth += 1
        inner.template = template.name
        // Outer overrides win over the ones this parent tag passes.
        inner.overrides = overrides.merging(context.overrides) { _, outer in outer }
        let saved = indentation
        indentation += extra
        defer { indentation = saved }
        try render(template.nodes, context: &inner)
    }

    /// Template text: indentation goes before each line that has something on it.
    private mutating func writeTemplateText(_ text: String) {
        guard !text.isEmpty else { return }
        guard !indentation.isEmpty else {
            output += text
            atLineStart = text.unicodeScalars.last == "\n"
            return
        }
        var line = Substring.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            line.append(scalar)
            if scalar == "\n" {
                flushLine(line, endsLine: true)
                line = Substring.UnicodeScalarView()
            }
        }
        if !line.isEmpty { flushLine(line, endsLine: false) }
    }

    private mutating func flushLine(_ line: Substring.UnicodeScalarView, endsLine: Bool) {
        let isBlank = line.allSatisfy { $0 == "\n" || $0 == "\r" }
        if atLineStart, !isBlank { output += indentation }
        output += String(String.UnicodeScalarView(line))
        atLineStart = endsLine
    }

    /// Interpolated data: indented if it starts a line, but line breaks inside it are kept as is.
    private mutating func writeValue(_ text: String) {
        guard !text.isEmpty else { return }
        if atLineStart, !indentation.isEmpty { output += indentation }
        output += text
        atLineStart = false
    }

    /// Resolves a dotted name: the first part up the context stack, the rest inside it.
    func lookup(_ path: [String], in stack: [MustacheValue]) -> MustacheValue {
        if path == ["."] { return stack.last ?? .null }
        guard let first = path.first else { return .null }
        var value: MustacheValue?
        for frame in stack.reversed() {
            if let found = frame[first] {
                value = found
                break
            }
        }
        guard var current = value else { return .null }
        for part in path.dropFirst() {
            guard let next = current[part] else { return .null }
            current = next
        }
        return current
    }
}
