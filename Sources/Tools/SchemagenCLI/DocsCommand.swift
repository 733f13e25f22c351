import CommandLineKit
import Foundation
import SchemaSite

/// `schemagen docs`: a static site of the schemas.
public enum DocsCommand: Command {
    public static let spec = CommandSpec(
        name: "docs",
        abstract: "Write a static, browsable site of the schemas: diagrams, entities, types and migrations.",
        discussion: """
            The site is plain HTML and CSS with one small script for its search box; it needs no
            server and loads nothing from a network. Diagrams are SVG: with --layout auto (the
            default), from Graphviz when `dot` is installed and the schema has at most 80 entities
            (and dot finishes within 30 s), else a plain grid layout of the toolkit's own. Exit status:
            0 written, 1 invalid schema, 2 usage or I/O error, or --layout graphviz without Graphviz.
            """,
        options: [
            .value("schema", short: "s", valueName: "path", help: "A schema file or folder (default: Schemas).", repeatable: true),
            .value("output", short: "o", valueName: "dir", help: "The site's folder."),
            .value("migrations", short: "m", valueName: "dir", help: "Where each schema's migration folder is.", defaultValue: "Migrations"),
            .value("layout", valueName: "layout", help: "How diagrams are drawn.", allowed: Site.Layout.allCases.map(\.rawValue), defaultValue: "auto"),
        ])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let output = arguments.value("output") else {
            io.writeError("schemagen: error: docs needs -o DIR, the folder for the site\n")
            return .usageOrIO
        }
        let (schemas, failure) = SchemaInput.validSchemas(arguments.values("schema"), io: io)
        if let failure { return failure }
        let layout = arguments.value("layout").flatMap(Site.Layout.init(rawValue:)) ?? .auto
        let files: [Site.File]
        do {
            files = try Site.files(for: schemas, migrations: arguments.value("migrations") ?? "Migrations", layout: layout)
        } catch {
            io.writeError("schemagen: error: \(error)\n")
            return .usageOrIO
        }
        do {
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            for file in files {
                try Data(file.contents.utf8).write(to: URL(fileURLWithPath: output).appendingPathComponent(file.path), options: .atomic)
            }
        } catch {
            io.writeError("\(output): error: cannot write the site: \(FileError.reason(error))\n")
            return .usageOrIO
        }
        io.writeOutput("wrote \(files.count) files to \(output) (\(schemas.count) schema\(schemas.count == 1 ? "" : "s")); open \(output)/index.html\n")
        return .success
    }
}
