import DatabaseLocation
import Foundation
import MigratorCore
import MigratorSQLite
@_exported import PersistentStoreCore
import SQLiteKit
import SchemaMetadata

extension Store {
    /// Opens (creating folders as needed) or creates a database at `path`, or in memory when
    /// `path` is nil, and applies pending migrations. A database whose applied migrations differ
    /// from the code's, or that is newer than the code, is refused.
    ///
    /// `path` is a file path, or `sqlite:path` / `file:path`; a URL of any other scheme (or a
    /// libpq keyword string) is refused with `.unsupportedDatabase`, never created as a file.
    ///
    ///     let store = try Store(path: "app.sqlite", schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
    public init(path givenPath: String?, schema: SchemaDescriptor, migrations: [EmbeddedMigration], configuration: Configuration = Configuration()) throws(StoreError) {
        let path = try givenPath.map { (text: String) throws(StoreError) -> String in try Self.sqlitePath(text) }
        if let path {
            let folder = (path as NSString).deletingLastPathComponent
            if !folder.isEmpty { try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        }
        let timeout = configuration.busyTimeoutSeconds
        let database: SQLiteStoreDatabase
        do { database = try SQLiteStoreDatabase(path: path, busyTimeout: timeout, settings: configuration.sqlite) } catch { throw .database(error) }
        // The migrator sets the connection's busy timeout, for its own work and the store's.
        let migrator = Migrator(connection: database.connection, schema: schema.name, embedded: migrations, lockTimeoutSeconds: timeout)
        try self.init(database: database, migrator: migrator, schema: schema, migrations: migrations, configuration: configuration)
    }

    /// The SQLite file a location names, or why it names none.
    static func sqlitePath(_ text: String) throws(StoreError) -> String {
        do {
            switch try DatabaseLocation.parse(text) {
            case .sqlite(let path): return path
            case .postgres(let connection):
                throw StoreError.unsupportedDatabase(
                    "'\(DatabaseLocation.postgres(connection: connection).label)' is a PostgreSQL server; `Store(path:)` opens SQLite files: open it with `Store(url:)` (import PersistentStorePostgres)"
                )
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .unsupportedDatabase("\(error)")
        }
    }
}

extension StorePool {
    /// Opens `size` connections to the SQLite file at `path`, as `Store(path:)` does: reads run
    /// side by side, writes take turns on SQLite's lock.
    ///
    ///     let pool = try StorePool(path: "app.sqlite", size: 4, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations)
    public convenience init(
        path: String, size: Int = 8, schema: SchemaDescriptor, migrations: [EmbeddedMigration], configuration: Store.Configuration = Store.Configuration()
    ) throws(StoreError) {
        try self.init(size: size, configuration: configuration) { (configuration) throws(StoreError) in
            try Store(path: path, schema: schema, migrations: migrations, configuration: configuration)
        }
    }
}

extension StoreError {
    /// SQLite's primary result code, when SQLite refused: the spelling of releases before the
    /// store ran on PostgreSQL too. `databaseFailure` is the same for every engine.
    ///
    ///     if error.databaseFailure == .busy { retryLater() }   // was: error.sqliteCode == .busy
    @available(*, deprecated, renamed: "databaseFailure", message: "use databaseFailure (DatabaseFailure.Kind), the same for every engine")
    public var sqliteCode: SQLiteError.Code? {
        guard case .database(let failure) = self, let name = failure.code else { return nil }
        return SQLiteError.Code(name: name)
    }
}
