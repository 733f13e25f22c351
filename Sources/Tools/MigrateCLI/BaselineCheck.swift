import Foundation
import MigrationFiles
import MigratorCore
import MigratorPostgres
import RelationalModel
import SchemaImport

/// `migrate baseline` on PostgreSQL compares the live tables with the version it is asked to
/// record (that version's snapshot, as its first migration would build them): a database that
/// differs is not adopted silently.
enum BaselineCheck {
    /// How the live database differs from `version`, or nil when the check cannot be made (SQLite,
    /// whose check is the tables and columns, or migrations without snapshots).
    static func differences(_ migrator: Migrator, version: Int) throws -> [ShapeDifference]? {
        guard let postgres = migrator.database as? PostgresMigrationDatabase,
            let script = migrator.scripts.first(where: { $0.version == version }),
            let entry = MigrationDirectory(path: (script.upFile as NSString).deletingLastPathComponent).entries().first(where: { $0.number == version })
        else { return nil }
        let folder = MigrationDirectory(path: (script.upFile as NSString).deletingLastPathComponent)
        let snapshot = try folder.snapshot(of: entry)
        let catalogue = try PostgresCatalogue.read(postgres.connection)
        let ours = Set(snapshot.tables.map(\.name))
        // The migrator's own tables are not the schema's.
        let live = catalogue.tables.filter { !$0.name.hasPrefix("schemagen_") || ours.contains($0.name) }.map(TableShape.init)
        return TableShape.differences(live: live, built: snapshot.tables.map(TableShape.init), liveName: "the database", builtName: "version \(version)")
    }
}
