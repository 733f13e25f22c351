import Foundation
import MigrationPlanner
import MigratorCore
import MigratorPostgres
import MigratorSQLite
import RelationalModel
import SQLDialects
import SQLiteKit
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

/// For each kind of change: a database built by v1 and filled with rows is migrated up to v2
/// and compared with a database created fresh from v2 (tables, columns with type, nullability
/// and default, keys, indexes, foreign keys, triggers), its rows checked, then migrated down and
/// compared with v1 the same way.
struct Scenario: CustomTestStringConvertible, Sendable {
    let name: String
    let before: String
    let after: String
    /// Rows inserted into the v1 database.
    let seed: [String]
    /// A query and its expected rows after the up migration.
    let afterUp: (String, [[SQLiteValue]])?
    /// A query and its expected rows after going back down.
    let afterDown: (String, [[SQLiteValue]])?
    var testDescription: String { name }
}

func schema(_ body: String, version: Int) throws -> Schema {
    let result = SchemaLoader.load(source: .init(path: "v\(version).yaml", text: "schema: S\nversion: \(version)\n" + body))
    return try #require(result.schema, "\(result.diagnostics.map(\.message))")
}

func temporaryDatabase() throws -> SQLiteConnection {
    let path = temporaryFolder().appendingPathComponent("migration.sqlite").path
    let connection = try SQLiteConnection(path: path)
    try connection.execute("PRAGMA foreign_keys = ON;")
    return connection
}

/// Runs a migration file through the `Migrator`, as `migrate` does: its header decides foreign
/// keys and the transaction. Each file runs as the only migration of a schema of its own.
func apply(_ sql: String, to database: SQLiteConnection) throws {
    _ = try run(sql, on: database)
}

/// The same, returning how many statements the migrator ran.
func run(_ sql: String, on database: SQLiteConnection) throws -> Int {
    let script = MigrationScript(version: 1, name: "file", up: sql, down: "SELECT 1;")
    var statements = 0
    try Migrator(connection: database, schema: "scenario-\(UUID().uuidString)", scripts: [script]).up { event in
        if case .statement = event { statements += 1 }
    }
    return statements
}

func freshDatabase(_ snapshot: SchemaSnapshot) throws -> SQLiteConnection {
    let database = try temporaryDatabase()
    try apply(Migration(from: nil, to: snapshot).upSQL(), to: database)
    return database
}

/// The structure of a database, normalised so that column order and SQL text do not matter.
func structure(of database: SQLiteConnection) throws -> [String] {
    var lines: [String] = []
    let objects = try database.query("SELECT type, name, tbl_name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name;")
    for object in objects {
        guard case .text(let type) = object[0], case .text(let name) = object[1], case .text(let table) = object[2] else { continue }
        lines.append("\(type) \(name) on \(table)")
        guard type == "table" else { continue }
        let columns = try database.query("PRAGMA table_xinfo(\(SQLiteDialect().quote(name)));")
            .map { "  column \($0[1]) \($0[2]) notnull=\($0[3]) default=\($0[4]) pk=\($0[5])" }.sorted()
        lines += columns
        var indexes: [String] = []
        for index in try database.query("PRAGMA index_list(\(SQLiteDialect().quote(name)));") {
            guard case .text(let indexName) = index[1] else { continue }
            let indexColumns = try database.query("PRAGMA index_info(\(SQLiteDialect().quote(indexName)));").map { "\($0[2])" }
            indexes.append("  index \(indexName.hasPrefix("sqlite_autoindex") ? "auto" : indexName) unique=\(index[2]) origin=\(index[3]) \(indexColumns)")
        }
        lines += indexes.sorted()
        let keys = try database.query("PRAGMA foreign_key_list(\(SQLiteDialect().quote(name)));")
            .map { "  foreign key \($0[3]) -> \($0[2]).\($0[4]) on delete \($0[6])" }.sorted()
        lines += keys
    }
    return lines
}

@Suite struct MigrationScenarioTests {
    static let base = """
        entities:
          Airport:
            table: airports
            attributes:
              icao: {type: String, unique: true}
              name: String
              elevation: Int?

        """

    static let scenarios: [Scenario] = [
        Scenario(
            name: "add an optional column", before: base, after: base + "      state: String?\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco')"],
            afterUp: ("SELECT icao, state FROM airports", [[.text("KSFO"), .null]]),
            afterDown: ("SELECT icao, name FROM airports", [[.text("KSFO"), .text("San Francisco")]])),
        Scenario(
            name: "add a required column with a default", before: base, after: base + "      timezone: {type: String, default: UTC}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco')"],
            afterUp: ("SELECT timezone FROM airports", [[.text("UTC")]]), afterDown: nil),
        Scenario(
            name: "add a column defaulting to now (rebuild)", before: base, after: base + "      createdAt: {type: Date, default: now}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco')"],
            afterUp: ("SELECT count(*) FROM airports WHERE created_at LIKE '20%Z'", [[.integer(1)]]),
            afterDown: ("SELECT icao FROM airports", [[.text("KSFO")]])),
        Scenario(
            name: "drop a column", before: base + "      state: String?\n", after: base,
            seed: ["INSERT INTO airports (icao, name, state) VALUES ('KSFO', 'San Francisco', 'CA')"],
            afterUp: ("SELECT icao, name FROM airports", [[.text("KSFO"), .text("San Francisco")]]),
            afterDown: ("SELECT icao, state FROM airports", [[.text("KSFO"), .null]])),
        Scenario(
            name: "rename an attribute with renamedFrom", before: base + "      state: String?\n",
            after: base + "      region: {type: String?, renamedFrom: state}\n",
            seed: ["INSERT INTO airports (icao, name, state) VALUES ('KSFO', 'San Francisco', 'CA')"],
            afterUp: ("SELECT region FROM airports", [[.text("CA")]]),
            afterDown: ("SELECT state FROM airports", [[.text("CA")]])),
        Scenario(
            name: "rename an entity and its table", before: base,
            after: base.replacingOccurrences(of: "  Airport:\n    table: airports", with: "  Airfield:\n    renamedFrom: Airport\n    table: airfields"),
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco')"],
            afterUp: ("SELECT icao FROM airfields", [[.text("KSFO")]]),
            afterDown: ("SELECT icao FROM airports", [[.text("KSFO")]])),
        Scenario(
            name: "keep a date as its day (dateOnly) and back", before: base + "      opened: Date?\n", after: base + "      opened: {type: Date?, dateOnly: true}\n",
            seed: ["INSERT INTO airports (icao, name, opened) VALUES ('KSFO', 'San Francisco', '2026-12-03T22:30:00.000Z')"],
            afterUp: ("SELECT opened FROM airports", [[.text("2026-12-03")]]),
            afterDown: ("SELECT count(*) FROM airports WHERE opened = '2026-12-03T00:00:00.000Z'", [[.integer(1)]])),
        Scenario(
            name: "add a day defaulting to today (CURRENT_DATE)", before: base, after: base + "      openedOn: {type: Date, dateOnly: true, default: now}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco')"],
            afterUp: ("SELECT count(*) FROM airports WHERE opened_on = CURRENT_DATE", [[.integer(1)]]),
            afterDown: ("SELECT icao FROM airports", [[.text("KSFO")]])),
        Scenario(
            name: "change a type (rebuild with a cast)", before: base, after: base.replacingOccurrences(of: "elevation: Int?", with: "elevation: String?"),
            seed: ["INSERT INTO airports (icao, name, elevation) VALUES ('KSFO', 'San Francisco', 13)"],
            afterUp: ("SELECT elevation, typeof(elevation) FROM airports", [[.text("13"), .text("text")]]),
            afterDown: ("SELECT elevation, typeof(elevation) FROM airports", [[.integer(13), .text("integer")]])),
        Scenario(
            name: "make an optional column required with a default", before: base,
            after: base.replacingOccurrences(of: "elevation: Int?", with: "elevation: {type: Int, default: 0}"),
            seed: ["INSERT INTO airports (icao, name, elevation) VALUES ('KSFO', 'SFO', 13)", "INSERT INTO airports (icao, name) VALUES ('EGLL', 'LHR')"],
            afterUp: ("SELECT icao, elevation FROM airports ORDER BY icao", [[.text("EGLL"), .integer(0)], [.text("KSFO"), .integer(13)]]),
            afterDown: ("SELECT count(*) FROM airports", [[.integer(2)]])),
        Scenario(
            name: "add and remove a unique constraint", before: base, after: base.replacingOccurrences(of: "name: String", with: "name: {type: String, unique: true}"),
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco')"],
            afterUp: ("SELECT count(*) FROM airports", [[.integer(1)]]), afterDown: nil),
        Scenario(
            name: "add a composite index", before: base, after: base + "    indexes: [[name, elevation]]\n",
            seed: [], afterUp: nil, afterDown: nil),
        Scenario(
            name: "make an attribute searchable (full-text index)", before: base,
            after: base.replacingOccurrences(of: "name: String", with: "name: {type: String, searchable: true}"),
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco International')"],
            afterUp: ("SELECT icao FROM airports WHERE rowid IN (SELECT rowid FROM airports_name_fts WHERE airports_name_fts MATCH 'francisco')", [[.text("KSFO")]]),
            afterDown: nil),
        // Rows may get new rowids in a rebuild: the full-text index must follow them.
        Scenario(
            name: "rebuild a table with a full-text index",
            before: base.replacingOccurrences(of: "name: String", with: "name: {type: String, searchable: true}"),
            after: base.replacingOccurrences(of: "name: String", with: "name: {type: String, searchable: true}").replacingOccurrences(of: "elevation: Int?", with: "elevation: String?"),
            seed: [
                "INSERT INTO airports (icao, name) VALUES ('EGLL', 'London Heathrow')", "INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco International')",
                "DELETE FROM airports WHERE icao = 'EGLL'",
            ],
            afterUp: (
                "SELECT icao, (SELECT count(*) FROM airports_name_fts WHERE airports_name_fts MATCH 'heathrow') FROM airports WHERE rowid IN (SELECT rowid FROM airports_name_fts WHERE airports_name_fts MATCH 'francisco')",
                [[.text("KSFO"), .integer(0)]]
            ),
            afterDown: ("SELECT icao FROM airports WHERE rowid IN (SELECT rowid FROM airports_name_fts WHERE airports_name_fts MATCH 'francisco')", [[.text("KSFO")]])),
        Scenario(
            name: "create and drop an entity", before: base,
            after: base + "  Airline:\n    attributes:\n      code: {type: String, unique: true}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco')"],
            afterUp: ("SELECT count(*) FROM airline", [[.integer(0)]]),
            afterDown: ("SELECT count(*) FROM airports", [[.integer(1)]])),
        Scenario(
            name: "add a to-one relationship with its inverse (foreign key, rebuild)",
            before: base + "  Flight:\n    attributes:\n      ident: String\n",
            after: base + "    relationships:\n      departures: {to: \"[Flight]\", inverse: origin}\n  Flight:\n    attributes:\n      ident: String\n    relationships:\n      origin: Airport?\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')", "INSERT INTO flight (ident) VALUES ('UA1')"],
            afterUp: ("SELECT ident, origin_id FROM flight", [[.text("UA1"), .null]]),
            afterDown: ("SELECT ident FROM flight", [[.text("UA1")]])),
        Scenario(
            name: "change a delete rule (foreign key action, rebuild)",
            before: base + "    relationships:\n      departures: {to: \"[Flight]\", inverse: origin}\n  Flight:\n    attributes:\n      ident: String\n    relationships:\n      origin: Airport?\n",
            after: base
                + "    relationships:\n      departures: {to: \"[Flight]\", inverse: origin, deleteRule: cascade}\n  Flight:\n    attributes:\n      ident: String\n    relationships:\n      origin: Airport?\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')", "INSERT INTO flight (ident, origin_id) VALUES ('UA1', 1)"],
            afterUp: ("SELECT ident, origin_id FROM flight", [[.text("UA1"), .integer(1)]]),
            afterDown: ("SELECT ident, origin_id FROM flight", [[.text("UA1"), .integer(1)]])),
        Scenario(
            name: "add a many-to-many relationship (join table)",
            before: base + "  Airline:\n    attributes:\n      code: String\n",
            after: base + "    relationships:\n      airlines: {to: \"[Airline]\", inverse: hubs}\n  Airline:\n    attributes:\n      code: String\n    relationships:\n      hubs: \"[Airport]\"\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')"],
            afterUp: ("SELECT count(*) FROM airline_hubs", [[.integer(0)]]), afterDown: nil),
        Scenario(
            name: "change the primary key (rebuild)", before: base,
            after: base.replacingOccurrences(of: "icao: {type: String, unique: true}", with: "icao: {type: String, primaryKey: true}"),
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'San Francisco')"],
            afterUp: ("SELECT icao, name FROM airports", [[.text("KSFO"), .text("San Francisco")]]), afterDown: nil),
        Scenario(
            name: "rename a relationship (its foreign-key column follows)",
            before: base + "    relationships:\n      departures: {to: \"[Flight]\", inverse: origin}\n  Flight:\n    attributes:\n      ident: String\n    relationships:\n      origin: Airport?\n",
            after: base
                + "    relationships:\n      departures: {to: \"[Flight]\", inverse: from}\n  Flight:\n    attributes:\n      ident: String\n    relationships:\n      from: {to: Airport?, renamedFrom: origin}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')", "INSERT INTO flight (ident, origin_id) VALUES ('UA1', 1)"],
            afterUp: ("SELECT ident, from_id FROM flight", [[.text("UA1"), .integer(1)]]),
            afterDown: ("SELECT ident, origin_id FROM flight", [[.text("UA1"), .integer(1)]])),
        Scenario(
            name: "drop a relationship",
            before: base + "  Flight:\n    attributes:\n      ident: String\n    relationships:\n      origin: Airport?\n",
            after: base + "  Flight:\n    attributes:\n      ident: String\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')", "INSERT INTO flight (ident, origin_id) VALUES ('UA1', 1)"],
            afterUp: ("SELECT ident FROM flight", [[.text("UA1")]]),
            afterDown: ("SELECT ident, origin_id FROM flight", [[.text("UA1"), .null]])),
        Scenario(
            name: "add a composite unique constraint", before: base, after: base + "    uniques: [[name, elevation]]\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')"], afterUp: nil, afterDown: nil),
        Scenario(
            name: "make a transient attribute stored, and back",
            before: base + "      isFavorite: {type: Bool, transient: true, default: false}\n", after: base + "      isFavorite: {type: Bool, default: false}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')"],
            afterUp: ("SELECT is_favorite FROM airports", [[.integer(0)]]), afterDown: nil),
        Scenario(
            name: "change a default (rebuild)", before: base + "      timezone: {type: String, default: UTC}\n",
            after: base + "      timezone: {type: String, default: Europe/London}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')"],
            afterUp: ("SELECT timezone FROM airports", [[.text("UTC")]]), afterDown: nil),
        Scenario(
            name: "keywords and quotes in names", before: "entities:\n  Order:\n    table: \"order\"\n    attributes:\n      select: String\n",
            after: "entities:\n  Order:\n    table: \"order\"\n    attributes:\n      select: String\n      where: {type: String?, column: \"we\\\"ird\"}\n",
            seed: ["INSERT INTO \"order\" (\"select\") VALUES ('x')"],
            afterUp: ("SELECT \"select\", \"we\"\"ird\" FROM \"order\"", [[.text("x"), .null]]), afterDown: nil),
        // A table split: the new table is created and filled from the old columns before they go,
        // and going down copies the values back.
        Scenario(
            name: "split columns into a new table (movedFrom)",
            before: base + "      city: String?\n      country: String?\n",
            after: base + "    relationships:\n      location: {to: Location?, inverse: airport, deleteRule: cascade}\n"
                + "  Location:\n    table: locations\n    attributes:\n      city: {type: String?, movedFrom: Airport.city}\n      country: {type: String?, movedFrom: Airport.country}\n"
                + "    relationships:\n      airport: {to: Airport, inverse: location}\n",
            seed: [
                "INSERT INTO airports (icao, name, city, country) VALUES ('KSFO', 'SFO', 'San Francisco', 'US')",
                "INSERT INTO airports (icao, name) VALUES ('ZZZZ', 'Nowhere')",
            ],
            afterUp: ("SELECT a.icao, l.city, l.country FROM locations l JOIN airports a ON a.id = l.airport_id", [[.text("KSFO"), .text("San Francisco"), .text("US")]]),
            afterDown: ("SELECT icao, city, country FROM airports ORDER BY icao", [[.text("KSFO"), .text("San Francisco"), .text("US")], [.text("ZZZZ"), .null, .null]])),
        // A backfill fills the rows that exist, and is no default for new ones.
        Scenario(
            name: "add a required column with a backfill value",
            before: base, after: base + "      timezone: {type: String, backfill: UTC}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')"],
            afterUp: ("SELECT timezone FROM airports", [[.text("UTC")]]), afterDown: nil),
        Scenario(
            name: "make a column required with a backfill expression per dialect",
            before: base + "      code: String?\n",
            after: base + "      code: {type: String, backfill: {sqlite: \"lower(icao)\", postgres: \"lower(icao)\"}}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')", "INSERT INTO airports (icao, name, code) VALUES ('KBOS', 'BOS', 'boston')"],
            afterUp: ("SELECT icao, code FROM airports ORDER BY icao", [[.text("KBOS"), .text("boston")], [.text("KSFO"), .text("ksfo")]]), afterDown: nil),
        // A relationship becomes one-to-one (an inverse that is to-one): its key becomes unique.
        Scenario(
            name: "a one-to-one relationship's key is unique",
            before: base + "  Gate:\n    attributes:\n      code: String\n    relationships:\n      airport: {to: Airport?, column: airport_id}\n",
            after: base
                + "    relationships:\n      gate: {to: Gate?, inverse: airport}\n  Gate:\n    attributes:\n      code: String\n    relationships:\n      airport: {to: Airport?, column: airport_id, inverse: gate}\n",
            seed: ["INSERT INTO airports (icao, name) VALUES ('KSFO', 'SFO')", "INSERT INTO gate (code, airport_id) VALUES ('A1', 1)"],
            afterUp: ("SELECT code, airport_id FROM gate", [[.text("A1"), .integer(1)]]), afterDown: nil),
    ]

    @Test(arguments: scenarios)
    func upMatchesAFreshDatabaseAndDownRestoresTheOldOne(_ scenario: Scenario) throws {
        let v1 = SnapshotBuilder.snapshot(of: try schema(scenario.before, version: 1))
        let v2 = SnapshotBuilder.snapshot(of: try schema(scenario.after, version: 2))
        let migration = Migration(from: v1, to: v2)
        #expect(!migration.isEmpty)

        let database = try freshDatabase(v1)
        for statement in scenario.seed { try database.execute(statement) }

        try apply(migration.upSQL(), to: database)
        #expect(try structure(of: database) == structure(of: freshDatabase(v2)), "\n\(migration.upSQL())")
        if let (query, rows) = scenario.afterUp { #expect(try database.query(query) == rows) }
        #expect(try database.query("PRAGMA integrity_check;") == [[.text("ok")]])

        try apply(migration.downSQL(), to: database)
        #expect(try structure(of: database) == structure(of: freshDatabase(v1)), "\n\(migration.downSQL())")
        if let (query, rows) = scenario.afterDown { #expect(try database.query(query) == rows) }
        #expect(Migration(from: v2, to: v2).isEmpty, "no change, no steps")
    }

    @Test func theExampleSchemasCreateFreshDatabases() throws {
        for name in ["Flights", "Todo", "Tasks", "Users", "Garage"] {
            let loaded = SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/\(name).yaml").path)
            let snapshot = SnapshotBuilder.snapshot(of: try #require(loaded.schema))
            let database = try freshDatabase(snapshot)
            // Every table of the model, with its columns, and nothing else (FTS5 keeps shadow tables).
            let fullText = snapshot.tables.flatMap(\.indexes).filter(\.isFullText).map(\.name)
            let tables = try database.query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'schemagen_migration%'")
                .compactMap { row -> String? in if case .text(let name) = row[0] { name } else { nil } }
                .filter { table in !fullText.contains { table.hasPrefix($0 + "_") } }
            #expect(Set(tables) == Set(snapshot.tables.map(\.name) + fullText), "\(name)")
            for table in snapshot.tables {
                let columns = try database.query("SELECT name FROM pragma_table_info(?)", [.text(table.name)]).map { $0[0] }
                #expect(columns == table.columns.map { .text($0.name) }, "\(name).\(table.name)")
            }
        }
    }
}
