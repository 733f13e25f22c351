import CommandLineKit
import Foundation
import Migrator
import MigratorCore
import SchemaImport

enum BaselineCommand: Command {
    static let spec = CommandSpec(
        name: "baseline", abstract: "Record migrations up to VERSION as applied without running them (adopt an existing database).",
        discussion:
            "The database must have every table and column of VERSION (from its snapshot); otherwise nothing is recorded. On PostgreSQL the live tables are also compared with what VERSION's migrations build (types, nullability, defaults, keys, foreign keys and their actions, uniques, indexes, checks, partitioning): each difference is listed, and nothing is recorded unless --accept-differences. Exit status: 0 recorded (or, with --dry-run, would be), 1 refused, 2 usage or I/O error, 3 locked.",
        options: MigrateTool.common + [.flag("accept-differences", help: "PostgreSQL: record VERSION although the live tables differ from it (the differences are listed).")],
        arguments: [ArgumentSpec("VERSION", help: "The version the database is at.", isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let version = Int(arguments.arguments[0]) else {
            io.writeError("migrate: error: VERSION must be a number, found '\(arguments.arguments[0])'\n")
            return .usageOrIO
        }
        let dryRun = arguments.flag("dry-run")
        let opening = MigrateTool.openOne(arguments, io: io, readOnly: dryRun)
        guard case .success(let (migrator, database)) = opening else { return opening.exitStatus }
        // Compared before anything is recorded, once the migrator's own check (every table and
        // column of the version) passes: a database lacking some is refused whatever the flag.
        let differences: [ShapeDifference]
        do {
            // The location found again as `openOne` found it (which reported any mistake in it).
            if (try? migrator.pendingBaseline(version)) != nil,
                let location = MigrateTool.config(arguments, io: io).flatMap({ MigrateTool.databaseLocation(arguments, config: $0, io: io) })
            {
                differences = try BaselineCheck.differences(migrator, version: version, location: location) ?? []
            } else {
                differences = []
            }
        } catch {
            io.writeError("migrate: error: cannot compare \(database) with version \(version): \(error)\n")
            return .usageOrIO
        }
        if !differences.isEmpty {
            let accepted = arguments.flag("accept-differences")
            io.writeError(
                "migrate: \(accepted ? "warning" : "error"): \(database) differs from \(migrator.schema) version \(version) in \(differences.count) way\(differences.count == 1 ? "" : "s"):\n"
                    + differences.map { "  \($0)\n" }.joined()
                    + (accepted ? "" : "nothing was recorded: change the database (or the schema) until they agree, or pass --accept-differences to record it as it is\n"))
            if !accepted { return MigrateTool.refused }
        }
        return runMigrations([migrator], io: io) { () throws(MigratorError) in
            let scripts = dryRun ? try migrator.pendingBaseline(version) : try migrator.baseline(version)
            let verb = dryRun ? "would record" : "recorded"
            for script in scripts { io.writeOutput("\(verb) \(script.label) as applied (not run)\n") }
            io.writeOutput(
                scripts.isEmpty
                    ? "\(database): \(migrator.schema) is already recorded at version \(version) or later\n"
                    : "\(database) \(dryRun ? "would be" : "is") recorded at \(migrator.schema) version \(version)\n")
        }
    }
}
