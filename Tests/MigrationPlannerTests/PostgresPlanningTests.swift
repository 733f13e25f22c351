import Diagnostics
import Foundation
import MigrationFiles
import MigrationPlanner
import RelationalModel
import SchemaKit
import Testing
import TestSupport

/// Planning for PostgreSQL without a server: names, lint for locks, the header, folders.
@Suite struct PostgresPlanningTests {
    @Test func longDerivedNamesAreShortenedDeterministically() {
        let long = String(repeating: "a_very_long_table_name_", count: 4) + "idx"
        let short = PostgresRenderer.identifier(long)
        #expect(short.utf8.count <= 63)
        #expect(short == PostgresRenderer.identifier(long), "the same name every time")
        #expect(short != PostgresRenderer.identifier(long + "2"), "two long names stay apart")
        #expect(PostgresRenderer.identifier("short_idx") == "short_idx")
        let multibyte = String(repeating: "é", count: 40)
        #expect(PostgresRenderer.identifier(multibyte).utf8.count <= 63, "cut on whole characters")
    }

    @Test func changesAreMadeInPlaceAndTheHeaderSaysPostgres() throws {
        let v1 = SnapshotBuilder.snapshot(of: try schema("entities:\n  Airport:\n    table: airports\n    attributes:\n      icao: String\n      elevation: Int?\n", version: 1))
        let v2 = SnapshotBuilder.snapshot(of: try schema("entities:\n  Airport:\n    table: airports\n    attributes:\n      icao: String\n      elevation: {type: Double, default: 0}\n", version: 2))
        let migration = Migration(from: v1, to: v2, renderer: PostgresRenderer())
        let up = migration.upSQL()
        #expect(up.contains("ALTER TABLE \"airports\" ALTER COLUMN \"elevation\" TYPE double precision USING \"elevation\"::double precision;"))
        #expect(up.contains("UPDATE \"airports\" SET \"elevation\" = 0.0 WHERE \"elevation\" IS NULL;"))
        #expect(up.contains("ALTER TABLE \"airports\" ALTER COLUMN \"elevation\" SET NOT NULL;"))
        #expect(migration.downSQL().contains("ALTER COLUMN \"elevation\" DROP NOT NULL;"))
        let header = try MigrationHeader.parse(up)
        #expect(header.dialect == "postgres" && header.runsInTransaction && !header.foreignKeysOff && header.rowCopies.isEmpty)
    }

    @Test func lockLintNamesTheLineWhatItBlocksAndTheRecipe() throws {
        let before = "entities:\n  Airport:\n    table: airports\n    attributes:\n      icao: String\n      elevation: Int?\n"
        let after = "entities:\n  Airport:\n    table: airports\n    attributes:\n      icao: {type: String, indexed: true}\n      elevation: {type: Double, default: 0}\n      seenAt: {type: Date, default: now}\n"
        let new = try schema(after, version: 2)
        let migration = Migration(from: SnapshotBuilder.snapshot(of: try schema(before, version: 1)), to: SnapshotBuilder.snapshot(of: new), renderer: PostgresRenderer())
        let findings = MigrationLint.lockFindings(for: migration, schema: new)
        #expect(Set(findings.map(\.code)) == ["lock-create-index", "lock-set-not-null", "lock-type-change", "lock-add-column-rewrite"])
        let setNotNull = try #require(findings.first { $0.code == "lock-set-not-null" })
        #expect(setNotNull.location?.line == 8, "the line of the attribute (after the two lines `schema` adds)")
        #expect(setNotNull.message.contains("ACCESS EXCLUSIVE") && setNotNull.message.contains("NOT VALID"))
        // SQLite's plan of the same change takes no locks other sessions notice.
        #expect(!SQLiteRenderer().dialect.capabilities.lockingDDL)
    }

    @Test func generatePlansBothFoldersWithOneNumbering() throws {
        let folder = temporaryFolder()
        let schemaFile = folder.appendingPathComponent("Shop.yaml")
        let tool = BuiltTool("schemagen")
        try "schema: Shop\nversion: 1\nentities:\n  Item:\n    attributes:\n      name: String\n".write(to: schemaFile, atomically: true, encoding: .utf8)
        let migrations = folder.appendingPathComponent("Migrations").path
        #expect(try tool.run(["generate", "--migrations-only", "--schema", schemaFile.path, "--migrations", migrations]).status == 0)
        // Adding postgres later re-plans the history for it, with the same numbers.
        try "schema: Shop\nversion: 2\ndialects: [sqlite, postgres]\nentities:\n  Item:\n    attributes:\n      name: String\n      price: Decimal?\n".write(to: schemaFile, atomically: true, encoding: .utf8)
        let run = try tool.run(["generate", "--migrations-only", "--schema", schemaFile.path, "--migrations", migrations])
        #expect(run.status == 0, "\(run.error)")
        let sqlite = MigrationDirectory(path: migrations + "/Shop").entries().map(\.prefix)
        let postgres = MigrationDirectory(path: migrations + "/Shop/postgres").entries().map(\.prefix)
        #expect(sqlite == ["0001_create_shop", "0002_add_item_price"])
        #expect(postgres == sqlite)
        #expect(MigrationDirectory(path: migrations + "/Shop/postgres").verify().isEmpty)
        #expect(try tool.run(["generate", "--migrations-only", "--check", "--schema", schemaFile.path, "--migrations", migrations]).status == 0)
        let diff = try tool.run(["diff", "--schema", schemaFile.path, "--migrations", migrations, "--dialect", "postgres"])
        #expect(diff.output.contains("Shop (postgres): no changes since version 2."), "\(diff.output)")
    }

    @Test func namesPostgreSQLWouldCutAreRefused() throws {
        let folder = temporaryFolder()
        let schemaFile = folder.appendingPathComponent("Long.yaml")
        let long = String(repeating: "x", count: 70)
        try "schema: Long\nversion: 1\ndialects: [postgres]\nentities:\n  Item:\n    table: \(long)\n    attributes:\n      name: String\n".write(to: schemaFile, atomically: true, encoding: .utf8)
        let run = try BuiltTool("schemagen").run(["generate", "--migrations-only", "--schema", schemaFile.path, "--migrations", folder.appendingPathComponent("M").path])
        #expect(run.status == 1)
        #expect(run.error.contains("is longer than the 63 bytes postgres keeps of a name"), "\(run.error)")
    }
}
