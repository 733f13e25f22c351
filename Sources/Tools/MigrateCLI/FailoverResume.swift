import CommandLineKit
import Foundation
import Migrator
import MigratorCore
import ProjectConfig

/// `up`, `complete` and `rollback` on a PostgreSQL cluster: when the primary goes away mid-run
/// (the connection is lost, or the server turned into a standby), the run waits for a new
/// primary through the same URL, up to `--failover-timeout`, and runs the command again under
/// a fresh migrator lock. What the database recorded stays done: an ordinary migration's
/// transaction died with its server and runs again (or had committed and is skipped), an online
/// phase goes on from its last section and backfill batch.
enum FailoverResume {
    static let option = OptionSpec.value(
        "failover-timeout", valueName: "seconds",
        help: "PostgreSQL: when the primary goes away mid-run, wait this long for a new one, then resume (0: fail at once). Config: failoverTimeout.",
        defaultValue: "60")

    /// Exit status of a run that found no primary within the failover timeout.
    static let noPrimary = ExitCode(4)

    /// Opens the migrators and runs `body` on them, again after each failover.
    static func run(
        _ arguments: ParsedArguments, io: CommandIO, allSchemas: Bool, readOnly: Bool,
        _ body: ([Migrator], String, MigrateTool.Reporter) throws(MigratorError) -> Void
    ) -> ExitCode {
        guard let timeout = failoverTimeout(arguments, io: io) else { return .usageOrIO }
        let reporter = MigrateTool.Reporter(io: io)
        var opening = MigrateTool.open(arguments, io: io, allSchemas: allSchemas, readOnly: readOnly)
        while true {
            guard case .success(let (migrators, database)) = opening else { return opening.exitStatus }
            var failure: MigratorError?
            var failedOver = false
            let code = runMigrations(
                migrators, io: io,
                report: { error in
                    failure = error
                    failedOver = timeout > 0 && isFailover(migrators)
                    return !failedOver
                }
            ) { () throws(MigratorError) in
                try body(migrators, database, reporter)
            }
            guard let failure, failedOver else { return code }
            let during = reporter.lastScript
            guard let reopened = waitForPrimary(arguments, io: io, allSchemas: allSchemas, readOnly: readOnly, timeout: timeout) else {
                io.writeError(
                    "migrate: error: \(database) went away during \(during ?? "the run") (\(MigrateAdvice.message(failure))), and no primary took writes within \(format(timeout)) s: what finished stays recorded; run the same command again once the cluster has a primary\n"
                )
                return noPrimary
            }
            if case .success(let (newMigrators, newDatabase)) = reopened {
                let (old, new) = (migrators.first?.server ?? database, newMigrators.first?.server ?? newDatabase)
                io.writeOutput("note: the primary changed (\(old) -> \(new)) during \(during ?? "the run"): \(resumption(newMigrators, during: reporter.lastVersion))\n")
            }
            opening = reopened
        }
    }

    /// Whether the run failed because its server went away or stopped being the primary.
    static func isFailover(_ migrators: [Migrator]) -> Bool {
        guard let migrator = migrators.first else { return false }
        return !migrator.databaseTakesWrites()
    }

    /// Opens again, with pauses, until a primary takes writes or `timeout` passes; nil then.
    /// Opening fails fast while the cluster elects (every server a standby), so it is retried
    /// here rather than by libpq.
    static func waitForPrimary(_ arguments: ParsedArguments, io: CommandIO, allSchemas: Bool, readOnly: Bool, timeout: Double) -> Result<([Migrator], String), CommandFailure>? {
        let deadline = Date().addingTimeInterval(timeout)
        var pause = 0.2
        while Date() < deadline {
            var quiet = io
            quiet.writeOutput = { _ in }
            quiet.writeError = { _ in }
            let attempt = MigrateTool.open(arguments, io: quiet, allSchemas: allSchemas, readOnly: readOnly)
            if case .success(let (migrators, _)) = attempt, migrators.first?.databaseTakesWrites() == true {
                return MigrateTool.open(arguments, io: io, allSchemas: allSchemas, readOnly: readOnly)
            }
            usleep(UInt32(pause * 1_000_000))
            pause = min(pause * 2, 2)
        }
        return nil
    }

    /// Where the run goes on, as the new primary's records say.
    static func resumption(_ migrators: [Migrator], during version: Int?) -> String {
        guard let version else { return "running the command again" }
        for migrator in migrators {
            if let state = try? migrator.onlineState(), state.version == version, [.expand, .contract, .rollback].contains(state.phase) {
                let batch = state.resumeKey == nil ? "" : ", after the backfill's last batch"
                return "resumed at section \(state.section + 1) of its \(state.phase.rawValue)\(batch)"
            }
            if let applied = try? migrator.history(), applied.contains(where: { $0.version == version }) {
                return "it had committed; going on with the next"
            }
        }
        return "its transaction was rolled back with the old primary; it runs again"
    }

    static func failoverTimeout(_ arguments: ParsedArguments, io: CommandIO) -> Double? {
        guard let text = arguments.value("failover-timeout") else { return MigrateTool.config(arguments, io: io)?.failoverTimeout ?? 60 }
        guard let value = Double(text), value >= 0, value.isFinite else {
            io.writeError("migrate: error: --failover-timeout expects a number of seconds, found '\(text)'\n")
            return nil
        }
        return value
    }

    static func format(_ seconds: Double) -> String { seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds) }
}
