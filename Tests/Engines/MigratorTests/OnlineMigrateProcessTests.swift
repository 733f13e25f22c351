import Foundation
import MigrationFiles
import MigrationPlanner
import PostgresKit
import RelationalModel
import SQLDialects
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `migrate up`, `complete`, `rollback` and `status` on online migrations, as processes, with
/// SIGKILLs landing anywhere in a phase: the next run of the same command finishes it.
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct OnlineMigrateProcessTests {
    static let migrate = BuiltTool("migrate")

    /// Events, planned online: version 2 widens `score` to a double (a replacement column,
    /// backfilled), makes `name` required with a default and indexes it.
    static func onlineMigrations() throws -> MigrationDirectory {
        try plannedPostgresMigrations(
            [
                "schema: Events\nversion: 1\nentities:\n  Event:\n    table: events\n    attributes:\n      name: String?\n      score: Int32\n",
                "schema: Events\nversion: 2\nentities:\n  Event:\n    table: events\n    attributes:\n      name: {type: String, default: unnamed, indexed: true}\n      score: Double\n",
            ], names: ["create", "retype"], online: true)
    }

    /// Devices a sync server saw: `status` lists them by version, and `complete` refuses to drop
    /// a version one of them used within the retention period, naming it, until
    /// `--strand-devices`; a device not seen for longer strands nobody.
    @Test func completeRefusesToStrandSyncDevices() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let path = try Self.onlineMigrations().path
        let url = try server.createDatabase()
        #expect(try Self.migrate.run(["up", "1", "--database", url, "--dir", path]).status == 0)
        let connection = try PostgresConnection(url)
        let now = Date().timeIntervalSince1970
        try connection.execute(
            StoreTableMigrations.syncTables(SQLDialectName.postgres.dialect).statement(for: SQLDialectName.postgres.dialect).statement.text
                + "INSERT INTO schemagen_sync_devices VALUES ('Events', 'phone-1', 'ada', 1, 5, NULL, \(now - 600), \(now - 60)), ('Events', 'old-tablet', 'bob', 1, 2, NULL, \(now - 9e6), \(now - 8e6));"
        )
        #expect(try Self.migrate.run(["up", "--database", url, "--dir", path]).status == 0)
        let status = try Self.migrate.run(["status", "--database", url, "--dir", path])
        #expect(status.output.contains("note: Events sync devices on version 1: 2: phone-1 (last seen "), "\(status.output)")
        let refused = try Self.migrate.run(["complete", "--database", url, "--dir", path])
        #expect(refused.status == 1 && refused.error.contains("phone-1 (version 1") && refused.error.contains("--strand-devices"), "\(refused.error)")
        #expect(!refused.error.contains("old-tablet"), "a device not seen for 90 days strands nobody: \(refused.error)")
        #expect(try connection.query("SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'events_v1'") == [[.integer(1)]], "version 1 still served")
        let forced = try Self.migrate.run(["complete", "--strand-devices", "--database", url, "--dir", path])
        #expect(forced.status == 0, "\(forced.error)")
        #expect(try connection.query("SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'events_v1'") == [[.integer(0)]])
    }

    /// `status` and `up --dry-run` list what an online migration's copy of a table carries, and
    /// what it cannot; `up` stops on the latter, naming it, until `--drop-uncarried`, which
    /// drops it with a warning on standard error.
    @Test func statusAndDryRunListWhatACopyCarriesAndTheFlagDropsWhatItCannot() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let path = try Self.onlineMigrations().path
        let url = try server.createDatabase()
        #expect(try Self.migrate.run(["up", "1", "--database", url, "--dir", path]).status == 0)
        try PostgresConnection(url).execute(
            """
            INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 100) AS i;
            CREATE INDEX dba_high_scores ON events (score) WHERE score > 10;
            CREATE VIEW dba_names AS SELECT name FROM events;
            CREATE FUNCTION dba_count() RETURNS bigint LANGUAGE sql BEGIN ATOMIC SELECT count(*) FROM events; END;
            """)
        let status = try Self.migrate.run(["status", "--database", url, "--dir", path])
        #expect(status.output.contains("note: Events 0002 copies a table; made outside the schema, on it:"), "\(status.output)")
        #expect(status.output.contains("  carried: index dba_high_scores on events: built on the copy before its rows"), "\(status.output)")
        #expect(status.output.contains("  CANNOT BE CARRIED: function dba_count(): its body names the table"), "\(status.output)")
        let json = try Self.migrate.run(["status", "--database", url, "--dir", path, "--format", "json"])
        #expect(json.output.contains("\"carries\": [{\"object\": \"index dba_high_scores on events\", \"action\": \"carry\""), "\(json.output)")
        let dryRun = try Self.migrate.run(["up", "--dry-run", "--database", url, "--dir", path])
        #expect(dryRun.output.contains("-- Events 0002 would carry, made outside the schema:\n--   carried: index dba_high_scores on events"), "\(dryRun.output)")

        let refused = try Self.migrate.run(["up", "--database", url, "--dir", path])
        #expect(refused.status == 1 && refused.error.contains("function dba_count(): its body names the table") && refused.error.contains("--drop-uncarried"), "\(refused.error)")
        let connection = try PostgresConnection(url)
        #expect(try connection.query("SELECT (to_regclass('schemagen_2_events') IS NULL)::int") == [[.integer(1)]])

        let dropped = try Self.migrate.run(["up", "--complete", "--drop-uncarried", "--database", url, "--dir", path])
        #expect(dropped.status == 0, "\(dropped.output)\(dropped.error)")
        #expect(dropped.error.contains("migrate: warning: dropped, as --drop-uncarried allows") && dropped.error.contains("function dba_count()"), "\(dropped.error)")
        #expect(dropped.error.contains("migrate: warning: schemagen: dropped function dba_count()"), "the server's warning reaches stderr: \(dropped.error)")
        #expect(dropped.output.contains("note: carried to the copy of the table (made outside the schema):"), "\(dropped.output)")
        #expect(try connection.query("SELECT count(*) FROM pg_class WHERE relname IN ('dba_high_scores', 'dba_names')") == [[.integer(2)]])
        #expect(try connection.query("SELECT count(*) FROM pg_proc WHERE proname = 'dba_count'") == [[.integer(0)]])
    }

    static func phase(_ connection: PostgresConnection) throws -> [[StoredValue]] {
        try connection.query("SELECT phase FROM schemagen_online_migrations")
    }

    /// What one killed run left, and what the rerun made of it.
    struct KilledRun: Sendable {
        var killedMidway: Bool
        var rows: [[StoredValue]]
        var servingRows: [[StoredValue]]
        var rerun: BuiltTool.Run
        var phase: [[StoredValue]]
        var checks: [[[StoredValue]]]
    }

    @Test func killedAnywhereInAPhaseTheSameCommandFinishesIt() async throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let migrations = try Self.onlineMigrations()
        let path = migrations.path
        let template = try server.createDatabase()
        // The processes are waited for on threads of their own, not the cooperative pool's.
        let (expanded, status, expandDuration, contractDuration) = try await offThePool { () throws -> (BuiltTool.Run, BuiltTool.Run, Double, Double) in
            _ = try Self.migrate.run(["up", "1", "--database", template, "--dir", path])
            try PostgresConnection(template).execute(
                "INSERT INTO events (name, score) SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE 'event ' || i END, i FROM generate_series(1, 200000) AS i")
            let calibration = try Self.copy(server, of: template)
            var clock = Date()
            let expanded = try Self.migrate.run(["up", "--database", calibration, "--dir", path])
            let expandDuration = Date().timeIntervalSince(clock)
            let status = try Self.migrate.run(["status", "--database", calibration, "--dir", path])
            clock = Date()
            _ = try Self.migrate.run(["complete", "--database", calibration, "--dir", path])
            return (expanded, status, expandDuration, Date().timeIntervalSince(clock))
        }
        #expect(expanded.status == 0, "\(expanded.error)")
        #expect(expanded.output.contains("expanded 0002_retype"), "\(expanded.output)")
        #expect(status.output.contains("EXPANDED: serving events_v1 and events_v2"), "\(status.output)")

        var killedMidway = 0
        for run in 0..<12 {
            // Half the runs are killed in expand, the other half in contract.
            let contracting = run % 2 == 1
            let outcome = try await offThePool { () throws -> KilledRun in
                let url = try Self.copy(server, of: template)
                defer { try? server.runPSQL(server.url(), "DROP DATABASE IF EXISTS \(url.split(separator: "/").last ?? "") WITH (FORCE)") }
                let connection = try PostgresConnection(url)
                let expand = contracting ? try Self.migrate.run(["up", "--database", url, "--dir", path]) : nil
                let command = contracting ? "complete" : "up"
                let duration = contracting ? contractDuration : expandDuration
                let started = try Self.migrate.start([command, "--database", url, "--dir", path])
                usleep(UInt32((Double(run / 2) + 0.5) / 6 * duration * 1_000_000))
                kill(started.processIdentifier, SIGKILL)
                let killed = started.finish().status != 0
                // Whatever the kill left, the version its apps still run reads every row:
                // version 1 during expand, version 2 during contract.
                let rows = try connection.query("SELECT count(*) FROM events")
                let view = "events_v\(contracting ? 2 : 1).events"
                let serving =
                    try connection.query("SELECT to_regclass($1) IS NOT NULL", [.text(view)]) == [[.integer(1)]]
                    ? try connection.query("SELECT count(*) FROM \(view)") : [[.text("no \(view): \(expand?.output ?? "") \(expand?.error ?? "")")]]
                let rerun = try Self.migrate.run([command, "--database", url, "--dir", path])
                let checks: [[[StoredValue]]] =
                    contracting
                    ? [
                        try connection.query("SELECT data_type::text FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'events' AND column_name = 'score'"),
                        try connection.query("SELECT count(*) FROM events WHERE name = 'unnamed'"),
                    ]
                    : [
                        try connection.query("SELECT to_regclass('events_v2.events') IS NOT NULL") == [[.integer(1)]]
                            ? try connection.query("SELECT count(*) FROM events_v2.events WHERE score = id AND name IS NOT NULL")
                            : [[.text("no events_v2 after the rerun: \(rerun.output) \(rerun.error)")]],
                        try connection.query("SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE NOT i.indisvalid"),
                    ]
                return KilledRun(killedMidway: killed, rows: rows, servingRows: serving, rerun: rerun, phase: try Self.phase(connection), checks: checks)
            }
            if outcome.killedMidway { killedMidway += 1 }
            #expect(outcome.rows == [[.integer(200_000)]])
            #expect(outcome.servingRows == [[.integer(200_000)]], "run \(run)")
            #expect(outcome.rerun.status == 0, "run \(run): \(outcome.rerun.error)")
            if contracting {
                #expect(outcome.phase == [])
                #expect(outcome.checks == [[[.text("double precision")]], [[.integer(40_000)]]])
            } else {
                #expect(outcome.phase == [[.text("expanded")]], "run \(run): \(outcome.rerun.output)")
                #expect(outcome.checks == [[[.integer(200_000)]], [[.integer(0)]]], "run \(run): every row backfilled, no index left invalid")
            }
        }
        #expect(killedMidway >= 3, "kills landed while the migrator ran in only \(killedMidway) runs (expand \(expandDuration) s, contract \(contractDuration) s)")
    }

    static func copy(_ server: PostgresServer, of template: String) throws -> String {
        let name = "online_" + UUID().uuidString.prefix(8).lowercased()
        try server.runPSQL(server.url(), "CREATE DATABASE \(name) TEMPLATE \(template.split(separator: "/").last ?? "")")
        return server.url(database: name)
    }

    @Test func fourMigratorsAtOnceExpandOnceThenCompleteOnce() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let migrations = try Self.onlineMigrations()
        let url = try server.createDatabase()
        #expect(try Self.migrate.run(["up", "1", "--database", url, "--dir", migrations.path]).status == 0)
        let connection = try PostgresConnection(url)
        try connection.execute("INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 20000) AS i")
        for command in ["up", "complete"] {
            let started = try (0..<4).map { _ in try Self.migrate.start([command, "--database", url, "--dir", migrations.path]) }
            let results = started.map { $0.finish() }
            #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.error))")
            let phase: [[StoredValue]] = command == "up" ? [[.text("expanded")]] : []
            #expect(try Self.phase(connection) == phase)
            #expect(results.filter { $0.output.contains(command == "up" ? "expanded 0002_retype" : "completed 0002_retype") }.count == 1, "\(results.map(\.output))")
        }
        #expect(try connection.query("SELECT version FROM schemagen_migrations ORDER BY version") == [[.integer(1)], [.integer(2)]])
        #expect(try connection.query("SELECT count(*) FROM events WHERE score = id") == [[.integer(20_000)]])
    }

    /// What an app saw while a session held a lock the migration needed.
    struct LockedRun: Sendable {
        var migrate: BuiltTool.Run
        var slowestRead: Double
        var phase: [[StoredValue]]
    }

    /// Holds ROW EXCLUSIVE on `events` (what an open write transaction holds, which the trigger
    /// expand creates waits for) for `seconds`, while an app reads the table in a loop and
    /// `migrate up` runs with the given lock budget.
    static func migrate(_ arguments: [String], whileLockHeldFor seconds: Double, url: String, path: String) throws -> LockedRun {
        let holder = Handed(try PostgresConnection(url))
        try holder.value.execute("BEGIN")
        try holder.value.execute("UPDATE events SET score = score WHERE id = 1")
        let release = Thread {
            Thread.sleep(forTimeInterval: seconds)
            try? holder.value.execute("COMMIT")
        }
        release.start()
        let done = NSLock()
        nonisolated(unsafe) var finished = false
        nonisolated(unsafe) var slowest = 0.0
        let reader = Thread {
            guard let app = try? PostgresConnection(url) else { return }
            while !done.withLock({ finished }) {
                let start = Date()
                _ = try? app.query("SELECT count(*) FROM events_v1.events")
                let took = Date().timeIntervalSince(start)
                done.withLock { slowest = max(slowest, took) }
                usleep(20_000)
            }
        }
        reader.start()
        let run = try Self.migrate.run(arguments + ["--database", url, "--dir", path])
        done.withLock { finished = true }
        while !reader.isFinished || !release.isFinished { usleep(10_000) }
        return LockedRun(migrate: run, slowestRead: done.withLock { slowest }, phase: try Self.phase(try PostgresConnection(url)))
    }

    @Test func aHeldLockIsRetriedAroundAndNeverQueuesTheAppForLong() async throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let migrations = try Self.onlineMigrations()
        let path = migrations.path
        let url = try server.createDatabase()
        let (short, long, rerun) = try await offThePool { () throws -> (LockedRun, LockedRun, BuiltTool.Run) in
            _ = try Self.migrate.run(["up", "1", "--database", url, "--dir", path])
            try PostgresConnection(url).execute("INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 1000) AS i")
            // Held past the budget of a few attempts: the section gives up, the app never waits long.
            let long = try Self.migrate(["up", "--online-lock-timeout", "100", "--lock-retries", "2"], whileLockHeldFor: 4, url: url, path: path)
            // Held for 1.5 s: retried with growing pauses until it is free, then done.
            let short = try Self.migrate(["up", "--online-lock-timeout", "200"], whileLockHeldFor: 1.5, url: url, path: path)
            let rerun = try Self.migrate.run(["status", "--database", url, "--dir", path])
            return (short, long, rerun)
        }
        #expect(long.migrate.status == 1, "\(long.migrate.output)")
        #expect(long.migrate.error.contains("its locks were not granted within 100 ms in 3 attempts"), "\(long.migrate.error)")
        // The session holding the lock is named: its pid, application and how long it has held it.
        #expect(long.migrate.error.contains("sessions holding locks on its tables: pid "), "\(long.migrate.error)")
        #expect(long.migrate.error.contains("idle in transaction, transaction open"), "\(long.migrate.error)")
        #expect(!long.migrate.error.contains("long transactions"), "\(long.migrate.error)")
        #expect(long.phase == [[.text("expand")]], "the sections done stay done; the next run resumes")
        #expect(long.slowestRead < 1.0, "the app waited \(long.slowestRead) s behind the migration")
        #expect(short.migrate.status == 0, "\(short.migrate.error)")
        #expect(short.migrate.output.contains("could not get its locks in time"), "\(short.migrate.output)")
        #expect(short.phase == [[.text("expanded")]])
        #expect(short.slowestRead < 1.0, "the app waited \(short.slowestRead) s behind the migration")
        #expect(rerun.output.contains("EXPANDED"), "\(rerun.output)")
    }

    @Test func rollbackAfterAKilledExpandKeepsTheRowsBothVersionsWrote() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let migrations = try Self.onlineMigrations()
        let url = try server.createDatabase()
        #expect(try Self.migrate.run(["up", "1", "--database", url, "--dir", migrations.path]).status == 0)
        let connection = try PostgresConnection(url)
        try connection.execute("INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 1000) AS i")
        #expect(try Self.migrate.run(["up", "--database", url, "--dir", migrations.path]).status == 0)
        // Each version writes through its own names.
        try connection.execute("INSERT INTO events_v1.events (name, score) VALUES ('old', 7)")
        try connection.execute("INSERT INTO events_v2.events (score) VALUES (2.0)")
        try connection.execute("UPDATE events_v2.events SET score = 41 WHERE id = 1")
        #expect(
            try connection.query("SELECT name, score FROM events_v1.events WHERE id > 1000 OR id = 1 ORDER BY id") == [
                [.text("event 1"), .integer(41)], [.text("old"), .integer(7)], [.text("unnamed"), .integer(2)],
            ])
        // Dry runs print the phase that would run and change nothing.
        let wouldRollBack = try Self.migrate.run(["rollback", "--dry-run", "--database", url, "--dir", migrations.path])
        #expect(wouldRollBack.output.contains("0002_retype.down.sql") && wouldRollBack.output.contains("-- section: transaction"), "\(wouldRollBack.output)")
        #expect(try Self.migrate.run(["complete", "--dry-run", "--database", url, "--dir", migrations.path]).output.contains("-- online: contract"))
        #expect(try Self.phase(connection) == [[.text("expanded")]])
        let rollback = try Self.migrate.run(["rollback", "--database", url, "--dir", migrations.path])
        #expect(rollback.status == 0, "\(rollback.error)")
        #expect(rollback.output.contains("rolled back 0002_retype"), "\(rollback.output)")
        #expect(try connection.query("SELECT count(*) FROM events") == [[.integer(1002)]])
        #expect(try connection.query("SELECT version FROM schemagen_migrations ORDER BY version") == [[.integer(1)]])
        #expect(try connection.query("SELECT to_regnamespace('events_v2') IS NULL") == [[.integer(1)]])
        let columns = try connection.query("SELECT column_name::text FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'events' ORDER BY 1")
        #expect(columns == [[.text("id")], [.text("name")], [.text("score")]])
        // Nothing left to roll back or complete; `down` of an online migration says what to use.
        #expect(try Self.migrate.run(["rollback", "--database", url, "--dir", migrations.path]).output.contains("no online migration"))
        #expect(try Self.migrate.run(["up", "--complete", "--database", url, "--dir", migrations.path]).status == 0)
        let down = try Self.migrate.run(["down", "--database", url, "--dir", migrations.path])
        #expect(down.status == 1)
        #expect(down.error.contains("cannot be reverted"), "\(down.error)")
    }
}
