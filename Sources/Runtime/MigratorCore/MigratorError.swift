import Diagnostics
import Foundation
import MigrationFiles
import SchemaMetadata

/// Why the migrator refused or failed; every case names the file and what happened. The
/// description says what to do in the library's terms; a command-line tool adds its own flags
/// (`migrate`'s advice lives in MigrateCLI).
public enum MigratorError: Error, Sendable, CustomStringConvertible {
    /// The folder holds no migrations.
    case noMigrations(String)
    /// A migration file cannot be read.
    case unreadable(String)
    /// The migration folder does not match its manifest.
    case tampered([Diagnostic])
    /// An applied migration's file changed since it was applied.
    case changedAfterApply(version: Int, file: String)
    /// A migration is applied but its file is gone.
    case missingFile(version: Int, name: String)
    /// A pending migration is numbered below the newest applied one.
    case outOfOrder(file: String, newestApplied: Int)
    /// A statement failed; its migration was rolled back.
    case statementFailed(file: String, statement: Int, line: Int, message: String)
    /// A statement gave up waiting for a table lock another session held (PostgreSQL's
    /// `lock_timeout`); nothing was applied, and running again later may succeed.
    case tableLockTimeout(file: String, statement: Int, line: Int, message: String)
    /// A statement ran longer than the session's statement timeout; nothing was applied.
    case statementTimeout(file: String, statement: Int, line: Int, message: String)
    /// A migration that rebuilt tables left rows whose foreign keys point nowhere; it was rolled back.
    case foreignKeyViolations(file: String, violations: [String])
    /// Going down would lose data.
    case destructiveDown(file: String)
    /// An online migration's contract phase drops data the previous version wrote (its header
    /// says `loses-data: yes`), and `up --complete` was not allowed to run destructive phases.
    case destructiveContract(file: String)
    /// Another migrator held the database longer than the timeout.
    case locked(seconds: Double)
    /// No migration has this number.
    case unknownVersion(Int)
    /// The database refused or failed (the failure names it, a server's password masked).
    case database(DatabaseFailure)
    /// No connection could be made.
    case cannotConnect(DatabaseFailure)
    /// The file's machine-readable header cannot be read (docs/migrations.md, "The header").
    case badHeader(file: String, MigrationHeader.ParseError)
    /// The file was planned for another database engine.
    case wrongDialect(file: String, planned: String, database: String)
    /// A migration that must run outside a transaction failed midway.
    case failedOutsideTransaction(file: String, statement: Int, line: Int, message: String)
    /// Stopped on request (a signal): `during` says what was cancelled; the migration in
    /// progress was rolled back.
    case interrupted(during: String)
    /// Stopped on request during a phase of an online migration: the sections and backfill
    /// batches finished before it stay applied, and `command` (`up`, `complete`, `rollback`)
    /// resumes where it stopped.
    case interruptedPhase(during: String, command: String)
    /// `baseline` would record a version whose tables or columns the database does not have.
    case baselineMismatch(version: Int, missing: [String])
    /// `baseline` was asked to check migrations that carry no snapshot (embedded in code).
    case baselineUnchecked(version: Int)
    /// An online migration's phase cannot run now: `reason` says why and what to run instead.
    case onlineState(String)
    /// A section of an online migration's phase failed; the sections before it stay done, and
    /// the next run of the same command resumes at this one.
    case onlineSectionFailed(file: String, section: Int, line: Int, message: String)
    /// A phase file's sections cannot be read.
    case badOnlineFile(file: String, OnlinePhase.ParseError)
    /// A backfill waited for a lagging standby longer than `replicaLagTimeout`; the batches
    /// done stay done, and the same command resumes after them.
    case replicaLagTimeout(ReplicaLagWait)

    /// What happened, naming the file, and what to do.
    public var description: String {
        switch self {
        case .noMigrations(let path):
            "no migrations in '\(path)'"
        case .unreadable(let file):
            "cannot read '\(file)'"
        case .tampered(let problems):
            "the migration folder does not match migrations.sum:\n" + problems.map { "  \($0.location.map { "\($0.file): " } ?? "")\($0.message)" }.joined(separator: "\n")
        case .changedAfterApply(let version, let file):
            "migration \(Self.number(version)) was applied, but \(file) has changed since; restore the applied version, or write a new migration for the change"
        case .missingFile(let version, let name):
            "migration \(Self.number(version))_\(name) is applied to the database but its files are missing; restore them from version control"
        case .outOfOrder(let file, let newest):
            "\(file) is numbered below the newest applied migration (\(Self.number(newest))), probably from a merged branch; renumber it after \(Self.number(newest)), or allow out-of-order migrations"
        case .statementFailed(let file, let statement, let line, let message):
            "\(file):\(line): statement \(statement) failed: \(message); nothing of this migration was applied"
        case .tableLockTimeout(let file, let statement, let line, let message):
            "\(file):\(line): statement \(statement) failed: \(message) (it waited longer than the lock timeout for a lock another session holds); nothing of this migration was applied: run again when the table is quieter, or wait longer"
        case .statementTimeout(let file, let statement, let line, let message):
            "\(file):\(line): statement \(statement) failed: \(message) (it ran longer than the statement timeout); nothing of this migration was applied: allow it longer, or run it when the database is quieter"
        case .foreignKeyViolations(let file, let violations):
            "\(file) leaves rows whose foreign keys point nowhere, so it was rolled back:\n" + violations.map { "  \($0)" }.joined(separator: "\n")
        case .destructiveDown(let file):
            "\(file) loses data it cannot restore (see its header); allow destructive migrations to run it anyway"
        case .destructiveContract(let file):
            "\(file) drops data the previous version wrote, which cannot be restored (its header says loses-data: yes); nothing was run: contract it with `migrate complete` once no app of that version runs, or pass --allow-destructive to `up --complete`"
        case .locked(let seconds):
            "another migrator held the database for more than \(seconds) s; try again, or wait longer"
        case .unknownVersion(let version):
            "there is no migration \(Self.number(version))"
        case .database(let failure):
            failure.connectionLost
                ? "\(failure.database): the connection was lost (\(failure.message)); the migration in progress, if any, was rolled back by the server: run again once it is reachable"
                : "database error: \(failure)"
        case .cannotConnect(let failure):
            "\(failure.message); check the URL and that the server runs"
        case .wrongDialect(let file, let planned, let database):
            "\(file) was planned for \(planned), but the database is \(database); use the schema's \(database) migrations"
        case .badHeader(let file, let error):
            "\(file):\(error.line): bad migration header: \(error.message); nothing was run"
        case .interrupted(let during):
            "interrupted: \(during) was cancelled; nothing of the migration in progress was applied (migrations finished before it stay applied)"
        case .interruptedPhase(let during, let command):
            "interrupted: \(during) was cancelled and rolled back; what finished before it stays applied (the sections before it and the backfill batches done, as the online state records): run the same command (`\(command)`) to resume there"
        case .baselineMismatch(let version, let missing):
            "cannot record version \(version) as applied: the database lacks what that version has (\(missing.prefix(10).joined(separator: ", "))\(missing.count > 10 ? ", and \(missing.count - 10) more" : "")); baseline at the version the database really is at, or apply the migrations instead"
        case .baselineUnchecked(let version):
            "cannot check that the database has the tables of version \(version): these migrations carry no snapshot; baseline from the migration folder"
        case .onlineState(let reason):
            reason
        case .onlineSectionFailed(let file, let section, let line, let message):
            "\(file):\(line): section \(section) failed: \(message); the sections before it are done and this one was rolled back (or, outside a transaction, may be half done and runs again): fix the cause and run the same command again to resume"
        case .badOnlineFile(let file, let error):
            "\(file):\(error.line): \(error.message); nothing was run"
        case .replicaLagTimeout(let wait):
            "standby \(wait.standby) stayed \(String(format: "%.1f", wait.lag)) s behind (over the \(String(format: "%.1f", wait.bound)) s bound) for \(String(format: "%.0f", wait.waited)) s, so the backfill gave up; the batches done stay done: once the standby catches up (or with a larger --max-replica-lag or --replica-lag-timeout), run the same command again to resume"
        case .failedOutsideTransaction(let file, let statement, let line, let message):
            "\(file):\(line): statement \(statement) failed: \(message); this migration runs outside a transaction (its header says so), so the statements before it stay applied and it is not recorded: repair what they left (an index left INVALID, say), then run again"
        }
    }

    static func number(_ version: Int) -> String { String(format: "%04d", version) }
}
