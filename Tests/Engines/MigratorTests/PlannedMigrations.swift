import Foundation
import MigrationFiles
import MigrationPlanner
import RelationalModel
import SchemaKit
import TestSupport
import Testing

/// Versions of a schema (YAML, the first one whole) planned for PostgreSQL into a temporary
/// folder as the tools would write them: migration 1 creates the first version, each next one
/// moves to the next version; `names` name them in order.
func plannedPostgresMigrations(_ versions: [String], names: [String], online: Bool = false) throws -> MigrationDirectory {
    let folder = temporaryFolder()
    let migrations = MigrationDirectory(path: folder.appendingPathComponent("Migrations/Events/postgres").path)
    var previous: SchemaSnapshot?
    for (index, yaml) in versions.enumerated() {
        let snapshot = SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "events.yaml", text: yaml)).schema))
        try migrations.write(Migration(from: previous, to: snapshot, renderer: PostgresRenderer(), online: online), as: .init(number: index + 1, name: names[index]))
        previous = snapshot
    }
    return migrations
}
