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

/// A type change made by copying the table (`OnlineCopy`), on a real server: both versions'
/// writes reach both tables while expanded, and contract swaps the copy in with what pointed at
/// the old table: another table's foreign key, a trigger the schema does not know, the key's
/// sequence.
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct OnlineCopyTests {
    static let v1 = "entities:\n  Event:\n    table: events\n    attributes:\n      name: String\n      score: Int32\n"
    static let v2 = "entities:\n  Event:\n    table: events\n    attributes:\n      name: {type: String, indexed: true}\n      score: Double\n"

    /// A fresh database at version 1, with the migrator that takes it to `v2` online.
    static func atVersion1(_ v1: String = Self.v1, to v2: String = Self.v2, connection: PostgresConnection? = nil) throws -> (PostgresConnection, Migrator) {
        let connection = try connection ?? PostgresScenarioTests.database()
        let migrator = OnlineScenarioTests.migrator(connection, SnapshotBuilder.snapshot(of: try schema(v1, version: 1)), SnapshotBuilder.snapshot(of: try schema(v2, version: 2)))
        try migrator.up(.version(1))
        return (connection, migrator)
    }

    static func rows(_ connection: PostgresConnection, _ relation: String) throws -> [[StoredValue]] {
        try connection.query("SELECT id, name, round(score::numeric, 1)::text FROM \(relation) ORDER BY id")
    }

    @Test func bothVersionsWritesReachBothTablesAndContractSwapsTheCopyIn() throws {
        let (connection, migrator) = try Self.atVersion1()
        try connection.execute(
            """
            INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 3000) AS i;
            CREATE TABLE attendee (id bigserial PRIMARY KEY, event_id bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE);
            INSERT INTO attendee (event_id) SELECT i FROM generate_series(1, 3000, 100) AS i;
            CREATE TABLE audit (event_id bigint);
            CREATE FUNCTION audit_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit VALUES (NEW.id); RETURN NULL; END $$;
            CREATE TRIGGER audited AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION audit_insert();
            """)

        try migrator.up()
        #expect(try migrator.onlineState()?.phase == .expanded)
        #expect(try connection.query("SELECT count(*) FROM schemagen_2_events") == [[.integer(3000)]])
        // The old version writes the old table; the new version writes the copy, through its views.
        try connection.execute(
            """
            UPDATE events SET score = 41 WHERE id = 1;
            DELETE FROM events WHERE id = 2;
            INSERT INTO events (name, score) VALUES ('old version', 7);
            SET search_path TO s_v2, public;
            UPDATE events SET score = 2.6 WHERE id = 3;
            DELETE FROM events WHERE id = 4;
            INSERT INTO events (name, score) VALUES ('new version', 8.4);
            RESET search_path;
            """)
        let oldView = try Self.rows(connection, "s_v1.events"), newView = try Self.rows(connection, "s_v2.events")
        #expect(oldView.count == 3000 && newView.count == 3000)
        #expect(oldView.map { $0.prefix(2) } == newView.map { $0.prefix(2) }, "both versions read the same rows")
        #expect(try connection.query("SELECT score::text FROM events WHERE id = 3") == [[.text("3")]], "the new version's 2.6, rounded for the old one")
        #expect(try connection.query("SELECT score::text FROM schemagen_2_events WHERE id = 1") == [[.text("41")]])
        #expect(try connection.query("SELECT count(*) FROM events WHERE id IN (2, 4)") == [[.integer(0)]])

        try migrator.up(options: .init(complete: true))
        #expect(try migrator.onlineState() == nil)
        #expect(try connection.query("SELECT (to_regclass('schemagen_2_events') IS NULL)::int") == [[.integer(1)]])
        #expect(try Self.rows(connection, "events") == newView, "every row, with the new version's values")
        #expect(try connection.query("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'events'::regclass AND attname = 'score'") == [[.text("double precision")]])
        // The other table's key now refers to the new table, validated; its cascade still works.
        #expect(try connection.query("SELECT (confrelid = 'events'::regclass AND convalidated)::int FROM pg_constraint WHERE conrelid = 'attendee'::regclass AND contype = 'f'") == [[.integer(1)]])
        try connection.execute("DELETE FROM events WHERE id = 101")
        #expect(try connection.query("SELECT count(*) FROM attendee WHERE event_id = 101") == [[.integer(0)]])
        // The trigger the schema does not know moved with the table; the key goes on from the old sequence.
        let audited = try connection.query("SELECT count(*) FROM audit")
        let inserted = try connection.query("INSERT INTO events (name, score) VALUES ('after', 1.5) RETURNING id")
        #expect(try connection.query("SELECT count(*) FROM audit") != audited, "the moved trigger fires")
        let highest = try connection.query("SELECT max(id) FROM events WHERE name <> 'after'")
        if case .integer(let id)? = inserted.first?.first, case .integer(let before)? = highest.first?.first { #expect(id > before) } else { Issue.record("\(inserted) \(highest)") }
        #expect(try connection.query("SELECT indexname::text FROM pg_indexes WHERE tablename = 'events' ORDER BY 1") == [[.text("events_name_idx")], [.text("events_pkey")]])
        #expect(try connection.query("SELECT count(*) FROM pg_proc WHERE proname LIKE 'schemagen_2_events_copy%'") == [[.integer(0)]])
    }

    /// What the two versions write into one row reaches both tables column by column: a value
    /// one version wrote stays when the other changes another column; a column the new version
    /// adds (filled by its backfill value for the old version's rows) or makes optional, a key
    /// the old version changes, a TRUNCATE; and a role that may insert into the table inserts
    /// through the new version's view, its key drawn from the old table's sequence.
    @Test func eachVersionsWritesReachTheOtherTableColumnByColumn() throws {
        let v1 = Self.v1 + "      note: String\n"
        let v2 = Self.v2 + "      note: String?\n      zone: {type: String, backfill: UTC}\n      sku: String?\n"
        let (connection, migrator) = try Self.atVersion1(v1, to: v2)
        let role = "copy_writer_\(UUID().uuidString.prefix(8).lowercased())"
        try connection.execute(
            """
            INSERT INTO events (name, score, note) SELECT 'event ' || i, i, 'note' FROM generate_series(1, 100) AS i;
            CREATE ROLE \(role);
            GRANT SELECT, INSERT ON events TO \(role);
            """)
        try migrator.up()
        try connection.execute(
            """
            INSERT INTO events (name, score, note) VALUES ('old version', 1, 'n');
            SET search_path TO s_v2, public;
            UPDATE events SET score = 2.6, sku = 'A-1' WHERE id = 1;
            INSERT INTO events (name, score, note, zone) VALUES ('without a note', 4.4, NULL, 'CET');
            RESET search_path;
            UPDATE events SET name = 'renamed by version 1' WHERE id = 1;
            UPDATE events SET id = 1000 WHERE id = 1;
            """)
        #expect(try connection.query("SELECT zone FROM schemagen_2_events WHERE name = 'old version'") == [[.text("UTC")]], "the backfill value for the old version's rows")
        #expect(try connection.query("SELECT count(*) FROM events WHERE name = 'without a note' AND note IS NULL") == [[.integer(1)]], "optional in the old table too")
        #expect(
            try connection.query("SELECT name, score::text, sku FROM schemagen_2_events WHERE id = 1000") == [[.text("renamed by version 1"), .text("2.6"), .text("A-1")]],
            "the new version's 2.6 and its sku kept through the old version's update of another column and of the key")
        try connection.execute("GRANT USAGE ON SCHEMA s_v2 TO \(role); GRANT SELECT, INSERT ON s_v2.events TO \(role)")
        try connection.execute("SET ROLE \(role); INSERT INTO s_v2.events (name, score, note, zone) VALUES ('by the role', 1.0, 'n', 'UTC'); RESET ROLE")
        #expect(try connection.query("SELECT count(*) FROM events WHERE name = 'by the role'") == [[.integer(1)]])
        try connection.execute("TRUNCATE events")
        #expect(try connection.query("SELECT count(*) FROM schemagen_2_events") == [[.integer(0)]])
        try migrator.rollback()
        try connection.execute("DROP OWNED BY \(role); DROP ROLE \(role)")
    }

    /// A row an app holds while the copy runs is passed by, and copied once free with the value
    /// the app wrote meanwhile (its update reached no copied row: there was none yet).
    @Test func aRowHeldWhileTheCopyRunsIsCopiedWithItsLatestValue() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let url = try server.createDatabase()
        let (connection, migrator) = try Self.atVersion1(connection: try PostgresConnection(url))
        try connection.execute("INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 5000) AS i")
        let locked = DispatchSemaphore(value: 0)
        let app = Thread {
            let holder = try? PostgresConnection(url)
            try? holder?.execute("BEGIN; SELECT * FROM events WHERE id = 2500 FOR UPDATE")
            locked.signal()
            Thread.sleep(forTimeInterval: 1.5)
            try? holder?.execute("UPDATE events SET score = 777 WHERE id = 2500; COMMIT")
        }
        app.start()
        locked.wait()
        try migrator.up()
        while !app.isFinished { usleep(10_000) }
        #expect(try connection.query("SELECT count(*) FROM schemagen_2_events") == [[.integer(5000)]])
        #expect(try connection.query("SELECT score::text FROM schemagen_2_events WHERE id = 2500") == [[.text("777")]])
    }

    /// A table renamed and retyped in one version: other tables' keys onto it follow it to its
    /// new name at the swap.
    @Test func keysOntoARenamedTableFollowItAtTheSwap() throws {
        let v2 = Self.v2.replacingOccurrences(of: "table: events", with: "table: happenings")
        let (connection, migrator) = try Self.atVersion1(to: v2)
        try connection.execute(
            """
            INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 50) AS i;
            CREATE TABLE attendee (id bigserial PRIMARY KEY, event_id bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE);
            INSERT INTO attendee (event_id) VALUES (7), (8);
            """)
        try migrator.up()
        #expect(try connection.query("SELECT count(*) FROM schemagen_2_happenings") == [[.integer(50)]])
        try migrator.up(options: .init(complete: true))
        #expect(try connection.query("SELECT (confrelid = 'happenings'::regclass AND convalidated)::int FROM pg_constraint WHERE conrelid = 'attendee'::regclass AND contype = 'f'") == [[.integer(1)]])
        try connection.execute("DELETE FROM happenings WHERE id = 7")
        #expect(try connection.query("SELECT event_id FROM attendee") == [[.integer(8)]])
    }

    /// The old version changes the key of a row the copy has not reached: the row reaches the
    /// copy under its new key at once, wherever the copy is.
    @Test func aKeyChangedBeforeItsRowIsCopiedReachesTheCopy() throws {
        let old = SnapshotBuilder.snapshot(of: try schema(Self.v1, version: 1)), new = SnapshotBuilder.snapshot(of: try schema(Self.v2, version: 2))
        let (connection, _) = try Self.atVersion1()
        try connection.execute("INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 10) AS i")
        // Expand as far as its copy, as `migrate up` runs it.
        for section in try #require(Migration(from: old, to: new, renderer: PostgresRenderer(), online: true).online).expand.sections {
            if case .backfill = section { break }
            if case .transaction(let sql, _) = section { try connection.execute(sql) }
        }
        try connection.execute("UPDATE events SET id = 9000, score = 41 WHERE id = 5")
        #expect(try connection.query("SELECT id, score::text FROM schemagen_2_events") == [[.integer(9000), .text("41")]])
    }

    /// Expand stops before making anything where row-level security applies to the migrating
    /// role: the copy would hold only the rows the policies show it. (A role it does not apply
    /// to carries the policies: OnlineCopyCarryTests.)
    @Test func rowLevelSecurityTheRoleIsSubjectToStopsExpandWithWhatToDo() throws {
        let (connection, migrator) = try Self.atVersion1()
        let database = try #require(try connection.query("SELECT current_database()").first?.first)
        guard case .text(let name) = database else { return }
        try connection.execute(
            """
            DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'rls_migrator') THEN CREATE ROLE rls_migrator NOSUPERUSER NOBYPASSRLS; END IF; END $$;
            GRANT CREATE ON DATABASE "\(name)" TO rls_migrator;
            GRANT CREATE, USAGE ON SCHEMA public TO rls_migrator;
            GRANT ALL ON ALL TABLES IN SCHEMA public TO rls_migrator;
            GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO rls_migrator;
            ALTER TABLE events OWNER TO rls_migrator;
            ALTER TABLE events ENABLE ROW LEVEL SECURITY;
            ALTER TABLE events FORCE ROW LEVEL SECURITY;
            SET ROLE rls_migrator;
            """)
        defer { try? connection.execute("RESET ROLE") }
        #expect {
            try migrator.up()
        } throws: { error in
            "\(error)".contains("has row-level security that applies to this role (rls_migrator), so a copy would hold only the rows its policies show")
        }
        #expect(try connection.query("SELECT (to_regclass('schemagen_2_events') IS NULL)::int") == [[.integer(1)]])
    }

    /// Rollback drops the copy and keeps, in the old table, every row either version wrote.
    @Test func rollbackKeepsTheRowsBothVersionsWrote() throws {
        let (connection, migrator) = try Self.atVersion1()
        try connection.execute("INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 500) AS i")
        try migrator.up()
        try connection.execute("SET search_path TO s_v2, public; INSERT INTO events (name, score) VALUES ('new version', 3.2); UPDATE events SET score = 9.9 WHERE id = 7; RESET search_path")
        try migrator.rollback()
        #expect(try connection.query("SELECT (to_regclass('schemagen_2_events') IS NULL)::int") == [[.integer(1)]])
        // 1 + ... + 500, row 7's 7 now 10 (9.9 rounded), and the new row's 3 (3.2 rounded).
        let expectedSum: Int64 = 125_250 - 7 + 10 + 3
        #expect(try connection.query("SELECT count(*), sum(score) FROM events") == [[.integer(501), .integer(expectedSum)]])
        #expect(try connection.query("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal") == [[.integer(0)]])
    }
}
