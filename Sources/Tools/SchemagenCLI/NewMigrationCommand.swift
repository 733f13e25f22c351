import CommandLineKit
import Diagnostics
import Foundation
import ProjectConfig
import SQLDialects
import SchemaKit
import SchemagenPipeline

/// `schemagen new-migration NAME --schema FILE`: an empty up/down pair for hand-written SQL.
public enum NewMigrationCommand: Command {
    public static let spec = CommandSpec(
        name: "new-migration",
        abstract: "Add an empty numbered up/down pair to each dialect folder of a schema, for hand-written SQL.",
        discussion: """
            For what the schema language does not say: extensions, views, triggers, grants, row-level
            security, data fixes. The pair is numbered after the newest migration, recorded in each
            folder's migrations.sum, and keeps the schema's snapshot, so the next planned migration
            follows it. Write the SQL, run `schemagen rehash SCHEMA`, then `schemagen generate` to embed
            it. Exit status: 0 written, 1 invalid schema or tampered folders, 2 usage or I/O error.
            """,
        options: [
            .value("schema", short: "s", valueName: "file", help: "The schema the migration belongs to."),
            .value("migrations", short: "m", valueName: "dir", help: "The migrations root.", defaultValue: "Migrations"),
            .value(
                "dialect", valueName: "dialect", help: "Only this dialect's folder (\(SQLDialectName.list)); repeatable. Default: the schema's dialects.",
                allowed: SQLDialectName.allCases.map(\.rawValue), repeatable: true),
            .flag("no-transaction", help: "Mark the files 'transaction: no' (one statement such as CREATE INDEX CONCURRENTLY)."),
            .value("config", valueName: "file", help: "A config file with defaults.", defaultValue: ProjectConfig.defaultFile),
        ],
        arguments: [ArgumentSpec("NAME", help: "What the migration does, such as add_audit_trigger.", isRequired: true)])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let schemaPath = arguments.value("schema") else {
            io.writeError("schemagen: error: new-migration needs --schema FILE\nUsage: schemagen new-migration NAME --schema FILE [--migrations DIR]\n")
            return .usageOrIO
        }
        let (loadedConfig, configFailure) = SchemaInput.config(arguments, io: io)
        guard let config = loadedConfig else { return configFailure }
        let (loaded, failure) = SchemaInput.oneSchema(schemaPath, io: io)
        guard let schema = loaded else { return failure ?? .failure }
        let named = arguments.values("dialect").compactMap(SQLDialectName.init)
        let dialects = named.isEmpty ? (schema.dialects ?? config.dialects?.compactMap(SQLDialectName.init) ?? [.default]) : named
        let root = arguments.value("migrations") ?? config.migrations ?? "Migrations"
        do {
            let (folders, entry) = try HandWrittenMigration.create(
                name: arguments.arguments[0], schema: schema, dialects: dialects, root: root,
                runsInTransaction: !arguments.flag("no-transaction"))
            for folder in folders {
                io.writeOutput("created \(folder.path)/\(entry.upFile)\ncreated \(folder.path)/\(entry.downFile)\n")
            }
            io.writeOutput("Write the SQL, then run `\(folders[0].rehashCommand)` and `schemagen generate` (which embeds it in the generated code).\n")
            return .success
        } catch {
            switch error {
            case .folders(let problems):
                io.writeError(DiagnosticRenderer(format: .text).render(problems))
                return .failure
            case .io(let message):
                io.writeError("schemagen: error: \(message)\n")
                return .usageOrIO
            }
        }
    }
}
