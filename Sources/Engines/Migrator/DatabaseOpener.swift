import DatabaseLocation
import Foundation
import MigratorCore
import MigratorPostgres
import MigratorSQLite
import PostgresKit
import SQLiteKit

/// Opens a database for `migrate`: a SQLite file or a PostgreSQL server, as `DatabaseLocation`
/// parsed it. The one place that knows both engines' adapters.
public enum DatabaseOpener {
    /// The earlier name of `MigrationSessionSettings`, which shared its name with the store's
    /// `PostgresSettings`.
    @available(*, deprecated, renamed: "MigrationSessionSettings")
    public typealias PostgresSettings = MigrationSessionSettings

    /// Session settings for PostgreSQL migrations, in seconds.
    public struct MigrationSessionSettings: Sendable {
        /// `lock_timeout`: how long a statement may wait for a table lock. 0 turns it off.
        public var lockTimeout: Double
        /// `statement_timeout`, when set; otherwise 0 (none) for the migrator's session, so a
        /// role's or database's default (set for apps) does not cancel a backfill or an index build.
        public var statementTimeout: Double?
        /// `idle_in_transaction_session_timeout`: the server ends the session of a migrator that
        /// stalls (stopped, hung) inside a transaction, so the locks it holds do not block apps.
        /// The migrator never waits inside a transaction itself. 0 turns it off.
        public var idleInTransactionTimeout: Double = defaultIdleInTransactionTimeout
        /// The default idle-in-transaction timeout.
        public static let defaultIdleInTransactionTimeout = 60.0
        /// How long to keep trying to connect while the server does not answer.
        public var connectRetry: Double
        /// The default `lock_timeout`: every query queued behind a waiting migration waits with
        /// it, so a migration that cannot get its lock soon gives up instead.
        public static let defaultLockTimeout = 5.0

        /// Settings with a 5-second `lock_timeout`, no `statement_timeout` and no connection retry
        /// unless given; the idle-in-transaction timeout starts at its default.
        ///
        ///     let settings = DatabaseOpener.MigrationSessionSettings(lockTimeout: 2, statementTimeout: 600, connectRetry: 30)
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
    /// `lockWait` is how long a SQLite statement waits for another connection's lock.
    public static func open(
        _ location: DatabaseLocation, readOnly: Bool = false, lockWait: Double = 30,
        postgres settings: MigrationSessionSettings = MigrationSessionSettings()
    ) throws(MigratorError) -> any MigrationDatabase {
        switch location {
        case .postgres(let target):
            let connection: PostgresConnection
            do {
                // A cluster's nodes: the migrator writes, so it wants the primary (read-only
                // commands too, so that they read what the migrations wrote).
                connection = try PostgresConnection(ConnectionURL.requiringPrimary(target), applicationName: applicationName, retryFor: settings.connectRetry)
            } catch {
                throw .cannotConnect(PostgresMigrationDatabase.failure(error, database: location.label))
            }
            let database = PostgresMigrationDatabase(connection)
            try database.execute("SET lock_timeout = '\(Int(settings.lockTimeout * 1000))ms';")
            try database.execute("SET statement_timeout = '\(Int((settings.statementTimeout ?? 0) * 1000))ms';")
            try database.execute("SET idle_in_transaction_session_timeout = '\(Int(settings.idleInTransactionTimeout * 1000))ms';")
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
                    return SQLiteMigrationDatabase(connection, label: path, lockWait: lockWait)
                }
                let folder = (path as NSString).deletingLastPathComponent
                if !folder.isEmpty, !exists {
                    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                }
                return SQLiteMigrationDatabase(try SQLiteConnection(path: path), lockWait: lockWait)
            } catch {
                throw .database(SQLiteMigrationDatabase.failure(error, database: path))
            }
        }
    }
}
