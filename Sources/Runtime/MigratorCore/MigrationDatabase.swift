import SQLDialects
import SchemaMetadata

/// What the migrator needs of every database: run SQL and scripts in transactions, and find
/// tables and columns. One adapter per engine, in its own target (MigratorSQLite beside
/// libsqlite3, MigratorPostgres beside libpq), so an application links only the engines it
/// uses. What only some engines can do is an ability below, which the migrator looks for once.
///
/// The migrator's history semantics are the same on each: one history per schema, each
/// migration committed with its history row.
public protocol MigrationDatabase: AnyObject {
    /// The engine's dialect: quoting, column types and capabilities.
    var dialect: any SQLDialect { get }
    /// The database as messages name it: a file path, or a URL without its password.
    var label: String { get }
    /// Runs SQL without parameters or results.
    func execute(_ sql: SQL) throws(MigratorError)
    /// Runs a statement built by construction and returns its rows; the adapter renders it for
    /// its dialect (parameters as its `parameterMarker` spells them).
    func query(_ statement: SQL) throws(MigratorError) -> [[StoredValue]]
    /// Runs one statement of a migration file that marks its own parameters (a backfill's UPDATE
    /// and its `$1`, `$2` bounds) with their values, and returns its rows.
    func query(_ statement: MigrationScriptText, arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]]
    /// The statements of a script, as this engine splits them.
    func statementCount(_ script: MigrationScriptText) -> Int
    /// Runs a script statement by statement, reporting each (index, line) before it runs;
    /// `shouldStop`, asked before each, ends it as a failure.
    func runScript(_ script: MigrationScriptText, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure)
    /// Starts the transaction a migration runs in. Where the engine has no session lock
    /// (SQLite), this is the lock: the write lock, waited for up to `timeout` seconds.
    func beginTransaction(timeout: Double) throws(MigratorError)
    /// Commits the transaction `beginTransaction` started.
    func commit() throws(MigratorError)
    /// Rolls back the transaction in progress, if any; never throws.
    func rollback()
    /// A table's name as SQL: in `schema` where the engine has schemas, else bare.
    func qualifiedName(_ table: String, schema: String?) -> SQL
    /// Whether a table exists: in `schema`, or (nil) where the session's search path finds it.
    func tableExists(_ name: String, schema: String?) throws(MigratorError) -> Bool
    /// The column names of a table, found as `tableExists` finds it; nil when there is none.
    func columns(of table: String, schema: String?) throws(MigratorError) -> Set<String>?
    /// An expression reading a history timestamp column as ISO 8601 UTC text.
    func timestampText(_ column: String) -> SQL
    /// Who is applying migrations, for the history: the database role, or the system user.
    func currentUser() -> String
    /// Stops the statement in progress from another thread (a signal handler's): PostgreSQL's
    /// cancel request, SQLite's interrupt. The statement fails and its transaction rolls back.
    var canceller: @Sendable () -> Void { get }
}

/// A migration file's SQL as it was written and checksummed: the one text the migrator runs
/// that no code built, split into statements by the engine's own rules.
public struct MigrationScriptText: Sendable, Hashable {
    /// The file's SQL, byte for byte.
    public let text: String

    /// A script as read from a migration file (or written by the planner into one).
    ///
    ///     try database.runScript(MigrationScriptText(file.sql), shouldStop: { false }, willRun: { _, _ in })
    public init(_ text: String) { self.text = text }
}

// MARK: - Abilities

/// A migrator lock that outlives transactions (PostgreSQL's session advisory lock). Migrators
/// take it around each migration, and note each attempt before it starts, so the next run can
/// report one that a lost connection cut short. Engines without it serialize migrators with
/// the write lock their `beginTransaction` takes, and a killed transaction leaves nothing to
/// report.
public protocol MigrationLocking: MigrationDatabase {
    /// Takes the lock other migrators of `schema` wait for, outside any transaction; `.locked`
    /// past `timeout` seconds. Gives up early, with `.interrupted`, once `cancelled` answers true.
    func lock(schema: String, timeout: Double, cancelled: () -> Bool) throws(MigratorError)
    /// Releases the lock `lock` took; never throws.
    func unlock(schema: String)
    /// The server process holding the migrator lock of `schema` now, if another one does.
    func lockHolder(schema: String) throws(MigratorError) -> Int?
}

/// Namespaces (PostgreSQL's schemas): the one the history lives in is created when missing.
public protocol MigrationNamespaces: MigrationDatabase {
    /// Creates the schema unless it exists.
    func createSchemaIfMissing(_ schema: String) throws(MigratorError)
}

/// Columns whose declared type can be read and changed in place (PostgreSQL): the history table
/// an earlier release wrote, whose `applied_at` was text, gains the timestamp type. Engines that
/// store timestamps as text need nothing.
public protocol ColumnRetyping: MigrationDatabase {
    /// The declared type of `column` of `table` in `schema`, as the catalogue names it (`text`,
    /// `timestamp with time zone`); nil when there is no such column.
    func declaredType(of column: String, in table: String, schema: String) throws(MigratorError) -> String?
    /// Changes the column's type in place, converting each value.
    func retype(_ column: String, of table: String, schema: String, to type: String) throws(MigratorError)
}

/// Online (expand/contract) migrations: a per-session lock timeout for their DDL, the names the
/// statements resolve in, and the flag their sync triggers skip backfills by (PostgreSQL).
public protocol OnlineMigrating: MigrationDatabase {
    /// How long each statement may wait for a lock, in this session (or this transaction, with
    /// `local`), so no statement queues app queries behind it for longer.
    func setLockTimeout(milliseconds: Int, local: Bool) throws(MigratorError)
    /// Resolves unqualified names in `schema` only, whatever the connection's search path.
    func setSearchPath(_ schema: String) throws(MigratorError)
    /// Marks the transaction as a backfill, which the sync triggers let through unchanged.
    func markBackfill() throws(MigratorError)
    /// Other sessions holding locks on these tables (or views) now, each described for a
    /// message (pid, application, state, how long its transaction has been open), oldest first.
    func sessionsHoldingLocks(on relations: [String]) -> [String]
    /// Other sessions of this database with a transaction open, described the same way: the
    /// ones a `CREATE INDEX CONCURRENTLY` waits for.
    func sessionsInTransactions() -> [String]
    /// The sessions whose transactions hold these rows' locks, described the same way.
    func sessionsHoldingRows(of table: String, key: String, type: String, keys: [String]) -> [String]
    /// The table's row count as the server estimates it, for progress; nil when unknown.
    func estimatedRowCount(of table: String) -> Int?
    /// Whether this session's sections drop what a table's copy cannot carry (with a
    /// warning each) instead of stopping: `schemagen.drop_uncarried`, which they read.
    func dropUncarried(_ allowed: Bool) throws(MigratorError)
}

extension OnlineMigrating {
    /// No estimate: progress shows rows done only.
    public func estimatedRowCount(of table: String) -> Int? { nil }
}

/// Warnings the server sends besides results (PostgreSQL's `RAISE WARNING`): the migrator
/// reports them after each section, so a section's warning is never lost.
public protocol ServerWarnings: MigrationDatabase {
    /// The warnings received since the last call, oldest first.
    func takeWarnings() -> [String]
}

/// Foreign-key enforcement switched off around a migration that rebuilds tables (SQLite: it
/// cannot alter a column in place), and checked before it commits.
public protocol ForeignKeySwitching: MigrationDatabase {
    /// Whether foreign keys are enforced now.
    func foreignKeysEnabled() -> Bool
    /// Outside a transaction (SQLite ignores the switch inside one).
    func setForeignKeys(_ enabled: Bool) throws(MigratorError)
    /// One line per row whose foreign key points nowhere.
    func foreignKeyViolations() throws(MigratorError) -> [String]
}

/// An engine whose table rebuilds drop what sits on the table (SQLite: `DROP TABLE` takes its
/// indexes and triggers, and renaming the new table refuses views and triggers that name the
/// missing one). What was made outside the schema is read just before each rebuild and made
/// again after the file's statements, in its transaction: sqlite.org's procedure, steps 3
/// and 8.
public protocol RebuildCarrying: MigrationDatabase {
    /// Runs `body` (the file's statements) with what sits around each of `copies`' old tables
    /// (`from`, rebuilt as `to`, the header's row copies) carried across its rebuild. Returns what was made again, as "index audit_idx on
    /// orders". An object that cannot be made again (it names a column that is gone) fails
    /// the file with `.statementFailed`, naming it, so its transaction rolls back whole.
    func carryingObjects(around copies: [(from: String, to: String)], file: String, _ body: () throws(MigratorError) -> Void) throws(MigratorError) -> [String]
}

/// Row copies reported while a script runs.
public protocol RowCopyProgress: MigrationDatabase {
    /// `report` gets the table rows are being inserted into and how many so far, or nil for "busy".
    func observeProgress(_ report: @escaping (String?, Int) -> Void)
    /// Stops the reports `observeProgress` started.
    func stopObservingProgress()
    /// Calls `body` counting inserted rows per statement.
    func countingRows<T>(_ body: () throws(MigratorError) -> T) throws(MigratorError) -> T
    /// Starts counting the next statement's rows from zero.
    func resetRowCount()
}

/// A statement of a script that failed, with what the engine said.
public struct StatementFailure: Error, Sendable {
    /// Why a statement failed, where the migrator acts on it.
    public enum Reason: Sendable, Equatable {
        /// It gave up waiting for a table lock another session held (PostgreSQL's
        /// `lock_timeout`): running again later may succeed.
        case lockTimeout
        /// The server found it waiting in a cycle with other sessions and rolled it back
        /// (PostgreSQL's `40P01`): like a lock timeout, running again may succeed.
        case deadlock
        /// It ran longer than the session's statement timeout.
        case statementTimeout
        /// The connection to the server was lost.
        case connectionLost
    }

    /// The statement's position in the script, from 1.
    public var index: Int
    /// The line of the script the statement starts on.
    public var line: Int
    /// What the engine said.
    public var message: String
    /// Why, when it is one the migrator acts on.
    public var reason: Reason?

    /// A failure of the `index`th statement, which starts on `line`.
    ///
    ///     throw StatementFailure(index: 3, line: 12, message: "canceling statement due to lock timeout", reason: .lockTimeout)
    public init(index: Int, line: Int, message: String, reason: Reason? = nil) {
        self.index = index
        self.line = line
        self.message = message
        self.reason = reason
    }
}

extension StatementFailure {
    /// Whether it gave up waiting for a lock: the spelling of releases before `reason`.
    ///
    ///     if failure.reason == .lockTimeout { tryAgainLater() }   // was: failure.waitedForLock
    @available(*, deprecated, message: "use reason == .lockTimeout")
    public var waitedForLock: Bool {
        get { reason == .lockTimeout }
        set { reason = newValue ? .lockTimeout : nil }
    }
}
