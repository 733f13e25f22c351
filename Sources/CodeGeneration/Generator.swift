import Mustache
import SchemaKit

/// One file a generation run produces.
public struct GeneratedFile: Sendable, Hashable {
    /// Relative to the output folder: `Flights/Airport.swift`.
    public var path: String
    public var contents: String

    public init(path: String, contents: String) {
        self.path = path
        self.contents = contents
    }
}

/// Renders every output template for a schema's elements.
public enum Generator {
    public enum Failure: Error, Sendable, CustomStringConvertible {
        case template(MustacheError)
        /// Two templates produced the same file.
        case collision(path: String, first: String, second: String)

        public var description: String {
            switch self {
            case .template(let error): error.description
            case .collision(let path, let first, let second):
                "templates '\(first)' and '\(second)' both produce '\(path)'; rename one of them"
            }
        }
    }

    /// The files for one schema, in a folder named after it, sorted by path. Outputs that render
    /// to nothing but whitespace are skipped: an empty template switches a default off.
    public static func generate(schema: Schema, sourceFile: String, templates: TemplateSet) throws(Failure) -> [GeneratedFile] {
        let context = TemplateContext(schema: schema, sourceFile: sourceFile)
        var files: [String: (template: String, contents: String)] = [:]
        for output in templates.outputs {
            guard let template = templates.templates[output.name] else { continue }
            let jobs: [(name: String, data: MustacheValue)] = switch output.scope {
            case .schema: [(schema.name, context.schemaScope())]
            case .entity: schema.entities.map { ($0.name, context.entityScope($0)) }
            case .enum: schema.enums.map { ($0.name, context.enumScope($0)) }
            case .value: schema.values.map { ($0.name, context.valueScope($0)) }
            }
            for job in jobs {
                let rendered: String
                do {
                    rendered = try template.render(job.data, partials: templates.templates, escaping: .none)
                } catch {
                    throw .template(error)
                }
                let contents = normalize(rendered)
                guard !contents.isEmpty else { continue }
                let path = "\(schema.name)/\(job.name)\(output.fileSuffix)"
                if let existing = files[path] {
                    throw .collision(path: path, first: existing.template, second: output.name)
                }
                files[path] = (output.name, contents)
            }
        }
        return files.map { GeneratedFile(path: $0.key, contents: $0.value.contents) }.sorted { $0.path < $1.path }
    }

    /// No trailing whitespace on any line, no runs of blank lines, exactly one final newline;
    /// whitespace-only output becomes empty.
    static func normalize(_ text: String) -> String {
        var lines: [Substring] = []
        var previousBlank = true
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var trimmed = line
            while let last = trimmed.last, last == " " || last == "\t" || last == "\r" { trimmed.removeLast() }
            let blank = trimmed.isEmpty
            if blank, previousBlank { continue }
            lines.append(trimmed)
            previousBlank = blank
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        return lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"
    }
}
