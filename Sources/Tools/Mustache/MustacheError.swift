/// A problem in a template, located in its file.
public struct MustacheError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// The template's name or path.
    public var template: String
    public var line: Int
    public var column: Int

    public init(_ message: String, template: String, line: Int, column: Int) {
        self.message = message
        self.template = template
        self.line = line
        self.column = column
    }

    /// `Templates/entity.swift.mustache:3:5: unclosed section 'attributes'`
    public var description: String { "\(template):\(line):\(column): \(message)" }
}
