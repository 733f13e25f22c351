import CommandLineKit
import Foundation
import Migrator
import MigratorCore
import SQLiteKit

enum ValidateMigrationsCommand: Command {
    static let spec = CommandSpec(
        name: "validate", abstract: "Check applied migrations against their files (every schema unless --dir).",
        discussion:
            "Reads only: a missing SQLite file is an empty database, not created. Exit status: 0 consistent, 1 an applied file changed or is missing, or a pending one is out of order, 2 usage or I/O error.",
        options: MigrateTool.common)

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let opening = MigrateTool.open(arguments, io: io, allSchemas: true, readOnly: true)
        guard case .success(let (migrators, database)) = opening else { return opening.exitStatus }
        var failed = false
        for migrator in migrators {
            do {
                let problems = try migrator.validate()
                if problems.isEmpty {
                    io.writeOutput("\(database): applied migrations of \(migrator.schema) match their files.\n")
                } else {
                    failed = true
                    io.writeError(problems.map { "migrate: error: \(MigrateAdvice.message($0))\n" }.joined())
                }
            } catch {
                io.writeError("migrate: error: \(MigrateAdvice.message(error))\n")
                return MigrateTool.exitCode(for: error)
            }
        }
        return failed ? MigrateTool.refused : .success
    }
}
