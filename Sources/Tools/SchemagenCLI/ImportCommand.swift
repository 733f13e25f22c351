import CommandLineKit
import DatabaseLocation
import Diagnostics
import Foundation
import SchemaImport
import SchemaKit

/// `schemagen import sqlite|postgres|coredata`: a schema from what already exists.
public enum ImportCommand: Command {
    public static let spec = CommandSpec(
        name: "import",
        abstract: "Write a schema from an existing SQLite database, PostgreSQL database or Core Data model bundle.",
        discussion: """
            schemagen import sqlite DATABASE [--name SCHEMA] [-o FILE]
            schemagen import postgres URL --name SCHEMA [-o FILE]
            schemagen import coredata MODEL.xcdatamodeld [--name SCHEMA] [-o DIR] [--history]

            The input is only read. What the schema language cannot express is printed as a warning
            with its source and written as a comment at the top of the schema; nothing is dropped
            silently. A PostgreSQL database is read from its catalogue (the URL's current schema,
            public by default) in a read-only session; `migrate baseline 1` then adopts it. Exit
            status: 0 written (warnings included), 1 the input is not a SQLite database, a reachable
            PostgreSQL database or a Core Data model (or is damaged), or the schema written does not
            validate, 2 usage error or a file that cannot be read or written.
            """,
        options: [
            .value("name", valueName: "schema", help: "The schema's name (default: from the file name)."),
            .value("output", short: "o", valueName: "path", help: "sqlite: the schema file (default: standard output). coredata: the folder for the schema files (default: Schemas)."),
            .flag("history", help: "coredata: one schema file per model version, in version order."),
        ],
        arguments: [
            ArgumentSpec("KIND", help: "sqlite, postgres or coredata.", isRequired: true),
            ArgumentSpec("SOURCE", help: "The database file, the postgres:// URL, or the .xcdatamodeld bundle.", isRequired: true),
        ])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard arguments.arguments.count == 2 else {
            io.writeError(
                "schemagen: error: import takes a kind and a source\nUsage: schemagen import sqlite DATABASE [-o FILE]\n       schemagen import coredata MODEL.xcdatamodeld [-o DIR] [--history]\n")
            return .usageOrIO
        }
        let kind = arguments.arguments[0], source = arguments.arguments[1]
        if let name = arguments.value("name"), !Naming.isIdentifier(name) || !Naming.isUpperCamelCase(name) {
            io.writeError("schemagen: error: --name '\(name)' is not an UpperCamelCase identifier\n")
            return .usageOrIO
        }
        switch kind {
        case "sqlite":
            return importSQLite(source, arguments: arguments, io: io)
        case "coredata":
            return importCoreData(source, arguments: arguments, io: io)
        case "postgres", "postgresql":
            return importPostgres(source, arguments: arguments, io: io)
        default:
            io.writeError("schemagen: error: unknown import kind '\(kind)'; use sqlite, postgres or coredata\n")
            return .usageOrIO
        }
    }

    /// A source that cannot be read at all is a usage or I/O error (exit 2), as for `validate`.
    static func checkReadable(_ path: String, directory expected: Bool, io: CommandIO) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), FileManager.default.isReadableFile(atPath: path) else {
            io.writeError("\(path): error: cannot read it (it does not exist, or permission is denied)\n")
            return false
        }
        guard isDirectory.boolValue == expected else {
            io.writeError("\(path): error: \(expected ? "not a folder; a model bundle (.xcdatamodeld) is a folder" : "a folder, not a database file")\n")
            return false
        }
        return true
    }

    static func importSQLite(_ given: String, arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        // A URL given by mistake is named with its password masked, never echoed.
        let path: String
        do {
            switch try DatabaseLocation.parse(given) {
            case .sqlite(let file): path = file
            case .postgres(let connection):
                io.writeError("schemagen: error: '\(DatabaseLocation.postgres(connection: connection).label)' is a PostgreSQL server; `import sqlite` reads a SQLite file\n")
                return .usageOrIO
            }
        } catch {
            io.writeError("schemagen: error: \(error)\n")
            return .usageOrIO
        }
        guard checkReadable(path, directory: false, io: io) else { return .usageOrIO }
        let result: ImportResult
        do {
            result = try SQLiteImporter.importDatabase(at: path, name: arguments.value("name"))
        } catch {
            io.writeError("\(error)\n")
            return .failure
        }
        let header = ["Imported by `schemagen import sqlite` from \(URL(fileURLWithPath: path).lastPathComponent)."]
        return write([Output(result: result, header: header, path: arguments.value("output"))], io: io)
    }

    static func importPostgres(_ given: String, arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let connection: String
        do {
            guard case .postgres(let target) = try DatabaseLocation.parse(given) else {
                io.writeError("schemagen: error: '\(given)' is not a postgres:// URL; `import postgres` reads a PostgreSQL server (use `import sqlite` for a file)\n")
                return .usageOrIO
            }
            connection = target
        } catch {
            io.writeError("schemagen: error: \(error)\n")
            return .usageOrIO
        }
        guard let name = arguments.value("name") else {
            io.writeError("schemagen: error: `import postgres` needs --name SCHEMA: a database URL does not name the schema\n")
            return .usageOrIO
        }
        let result: ImportResult
        do {
            result = try PostgresImporter.importDatabase(url: connection, name: name)
        } catch {
            io.writeError("\(error)\n")
            return .failure
        }
        let header = ["Imported by `schemagen import postgres` from \(DatabaseLocation.redacted(connection)). Adopt the database with `migrate baseline 1` once its migration is generated."]
        return write([Output(result: result, header: header, path: arguments.value("output"))], io: io)
    }

    static func importCoreData(_ path: String, arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard checkReadable(path, directory: true, io: io) else { return .usageOrIO }
        let history = arguments.flag("history")
        let versions: [CoreDataImporter.Version]
        do {
            versions = try CoreDataImporter.importBundle(at: path, name: arguments.value("name"), history: history)
        } catch {
            io.writeError("\(error)\n")
            return .failure
        }
        let bundle = URL(fileURLWithPath: path).lastPathComponent
        let schemaName = versions.first?.result.schema.name ?? "Model"
        let folder = arguments.value("output") ?? (history ? "Imported/\(schemaName)" : "Schemas")
        let outputs = versions.map { version in
            Output(
                result: version.result,
                header: ["Imported by `schemagen import coredata` from \(bundle), version '\(version.name)'\(version.isCurrent ? " (current)" : "")."],
                path: history ? "\(folder)/v\(version.result.schema.version).yaml" : "\(folder)/\(schemaName).yaml")
        }
        let status = write(outputs, io: io)
        if history, status == .success, let last = outputs.last?.path {
            // The chain of migrations comes from planning each version after the one before.
            var steps = outputs.compactMap(\.path).map { "  schemagen generate --migrations-only --schema \"\($0)\"" }
            steps.append("  cp \"\(last)\" Schemas/\(schemaName).yaml")
            io.writeError(
                """
                Plan the migrations in version order, then keep the current version as the schema. A version
                that drops an entity or attribute, or adds a unique constraint, stops with a lint error: review
                its SQL, then run that step again with --allow-destructive.
                \(steps.joined(separator: "\n"))

                """)
        }
        return status
    }

    struct Output {
        var result: ImportResult
        var header: [String]
        /// nil: standard output.
        var path: String?
    }

    /// Prints the findings, checks each schema with the validator, then writes it.
    static func write(_ outputs: [Output], io: CommandIO) -> ExitCode {
        var status = ExitCode.success
        for output in outputs {
            for finding in output.result.findings { io.writeError("\(finding)\n") }
            var header = output.header
            if !output.result.findings.isEmpty {
                header.append("Not carried over, or chosen for you (see docs/import.md):")
                header += output.result.findings.map { "- \($0.place): \($0.severity.rawValue): \($0.message)" }
            }
            let text = SchemaYAMLWriter.yaml(output.result.schema, header: header)
            let displayPath = output.path ?? "<stdout>"
            let checked = SchemaLoader.load(source: SourceFile(path: displayPath, text: text))
            let errors = checked.diagnostics.filter { $0.severity == .error }
            if !errors.isEmpty {
                let renderer = DiagnosticRenderer(format: .text, colored: false, sources: { _ in checked.source })
                io.writeError(renderer.render(errors))
                io.writeError("schemagen: error: the imported schema does not validate; it was written so you can fix it by hand\n")
                status = .failure
            }
            if let path = output.path {
                do {
                    let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                    io.writeError("wrote \(path): \(output.result.schema.entities.count) entities, \(output.result.findings.count) findings\n")
                } catch {
                    io.writeError("\(path): error: cannot write the schema: \(FileError.reason(error))\n")
                    return .usageOrIO
                }
            } else {
                io.writeOutput(text)
            }
        }
        return status
    }
}
