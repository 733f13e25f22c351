import CommandLineKit
import Diagnostics
import MigrationFiles
import MigrationPlanner
import SQLDialects
import SchemaKit

/// `schemagen validate`: checks schema files and reports every problem at once.
public enum ValidateCommand: Command {
    public static let spec = CommandSpec(
        name: "validate",
        abstract: "Check schema files and report every problem, compiler style.",
        discussion: """
            Directories are searched for *.yaml and *.yml files. Exit status: 0 when no errors were
            found, 1 when a schema has errors (or warnings, with --warnings-as-errors), 2 for a usage
            error or a file or directory that cannot be read.
            """,
        options: [
            .value(
                "format", short: "f", valueName: "format", help: "How to print diagnostics.",
                allowed: DiagnosticFormat.allCases.map(\.rawValue), defaultValue: "text"),
            .flag("warnings-as-errors", help: "Report warnings as errors and fail on them."),
            .value(
                "color", valueName: "when", help: "Colour the text format.",
                allowed: ["auto", "always", "never"], defaultValue: "auto"),
            .value(
                "migrations", short: "m", valueName: "dir", help: "The migrations root: every dialect folder of each schema is checked against its manifest, and the folders against each other.",
                defaultValue: "Migrations"),
        ],
        arguments: [ArgumentSpec("PATH", help: "Schema files or directories (default: Schemas).", isVariadic: true)])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let format = arguments.value("format").flatMap(DiagnosticFormat.init(rawValue:)) ?? .text
        let paths = arguments.arguments.isEmpty ? ["Schemas"] : arguments.arguments
        guard let files = SchemaInput.files(paths, io: io) else { return .usageOrIO }

        let result = SchemaLoader.load(files: files)
        var diagnostics = result.diagnostics
        // Each schema's migration folder, if it has one, must match its manifest.
        let migrationsRoot = arguments.value("migrations") ?? "Migrations"
        for schema in result.schemas {
            let folders = MigrationDirectory.dialectFolders(schema: schema.name, root: migrationsRoot)
            for (_, folder) in folders { diagnostics += folder.verify() }
            diagnostics += MigrationDirectory.compareNumbering(folders)
        }
        // The store's own migrations, when generate wrote them, must match their manifest too.
        let storeFolder = MigrationDirectory.folder(schema: StoreTableMigrations.schema, root: migrationsRoot, dialect: .postgres)
        if storeFolder.holdsMigrations { diagnostics += storeFolder.verify() }
        if arguments.flag("warnings-as-errors") {
            diagnostics = diagnostics.map { diagnostic in
                var promoted = diagnostic
                if promoted.severity == .warning { promoted.severity = .error }
                return promoted
            }
        }

        let sources = SchemaInput.sources(result)
        let renderer = DiagnosticRenderer(
            format: format, colored: useColor(arguments.value("color"), io: io),
            sources: { sources[$0] })
        var output = renderer.render(diagnostics)
        if format == .text { output += summary(diagnostics, fileCount: files.count) }
        io.writeOutput(output)

        if diagnostics.contains(where: { $0.has(SchemaDiagnosticCode.fileUnreadable) }) {
            return .usageOrIO
        }
        return diagnostics.contains { $0.severity == .error } ? .failure : .success
    }

    /// "Checked 5 schema files: 2 errors and 1 warning in 1 file."
    static func summary(_ diagnostics: [Diagnostic], fileCount: Int) -> String {
        let errors = diagnostics.count { $0.severity == .error }
        let warnings = diagnostics.count { $0.severity == .warning }
        let checked = "Checked \(plural(fileCount, "schema file"))"
        guard errors + warnings > 0 else { return "\(checked): no problems.\n" }
        let affected = Set(diagnostics.compactMap { $0.location?.file }).count
        var parts: [String] = []
        if errors > 0 { parts.append(plural(errors, "error")) }
        if warnings > 0 { parts.append(plural(warnings, "warning")) }
        return "\(checked): \(parts.joined(separator: " and ")) in \(plural(affected, "file")).\n"
    }

    static func plural(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    static func useColor(_ setting: String?, io: CommandIO) -> Bool {
        switch setting {
        case "always": return true
        case "never": return false
        default:
            return io.outputIsTerminal && io.environment["NO_COLOR"] == nil && io.environment["TERM"] != "dumb"
        }
    }
}
