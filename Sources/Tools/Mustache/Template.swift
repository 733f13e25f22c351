import TextEscaping

/// A parsed template: parse once, render many times.
public struct Template: Sendable {
    public let name: String
    let nodes: [Node]

    /// Parses template text; errors name the template, line and column.
    public init(name: String, source: String) throws(MustacheError) {
        self.name = name
        self.nodes = try Parser(name: name, source: source).parse()
    }

    /// Renders against data; partials and parents come from `partials`.
    public func render(
        _ data: MustacheValue, partials: [String: Template] = [:], escaping: Escaping = .html
    ) throws(MustacheError) -> String {
        var renderer = Renderer(partials: partials, escaping: escaping)
        var context = Renderer.Context(stack: [data], overrides: [:], depth: 0, template: name)
        try renderer.render(nodes, context: &context)
        return renderer.output
    }
}

/// How `{{name}}` escapes what it writes; `{{{name}}}` and `{{&name}}` never escape.
public enum Escaping: String, Sendable, CaseIterable {
    /// `&`, `<`, `>` and `"` become entities, as the Mustache specification requires.
    case html
    /// Written as is: for generating source code, where `<` and `"` are meaningful.
    case none

    func apply(_ text: String) -> String {
        self == .html ? TextEscaping.html(text) : text
    }
}

/// The parsed form of a template.
indirect enum Node: Sendable {
    case text(String)
    /// A dotted name (`["a", "b"]`) or `["."]` for the implicit iterator.
    case variable(path: [String], escaped: Bool, line: Int, column: Int)
    case section(path: [String], inverted: Bool, nodes: [Node])
    case partial(name: String, indentation: String)
    /// `{{<name}}`: a partial whose blocks the `overrides` replace.
    case parent(name: String, indentation: String, overrides: [String: Block])
    /// `{{$name}}`: a replaceable region with default content.
    case block(Block)

    struct Block: Sendable {
        var name: String
        var nodes: [Node]
        /// Whitespace before the tag when it stood alone on its line, or began a standalone pair.
        var indentation: String?
        /// The indentation of a standalone block's first content line.
        var intrinsicIndentation: String?
        /// The line break removed after a standalone pair's close tag, written again after the
        /// content unless the content ended its own line.
        var lineBreak: String?
    }
}
