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

/// A DBA's hand-made objects on a table that an online type change copies and swaps in: each
/// is on the table after `complete` with the same definition as before, and what cannot be
/// carried stops expand before anything changes (or is dropped, with a warning, when asked).
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct OnlineCopyCarryTests {
    static let v1 = """
        entities:
          Order:
            table: orders
            attributes:
              customer: String
              totalCents: Int32
              note: String?
              region: String?
        """
    /// `totalCents` becomes Int64 (the table is copied); `note` is dropped.
    static let v2 = """
        entities:
          Order:
            table: orders
            attributes:
              customer: String
              totalCents: Int64
              region: String?
        """

    /// What the DBA made by hand, as the issue lists it, and more.
    static let handMade = """
        CREATE EXTENSION IF NOT EXISTS btree_gist;
        DO $$ BEGIN CREATE ROLE carry_reporter; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
        CREATE TABLE regions (code text PRIMARY KEY);
        INSERT INTO regions VALUES ('eu'), ('us');
        CREATE INDEX dba_big_orders ON orders (customer) INCLUDE (region) WITH (fillfactor = 70) WHERE total_cents > 1000;
        ALTER TABLE orders ADD CONSTRAINT dba_positive CHECK (total_cents > 0);
        ALTER TABLE orders ADD CONSTRAINT dba_region_known FOREIGN KEY (region) REFERENCES regions (code);
        ALTER TABLE orders ADD CONSTRAINT dba_one_region_per_customer EXCLUDE USING gist (customer WITH =, region WITH <>);
        CREATE UNIQUE INDEX dba_customer_total ON orders (customer, total_cents);
        ALTER TABLE orders REPLICA IDENTITY USING INDEX dba_customer_total;
        CREATE TABLE audit (order_id bigint, total bigint);
        CREATE FUNCTION audit_total() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN INSERT INTO audit VALUES (NEW.id, NEW.total_cents); RETURN NULL; END $f$;
        CREATE TRIGGER dba_audit AFTER UPDATE OF total_cents ON orders FOR EACH ROW EXECUTE FUNCTION audit_total();
        GRANT SELECT (customer, total_cents) ON orders TO carry_reporter;
        ALTER TABLE orders ALTER COLUMN customer SET STATISTICS 500;
        ALTER TABLE orders SET (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.05);
        COMMENT ON TABLE orders IS 'Orders, as the DBA describes them';
        COMMENT ON COLUMN orders.customer IS 'Who ordered';
        ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
        CREATE POLICY dba_reporter_sees_eu ON orders FOR SELECT TO carry_reporter USING (region = 'eu');
        ALTER TABLE orders ALTER COLUMN id SET CACHE 20;
        CREATE STATISTICS dba_customer_region (dependencies) ON customer, region FROM orders;
        CLUSTER orders USING dba_customer_total;
        CREATE VIEW dba_report AS SELECT customer, sum(total_cents) AS spent FROM orders GROUP BY customer;
        CREATE VIEW dba_top AS SELECT * FROM dba_report ORDER BY spent DESC LIMIT 3;
        GRANT SELECT ON dba_report TO carry_reporter;
        COMMENT ON VIEW dba_report IS 'Spend per customer';
        CREATE MATERIALIZED VIEW dba_totals AS SELECT region, count(*) AS orders FROM orders GROUP BY region;
        CREATE INDEX dba_totals_region ON dba_totals (region);
        CREATE PUBLICATION dba_orders FOR TABLE orders WHERE (total_cents > 0);
        """

    /// Every hand-made object's definition, as the catalogue prints it, by name.
    static let definitions = """
        SELECT 'index ' || i.relname, pg_get_indexdef(i.oid) || coalesce(' ' || array_to_string(i.reloptions, ','), '') || CASE WHEN x.indisclustered THEN ' clustered' ELSE '' END
            || CASE WHEN x.indisreplident THEN ' replica identity' ELSE '' END
            FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = 'orders'::regclass AND i.relname LIKE 'dba%'
        UNION ALL SELECT 'constraint ' || conname, pg_get_constraintdef(oid) || ' ' || convalidated::text FROM pg_constraint WHERE conrelid = 'orders'::regclass AND conname LIKE 'dba%'
        UNION ALL SELECT 'trigger ' || tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'orders'::regclass AND tgname LIKE 'dba%'
        UNION ALL SELECT 'policy ' || polname, polcmd::text || ' ' || polroles::regrole[]::text || ' ' || pg_get_expr(polqual, polrelid) FROM pg_policy WHERE polrelid = 'orders'::regclass
        UNION ALL SELECT 'column ' || attname, coalesce(attacl::text, '') || ' ' || attstattarget || ' ' || coalesce(col_description(attrelid, attnum), '')
            FROM pg_attribute WHERE attrelid = 'orders'::regclass AND attname IN ('customer', 'total_cents')
        UNION ALL SELECT 'table', array_to_string(reloptions, ',') || ' ' || obj_description(oid, 'pg_class') || ' ' || relreplident::text || ' ' || relrowsecurity::text
            FROM pg_class WHERE oid = 'orders'::regclass
        UNION ALL SELECT 'sequence', seqcache::text FROM pg_sequence WHERE seqrelid = to_regclass(pg_get_serial_sequence('orders', 'id'))
        UNION ALL SELECT 'statistics ' || stxname, pg_get_statisticsobjdef(oid) FROM pg_statistic_ext WHERE stxrelid = 'orders'::regclass
        UNION ALL SELECT 'view ' || c.relname, pg_get_viewdef(c.oid) || ' ' || coalesce(c.relacl::text, '') || ' ' || coalesce(obj_description(c.oid, 'pg_class'), '')
            FROM pg_class c WHERE c.relname IN ('dba_report', 'dba_top', 'dba_totals')
        UNION ALL SELECT 'index ' || i.relname, pg_get_indexdef(i.oid) FROM pg_class i WHERE i.relname = 'dba_totals_region'
        UNION ALL SELECT 'publication ' || p.pubname, pg_get_expr(r.prqual, r.prrelid) FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
            WHERE r.prrelid = 'orders'::regclass
        ORDER BY 1
        """

    static func definitions(_ connection: PostgresConnection) throws -> [String: String] {
        var found: [String: String] = [:]
        for row in try connection.query(definitions) {
            if case .text(let name) = row[0], case .text(let definition) = row[1] { found[name] = definition }
        }
        return found
    }

    @Test func handMadeObjectsOutliveTheCopyWithTheirDefinitions() throws {
        let (connection, migrator) = try OnlineCopyTests.atVersion1(Self.v1, to: Self.v2)
        try connection.execute("INSERT INTO orders (customer, total_cents, region) SELECT 'c' || i, 500 + i, CASE WHEN i % 2 = 0 THEN 'eu' ELSE 'us' END FROM generate_series(1, 2000) AS i")
        try connection.execute(Self.handMade)
        let before = try Self.definitions(connection)
        #expect(before.count == 18, "\(before.keys.sorted())")

        var events: [Migrator.Event] = []
        try migrator.up { events.append($0) }
        let carrying = events.compactMap { if case .carrying(let objects) = $0 { objects } else { nil } }.flatMap { $0 }
        #expect(carrying.contains { $0.hasPrefix("index dba_big_orders on orders: built on the copy") }, "\(carrying)")
        #expect(carrying.contains { $0.hasPrefix("view public.dba_report: made again") }, "\(carrying)")
        #expect(carrying.contains { $0.hasPrefix("publication dba_orders") }, "\(carrying)")
        // Both versions run; the old version's writes meet the carried constraints on the copy too.
        try connection.execute("UPDATE orders SET total_cents = total_cents + 1 WHERE id <= 10")
        #expect(
            try connection.query("SELECT count(*) FROM pg_constraint WHERE conrelid = 'schemagen_2_orders'::regclass AND conname IN ('dba_positive', 'schemagen_2_c' || 'x')") == [[.integer(1)]])

        try migrator.up(options: .init(allowDestructive: true, complete: true)) { events.append($0) }
        #expect(try migrator.onlineState() == nil)
        let after = try Self.definitions(connection)
        for (name, definition) in before {
            #expect(after[name] == definition, "\(name) changed: \(definition) -> \(after[name] ?? "missing")")
        }
        #expect(try connection.query("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'orders'::regclass AND attname = 'total_cents'") == [[.text("bigint")]])
        #expect(try connection.query("SELECT count(*) FROM dba_totals") == [[.integer(2)]], "the materialized view is filled again")
        // The carried trigger and views work on the new table.
        try connection.execute("UPDATE orders SET total_cents = 99 WHERE id = 11")
        #expect(try connection.query("SELECT total FROM audit WHERE order_id = 11") == [[.integer(99)]])
        #expect(try connection.query("SELECT count(*) FROM dba_top") == [[.integer(3)]])
        // The server's warnings reach the caller: the test server has no logical replication.
        let warnings = events.compactMap { if case .serverWarning(let text) = $0 { text } else { nil } }
        #expect(warnings.allSatisfy { $0.contains("wal_level is insufficient") }, "\(warnings)")
    }

    /// What a DBA changes on the old table during the rollout is what the swap carries: a CHECK
    /// dropped stays dropped, an index made is there, a policy altered has its new definition, a
    /// grant made holds; the table clustered on its key, and a descending key sequence with its
    /// privileges, follow it.
    @Test func whatChangesDuringTheRolloutIsWhatTheSwapCarries() throws {
        let (connection, migrator) = try OnlineCopyTests.atVersion1(Self.v1, to: Self.v2)
        try connection.execute(
            """
            DO $$ BEGIN CREATE ROLE carry_reporter; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
            ALTER TABLE orders ALTER COLUMN id SET INCREMENT BY -1 SET MINVALUE -1000000;
            INSERT INTO orders (customer, total_cents, region) SELECT 'c' || i, 500 + i, 'eu' FROM generate_series(1, 300) AS i;
            ALTER TABLE orders ADD CONSTRAINT dba_positive CHECK (total_cents > 0);
            ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
            CREATE POLICY dba_region ON orders FOR SELECT TO carry_reporter USING (region = 'eu');
            GRANT USAGE ON SEQUENCE orders_id_seq TO carry_reporter;
            CLUSTER orders USING orders_pkey;
            """)
        try migrator.up()
        try connection.execute(
            """
            ALTER TABLE orders DROP CONSTRAINT dba_positive;
            CREATE INDEX dba_late ON orders (region);
            ALTER POLICY dba_region ON orders USING (region = 'us');
            GRANT SELECT ON orders TO carry_reporter;
            INSERT INTO orders (customer, total_cents, region) VALUES ('late', 5, 'us');
            """)
        try migrator.up(options: .init(allowDestructive: true, complete: true))
        #expect(try migrator.onlineState() == nil)
        #expect(try connection.query("SELECT count(*) FROM pg_constraint WHERE conrelid = 'orders'::regclass AND conname = 'dba_positive'") == [[.integer(0)]])
        #expect(try connection.query("SELECT pg_get_indexdef('dba_late'::regclass)") == [[.text("CREATE INDEX dba_late ON public.orders USING btree (region)")]])
        #expect(try connection.query("SELECT pg_get_expr(polqual, polrelid) FROM pg_policy WHERE polrelid = 'orders'::regclass") == [[.text("(region = 'us'::text)")]])
        #expect(try connection.query("SELECT has_table_privilege('carry_reporter', 'orders', 'SELECT')::int") == [[.integer(1)]])
        #expect(try connection.query("SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = 'orders'::regclass AND x.indisclustered") == [[.text("orders_pkey")]])
        #expect(
            try connection.query("SELECT seqincrement::int, seqmin::int FROM pg_sequence WHERE seqrelid = pg_get_serial_sequence('orders', 'id')::regclass") == [[.integer(-1), .integer(-1_000_000)]])
        #expect(try connection.query("SELECT has_sequence_privilege('carry_reporter', pg_get_serial_sequence('orders', 'id'), 'USAGE')::int") == [[.integer(1)]])
        let next = try connection.query("INSERT INTO orders (customer, total_cents) VALUES ('after', 1) RETURNING id")
        #expect(try connection.query("SELECT (min(id) = \(next[0][0]))::int FROM orders") == [[.integer(1)]], "the descending key goes on downward")
    }

    /// What uses a column the version drops, or keeps the old table from being dropped, stops
    /// expand before anything is made, each listed with what to do; `--drop-uncarried` drops
    /// them with a warning each, and the rest is carried.
    @Test func whatCannotBeCarriedStopsExpandUnlessItMayBeDropped() throws {
        let (connection, migrator) = try OnlineCopyTests.atVersion1(Self.v1, to: Self.v2)
        try connection.execute(
            """
            INSERT INTO orders (customer, total_cents, note) VALUES ('ada', 1500, 'gift');
            CREATE INDEX dba_noted ON orders (note) WHERE note IS NOT NULL;
            CREATE INDEX dba_kept ON orders (customer);
            CREATE VIEW dba_notes AS SELECT id, note FROM orders;
            CREATE FUNCTION dba_total() RETURNS bigint LANGUAGE sql BEGIN ATOMIC SELECT sum(total_cents) FROM orders; END;
            ALTER TABLE orders ADD CONSTRAINT dba_note_unique UNIQUE (note);
            CREATE PUBLICATION dba_noted FOR TABLE orders WHERE (note IS NOT NULL);
            CREATE FUNCTION dba_label(o orders) RETURNS text LANGUAGE sql AS 'SELECT o.customer';
            """)
        #expect {
            try migrator.up()
        } throws: { error in
            let text = "\(error)"
            return text.contains("index dba_noted on orders: it uses a column this version renames or drops")
                && text.contains("view public.dba_notes: it uses a column this version renames or drops")
                && text.contains("function dba_total(): its body names the table")
                && text.contains("unique constraint dba_note_unique on orders: it uses a column this version renames or drops")
                && text.contains("publication dba_noted: its column list or row filter has a column this version renames or drops")
                && text.contains("function dba_label(orders): it depends on the table (its rows' type")
                && text.contains("--drop-uncarried") && !text.contains("dba_kept")
        }
        #expect(try connection.query("SELECT (to_regclass('schemagen_2_orders') IS NULL)::int") == [[.integer(1)]], "nothing was made")

        var events: [Migrator.Event] = []
        try migrator.up(options: .init(dropUncarried: true)) { events.append($0) }
        let dropped = events.compactMap { if case .droppingUncarried(let objects) = $0 { objects } else { nil } }.flatMap { $0 }
        #expect(dropped.count == 6, "\(dropped)")
        try migrator.up(options: .init(allowDestructive: true, complete: true, dropUncarried: true)) { events.append($0) }
        let warnings = events.compactMap { if case .serverWarning(let text) = $0 { text } else { nil } }
        #expect(warnings.contains { $0.contains("dropped function dba_total()") } && warnings.contains { $0.contains("dropped view public.dba_notes") }, "\(warnings)")
        #expect(try connection.query("SELECT count(*) FROM pg_class WHERE relname IN ('dba_noted', 'dba_notes', 'dba_note_unique')") == [[.integer(0)]])
        #expect(try connection.query("SELECT count(*) FROM pg_publication_rel WHERE prrelid = 'orders'::regclass") == [[.integer(0)]])
        #expect(warnings.contains { $0.contains("dropped function dba_label(orders)") }, "\(warnings)")
        #expect(try connection.query("SELECT count(*) FROM pg_class WHERE relname = 'dba_kept'") == [[.integer(1)]])
    }
}
