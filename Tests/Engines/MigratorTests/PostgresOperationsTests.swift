import DatabaseLocation
import Foundation
import MigrateCLI
import MigrationFiles
import Migrator
import MigratorPostgres
import MigratorSQLite
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

@testable import MigratorCore

/// The everyday tools a DBA uses, against a real PostgreSQL server: dry runs that write
/// nothing, `baseline` that checks, `repair`, interrupts that leave no backend queued,
/// `application_name`, the history table's shape and place, and connecting to a server that
/// is still starting.
@Suite(.blocking, .serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct PostgresOperationsTests {
    static let migrate = BuiltTool("migrate")
    static let flights = ["--dir", "Migrations/Flights/postgres"]

    static func server() throws -> PostgresServer { try #require(PostgresServer.shared, "the PostgreSQL test server did not start") }

    /// What a migrator could change: the history, the attempts, and every table and column.
    static func state(_ url: String) throws -> [[StoredValue]] {
        let connection = try PostgresConnection(url)
        var rows = try connection.query(
            """
            SELECT table_schema || '.' || table_name || '.' || column_name || ':' || data_type FROM information_schema.columns
            WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1
            """)
        for table in ["schemagen_migrations", "schemagen_migration_attempts"] where try connection.query("SELECT to_regclass($1) IS NOT NULL", [.text(table)]) == [[.integer(1)]] {
            rows += try connection.query("SELECT row_to_json(t)::text FROM \(table) t ORDER BY 1")
        }
        return rows
    }

    static func waitUntil(_ seconds: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return false
    }

    static func migratorBackends(_ url: String, waitingForLock: Bool = false) throws -> Int64 {
        // Of this database: tests running beside this one migrate databases of their own.
        let rows = try PostgresConnection(url).query(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'schemagen migrate' AND datname = current_database()"
                + (waitingForLock ? " AND wait_event_type = 'Lock'" : ""))
        if case .integer(let count)? = rows.first?.first { return count }
        return -1
    }

    /// The defect: `baseline N --dry-run` wrote the history. Now no `--dry-run` writes, on any
    /// command, and the session is read-only besides.
    @Test func dryRunsWriteNothing() throws {
        let url = try Self.server().createDatabase()
        let base = ["--database", url] + Self.flights
        #expect(try Self.migrate.run(["up", "3"] + base).status == 0)
        var before = try Self.state(url)
        let runs: [([String], String)] = [
            (["up", "--dry-run"], "0004_change_flights.up.sql"),
            (["down", "--dry-run", "--allow-destructive"], "0003_rename_airports_elevation_to_elevation_feet.down.sql"),
            (["redo", "--dry-run"], "0003_rename_airports_elevation_to_elevation_feet.up.sql"),
            (["baseline", "3", "--dry-run"], "already recorded at version 3"),
            (["repair", "--dry-run"], "needs no repair"),
            (["status", "--dry-run"], "pending"),
            (["validate", "--dry-run"], "match their files"),
        ]
        for (arguments, expected) in runs {
            let run = try Self.migrate.run(arguments + base)
            #expect(run.status == 0, "\(arguments): \(run.error)")
            #expect(run.output.contains(expected), "\(arguments): \(run.output)")
            #expect(try Self.state(url) == before, "\(arguments) changed the database")
        }
        // With something to repair and a version to record, the dry runs still only print.
        try PostgresConnection(url).execute("DELETE FROM schemagen_migrations WHERE version = 3")
        before = try Self.state(url)
        let repair = try Self.migrate.run(["repair", "--dry-run"] + base)
        #expect(repair.output.contains("forget 0002_add_airports_elevation") && repair.output.contains("lacks column airports.elevation"), "\(repair.output) \(repair.error)")
        #expect(try Self.state(url) == before, "repair --dry-run changed the history")
        let baseline = try Self.migrate.run(["baseline", "3", "--dry-run"] + base)
        #expect(baseline.output.contains("would record 0003_rename_airports_elevation_to_elevation_feet as applied"), "\(baseline.output) \(baseline.error)")
        #expect(try Self.state(url) == before, "baseline --dry-run wrote the history")
    }

    /// `baseline` checks that the database has the version's tables and columns; `repair`
    /// forgets rows whose objects are absent and records reviewed checksums, asking first.
    @Test func baselineChecksAndRepairFixesTheHistory() throws {
        let server = try Self.server()
        let empty = try server.createDatabase()
        let refused = try Self.migrate.run(["baseline", "2", "--database", empty] + Self.flights)
        #expect(refused.status == 1, "\(refused.error)")
        #expect(refused.error.contains("lacks what that version has (table airlines, table airports, table flights)"), "\(refused.error)")
        #expect(try PostgresConnection(empty).query("SELECT to_regclass('schemagen_migrations') IS NULL") == [[.integer(1)]], "nothing recorded")

        // A database built by hand to version 2 (the migrations run by psql) is adopted.
        let built = try server.createDatabase()
        for file in ["0001_create_flights.up.sql", "0002_add_airports_elevation.up.sql"] {
            try server.runPSQL(built, try String(contentsOfFile: repositoryRoot.path + "/Migrations/Flights/postgres/" + file, encoding: .utf8))
        }
        let adopted = try Self.migrate.run(["baseline", "2", "--database", built] + Self.flights)
        #expect(adopted.status == 0, "\(adopted.error)")
        #expect(adopted.output.contains("recorded 0002_add_airports_elevation as applied (not run)"), "\(adopted.output)")
        #expect(try Self.migrate.run(["baseline", "3", "--database", built] + Self.flights).error.contains("column airports.elevation_feet"))

        // Recorded at 4 by mistake (as the old baseline allowed): repair forgets 3 and 4.
        let connection = try PostgresConnection(built)
        try connection.execute(
            """
            INSERT INTO schemagen_migrations (schema, version, name, checksum, applied_at, duration_ms) VALUES
              ('Flights', 3, 'rename_airports_elevation_to_elevation_feet', 'wrong', now(), 0),
              ('Flights', 4, 'change_flights', 'wrong', now(), 0)
            """)
        let declined = try Self.migrate.run(["repair", "--database", built] + Self.flights)
        #expect(declined.status == 1, "no answer is no")
        #expect(declined.output.contains("forget 0003_rename_airports_elevation_to_elevation_feet") && declined.output.contains("forget 0004_change_flights"), "\(declined.output)")
        #expect(declined.output.contains("nothing changed"))
        let repaired = try Self.migrate.run(["repair", "--yes", "--database", built] + Self.flights)
        #expect(repaired.status == 0 && repaired.output.contains("repaired Flights: 2 changes"), "\(repaired.output) \(repaired.error)")
        #expect(try connection.query("SELECT version FROM schemagen_migrations ORDER BY version") == [[.integer(1)], [.integer(2)]])
        #expect(try Self.migrate.run(["up", "--database", built] + Self.flights).status == 0, "up runs what was forgotten")

        // A reviewed edit of an applied file: validate refuses, repair records the new checksum.
        let folder = temporaryFolder().appendingPathComponent("Flights/postgres")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for file in try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.path + "/Migrations/Flights/postgres") {
            try FileManager.default.copyItem(atPath: repositoryRoot.path + "/Migrations/Flights/postgres/" + file, toPath: folder.path + "/" + file)
        }
        let edited = folder.path + "/0005_follow_aeroapi_nullability.up.sql"
        try (try String(contentsOfFile: edited, encoding: .utf8) + "-- reviewed: a comment for the next reader\n").write(toFile: edited, atomically: true, encoding: .utf8)
        try MigrationDirectory(path: folder.path).rehash()
        #expect(try Self.migrate.run(["validate", "--database", built, "--dir", folder.path]).status == 1)
        let answered = try Self.migrate.start(["repair", "--database", built, "--dir", folder.path])
        try answered.write("y\n")
        let realigned = answered.finish()
        #expect(realigned.status == 0, "\(realigned.error)")
        #expect(realigned.output.contains("record the checksum of \(edited) anew"), "\(realigned.output)")
        #expect(try Self.migrate.run(["validate", "--database", built, "--dir", folder.path]).status == 0)
    }

    /// The DBA's worst case: a migration queued behind a long lock, and the deploy interrupted.
    /// SIGINT and SIGTERM cancel the statement, the migration rolls back, no backend of the
    /// migrator stays in the lock queue, and the exit status says which signal it was.
    @Test(arguments: [(SIGINT, Int32(130), "SIGINT"), (SIGTERM, Int32(143), "SIGTERM")])
    func anInterruptCancelsAndLeavesNoBackendQueued(signal: Int32, status: Int32, name: String) throws {
        let url = try Self.server().createDatabase()
        let base = ["--database", url, "--ddl-lock-timeout", "0"] + Self.flights
        #expect(try Self.migrate.run(["up", "1"] + base).status == 0)
        let holder = try PostgresConnection(url)
        try holder.execute("BEGIN; LOCK TABLE airports IN ACCESS EXCLUSIVE MODE")
        let before = try Self.state(url)
        let started = try Self.migrate.start(["up"] + base)
        let queued = try Self.waitUntil {
            try Self.migratorBackends(url, waitingForLock: true) == 1
        }
        #expect(queued, "the migrator never queued for the lock (application_name is 'schemagen migrate')")
        kill(started.processIdentifier, signal)
        let run = started.finish()
        #expect(run.status == status, "\(run.error)")
        #expect(run.error.contains("\(name) received: cancelling the statement in progress"), "\(run.error)")
        #expect(run.error.contains("interrupted: statement 1 of 1 of 0002_add_airports_elevation.up.sql"), "\(run.error)")
        // The cancel finished before the process exited: no backend of it waits for the lock,
        // even one still closing (without the cancel it would wait until the server noticed).
        #expect(try Self.migratorBackends(url, waitingForLock: true) == 0, "a backend of the migrator stayed queued for the lock")
        #expect(try Self.waitUntil(10) { try Self.migratorBackends(url) == 0 }, "a backend of the migrator outlived it")
        try holder.execute("ROLLBACK")
        #expect(try Self.state(url) == before, "the migration rolled back, and its attempt note is gone")
        #expect(try Self.migrate.run(["up"] + base).status == 0)
    }

    /// SIGKILL cannot cancel anything: the server notices the closed connection (PostgreSQL 14+,
    /// client_connection_check_interval), and `status` lists the attempt as interrupted until
    /// the next `up` or `repair`.
    @Test func aKilledMigratorIsListedAsInterrupted() throws {
        let url = try Self.server().createDatabase()
        let base = ["--database", url, "--ddl-lock-timeout", "0"] + Self.flights
        #expect(try Self.migrate.run(["up", "1"] + base).status == 0)
        let holder = try PostgresConnection(url)
        try holder.execute("BEGIN; LOCK TABLE airports IN ACCESS EXCLUSIVE MODE")
        let started = try Self.migrate.start(["up"] + base)
        #expect(try Self.waitUntil { try Self.migratorBackends(url) == 1 })
        // The attempt is recorded just before its statements run: a status read at that moment
        // may come first.
        var running = try Self.migrate.run(["status"] + base)
        _ = try Self.waitUntil(10) {
            running = try Self.migrate.run(["status"] + base)
            return running.output.contains("up RUNNING since")
        }
        #expect(running.output.contains("0002     add_airports_elevation") && running.output.contains("up RUNNING since"), "\(running.output)")
        kill(started.processIdentifier, SIGKILL)
        _ = started.finish()
        let serverVersion = try PostgresConnection(url).serverVersion
        if serverVersion >= 140_000 {
            #expect(try Self.waitUntil(10) { try Self.migratorBackends(url) == 0 }, "the killed migrator's backend stayed queued")
        }
        try holder.execute("ROLLBACK")
        #expect(try Self.waitUntil(10) { try Self.migratorBackends(url) == 0 })
        let status = try Self.migrate.run(["status"] + base)
        #expect(status.output.contains("up INTERRUPTED at"), "\(status.output)")
        let json = try Self.migrate.run(["status", "--format", "json"] + base)
        #expect(json.output.contains("\"attempt\": {\"direction\": \"up\""), "\(json.output)")
        let repair = try Self.migrate.run(["repair", "--yes"] + base)
        #expect(repair.output.contains("clear the note of migration 0002 (up)"), "\(repair.output)")
        #expect(!(try Self.migrate.run(["status"] + base)).output.contains("INTERRUPTED"))
    }

    /// Advisory locks belong to a database, but `pg_locks` lists the whole server's: a migrator
    /// of the same schema busy in another database is not this database's running attempt (a
    /// test running beside this one made `status` say RUNNING and `repair` keep the note).
    @Test func aMigratorInAnotherDatabaseIsNotThisOnesHolder() throws {
        let here = try Self.server().createDatabase(), elsewhere = try Self.server().createDatabase()
        let busy = PostgresMigrationDatabase(try PostgresConnection(elsewhere))
        try busy.lock(schema: "Flights", timeout: 5, cancelled: { false })
        defer { busy.unlock(schema: "Flights") }
        #expect(try PostgresMigrationDatabase(try PostgresConnection(here)).lockHolder(schema: "Flights") == nil)
        let sameDatabase = PostgresMigrationDatabase(try PostgresConnection(elsewhere))
        #expect(try sameDatabase.lockHolder(schema: "Flights") != nil, "the holder in its own database is seen")
    }

    /// The history table: `applied_at` is a timestamptz, `applied_by` the role; `--history-schema`
    /// puts both tables in a schema of their own whatever the search path; a table written by an
    /// earlier release is brought up to date in place.
    @Test func theHistoryTableRecordsWhenAndWhoWhereTheUserSays() throws {
        let server = try Self.server()
        let url = try server.createDatabase()
        #expect(try Self.migrate.run(["up", "2", "--database", url] + Self.flights).status == 0)
        let connection = try PostgresConnection(url)
        #expect(
            try connection.query("SELECT data_type FROM information_schema.columns WHERE table_name = 'schemagen_migrations' AND column_name = 'applied_at'") == [[.text("timestamp with time zone")]])
        #expect(try connection.query("SELECT DISTINCT applied_by FROM schemagen_migrations") == [[.text("postgres")]])
        let status = try Self.migrate.run(["status", "--database", url] + Self.flights)
        #expect(status.output.contains(" by postgres in "), "\(status.output)")

        let ops = try server.createDatabase()
        try server.runPSQL(ops, "CREATE SCHEMA app; ALTER DATABASE \(ops.split(separator: "/").last ?? "") SET search_path = app")
        let run = try Self.migrate.run(["up", "--database", ops, "--history-schema", "ops"] + Self.flights)
        #expect(run.status == 0, "\(run.error)")
        let placed = try PostgresConnection(ops).query(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables WHERE table_name IN ('schemagen_migrations', 'schemagen_migration_attempts', 'flights') ORDER BY 1")
        #expect(placed == [[.text("app.flights")], [.text("ops.schemagen_migration_attempts")], [.text("ops.schemagen_migrations")]])
        #expect(try Self.migrate.run(["status", "--database", ops, "--history-schema", "ops"] + Self.flights).output.components(separatedBy: "applied 20").count == 6)

        // A history table as the previous release wrote it: text timestamps, no applied_by.
        let old = try server.createDatabase()
        #expect(try Self.migrate.run(["up", "1", "--database", old] + Self.flights).status == 0)
        try server.runPSQL(
            old,
            """
            ALTER TABLE schemagen_migrations DROP COLUMN applied_by;
            ALTER TABLE schemagen_migrations ALTER COLUMN applied_at TYPE text USING to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
            """)
        #expect(try Self.migrate.run(["status", "--database", old] + Self.flights).status == 0, "the old table is read as it is")
        #expect(try Self.migrate.run(["up", "--database", old] + Self.flights).status == 0)
        let upgraded = try PostgresConnection(old)
        #expect(
            try upgraded.query("SELECT data_type FROM information_schema.columns WHERE table_name = 'schemagen_migrations' AND column_name = 'applied_at'") == [[.text("timestamp with time zone")]])
        #expect(
            try upgraded.query("SELECT version, applied_by FROM schemagen_migrations ORDER BY version").map { $0[1] } == [
                .null, .text("postgres"), .text("postgres"), .text("postgres"), .text("postgres"),
            ])
    }

    /// A deploy that starts the server and the migrator together: `--connect-retry` waits for
    /// the server; without it the failure is immediate and names the option.
    @Test func connectingRetriesWhileTheServerStarts() throws {
        let server = try PostgresServer()
        defer { server.shutdown() }
        let url = try server.createDatabase()
        server.stop()
        let immediate = try Self.migrate.run(["status", "--database", url] + Self.flights)
        #expect(immediate.status == 2 && immediate.error.contains("--connect-retry"), "\(immediate.error)")
        let waiting = try Self.migrate.start(["up", "--database", url, "--connect-retry", "60"] + Self.flights)
        usleep(700_000)
        try server.start()
        let run = waiting.finish()
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output.contains("applied  0005_follow_aeroapi_nullability"), "\(run.output)")
    }

    /// A hand-written migration (`schemagen new-migration`) in the postgres/ folder: a view, a
    /// role's grant and row-level security, applied and reverted in order with the planned ones.
    @Test func handWrittenMigrationsApply() throws {
        let project = temporaryFolder()
        for name in ["Schemas", "Migrations"] {
            try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent(name), to: project.appendingPathComponent(name))
        }
        let created = try BuiltTool("schemagen").run(["new-migration", "reporting access", "--schema", "Schemas/Flights.yaml"], in: project)
        #expect(created.status == 0, "\(created.error)")
        let file = project.path + "/Migrations/Flights/postgres/0006_reporting_access"
        try
            (try String(contentsOfFile: file + ".up.sql", encoding: .utf8) + """
                CREATE VIEW long_flights AS SELECT ident, route_distance FROM flights WHERE route_distance > 1000;
                DO $$ BEGIN CREATE ROLE reporting NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
                GRANT SELECT ON long_flights TO reporting;
                ALTER TABLE flights ENABLE ROW LEVEL SECURITY;
                CREATE POLICY reporting_reads ON flights FOR SELECT TO reporting USING (true);

                """).write(toFile: file + ".up.sql", atomically: true, encoding: .utf8)
        try
            (try String(contentsOfFile: file + ".down.sql", encoding: .utf8) + """
                DROP POLICY reporting_reads ON flights;
                ALTER TABLE flights DISABLE ROW LEVEL SECURITY;
                DROP VIEW long_flights;

                """).write(toFile: file + ".down.sql", atomically: true, encoding: .utf8)
        #expect(try BuiltTool("schemagen").run(["rehash", "Flights"], in: project).status == 0)
        let url = try Self.server().createDatabase()
        let base = ["--database", url, "--dir", project.path + "/Migrations/Flights/postgres"]
        let up = try Self.migrate.run(["up"] + base)
        #expect(up.status == 0 && up.output.contains("applied  0006_reporting_access"), "\(up.output)\(up.error)")
        let connection = try PostgresConnection(url)
        #expect(try connection.query("SELECT relrowsecurity FROM pg_class WHERE relname = 'flights'") == [[.integer(1)]])
        #expect(try connection.query("SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = 'reporting' AND table_name = 'long_flights'") == [[.integer(1)]])
        #expect(try Self.migrate.run(["down"] + base).status == 0)
        #expect(try connection.query("SELECT to_regclass('long_flights') IS NULL") == [[.integer(1)]])
    }

    /// The session `migrate` opens: a safe lock_timeout unless told otherwise (0 turns it off),
    /// its application name, and read-only for the commands that only read.
    @Test func theSessionIsSetUpForMigrating() throws {
        let url = try Self.server().createDatabase()
        func settings(_ database: any MigrationDatabase) throws -> [[StoredValue]] {
            try database.query("SELECT current_setting('lock_timeout'), current_setting('application_name'), current_setting('default_transaction_read_only')")
        }
        let location = try DatabaseLocation.parse(url)
        #expect(try settings(DatabaseOpener.open(location)) == [[.text("5s"), .text("schemagen migrate"), .text("off")]])
        #expect(try settings(DatabaseOpener.open(location, postgres: .init(lockTimeout: 0))) == [[.text("0"), .text("schemagen migrate"), .text("off")]])
        #expect(try settings(DatabaseOpener.open(location, readOnly: true))[0][2] == .text("on"))
        // A URL that names its own application keeps it.
        #expect(try settings(DatabaseOpener.open(try DatabaseLocation.parse(url + "?application_name=deploy-42")))[0][1] == .text("deploy-42"))
    }
}
