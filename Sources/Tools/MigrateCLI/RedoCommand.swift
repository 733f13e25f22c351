import CommandLineKit
import Foundation
import Migrator
import MigratorCore

enum RedoCommand: Command {
    static let spec = CommandSpec(
        name: "redo", abstract: "Revert the newest migration and apply it again.",
        discussion: "Exit status: as for down and up.",
        options: MigrateTool.common + [.flag("allow-destructive", help: "Run a down migration that loses data.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        let opening = MigrateTool.openOne(arguments, io: io, readOnly: dryRun)
        guard case .success(let (migrator, _)) = opening else { return opening.exitStatus }
        let options = Migrator.Options(allowDestructive: arguments.flag("allow-destructive"))
        return runMigrations([migrator], io: io) { () throws(MigratorError) in
            if dryRun {
                guard let last = try migrator.pendingDown(.count(1), options: options).first else {
                    io.writeOutput("nothing to redo\n")
                    return
                }
                io.writeOutput("-- \(last.downFile)\n\(last.down)\n-- \(last.upFile)\n\(last.up)\n")
                return
            }
            let reporter = MigrateTool.Reporter(io: io)
            let reverted = try migrator.down(.count(1), options: options, progress: reporter.handle)
            guard let last = reverted.first else {
                io.writeOutput("nothing to redo\n")
                return
            }
            try migrator.up(.version(last.version), progress: reporter.handle)
        }
    }
}
