import Diagnostics
import Foundation
import MigrationFiles
import MigrationPlanner
import RelationalModel
import SQLiteKit
import SchemaKit
import TestSupport
import Testing

func copyOfFlightsMigrations() throws -> MigrationDirectory {
    let folder = temporaryFolder().appendingPathComponent("migrations")
    try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Migrations/Flights"), to: folder)
    return MigrationDirectory(path: folder.path)
}

@Suite struct FlightsHistoryTests {
    /// The committed history: additive changes, a rename, a table rebuild, and version 5's
    /// NOT NULL -> NULL rebuilds with their exact down migration.
    @Test func theCommittedChainMigratesAFilledDatabaseUpAndDown() throws {
        let directory = MigrationDirectory(path: repositoryRoot.appendingPathComponent("Migrations/Flights").path)
        #expect(directory.verify().isEmpty)
        let entries = directory.entries()
        #expect(entries.map(\.name) == ["create_flights", "add_airports_elevation", "rename_airports_elevation_to_elevation_feet", "change_flights", "follow_aeroapi_nullability"])
        func file(_ name: String) throws -> String { try String(contentsOfFile: directory.path + "/" + name, encoding: .utf8) }
        func snapshot(_ entry: MigrationDirectory.Entry) throws -> SchemaSnapshot {
            try JSONDecoder().decode(SchemaSnapshot.self, from: Data(contentsOf: URL(fileURLWithPath: directory.path + "/" + entry.snapshotFile)))
        }

        let database = try temporaryDatabase()
        try apply(try file(entries[0].upFile), to: database)
        try database.execute(
            """
            INSERT INTO airports (icao, name, city, country_code, latitude, longitude) VALUES ('KSFO', 'San Francisco International', 'San Francisco', 'US', 37.6, -122.4);
            INSERT INTO airlines (code, name, short_name) VALUES ('UAL', 'United Air Lines', 'United');
            INSERT INTO flights (ident, scheduled_off, estimated_off, scheduled_on, estimated_on, progress_percent, status, route_distance, filed_airspeed, filed_altitude, aircraft_type, origin_id, airline_id)
                VALUES ('UAL1', '2024-01-31T08:00:00.000Z', '2024-01-31T08:05:00.000Z', '2024-01-31T10:00:00.000Z', '2024-01-31T10:05:00.000Z', 42, 'En Route', 300, 450, 350, 'B738', 1, 1);
            """)
        for entry in entries.dropFirst() {
            try apply(try file(entry.upFile), to: database)
            if entry.name == "add_airports_elevation" { try database.execute("UPDATE airports SET elevation = 13;") }
        }
        #expect(try structure(of: database) == structure(of: freshDatabase(snapshot(entries.last!))))
        #expect(try database.query("SELECT elevation_feet FROM airports") == [[.integer(13)]], "the rename kept the values")
        #expect(try database.query("SELECT ident, progress_percent, typeof(progress_percent), origin_id FROM flights") == [[.text("UAL1"), .real(42), .text("real"), .integer(1)]])
        #expect(try database.query("SELECT icao FROM airports WHERE rowid IN (SELECT rowid FROM airports_name_fts WHERE airports_name_fts MATCH 'international')") == [[.text("KSFO")]])

        // Version 5 stores what AeroAPI leaves null...
        #expect(
            try database.query("SELECT \"notnull\" FROM pragma_table_info('flights') WHERE name IN ('scheduled_off', 'route_distance', 'aircraft_type')") == [
                [.integer(0)], [.integer(0)], [.integer(0)],
            ])
        try database.execute("INSERT INTO flights (ident, status) VALUES ('N88RV', 'En Route');")
        // ...which version 4 cannot hold: going down refuses, and changes nothing.
        #expect(throws: (any Error).self) { try apply(try file(entries[4].downFile), to: database) }
        #expect(try database.query("SELECT count(*) FROM flights") == [[.integer(2)]])
        try database.execute("DELETE FROM flights WHERE ident = 'N88RV';")

        for entry in entries.dropFirst().reversed() { try apply(try file(entry.downFile), to: database) }
        let down = try structure(of: database), fresh = try structure(of: freshDatabase(snapshot(entries[0])))
        #expect(down == fresh, "only after down: \(down.filter { !fresh.contains($0) }); only fresh: \(fresh.filter { !down.contains($0) })")
        #expect(try database.query("SELECT ident, progress_percent, typeof(progress_percent) FROM flights") == [[.text("UAL1"), .integer(42), .text("integer")]])
        #expect(try database.query("PRAGMA integrity_check;") == [[.text("ok")]])
    }
}

@Suite struct MigrationDirectoryTests {
    func codes(_ directory: MigrationDirectory) -> [String] { directory.verify().map(\.code) }

    @Test func anIntactFolderVerifies() throws {
        #expect(try copyOfFlightsMigrations().verify().isEmpty)
    }

    @Test func anEditedFileIsNamedWithTheFix() throws {
        let directory = try copyOfFlightsMigrations()
        let file = directory.path + "/0002_add_airports_elevation.up.sql"
        try (try String(contentsOfFile: file, encoding: .utf8) + "UPDATE airports SET elevation = 0;\n").write(toFile: file, atomically: true, encoding: .utf8)
        let problems = directory.verify()
        #expect(problems.map(\.code) == ["migration-checksum"])
        #expect(problems.first?.location?.file == file)
        #expect(problems.first?.message.contains("schemagen rehash") == true)
        try directory.rehash()
        #expect(directory.verify().isEmpty, "rehash accepts a deliberate edit")
    }

    @Test func deletedUnlistedAndDuplicateMigrations() throws {
        let directory = try copyOfFlightsMigrations()
        try FileManager.default.removeItem(atPath: directory.path + "/0003_rename_airports_elevation_to_elevation_feet.down.sql")
        #expect(Set(codes(directory)) == ["migration-missing-file"])

        let other = try copyOfFlightsMigrations()
        for suffix in ["up.sql", "down.sql", "schema.json"] {
            try FileManager.default.copyItem(atPath: other.path + "/0004_change_flights.\(suffix)", toPath: other.path + "/0004_from_another_branch.\(suffix)")
        }
        #expect(Set(codes(other)) == ["migration-duplicate-number", "migration-unlisted"])
    }

    @Test func aHandEditedManifestIsCaught() throws {
        let directory = try copyOfFlightsMigrations()
        let sum = directory.path + "/migrations.sum"
        var text = try String(contentsOfFile: sum, encoding: .utf8)
        text = text.replacingOccurrences(of: "0001_create_flights.up.sql ", with: "0001_create_flights.up.sql 00")
        try text.write(toFile: sum, atomically: true, encoding: .utf8)
        #expect(codes(directory).contains("migration-checksum"))
    }

    @Test func sha256MatchesKnownVectors() {
        #expect(SHA256.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}

@Suite struct MigrationLintTests {
    func findings(_ before: String, _ after: String, allow: Bool = false) throws -> [String] {
        let old = try schema(before, version: 1), new = try schema(after, version: 2)
        let migration = Migration(from: SnapshotBuilder.snapshot(of: old), to: SnapshotBuilder.snapshot(of: new))
        return MigrationLint.findings(for: migration, schema: new, allowDestructive: allow).map { "\($0.severity) \($0.code) \($0.location?.line ?? 0)" }
    }

    static let table = "entities:\n  A:\n    attributes:\n      x: Int\n"

    @Test func dropsAreErrorsUnlessAllowed() throws {
        #expect(try findings(Self.table + "      y: String?\n", Self.table) == ["error drop-column 4"])
        #expect(try findings(Self.table + "      y: String?\n", Self.table, allow: true) == ["warning drop-column 4"])
        #expect(try findings(Self.table + "  B:\n    attributes:\n      z: Int\n", Self.table).first == "error drop-table 1")
    }

    @Test func aDropAndAnAddOfOneKindLookLikeARename() throws {
        let result = try findings(Self.table + "      y: String?\n", Self.table + "      z: String?\n")
        #expect(result.contains("warning possible-rename 7"))
    }

    @Test func requiredWithoutDefaultIsAlwaysAnError() throws {
        #expect(try findings(Self.table, Self.table + "      y: String\n", allow: true).contains("error required-without-default 7"))
        #expect(try findings(Self.table + "      y: String?\n", Self.table + "      y: String\n", allow: true).contains("error required-without-default 7"))
    }

    @Test func renamingATableDoesNotMakeItsUniquesNew() throws {
        let renamed = Self.table.replacingOccurrences(of: "  A:\n", with: "  A:\n    table: a_v2\n").replacingOccurrences(of: "x: Int", with: "x: {type: Int, unique: true}")
        #expect(try findings(Self.table.replacingOccurrences(of: "x: Int", with: "x: {type: Int, unique: true}"), renamed).isEmpty)
    }

    @Test func removedEnumCasesNeedADataMigration() throws {
        let before = "enums:\n  Status: [open, closed, archived]\nentities:\n  A:\n    attributes:\n      s: Status\n"
        let after = before.replacingOccurrences(of: ", archived", with: "")
        #expect(try findings(before, after) == ["warning enum-cases-removed 8"])
        let migration = Migration(from: SnapshotBuilder.snapshot(of: try schema(before, version: 1)), to: SnapshotBuilder.snapshot(of: try schema(after, version: 2)))
        #expect(migration.steps.isEmpty)
        #expect(migration.upSQL().contains("records a new snapshot"))
        #expect(try findings(before, before.replacingOccurrences(of: "archived", with: "archived, deleted")).isEmpty, "adding a case is safe")
    }

    @Test func narrowingAndNewUniques() throws {
        #expect(try findings(Self.table, Self.table.replacingOccurrences(of: "x: Int", with: "x: Bool")).contains("error narrowing-conversion 6"))
        #expect(try findings(Self.table, Self.table.replacingOccurrences(of: "x: Int", with: "x: String")).filter { $0.hasPrefix("error") }.isEmpty, "to text widens")
        #expect(try findings(Self.table, Self.table.replacingOccurrences(of: "x: Int", with: "x: {type: Int, unique: true}")).contains("error new-unique 4"))
    }
}
