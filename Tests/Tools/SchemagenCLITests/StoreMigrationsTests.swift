import Foundation
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

/// The runtime store's own tables as reviewable migrations: `generate` writes them into
/// `Migrations/SchemagenStore/postgres/` when a schema's store keeps history on PostgreSQL,
/// `validate` checks them, and `migrate up` applies them to a history table of an earlier
/// release, ordering its tokens without renumbering the old ones.
@Suite(.blocking) struct StoreMigrationsTests {
    let runner = SchemagenProcessTests()

    /// A project with one schema, of these dialects and history setting.
    func project(dialects: String, history: Bool = true, name: String = "Shop") throws -> URL {
        let folder = temporaryFolder()
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Schemas"), withIntermediateDirectories: true)
        try """
        schema: \(name)
        version: 1
        dialects: [\(dialects)]
        history: \(history)
        entities:
          Order:
            attributes:
              number: String

        """.write(to: folder.appendingPathComponent("Schemas/\(name).yaml"), atomically: true, encoding: .utf8)
        return folder
    }

    static let storeFolder = "Migrations/SchemagenStore/postgres"

    @Test func generateWritesThemOnceAndValidateChecksThem() throws {
        let folder = try project(dialects: "sqlite, postgres")
        let first = try runner.schemagen(["generate", "--migrations-only"], in: folder)
        #expect(first.status == 0, "\(first.error)")
        #expect(first.output.contains("migration \(Self.storeFolder)/0001_create_history (the store's own tables)"), "\(first.output)")
        #expect(first.output.contains("migration \(Self.storeFolder)/0002_order_history_tokens (the store's own tables)"), "\(first.output)")
        let ordering = try String(contentsOfFile: folder.path + "/\(Self.storeFolder)/0002_order_history_tokens.up.sql", encoding: .utf8)
        #expect(ordering.hasPrefix("-- schemagen-migration: 1\n-- schema: SchemagenStore\n-- dialect: postgres\n-- direction: up\n-- from-version: 1\n-- to-version: 2\n"), "\(ordering)")
        #expect(ordering.contains("ALTER TABLE schemagen_history ALTER COLUMN token DROP IDENTITY IF EXISTS, ALTER COLUMN token SET DEFAULT (4611686018427387904 + txid_current());"))
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/Migrations/SchemagenStore/0001_create_history.up.sql"), "PostgreSQL only")
        // Written once: a second run finds them.
        let second = try runner.schemagen(["generate", "--migrations-only"], in: folder)
        #expect(second.output == "Migrations are up to date.\n", "\(second.output)")
        #expect(try runner.schemagen(["validate"], in: folder).status == 0)
        // Edited after they were generated: validate names the file and the fix.
        let edited = folder.path + "/\(Self.storeFolder)/0002_order_history_tokens.up.sql"
        try (ordering + "-- edited\n").write(toFile: edited, atomically: true, encoding: .utf8)
        let tampered = try runner.schemagen(["validate"], in: folder)
        #expect(tampered.status == 1 && tampered.output.contains("\(Self.storeFolder)/0002_order_history_tokens.up.sql:1:1: error"), "\(tampered.output)")
        // Deleted: a check says they are missing.
        try FileManager.default.removeItem(atPath: folder.path + "/Migrations/SchemagenStore")
        let check = try runner.schemagen(["generate", "--migrations-only", "--check"], in: folder)
        #expect(check.status == 1 && check.output.contains("missing migration: \(Self.storeFolder)/0001_create_history.up.sql (the store's own tables)"), "\(check.output)")
    }

    @Test func notWrittenWithoutHistoryOnPostgreSQL() throws {
        for folder in [try project(dialects: "sqlite"), try project(dialects: "postgres", history: false)] {
            let run = try runner.schemagen(["generate", "--migrations-only"], in: folder)
            #expect(run.status == 0, "\(run.error)")
            #expect(!FileManager.default.fileExists(atPath: folder.path + "/Migrations/SchemagenStore"), "\(run.output)")
        }
        let reserved = try project(dialects: "postgres", name: "SchemagenStore")
        let refused = try runner.schemagen(["generate", "--migrations-only"], in: reserved)
        #expect(refused.status == 1 && refused.error.contains("the schema name 'SchemagenStore' is the store's own"), "\(refused.error)")
    }

    /// A history table as an earlier release left it (tokens from its identity column, rows in
    /// it): `migrate up` gives new rows ordered tokens above the old ones, keeps the old rows'
    /// tokens, is recorded under SchemagenStore, and a SQLite database never sees the folder.
    @Test(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
    func migrateUpOrdersAnEarlierReleasesTokens() throws {
        let folder = try project(dialects: "sqlite, postgres")
        #expect(try runner.schemagen(["generate", "--migrations-only"], in: folder).status == 0)
        let url = try #require(PostgresServer.shared).createDatabase()
        let connection = try PostgresConnection(url)
        try connection.execute(
            Self.earlierHistoryTable
                + "INSERT INTO schemagen_history (schema, committed_at, entities, changes) VALUES ('Shop', 1, '[]', '[]'), ('Shop', 2, '[]', '[]');")
        let migrate = BuiltTool("migrate")
        let up = try migrate.run(["up", "--database", url], in: folder)
        #expect(up.status == 0, "\(up.error)")
        #expect(
            up.output.contains("applied  0001_create_history") && up.output.contains("applied  0002_order_history_tokens")
                && up.output.contains("applied  0003_create_sync_state") && up.output.contains("applied  0004_create_sync_departures"),
            "\(up.output)")
        try connection.execute("INSERT INTO schemagen_history (schema, committed_at, entities, changes) VALUES ('Shop', 3, '[]', '[]')")
        let tokens = try connection.query("SELECT token FROM schemagen_history ORDER BY token").map { row -> Int64 in
            guard case .integer(let token) = row[0] else { return -1 }
            return token
        }
        #expect(tokens.count == 3 && tokens[0] == 1 && tokens[1] == 2 && tokens[2] > 1 << 62, "\(tokens)")
        let recorded = try connection.query("SELECT version FROM schemagen_migrations WHERE schema = 'SchemagenStore' ORDER BY version")
        #expect(recorded == [[.integer(1)], [.integer(2)], [.integer(3)], [.integer(4)]], "\(recorded)")
        let status = try migrate.run(["status", "--database", url], in: folder)
        #expect(status.output.contains("SchemagenStore  0004     create_sync_departures"), "\(status.output)")
        // Run again, nothing is left to do; on SQLite the folder is not a schema's.
        let again = try migrate.run(["up", "--database", url], in: folder)
        #expect(again.status == 0 && !again.output.contains("order_history_tokens"), "\(again.output)\(again.error)")
        let sqlite = try migrate.run(["up", "--database", folder.path + "/app.sqlite"], in: folder)
        #expect(sqlite.status == 0 && !sqlite.output.contains("SchemagenStore") && !sqlite.error.contains("SchemagenStore"), "\(sqlite.output)\(sqlite.error)")
    }

    static let earlierHistoryTable = """
        CREATE TABLE schemagen_history ("token" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, schema text NOT NULL, author text,
            committed_at double precision NOT NULL, entities text NOT NULL, changes text NOT NULL);
        """

    /// The ordering waits for the table's lock at most `--ddl-lock-timeout`, then fails with exit
    /// 3 (the history's writes queue behind it meanwhile), keeping 0001; run again once the lock
    /// is gone, it finishes. Where a store already ordered the tokens, it takes no lock at all.
    @Test(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
    func theOrderingWaitsBoundedAndSkipsWhatTheStoreDid() throws {
        let folder = try project(dialects: "postgres")
        #expect(try runner.schemagen(["generate", "--migrations-only"], in: folder).status == 0)
        let server = try #require(PostgresServer.shared)
        let migrate = BuiltTool("migrate")
        let url = try server.createDatabase()
        try PostgresConnection(url).execute(Self.earlierHistoryTable)
        let holder = try PostgresConnection(url)
        try holder.execute("BEGIN; LOCK TABLE schemagen_history IN ACCESS SHARE MODE;")
        let held = try migrate.run(["up", "--database", url, "--ddl-lock-timeout", "1"], in: folder)
        #expect(held.status == 3, "\(held.output)\(held.error)")
        #expect(held.error.contains("raise --ddl-lock-timeout"), "\(held.error)")
        let recorded = "SELECT version FROM schemagen_migrations WHERE schema = 'SchemagenStore' ORDER BY version"
        #expect(try PostgresConnection(url).query(recorded) == [[.integer(1)]])
        try holder.execute("ROLLBACK")
        let rerun = try migrate.run(["up", "--database", url, "--ddl-lock-timeout", "1"], in: folder)
        #expect(rerun.status == 0 && rerun.output.contains("applied  0002_order_history_tokens"), "\(rerun.output)\(rerun.error)")

        // Ordered by a store before the migration ran: applied while the table is held.
        let ordered = try server.createDatabase()
        try PostgresConnection(ordered).execute(
            Self.earlierHistoryTable
                + "ALTER TABLE schemagen_history ALTER COLUMN token DROP IDENTITY IF EXISTS, ALTER COLUMN token SET DEFAULT (4611686018427387904 + txid_current());")
        let reader = try PostgresConnection(ordered)
        try reader.execute("BEGIN; LOCK TABLE schemagen_history IN ACCESS SHARE MODE;")
        let skipped = try migrate.run(["up", "--database", ordered, "--ddl-lock-timeout", "1"], in: folder)
        #expect(skipped.status == 0 && skipped.output.contains("applied  0002_order_history_tokens"), "\(skipped.output)\(skipped.error)")
        try reader.execute("ROLLBACK")
    }
}
