import Foundation
import MigrationFiles
import MigrationPlanner
import MigratorCore
import MigratorPostgres
import PostgresKit
import RelationalModel
import SchemaMetadata
import TestSupport
import Testing

/// Every scenario of the planner's suite, planned online and run on a real PostgreSQL server
/// through the migrator: expand (the rows read through the new version's views), rollback
/// (the database as version 1 built it, rows kept), expand again, complete (the database as
/// version 2 built it, rows kept, the scenario's query answered).
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct OnlineScenarioTests {
    static func migrator(_ connection: PostgresConnection, _ v1: SchemaSnapshot, _ v2: SchemaSnapshot) -> Migrator {
        let first = Migration(from: nil, to: v1, renderer: PostgresRenderer())
        let second = Migration(from: v1, to: v2, renderer: PostgresRenderer(), online: true)
        var online = MigrationScript(version: 2, name: "v2", up: second.upSQL(), down: second.downSQL())
        online.contract = second.contractSQL()
        return Migrator(database: PostgresMigrationDatabase(connection), schema: "S", scripts: [MigrationScript(version: 1, name: "v1", up: first.upSQL(), down: first.downSQL()), online])
    }

    @Test(arguments: MigrationScenarioTests.scenarios)
    func expandRollbackAndCompleteLeaveTheDatabasesThePlannerBuilds(_ scenario: Scenario) throws {
        let v1 = SnapshotBuilder.snapshot(of: try schema(scenario.before, version: 1))
        let v2 = SnapshotBuilder.snapshot(of: try schema(scenario.after, version: 2))
        let plan = try #require(Migration(from: v1, to: v2, renderer: PostgresRenderer(), online: true).online)

        let connection = try PostgresScenarioTests.database()
        let migrator = Self.migrator(connection, v1, v2)
        try migrator.up(.version(1))
        #expect(try migrator.onlineState() == nil, "a first migration's empty contract is done at once")
        for statement in scenario.seed { try connection.execute(statement) }
        let kept = Set(v1.tables.map(\.name)).intersection(v2.tables.map(\.name)).sorted()
        let before = try PostgresScenarioTests.counts(connection, tables: kept)
        let original = try postgresStructure(try PostgresScenarioTests.fresh(v1))

        try migrator.up()
        #expect(try migrator.onlineState()?.phase == .expanded)
        #expect(try migrator.servedVersions() == [1, 2])
        for table in v2.tables where v1.table(named: table.name) != nil || v1.tables.contains(where: { $0.entity != nil && $0.entity == table.renamedFrom }) {
            // Each kept table reads through the new version's view, under the new names.
            let rows = try connection.query("SELECT count(*) FROM s_v2.\"\(table.name)\"")
            #expect(rows.count == 1, "\(scenario.name): \(table.name)")
        }

        try migrator.rollback()
        #expect(try migrator.onlineState() == nil)
        let reverted = try postgresStructure(connection)
        #expect(
            reverted == original,
            "\(scenario.name)\nonly reverted: \(reverted.filter { !original.contains($0) })\nonly original: \(original.filter { !reverted.contains($0) })\n\(plan.rollback.text)")
        #expect(try PostgresScenarioTests.counts(connection, tables: kept) == before, "rows kept")
        #expect(try migrator.history().map(\.version) == [1])

        // Scenarios that drop a column need the destructive contract allowed.
        try migrator.up(options: .init(allowDestructive: true, complete: true))
        #expect(try migrator.onlineState() == nil)
        let migrated = try postgresStructure(connection), fresh = try postgresStructure(try PostgresScenarioTests.fresh(v2))
        #expect(
            migrated == fresh,
            "\(scenario.name)\nonly migrated: \(migrated.filter { !fresh.contains($0) })\nonly fresh: \(fresh.filter { !migrated.contains($0) })\n\(plan.expand.text)\n\(plan.contract.text)")
        #expect(try PostgresScenarioTests.counts(connection, tables: kept) == before, "rows kept")
        if let (query, rows) = scenario.afterUp, PostgresScenarioTests.portable(query) { #expect(try connection.query(query) == rows, "\(query)") }
        #expect(try connection.query("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 's_v%' ORDER BY 1") == [[.text("s_v2")]], "only the new version is served")
    }

    /// A unique index whose build fails on duplicates leaves an invalid index behind: once the
    /// rows are fixed, `up` resumes at that section, drops the leftover and builds it again.
    @Test func aFailedUniqueIndexBuildResumesOnceTheRowsAreFixed() throws {
        let v1 = SnapshotBuilder.snapshot(of: try schema(MigrationScenarioTests.base, version: 1))
        let v2 = SnapshotBuilder.snapshot(of: try schema(MigrationScenarioTests.base.replacingOccurrences(of: "name: String", with: "name: {type: String, unique: true}"), version: 2))
        let connection = try PostgresScenarioTests.database()
        let migrator = Self.migrator(connection, v1, v2)
        try migrator.up(.version(1))
        try connection.execute("INSERT INTO airports (icao, name) VALUES ('KSFO', 'Twin'), ('KOAK', 'Twin')")
        #expect(throws: MigratorError.self) { try migrator.up() }
        #expect(try migrator.onlineState()?.phase == .expand)
        #expect(try connection.query("SELECT count(*) FROM pg_index WHERE NOT indisvalid") == [[.integer(1)]], "the failed build left an invalid index")
        try connection.execute("UPDATE airports SET name = 'Oakland' WHERE icao = 'KOAK'")
        try migrator.up()
        #expect(try migrator.onlineState()?.phase == .expanded)
        #expect(try connection.query("SELECT count(*) FROM pg_index WHERE NOT indisvalid") == [[.integer(0)]])
        #expect(
            try connection.query("SELECT conname::text FROM pg_constraint WHERE contype = 'u' AND conrelid = 'airports'::regclass ORDER BY 1") == [
                [.text("airports_icao_key")], [.text("airports_name_key")],
            ])
    }
}
