import DatabaseLocation
import Foundation
import MigrationFiles
import MigratorCore
import MigratorPostgres
@_exported import PersistentStoreCore
import PostgresKit
import SQLDialects
import SchemaMetadata

extension Store {
    /// Opens the PostgreSQL database a URL names: `postgres://` or `postgresql://`, or a libpq
    /// keyword string. The same generated models and `<Schema>Schema.migrations` serve SQLite
    /// (`Store(path:)`, in `PersistentStoreSQLite`) and PostgreSQL: opening applies the
    /// migrations' PostgreSQL SQL under the migrator's advisory lock, and refuses a database newer
    /// than the code. A SQLite path is refused (`.unsupportedDatabase`), never opened: this module
    /// links no SQLite. The library reads no environment; an app passes `DATABASE_URL` itself.
    ///
    ///     let store = try Store(url: "postgres://app@db.internal/flights", schema: FlightsSchema.descriptor,
    ///                           migrations: FlightsSchema.migrations)
    ///
    /// Passwords never appear in messages. What differs per engine is listed in docs/runtime.md,
    /// "The store on PostgreSQL"; `Configuration.postgres` sets up a transaction pooler.
    public init(url: String, schema: SchemaDescriptor, migrations: [EmbeddedMigration], configuration: Configuration = Configuration()) throws(StoreError) {
        guard !url.isEmpty else { throw .unsupportedDatabase("no database given: pass a postgres:// URL") }
        let location: DatabaseLocation
        do { location = try DatabaseLocation.parse(url) } catch { throw .unsupportedDatabase("\(error)") }
        guard case .postgres(let connection) = location else {
            throw .unsupportedDatabase(
                "'\(location.label)' is a SQLite file, and Store(url:) opens PostgreSQL servers: open it with Store(path:) (PersistentStoreSQLite), or pass a postgres:// URL")
        }
        let scripts = migrations.compactMap { $0.variant(for: SQLDialectName.postgres.rawValue) }
        guard scripts.count == migrations.count else {
            throw .migration(
                "the generated code of schema \(schema.name) embeds no PostgreSQL migrations: add `postgres` to the schema's `dialects:` (or the config's), run `schemagen generate`, review and commit the new postgres folder"
            )
        }
        // `?pgbouncer=true` (as Prisma spells it) says the URL leads to a transaction pooler;
        // libpq does not know the parameter, so it is taken out. `postgres.directURL` names the
        // server itself.
        var configuration = configuration
        let (target, pooled) = Self.takingPoolerParameter(from: connection)
        if pooled { configuration.postgres.transactionPooler = true }
        let database: PostgresStoreDatabase
        do { database = try PostgresStoreDatabase(url: target, settings: configuration.postgres) } catch { throw .database(error) }
        // Online migrations serve each version as a schema of views: this code reads and writes
        // through its own version's (`todo_v4`), so it runs beside the version before it.
        // The newest online migration's version (its header's, not its number), past
        // hand-written migrations after it.
        if let serving = VersionSchema.servingMigration(scripts.map { ($0.version, try? MigrationHeader.parse($0.up)) }) {
            database.versionSchema = VersionSchema.name(schema: schema.name, version: serving.header.toVersion ?? serving.number)
        }
        // The migrator holds a session lock: behind a transaction pooler it needs a direct
        // connection, and without one the store only verifies.
        var migrationConnection = database.connection
        if configuration.postgres.transactionPooler {
            if let direct = configuration.postgres.directURL {
                do { migrationConnection = try PostgresConnection(direct, applicationName: "schemagen store") } catch {
                    throw .database(error.failure(database: ConnectionURL.redacted(direct)))
                }
            } else {
                configuration.migrations = .verify
            }
        }
        let migrator = Migrator(
            database: PostgresMigrationDatabase(migrationConnection), schema: schema.name, scripts: scripts, lockTimeoutSeconds: configuration.busyTimeoutSeconds)
        try self.init(database: database, migrator: migrator, schema: schema, migrations: scripts, configuration: configuration)
        do { try database.switchToVersionSchema() } catch { throw .database(error) }
        // Open, migrated: reads may go to the standbys now.
        database.replicaReadsEnabled = true
    }

    /// The URL without its `pgbouncer=true` query parameter, and whether it had it.
    static func takingPoolerParameter(from url: String) -> (url: String, pooled: Bool) {
        guard let question = url.firstIndex(of: "?") else { return (url, false) }
        let parameters = url[url.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
        let kept = parameters.filter { !$0.lowercased().hasPrefix("pgbouncer=") }
        guard kept.count != parameters.count else { return (url, false) }
        let pooled = parameters.contains { ["pgbouncer=true", "pgbouncer=1"].contains($0.lowercased()) }
        let base = String(url[..<question])
        return (kept.isEmpty ? base : base + "?" + kept.joined(separator: "&"), pooled)
    }
}

extension StorePool {
    /// Opens `size` stores on the PostgreSQL database the URL names, as `Store(url:)` does.
    ///
    ///     let pool = try StorePool(url: "postgres://app@db.internal/flights", size: 8,
    ///                              schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
    public convenience init(
        url: String, size: Int = 8, schema: SchemaDescriptor, migrations: [EmbeddedMigration], configuration: Store.Configuration = Store.Configuration()
    ) throws(StoreError) {
        try self.init(size: size, configuration: configuration) { (configuration) throws(StoreError) in
            try Store(url: url, schema: schema, migrations: migrations, configuration: configuration)
        }
    }
}
