import CommandLineKit
import Foundation
import Migrator
import MigratorCore

enum UpCommand: Command {
    static let spec = CommandSpec(
        name: "up", abstract: "Apply pending migrations (all by default).",
        discussion:
            "Exit status: 0 done, 1 refused or failed (nothing of the failing migration remains), 2 usage or I/O error, 3 locked by another migrator or session (--lock-timeout, --ddl-lock-timeout), 4 the primary went away and no new one took writes within --failover-timeout (run the same command again), 130 or 143 interrupted by SIGINT or SIGTERM (the migration in progress rolled back).",
        options: MigrateTool.common + [
            .value("to", valueName: "version", help: "Apply up to and including this version."),
            .flag("allow-out-of-order", help: "Apply a pending migration numbered below the newest applied one."),
            .flag("complete", help: "Online migrations: contract each right after its expand (for a database without traffic)."),
            .flag("allow-destructive", help: "With --complete: also run contract phases that drop data the previous version wrote (loses-data: yes)."),
        ] + MigrateTool.online,
        arguments: [ArgumentSpec("N", help: "How many migrations to apply.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        guard let chosen = target(arguments, default: .all, io: io) else { return .usageOrIO }
        guard var options = MigrateTool.onlineOptions(arguments, io: io) else { return .usageOrIO }
        options.allowOutOfOrder = arguments.flag("allow-out-of-order")
        options.complete = arguments.flag("complete")
        options.allowDestructive = arguments.flag("allow-destructive")
        return FailoverResume.run(arguments, io: io, allSchemas: chosen == .all, readOnly: dryRun) { (migrators, database, reporter) throws(MigratorError) in
            for migrator in migrators {
                if dryRun {
                    // Every file `up` would run, phase by phase, in order; then why it would stop.
                    let (steps, stop) = try migrator.plannedUpEverywhere(chosen, options: options)
                    for step in steps { io.writeOutput("-- \(step.kind.rawValue): \(step.file)\n\(step.text ?? "")\n") }
                    // What the expand phases would carry across the tables they copy, as the database is now.
                    for (version, objects) in try migrator.carriedObjects() where steps.contains(where: { $0.kind == .expand && $0.script.version == version }) {
                        io.writeOutput("-- \(migrator.schema) \(String(format: "%04d", version)) would carry, made outside the schema:\n")
                        io.writeOutput(objects.map { "--   \($0.action == .carry ? "carried" : "CANNOT BE CARRIED (stops expand; --drop-uncarried drops it)"): \($0.object): \($0.reason)\n" }.joined())
                    }
                    if let stop { io.writeError("migrate: note: \(MigrateAdvice.message(stop))\n") }
                    continue
                }
                let applied = try migrator.up(chosen, options: options, progress: reporter.handle)
                if applied.isEmpty { io.writeOutput("\(database) is up to date with \(migrator.schema).\n") }
            }
        }
    }
}
