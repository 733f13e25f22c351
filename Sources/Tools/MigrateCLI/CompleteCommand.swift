import CommandLineKit
import Foundation
import Migrator
import MigratorCore

enum CompleteCommand: Command {
    static let spec = CommandSpec(
        name: "complete", abstract: "Contract the expanded online migration: remove what only the previous app version used.",
        discussion:
            "Run once no instance of the previous app version is left. A killed run resumes where it stopped. Exit status: 0 done (or nothing to complete), 1 refused or failed, 2 usage or I/O error, 3 locked, 4 no primary took writes within --failover-timeout after a failover (run it again), 130 or 143 interrupted.",
        options: MigrateTool.common + MigrateTool.online)

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        MigrateTool.runPhase(
            arguments, io: io, dryRunPhases: [.expanded, .contract], file: { ($0.contractFile, $0.contract) }, nothing: "to complete",
            run: { migrator, options, progress throws(MigratorError) in try migrator.complete(options: options, progress: progress) })
    }
}
