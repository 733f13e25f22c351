import CommandLineKit
import Foundation
import Migrator
import MigratorCore

enum DownCommand: Command {
    static let spec = CommandSpec(
        name: "down", abstract: "Revert applied migrations (one by default; --to 0 reverts all).",
        discussion: "Exit status: 0 done, 1 refused or failed, 2 usage or I/O error, 3 locked by another migrator or session (--lock-timeout, --ddl-lock-timeout), 130 or 143 interrupted.",
        options: MigrateTool.common + [
            .value("to", valueName: "version", help: "Revert down to this version (0 = everything)."),
            .flag("allow-destructive", help: "Run down migrations that lose data."),
        ],
        arguments: [ArgumentSpec("N", help: "How many migrations to revert.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        guard let chosen = target(arguments, default: .count(1), io: io) else { return .usageOrIO }
        let opening = MigrateTool.openOne(arguments, io: io, readOnly: dryRun)
        guard case .success(let (migrator, _)) = opening else { return opening.exitStatus }
        let options = Migrator.Options(allowDestructive: arguments.flag("allow-destructive"))
        return runMigrations([migrator], io: io) { () throws(MigratorError) in
            if dryRun {
                for script in try migrator.pendingDown(chosen, options: options) { io.writeOutput("-- \(script.downFile)\n\(script.down)\n") }
                return
            }
            let reverted = try migrator.down(chosen, options: options, progress: MigrateTool.Reporter(io: io).handle)
            if reverted.isEmpty { io.writeOutput("nothing to revert\n") }
        }
    }
}
