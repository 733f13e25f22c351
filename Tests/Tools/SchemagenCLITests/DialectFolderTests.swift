import Foundation
import TestSupport
import Testing

/// Every dialect folder of a schema gets the same tools: `validate` checks each against its
/// manifest and against each other, `rehash` rewrites each, the fix is named in the message,
/// findings shared by the dialects are said once and the others say their dialect, and `diff`
/// fails when it reports errors.
@Suite(.blocking) struct DialectFolderTests {
    let runner = SchemagenProcessTests()

    /// A copy of the examples' schemas and migrations to change freely.
    func project() throws -> URL {
        let folder = temporaryFolder()
        for name in ["Schemas", "Migrations"] {
            try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        return folder
    }

    @Test func validateAndRehashCoverThePostgresFolder() throws {
        let folder = try project()
        let edited = folder.appendingPathComponent("Migrations/Flights/postgres/0002_add_airports_elevation.up.sql")
        try (try String(contentsOf: edited, encoding: .utf8) + "-- a reviewed note\n").write(to: edited, atomically: true, encoding: .utf8)
        // Before, validate checked only Migrations/Flights and passed.
        let tampered = try runner.schemagen(["validate"], in: folder)
        #expect(tampered.status == 1)
        #expect(
            tampered.output.contains("Migrations/Flights/postgres/0002_add_airports_elevation.up.sql:1:1: error: 0002_add_airports_elevation.up.sql changed after it was generated"),
            "\(tampered.output)")
        #expect(tampered.output.contains("run `schemagen rehash Flights`"), "\(tampered.output)")
        // Before, rehash rewrote only Migrations/Flights/migrations.sum.
        let rehash = try runner.schemagen(["rehash", "Flights"], in: folder)
        #expect(rehash.output == "rehashed Migrations/Flights/migrations.sum\nrehashed Migrations/Flights/postgres/migrations.sum\n", "\(rehash.output)\(rehash.error)")
        #expect(try runner.schemagen(["validate"], in: folder).status == 0)
        let all = try runner.schemagen(["rehash"], in: folder)
        #expect(all.output.contains("Migrations/Flights/postgres/migrations.sum") && all.output.contains("Migrations/Todo/migrations.sum"), "\(all.output)")
        // A root other than Migrations is named in the fix.
        try FileManager.default.moveItem(at: folder.appendingPathComponent("Migrations"), to: folder.appendingPathComponent("db"))
        try (try String(contentsOf: folder.appendingPathComponent("db/Flights/postgres/0002_add_airports_elevation.up.sql"), encoding: .utf8) + "-- again\n")
            .write(to: folder.appendingPathComponent("db/Flights/postgres/0002_add_airports_elevation.up.sql"), atomically: true, encoding: .utf8)
        let moved = try runner.schemagen(["validate", "--migrations", "db"], in: folder)
        #expect(moved.output.contains("run `schemagen rehash Flights --migrations db`"), "\(moved.output)")
    }

    @Test func migrationNamesMustMatchAcrossTheFolders() throws {
        let folder = try project()
        let postgres = folder.appendingPathComponent("Migrations/Flights/postgres")
        for suffix in [".up.sql", ".down.sql", ".schema.json", ".schema.yaml"] {
            try FileManager.default.moveItem(
                at: postgres.appendingPathComponent("0003_rename_airports_elevation_to_elevation_feet" + suffix),
                to: postgres.appendingPathComponent("0003_renamed" + suffix))
        }
        #expect(try runner.schemagen(["rehash", "Flights"], in: folder).status == 0)
        let run = try runner.schemagen(["validate"], in: folder)
        #expect(run.status == 1)
        #expect(run.output.contains("error: [postgres] migration 0003_renamed is 0003_rename_airports_elevation_to_elevation_feet in Migrations/Flights"), "\(run.output)")
        #expect(run.output.contains("[migration-dialects-differ]"))
    }

    @Test func findingsSaidOncePerDialectAndDiffFailsOnErrors() throws {
        let folder = try project()
        let schema = folder.appendingPathComponent("Schemas/Flights.yaml")
        var text = try String(contentsOf: schema, encoding: .utf8)
        text = text.replacingOccurrences(of: "version: 5", with: "version: 6")
        // Drops a column (both dialects: an error without --allow-destructive) and indexes an
        // existing table (PostgreSQL only: a lock warning).
        text = text.replacingOccurrences(of: "      filedAirspeed: {type: Int?, jsonKey: filed_airspeed}\n", with: "")
        text = text.replacingOccurrences(of: "      aircraftType: {type: String?, jsonKey: aircraft_type}", with: "      aircraftType: {type: String?, jsonKey: aircraft_type, indexed: true}")
        try text.write(to: schema, atomically: true, encoding: .utf8)
        let diff = try runner.schemagen(["diff", "--schema", "Schemas/Flights.yaml"], in: folder)
        #expect(diff.status == 1, "\(diff.output)\(diff.error)")
        let lines = diff.output.split(separator: "\n")
        #expect(lines.filter { $0.contains("[drop-column]") }.count == 1, "\(diff.output)")
        #expect(lines.filter { $0.contains("[lock-create-index]") && $0.contains("warning: [postgres] creating index") }.count == 1, "\(diff.output)")
        let allowed = try runner.schemagen(["diff", "--schema", "Schemas/Flights.yaml", "--allow-destructive"], in: folder)
        #expect(allowed.status == 0, "\(allowed.output)\(allowed.error)")
        let generate = try runner.schemagen(["generate", "--output", "Generated"], in: folder)
        #expect(generate.status == 1)
        #expect(generate.error.components(separatedBy: "[drop-column]").count == 2, "\(generate.error)")
    }

    /// `new-migration` adds an empty pair to each dialect folder, recorded in each manifest; after
    /// the SQL is written and rehashed it applies, and the next planned migration follows it.
    @Test func handWrittenMigrationsTakeTheirPlaceInTheHistory() throws {
        let folder = try project()
        let created = try runner.schemagen(["new-migration", "Add long flights view", "--schema", "Schemas/Flights.yaml"], in: folder)
        #expect(created.status == 0, "\(created.error)")
        #expect(created.output.contains("created Migrations/Flights/0006_add_long_flights_view.up.sql"), "\(created.output)")
        #expect(created.output.contains("created Migrations/Flights/postgres/0006_add_long_flights_view.down.sql"), "\(created.output)")
        #expect(try runner.schemagen(["validate"], in: folder).status == 0, "recorded in both manifests")
        let sqlite = folder.appendingPathComponent("Migrations/Flights/0006_add_long_flights_view")
        try (try String(contentsOfFile: sqlite.path + ".up.sql", encoding: .utf8) + "CREATE VIEW long_flights AS SELECT ident FROM flights WHERE route_distance > 1000;\n")
            .write(toFile: sqlite.path + ".up.sql", atomically: true, encoding: .utf8)
        try (try String(contentsOfFile: sqlite.path + ".down.sql", encoding: .utf8) + "DROP VIEW long_flights;\n")
            .write(toFile: sqlite.path + ".down.sql", atomically: true, encoding: .utf8)
        #expect(try runner.schemagen(["validate"], in: folder).output.contains("run `schemagen rehash Flights`"))
        #expect(try runner.schemagen(["rehash", "Flights"], in: folder).status == 0)
        // The next planned migration is numbered after it, and planned from the same snapshot.
        let schema = folder.appendingPathComponent("Schemas/Flights.yaml")
        try (try String(contentsOf: schema, encoding: .utf8)).replacingOccurrences(of: "version: 5", with: "version: 6")
            .replacingOccurrences(of: "      aircraftType: {type: String?, jsonKey: aircraft_type}", with: "      aircraftType: {type: String?, jsonKey: aircraft_type}\n      tailNumber: String?")
            .write(to: schema, atomically: true, encoding: .utf8)
        let generated = try runner.schemagen(["generate", "--output", "Generated"], in: folder)
        #expect(generated.status == 0, "\(generated.error)")
        let planned = try String(contentsOfFile: folder.path + "/Migrations/Flights/0007_add_flights_tail_number.up.sql", encoding: .utf8)
        #expect(planned.contains("ADD COLUMN \"tail_number\""), "\(planned)")
        let embedded = try String(contentsOfFile: folder.path + "/Generated/Flights/Flights+Migrations.swift", encoding: .utf8)
        #expect(embedded.contains("CREATE VIEW long_flights"), "the generated code embeds it")
        let database = folder.appendingPathComponent("app.sqlite").path
        let up = try BuiltTool("migrate").run(["up", "--database", database, "--dir", folder.path + "/Migrations/Flights"])
        #expect(up.status == 0, "\(up.error)")
        #expect(up.output.contains("applied  0006_add_long_flights_view") && up.output.contains("applied  0007_add_flights_tail_number"), "\(up.output)")
        // Folders out of step are refused before anything is written.
        for suffix in [".up.sql", ".down.sql", ".schema.json", ".schema.yaml"] {
            try FileManager.default.removeItem(atPath: folder.path + "/Migrations/Flights/postgres/0007_add_flights_tail_number" + suffix)
        }
        #expect(try runner.schemagen(["rehash", "Flights"], in: folder).status == 0)
        let lagging = try runner.schemagen(["new-migration", "grants", "--schema", "Schemas/Flights.yaml"], in: folder)
        #expect(lagging.status == 1 && lagging.error.contains("postgres is behind the schema's other migration folders"), "\(lagging.error)")
    }
}
