import CommandLineKit
import Foundation
import Migrator
import MigratorCore

enum RepairCommand: Command {
    static let spec = CommandSpec(
        name: "repair", abstract: "Fix the history: forget migrations whose tables are absent, record checksums of reviewed edits, clear notes of lost attempts.",
        discussion: """
            Lists the changes and asks before making them (--yes skips the question; --dry-run only lists). \
            A recorded migration is forgotten when the database lacks tables or columns of its snapshot \
            and of every newer recorded one (a baseline at the wrong version, a failed hand-run migration); \
            `up` then runs it. Exit status: 0 repaired or nothing to repair, 1 declined or refused, 2 usage or I/O error, 3 locked.
            """,
        options: MigrateTool.common + [.flag("yes", short: "y", help: "Make the changes without asking.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        let opening = MigrateTool.open(arguments, io: io, allSchemas: true, readOnly: dryRun)
        guard case .success(let (migrators, database)) = opening else { return opening.exitStatus }
        var declined = false
        let status = runMigrations(migrators, io: io) { () throws(MigratorError) in
            var plans: [(Migrator, [Migrator.RepairAction])] = []
            for migrator in migrators {
                let plan = try migrator.repairPlan()
                if !plan.isEmpty { plans.append((migrator, plan)) }
            }
            guard !plans.isEmpty else {
                io.writeOutput("\(database): the history needs no repair.\n")
                return
            }
            for (migrator, plan) in plans {
                io.writeOutput("\(migrator.schema) on \(database):\n" + plan.map { "  - \($0)\n" }.joined())
            }
            if dryRun { return }
            if !arguments.flag("yes") {
                io.writeOutput("Make these changes? [y/N] ")
                let answer = io.readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
                guard answer == "y" || answer == "yes" else {
                    io.writeOutput(answer == nil ? "\nno answer (pass --yes to repair without asking); nothing changed\n" : "nothing changed\n")
                    declined = true
                    return
                }
            }
            for (migrator, _) in plans {
                let made = try migrator.repair()
                io.writeOutput("repaired \(migrator.schema): \(made.count) change\(made.count == 1 ? "" : "s")\n")
            }
        }
        return declined ? MigrateTool.refused : status
    }
}
