import Foundation
import MigrationPlanner
import MigratorCore
import MigratorPostgres
import MigratorSQLite
import PostgresKit
import RelationalModel
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

/// The database's structure as PostgreSQL's catalogue reports it, normalised so that column
/// order and statement text do not matter: columns with type, nullability, default and identity;
/// constraints with their definitions; indexes with theirs.
func postgresStructure(_ connection: PostgresConnection) throws -> [String] {
    var lines: [String] = []
    for row in try connection.query(
        """
        SELECT table_name, column_name, data_type, is_nullable, coalesce(column_default, ''), is_identity, coalesce(generation_expression, '')
        FROM information_schema.columns WHERE table_schema = 'public' AND table_name NOT LIKE 'schemagen%migration%'
        """)
    {
        lines.append("column " + row.map { "\($0)" }.joined(separator: " "))
    }
    for row in try connection.query(
        """
        SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid)
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = 'public' AND c.conrelid::regclass::text NOT LIKE 'schemagen%migration%'
        """)
    {
        lines.append("constraint " + row.map { "\($0)" }.joined(separator: " "))
    }
    for row in try connection.query("SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename NOT LIKE 'schemagen%migration%'") {
        lines.append("index " + row.map { "\($0)" }.joined(separator: " "))
    }
    return lines.sorted()
}

/// Runs one migration file on PostgreSQL through the migrator, as its only migration.
func postgresApply(_ sql: String, to connection: PostgresConnection) throws {
    let script = MigrationScript(version: 1, name: "file", up: sql, down: "SELECT 1;")
    try Migrator(database: PostgresMigrationDatabase(connection), schema: "scenario-\(UUID().uuidString)", scripts: [script]).up()
}

/// Every scenario the SQLite suite runs, on a real PostgreSQL server: up, compared with a
/// database built fresh from the new version, rows kept; then down, compared with the old.
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct PostgresScenarioTests {
    static func database() throws -> PostgresConnection {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        return try PostgresConnection(try server.createDatabase())
    }

    static func fresh(_ snapshot: SchemaSnapshot) throws -> PostgresConnection {
        let connection = try database()
        try postgresApply(Migration(from: nil, to: snapshot, renderer: PostgresRenderer()).upSQL(), to: connection)
        return connection
    }

    /// Row counts of the tables both versions have.
    static func counts(_ connection: PostgresConnection, tables: [String]) throws -> [String: [[StoredValue]]] {
        Dictionary(uniqueKeysWithValues: try tables.map { ($0, try connection.query("SELECT count(*) FROM \"\($0)\"")) })
    }

    @Test(arguments: MigrationScenarioTests.scenarios)
    func upMatchesAFreshDatabaseAndDownRestoresTheOldOne(_ scenario: Scenario) throws {
        let v1 = SnapshotBuilder.snapshot(of: try schema(scenario.before, version: 1))
        let v2 = SnapshotBuilder.snapshot(of: try schema(scenario.after, version: 2))
        let migration = Migration(from: v1, to: v2, renderer: PostgresRenderer())
        #expect(!migration.isEmpty)
        #expect(!migration.steps.contains { if case .rebuildTable = $0 { true } else { false } }, "PostgreSQL alters in place")

        let connection = try Self.fresh(v1)
        for statement in scenario.seed { try connection.execute(statement) }
        let kept = Set(v1.tables.map(\.name)).intersection(v2.tables.map(\.name)).sorted()
        let before = try Self.counts(connection, tables: kept)

        try postgresApply(migration.upSQL(), to: connection)
        let migrated = try postgresStructure(connection), fresh = try postgresStructure(try Self.fresh(v2))
        #expect(migrated == fresh, "\(scenario.name)\nonly migrated: \(migrated.filter { !fresh.contains($0) })\nonly fresh: \(fresh.filter { !migrated.contains($0) })\n\(migration.upSQL())")
        #expect(try Self.counts(connection, tables: kept) == before, "rows kept")
        if let (query, rows) = scenario.afterUp, Self.portable(query) { #expect(try connection.query(query) == rows, "\(query)") }

        try postgresApply(migration.downSQL(), to: connection)
        let reverted = try postgresStructure(connection), original = try postgresStructure(try Self.fresh(v1))
        #expect(
            reverted == original, "\(scenario.name)\nonly reverted: \(reverted.filter { !original.contains($0) })\nonly original: \(original.filter { !reverted.contains($0) })\n\(migration.downSQL())"
        )
        #expect(try Self.counts(connection, tables: kept) == before, "rows kept")
        if let (query, rows) = scenario.afterDown, Self.portable(query) { #expect(try connection.query(query) == rows, "\(query)") }
    }

    /// Queries that mean the same on both engines (not SQLite's typeof or FTS5 syntax).
    static func portable(_ query: String) -> Bool {
        !query.contains("typeof") && !query.contains("MATCH") && !query.contains("LIKE '20%Z'")
    }

    @Test func theExampleSchemasCreateFreshDatabases() throws {
        for name in ["Flights", "Todo", "Tasks", "Users", "Garage"] {
            let loaded = SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/\(name).yaml").path)
            let snapshot = SnapshotBuilder.snapshot(of: try #require(loaded.schema))
            let connection = try Self.fresh(snapshot)
            let tables = try connection.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name NOT LIKE 'schemagen%migration%'")
                .compactMap { row -> String? in if case .text(let name) = row[0] { name } else { nil } }
            #expect(Set(tables) == Set(snapshot.tables.map(\.name)), "\(name)")
        }
    }

    @Test func typesFollowTheSchema() throws {
        let v1 = SnapshotBuilder.snapshot(
            of: try schema(
                """
                enums:
                  Level: {type: Int, cases: {low: 0, high: 1}}
                values:
                  Point:
                    fields: {x: Double, y: Double}
                entities:
                  Thing:
                    attributes:
                      key: UUID
                      at: Date
                      day: {type: Date?, dateOnly: true}
                      bytes: Data
                      price: Decimal
                      flag: Bool
                      ratio: Double
                      small: Float
                      tiny: Int8
                      short: Int16
                      medium: Int32
                      big: Int64
                      text: String
                      link: URL
                      tags: "[String]"
                      where: Point
                      level: {type: Level, default: low}
                """, version: 1))
        let connection = try Self.fresh(v1)
        let types = Dictionary(
            uniqueKeysWithValues: try connection.query("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'thing'").compactMap { row -> (String, String)? in
                guard case .text(let name) = row[0], case .text(let type) = row[1] else { return nil }
                return (name, type)
            })
        #expect(
            types == [
                "id": "bigint", "key": "uuid", "at": "timestamp with time zone", "day": "date", "bytes": "bytea", "price": "numeric", "flag": "boolean",
                "ratio": "double precision", "small": "real", "tiny": "smallint", "short": "smallint", "medium": "integer", "big": "bigint",
                "text": "text", "link": "text", "tags": "jsonb", "where": "jsonb", "level": "bigint",
            ])
        #expect(try connection.query("SELECT is_identity FROM information_schema.columns WHERE table_name = 'thing' AND column_name = 'id'") == [[.text("YES")]])
        // The enum is a CHECK: a value outside its cases is refused.
        #expect(throws: PostgresError.self) {
            try connection.execute(
                "INSERT INTO thing (key, at, bytes, price, flag, ratio, small, tiny, short, medium, big, text, link, tags, \"where\", level) VALUES (gen_random_uuid(), now(), '\\x00', 1, true, 1, 1, 1, 1, 1, 1, 't', 'u', '[]', '{}', 7)"
            )
        }
    }
}
