import CommandLineKit
import Foundation
import Migrator
import MigratorCore

enum RollbackCommand: Command {
    static let spec = CommandSpec(
        name: "rollback", abstract: "Undo the expand of the online migration in progress, keeping the rows either app version wrote.",
        discussion:
            "Run before `complete`, once no instance of the new app version is left. Exit status: 0 done (or nothing to roll back), 1 refused or failed, 2 usage or I/O error, 3 locked, 4 no primary took writes within --failover-timeout after a failover (run it again), 130 or 143 interrupted.",
        options: MigrateTool.common + MigrateTool.online)

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        MigrateTool.runPhase(
            arguments, io: io, dryRunPhases: [.expand, .expanded, .rollback], file: { ($0.downFile, $0.down) }, nothing: "in progress",
            run: { migrator, options, progress throws(MigratorError) in try migrator.rollback(options: options, progress: progress) })
    }
}
