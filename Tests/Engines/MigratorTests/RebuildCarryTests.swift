import Foundation
import MigrationFiles
import MigrationPlanner
import RelationalModel
import SQLiteKit
import SchemaKit
import TestSupport
import Testing

/// What a DBA made by hand on a table that a SQLite migration rebuilds (a type change): kept
/// through the rebuild with the same SQL in `sqlite_schema`, as sqlite.org's procedure says; or,
/// where it cannot be made again, the migration stops, naming it, with nothing changed.
@Suite struct RebuildCarryTests {
    static let migrate = BuiltTool("migrate")

    static let version1 = """
        schema: Shop
        version: 1
        entities:
          Purchase:
            attributes:
              customer: String
              totalCents: Int32
              note: String?
        """

    /// Version 2 changes `totalCents` to Double: SQLite rebuilds the table.
    static let version2 = version1.replacingOccurrences(of: "version: 1", with: "version: 2").replacingOccurrences(of: "totalCents: Int32", with: "totalCents: Double")

    /// The versions planned for SQLite into a temporary folder, as `schemagen generate` writes them.
    static func planned(_ versions: [String]) throws -> String {
        let folder = temporaryFolder().appendingPathComponent("Migrations/Shop")
        let migrations = MigrationDirectory(path: folder.path)
        var previous: SchemaSnapshot?
        for (index, yaml) in versions.enumerated() {
            let snapshot = SnapshotBuilder.snapshot(of: try #require(SchemaLoader.load(source: .init(path: "shop.yaml", text: yaml)).schema))
            try migrations.write(Migration(from: previous, to: snapshot, renderer: SQLiteRenderer()), as: .init(number: index + 1, name: "v\(index + 1)"))
            previous = snapshot
        }
        return folder.path
    }

    /// The SQL `sqlite_schema` holds for each name.
    static func schemaSQL(_ database: String, _ names: [String]) throws -> [String: String] {
        let connection = try SQLiteConnection(path: database)
        var found: [String: String] = [:]
        for name in names {
            if case .text(let sql)? = try connection.query("SELECT sql FROM sqlite_schema WHERE name = ?", [.text(name)]).first?.first { found[name] = sql }
        }
        return found
    }

    static let handMade = [
        // A partial index, an audit trigger on the table, a view over it, a view over the view,
        // and a trigger on another table whose body names it.
        "CREATE INDEX dba_big_spenders ON purchase (customer, total_cents) WHERE total_cents > 1000",
        "CREATE TABLE dba_audit (purchase_id INTEGER, old_total, new_total, at TEXT DEFAULT CURRENT_TIMESTAMP)",
        "CREATE TRIGGER dba_audit_total AFTER UPDATE OF total_cents ON purchase BEGIN INSERT INTO dba_audit (purchase_id, old_total, new_total) VALUES (old.id, old.total_cents, new.total_cents); END",
        "CREATE VIEW dba_report AS SELECT customer, sum(total_cents) AS spent FROM purchase GROUP BY customer",
        "CREATE VIEW dba_top AS SELECT * FROM dba_report ORDER BY spent DESC LIMIT 3",
        "CREATE TRIGGER dba_audit_cleanup AFTER DELETE ON dba_audit BEGIN UPDATE purchase SET note = note WHERE id = old.purchase_id; END",
    ]
    static let names = ["dba_big_spenders", "dba_audit_total", "dba_report", "dba_top", "dba_audit_cleanup"]

    @Test func handMadeObjectsOutliveARebuild() throws {
        let folder = try Self.planned([Self.version1, Self.version2])
        let database = temporaryFolder().appendingPathComponent("shop.sqlite").path
        let first = try Self.migrate.run(["up", "1", "--database", database, "--dir", folder])
        #expect(first.status == 0, "\(first.error)")
        let connection = try SQLiteConnection(path: database)
        for statement in Self.handMade { try connection.execute(statement) }
        try connection.execute("INSERT INTO purchase (customer, total_cents) VALUES ('ada', 1500), ('ada', 700), ('grace', 2500)")
        let before = try Self.schemaSQL(database, Self.names)
        #expect(before.count == Self.names.count)

        let up = try Self.migrate.run(["up", "--database", database, "--dir", folder])
        #expect(up.status == 0, "\(up.output)\(up.error)")
        #expect(up.output.contains("note: made again after the table rebuild (made outside the schema): index dba_big_spenders on purchase"), "\(up.output)")
        #expect(try Self.schemaSQL(database, Self.names) == before, "each object is back with the same SQL")
        let after = try SQLiteConnection(path: database)
        #expect(try after.query("SELECT type FROM pragma_table_info('purchase') WHERE name = 'total_cents'", []) == [[.text("REAL")]])
        #expect(try after.query("SELECT customer, spent FROM dba_top", []) == [[.text("grace"), .real(2500)], [.text("ada"), .real(2200)]])
        #expect(try after.query("SELECT count(*) FROM dba_report", []) == [[.integer(2)]])
        // The audit trigger fires on the rebuilt table.
        try after.execute("UPDATE purchase SET total_cents = 1600 WHERE total_cents = 1500")
        #expect(try after.query("SELECT old_total, new_total FROM dba_audit", []) == [[.real(1500), .real(1600)]])
        #expect(try after.query("SELECT count(*) FROM purchase", []) == [[.integer(3)]])
        #expect(try after.query("PRAGMA integrity_check", []) == [[.text("ok")]])
    }

    /// An index on a column the next version drops cannot be made again: the migration stops,
    /// naming the index and why, and the database is as it was.
    @Test func anObjectThatCannotBeMadeAgainStopsTheMigrationUntouched() throws {
        let version2 = Self.version2.replacingOccurrences(of: "      note: String?\n", with: "").replacingOccurrences(of: "      note: String?", with: "")
        let folder = try Self.planned([Self.version1, version2])
        let database = temporaryFolder().appendingPathComponent("shop.sqlite").path
        #expect(try Self.migrate.run(["up", "1", "--database", database, "--dir", folder]).status == 0)
        let connection = try SQLiteConnection(path: database)
        try connection.execute("CREATE INDEX dba_noted ON purchase (note) WHERE note IS NOT NULL")
        try connection.execute("INSERT INTO purchase (customer, total_cents, note) VALUES ('ada', 1500, 'gift')")

        let up = try Self.migrate.run(["up", "--database", database, "--dir", folder])
        #expect(up.status == 1, "\(up.output)\(up.error)")
        #expect(up.error.contains("the rebuild of purchase drops index dba_noted on purchase (made outside the schema), which cannot be made again"), "\(up.error)")
        #expect(up.error.contains("no such column: note") && up.error.contains("nothing of this migration was applied"), "\(up.error)")
        let after = try SQLiteConnection(path: database)
        #expect(try after.query("SELECT type FROM pragma_table_info('purchase') WHERE name = 'total_cents'", []) == [[.text("INTEGER")]])
        #expect(try after.query("SELECT note FROM purchase", []) == [[.text("gift")]])
        #expect(try Self.schemaSQL(database, ["dba_noted"]).count == 1)
        let status = try Self.migrate.run(["status", "--database", database, "--dir", folder])
        #expect(status.output.contains("pending"), "\(status.output)")
    }
}
