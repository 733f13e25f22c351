import Foundation
import MigrationFiles
import MigrationPlanner
import MigratorPostgres
import MigratorSQLite
import SQLiteKit
import SchemaMetadata
import TestSupport
import Testing

@testable import MigrateCLI
@testable import MigratorCore

extension Migrator {
    /// The SQLite connection of a migrator these tests opened on one.
    var connection: SQLiteConnection { (database as! SQLiteMigrationDatabase).connection }
}

func flightsScripts() throws -> [MigrationScript] {
    try MigrationScriptLoader.load(directory: repositoryRoot.appendingPathComponent("Migrations/Flights").path)
}

func versions(_ migrator: Migrator) throws -> [Int] { try migrator.history().map(\.version) }

/// Small migrations written by hand for the refusal cases.
func script(_ version: Int, _ up: String, down: String = "SELECT 1;") -> MigrationScript {
    MigrationScript(version: version, name: "m\(version)", up: up, down: down)
}

@Suite struct MigratorTests {
    @Test func upDownStatusAndBaselineOnARealFile() throws {
        let path = temporaryPath()
        let migrator = Migrator(connection: try SQLiteConnection(path: path), schema: "Flights", scripts: try flightsScripts())
        #expect(try migrator.status().allSatisfy { $0.state == .pending })

        var events: [String] = []
        let applied = try migrator.up(.count(2)) { event in
            if case .finished(let script, _, _) = event { events.append(script.label) }
        }
        #expect(applied.map(\.version) == [1, 2])
        #expect(events == ["0001_create_flights", "0002_add_airports_elevation"])
        try migrator.up()
        #expect(try versions(migrator) == [1, 2, 3, 4, 5])
        #expect(try migrator.up().isEmpty, "nothing pending")

        try migrator.down(.count(2))
        #expect(try versions(migrator) == [1, 2, 3])
        #expect(throws: MigratorError.self) { try migrator.down(.version(1)) }  // 0002's down loses data
        try migrator.down(.version(1), options: .init(allowDestructive: true))
        #expect(try versions(migrator) == [1])
        try migrator.up(.version(3))
        #expect(try versions(migrator) == [1, 2, 3])

        // A database that lacks the version's tables is refused, and nothing is recorded.
        let adopted = Migrator(connection: try SQLiteConnection(path: temporaryPath()), schema: "Flights", scripts: try flightsScripts())
        #expect {
            try adopted.baseline(2)
        } throws: { error in
            guard case MigratorError.baselineMismatch(2, let missing) = error else { return false }
            return missing.contains("table airports") && missing.contains("table flights")
        }
        #expect(try versions(adopted).isEmpty)
        // One that has them (built by hand here) is adopted without running anything.
        for script in try flightsScripts().prefix(2) { try adopted.connection.executeScript(script.up) }
        let schemaSQL = "SELECT group_concat(sql, ';') FROM sqlite_schema WHERE name NOT LIKE 'schemagen%'"
        let before = try adopted.connection.query(schemaSQL)
        #expect(try adopted.pendingBaseline(2).map(\.version) == [1, 2], "what a dry run reports")
        #expect(try versions(adopted).isEmpty, "the dry run recorded nothing")
        try adopted.baseline(2)
        #expect(try versions(adopted) == [1, 2])
        #expect(try adopted.connection.query(schemaSQL) == before, "nothing ran")
        // A column the version has and the database lacks is named.
        try adopted.connection.execute("ALTER TABLE airports DROP COLUMN elevation;")
        #expect {
            try adopted.baseline(3)
        } throws: { error in
            guard case MigratorError.baselineMismatch(3, let missing) = error else { return false }
            return missing == ["column airports.elevation_feet"]
        }
    }

    @Test func severalSchemasShareOneDatabase() throws {
        let path = temporaryPath()
        let connection = try SQLiteConnection(path: path)
        let flights = Migrator(connection: connection, schema: "Flights", scripts: try flightsScripts())
        let todo = Migrator(connection: connection, schema: "Todo", scripts: try MigrationScriptLoader.load(directory: repositoryRoot.appendingPathComponent("Migrations/Todo").path))
        try flights.up()
        try todo.up()
        #expect(try versions(flights) == [1, 2, 3, 4, 5])
        #expect(try versions(todo) == [1, 2, 3, 4])
        try todo.down(.version(0), options: .init(allowDestructive: true))
        #expect(try versions(todo) == [])
        #expect(try versions(flights) == [1, 2, 3, 4, 5])
    }

    @Test func aChangedAppliedFileIsRefused() throws {
        let migrator = Migrator(connection: try SQLiteConnection(path: temporaryPath()), schema: "S", scripts: [script(1, "CREATE TABLE a (x INTEGER);")])
        try migrator.up()
        let edited = Migrator(connection: migrator.connection, schema: "S", scripts: [script(1, "CREATE TABLE a (x INTEGER, y TEXT);"), script(2, "CREATE TABLE b (x INTEGER);")])
        #expect(throws: MigratorError.self) { try edited.up() }
        do {
            try edited.up()
        } catch {
            #expect(error.description.contains("0001_m1.up.sql has changed since"))
        }
        #expect(try edited.validate().count == 1)
    }

    @Test func aMissingFileForAnAppliedVersionIsRefused() throws {
        let migrator = Migrator(connection: try SQLiteConnection(path: temporaryPath()), schema: "S", scripts: [script(1, "CREATE TABLE a (x INTEGER);"), script(2, "CREATE TABLE b (x INTEGER);")])
        try migrator.up()
        let missing = Migrator(connection: migrator.connection, schema: "S", scripts: [script(1, "CREATE TABLE a (x INTEGER);")])
        do {
            try missing.up()
            Issue.record("expected a refusal")
        } catch {
            guard case .missingFile(2, _) = error else {
                Issue.record("wrong error \(error)")
                return
            }
        }
        #expect(try missing.status().last?.state == .fileMissing(at: try missing.history().last!.appliedAt))
    }

    @Test func aMigrationNumberedBelowTheNewestAppliedOneNeedsPermission() throws {
        let connection = try SQLiteConnection(path: temporaryPath())
        try Migrator(connection: connection, schema: "S", scripts: [script(1, "CREATE TABLE a (x INTEGER);"), script(3, "CREATE TABLE c (x INTEGER);")]).up()
        let merged = Migrator(
            connection: connection, schema: "S", scripts: [script(1, "CREATE TABLE a (x INTEGER);"), script(2, "CREATE TABLE b (x INTEGER);"), script(3, "CREATE TABLE c (x INTEGER);")])
        do {
            try merged.up()
            Issue.record("expected a refusal")
        } catch {
            #expect(error.description.contains("0002_m2.up.sql is numbered below the newest applied migration (0003)"))
            // The library speaks of its options; `migrate` adds its own flags and commands.
            #expect(error.description.contains("allow out-of-order migrations") && !error.description.contains("--"), "\(error)")
            #expect(MigrateAdvice.message(error).contains("run `schemagen rehash`; to apply it as it is, pass --allow-out-of-order"), "\(MigrateAdvice.message(error))")
        }
        try merged.up(options: .init(allowOutOfOrder: true))
        #expect(try versions(merged) == [1, 2, 3])
    }

    @Test func aFailingStatementLeavesNothingBehindAndNamesItsLine() throws {
        let migrator = Migrator(
            connection: try SQLiteConnection(path: temporaryPath()), schema: "S",
            scripts: [
                script(1, "-- header\n\nCREATE TABLE a (x INTEGER);\nINSERT INTO a VALUES (1);\n\nINSERT INTO missing VALUES (2);\n")
            ])
        do {
            try migrator.up()
            Issue.record("expected a failure")
        } catch {
            guard case .statementFailed(let file, let statement, let line, let message) = error else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(file == "0001_m1.up.sql")
            #expect(statement == 3)
            #expect(line == 6)
            #expect(message.contains("no such table: missing"))
        }
        #expect(try migrator.connection.query("SELECT name FROM sqlite_schema") == [], "neither the table nor the history remain")
    }

    @Test func foreignKeyViolationsAfterARebuildRollBack() throws {
        let connection = try SQLiteConnection(path: temporaryPath())
        try connection.execute("PRAGMA foreign_keys = ON;")
        let create = script(
            1,
            "CREATE TABLE parent (id INTEGER PRIMARY KEY);\nCREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent (id));\nINSERT INTO parent VALUES (1);\nINSERT INTO child VALUES (1, 1);\n"
        )
        let rebuild = script(
            2,
            MigrationHeader(schema: "S", direction: .up, foreignKeysOff: true).text
                + "CREATE TABLE new_parent (id INTEGER PRIMARY KEY);\nDROP TABLE parent;\nALTER TABLE new_parent RENAME TO parent;\n")
        let migrator = Migrator(connection: connection, schema: "S", scripts: [create, rebuild])
        try migrator.up(.count(1))
        do {
            try migrator.up()
            Issue.record("expected a refusal")
        } catch {
            guard case .foreignKeyViolations(_, let violations) = error else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(violations == ["table 'child' row 1 references 'parent' (foreign key 0)"])
        }
        #expect(try versions(migrator) == [1])
        #expect(try connection.query("SELECT count(*) FROM parent") == [[.integer(1)]], "the rebuild was rolled back")
        #expect(try connection.query("PRAGMA foreign_keys;") == [[.integer(1)]], "enforcement is back on")
    }

    /// Only the header block decides how a file runs: a sentence in the body that looks like a
    /// directive changes nothing, and an unknown directive stops the migration before it runs.
    @Test func proseNeverChangesBehaviourAndUnknownDirectivesAreErrors() throws {
        let connection = try SQLiteConnection(path: temporaryPath())
        try connection.execute("PRAGMA foreign_keys = ON;")
        let create = script(
            1,
            "CREATE TABLE parent (id INTEGER PRIMARY KEY);\nCREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent (id));\nINSERT INTO parent VALUES (1);\nINSERT INTO child VALUES (1, 1);\n"
        )
        let body = "CREATE TABLE new_parent (id INTEGER PRIMARY KEY);\nDROP TABLE parent;\nALTER TABLE new_parent RENAME TO parent;\n"
        let prose = script(
            2,
            MigrationHeader(schema: "S", direction: .up, foreignKeysOff: false).text
                + "-- Rebuilds tables: run with PRAGMA foreign_keys=OFF around the transaction and PRAGMA foreign_key_check before commit.\n" + body)
        let migrator = Migrator(connection: connection, schema: "S", scripts: [create, prose])
        try migrator.up(.count(1))
        // Foreign keys stay on, as the header says: dropping the referenced table fails.
        #expect(throws: MigratorError.self) { try migrator.up() }
        #expect(try versions(migrator) == [1])

        let unknown = script(2, "-- schemagen-migration: 1\n-- direction: up\n-- transaction: yes\n-- foreign-keys: on\n-- loses-data: no\n-- vacuum: yes\n\nDROP TABLE child;\n")
        let strict = Migrator(connection: connection, schema: "S", scripts: [create, unknown])
        do {
            try strict.up()
            Issue.record("an unknown directive was accepted")
        } catch {
            guard case .badHeader(let file, let problem) = error else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(file == "0002_m2.up.sql" && problem.line == 6)
            #expect(error.description.contains("unknown header key 'vacuum'"))
        }
        #expect(try connection.query("SELECT count(*) FROM child") == [[.integer(1)]], "nothing ran")
    }

    @Test func aSecondMigratorWaitsThenSeesTheWorkDone() throws {
        let path = temporaryPath()
        let first = try SQLiteConnection(path: path)
        try first.execute("BEGIN IMMEDIATE;")
        let waiting = Migrator(connection: try SQLiteConnection(path: path), schema: "S", scripts: [script(1, "CREATE TABLE a (x INTEGER);")], lockTimeoutSeconds: 0.2)
        do {
            try waiting.up()
            Issue.record("expected a lock timeout")
        } catch {
            guard case .locked = error else {
                Issue.record("wrong error \(error)")
                return
            }
        }
        try first.execute("ROLLBACK;")
        try waiting.up()
        #expect(try versions(waiting) == [1])
    }
}
