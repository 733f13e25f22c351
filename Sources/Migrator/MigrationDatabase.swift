import Foundation
import MigrationFiles
import PostgresKit
import SchemaMetadata
import SQLDialects
import SQLiteKit

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
    /// Runs a script statement by statement, reporting each (index, line) before it runs.
    func runScript(_ sql: String, willRun: (Int, Int) -> Void) throws(StatementFailure)
    /// Takes the lock other migrators of the schema wait for, outside any transaction (where the
    /// engine has one: PostgreSQL's session advisory lock); `.locked` past `timeout` seconds.
    func lock(schema: String, timeout: Double) throws(MigratorError)
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

    public init(_ connection: SQLiteConnection) {
        self.connection = connection
    }

    public var label: String { connection.path }
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

    public func runScript(_ sql: String, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        do {
            try connection.executeScript(sql) { position in willRun(position.index, position.line) }
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
    public func lock(schema: String, timeout: Double) throws(MigratorError) {}
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

    public func runScript(_ sql: String, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        do {
            try connection.executeScript(sql) { position in willRun(position.index, position.line) }
        } catch {
            var message = error.error.description
            if error.error.connectionLost { message += " (the connection to \(connection.label) was lost)" }
            switch error.error.sqlState {
            case "55P03": message += " (it waited longer than --ddl-lock-timeout for a lock another session holds; run again when the table is quieter, or raise --ddl-lock-timeout)"
            case "57014": message += " (it ran longer than --statement-timeout; raise --statement-timeout, or run the migration when the database is quieter)"
            default: break
            }
            throw StatementFailure(index: error.position.index, line: error.position.line, message: message, waitedForLock: error.error.sqlState == "55P03")
        }
    }

    /// The advisory lock key of a schema: the first 8 bytes of SHA-256("schemagen:" + schema),
    /// as a signed 64-bit integer. Documented in docs/postgres.md.
    public static func advisoryKey(schema: String) -> Int64 {
        let hex = SHA256.hex("schemagen:" + schema)
        return Int64(bitPattern: UInt64(hex.prefix(16), radix: 16) ?? 0)
    }

    public func lock(schema: String, timeout: Double) throws(MigratorError) {
        let key = Self.advisoryKey(schema: schema)
        let deadline = Date().addingTimeInterval(timeout)
        // Tried, not waited for, so the wait is bounded and a dead connection is noticed.
        while try query("SELECT pg_try_advisory_lock($1)", [.integer(key)]) != [[.integer(1)]] {
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
}

/// Opens a database for `migrate`: a `postgres://` or `postgresql://` URL, or a SQLite file path.
public enum DatabaseOpener {
    /// Session settings for PostgreSQL migrations (`lock_timeout`, `statement_timeout`), in seconds.
    public struct PostgresSettings: Sendable {
        public var lockTimeout: Double?
        public var statementTimeout: Double?
        public init(lockTimeout: Double? = nil, statementTimeout: Double? = nil) {
            self.lockTimeout = lockTimeout
            self.statementTimeout = statementTimeout
        }
    }

    public static func open(_ target: String, postgres settings: PostgresSettings = PostgresSettings()) throws(MigratorError) -> any MigrationDatabase {
        if ConnectionURL.isPostgres(target) || target.isEmpty {
            let connection: PostgresConnection
            do {
                connection = try PostgresConnection(target)
            } catch {
                throw .postgres(error, database: ConnectionURL.redacted(target))
            }
            let database = PostgresMigrationDatabase(connection)
            if let seconds = settings.lockTimeout { try database.execute("SET lock_timeout = '\(Int(seconds * 1000))ms';") }
            if let seconds = settings.statementTimeout { try database.execute("SET statement_timeout = '\(Int(seconds * 1000))ms';") }
            return database
        }
        let folder = (target as NSString).deletingLastPathComponent
        if !folder.isEmpty, target != ":memory:" {
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        do {
            return SQLiteMigrationDatabase(try SQLiteConnection(path: target))
        } catch {
            throw .database(error)
        }
    }
}
