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

    /// Pagila (Tests/Fixtures/Import/Pagila, patched for PostgreSQL 15): imported, its first
    /// migration built into a fresh database, and the two catalogues compared. Every difference
    /// between them is one the import reported, and the ones the DBA found unreported are kept:
    /// integer keys stay integer through foreign keys, NO ACTION stays NO ACTION, a domain is its
    /// base type with its check said, `real[]` is `[Float]`, a `date` stays a day with its
    /// CURRENT_DATE, a partitioned table is said. Then
    /// `migrate baseline 1` on the original lists the differences and records only with
    /// `--accept-differences`.
    @Test func pagilaRoundTripsWithEveryDifferenceReported() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let url = try server.createDatabase()
        try server.runPSQL(url, try String(contentsOf: ImportFixtures.folder.appendingPathComponent("Pagila/pagila-schema.sql"), encoding: .utf8))
        try server.runPSQL(url, "CREATE TABLE measurement (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, readings real[], film_id integer REFERENCES film (film_id))")
        let result = try PostgresImporter.importDatabase(url: url, name: "Pagila")
        let schema = result.schema
        func finding(_ text: String) -> ImportFinding? { result.findings.first { $0.description.contains(text) } }

        #expect(schema.entities.count == 16, "\(schema.entities.map(\.name))")
        let filmActor = try #require(schema.entity(named: "FilmActor"))
        #expect(filmActor.relationships.first { $0.name == "actor" }?.target == "Actor")
        #expect(schema.entity(named: "Store")?.relationships.first { $0.target == "Staff" }?.deleteRule == .noAction, "NO ACTION (staff_store_id_fkey) is kept apart from RESTRICT")
        #expect(schema.entity(named: "Actor")?.relationships.first { $0.target == "FilmActor" }?.deleteRule == .deny, "RESTRICT is deny")
        #expect(schema.entity(named: "Film")?.attributes.first { $0.name == "releaseYear" }?.type == "Int32", "a domain is its base type")
        #expect(finding("has the domain type year (integer and its CHECK")?.severity == .warning)
        #expect(schema.entity(named: "Measurement")?.attributes.first { $0.name == "readings" }?.type == "[Float]")
        #expect(finding("partitioned (PARTITION BY RANGE (payment_date)) into ") != nil)
        let createDate = schema.entity(named: "Customer")?.attributes.first { $0.name == "createDate" }
        #expect(createDate?.isDateOnly == true && createDate?.defaultValue == .plain("now"), "a date column is a day, CURRENT_DATE is `now` on it")
        #expect(!result.findings.contains { $0.description.contains("\"create_date\"") }, "nothing to say of it: it is kept")

        // Build it, as a team adopting the database would.
        let folder = temporaryFolder()
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Schemas"), withIntermediateDirectories: true)
        try SchemaYAMLWriter.yaml(schema).write(to: folder.appendingPathComponent("Schemas/Pagila.yaml"), atomically: true, encoding: .utf8)
        let generated = try ImportFixtures.schemagen.run(["generate", "--migrations-only"], in: folder)
        #expect(generated.status == 0, "\(generated.error)")
        let migrations = "Migrations/Pagila/postgres"
        let fresh = try server.createDatabase()
        let up = try ImportFixtures.migrate.run(["up", "-d", fresh, "--dir", migrations], in: folder)
        #expect(up.status == 0, "\(up.error)")

        func shapes(_ url: String) throws -> [TableShape] {
            try PostgresCatalogue.read(try PostgresConnection(url)).tables.filter { !$0.name.hasPrefix("schemagen_") }.map(TableShape.init)
        }
        let real = TableShape.differences(live: try shapes(url), built: try shapes(fresh), liveName: "the database", builtName: "a database built from this schema")
        let reported = Set(result.findings.filter { $0.message.hasPrefix("differs: ") }.map { "\($0.place): \($0.message)" })
        let unreported = real.filter { !reported.contains("\(url): table \"\($0.table)\": differs: \($0.subject): \($0.detail)") }
        #expect(unreported.isEmpty, "differences the import did not report:\n\(unreported.map(\.description).joined(separator: "\n"))")
        #expect(real.count == reported.count, "the import reported differences a built database does not have:\n\(reported.sorted().joined(separator: "\n"))")
        #expect(!real.contains { $0.detail.contains("bigint") }, "no integer widened: \(real.filter { $0.detail.contains("bigint") })")
        // The ones the DBA found unreported are among them, said.
        #expect(real.contains { $0.table == "payment" && $0.subject == "partitioning" })
        #expect(!real.contains { $0.subject == "column create_date" }, "CURRENT_DATE and the date type are kept: \(real.filter { $0.subject == "column create_date" })")

        // Baseline compares and refuses, then records what it is told to accept.
        let refused = try ImportFixtures.migrate.run(["baseline", "1", "-d", url, "--dir", migrations], in: folder)
        #expect(refused.status == 1, "\(refused.error)")
        #expect(refused.error.contains("differs from Pagila version 1 in \(real.count) ways"), "\(refused.error)")
        #expect(refused.error.contains("payment: partitioning: RANGE (payment_date), "), "\(refused.error)")
        #expect(try PostgresConnection(url).query("SELECT to_regclass('schemagen_migrations') IS NULL") == [[.integer(1)]], "nothing recorded")
        let accepted = try ImportFixtures.migrate.run(["baseline", "1", "--accept-differences", "-d", url, "--dir", migrations], in: folder)
        #expect(accepted.status == 0, "\(accepted.error)")
        #expect(accepted.output.contains("recorded at Pagila version 1"), "\(accepted.output)")
        // The built database is version 1 exactly: nothing to accept.
        let exact = try ImportFixtures.migrate.run(["baseline", "1", "-d", fresh, "--dir", migrations, "--dry-run"], in: folder)
        #expect(exact.status == 0 && !exact.error.contains("differs"), "\(exact.error)")
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
        #expect(refused.error.contains("the database lacks what that version has (column audit_log.id)"), "\(refused.error)")
        // ...and, once the key is there, lists what still differs (what the import said the
        // language cannot hold) and adopts it, untouched, when told to accept them.
        try server.runPSQL(url, "ALTER TABLE audit_log ADD COLUMN id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
        let before = try PostgresConnection(url).query("SELECT count(*) FROM books")
        let listed = try ImportFixtures.migrate.run(["baseline", "1", "-d", url, "--dir", migrations], in: folder)
        #expect(listed.status == 1 && !listed.error.contains("audit_log: column id"), "\(listed.error)")
        #expect(listed.error.contains("books: check CHECK ((pages > 0)): in the database, not in version 1"), "\(listed.error)")
        let baseline = try ImportFixtures.migrate.run(["baseline", "1", "--accept-differences", "-d", url, "--dir", migrations], in: folder)
        #expect(baseline.status == 0, "\(baseline.error)")
        #expect(try ImportFixtures.migrate.run(["up", "-d", url, "--dir", migrations], in: folder).output.contains("up to date"))
        #expect(try PostgresConnection(url).query("SELECT count(*) FROM books") == before)
    }
}
