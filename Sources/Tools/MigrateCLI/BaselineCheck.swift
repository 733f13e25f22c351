import DatabaseLocation
import Foundation
import MigrationFiles
import MigratorCore
import PostgresKit
import RelationalModel
import SchemaImport

/// `migrate baseline` on PostgreSQL compares the live tables with the version it is asked to
/// record (that version's snapshot, as its first migration would build them): a database that
/// differs is not adopted silently.
enum BaselineCheck {
    /// How the live database differs from `version`, or nil when the check cannot be made (SQLite,
    /// whose check is the tables and columns, or migrations without snapshots). The catalogue is
    /// read over a read-only connection of its own, from the database's location: nothing here
    /// asks which adapter the migrator was given.
    static func differences(_ migrator: Migrator, version: Int, location: DatabaseLocation) throws -> [ShapeDifference]? {
        guard case .postgres(let connectionText) = location,
            let script = migrator.scripts.first(where: { $0.version == version }),
            let entry = MigrationDirectory(path: (script.upFile as NSString).deletingLastPathComponent).entries().first(where: { $0.number == version })
        else { return nil }
        let folder = MigrationDirectory(path: (script.upFile as NSString).deletingLastPathComponent)
        let snapshot = try folder.snapshot(of: entry)
        let connection = try PostgresConnection(connectionText, applicationName: "migrate baseline", networkTimeout: 10)
        try connection.execute("SET default_transaction_read_only = on")
        let catalogue = try PostgresCatalogue.read(connection)
        let ours = Set(snapshot.tables.map(\.name))
        // The migrator's own tables are not the schema's.
        let live = catalogue.tables.filter { !$0.name.hasPrefix("schemagen_") || ours.contains($0.name) }.map(TableShape.init)
        return TableShape.differences(live: live, built: snapshot.tables.map(TableShape.init), liveName: "the database", builtName: "version \(version)")
    }
}
