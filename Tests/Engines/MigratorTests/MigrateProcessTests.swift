import Foundation
import MigrationFiles
import MigrationPlanner
import MigratorPostgres
import MigratorSQLite
import RelationalModel
import SQLiteKit
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

@testable import MigratorCore

/// The `migrate` executable run as users and applications do: concurrently, killed midway,
/// and through its command line.
@Suite(.blocking) struct MigrateProcessTests {
    static let tool = BuiltTool("migrate")
    static var executable: URL { tool.url }

    static func start(_ arguments: [String], environment: [String: String]? = nil, in folder: URL = repositoryRoot) throws -> BuiltTool.Running {
        try tool.start(arguments, environment: environment, in: folder)
    }

    static func finish(_ started: BuiltTool.Running) -> BuiltTool.Run { started.finish() }

    static func migrate(_ arguments: [String], environment: [String: String]? = nil, in folder: URL = repositoryRoot) throws -> BuiltTool.Run {
        try tool.run(arguments, environment: environment, in: folder)
    }

    // MARK: - Commands

    @Test func commandsAndExitStatuses() throws {
        let database = temporaryPath("nested/folder/flights.sqlite")
        let base = ["--database", database, "--dir", "Migrations/Flights"]
        let up = try Self.migrate(["up", "2"] + base)
        #expect(up.status == 0)
        #expect(up.output.hasPrefix("applied  0001_create_flights ("))
        #expect(FileManager.default.fileExists(atPath: database), "the database and its folder are created")

        let status = try Self.migrate(["status", "--format", "json"] + base)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [[String: Any]])
        #expect(rows.map { $0["state"] as? String } == ["applied", "applied", "pending", "pending", "pending"])
        #expect(rows[0]["checksum"] as? String == "ok")

        let dryRun = try Self.migrate(["up", "--dry-run"] + base)
        #expect(dryRun.output.contains("-- apply: Migrations/Flights/0003_rename_airports_elevation_to_elevation_feet.up.sql"))
        #expect(try Self.migrate(["status"] + base).output.contains("pending"), "a dry run changes nothing")

        #expect(try Self.migrate(["up", "--to", "4"] + base).status == 0)
        let lossy = try Self.migrate(["down", "--to", "1"] + base)
        #expect(lossy.status == 1)
        #expect(lossy.error.contains("0002_add_airports_elevation.down.sql loses data it cannot restore"))
        #expect(try Self.migrate(["redo"] + base).status == 0)
        #expect(try Self.migrate(["validate"] + base).status == 0)
        #expect(try Self.migrate(["down", "--to", "0", "--allow-destructive"] + base).status == 0)

        let viaEnvironment = try Self.migrate(["status", "--dir", "Migrations/Todo"], environment: ["DATABASE_URL": "sqlite:" + database])
        #expect(viaEnvironment.status == 0)
        #expect(try Self.migrate(["status", "--dir", "Migrations/Todo"], environment: [:]).status == 2, "no database given")
        #expect(try Self.migrate(["up", "--bogus"] + base).status == 2)
        #expect(try Self.migrate(["baseline", "9"] + base).status == 1)
        // Numbers a flag refuses, each said with the flag and what it expects.
        for (flag, value, expected) in [
            ("--lock-timeout", "-1", "a number of seconds"), ("--batch-time", "1.5", "a whole number"), ("--max-wal-rate", "fast", "a number"),
            ("--max-replica-lag", "-3", "a whole number"), ("--replica-lag-timeout", "inf", "a number"),
        ] {
            let refused = try Self.migrate(["up", flag, value] + base)
            #expect(refused.status == 2, "\(flag) \(value): \(refused.status)")
            #expect(refused.error.contains("migrate: error: \(flag) expects \(expected), found '\(value)'"), "\(refused.error)")
        }
    }

    @Test func withoutDirEverySchemaSharesTheDatabase() throws {
        let database = temporaryPath()
        let up = try Self.migrate(["up", "--database", database])
        #expect(up.status == 0, "\(up.error)")
        // Every migration of every schema folder (SQLite's, beside each postgres/ folder).
        let folders = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.path + "/Migrations").filter { !$0.contains(".") }
        let planned = try folders.reduce(0) { count, schema in
            count + (try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.path + "/Migrations/" + schema)).filter { $0.hasSuffix(".up.sql") }.count
        }
        #expect(planned >= 16)
        #expect(up.output.split(separator: "\n").filter { $0.hasPrefix("applied ") }.count == planned)
        let status = try Self.migrate(["status", "--database", database, "--format", "json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [[String: Any]])
        #expect(Set(rows.compactMap { $0["schema"] as? String }) == ["Dispatch", "Flights", "Garage", "Inbox", "Notes", "Tasks", "Todo", "Users"])
        #expect(rows.allSatisfy { $0["state"] as? String == "applied" })
        #expect(try Self.migrate(["validate", "--database", database]).status == 0)
        let ambiguous = try Self.migrate(["down", "--database", database])
        #expect(ambiguous.status == 2)
        #expect(ambiguous.error.contains("pass --dir Migrations/<Schema>"))
    }

    @Test func aConfigFileGivesTheDatabaseAndTheMigrationsRoot() throws {
        let folder = temporaryFolder().appendingPathComponent("migrate-config")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("db"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("M"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Migrations/Todo"), to: folder.appendingPathComponent("M/Todo"))
        try "database: db/app.sqlite\nmigrations: M\n".write(to: folder.appendingPathComponent(".schemagen.yaml"), atomically: true, encoding: .utf8)
        let run = try Self.migrate(["up"], environment: [:], in: folder)
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output.hasPrefix("applied  0001_create_todo"))
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("db/app.sqlite").path))
        // The environment wins over the file.
        let other = folder.appendingPathComponent("other.sqlite").path
        #expect(try Self.migrate(["up"], environment: ["DATABASE_URL": other], in: folder).status == 0)
        #expect(FileManager.default.fileExists(atPath: other))
    }

    @Test func aFileThatIsNotADatabaseIsNamed() throws {
        let path = temporaryPath("garbage.sqlite")
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: path))
        let run = try Self.migrate(["status", "--database", path, "--dir", "Migrations/Todo"])
        #expect(run.status == 1)
        #expect(run.error.contains("\(path): file is not a database"), "\(run.error)")
        #expect(run.error.contains("not a SQLite database"), "\(run.error)")
    }

    // MARK: - Progress on a terminal

    /// `migrate up` under a pseudo-terminal (`script`), as a user sees it: the status line counts
    /// the file's real statements, and the rebuild's row copy counts rows against the table's.
    @Test func aTerminalShowsTrueStatementCountsAndRowsCopied() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            Issue.record("SKIPPED: /usr/bin/script (util-linux) is missing, so no pseudo-terminal test ran")
            return
        }
        // A planned rebuild (type change and index) on a table of 300,000 rows.
        let folder = temporaryFolder()
        let migrations = MigrationDirectory(path: folder.appendingPathComponent("Migrations/Events").path)
        func snapshot(_ yaml: String) throws -> SchemaSnapshot {
            SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "events.yaml", text: yaml)).schema))
        }
        let v1 = try snapshot("schema: Events\nversion: 1\nentities:\n  Event:\n    table: events\n    attributes:\n      name: String\n      score: Int\n")
        let v2 = try snapshot("schema: Events\nversion: 2\nentities:\n  Event:\n    table: events\n    attributes:\n      name: {type: String, indexed: true}\n      score: Double\n")
        try migrations.write(Migration(from: nil, to: v1), as: .init(number: 1, name: "create"))
        try migrations.write(Migration(from: v1, to: v2), as: .init(number: 2, name: "rebuild"))
        let database = folder.appendingPathComponent("terminal.sqlite").path
        #expect(try Self.migrate(["up", "1", "--database", database, "--dir", migrations.path]).status == 0)
        try SQLiteConnection(path: database).execute(
            """
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
            INSERT INTO events (name, score) SELECT 'event ' || i, i FROM n;
            COMMIT;
            """)
        let statements = SQLiteConnection.statements(in: try #require(migrations.contents(of: "0002_rebuild.up.sql"))).count
        #expect(statements > 3)

        let command = [Self.executable.path, "up", "--database", database, "--dir", migrations.path].map { "'\($0)'" }.joined(separator: " ")
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        script.arguments = ["-qec", command, "/dev/null"]
        script.currentDirectoryURL = repositoryRoot
        let output = Pipe()
        script.standardOutput = output
        script.standardInput = FileHandle.nullDevice
        try script.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        try? output.fileHandleForReading.close()
        #expect(exitStatus(of: script) == 0, "\(text)")
        #expect(text.contains("statement 1 of \(statements)"), "\(text)")
        #expect(text.contains("statement \(statements) of \(statements)"), "\(text)")
        #expect(!text.contains(" of 0"), "\(text)")
        #expect(text.contains("copying events "), "\(text)")
        #expect(text.contains(" of 300,000 rows ("), "\(text)")
        #expect(text.contains("applied  0002_rebuild"), "\(text)")
    }

    // MARK: - Concurrency

    @Test func concurrentMigratorsApplyEachMigrationOnce() throws {
        let database = temporaryPath()
        let processes = try (0..<5).map { _ in try Self.start(["up", "--database", database, "--dir", "Migrations/Flights"]) }
        let runs = processes.map(Self.finish)
        #expect(runs.allSatisfy { $0.status == 0 }, "\(runs.map(\.error))")
        let appliedLines = runs.flatMap { $0.output.split(separator: "\n") }.filter { $0.hasPrefix("applied ") }
        #expect(appliedLines.count == 5, "each migration applied by exactly one process: \(appliedLines)")
        let connection = try SQLiteConnection(path: database)
        #expect(try connection.query("SELECT version, count(*) FROM schemagen_migrations GROUP BY version") == (1...5).map { [.integer(Int64($0)), .integer(1)] })
    }

    // MARK: - Crashes

    /// A table rebuild on 200,000 rows, the migrator killed with SIGKILL at random moments:
    /// afterwards the file is intact, the history matches the tables, and a rerun completes.
    @Test func killedMidRebuildTheDatabaseStaysConsistent() async throws {
        let (folder, migrations, template) = try Self.rebuildFixture(rows: 200_000)
        let directory = migrations.path

        // How long an uninterrupted run takes, so kills land before, during and after it.
        let duration = try await offThePool { try Self.uninterruptedRun(folder, migrations, template) }

        // Kills spread evenly over 1.2 times that run: before, during and after the work, on a
        // loaded machine as on an idle one, without depending on luck. Each run waits for its
        // processes on a thread of its own (not the cooperative pool the async tests share),
        // and returns what it found wrong.
        var killedMidway = 0
        for run in 0..<50 {
            let (killed, problems) = try await offThePool { () throws -> (Bool, [String]) in
                let path = folder.appendingPathComponent("run-\(run).sqlite").path
                defer { try? FileManager.default.removeItem(atPath: path) }
                try FileManager.default.copyItem(atPath: template, toPath: path)
                let started = try Self.start(["up", "--database", path, "--dir", directory])
                usleep(UInt32((Double(run) + 0.5) / 50 * duration * 1.2 * 1_000_000))
                kill(started.processIdentifier, SIGKILL)
                let killed = Self.finish(started).status != 0
                var problems: [String] = []
                let connection = try SQLiteConnection(path: path)
                let integrity = try connection.query("PRAGMA integrity_check;")
                if integrity != [[.text("ok")]] { problems.append("integrity: \(integrity)") }
                let history = try connection.query("SELECT version FROM schemagen_migrations ORDER BY version").map { $0[0] }
                let scoreType = try connection.query("SELECT type FROM pragma_table_info('event') WHERE name = 'score'")
                // The history says exactly what the tables are.
                if history == [.integer(1), .integer(2)] {
                    if scoreType != [[.text("REAL")]] { problems.append("version 2 recorded, score is \(scoreType)") }
                } else if history != [.integer(1)] || scoreType != [[.text("INTEGER")]] {
                    problems.append("history \(history) with score \(scoreType)")
                }
                let rows = try connection.query("SELECT count(*) FROM event")
                if rows != [[.integer(200_000)]] { problems.append("rows: \(rows)") }
                let rerun = try Self.migrate(["up", "--database", path, "--dir", directory])
                if rerun.status != 0 { problems.append("rerun: \(rerun.error)") }
                let after = try connection.query("SELECT count(*), typeof(score) FROM event")
                if after != [[.integer(200_000), .text("real")]] { problems.append("after the rerun: \(after)") }
                return (killed, problems)
            }
            if killed { killedMidway += 1 }
            #expect(problems.isEmpty, "run \(run): \(problems)")
        }
        #expect(killedMidway >= 1, "no kill landed while the migrator ran (calibrated run: \(duration) s)")
    }

    /// SIGINT during a table rebuild interrupts SQLite's statement: the migration rolls back, the
    /// exit status is 130, and the file is at the old version, intact.
    @Test func anInterruptRollsARebuildBack() throws {
        let (folder, migrations, template) = try Self.rebuildFixture(rows: 400_000)
        let duration = try Self.uninterruptedRun(folder, migrations, template)
        var interrupted = 0
        for fraction in [0.5, 0.35, 0.2, 0.1, 0.6, 0.05] where interrupted == 0 {
            let path = folder.appendingPathComponent("run-\(fraction).sqlite").path
            try FileManager.default.copyItem(atPath: template, toPath: path)
            let started = try Self.start(["up", "--database", path, "--dir", migrations.path])
            usleep(UInt32(fraction * duration * 1_000_000))
            kill(started.processIdentifier, SIGINT)
            let run = Self.finish(started)
            let connection = try SQLiteConnection(path: path)
            #expect(try connection.query("PRAGMA integrity_check;") == [[.text("ok")]])
            let history = try connection.query("SELECT version FROM schemagen_migrations ORDER BY version").map { $0[0] }
            if run.status == 130 {
                interrupted += 1
                #expect(run.error.contains("SIGINT received"), "\(run.error)")
                #expect(run.error.contains("interrupted: "), "\(run.error)")
                #expect(history == [.integer(1)])
                #expect(try connection.query("SELECT type FROM pragma_table_info('event') WHERE name = 'score'") == [[.text("INTEGER")]])
                #expect(try connection.query("SELECT count(*) FROM event") == [[.integer(400_000)]])
            } else {
                #expect(run.status == 0, "\(run.error)")
            }
        }
        #expect(interrupted == 1, "no SIGINT landed while the rebuild ran (calibrated run: \(duration) s)")
    }

    /// Events at version 1 holding `rows` rows in `template.sqlite`, and version 2, which
    /// rebuilds the table (a type change and an index).
    static func rebuildFixture(rows: Int) throws -> (folder: URL, migrations: MigrationDirectory, template: String) {
        let folder = temporaryFolder()
        let migrations = MigrationDirectory(path: folder.appendingPathComponent("Migrations/Events").path)
        func snapshot(_ yaml: String) throws -> SchemaSnapshot {
            SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "events.yaml", text: yaml)).schema))
        }
        let v1 = try snapshot("schema: Events\nversion: 1\nentities:\n  Event:\n    attributes:\n      name: String\n      score: Int\n")
        let v2 = try snapshot("schema: Events\nversion: 2\nentities:\n  Event:\n    attributes:\n      name: {type: String, indexed: true}\n      score: Double\n")
        try migrations.write(Migration(from: nil, to: v1), as: .init(number: 1, name: "create"))
        try migrations.write(Migration(from: v1, to: v2), as: .init(number: 2, name: "rebuild"))
        let template = folder.appendingPathComponent("template.sqlite").path
        let seed = Migrator(connection: try SQLiteConnection(path: template), schema: "Events", scripts: try MigrationScriptLoader.load(directory: migrations.path))
        try seed.up(.count(1))
        try seed.connection.execute(
            """
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO event (name, score) SELECT 'event ' || i, i FROM n;
            COMMIT;
            """)
        return (folder, migrations, template)
    }

    /// How long `migrate up` of the fixture takes when nothing stops it, on a copy of the template.
    static func uninterruptedRun(_ folder: URL, _ migrations: MigrationDirectory, _ template: String) throws -> Double {
        let calibration = folder.appendingPathComponent("calibration.sqlite").path
        try FileManager.default.copyItem(atPath: template, toPath: calibration)
        let clock = Date()
        #expect(try migrate(["up", "--database", calibration, "--dir", migrations.path]).status == 0)
        return Date().timeIntervalSince(clock)
    }
}
