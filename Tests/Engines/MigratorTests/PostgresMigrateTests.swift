import Foundation
import MigrationFiles
import MigrationPlanner
import MigratorPostgres
import MigratorSQLite
import PostgresKit
import RelationalModel
import SQLDialects
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

@testable import MigratorCore

/// `migrate` against a real PostgreSQL 15 server, as users run it: URLs with passwords,
/// concurrent migrators, processes killed midway, a server that dies, tampered files.
@Suite(.blocking, .serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct PostgresMigrateTests {
    static let migrate = BuiltTool("migrate")

    static func server() throws -> PostgresServer { try #require(PostgresServer.shared, "the PostgreSQL test server did not start") }

    /// A password in the URL: trust authentication ignores it, and no output may show it.
    static let password = "s3cret-Pa55"

    static func withPassword(_ url: String) -> String {
        url.replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://postgres:\(password)@")
    }

    /// Two versions of an Events schema planned for PostgreSQL into a temporary folder:
    /// version 2 changes a type (with USING) and adds an index.
    static func eventsMigrations() throws -> MigrationDirectory {
        try plannedPostgresMigrations(
            [
                "schema: Events\nversion: 1\nentities:\n  Event:\n    table: events\n    attributes:\n      name: String\n      score: Int32\n",
                "schema: Events\nversion: 2\nentities:\n  Event:\n    table: events\n    attributes:\n      name: {type: String, indexed: true}\n      score: Double\n",
            ], names: ["create", "retype"])
    }

    static func fill(_ url: String, rows: Int) throws {
        try PostgresConnection(url).execute("INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, \(rows)) AS i")
    }

    static func scoreType(_ connection: PostgresConnection) throws -> [[StoredValue]] {
        try connection.query("SELECT data_type FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'score'")
    }

    /// `--dir` takes a schema's folder: on a PostgreSQL URL its `postgres/` folder is used (and
    /// said), and SQLite's files are never read for PostgreSQL, nor PostgreSQL's for SQLite.
    @Test func dirTakesTheSchemaFolderAndNeverReadsAnotherDialectsFiles() throws {
        let url = try Self.server().createDatabase()
        let up = try Self.migrate.run(["up", "--database", url, "--dir", "Migrations/Flights"])
        #expect(up.status == 0, "\(up.error)")
        #expect(up.error.contains("note: using Migrations/Flights/postgres, the PostgreSQL migrations of Migrations/Flights"), "\(up.error)")
        #expect(up.output.split(separator: "\n").filter { $0.hasPrefix("applied ") }.count == 5)
        let status = try Self.migrate.run(["status", "--format", "json", "--database", url, "--dir", "Migrations/Flights/"])
        #expect(status.status == 0 && !status.output.contains("FILE CHANGED") && !status.output.contains("changed"), "\(status.output)\(status.error)")
        #expect(try PostgresConnection(url).query("SELECT count(DISTINCT version) FROM schemagen_migrations WHERE schema = 'Flights'") == [[.integer(5)]])

        // PostgreSQL's folder for a SQLite file: refused before the file is created.
        let sqlite = temporaryFolder().appendingPathComponent("app.sqlite").path
        let wrong = try Self.migrate.run(["up", "--database", sqlite, "--dir", "Migrations/Flights/postgres"])
        #expect(wrong.status == 2 && wrong.error.contains("'Migrations/Flights/postgres' holds postgres migrations and the database is sqlite: pass --dir Migrations/Flights"), "\(wrong.error)")
        #expect(!FileManager.default.fileExists(atPath: sqlite))

        // A schema folder without PostgreSQL migrations, and SQLite files under a folder of
        // another name: neither is read for PostgreSQL.
        let copy = temporaryFolder().appendingPathComponent("Migrations/Links")
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Migrations/Todo"), to: copy)
        try FileManager.default.removeItem(at: copy.appendingPathComponent("postgres"))
        let none = try Self.migrate.run(["up", "--database", url, "--dir", copy.path])
        #expect(none.status == 2 && none.error.contains("has no postgres/ folder, and its own files are SQLite migrations"), "\(none.error)")
        let misplaced = copy.appendingPathComponent("postgres")
        try FileManager.default.createDirectory(at: misplaced, withIntermediateDirectories: true)
        for file in try FileManager.default.contentsOfDirectory(atPath: copy.path) where file != "postgres" {
            try FileManager.default.moveItem(at: copy.appendingPathComponent(file), to: misplaced.appendingPathComponent(file))
        }
        for command in ["status", "up", "complete", "rollback"] {
            let foreign = try Self.migrate.run([command, "--database", url, "--dir", misplaced.path])
            #expect(foreign.status == 1, "\(foreign.output)\(foreign.error)")
            #expect(foreign.error.contains("0001_create_todo.up.sql was planned for sqlite, but the database is postgres"), "\(foreign.error)")
        }
        #expect(try PostgresConnection(url).query("SELECT count(*) FROM schemagen_migrations WHERE schema <> 'Flights'") == [[.integer(0)]])
    }

    @Test func theExampleAppliesUpAndDownAndNeverShowsThePassword() throws {
        let url = Self.withPassword(try Self.server().createDatabase())
        let base = ["--database", url, "--dir", "Migrations/Flights/postgres"]
        let up = try Self.migrate.run(["up"] + base)
        #expect(up.status == 0, "\(up.error)")
        #expect(up.output.split(separator: "\n").filter { $0.hasPrefix("applied ") }.count == 5)
        let status = try Self.migrate.run(["status", "--format", "json"] + base)
        #expect(status.output.components(separatedBy: "\"applied\"").count == 6)
        let upToDate = try Self.migrate.run(["up"] + base)
        #expect(upToDate.output.contains("postgres:***@"), "\(upToDate.output)")
        #expect(try Self.migrate.run(["validate"] + base).status == 0)
        #expect(try Self.migrate.run(["redo"] + base).status == 0)
        #expect(try Self.migrate.run(["down", "--to", "0", "--allow-destructive"] + base).status == 0)
        // DATABASE_URL and the PG* variables work as well as --database.
        let server = try Self.server()
        let viaURL = try Self.migrate.run(["status", "--dir", "Migrations/Flights/postgres"], environment: ["DATABASE_URL": url])
        #expect(viaURL.status == 0, "\(viaURL.error)")
        let name = String(url.split(separator: "/").last ?? "")
        let viaPG = try Self.migrate.run(
            ["up", "--dir", "Migrations/Flights/postgres"],
            environment: ["PGHOST": "127.0.0.1", "PGPORT": "\(server.port)", "PGUSER": "postgres", "PGDATABASE": name, "PGPASSWORD": Self.password])
        #expect(viaPG.status == 0, "\(viaPG.error)")
        for run in [up, status, upToDate, viaURL, viaPG] {
            #expect(!run.output.contains(Self.password) && !run.error.contains(Self.password))
        }
        // A schema folder given with a PostgreSQL URL: its postgres/ folder is used.
        let schemaFolder = try Self.migrate.run(["up", "--database", url, "--dir", "Migrations/Todo"])
        #expect(schemaFolder.status == 0 && schemaFolder.error.contains("using Migrations/Todo/postgres"), "\(schemaFolder.error)")
    }

    @Test func errorsGiveFileLineStatementAndWhatPostgreSQLSaid() throws {
        let url = Self.withPassword(try Self.server().createDatabase())
        let folder = temporaryFolder().appendingPathComponent("Bad/postgres")
        let directory = MigrationDirectory(path: folder.path)
        let header = MigrationHeader(schema: "Bad", dialect: "postgres", direction: .up).text
        try directory.write(
            up: header + "CREATE TABLE t (id integer PRIMARY KEY);\nINSERT INTO t VALUES (1);\n\nINSERT INTO t VALUES (1);\n",
            down: MigrationHeader(schema: "Bad", dialect: "postgres", direction: .down).text + "DROP TABLE t;\n", snapshot: Data("{}".utf8), as: .init(number: 1, name: "bad"))
        let run = try Self.migrate.run(["up", "--database", url, "--dir", folder.path])
        #expect(run.status == 1)
        #expect(run.error.contains("0001_bad.up.sql:13: statement 3 failed: 23505: duplicate key value violates unique constraint \"t_pkey\"; detail: Key (id)=(1) already exists."), "\(run.error)")
        #expect(!run.error.contains(Self.password))
        let connection = try PostgresConnection(url)
        #expect(try connection.query("SELECT to_regclass('t') IS NULL") == [[.integer(1)]], "nothing of the migration remains")
    }

    @Test func tamperedAndMissingFilesAreRefused() throws {
        let url = try Self.server().createDatabase()
        let migrations = try Self.eventsMigrations()
        #expect(try Self.migrate.run(["up", "1", "--database", url, "--dir", migrations.path]).status == 0)
        let file = migrations.path + "/0001_create.up.sql"
        try (try String(contentsOfFile: file, encoding: .utf8) + "-- edited\n").write(toFile: file, atomically: true, encoding: .utf8)
        let tampered = try Self.migrate.run(["up", "--database", url, "--dir", migrations.path])
        #expect(tampered.status == 1)
        #expect(tampered.error.contains("0001_create.up.sql changed after it was generated"), "\(tampered.error)")
        try migrations.rehash()
        let changed = try Self.migrate.run(["up", "--database", url, "--dir", migrations.path])
        #expect(changed.status == 1, "an applied file that changed is refused even with a matching manifest")
        #expect(changed.error.contains("was applied, but"), "\(changed.error)")
        try FileManager.default.removeItem(atPath: migrations.path + "/0002_retype.down.sql")
        #expect(try Self.migrate.run(["up", "--database", url, "--dir", migrations.path]).status == 1)
    }

    @Test func fourConcurrentMigratorsApplyEachMigrationOnce() throws {
        let url = try Self.server().createDatabase()
        let processes = try (0..<4).map { _ in try Self.migrate.start(["up", "--database", url, "--dir", "Migrations/Flights/postgres"]) }
        let runs = processes.map { $0.finish() }
        #expect(runs.allSatisfy { $0.status == 0 }, "\(runs.map(\.error))")
        let applied = runs.flatMap { $0.output.split(separator: "\n") }.filter { $0.hasPrefix("applied ") }
        #expect(applied.count == 5, "\(applied)")
        let counts = try PostgresConnection(url).query("SELECT version, count(*) FROM schemagen_migrations WHERE schema = 'Flights' GROUP BY version ORDER BY version")
        #expect(counts == (1...5).map { [.integer(Int64($0)), .integer(1)] })
    }

    @Test func aHeldLockTimesOutWithExitThree() throws {
        let url = try Self.server().createDatabase()
        let holder = try PostgresConnection(url)
        _ = try holder.query("SELECT pg_advisory_lock($1)", [.integer(PostgresMigrationDatabase.advisoryKey(schema: "Flights"))])
        let run = try Self.migrate.run(["up", "--database", url, "--dir", "Migrations/Flights/postgres", "--lock-timeout", "1"])
        #expect(run.status == 3, "\(run.error)")
        #expect(run.error.contains("another migrator held the database"))
    }

    /// A session reading the table holds a lock the retyping ALTER needs: with
    /// --ddl-lock-timeout the migration gives up (exit 3) instead of queueing every query
    /// behind it, and applies once the reader is gone.
    @Test func aBusyTableGivesUpAfterTheDDLLockTimeout() throws {
        let url = try Self.server().createDatabase()
        let migrations = try Self.eventsMigrations()
        #expect(try Self.migrate.run(["up", "1", "--database", url, "--dir", migrations.path]).status == 0)
        let reader = try PostgresConnection(url)
        try reader.execute("BEGIN")
        _ = try reader.query("SELECT count(*) FROM events")
        // Were the timeout ignored, the migrator would wait for the reader, which waits for it.
        let blocked = try Self.migrate.run(["up", "--database", url, "--dir", migrations.path, "--ddl-lock-timeout", "0.5"])
        #expect(blocked.status == 3, "\(blocked.error)")
        #expect(blocked.error.contains("0002_retype.up.sql"), "\(blocked.error)")
        #expect(blocked.error.contains("55P03") && blocked.error.contains("raise --ddl-lock-timeout"), "\(blocked.error)")
        #expect(try Self.scoreType(PostgresConnection(url)) == [[.text("integer")]], "nothing of version 2 was applied")
        try reader.execute("COMMIT")
        #expect(try Self.migrate.run(["up", "--database", url, "--dir", migrations.path, "--ddl-lock-timeout", "0.5"]).status == 0)
        #expect(try Self.scoreType(PostgresConnection(url)) == [[.text("double precision")]])
    }

    /// A statement that runs past --statement-timeout is cancelled and rolled back (exit 1).
    @Test func aSlowStatementIsCancelledByTheStatementTimeout() throws {
        let url = try Self.server().createDatabase()
        let folder = temporaryFolder().appendingPathComponent("Slow/postgres")
        let directory = MigrationDirectory(path: folder.path)
        try directory.write(
            up: MigrationHeader(schema: "Slow", dialect: "postgres", direction: .up).text + "CREATE TABLE t (id integer);\nSELECT pg_sleep(30);\n",
            down: MigrationHeader(schema: "Slow", dialect: "postgres", direction: .down).text + "DROP TABLE t;\n",
            snapshot: Data("{}".utf8), as: .init(number: 1, name: "slow"))
        let run = try Self.migrate.run(["up", "--database", url, "--dir", folder.path, "--statement-timeout", "0.5"])
        #expect(run.status == 1, "\(run.error)")
        #expect(run.error.contains("0001_slow.up.sql:") && run.error.contains("statement 2 failed: 57014"), "\(run.error)")
        #expect(run.error.contains("raise --statement-timeout"), "\(run.error)")
        #expect(try PostgresConnection(url).query("SELECT to_regclass('t') IS NULL") == [[.integer(1)]])
    }

    /// 50 SIGKILLs spread over a measured run of a retyping migration on 200,000 rows: the
    /// database is always at a whole version, and a rerun completes and says what happened.
    @Test func killedMidMigrationTheDatabaseStaysAtAWholeVersion() async throws {
        let server = try Self.server()
        let migrations = try Self.eventsMigrations()
        let directory = migrations.path
        let template = try server.createDatabase()
        let templateName = String(template.split(separator: "/").last ?? "")
        @Sendable func copy() throws -> String {
            let name = "kill_" + UUID().uuidString.prefix(8).lowercased()
            try server.runPSQL(server.url(), "CREATE DATABASE \(name) TEMPLATE \(templateName)")
            return server.url(database: name)
        }
        // The processes are waited for on threads of their own, not the cooperative pool's.
        let duration = try await offThePool { () throws -> Double in
            _ = try Self.migrate.run(["up", "1", "--database", template, "--dir", directory])
            try Self.fill(template, rows: 200_000)
            let calibration = try copy()
            let clock = Date()
            let run = try Self.migrate.run(["up", "--database", calibration, "--dir", directory])
            guard run.status == 0 else { throw MigrateFailure(message: run.error) }
            return Date().timeIntervalSince(clock)
        }

        var killedMidway = 0
        for run in 0..<50 {
            let (killed, problems) = try await offThePool { () throws -> (Bool, [String]) in
                let url = try copy()
                defer { try? server.runPSQL(server.url(), "DROP DATABASE IF EXISTS \(url.split(separator: "/").last ?? "") WITH (FORCE)") }
                let started = try Self.migrate.start(["up", "--database", url, "--dir", directory])
                usleep(UInt32((Double(run) + 0.5) / 50 * duration * 1.2 * 1_000_000))
                kill(started.processIdentifier, SIGKILL)
                let killed = started.finish().status != 0
                var problems: [String] = []
                let connection = try PostgresConnection(url)
                let history = try connection.query("SELECT version FROM schemagen_migrations ORDER BY version").map { $0[0] }
                let type = try Self.scoreType(connection)
                if history == [.integer(1), .integer(2)] {
                    if type != [[.text("double precision")]] { problems.append("version 2 recorded, score is \(type)") }
                } else if history != [.integer(1)] || type != [[.text("integer")]] {
                    problems.append("history \(history) with score \(type)")
                }
                let rows = try connection.query("SELECT count(*) FROM events")
                if rows != [[.integer(200_000)]] { problems.append("rows: \(rows)") }
                let leftover = try connection.query("SELECT count(*) FROM schemagen_migration_attempts") != [[.integer(0)]]
                let rerun = try Self.migrate.run(["up", "--database", url, "--dir", directory])
                if rerun.status != 0 { problems.append("rerun: \(rerun.error)") }
                if rerun.output.contains("never finished") != leftover { problems.append("the rerun's note of the interrupted attempt: \(rerun.output)") }
                let after = try Self.scoreType(connection)
                if after != [[.text("double precision")]] { problems.append("after the rerun: \(after)") }
                return (killed, problems)
            }
            if killed { killedMidway += 1 }
            #expect(problems.isEmpty, "run \(run): \(problems)")
        }
        #expect(killedMidway >= 1, "no kill landed while the migrator ran (calibrated run: \(duration) s)")
    }

    struct MigrateFailure: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// The server dies mid-migration: the migrator says the connection was lost and the
    /// migration rolled back; after a restart the database is at the old version, and the next
    /// run says what happened and completes.
    @Test func aServerKilledMidMigrationResumesCleanly() throws {
        let server = try PostgresServer()
        defer { server.shutdown() }
        let url = try server.createDatabase()
        let migrations = try Self.eventsMigrations()
        #expect(try Self.migrate.run(["up", "1", "--database", url, "--dir", migrations.path]).status == 0)
        try Self.fill(url, rows: 1_000_000)
        // Without waiting for the server to come back (that is MigrateClusterTests').
        let started = try Self.migrate.start(["up", "--database", url, "--dir", migrations.path, "--failover-timeout", "0"])
        // Kill the server once the retype is under way: its statement is running.
        let watcher = try PostgresConnection(url)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let active = try watcher.query("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'ALTER TABLE%events%TYPE%' AND state = 'active' AND datname = current_database()")
            if active != [[.integer(0)]] { break }
            usleep(10_000)
        }
        server.stop(mode: "immediate")
        let killed = started.finish()
        #expect(killed.status == 1)
        #expect(killed.error.contains("lost") || killed.error.contains("terminat") || killed.error.contains("connection"), "\(killed.error)")
        try server.start()
        let connection = try PostgresConnection(url)
        #expect(try connection.query("SELECT version FROM schemagen_migrations ORDER BY version") == [[.integer(1)]])
        #expect(try Self.scoreType(connection) == [[.text("integer")]])
        let rerun = try Self.migrate.run(["up", "--database", url, "--dir", migrations.path])
        #expect(rerun.status == 0, "\(rerun.error)")
        #expect(rerun.output.contains("note: migration 0002 (up) started"), "\(rerun.output)")
        #expect(rerun.output.contains("never finished"), "\(rerun.output)")
        #expect(try Self.scoreType(connection) == [[.text("double precision")]])
    }

    /// A migration outside a transaction (CREATE INDEX CONCURRENTLY): one statement, run under
    /// the migrator lock, recorded after; when it fails, the error says how to recover.
    @Test func concurrentIndexBuildsRunOutsideATransaction() throws {
        let url = try Self.server().createDatabase()
        let migrations = try Self.eventsMigrations()
        #expect(try Self.migrate.run(["up", "1", "--database", url, "--dir", migrations.path]).status == 0)
        try Self.fill(url, rows: 1000)
        try PostgresConnection(url).execute("INSERT INTO events (name, score) VALUES ('dup', 1)")
        let folder = migrations.path
        // Replace version 2 with a hand-written concurrent unique index, which fails on the duplicate.
        for file in ["0002_retype.up.sql", "0002_retype.down.sql", "0002_retype.schema.json"] { try FileManager.default.removeItem(atPath: folder + "/" + file) }
        let header = MigrationHeader(schema: "Events", dialect: "postgres", direction: .up, fromVersion: 1, toVersion: 2, runsInTransaction: false)
        let downHeader = MigrationHeader(schema: "Events", dialect: "postgres", direction: .down, fromVersion: 2, toVersion: 1, runsInTransaction: false)
        try MigrationDirectory(path: folder).write(
            up: header.text + "CREATE UNIQUE INDEX CONCURRENTLY events_score_key ON events (score);\n",
            down: downHeader.text + "DROP INDEX CONCURRENTLY IF EXISTS events_score_key;\n",
            snapshot: Data("{}".utf8), as: .init(number: 2, name: "score_key"))
        let failed = try Self.migrate.run(["up", "--database", url, "--dir", folder])
        #expect(failed.status == 1)
        #expect(failed.error.contains("runs outside a transaction"), "\(failed.error)")
        #expect(failed.error.contains("INVALID"), "\(failed.error)")
        let connection = try PostgresConnection(url)
        #expect(try connection.query("SELECT count(*) FROM schemagen_migrations WHERE version = 2") == [[.integer(0)]])
        // Recover as the message says, then run again.
        try connection.execute("DROP INDEX IF EXISTS events_score_key; DELETE FROM events WHERE name = 'dup'")
        let rerun = try Self.migrate.run(["up", "--database", url, "--dir", folder])
        #expect(rerun.status == 0, "\(rerun.error)")
        #expect(try connection.query("SELECT indisvalid FROM pg_index WHERE indexrelid = 'events_score_key'::regclass") == [[.integer(1)]])
        #expect(try Self.migrate.run(["down", "--database", url, "--dir", folder]).status == 0)
        // Two statements outside a transaction are refused before anything runs.
        try MigrationDirectory(path: folder).write(
            up: header.text + "CREATE INDEX CONCURRENTLY a ON events (name);\nCREATE INDEX CONCURRENTLY b ON events (score);\n",
            down: downHeader.text + "SELECT 1;\n", snapshot: Data("{}".utf8), as: .init(number: 3, name: "two"))
        let two = try Self.migrate.run(["up", "--database", url, "--dir", folder])
        #expect(two.status == 1)
        #expect(two.error.contains("must hold exactly one statement"), "\(two.error)")
    }
}
