import DatabaseLocation
import Foundation
import TestSupport
import Testing

/// What `--database` means: a SQLite path only when it is a path. Each test reproduces a defect
/// found by a DBA (a mistyped URL migrated a file named after it, password included; `status`
/// and dry runs created files) and shows it fixed.
@Suite(.blocking) struct DatabaseSelectionTests {
    static let migrate = BuiltTool("migrate")
    static let todo = BuiltTool("todo")
    static let flights = BuiltTool("flights")
    static let schemagen = BuiltTool("schemagen")
    static let secret = "S3cret-pw"

    /// Everything below a folder, as relative paths.
    static func contents(_ folder: URL) -> [String] {
        (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []).sorted()
    }

    @Test func theFormsAreClassified() throws {
        #expect(try DatabaseLocation.parse("app.sqlite") == .sqlite(path: "app.sqlite"))
        #expect(try DatabaseLocation.parse("./data/x=1.db") == .sqlite(path: "./data/x=1.db"))
        #expect(try DatabaseLocation.parse("/abs/app.sqlite") == .sqlite(path: "/abs/app.sqlite"))
        #expect(try DatabaseLocation.parse("sqlite:rel/app.sqlite") == .sqlite(path: "rel/app.sqlite"))
        #expect(try DatabaseLocation.parse("sqlite:///abs/app.sqlite") == .sqlite(path: "/abs/app.sqlite"))
        #expect(try DatabaseLocation.parse("file:app.sqlite") == .sqlite(path: "app.sqlite"))
        #expect(try DatabaseLocation.parse(":memory:") == .sqlite(path: ":memory:"))
        #expect(try DatabaseLocation.parse("postgres://u:p@h/db") == .postgres(connection: "postgres://u:p@h/db"))
        #expect(try DatabaseLocation.parse("POSTGRESQL://h/db") == .postgres(connection: "POSTGRESQL://h/db"))
        #expect(try DatabaseLocation.parse("host=db.internal port=5432 dbname=shop password='a b'") == .postgres(connection: "host=db.internal port=5432 dbname=shop password='a b'"))
        #expect(throws: DatabaseLocationError.unknownScheme(scheme: "postgress", redacted: "postgress://app:***@host/saas", suggestion: "postgres://")) {
            try DatabaseLocation.parse("postgress://app:\(Self.secret)@host/saas")
        }
        #expect(throws: DatabaseLocationError.unknownScheme(scheme: "mysql", redacted: "mysql://root:***@h/db", suggestion: nil)) {
            try DatabaseLocation.parse("mysql://root:\(Self.secret)@h/db")
        }
        #expect(throws: DatabaseLocationError.self) { try DatabaseLocation.parse("postgres:/h/db") }
        // A server typed without its scheme is never a file (issue 37: `127.0.0.1:25432/ops`
        // created a folder and a SQLite file, and said "up to date").
        for server in ["127.0.0.1:25432/ops", "db1:5432/shop", "app@db1.internal:5432/shop?sslmode=require", "[::1]:5432/shop", "localhost:5432"] {
            #expect(throws: DatabaseLocationError.serverWithoutScheme(redacted: server, suggestion: "postgres://" + server)) { try DatabaseLocation.parse(server) }
        }
        #expect(throws: DatabaseLocationError.serverWithoutScheme(redacted: "app:***@db:5432/x", suggestion: "postgres://app:***@db:5432/x")) {
            try DatabaseLocation.parse("app:\(Self.secret)@db:5432/x")
        }
        #expect(try DatabaseLocation.parse("./127.0.0.1:25432/ops") == .sqlite(path: "./127.0.0.1:25432/ops"), "a path that says it is one")
        #expect(try DatabaseLocation.parse("sqlite:2024") == .sqlite(path: "2024"))
        #expect(throws: DatabaseLocationError.empty) { try DatabaseLocation.parse("  ") }
    }

    @Test func passwordsAreMaskedInEveryForm() {
        #expect(DatabaseLocation.redacted("postgres://app:\(Self.secret)@h:5432/db?sslmode=require") == "postgres://app:***@h:5432/db?sslmode=require")
        #expect(DatabaseLocation.redacted("postgres://app@h/db?password=\(Self.secret)&sslmode=disable") == "postgres://app@h/db?password=***&sslmode=disable")
        #expect(DatabaseLocation.redacted("host=h password = '\(Self.secret) with \\' quote' dbname=x") == "host=h password = *** dbname=x")
        #expect(DatabaseLocation.redacted("postgres://bob@h/db?password=\(Self.secret)&sslpassword=\(Self.secret)") == "postgres://bob@h/db?password=***&sslpassword=***")
        #expect(DatabaseLocation.redacted("host=h sslpassword=\(Self.secret)") == "host=h sslpassword=***")
        #expect(DatabaseLocation.redacted("host=h PASSWORD=\(Self.secret)") == "host=h PASSWORD=***")
        #expect(DatabaseLocation.redacted("host=h dbname=mypassword=x") == "host=h dbname=mypassword=x", "only a key named password is masked")
        #expect(DatabaseLocation.password(in: "host=h password='a \\'b' x=1") == "a 'b")
        #expect(DatabaseLocation.password(in: "postgres://u:p%40ss@h/db") == "p@ss")
    }

    /// The defect: `migrate up --database 'postgress://...'` created `./postgress:/app:S3cret-pw@host/saas`,
    /// migrated it and exited 0.
    @Test func aMistypedURLIsAUsageErrorAndCreatesNothing() throws {
        let folder = temporaryFolder()
        for command in ["up", "status", "validate", "down", "baseline 1", "repair --yes"] {
            let words = command.split(separator: " ").map(String.init)
            let run = try Self.migrate.run(words + ["--database", "postgress://app:\(Self.secret)@host/saas", "--dir", repositoryRoot.path + "/Migrations/Flights"], in: folder)
            #expect(run.status == 2, "\(command): \(run.error)")
            #expect(run.error.contains("'postgress://app:***@host/saas'") && run.error.contains("did you mean 'postgres://'?"), "\(command): \(run.error)")
            #expect(!(run.output + run.error).contains(Self.secret), "\(command)")
        }
        let viaEnvironment = try Self.migrate.run(
            ["status", "--dir", repositoryRoot.path + "/Migrations/Flights"],
            environment: ["DATABASE_URL": "postgresq://app:\(Self.secret)@host/saas"], in: folder)
        #expect(viaEnvironment.status == 2 && viaEnvironment.error.contains("DATABASE_URL: 'postgresq://app:***@host/saas'"), "\(viaEnvironment.error)")
        #expect(Self.contents(folder).isEmpty, "created: \(Self.contents(folder))")
    }

    /// `host:port/db` is refused with the `postgres://` form, and creates nothing.
    @Test func aServerWithoutItsSchemeIsAUsageError() throws {
        let folder = temporaryFolder()
        for command in ["up", "status"] {
            let run = try Self.migrate.run([command, "-d", "127.0.0.1:25432/ops", "--dir", repositoryRoot.path + "/Migrations/Flights"], in: folder)
            #expect(run.status == 2, "\(command): \(run.output)\(run.error)")
            #expect(run.error.contains("did you mean 'postgres://127.0.0.1:25432/ops'?"), "\(command): \(run.error)")
        }
        #expect(Self.contents(folder).isEmpty, "created: \(Self.contents(folder))")
    }

    /// `--connect-retry 3` keeps trying for the 3 s it names (it gave up after 1.5 s while
    /// saying 3), and says how long it tried.
    @Test func connectRetryWaitsAsLongAsItSays() throws {
        let started = Date()
        let run = try Self.migrate.run(["status", "--database", "postgres://app@127.0.0.1:1/shop", "--connect-retry", "3", "--dir", repositoryRoot.path + "/Migrations/Flights"])
        let waited = Date().timeIntervalSince(started)
        #expect(run.status == 2, "\(run.error)")
        #expect(waited >= 3, "gave up after \(waited) s")
        #expect(run.error.contains("(retried for 3"), "\(run.error)")
    }

    /// A libpq keyword string is PostgreSQL (here a server that is not there), never a file.
    @Test func aKeywordStringIsPostgreSQL() throws {
        let folder = temporaryFolder()
        let run = try Self.migrate.run(["up", "--database", "host=127.0.0.1 port=1 dbname=saas password=\(Self.secret)", "--dir", repositoryRoot.path + "/Migrations/Flights/postgres"], in: folder)
        #expect(run.status == 2, "\(run.error)")
        #expect(run.error.contains("cannot connect to host=127.0.0.1 port=1 dbname=saas password=***"), "\(run.error)")
        #expect(!(run.output + run.error).contains(Self.secret))
        #expect(Self.contents(folder).isEmpty, "created: \(Self.contents(folder))")
    }

    /// `status`, `validate` and every `--dry-run` read a missing file as an empty database and
    /// create nothing, folder included.
    @Test func readingCommandsNeverCreateTheFile() throws {
        let folder = temporaryFolder()
        let base = ["--database", "new/app.sqlite", "--dir", repositoryRoot.path + "/Migrations/Flights"]
        let status = try Self.migrate.run(["status"] + base, in: folder)
        #expect(status.status == 0 && status.output.components(separatedBy: "pending").count == 6, "\(status.output)\(status.error)")
        #expect(try Self.migrate.run(["validate"] + base, in: folder).status == 0)
        let dryUp = try Self.migrate.run(["up", "--dry-run"] + base, in: folder)
        #expect(dryUp.status == 0 && dryUp.output.contains("0005_follow_aeroapi_nullability.up.sql"))
        #expect(try Self.migrate.run(["down", "--dry-run"] + base, in: folder).output.isEmpty)
        #expect(try Self.migrate.run(["redo", "--dry-run"] + base, in: folder).output == "nothing to redo\n")
        let dryBaseline = try Self.migrate.run(["baseline", "1", "--dry-run"] + base, in: folder)
        #expect(dryBaseline.status == 1 && dryBaseline.error.contains("lacks what that version has (table airlines, table airports, table flights)"), "\(dryBaseline.error)")
        #expect(try Self.migrate.run(["repair", "--dry-run"] + base, in: folder).output.contains("needs no repair"))
        #expect(Self.contents(folder).isEmpty, "created: \(Self.contents(folder))")
    }

    /// Each `--dry-run` on an existing SQLite file leaves its bytes as they were, and prints
    /// what it would do.
    @Test func dryRunsWriteNothingToAnExistingFile() throws {
        let database = temporaryPath("dry.sqlite")
        let base = ["--database", database, "--dir", repositoryRoot.path + "/Migrations/Flights"]
        #expect(try Self.migrate.run(["up", "3"] + base).status == 0)
        func bytes() throws -> [Data] {
            try [database, database + "-wal"].filter { FileManager.default.fileExists(atPath: $0) }.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        }
        let before = try bytes()
        let runs: [(String, [String], String)] = [
            ("up", ["up", "--dry-run"], "-- apply: \(repositoryRoot.path)/Migrations/Flights/0004_change_flights.up.sql"),
            ("down", ["down", "--dry-run", "--allow-destructive"], "0003_rename_airports_elevation_to_elevation_feet.down.sql"),
            ("redo", ["redo", "--dry-run"], "0003_rename_airports_elevation_to_elevation_feet.up.sql"),
            ("baseline", ["baseline", "3", "--dry-run"], "is already recorded at version 3"),
            ("repair", ["repair", "--dry-run"], "needs no repair"),
        ]
        for (name, arguments, expected) in runs {
            let run = try Self.migrate.run(arguments + base)
            #expect(run.status == 0, "\(name): \(run.error)")
            #expect(run.output.contains(expected), "\(name): \(run.output)")
            #expect(try bytes() == before, "\(name) --dry-run changed the database")
        }
    }

    /// The examples and the store: a URL is never a file. The examples open PostgreSQL URLs (a
    /// server that cannot be reached is a database error); `schemagen import sqlite` refuses them.
    @Test func theExamplesAndTheStoreRefuseURLs() throws {
        let folder = temporaryFolder()
        let url = "postgres://app:\(Self.secret)@host.invalid/todo"
        let add = try Self.todo.run(["add", "Buy milk", "--database", url], in: folder)
        #expect(add.status == 1, "\(add.error)")
        #expect(add.error.contains("cannot connect to postgres://app:***@host.invalid/todo"), "\(add.error)")
        let typo = try Self.todo.run(["list", "--database", "postgress://app:\(Self.secret)@host/todo"], in: folder)
        #expect(typo.status == 2 && typo.error.contains("did you mean 'postgres://'"), "\(typo.error)")
        let load = try Self.flights.run(["load", repositoryRoot.path + "/Tests/Fixtures/Flights", "--database", url], in: folder)
        #expect(load.status == 1 && load.error.contains("cannot connect to postgres://app:***@host.invalid/todo"), "\(load.error)")
        let unknown = try Self.todo.run(["list", "--database", "mysql://app:\(Self.secret)@host/todo"], in: folder)
        #expect(unknown.status == 2, "\(unknown.error)")
        let imported = try Self.schemagen.run(["import", "sqlite", url], in: folder)
        #expect(imported.status == 2 && imported.error.contains("postgres://app:***@host.invalid/todo"), "\(imported.error)")
        for run in [add, typo, load, unknown, imported] { #expect(!(run.output + run.error).contains(Self.secret)) }
        #expect(Self.contents(folder).isEmpty, "created: \(Self.contents(folder))")
    }
}
