import Foundation
import MigrationFiles
import PostgresKit
import SchemaMetadata
import SQLDialects
import SQLiteKit
import DatabaseLocation

/// What the migrator needs of a database: run SQL and scripts, take the lock that keeps other
/// migrators out, and the dialect's few differences. One implementation per engine; the
/// migrator's history semantics are the same on each.
public protocol MigrationDatabase: AnyObject {
    var dialect: any SQLDialect { get }
    /// The database as messages name it: a file path, or a URL without its password.
    var label: String { get }
    func execute(_ sql: String) throws(MigratorError)
    func query(_ sql: String, _ arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]]
    /// The `index`th parameter marker (1-based): `?` or `$1`.
    func parameter(_ index: Int) -> String
    func tableExists(_ name: String) throws(MigratorError) -> Bool
    /// The statements of a script, as this engine splits them.
    func statementCount(_ sql: String) -> Int
    /// Runs a script statement by statement, reporting each (index, line) before it runs;
    /// `shouldStop`, asked before each, ends it as a failure.
    func runScript(_ sql: String, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure)
    /// Takes the lock other migrators of the schema wait for, outside any transaction (where the
    /// engine has one: PostgreSQL's session advisory lock); `.locked` past `timeout` seconds.
    /// Gives up early, with `.interrupted`, once `cancelled` answers true.
    func lock(schema: String, timeout: Double, cancelled: () -> Bool) throws(MigratorError)
    func unlock(schema: String)
    /// Starts the transaction a migration runs in; where the engine has no session lock
    /// (SQLite), this is the lock: the write lock, waited for up to `timeout` seconds.
    func beginTransaction(timeout: Double) throws(MigratorError)
    func commit() throws(MigratorError)
    func rollback()
    /// Whether the migrator notes each migration before it starts, so the next run can report one
    /// that a lost connection cut short (engines whose lock outlives transactions).
    var tracksAttempts: Bool { get }
    /// The column types of the history tables.
    var textType: String { get }
    var integerType: String { get }
    /// SQLite's foreign-key switch and check around table rebuilds; engines that never rebuild ignore it.
    func foreignKeysEnabled() -> Bool
    func setForeignKeys(_ enabled: Bool) throws(MigratorError)
    func foreignKeyViolations() throws(MigratorError) -> [String]
    /// Reports row copies while a script runs, where the engine can: `report` gets the table
    /// rows are being inserted into and how many so far, or nil for "busy".
    func observeProgress(_ report: @escaping (String?, Int) -> Void)
    func stopObservingProgress()
    /// Calls `body` counting inserted rows per statement, where the engine can.
    func countingRows<T>(_ body: () throws(MigratorError) -> T) throws(MigratorError) -> T
    func resetRowCount()

    /// A table's name as SQL, in `schema` where the engine has schemas (PostgreSQL), else bare.
    func qualifiedName(_ table: String, schema: String?) -> String
    /// Whether a table exists: in `schema`, or where the session's search path finds it.
    func tableExists(_ name: String, schema: String?) throws(MigratorError) -> Bool
    /// The column names of a table the session's search path finds; nil when there is no such table.
    func columns(of table: String) throws(MigratorError) -> Set<String>?
    /// The type of the history's timestamps, and an expression reading one as ISO 8601 UTC text.
    var timestampType: String { get }
    func timestampText(_ column: String) -> String
    /// Who is applying migrations, for the history: the database role, or the system user.
    func currentUser() -> String
    /// Stops the statement in progress from another thread (a signal handler's): PostgreSQL's
    /// cancel request, SQLite's interrupt. The statement fails and its transaction rolls back.
    var canceller: @Sendable () -> Void { get }
    /// The server process holding the migrator lock of `schema`, where the engine can tell.
    func lockHolder(schema: String) throws(MigratorError) -> Int?
    /// Creates the schema (namespace) the history lives in, where the engine has them.
    func createSchemaIfMissing(_ schema: String) throws(MigratorError)
}

/// A statement of a script that failed, with what the engine said.
public struct StatementFailure: Error, Sendable {
    public var index: Int
    public var line: Int
    public var message: String
    /// The statement gave up waiting for a table lock another session held (PostgreSQL's
    /// `lock_timeout`): running again later may succeed.
    public var waitedForLock = false
}

// MARK: - SQLite

/// A SQLite file: the lock is the write lock `BEGIN IMMEDIATE` takes, waiting out the busy timeout.
public final class SQLiteMigrationDatabase: MigrationDatabase {
    public let connection: SQLiteConnection
    public let dialect: any SQLDialect = SQLiteDialect()

    /// `label` names the database in messages when it is not the connection's file (a missing
    /// file read as an empty database in memory).
    public init(_ connection: SQLiteConnection, label: String? = nil) {
        self.connection = connection
        self.label = label ?? connection.path
    }

    public let label: String
    public var tracksAttempts: Bool { false }
    public var textType: String { "TEXT" }
    public var integerType: String { "INTEGER" }

    func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(MigratorError) -> T {
        do {
            return try body()
        } catch {
            if error.primary == .busy { throw .locked(seconds: Double(busyTimeout) / 1000) }
            throw .database(error)
        }
    }

    var busyTimeout: Int32 = 30_000

    public func execute(_ sql: String) throws(MigratorError) { try wrap { () throws(SQLiteError) in try connection.execute(sql) } }

    public func query(_ sql: String, _ arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]] {
        try wrap { () throws(SQLiteError) in try connection.query(sql, arguments) }
    }

    public func parameter(_ index: Int) -> String { "?" }

    public func tableExists(_ name: String) throws(MigratorError) -> Bool {
        !(try query("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(name)])).isEmpty
    }

    public func statementCount(_ sql: String) -> Int { SQLiteConnection.statements(in: sql).count }

    public func runScript(_ sql: String, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        do {
            try connection.executeScript(sql, shouldStop: shouldStop) { position in willRun(position.index, position.line) }
        } catch {
            throw StatementFailure(index: error.position.index, line: error.position.line, message: error.error.message)
        }
    }

    public func beginTransaction(timeout: Double) throws(MigratorError) {
        busyTimeout = Int32(min(timeout * 1000, Double(Int32.max)))
        connection.setBusyTimeout(milliseconds: busyTimeout)
        try execute("BEGIN IMMEDIATE;")
    }

    /// SQLite has no lock outside a transaction: its write lock is taken by `beginTransaction`.
    public func lock(schema: String, timeout: Double, cancelled: () -> Bool) throws(MigratorError) {}
    public func unlock(schema: String) {}

    public func commit() throws(MigratorError) { try execute("COMMIT;") }
    public func rollback() { if connection.isInTransaction { try? connection.execute("ROLLBACK;") } }

    public func foreignKeysEnabled() -> Bool { (try? connection.query("PRAGMA foreign_keys;")) == [[.integer(1)]] }
    public func setForeignKeys(_ enabled: Bool) throws(MigratorError) { try execute("PRAGMA foreign_keys = \(enabled ? "ON" : "OFF");") }

    public func foreignKeyViolations() throws(MigratorError) -> [String] {
        try query("PRAGMA foreign_key_check;", []).map { row in "table \(row[0]) row \(row[1]) references \(row[2]) (foreign key \(row[3]))" }
    }

    public func observeProgress(_ report: @escaping (String?, Int) -> Void) {
        connection.setProgressHandler(every: 100_000) { [connection] in
            report(connection.currentInsertTable, connection.currentInsertCount ?? 0)
        }
    }

    public func stopObservingProgress() { connection.setProgressHandler(every: 0, nil) }

    public func countingRows<T>(_ body: () throws(MigratorError) -> T) throws(MigratorError) -> T {
        try connection.countingInsertedRows(body)
    }

    public func resetRowCount() { connection.resetInsertCount() }

    public func qualifiedName(_ table: String, schema: String?) -> String { dialect.quote(table) }
    public func tableExists(_ name: String, schema: String?) throws(MigratorError) -> Bool { try tableExists(name) }

    public func columns(of table: String) throws(MigratorError) -> Set<String>? {
        guard try tableExists(table) else { return nil }
        return Set(try query("SELECT name FROM pragma_table_xinfo(?)", [.text(table)]).compactMap { if case .text(let name) = $0.first { name } else { nil } })
    }

    public var timestampType: String { "TEXT" }
    public func timestampText(_ column: String) -> String { column }

    public func currentUser() -> String { SystemUser.name }

    public var canceller: @Sendable () -> Void {
        let interrupter = connection.interrupter
        return { interrupter.interrupt() }
    }

    public func lockHolder(schema: String) throws(MigratorError) -> Int? { nil }
    public func createSchemaIfMissing(_ schema: String) throws(MigratorError) {}
}

/// The login name of the process, for the history's `applied_by` on engines without roles.
enum SystemUser {
    static var name: String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return ProcessInfo.processInfo.environment["USER"] ?? "uid \(geteuid())"
    }
}

// MARK: - PostgreSQL

/// A PostgreSQL database: DDL is transactional, and concurrent migrators are kept apart by a
/// session advisory lock whose key is derived from the schema's name (`advisoryKey`).
public final class PostgresMigrationDatabase: MigrationDatabase {
    public let connection: PostgresConnection
    public let dialect: any SQLDialect = PostgresDialect()

    public init(_ connection: PostgresConnection) {
        self.connection = connection
    }

    public var label: String { connection.label }
    public var tracksAttempts: Bool { true }
    public var textType: String { "text" }
    public var integerType: String { "bigint" }

    func wrap<T>(_ body: () throws(PostgresError) -> T) throws(MigratorError) -> T {
        do {
            return try body()
        } catch {
            throw .postgres(error, database: connection.label)
        }
    }

    public func execute(_ sql: String) throws(MigratorError) { try wrap { () throws(PostgresError) in try connection.execute(sql) } }

    public func query(_ sql: String, _ arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]] {
        try wrap { () throws(PostgresError) in try connection.query(sql, arguments) }
    }

    public func parameter(_ index: Int) -> String { "$\(index)" }

    public func tableExists(_ name: String) throws(MigratorError) -> Bool {
        try query("SELECT to_regclass($1) IS NOT NULL", [.text(dialect.quote(name))]) == [[.integer(1)]]
    }

    public func statementCount(_ sql: String) -> Int { PostgresScript.statements(in: sql).count }

    public func runScript(_ sql: String, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        do {
            try connection.executeScript(sql, shouldStop: shouldStop) { position in willRun(position.index, position.line) }
        } catch {
            var message = error.error.description
            if error.error.connectionLost { message += " (the connection to \(connection.label) was lost)" }
            switch error.error.sqlState {
            case SQLState.lockNotAvailable: message += " (it waited longer than --ddl-lock-timeout for a lock another session holds; run again when the table is quieter, or raise --ddl-lock-timeout)"
            case SQLState.queryCanceled where !shouldStop(): message += " (it ran longer than --statement-timeout; raise --statement-timeout, or run the migration when the database is quieter)"
            default: break
            }
            throw StatementFailure(index: error.position.index, line: error.position.line, message: message, waitedForLock: error.error.sqlState == SQLState.lockNotAvailable)
        }
    }

    /// The advisory lock key of a schema: the first 8 bytes of SHA-256("schemagen:" + schema),
    /// as a signed 64-bit integer. Documented in docs/postgres.md.
    public static func advisoryKey(schema: String) -> Int64 {
        let hex = SHA256.hex("schemagen:" + schema)
        return Int64(bitPattern: UInt64(hex.prefix(16), radix: 16) ?? 0)
    }

    public func lock(schema: String, timeout: Double, cancelled: () -> Bool) throws(MigratorError) {
        let key = Self.advisoryKey(schema: schema)
        let deadline = Date().addingTimeInterval(timeout)
        // Tried, not waited for, so the wait is bounded, a dead connection is noticed and an
        // interrupt leaves no backend queued for the lock.
        while try query("SELECT pg_try_advisory_lock($1)", [.integer(key)]) != [[.integer(1)]] {
            if cancelled() { throw .interrupted(during: "the wait for the migrator lock of \(schema) (another migrator held it)") }
            guard Date() < deadline else { throw .locked(seconds: timeout) }
            usleep(50_000)
        }
    }

    public func unlock(schema: String) {
        _ = try? query("SELECT pg_advisory_unlock($1)", [.integer(Self.advisoryKey(schema: schema))])
    }

    public func beginTransaction(timeout: Double) throws(MigratorError) { try execute("BEGIN;") }

    public func commit() throws(MigratorError) { try execute("COMMIT;") }
    public func rollback() { try? connection.execute("ROLLBACK;") }

    public func foreignKeysEnabled() -> Bool { true }
    public func setForeignKeys(_ enabled: Bool) throws(MigratorError) {}
    public func foreignKeyViolations() throws(MigratorError) -> [String] { [] }
    public func observeProgress(_ report: @escaping (String?, Int) -> Void) {}
    public func stopObservingProgress() {}
    public func countingRows<T>(_ body: () throws(MigratorError) -> T) throws(MigratorError) -> T { try body() }
    public func resetRowCount() {}

    public func qualifiedName(_ table: String, schema: String?) -> String {
        (schema.map { dialect.quote($0) + "." } ?? "") + dialect.quote(table)
    }

    public func tableExists(_ name: String, schema: String?) throws(MigratorError) -> Bool {
        try query("SELECT to_regclass($1) IS NOT NULL", [.text(qualifiedName(name, schema: schema))]) == [[.integer(1)]]
    }

    public func columns(of table: String) throws(MigratorError) -> Set<String>? {
        guard try tableExists(table) else { return nil }
        let rows = try query("SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped", [.text(dialect.quote(table))])
        return Set(rows.compactMap { if case .text(let name) = $0.first { name } else { nil } })
    }

    public var timestampType: String { "timestamptz" }
    public func timestampText(_ column: String) -> String {
        // The cast also reads a history table of an earlier release, whose timestamps were text.
        "to_char(\(column)::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    }

    public func currentUser() -> String {
        if case .text(let name)? = (try? query("SELECT current_user::text", []))?.first?.first { return name }
        return "unknown"
    }

    public var canceller: @Sendable () -> Void {
        let canceller = connection.canceller
        return { canceller?.send() }
    }

    /// The backend holding the session advisory lock of `schema`: bigint keys are kept as two
    /// 32-bit halves in `pg_locks` (classid the high half, objid the low one, objsubid 1).
    public func lockHolder(schema: String) throws(MigratorError) -> Int? {
        let key = UInt64(bitPattern: Self.advisoryKey(schema: schema))
        let rows = try query("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND classid::bigint = $1 AND objid::bigint = $2 AND pid <> pg_backend_pid()",
                             [.integer(Int64(key >> 32)), .integer(Int64(key & 0xFFFF_FFFF))])
        if case .integer(let pid)? = rows.first?.first { return Int(pid) }
        return nil
    }

    public func createSchemaIfMissing(_ schema: String) throws(MigratorError) {
        guard try query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [.text(schema)]).isEmpty else { return }
        try execute("CREATE SCHEMA IF NOT EXISTS \(dialect.quote(schema));")
    }
}

/// Opens a database for `migrate`: a SQLite file or a PostgreSQL server, as `DatabaseLocation`
/// parsed it.
public enum DatabaseOpener {
    /// Session settings for PostgreSQL migrations, in seconds.
    public struct PostgresSettings: Sendable {
        /// `lock_timeout`: how long a statement may wait for a table lock. 0 turns it off.
        public var lockTimeout: Double
        /// `statement_timeout`, when set.
        public var statementTimeout: Double?
        /// How long to keep trying to connect while the server does not answer.
        public var connectRetry: Double
        /// The default `lock_timeout`: every query queued behind a waiting migration waits with
        /// it, so a migration that cannot get its lock soon gives up instead.
        public static let defaultLockTimeout = 5.0

        public init(lockTimeout: Double = defaultLockTimeout, statementTimeout: Double? = nil, connectRetry: Double = 0) {
            self.lockTimeout = lockTimeout
            self.statementTimeout = statementTimeout
            self.connectRetry = connectRetry
        }
    }

    /// What `pg_stat_activity` shows for the migrator's connection, unless the URL names its own.
    public static let applicationName = "schemagen migrate"

    /// Opens the database. `readOnly` (status, validate, dry runs) never creates a file and
    /// refuses every write: a SQLite file that does not exist is read as an empty database,
    /// one that does is opened with `query_only`; a PostgreSQL session is made read-only.
    public static func open(_ location: DatabaseLocation, readOnly: Bool = false,
                            postgres settings: PostgresSettings = PostgresSettings()) throws(MigratorError) -> any MigrationDatabase {
        switch location {
        case .postgres(let target):
            let connection: PostgresConnection
            do {
                connection = try PostgresConnection(target, applicationName: applicationName, retryFor: settings.connectRetry)
            } catch {
                throw .cannotConnect(error)
            }
            let database = PostgresMigrationDatabase(connection)
            try database.execute("SET lock_timeout = '\(Int(settings.lockTimeout * 1000))ms';")
            if let seconds = settings.statementTimeout { try database.execute("SET statement_timeout = '\(Int(seconds * 1000))ms';") }
            if readOnly { try database.execute("SET default_transaction_read_only = on;") }
            // A migrator killed outright (SIGKILL) cannot cancel its statement; from PostgreSQL 14
            // the server checks the socket every second and ends a backend whose client is gone,
            // so none stays queued for a lock.
            if connection.serverVersion >= 140_000 { try database.execute("SET client_connection_check_interval = '1s';") }
            return database
        case .sqlite(let path):
            let exists = path == ":memory:" || FileManager.default.fileExists(atPath: path)
            do {
                if readOnly {
                    // A missing file is an empty database: read one in memory, named as the file.
                    let connection = try SQLiteConnection(path: exists ? path : ":memory:")
                    try connection.execute("PRAGMA query_only = ON;")
                    return SQLiteMigrationDatabase(connection, label: path)
                }
                let folder = (path as NSString).deletingLastPathComponent
                if !folder.isEmpty, !exists {
                    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                }
                return SQLiteMigrationDatabase(try SQLiteConnection(path: path))
            } catch {
                throw .database(error)
            }
        }
    }
}
