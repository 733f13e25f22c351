import Foundation
import MigrationFiles
import MigrationPlanner
import MigratorCore
import MigratorPostgres
import PostgresKit
import RelationalModel
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

/// Online migrations as a DBA meets them on a busy database (issue 37): the shop of three
/// versions (a rename, a column made required, int to bigint, indexes and a unique; then a table
/// split and a drop), run by `migrate` as a process against the test server.
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct OnlineSafetyTests {
    static let migrate = BuiltTool("migrate")

    static let v1 = """
        schema: Shop
        version: 1
        entities:
          Customer:
            attributes:
              name: String
              phone: String?
          Product:
            attributes:
              title: String
              price: Int32
              stock: Int32?
          Order:
            table: orders
            attributes:
              quantity: Int32
              status: String?
            relationships:
              customer: Customer
              product: Product

        """

    static let v2 = v1.replacingOccurrences(of: "version: 1", with: "version: 2")
        .replacingOccurrences(of: "      name: String\n      phone: String?\n", with: "      name: {type: String, unique: true}\n      phone: String?\n")
        .replacingOccurrences(of: "      title: String\n", with: "      name: {type: String, renamedFrom: title}\n")
        .replacingOccurrences(
            of: "      quantity: Int32\n      status: String?\n", with: "      quantity: {type: Int64, indexed: true}\n      status: {type: String, default: pending, backfill: pending}\n")

    static let v3 = v2.replacingOccurrences(of: "version: 2", with: "version: 3")
        .replacingOccurrences(
            of: "      name: {type: String, unique: true}\n      phone: String?\n",
            with: """
                      name: {type: String, unique: true}
                    relationships:
                      contact: {to: CustomerContact?, inverse: customer, deleteRule: cascade}
                  CustomerContact:
                    table: customer_contacts
                    attributes:
                      phone: {type: String?, movedFrom: Customer.phone}
                    relationships:
                      customer: {to: Customer, inverse: contact}

                """
        )
        .replacingOccurrences(of: "      price: Int32\n      stock: Int32?\n", with: "      price: Int32\n")

    /// The three versions planned online into a temporary `Migrations/Shop/postgres`.
    static func migrations() throws -> String {
        let folder = MigrationDirectory(path: temporaryFolder().appendingPathComponent("Migrations/Shop/postgres").path)
        func snapshot(_ yaml: String) throws -> SchemaSnapshot {
            SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "shop.yaml", text: yaml)).schema))
        }
        let (s1, s2, s3) = (try snapshot(v1), try snapshot(v2), try snapshot(v3))
        try folder.write(Migration(from: nil, to: s1, renderer: PostgresRenderer(), online: true), as: .init(number: 1, name: "create_shop"))
        try folder.write(Migration(from: s1, to: s2, renderer: PostgresRenderer(), online: true), as: .init(number: 2, name: "rename_and_retype"))
        try folder.write(Migration(from: s2, to: s3, renderer: PostgresRenderer(), online: true), as: .init(number: 3, name: "split_customer"))
        return folder.path
    }

    static func server() throws -> PostgresServer { try #require(PostgresServer.shared, "the PostgreSQL test server did not start") }

    /// A database at version 1 with `customers`, `products` and `orders` rows.
    static func shop(_ path: String, customers: Int = 500, products: Int = 100, orders: Int = 5_000) throws -> String {
        let url = try server().createDatabase()
        let up = try migrate.run(["up", "1", "--database", url, "--dir", path])
        #expect(up.status == 0, "\(up.error)")
        try PostgresConnection(url).execute(
            """
            INSERT INTO customer (name, phone) SELECT 'customer ' || i, CASE WHEN i % 4 = 0 THEN NULL ELSE '+1-555-' || i END FROM generate_series(1, \(customers)) AS i;
            INSERT INTO product (title, price, stock) SELECT 'product ' || i, i, i FROM generate_series(1, \(products)) AS i;
            INSERT INTO orders (quantity, status, customer_id, product_id)
                SELECT i % 7, CASE WHEN i % 3 = 0 THEN NULL ELSE 'paid' END, 1 + i % \(customers), 1 + i % \(products) FROM generate_series(1, \(orders)) AS i;
            """)
        return url
    }

    static func schemas(_ url: String) throws -> [String] {
        try PostgresConnection(url).query("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'shop_v%' ORDER BY 1").compactMap {
            if case .text(let name)? = $0.first { name } else { nil }
        }
    }

    // MARK: - The backfill's plan

    /// Expand's transactions before its first backfill, as `migrate up` runs them.
    static func runUntilTheBackfill(_ sections: [OnlinePhase.Section], on connection: PostgresConnection) throws {
        for section in sections {
            if case .backfill = section { return }
            if case .transaction(let sql, _) = section { try connection.execute(sql) }
        }
    }

    /// The server's plan for a generated copy batch reads the batch's rows by the key's index,
    /// on both tables. (Without the range on the copy's side too, PostgreSQL hashed the whole
    /// copy once per batch: a copy of 1,000,000 rows took 13 s instead of 2.5 s.)
    @Test func aBackfillBatchReadsItsRowsByTheKeyNotTheWholeTable() throws {
        let v1 = "schema: Stock\nversion: 1\nentities:\n  Item:\n    attributes:\n      name: String\n      quantity: Int32\n"
        let v2 = v1.replacingOccurrences(of: "version: 1", with: "version: 2").replacingOccurrences(of: "quantity: Int32", with: "quantity: Int64")
        func snapshot(_ yaml: String) throws -> SchemaSnapshot {
            SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "stock.yaml", text: yaml)).schema))
        }
        let sections = try #require(Migration(from: try snapshot(v1), to: try snapshot(v2), renderer: PostgresRenderer(), online: true).online).expand.sections
        let update = try #require(sections.compactMap { if case .backfill(_, let update) = $0 { update } else { nil } }.first)
        let connection = try PostgresConnection(try Self.server().createDatabase())
        try connection.execute(
            """
            CREATE TABLE item (id bigserial PRIMARY KEY, name text NOT NULL, quantity integer NOT NULL);
            INSERT INTO item (name, quantity) SELECT 'item ' || i, i FROM generate_series(1, 100000) AS i;
            ANALYZE item;
            """)
        try Self.runUntilTheBackfill(sections, on: connection)
        // Half copied, as midway through.
        try connection.execute("INSERT INTO schemagen_2_item SELECT id, name, quantity FROM item WHERE id <= 50000; ANALYZE schemagen_2_item")
        try connection.execute("PREPARE batch (bigint, bigint) AS \(update.trimmingCharacters(in: CharacterSet(charactersIn: ";\n")))")
        let plan = try connection.query("EXPLAIN EXECUTE batch (40001, 45000)").compactMap { if case .text(let line)? = $0.first { line } else { nil } }.joined(separator: "\n")
        #expect(!plan.contains("Seq Scan"), "\(plan)")
        #expect(plan.contains("Index Scan using item_pkey on item"), "\(plan)")
        #expect(plan.contains("schemagen_2_item_pkey"), "\(plan)")
    }

    // MARK: - No implicit contract

    @Test func aPlainUpNeverContractsAndTheDryRunListsEveryPhase() throws {
        let path = try Self.migrations()
        let url = try Self.shop(path)
        let base = ["--database", url, "--dir", path]

        // From version 1 with two pending: the dry run lists the expand of 0002 and says why 0003 waits.
        let dry = try Self.migrate.run(["up", "--dry-run"] + base)
        #expect(dry.status == 0, "\(dry.error)")
        #expect(dry.output.contains("-- expand: \(path)/0002_rename_and_retype.up.sql"), "\(dry.output)")
        #expect(!dry.output.contains("0003_split_customer") && !dry.output.contains("-- contract:"), "\(dry.output)")
        #expect(dry.error.contains("0003_split_customer was not applied: migration 0002_rename_and_retype is expanded (shop_v1 and shop_v2 are served)"), "\(dry.error)")

        // The real run expands 0002, then refuses to go on: v1 apps may still run.
        let up = try Self.migrate.run(["up"] + base)
        #expect(up.status == 1, "\(up.output)\(up.error)")
        #expect(up.output.contains("expanded 0002_rename_and_retype"), "\(up.output)")
        #expect(up.error.contains("`migrate complete` contracts it"), "\(up.error)")
        #expect(try Self.schemas(url) == ["shop_v1", "shop_v2"], "nothing contracted")
        let again = try Self.migrate.run(["up"] + base)
        #expect(again.status == 1 && again.error.contains("is expanded (shop_v1 and shop_v2 are served)"), "\(again.error)")
        #expect(
            try PostgresConnection(url).query("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'customer' AND column_name = 'phone'") == [[.integer(1)]])

        // --complete lists contract and expand phases in order, and a contract that loses data
        // needs --allow-destructive: refused before anything runs.
        let completeDry = try Self.migrate.run(["up", "--complete", "--allow-destructive", "--dry-run"] + base)
        let phases = completeDry.output.split(separator: "\n").filter { $0.hasPrefix("-- contract: ") || $0.hasPrefix("-- expand: ") }.map { String($0.prefix(20)) }
        #expect(phases == ["-- contract: \(path)".prefix(20), "-- expand: \(path)".prefix(20), "-- contract: \(path)".prefix(20)].map(String.init), "\(completeDry.output)")
        let refused = try Self.migrate.run(["up", "--complete"] + base)
        #expect(refused.status == 1 && refused.error.contains("0003_split_customer.contract.sql drops data the previous version wrote"), "\(refused.error)")
        #expect(try Self.schemas(url) == ["shop_v1", "shop_v2"], "nothing ran")
        let finished = try Self.migrate.run(["up", "--complete", "--allow-destructive"] + base)
        #expect(finished.status == 0, "\(finished.error)")
        #expect(try Self.schemas(url) == ["shop_v3"])
    }

    // MARK: - Under load

    /// The DBA's scenario: the old version's app, four pgbench clients whose transactions each
    /// touch orders, products and customers through its views, runs while `migrate up` expands
    /// version 2 with the default lock budget; then the new version's app runs the same kind of
    /// transactions through its views while `migrate complete` contracts. Both phases succeed and
    /// no app transaction fails (before, the views re-created in one transaction deadlocked with
    /// them, and a deadlock was not retried).
    @Test func expandAndCompleteUnderAMultiTableLoadFailNoAppTransaction() async throws {
        let path = try Self.migrations()
        let url = try Self.shop(path, customers: 5_000, products: 1_000, orders: 50_000)
        let folder = temporaryFolder()
        /// Runs pgbench's script as version `version`'s app for `seconds`, and `phase` while it runs.
        func load(version: Int, product: String, seconds: Int, during phase: [String]) async throws -> (status: Int32, output: String, phase: BuiltTool.Run) {
            let script = folder.appendingPathComponent("app-v\(version).pgb")
            try """
            \\set o random(1, 50000)
            \\set p random(1, 1000)
            \\set c random(1, 5000)
            BEGIN;
            UPDATE orders SET quantity = quantity + 1 WHERE id = :o;
            UPDATE product SET price = price + 1 WHERE id = :p;
            SELECT \(product) FROM product WHERE id = :p;
            SELECT name FROM customer WHERE id = :c;
            INSERT INTO orders (quantity, status, customer_id, product_id) VALUES (1, 'new', :c, :p);
            END;

            """.write(to: script, atomically: true, encoding: .utf8)
            let log = folder.appendingPathComponent("pgbench-v\(version).log")
            return try await offThePool {
                // Its output goes to a file: a pipe read only at the end could fill and stall it.
                // pgbench waits on its sockets with select(), which breaks on descriptors numbered
                // past 1,024: the test process's many open ones are closed before it starts.
                var environment = ProcessInfo.processInfo.environment
                environment["PGOPTIONS"] = "-c search_path=shop_v\(version),public"
                let pgbench = try SpawnedProgram(
                    "/bin/bash",
                    [
                        "-c", "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done; exec \"$@\"", "pgbench",
                        "pgbench", "-n", "-c", "4", "-j", "2", "-T", "\(seconds)", "-f", script.path, url,
                    ], environment: environment, output: log.path)
                Thread.sleep(forTimeInterval: 3)
                let run = try Self.migrate.run(phase + ["--database", url, "--dir", path])
                let status = pgbench.wait(timeoutSeconds: Double(seconds * 4))
                return (status, try String(contentsOf: log, encoding: .utf8), run)
            }
        }
        // The old version's load runs 60 s, as the DBA's did; the new version's 25 s, around complete.
        for (version, product, phase, done, seconds) in [
            (1, "title", ["up", "--to", "2"], "expanded 0002_rename_and_retype", 60), (2, "name", ["complete"], "0002_rename_and_retype", 25),
        ] {
            let run = try await load(version: version, product: product, seconds: seconds, during: phase)
            #expect(run.phase.status == 0, "\(phase): \(run.phase.output)\(run.phase.error)")
            #expect(run.phase.output.contains(done), "\(phase): \(run.phase.output)")
            #expect(run.status == 0, "pgbench of version \(version): \(run.output)")
            #expect(run.output.contains("number of failed transactions: 0 (0.000%)"), "version \(version): \(run.output)")
            let processed = run.output.split(separator: "\n").first { $0.hasPrefix("number of transactions actually processed") } ?? ""
            #expect(!processed.isEmpty, "\(run.output)")
        }
        #expect(try Self.schemas(url) == ["shop_v2"])
    }

    // MARK: - Table splits

    /// The v2 app writes phones through expand (while the rows are copied) and after it, the v3
    /// app writes contacts: after complete every phone is where the new version reads it, each
    /// the last one written.
    @Test func aTableSplitKeepsEveryPhoneEitherVersionWrites() async throws {
        let path = try Self.migrations()
        let url = try Self.shop(path, customers: 20_000, orders: 100)
        _ = try Self.migrate.run(["up", "--to", "2", "--complete", "--database", url, "--dir", path])
        let stop = Flag(), stopped = Flag()
        // The v2 app: customers 1...10,000 get a new phone over and over, through its views.
        let writer = Thread {
            defer { stopped.set() }
            guard let app = try? PostgresConnection(url) else { return }
            try? app.execute("SET search_path TO shop_v2, public")
            var round = 0
            while !stop.isSet {
                round += 1
                let id = 1 + (round * 7_919) % 10_000
                _ = try? app.query("UPDATE customer SET phone = $1 WHERE id = $2", [.text("v2-\(round)"), .integer(Int64(id))])
            }
        }
        writer.start()
        let expand = try await offThePool { try Self.migrate.run(["up", "--database", url, "--dir", path]) }
        #expect(expand.status == 0, "\(expand.error)")
        // Both versions now write: the v3 app changes contacts of customers 10,001...12,000.
        let v3 = try PostgresConnection(url)
        try v3.execute("SET search_path TO shop_v3, public")
        try v3.execute("UPDATE customer_contacts SET phone = 'v3-' || customer_id WHERE customer_id BETWEEN 10001 AND 12000")
        try v3.execute(
            "INSERT INTO customer_contacts (customer_id, phone) SELECT id, 'v3-new-' || id FROM customer WHERE id BETWEEN 10001 AND 12000 AND NOT EXISTS (SELECT 1 FROM customer_contacts c WHERE c.customer_id = customer.id)"
        )
        try await offThePool {
            Thread.sleep(forTimeInterval: 0.5)
            stop.set()
            while !stopped.isSet { Thread.sleep(forTimeInterval: 0.01) }
        }
        // What the old version last wrote, as it reads it.
        let written = try PostgresConnection(url).query("SELECT id, phone FROM customer WHERE phone IS NOT NULL ORDER BY id")
        #expect(written.count > 15_000)
        let complete = try await offThePool { try Self.migrate.run(["complete", "--database", url, "--dir", path]) }
        #expect(complete.status == 0, "\(complete.error)")
        let contacts = try PostgresConnection(url).query("SELECT customer_id, phone FROM customer_contacts WHERE phone IS NOT NULL ORDER BY customer_id")
        #expect(contacts == written, "every phone written through either version is in customer_contacts, the last one written")
        #expect(try PostgresConnection(url).query("SELECT count(*) FROM customer_contacts WHERE phone LIKE 'v3-%' AND customer_id BETWEEN 10001 AND 12000") == [[.integer(2_000)]])
    }

    /// Rollback after the new version wrote: the old version's column already holds the newest
    /// values (the triggers kept it), and nothing older is copied over them.
    @Test func rollingBackASplitKeepsTheNewestValues() throws {
        let path = try Self.migrations()
        let url = try Self.shop(path, customers: 1_000, orders: 10)
        _ = try Self.migrate.run(["up", "--to", "2", "--complete", "--database", url, "--dir", path])
        #expect(try Self.migrate.run(["up", "--database", url, "--dir", path]).status == 0)
        let v3 = try PostgresConnection(url)
        try v3.execute("SET search_path TO shop_v3, public")
        try v3.execute("UPDATE customer_contacts SET phone = 'newest' WHERE customer_id <= 100")
        try v3.execute("DELETE FROM customer_contacts WHERE customer_id BETWEEN 101 AND 110")
        let rollback = try Self.migrate.run(["rollback", "--database", url, "--dir", path])
        #expect(rollback.status == 0, "\(rollback.error)")
        let old = try PostgresConnection(url)
        // Customers 1...100 with a contact (three in four) have its newest phone, none an older one.
        #expect(try old.query("SELECT count(*) FROM customer WHERE id <= 100 AND phone = 'newest'") == [[.integer(75)]])
        #expect(try old.query("SELECT count(*) FROM customer WHERE id <= 100 AND phone <> 'newest'") == [[.integer(0)]])
        #expect(try old.query("SELECT count(*) FROM customer WHERE id BETWEEN 101 AND 110 AND phone IS NOT NULL") == [[.integer(0)]])
        #expect(try old.query("SELECT to_regclass('customer_contacts') IS NULL") == [[.integer(1)]])
    }

    @Test func aSplitThatCannotBeKeptInStepIsRefusedOnline() throws {
        let toMany = Self.v3.replacingOccurrences(
            of: "contact: {to: CustomerContact?, inverse: customer, deleteRule: cascade}", with: "contacts: {to: \"[CustomerContact]\", inverse: customer, deleteRule: cascade}"
        )
        .replacingOccurrences(of: "customer: {to: Customer, inverse: contact}", with: "customer: {to: Customer, inverse: contacts}")
        let s2 = SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "shop.yaml", text: Self.v2)).schema))
        let s3 = SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "shop.yaml", text: toMany)).schema))
        let plan = try #require(Migration(from: s2, to: s3, renderer: PostgresRenderer(), online: true).online)
        #expect(plan.refused.count == 1 && plan.refused[0].contains("several customer_contacts rows may point at one customer row"), "\(plan.refused)")
    }

    // MARK: - NULL through a new version

    @Test func anExplicitNullThroughTheNewVersionIsRefusedInBothPhases() throws {
        let path = try Self.migrations()
        let url = try Self.shop(path, customers: 10, orders: 10)
        #expect(try Self.migrate.run(["up", "--to", "2", "--database", url, "--dir", path]).status == 0)
        let v2 = try PostgresConnection(url)
        try v2.execute("SET search_path TO shop_v2, public")
        #expect(throws: PostgresError.self) { try v2.execute("INSERT INTO orders (quantity, status, customer_id, product_id) VALUES (1, NULL, 1, 1)") }
        try v2.execute("INSERT INTO orders (quantity, customer_id, product_id) VALUES (1002, 1, 1)")
        #expect(try v2.query("SELECT status FROM orders WHERE quantity = 1002") == [[.text("pending")]], "an omitted status takes version 2's default")
        // The old version may still write NULL: version 2 reads its backfill value.
        let v1 = try PostgresConnection(url)
        try v1.execute("SET search_path TO shop_v1, public")
        try v1.execute("INSERT INTO orders (quantity, status, customer_id, product_id) VALUES (1003, NULL, 1, 1)")
        #expect(try v2.query("SELECT status FROM orders WHERE quantity = 1003") == [[.text("pending")]])
        #expect(try Self.migrate.run(["complete", "--database", url, "--dir", path]).status == 0)
        #expect(throws: PostgresError.self) { try v2.execute("INSERT INTO orders (quantity, status, customer_id, product_id) VALUES (4, NULL, 1, 1)") }
    }

    // MARK: - Backfills

    /// Under generic plans (a pooler's prepared statements, `plan_cache_mode`), each batch still
    /// reads a range of the key's index: no `$1 IS NULL OR` predicate turns it into a filter.
    @Test func aBackfillBatchReadsTheKeyIndexUnderAGenericPlan() throws {
        let path = try Self.migrations()
        let url = try Self.shop(path, customers: 10, orders: 20_000)
        let text = try String(contentsOfFile: path + "/0002_rename_and_retype.up.sql", encoding: .utf8)
        guard case .backfill(let backfill, let update)? = try OnlinePhase.parse(text).sections.first(where: { if case .backfill = $0 { true } else { false } }) else {
            Issue.record("no backfill section")
            return
        }
        #expect(backfill.inclusive && !update.contains("IS NULL OR"))
        // The copy exists once the sections before ran.
        let connection = try PostgresConnection(url)
        try Self.runUntilTheBackfill(try OnlinePhase.parse(text).sections, on: connection)
        try connection.execute("ANALYZE orders")
        try connection.execute("SET plan_cache_mode = force_generic_plan; PREPARE batch(bigint, bigint) AS \(update.trimmingCharacters(in: CharacterSet(charactersIn: ";\n")))")
        let plan = try connection.query("EXPLAIN EXECUTE batch(1000, 1999)").compactMap { if case .text(let line)? = $0.first { line } else { nil } }.joined(separator: "\n")
        #expect(plan.contains("Index") && plan.contains("id >= $1") && plan.contains("id <= $2"), "\(plan)")
        #expect(!plan.contains("IS NULL"), "\(plan)")
    }

    /// An app holding one row locked while a backfill runs: the backfill passes it by, finishes
    /// the rest, names the holder, and writes the row once it is free; held past the retries,
    /// the section fails naming it, every other row done, and the same command resumes.
    @Test func aRowHeldByAnAppIsPassedByNamedAndDoneWhenFree() async throws {
        let path = try Self.migrations()
        for held in ["released", "kept"] {
            let url = try Self.shop(path, customers: 10, orders: 5_000)
            let created = try MigrationScriptLoader.load(directory: path)[0]
            let backfill = Self.backfillOnly()
            let outcome = try await offThePool { () throws -> (events: [String], error: String?) in
                // The app: holds order 2500 from before the backfill; lets it go after 1.5 s, or
                // only once the migrator gave up.
                let locked = DispatchSemaphore(value: 0), finished = Flag()
                let app = Thread {
                    let holder = try? PostgresConnection(url + "?application_name=order-editor")
                    try? holder?.execute("BEGIN; SELECT * FROM orders WHERE id = 2500 FOR UPDATE")
                    locked.signal()
                    if held == "released" { Thread.sleep(forTimeInterval: 1.5) } else { while !finished.isSet { Thread.sleep(forTimeInterval: 0.05) } }
                    try? holder?.execute("COMMIT")
                }
                app.start()
                locked.wait()
                defer { finished.set() }
                let migrator = Migrator(database: PostgresMigrationDatabase(try PostgresConnection(url)), schema: "Shop", scripts: [created, backfill])
                let events = EventLines()
                do {
                    try migrator.up(options: .init(lockRetries: held == "released" ? 20 : 2)) { event in
                        if case .rowsHeld(let table, let keys, let holders, _) = event { events.append("\(table) \(keys.joined(separator: ",")) \(holders.joined(separator: "; "))") }
                    }
                    return (events.lines, nil)
                } catch {
                    return (events.lines, "\(error)")
                }
            }
            let remaining = try PostgresConnection(url).query("SELECT count(*) FROM orders WHERE status IS DISTINCT FROM 'checked'")
            let report = outcome.events.first ?? ""
            #expect(report.hasPrefix("orders 2500 pid "), "\(outcome.events)")
            #expect(report.contains("'order-editor', idle in transaction"), "\(outcome.events)")
            if held == "released" {
                #expect(outcome.error == nil, "\(outcome.error ?? "")")
                #expect(remaining == [[.integer(0)]])
            } else {
                let message = try #require(outcome.error)
                #expect(message.contains("the backfill of orders is done but for 1 row (id 2500) that apps kept locked through 3 attempts, held by pid "), "\(message)")
                #expect(remaining == [[.integer(1)]], "every other row is done")
            }
        }
    }

    /// A hand-written online migration whose expand is one backfill of every order's status.
    static func backfillOnly() -> MigrationScript {
        let header = MigrationHeader(schema: "Shop", dialect: "postgres", direction: .up, fromVersion: 1, toVersion: 2, runsInTransaction: true, online: .expand)
        var script = MigrationScript(
            version: 2, name: "mark_orders",
            up: header.text + "\n-- section: backfill {\"batch\":1000,\"bounds\":\"inclusive\",\"key\":\"id\",\"table\":\"orders\",\"type\":\"bigint\"}\n"
                + "UPDATE \"orders\" SET \"status\" = 'checked' WHERE \"id\" IN (SELECT \"id\" FROM \"orders\" WHERE \"id\" >= $1::bigint AND \"id\" <= $2::bigint AND (\"status\" IS DISTINCT FROM 'checked') FOR UPDATE SKIP LOCKED);\n",
            down: "")
        script.contract = ""
        return script
    }

    // MARK: - Status and messages

    /// `status` while a backfill runs says RUNNING with its progress; after an interrupt it says
    /// INTERRUPTED, the rows done and how to resume; a resumed run keeps `startedAt` and records
    /// `resumedAt` apart.
    @Test func statusShowsBackfillProgressAndTellsRunningFromInterrupted() async throws {
        let path = try Self.migrations()
        let url = try Self.shop(path, customers: 10, orders: 20_000)
        let scripts = Array(try MigrationScriptLoader.load(directory: path).prefix(2))
        @Sendable func status(json: Bool = true) throws -> String {
            try Self.migrate.run(["status", "--database", url, "--dir", path] + (json ? ["--format", "json"] : [])).output
        }
        /// Runs `up` until `stopAfter` backfill batches, then cancels; what status said at batch 2.
        func runUp(stopAfter: Int) async throws -> (whileRunning: String, error: String) {
            try await offThePool {
                let migrator = Migrator(database: PostgresMigrationDatabase(try PostgresConnection(url)), schema: "Shop", scripts: scripts)
                var batches = 0
                var whileRunning = ""
                do {
                    // Batches of the file's 1,000 rows, not sized to a time target: the counts
                    // below are whole batches.
                    try migrator.up(options: Migrator.Options(batchTargetMilliseconds: 0)) { event in
                        guard case .backfilled = event else { return }
                        batches += 1
                        if batches == 2 { whileRunning = (try? status(json: false)) ?? "" }
                        if batches == stopAfter { migrator.cancellation.cancel() }
                    }
                    return (whileRunning, "")
                } catch {
                    return (whileRunning, "\(error)")
                }
            }
        }
        func online(_ text: String) throws -> [String: Any] {
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
            return try #require(rows.first { $0["version"] as? Int == 2 }?["online"] as? [String: Any], "\(text)")
        }

        let first = try await runUp(stopAfter: 5)
        #expect(first.whileRunning.contains("EXPANDING since ") && first.whileRunning.contains("RUNNING in backend pid "), "\(first.whileRunning)")
        #expect(first.whileRunning.contains("backfill of orders: 2000 of about "), "\(first.whileRunning)")
        #expect(first.error.contains("was cancelled and rolled back; what finished before it stays applied"), "\(first.error)")
        #expect(first.error.contains("run the same command (`up`) to resume there"), "\(first.error)")
        let interrupted = try online(try status())
        #expect(interrupted["state"] as? String == "interrupted")
        #expect(interrupted["resumedAt"] is NSNull)
        let backfill = try #require(interrupted["backfill"] as? [String: Any])
        #expect(backfill["table"] as? String == "orders" && backfill["rowsDone"] as? Int == 5_000, "\(backfill)")
        #expect((15_000...25_000).contains(backfill["rowsEstimate"] as? Int ?? 0), "\(backfill)")
        #expect((backfill["rowsPerSecond"] as? Double ?? 0) > 0 && (backfill["secondsLeft"] as? Double ?? -1) >= 0, "\(backfill)")
        #expect(try status(json: false).contains("INTERRUPTED: `migrate up` resumes it"))

        let second = try await runUp(stopAfter: 2)
        #expect(second.error.contains("cancelled"), "\(second.error)")
        let resumed = try online(try status())
        #expect(resumed["startedAt"] as? String == interrupted["startedAt"] as? String, "the first start stays")
        #expect(resumed["resumedAt"] as? String != nil, "\(resumed)")
        #expect((resumed["backfill"] as? [String: Any])?["rowsDone"] as? Int == 7_000, "a resumed run goes on counting")

        let last = try await runUp(stopAfter: 0)
        #expect(last.error.isEmpty, "\(last.error)")
        let expanded = try online(try status())
        #expect(expanded["phase"] as? String == "expanded" && expanded["backfill"] == nil && expanded["state"] == nil, "\(expanded)")
    }

    // MARK: - Versions follow the schema

    /// A hand-written migration after an online one takes a number but no schema version: the
    /// versions served stay the schema's, as the database's schemas of views name them.
    @Test func aHandWrittenMigrationShiftsNoServedVersion() throws {
        let path = try Self.migrations()
        let url = try Self.shop(path, customers: 10, orders: 10)
        #expect(try Self.migrate.run(["up", "--to", "2", "--complete", "--database", url, "--dir", path]).status == 0)
        // 0004 by hand, between versions 2 and 3 as `new-migration` writes it (from 2 to 2).
        let folder = MigrationDirectory(path: path)
        let entries = folder.entries()
        let three = try #require(entries.last)
        let text = { (name: String) in try String(contentsOfFile: path + "/" + name, encoding: .utf8) }
        let (up3, down3, contract3, snapshot3) = (try text(three.upFile), try text(three.downFile), try text(three.contractFile), try text(three.snapshotFile))
        let snapshot2 = try text(entries[1].snapshotFile)
        for name in [three.upFile, three.downFile, three.contractFile, three.snapshotFile, three.sourceFile] { try? FileManager.default.removeItem(atPath: path + "/" + name) }
        try folder.rehash()
        let header = { (direction: MigrationHeader.Direction) in
            MigrationHeader(schema: "Shop", dialect: "postgres", direction: direction, fromVersion: 2, toVersion: 2).text
        }
        try folder.write(
            up: header(.up) + "CREATE INDEX orders_status_idx ON orders (status);\n", down: header(.down) + "DROP INDEX orders_status_idx;\n", snapshot: Data(snapshot2.utf8),
            as: .init(number: 3, name: "index_status"))
        try folder.write(up: up3, down: down3, contract: contract3, snapshot: Data(snapshot3.utf8), as: .init(number: 4, name: "split_customer"))
        let base = ["--database", url, "--dir", path]
        #expect(try Self.migrate.run(["up", "--to", "3"] + base).status == 0)
        func served() throws -> [String] {
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(try Self.migrate.run(["status", "--format", "json"] + base).output.utf8)) as? [[String: Any]])
            return rows.compactMap { ($0["online"] as? [String: Any])?["served"] as? [String] }.flatMap { $0 }
        }
        #expect(try Self.schemas(url) == ["shop_v2"])
        let up = try Self.migrate.run(["up"] + base)
        #expect(up.status == 0, "\(up.error)")
        #expect(try Self.schemas(url) == ["shop_v2", "shop_v3"])
        #expect(try served() == ["shop_v2", "shop_v3"], "status names the schemas the database has")
        #expect(try Self.migrate.run(["status"] + base).output.contains("EXPANDED: serving shop_v2 and shop_v3"))
    }

    // MARK: - Privileges

    /// `grants:` become GRANTs on the tables and on each version's schema of views, so an app
    /// role reaches every version it is served; a role that may only read the history tables
    /// can run `status`.
    @Test func grantsReachTheTablesAndEveryVersionsViews() throws {
        let server = try Self.server()
        try server.runPSQL(
            server.url(),
            "DO $$ BEGIN "
                + ["shop_app", "shop_reader", "shop_auditor"].map { "IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\($0)') THEN CREATE ROLE \($0) LOGIN; END IF;" }.joined(separator: " ")
                + " END $$")
        let granted = { (yaml: String) in yaml.replacingOccurrences(of: "schema: Shop\n", with: "schema: Shop\ngrants: {shop_app: write, shop_reader: read}\n") }
        let folder = MigrationDirectory(path: temporaryFolder().appendingPathComponent("Migrations/Shop/postgres").path)
        let s1 = SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "shop.yaml", text: granted(Self.v1))).schema))
        let s2 = SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "shop.yaml", text: granted(Self.v2))).schema))
        #expect(s1.grants == [GrantSnapshot(role: "shop_app", access: .write), GrantSnapshot(role: "shop_reader", access: .read)])
        try folder.write(Migration(from: nil, to: s1, renderer: PostgresRenderer(), online: true), as: .init(number: 1, name: "create_shop"))
        try folder.write(Migration(from: s1, to: s2, renderer: PostgresRenderer(), online: true), as: .init(number: 2, name: "rename_and_retype"))
        let url = try server.createDatabase()
        let base = ["--database", url, "--dir", folder.path]
        #expect(try Self.migrate.run(["up", "1"] + base).status == 0)
        func connect(_ role: String, version: Int) throws -> PostgresConnection {
            let connection = try PostgresConnection(url.replacingOccurrences(of: "postgres@", with: "\(role)@"))
            try connection.execute("SET search_path TO shop_v\(version), public")
            return connection
        }
        try connect("shop_app", version: 1).execute("INSERT INTO customer (name) VALUES ('Ada')")
        #expect(try connect("shop_reader", version: 1).query("SELECT name FROM customer") == [[.text("Ada")]])
        #expect(throws: PostgresError.self) { try connect("shop_reader", version: 1).execute("INSERT INTO customer (name) VALUES ('Eve')") }
        #expect(throws: PostgresError.self) { try connect("shop_auditor", version: 1).query("SELECT name FROM customer") }

        #expect(try Self.migrate.run(["up"] + base).status == 0)
        try connect("shop_app", version: 2).execute("INSERT INTO product (name, price) VALUES ('tea', 3)")
        #expect(try connect("shop_reader", version: 2).query("SELECT name FROM product") == [[.text("tea")]])
        #expect(try connect("shop_app", version: 1).query("SELECT title FROM product") == [[.text("tea")]], "the old version's views keep their grants")

        // The auditor reads the migrator's tables and nothing else.
        try PostgresConnection(url).execute(
            "GRANT SELECT ON schemagen_migrations, schemagen_online_migrations TO shop_auditor")
        let status = try Self.migrate.run(["status", "--format", "json", "--database", url.replacingOccurrences(of: "postgres@", with: "shop_auditor@"), "--dir", folder.path])
        #expect(status.status == 0, "\(status.error)")
        #expect(status.output.contains("\"phase\": \"expanded\""), "\(status.output)")
    }

    // MARK: - Index builds and old snapshots

    /// An idle REPEATABLE READ transaction (as pg_dump holds one): the index build waits for it
    /// without giving up at the lock budget, names it first, and finishes once it ends.
    @Test func anIndexBuildWaitsForAnOldSnapshotAndNamesIt() async throws {
        let path = try Self.migrations()
        let url = try Self.shop(path, customers: 10, orders: 2_000)
        let run = try await offThePool {
            let dump = try PostgresConnection(url + "?application_name=pg_dump")
            try dump.execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class")
            let running = try Self.migrate.start(["up", "--to", "2", "--database", url, "--dir", path])
            Thread.sleep(forTimeInterval: 4)
            try dump.execute("COMMIT")
            return running.finish()
        }
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output.contains("builds an index, which cannot finish before these open transactions end"), "\(run.output)")
        #expect(run.output.contains("'pg_dump', idle in transaction"), "\(run.output)")
        #expect(try PostgresConnection(url).query("SELECT count(*) FROM pg_index WHERE NOT indisvalid") == [[.integer(0)]])
    }
}

/// Lines appended from any thread.
final class EventLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    var lines: [String] {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
    func append(_ line: String) {
        lock.lock()
        stored.append(line)
        lock.unlock()
    }
}

/// A flag threads read and one sets.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
    func set() {
        lock.lock()
        value = true
        lock.unlock()
    }
}
