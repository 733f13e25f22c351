import Foundation
import PostgresKit
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

@testable import SchemaImport

/// `schemagen import postgres` on a bookshop database built by hand with psql, then the round
/// trip a team makes to adopt it: the schema written validates, its first PostgreSQL migration
/// builds a database with the same tables, columns and nullability, and `migrate baseline 1`
/// adopts the live database without touching it (once the table without a key has one, as
/// the import says).
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct PostgresImportTests {
    static func bookshop() throws -> (server: PostgresServer, url: String) {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let url = try server.createDatabase()
        try server.runPSQL(url, try String(contentsOf: ImportFixtures.folder.appendingPathComponent("bookshop.postgres.sql"), encoding: .utf8))
        return (server, url)
    }

    /// Columns of the public tables: `table.column type nullable`.
    static func columns(_ url: String, tables: [String]) throws -> [String] {
        let connection = try PostgresConnection(url)
        return try connection.query(
            """
            SELECT table_name || '.' || column_name || ' ' || is_nullable FROM information_schema.columns
            WHERE table_schema = 'public' AND table_name = ANY (string_to_array($1, ',')) ORDER BY 1
            """, [.text(tables.joined(separator: ","))]
        ).compactMap { if case .text(let line) = $0.first { line } else { nil } }
    }

    @Test func theCatalogueBecomesASchemaAndEveryOmissionIsSaidWithItsSQL() throws {
        let (_, url) = try Self.bookshop()
        let result = try PostgresImporter.importDatabase(url: url, name: "Bookshop")
        let schema = result.schema
        let book = try #require(schema.entity(named: "Book"))
        func attribute(_ name: String) -> ImportedAttribute? { book.attributes.first { $0.name == name } }
        #expect(book.table == "books")
        #expect(attribute("price")?.type == "Decimal" && attribute("price")?.precision == 10 && attribute("price")?.scale == 2)
        #expect(attribute("pages")?.type == "Int32" && attribute("copies")?.type == "Int16" && attribute("rating")?.type == "Float")
        #expect(attribute("publishedAt")?.type == "Date" && attribute("publishedAt")?.defaultValue == .plain("now"))
        #expect(attribute("token")?.defaultValue == .plain("uuid"))
        #expect(attribute("tags")?.type == "[String]")
        #expect(attribute("format")?.type == "Format" && attribute("format")?.defaultValue == .plain("paperback"))
        #expect(attribute("status")?.type == "BookStatus" && attribute("status")?.defaultValue == .plain("draft"))
        #expect(attribute("title")?.isSearchable == true && attribute("summary")?.isSearchable == true && attribute("title")?.isIndexed == true)
        #expect(attribute("isbn")?.isUnique == true)
        #expect(book.attributes.contains { $0.name == "id" } == false, "the identity or serial key `id` is the implicit key")
        #expect(book.relationships.map(\.name) == ["author", "editor"])
        #expect(book.indexes == [["author", "publishedAt"]])
        let author = try #require(schema.entity(named: "Author"))
        #expect(author.relationships.first { $0.name == "books" }?.deleteRule == .cascade)
        #expect(author.relationships.first { $0.name == "booksAsEditor" }?.deleteRule == .nullify)
        #expect(author.doc == "People who write the books.")
        #expect(schema.entity(named: "Shelve")?.primaryKey == ["shop", "code"])
        #expect(schema.entity(named: "Shelve")?.uniques == [["shop", "label"]])
        #expect(schema.enums.map(\.name) == ["Format", "BookStatus"])
        #expect(schema.enums.first?.cases.map(\.rawValue) == ["hardcover", "paperback", "e-book"])

        // What the language cannot say comes with its SQL.
        func finding(_ text: String) -> ImportFinding? { result.findings.first { $0.description.contains(text) } }
        #expect(finding("partial index \"books_cheap_idx\"")?.source?.contains("WHERE") == true)
        #expect(finding("expression index \"books_lower_title_idx\"")?.source?.contains("lower(title)") == true)
        #expect(finding("trigger \"books_touch\"")?.source?.contains("CREATE TRIGGER") == true)
        #expect(finding("view \"cheap_books\"")?.source?.contains("SELECT") == true)
        #expect(finding("schema \"reporting\"")?.message.contains("daily_sales") == true)
        #expect(finding("check \"books_pages_check\"")?.source == "CHECK ((pages > 0))")
        #expect(finding("no primary key") != nil)
        #expect(finding("password") == nil)
    }

    @Test func importGenerateAndBaselineAdoptTheLiveDatabase() throws {
        let (server, url) = try Self.bookshop()
        let folder = temporaryFolder()
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Schemas"), withIntermediateDirectories: true)
        let secret = url.replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://postgres:hunter2@")
        let imported = try ImportFixtures.schemagen.run(["import", "postgres", secret, "--name", "Bookshop", "-o", "Schemas/Bookshop.yaml"], in: folder)
        #expect(imported.status == 0, "\(imported.error)")
        #expect(!(imported.output + imported.error).contains("hunter2"), "the password never shows")
        let yaml = try String(contentsOf: folder.appendingPathComponent("Schemas/Bookshop.yaml"), encoding: .utf8)
        #expect(!yaml.contains("hunter2"))
        #expect(SchemaLoader.load(source: .init(path: "Bookshop.yaml", text: yaml)).schema != nil, "the schema written validates")

        let generated = try ImportFixtures.schemagen.run(["generate", "--migrations-only"], in: folder)
        #expect(generated.status == 0, "\(generated.error)")
        let migrations = "Migrations/Bookshop/postgres"
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent(migrations + "/0001_create_bookshop.up.sql").path))

        // A fresh database from the migration has the same tables, columns and nullability.
        let fresh = try server.createDatabase()
        let up = try ImportFixtures.migrate.run(["up", "-d", fresh, "--dir", migrations], in: folder)
        #expect(up.status == 0, "\(up.error)")
        let tables = ["authors", "books", "shelves"]
        // As the import says, the store's full-text column has its own name.
        #expect(imported.error.contains("(\"books_title_fts\", \"books_summary_fts\"), which this database lacks"), "\(imported.error)")
        let up1 = try String(contentsOf: folder.appendingPathComponent(migrations + "/0001_create_bookshop.up.sql"), encoding: .utf8)
        let searchColumns = up1.split(separator: "\n").filter { $0.contains("_fts\" tsvector GENERATED") || $0.contains("USING GIN") }
        #expect(searchColumns.count == 4)
        try server.runPSQL(url, (["ALTER TABLE books DROP COLUMN search;"] + searchColumns.map(String.init)).joined(separator: "\n"))
        let built = try Self.columns(fresh, tables: tables), live = try Self.columns(url, tables: tables)
        #expect(built == live, "only built: \(built.filter { !live.contains($0) }), only live: \(live.filter { !built.contains($0) })")

        // Baseline refuses while the live database lacks the implicit key of audit_log...
        let refused = try ImportFixtures.migrate.run(["baseline", "1", "-d", url, "--dir", migrations], in: folder)
        #expect(refused.status == 1)
        #expect(refused.error.contains("audit_log.id"), "\(refused.error)")
        // ...and adopts it, untouched, once the key is there.
        try server.runPSQL(url, "ALTER TABLE audit_log ADD COLUMN id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
        let before = try PostgresConnection(url).query("SELECT count(*) FROM books")
        let baseline = try ImportFixtures.migrate.run(["baseline", "1", "-d", url, "--dir", migrations], in: folder)
        #expect(baseline.status == 0, "\(baseline.error)")
        #expect(try ImportFixtures.migrate.run(["up", "-d", url, "--dir", migrations], in: folder).output.contains("up to date"))
        #expect(try PostgresConnection(url).query("SELECT count(*) FROM books") == before)
    }
}
