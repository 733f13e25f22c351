import Foundation
import MigratorCore
import SQLDialects
import SQLiteKit
import SchemaMetadata

/// A SQLite file: the migrator's lock is the write lock `BEGIN IMMEDIATE` takes, waiting out
/// the busy timeout. Tables are rebuilt with foreign keys switched off around them, and row
/// copies report their progress.
public final class SQLiteMigrationDatabase: MigrationDatabase, ForeignKeySwitching, RowCopyProgress {
    /// The connection migrations run on.
    public let connection: SQLiteConnection
    /// SQLite's dialect.
    public let dialect: any SQLDialect = SQLiteDialect()
    /// The file's path (or what the opener named it).
    public let label: String

    /// `label` names the database in messages when it is not the connection's file (a missing
    /// file read as an empty database in memory). `lockWait` is how long any statement waits
    /// for another connection's lock (the busy timeout), in seconds.
    ///
    ///     let database = SQLiteMigrationDatabase(try SQLiteConnection(path: "app.sqlite"), lockWait: 10)
    public init(_ connection: SQLiteConnection, label: String? = nil, lockWait: Double = 30) {
        self.connection = connection
        self.label = label ?? connection.path
        setBusyTimeout(seconds: lockWait)
    }

    private var busyTimeout: Int32 = 30_000

    private func setBusyTimeout(seconds: Double) {
        busyTimeout = Int32(max(0, min(seconds * 1000, Double(Int32.max))))
        connection.setBusyTimeout(milliseconds: busyTimeout)
    }

    private func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(MigratorError) -> T {
        do {
            return try body()
        } catch {
            if error.primary == .busy { throw .locked(seconds: Double(busyTimeout) / 1000) }
            throw .database(Self.failure(error, database: label))
        }
    }

    /// SQLite's error in the migrator's terms.
    public static func failure(_ error: SQLiteError, database: String) -> DatabaseFailure {
        error.failure(database: database)
    }

    /// Runs SQL; a busy database past the timeout is `.locked`.
    public func execute(_ sql: String) throws(MigratorError) { try wrap { () throws(SQLiteError) in try connection.execute(sql) } }

    /// Runs a query with `?` parameters.
    public func query(_ sql: String, _ arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]] {
        try wrap { () throws(SQLiteError) in try connection.query(sql, arguments) }
    }

    /// A statement built by construction, rendered with `?` parameters.
    public func query(_ statement: SQL) throws(MigratorError) -> [[StoredValue]] {
        let (text, arguments) = statement.rendered(for: dialect)
        return try query(text, arguments)
    }

    /// SQL without parameters.
    public func execute(_ sql: SQL) throws(MigratorError) { try execute(sql.rendered(for: dialect).text) }

    /// A migration file's statement with its own parameters.
    public func query(_ statement: MigrationScriptText, arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]] {
        try query(statement.text, arguments)
    }

    /// The statements of a script, split as SQLite splits them (triggers whole).
    public func statementCount(_ sql: String) -> Int { SQLiteConnection.statements(in: sql).count }

    /// The statements of a migration file's script.
    public func statementCount(_ script: MigrationScriptText) -> Int { statementCount(script.text) }

    /// Runs a migration file's script statement by statement.
    public func runScript(_ script: MigrationScriptText, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        try runScript(script.text, shouldStop: shouldStop, willRun: willRun)
    }

    /// Runs a script statement by statement on the connection.
    public func runScript(_ sql: String, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        do {
            try connection.executeScript(sql, shouldStop: shouldStop) { position in willRun(position.index, position.line) }
        } catch {
            throw StatementFailure(index: error.position.index, line: error.position.line, message: error.error.message)
        }
    }

    /// `BEGIN IMMEDIATE`: takes the write lock, waiting up to `timeout` seconds.
    public func beginTransaction(timeout: Double) throws(MigratorError) {
        setBusyTimeout(seconds: timeout)
        try execute("BEGIN IMMEDIATE;")
    }

    /// Commits.
    public func commit() throws(MigratorError) { try execute("COMMIT;") }
    /// Rolls back the open transaction, if any.
    public func rollback() { if connection.isInTransaction { try? connection.execute("ROLLBACK;") } }

    /// One namespace: `schema` is ignored.
    public func qualifiedName(_ table: String, schema: String?) -> SQL { .identifier(table) }

    /// Whether `sqlite_schema` has the table.
    public func tableExists(_ name: String, schema: String?) throws(MigratorError) -> Bool {
        !(try query("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(name)])).isEmpty
    }

    /// The table's columns, hidden and generated ones included.
    public func columns(of table: String, schema: String?) throws(MigratorError) -> Set<String>? {
        guard try tableExists(table, schema: schema) else { return nil }
        return Set(try query("SELECT name FROM pragma_table_xinfo(?)", [.text(table)]).compactMap { if case .text(let name) = $0.first { name } else { nil } })
    }

    /// Timestamps are kept as ISO 8601 text already.
    public func timestampText(_ column: String) -> SQL { .identifier(column) }

    /// The login name of the process: SQLite has no roles.
    public func currentUser() -> String { SystemUser.name }

    /// `sqlite3_interrupt` on the connection.
    public var canceller: @Sendable () -> Void {
        let interrupter = connection.interrupter
        return { interrupter.interrupt() }
    }

    // MARK: ForeignKeySwitching

    /// `PRAGMA foreign_keys`.
    public func foreignKeysEnabled() -> Bool { (try? connection.query("PRAGMA foreign_keys;")) == [[.integer(1)]] }
    /// Sets `PRAGMA foreign_keys` (outside a transaction).
    public func setForeignKeys(_ enabled: Bool) throws(MigratorError) { try execute("PRAGMA foreign_keys = \(enabled ? "ON" : "OFF");") }

    /// `PRAGMA foreign_key_check`, a line per row.
    public func foreignKeyViolations() throws(MigratorError) -> [String] {
        try query("PRAGMA foreign_key_check;", []).map { row in "table \(row[0]) row \(row[1]) references \(row[2]) (foreign key \(row[3]))" }
    }

    // MARK: RowCopyProgress

    /// Reports every 100,000 virtual-machine steps: the table being filled and its rows so far.
    public func observeProgress(_ report: @escaping (String?, Int) -> Void) {
        connection.setProgressHandler(every: 100_000) { [connection] in
            report(connection.currentInsertTable, connection.currentInsertCount ?? 0)
        }
    }

    /// Stops the reports.
    public func stopObservingProgress() { connection.setProgressHandler(every: 0, nil) }

    /// Counts inserted rows per statement while `body` runs.
    public func countingRows<T>(_ body: () throws(MigratorError) -> T) throws(MigratorError) -> T {
        try connection.countingInsertedRows(body)
    }

    /// Starts the next statement's count from zero.
    public func resetRowCount() { connection.resetInsertCount() }
}

/// The login name of the process, for the history's `applied_by` on engines without roles.
enum SystemUser {
    static var name: String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return ProcessInfo.processInfo.environment["USER"] ?? "uid \(geteuid())"
    }
}

extension Migrator {
    /// A migrator on a SQLite connection; statements wait up to `lockTimeoutSeconds` for
    /// another connection's lock.
    ///
    ///     let scripts = try MigrationScriptLoader.load(directory: "Migrations/Flights")
    ///     try Migrator(connection: try SQLiteConnection(path: "app.sqlite"), schema: "Flights", scripts: scripts).up()
    public convenience init(connection: SQLiteConnection, schema: String, scripts: [MigrationScript], lockTimeoutSeconds: Double = 30) {
        self.init(database: SQLiteMigrationDatabase(connection, lockWait: lockTimeoutSeconds), schema: schema, scripts: scripts, lockTimeoutSeconds: lockTimeoutSeconds)
    }

    /// A migrator for migrations embedded in generated code:
    /// `Migrator(connection: db, schema: FlightsSchema.name, embedded: FlightsSchema.migrations)`.
    ///
    ///     try Migrator(connection: try SQLiteConnection(path: "app.sqlite"), schema: FlightsSchema.name, embedded: FlightsSchema.migrations).up()
    public convenience init(connection: SQLiteConnection, schema: String, embedded: [MigrationScript], lockTimeoutSeconds: Double = 30) {
        self.init(connection: connection, schema: schema, scripts: embedded, lockTimeoutSeconds: lockTimeoutSeconds)
    }
}
