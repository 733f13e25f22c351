import CommandLineKit
import Diagnostics
import Foundation
import SchemaDiagrams
import SchemaKit

/// `schemagen diagram`: entity-relationship diagrams as Mermaid, Graphviz dot or SVG.
public enum DiagramCommand: Command {
    public static let spec = CommandSpec(
        name: "diagram",
        abstract: "Draw the schemas' entities and relationships as Mermaid, Graphviz dot or SVG.",
        discussion: """
            Writes to standard output, or to -o FILE. A Markdown file (.md) gets the Mermaid diagram
            of each schema between the lines `<!-- schemagen diagram NAME: begin -->` and
            `<!-- schemagen diagram NAME: end -->`, and nothing else in it changes. With --check,
            nothing is written: the command fails when the file is not what it would write, so CI
            can keep a committed diagram current. Exit status: 0 written or up to date, 1 invalid
            schema or out of date with --check, 2 usage error, unreadable or unwritable file, a
            Markdown file without the markers, or --format svg without Graphviz installed.
            """,
        options: [
            .value("schema", short: "s", valueName: "path", help: "A schema file or folder (default: Schemas).", repeatable: true),
            .value("format", short: "f", valueName: "format", help: "The diagram's language.", allowed: ["mermaid", "dot", "svg"], defaultValue: "mermaid"),
            .value("output", short: "o", valueName: "file", help: "Where to write (default: standard output)."),
            .value("entity", valueName: "name", help: "Draw only this entity and its neighbours."),
            .value("depth", valueName: "n", help: "With --entity: how many relationships away to go.", defaultValue: "1"),
            .flag("check", help: "Write nothing; fail if the output file is out of date."),
            .value("timeout", valueName: "seconds", help: "With --format svg: stop dot after this long.", defaultValue: "120"),
        ])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let format = arguments.value("format") ?? "mermaid"
        guard let depth = Int(arguments.value("depth") ?? "1"), depth >= 0 else {
            io.writeError("schemagen: error: --depth takes a whole number of relationships, 0 or more\n")
            return .usageOrIO
        }
        let (schemas, failure) = SchemaInput.validSchemas(arguments.values("schema"), io: io)
        if let failure { return failure }
        var models = schemas.map(ERModel.init(schema:))
        if let entity = arguments.value("entity") {
            guard let owner = models.first(where: { $0.boxes.contains { $0.name == entity } }) else {
                let names = models.flatMap { $0.boxes.map(\.name) }
                io.writeError("schemagen: error: no entity '\(entity)' in the schemas\(Suggestion.hint(for: entity, in: names))\n")
                return .usageOrIO
            }
            models = [owner.neighbourhood(of: entity, depth: depth)]
        }
        let output = arguments.value("output")
        if let output, output.hasSuffix(".md") {
            guard format == "mermaid" else {
                io.writeError("schemagen: error: a Markdown file takes Mermaid diagrams; drop --format \(format) or write to another file\n")
                return .usageOrIO
            }
            return updateMarkdown(output, models: models, check: arguments.flag("check"), io: io)
        }
        if output != nil, models.count > 1 {
            io.writeError("schemagen: error: \(models.count) schemas but one output file; pick one with --schema, or write to a Markdown file with a block per schema\n")
            return .usageOrIO
        }
        var text = ""
        for model in models {
            switch format {
            case "dot": text += DotWriter.diagram(model)
            case "svg":
                let timeout = Double(arguments.value("timeout") ?? "120") ?? 120
                do { text += try Graphviz.svg(fromDot: DotWriter.diagram(model), timeout: timeout) } catch {
                    io.writeError("schemagen: error: \(error)\n")
                    return .usageOrIO
                }
            default:
                if models.count > 1 { text += "%% schema \(model.name)\n" }
                text += MermaidWriter.diagram(model)
            }
        }
        guard let output else {
            io.writeOutput(text)
            return .success
        }
        return write(text, to: output, check: arguments.flag("check"), io: io)
    }

    static func write(_ text: String, to path: String, check: Bool, io: CommandIO) -> ExitCode {
        let current = FileManager.default.contents(atPath: path)
        if check {
            guard current == Data(text.utf8) else {
                io.writeError("\(path): out of date: run `schemagen diagram` with the same options without --check\n")
                return .failure
            }
            io.writeOutput("\(path) is up to date.\n")
            return .success
        }
        guard current != Data(text.utf8) else {
            io.writeOutput("\(path) is up to date.\n")
            return .success
        }
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            io.writeError("\(path): error: cannot write it: \(FileError.reason(error))\n")
            return .usageOrIO
        }
        io.writeOutput("wrote \(path)\n")
        return .success
    }

    static func markers(_ schema: String) -> (begin: String, end: String) {
        ("<!-- schemagen diagram \(schema): begin -->", "<!-- schemagen diagram \(schema): end -->")
    }

    /// Replaces each schema's block between its markers; the rest of the file stays as it is.
    static func updateMarkdown(_ path: String, models: [ERModel], check: Bool, io: CommandIO) -> ExitCode {
        guard let data = FileManager.default.contents(atPath: path) else {
            io.writeError("\(path): error: cannot read it\n")
            return .usageOrIO
        }
        var text = String(decoding: data, as: UTF8.self)
        for model in models {
            let (begin, end) = markers(model.name)
            guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex) else {
                io.writeError("\(path): error: no block for schema \(model.name); add the lines\n\(begin)\n\(end)\nwhere the diagram goes\n")
                return .usageOrIO
            }
            text.replaceSubrange(start.upperBound..<stop.lowerBound, with: "\n```mermaid\n\(MermaidWriter.diagram(model))```\n")
        }
        return write(text, to: path, check: check, io: io)
    }
}
