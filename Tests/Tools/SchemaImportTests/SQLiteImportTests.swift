import Diagnostics
import ExampleModels
import Foundation
import PersistentStoreCore
import PersistentStoreSQLite
import SQLiteKit
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

@testable import SchemaImport

/// `schemagen import sqlite` on real SQLite files built from the fixtures in
/// Tests/Fixtures/Import: the schema it writes, what it reports, and the adoption path
/// (import, generate, baseline, next migration) run with the built tools.
@Suite struct SQLiteImportTests {
    func imported(_ script: String) throws -> (result: ImportResult, yaml: String, database: String, folder: URL) {
        let folder = temporaryFolder()
        let database = try ImportFixtures.database(script, in: folder)
        let result = try SQLiteImporter.importDatabase(at: database, name: "MusicStore")
        return (result, SchemaYAMLWriter.yaml(result.schema), database, folder)
    }

    func validated(_ yaml: String) -> SchemaLoader.FileResult {
        SchemaLoader.load(source: SourceFile(path: "imported.yaml", text: yaml))
    }

    @Test func theMusicStoreImportsAsASchemaThatValidatesCleanly() throws {
        let (result, yaml, _, _) = try imported("music-store.sql")
        let checked = validated(yaml)
        #expect(checked.diagnostics.isEmpty, "\(checked.diagnostics)\n\(yaml)")
        let schema = result.schema
        #expect(schema.entities.map(\.name) == ["Artist", "Album", "MediaType", "Genre", "Track", "Playlist", "PlaylistTrack", "Employee", "Customer", "Invoice", "InvoiceLine", "Refund"])

        // Types by affinity, defaults, overrides where names differ.
        let track = try #require(schema.entity(named: "Track"))
        #expect(track.table == "tracks")
        let unitPrice = try #require(track.attributes.first { $0.name == "unitPrice" })
        #expect(unitPrice.type == "Decimal" && !unitPrice.isOptional && unitPrice.defaultValue == .plain("0.99") && unitPrice.column == nil)
        #expect(track.attributes.first { $0.name == "explicit" }?.defaultValue == .plain("false"))
        #expect(track.attributes.first { $0.name == "explicit" }?.type == "Bool")
        #expect(track.attributes.first { $0.name == "composer" }.map { "\($0.type) \($0.isOptional)" } == "String true")
        #expect(track.indexes == [["name", "composer"]])
        let genre = try #require(track.relationships.first { $0.name == "genre" })
        #expect(genre.target == "Genre" && genre.isOptional && genre.column == "genre_code" && genre.inverse == "tracks")
        #expect(track.relationships.first { $0.name == "mediaType" }?.column == "MediaTypeId")

        let employee = try #require(schema.entity(named: "Employee"))
        #expect(employee.primaryKey == ["employeeId"])
        #expect(employee.attributes.first { $0.name == "employeeId" }?.column == "EmployeeId")
        #expect(employee.attributes.first { $0.name == "hireDate" }?.type == "Date")
        #expect(employee.attributes.first { $0.name == "hireDate" }?.defaultValue == .plain("now"))
        #expect(employee.attributes.first { $0.name == "email" }?.isUnique == true)
        let manager = try #require(employee.relationships.first { $0.name == "reportsTo" })
        #expect(manager.target == "Employee" && manager.isOptional && manager.column == "ReportsTo" && manager.inverse == "employees")

        // Delete rules come from ON DELETE, on the side whose deletion they describe.
        func rule(_ entity: String, _ relationship: String) -> ImportedRelationship.DeleteRule? {
            schema.entity(named: entity)?.relationships.first { $0.name == relationship }?.deleteRule
        }
        #expect(rule("Artist", "albums") == .cascade)  // ON DELETE CASCADE
        #expect(rule("Album", "tracks") == .nullify)  // ON DELETE SET NULL
        #expect(rule("Customer", "invoices") == .deny)  // ON DELETE RESTRICT
        #expect(rule("MediaType", "tracks") == .deny)  // no action given
        #expect(rule("Employee", "employees") == .nullify)  // self reference, SET NULL

        // Composite keys, over a relationship and an attribute; a composite foreign key.
        #expect(schema.entity(named: "InvoiceLine")?.primaryKey == ["invoice", "lineNumber"])
        #expect(schema.entity(named: "PlaylistTrack")?.primaryKey == ["playlist", "track"])
        #expect(schema.entity(named: "PlaylistTrack")?.indexes == [["track"]])
        let line = try #require(schema.entity(named: "Refund")?.relationships.first { $0.name == "line" })
        #expect(line.target == "InvoiceLine" && line.column == nil && !line.isOptional)

        // What the language has no words for is reported, with its SQL.
        #expect(result.findings.map(\.place) == ["music-store.db: view \"invoice_totals\"", "music-store.db: trigger \"invoices_keep_total\"", "music-store.db: table \"customers\""])
        #expect(result.findings.last?.source == "CHECK (length(email) > 3)")
    }

    /// The declared-type table of docs/import.md, row by row, with SQLite's own traps.
    @Test func declaredTypesMapByAffinity() {
        let expected: [(String, String)] = [
            ("INTEGER", "Int"), ("BIGINT", "Int"), ("UNSIGNED BIG INT", "Int"), ("INT2", "Int"), ("FLOATING POINT", "Int"), ("POINT", "Int"),
            ("NVARCHAR(120)", "String"), ("VARCHAR(8)", "String"), ("CLOB", "String"), ("TEXT", "String"), ("CHARACTER(20)", "String"), ("STRING", "String"),
            ("BLOB", "Data"), ("", "Data"), ("ANY", "Data"),
            ("REAL", "Double"), ("DOUBLE PRECISION", "Double"), ("FLOAT", "Double"),
            ("NUMERIC(10,2)", "Decimal"), ("DECIMAL(10,5)", "Decimal"), ("MONEY", "Decimal"),
            ("BOOLEAN", "Bool"), ("bool", "Bool"), ("DATE", "Date"), ("DATETIME", "Date"), ("TIMESTAMP", "Date"), ("UUID", "UUID"),
        ]
        for (declared, type) in expected {
            #expect(SQLiteTypeMapping.schemaType(forDeclared: declared).type == type, "\(declared)")
        }
        #expect(SQLiteTypeMapping.affinity(of: "FLOATING POINT") == "INTEGER" && SQLiteTypeMapping.affinity(of: "STRING") == "NUMERIC")
        #expect(SQLiteTypeMapping.schemaType(forDeclared: "INTEGER").remark == nil)
        #expect(SQLiteTypeMapping.schemaType(forDeclared: "DATE").isDateOnly, "DATE holds days (dateOnly)")
        #expect(!SQLiteTypeMapping.schemaType(forDeclared: "DATETIME").isDateOnly)
        #expect(SQLiteTypeMapping.schemaType(forDeclared: "POINT").remark != nil && SQLiteTypeMapping.schemaType(forDeclared: "STRING").remark != nil)
    }

    @Test func outputIsDeterministic() throws {
        let first = try imported("music-store.sql")
        let second = try imported("music-store.sql")
        #expect(first.yaml == second.yaml)
    }

    /// Import, generate, build a fresh database, compare; then adopt the live database with
    /// `migrate baseline 1` and apply the next migration to it. All with the built tools.
    @Test func adoptionRoundTripsAndLeavesTheLiveDatabaseUntouched() throws {
        let folder = temporaryFolder()
        let live = try ImportFixtures.database("music-store.sql", in: folder)
        let liveBytes = try Data(contentsOf: URL(fileURLWithPath: live))

        let imported = try ImportFixtures.schemagen.run(["import", "sqlite", live, "--name", "MusicStore", "-o", "Schemas/MusicStore.yaml"], in: folder)
        #expect(imported.status == 0, "\(imported.error)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: live)) == liveBytes, "import only reads")
        #expect(imported.error.contains("wrote Schemas/MusicStore.yaml: 12 entities, 3 findings"))

        let generated = try ImportFixtures.schemagen.run(["generate", "--output", "Generated"], in: folder)
        #expect(generated.status == 0, "\(generated.output)\(generated.error)")
        let fresh = folder.appendingPathComponent("fresh.db").path
        let built = try ImportFixtures.migrate.run(["up", "-d", fresh, "--dir", "Migrations/MusicStore"], in: folder)
        #expect(built.status == 0, "\(built.output)\(built.error)")
        #expect(ImportFixtures.differences(original: try ImportFixtures.catalogue(live), fresh: try ImportFixtures.catalogue(fresh)) == [])

        // The comparison does see differences: change a copy of the fresh build.
        let changed = folder.appendingPathComponent("changed.db").path
        try FileManager.default.copyItem(atPath: fresh, toPath: changed)
        try SQLiteConnection(path: changed).execute(
            """
            DROP INDEX customers_last_name_first_name_idx; ALTER TABLE artists ADD COLUMN country TEXT;
            CREATE TABLE extra (id INTEGER PRIMARY KEY); DROP TABLE refunds;
            CREATE TABLE refunds (id INTEGER PRIMARY KEY, line_invoice_id INTEGER NOT NULL, line_line_number INTEGER NOT NULL, amount REAL NOT NULL, reason TEXT NOT NULL);
            """)
        #expect(
            ImportFixtures.differences(original: try ImportFixtures.catalogue(live), fresh: try ImportFixtures.catalogue(changed)) == [
                "table extra only in the fresh database",
                "artists.country only in the fresh database",
                "customers: index (last_name,first_name) only in the original database",
                "refunds.amount: declared NUMERIC(10,2) imports as Decimal, built as REAL",
                "refunds.reason: NOT NULL false became true",
                "refunds: foreign key (line_invoice_id,line_line_number) -> invoice_lines(invoice_id,line_number) ON DELETE CASCADE only in the original database",
                "refunds: index (line_invoice_id,line_line_number) only in the original database",
            ])

        // Adopt: the live database is recorded at version 1 and nothing else changes.
        let schemaBefore = try SQLiteConnection(path: live, readOnly: true).query("SELECT type, name, sql FROM sqlite_schema ORDER BY name")
        let contentsBefore = try ImportFixtures.contents(live)
        let baseline = try ImportFixtures.migrate.run(["baseline", "1", "-d", live, "--dir", "Migrations/MusicStore"], in: folder)
        #expect(baseline.status == 0, "\(baseline.output)\(baseline.error)")
        let schemaAfter = try SQLiteConnection(path: live, readOnly: true).query("SELECT type, name, sql FROM sqlite_schema WHERE tbl_name NOT LIKE 'schemagen%' ORDER BY name")
        #expect(schemaAfter == schemaBefore)
        #expect(try ImportFixtures.contents(live) == contentsBefore)
        let status = try ImportFixtures.migrate.run(["status", "-d", live, "--dir", "Migrations/MusicStore"], in: folder)
        #expect(status.status == 0 && status.output.contains("0001"), "\(status.output)")

        // The next change migrates the live database like any other.
        let schemaFile = folder.appendingPathComponent("Schemas/MusicStore.yaml")
        var text = try String(contentsOf: schemaFile, encoding: .utf8)
        text = text.replacingOccurrences(of: "version: 1\n", with: "version: 2\n")
            .replacingOccurrences(
                of: "  Artist:\n    table: artists\n    attributes:\n      name: String\n", with: "  Artist:\n    table: artists\n    attributes:\n      name: String\n      country: String?\n")
        try text.write(to: schemaFile, atomically: true, encoding: .utf8)
        let second = try ImportFixtures.schemagen.run(["generate", "--output", "Generated"], in: folder)
        #expect(second.status == 0, "\(second.output)\(second.error)")
        #expect(second.output.contains("0002_add_artists_country"))
        let up = try ImportFixtures.migrate.run(["up", "-d", live, "--dir", "Migrations/MusicStore"], in: folder)
        #expect(up.status == 0, "\(up.output)\(up.error)")
        let connection = try SQLiteConnection(path: live, readOnly: true)
        #expect(
            try connection.query("SELECT name, country FROM artists ORDER BY id") == [
                [.text("Nina Simone"), .null], [.text("Os Mutantes"), .null], [.text("Björk"), .null],
            ])
        #expect(try connection.query("SELECT version FROM schemagen_migrations ORDER BY version") == [[.integer(1)], [.integer(2)]])
        var contentsNow = try ImportFixtures.contents(live)
        contentsNow["artists"] = contentsNow["artists"]?.map { Array($0.dropLast()) }
        #expect(contentsNow == contentsBefore)
        #expect(try connection.query("PRAGMA foreign_key_check").isEmpty)
    }

    @Test func everyConstructTheLanguageLacksIsReportedAndTheRestStillValidates() throws {
        let (result, yaml, _, _) = try imported("quirks.sql")
        let checked = validated(yaml)
        #expect(!checked.diagnostics.contains { $0.severity == .error }, "\(checked.diagnostics)\n\(yaml)")
        let messages = result.findings.map { "\($0.place): \($0.message)" }.joined(separator: "\n")
        for expected in [
            "quirks.db: table \"notes_fts\": virtual table not imported",
            "shadow tables of virtual tables not imported: notes_fts_data",
            "table \"Order Details\": WITHOUT ROWID not carried over",
            "column \"discount\": declared type FLOATING POINT has INTEGER affinity",
            "column \"label\": declared type STRING has NUMERIC affinity",
            "column \"anything\": the column has no declared type",
            "default of column \"odd_default\" not imported: an expression",
            "generated column \"doubled\" not imported",
            "AUTOINCREMENT not carried over",
            "column \"name\" COLLATE NOCASE not carried over",
            "UNIQUE constraint on (name) imported without its DESC order or COLLATE sequence",
            "partial index \"counters_active\" not imported",
            "expression index \"counters_lower\" not imported",
            "index \"counters_desc\" imported without its DESC order",
            "CHECK constraint not imported",
            "foreign key to columns of \"counters\" that are not its primary key",
            "foreign key to \"ghosts\", which is not an imported table",
            "ON UPDATE CASCADE not carried over",
            "ON DELETE SET DEFAULT on (counter_id) has no delete rule to match",
            "DEFERRABLE foreign keys not carried over",
            "key column \"code\" may hold NULL",
            "table \"no_key\": the table has no primary key",
            "foreign key column(s) of `counter` have no index here",
            "table \"categories_items\": imported as the many-to-many relationship `Category.items`",
        ] {
            #expect(messages.contains(expected), "missing finding: \(expected)\n\(messages)")
        }
        let schema = result.schema
        let details = try #require(schema.entity(named: "OrderDetail"))
        #expect(details.table == "Order Details")
        #expect(details.attributes.map(\.name) == ["orderId", "_2ndLine", "select", "unitPrice", "discount", "label", "anything", "blobDefault", "created", "oddDefault"])
        #expect(details.attributes.first { $0.name == "blobDefault" }?.defaultValue == .text("AP8="))
        #expect(schema.entity(named: "Category")?.relationships.map { "\($0.name) \($0.target) \($0.isToMany)" } == ["items Item true"])
        #expect(schema.entity(named: "Item")?.relationships.map { "\($0.name) \($0.inverse ?? "")" } == ["categories items"])
        #expect(schema.entity(named: "CategoriesItem") == nil)
        let noKey = try #require(schema.entity(named: "NoKey"))
        #expect(noKey.attributes.map(\.name) == ["note", "true", "null", "weIrdName"])
        #expect(noKey.attributes.last?.column == "we\"ird: name")
        #expect(yaml.contains("\"true\": String?") && yaml.contains("column: \"we\\\"ird: name\""))
    }

    /// A link table like schemagen's own builds the same link table again.
    @Test func aManyToManyLinkTableRoundTrips() throws {
        let folder = temporaryFolder()
        let database = folder.appendingPathComponent("links.db").path
        try SQLiteConnection(path: database).execute(
            """
            CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE categories_items (
                category_id INTEGER NOT NULL REFERENCES categories (id) ON DELETE CASCADE,
                item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
                PRIMARY KEY (category_id, item_id));
            CREATE INDEX categories_items_item_id_idx ON categories_items (item_id);
            """)
        let imported = try ImportFixtures.schemagen.run(["import", "sqlite", database, "-o", "Schemas/Links.yaml"], in: folder)
        #expect(imported.status == 0, "\(imported.error)")
        #expect(try ImportFixtures.schemagen.run(["generate", "--output", "Generated"], in: folder).status == 0)
        let fresh = folder.appendingPathComponent("fresh.db").path
        #expect(try ImportFixtures.migrate.run(["up", "-d", fresh, "--dir", "Migrations/Links"], in: folder).status == 0)
        #expect(ImportFixtures.differences(original: try ImportFixtures.catalogue(database), fresh: try ImportFixtures.catalogue(fresh)) == [])
    }

    /// Databases ported from SQL Server write bracketed names, named constraints, and a unique
    /// index repeating each primary key.
    @Test func bracketedNamesNamedConstraintsAndRepeatedKeyIndexes() throws {
        let folder = temporaryFolder()
        let database = folder.appendingPathComponent("ported.db").path
        try SQLiteConnection(path: database).execute(
            """
            CREATE TABLE [Artist] ([ArtistId] INTEGER NOT NULL, [Name] NVARCHAR(120), CONSTRAINT [PK_Artist] PRIMARY KEY ([ArtistId]));
            CREATE TABLE [Album] ([AlbumId] INTEGER NOT NULL, [Title] NVARCHAR(160) NOT NULL, [ArtistId] INTEGER NOT NULL,
                CONSTRAINT [PK_Album] PRIMARY KEY ([AlbumId]),
                CONSTRAINT [FK_AlbumArtistId] FOREIGN KEY ([ArtistId]) REFERENCES [Artist] ([ArtistId]) ON DELETE NO ACTION ON UPDATE NO ACTION);
            CREATE UNIQUE INDEX [IPK_Artist] ON [Artist]([ArtistId]);
            CREATE UNIQUE INDEX [IPK_Album] ON [Album]([AlbumId]);
            CREATE INDEX [IFK_AlbumArtistId] ON [Album] ([ArtistId]);
            """)
        let result = try SQLiteImporter.importDatabase(at: database)
        #expect(result.schema.name == "Ported")
        #expect(
            SchemaYAMLWriter.yaml(result.schema) == """
                schema: Ported
                version: 1
                entities:
                  Artist:
                    table: Artist
                    attributes:
                      artistId: {type: Int, primaryKey: true, column: ArtistId}
                      name: {type: String?, column: Name}
                    relationships:
                      albums: {to: "[Album]", inverse: artist, deleteRule: deny}
                  Album:
                    table: Album
                    attributes:
                      albumId: {type: Int, primaryKey: true, column: AlbumId}
                      title: {type: String, column: Title}
                    relationships:
                      artist: {to: Artist, inverse: albums, column: ArtistId}

                """)
        #expect(
            result.findings.map(\.message) == [
                "unique index \"IPK_Artist\" repeats the primary key, which is unique already; not imported, so a database built from the schema has one index fewer",
                "unique index \"IPK_Album\" repeats the primary key, which is unique already; not imported, so a database built from the schema has one index fewer",
            ])
        #expect(validated(SchemaYAMLWriter.yaml(result.schema)).diagnostics.isEmpty)
    }

    /// The example schemas' own databases (full-text indexes, many-to-many, composite keys,
    /// UUID keys, JSON values) import into schemas that build the same tables again.
    @Test(arguments: ["Flights", "Garage", "Notes", "Tasks", "Todo", "Users"])
    func databasesSchemagenBuiltImportBackIntoTheSameTables(_ schema: String) throws {
        let folder = temporaryFolder()
        let original = folder.appendingPathComponent("original.db").path
        let built = try ImportFixtures.migrate.run(["up", "-d", original, "--dir", repositoryRoot.appendingPathComponent("Migrations/\(schema)").path], in: folder)
        #expect(built.status == 0, "\(built.error)")
        let imported = try ImportFixtures.schemagen.run(["import", "sqlite", original, "--name", schema, "-o", "Schemas/\(schema).yaml"], in: folder)
        #expect(imported.status == 0, "\(imported.error)")
        #expect(!imported.error.contains(": warning:"), "only notes for a database schemagen built:\n\(imported.error)")
        #expect(try ImportFixtures.schemagen.run(["generate", "--migrations-only", "--schema", "Schemas/\(schema).yaml"], in: folder).status == 0)
        let fresh = folder.appendingPathComponent("fresh.db").path
        #expect(try ImportFixtures.migrate.run(["up", "-d", fresh, "--dir", "Migrations/\(schema)"], in: folder).status == 0)
        #expect(ImportFixtures.differences(original: try ImportFixtures.catalogue(original), fresh: try ImportFixtures.catalogue(fresh)) == [])
        // The full-text indexes come back as `searchable`, with their triggers.
        let triggers = { (path: String) in try SQLiteConnection(path: path, readOnly: true).query("SELECT name FROM sqlite_schema WHERE type = 'trigger' ORDER BY name") }
        #expect(try triggers(fresh) == triggers(original))
    }

    /// A database the runtime store has used holds its history and bookkeeping tables; they
    /// are schemagen's, not the app's model.
    @Test func theStoresOwnTablesAreSkipped() async throws {
        let path = temporaryFolder().appendingPathComponent("flights.db").path
        let store = try Store(path: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
        try await store.insert(Airport(icao: "KSFO", name: "San Francisco"))
        let own = try SQLiteConnection(path: path, readOnly: true)
            .query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'schemagen%' ORDER BY name").compactMap { row -> String? in
                if case .text(let name) = row[0] { name } else { nil }
            }
        #expect(own.count > 1 && own.contains("schemagen_history"), "\(own)")
        let result = try SQLiteImporter.importDatabase(at: path, name: "Flights")
        #expect(result.schema.entities.map(\.name) == ["Airport", "Airline", "Flight"])
        let skipped = result.findings.filter { $0.message.contains("schemagen's own bookkeeping table") }.map(\.place)
        #expect(skipped.sorted() == own.map { "flights.db: table \"\($0)\"" })
    }

    @Test func namesInOtherScriptsAndAccentsBecomeIdentifiers() throws {
        let folder = temporaryFolder()
        let database = folder.appendingPathComponent("names.db").path
        try SQLiteConnection(path: database).execute(
            """
            CREATE TABLE "Künstler" (id INTEGER PRIMARY KEY, "Straße" TEXT, "Größe" REAL, "名前" TEXT, "имя" TEXT);
            """)
        let result = try SQLiteImporter.importDatabase(at: database)
        let entity = try #require(result.schema.entities.first)
        #expect(entity.name == "Kunstler" && entity.table == "Künstler")
        #expect(entity.attributes.map { "\($0.name) \($0.column ?? "")" } == ["strasse Straße", "grosse Größe", "mingQian 名前", "ima имя"])
        #expect(validated(SchemaYAMLWriter.yaml(result.schema)).diagnostics.isEmpty, "\(validated(SchemaYAMLWriter.yaml(result.schema)).diagnostics)")
    }

    @Test func badInputGetsAClearErrorAndAnExitStatus() throws {
        let folder = temporaryFolder()
        let text = folder.appendingPathComponent("notes.txt")
        try Data("hello, this is text and not a database, long enough to have a header".utf8).write(to: text)
        let real = try ImportFixtures.database("music-store.sql", in: folder)
        let truncated = folder.appendingPathComponent("truncated.db")
        try Data(try Data(contentsOf: URL(fileURLWithPath: real)).prefix(3000)).write(to: truncated)
        let empty = folder.appendingPathComponent("empty.db")
        try Data().write(to: empty)

        let cases: [(arguments: [String], status: Int32, message: String)] = [
            (["import", "sqlite", text.path], 1, "notes.txt: error: not a SQLite database, or a damaged or truncated one (SQLite says: file is not a database)"),
            (["import", "sqlite", truncated.path], 1, "truncated.db: error: not a SQLite database, or a damaged or truncated one"),
            (["import", "sqlite", empty.path], 1, "empty.db: error: the database has no tables to import"),
            (["import", "sqlite", folder.appendingPathComponent("missing.db").path], 2, "missing.db: error: cannot read it"),
            (["import", "sqlite", folder.path], 2, "error: a folder, not a database file"),
            (["import", "postgres", real], 2, "is not a postgres:// URL; `import postgres` reads a PostgreSQL server"),
            (["import", "postgres", "postgres://app:hunter2@127.0.0.1:1/app"], 2, "needs --name SCHEMA"),
            (["import", "postgres", "postgres://app:hunter2@127.0.0.1:1/app", "--name", "App"], 1, "postgres://app:***@127.0.0.1:1/app: error: cannot read the catalogue"),
            (["import", "mysql", real], 2, "unknown import kind 'mysql'"),
            (["import", "sqlite", real, "--name", "lower"], 2, "--name 'lower' is not an UpperCamelCase identifier"),
            (["import", "sqlite"], 2, "missing argument <SOURCE>"),
            (["import", "sqlite", real, "-o", text.path + "/schema.yaml"], 2, "error: cannot write the schema"),
        ]
        for (arguments, status, message) in cases {
            let run = try ImportFixtures.schemagen.run(arguments, in: folder)
            #expect(run.status == status, "\(arguments): \(run.error)")
            #expect(run.error.contains(message), "\(arguments): \(run.error)")
            #expect(run.output.isEmpty, "nothing on standard output for \(arguments)")
        }
    }

    /// An adopted database keeps its values as SQLite stored them: numbers in NUMERIC
    /// columns, dates as `CURRENT_TIMESTAMP` writes them. The generated models read both.
    @Test func valuesAsAdoptedDatabasesStoreThemDecode() throws {
        #expect(try Decimal(storedValue: .real(0.99)) == Decimal(string: "0.99"))
        #expect(try Decimal(storedValue: .integer(12)) == Decimal(12))
        #expect(try Decimal(storedValue: .text("1.29")) == Decimal(string: "1.29"))
        #expect(throws: StoredValueError.self) { try Decimal(storedValue: .real(.infinity)) }
        let expected = try #require(StoredDate.date("2002-08-14T10:30:00.000Z"))
        #expect(try Date(storedValue: .text("2002-08-14 10:30:00")) == expected)
        #expect(try Date(storedValue: .text("2002-08-14T10:30")) == expected)
        #expect(try Date(storedValue: .text("2002-08-14 10:30:00.000")) == expected)
        #expect(try Date(storedValue: .text("2002-08-14")) == StoredDate.date("2002-08-14T00:00:00.000Z"))
        #expect(try Date(storedValue: .text("2002-08-14 12:30:00+02:00")) == expected)
        #expect(throws: StoredValueError.self) { try Date(storedValue: .text("2002-08-14 junk")) }
        #expect(throws: StoredValueError.self) { try Date(storedValue: .text("14/08/2002")) }
    }
}

/// Statements made of random SQL tokens: the scanner and the full-text reader always end.
@Suite struct SQLScannerTests {
    @Test func randomTokenSoupsAlwaysEnd() {
        let pieces = [
            "CREATE", "VIRTUAL", "TABLE", "x", "USING", "fts5", "(", ")", ",", "=", "content", "'t'", "\"q\"", "[b]", "CHECK", "COLLATE", "NOCASE", "--c\n", "/*", "*/", "'", "\"", "UNINDEXED", " ",
            "\n",
        ]
        var random = SeededGenerator(seed: SeededGenerator.seed(default: 0x70CE_2501))
        for _ in 0..<3000 {
            let sql = (0..<Int.random(in: 0...30, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined(separator: " ")
            _ = SQLScanner.checkClauses(sql)
            _ = SQLScanner.collations(sql, columns: ["x", "b"])
            _ = SQLiteImporter.Builder.FullTextIndex(
                SQLiteCatalogue.Table(name: "x", kind: "virtual", isWithoutRowID: false, isStrict: false, sql: sql, columns: [], indexes: [], foreignKeys: []), triggers: [])
        }
        let index = SQLiteImporter.Builder.FullTextIndex(
            SQLiteCatalogue.Table(
                name: "notes_fts", kind: "virtual", isWithoutRowID: false, isStrict: false,
                sql: "CREATE VIRTUAL TABLE notes_fts USING fts5(title, \"body\" UNINDEXED, content='notes', content_rowid='id')", columns: [], indexes: [], foreignKeys: []), triggers: [])
        #expect(index?.columns == ["title", "body"] && index?.content == "notes")
    }
}

/// Damaged inputs, made by flipping bytes of real ones: the importers return a schema or an
/// `ImportError`, and never crash or hang.
@Suite struct DamagedInputTests {
    @Test func flippedBytesInADatabaseNeverCrashTheImporter() throws {
        let folder = temporaryFolder()
        let original = try Data(contentsOf: URL(fileURLWithPath: try ImportFixtures.database("music-store.sql", in: folder)))
        var random = SeededGenerator(seed: SeededGenerator.seed(default: 0x5EED_1E55))
        var refused = 0, imported = 0
        for round in 0..<150 {
            var bytes = [UInt8](original)
            for _ in 0..<(1 + round % 8) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                bytes[position] = UInt8.random(in: 0...255, using: &random)
            }
            let path = folder.appendingPathComponent("damaged-\(round).db").path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            do {
                let result = try SQLiteImporter.importDatabase(at: path)
                _ = SchemaYAMLWriter.yaml(result.schema)
                imported += 1
            } catch {
                #expect(error.description.hasPrefix(path), "the error names the file: \(error)")
                refused += 1
            }
        }
        #expect(refused + imported == 150)
    }

    @Test func flippedBytesInAModelNeverCrashTheImporter() throws {
        let source = ImportFixtures.folder.appendingPathComponent("CoreData/Library.xcdatamodeld/Library 3.xcdatamodel/contents")
        let original = try Data(contentsOf: source)
        var random = SeededGenerator(seed: SeededGenerator.seed(default: 0xC0DE_DA7A))
        let bundle = temporaryFolder().appendingPathComponent("Damaged.xcdatamodeld")
        let version = bundle.appendingPathComponent("Damaged.xcdatamodel")
        try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
        for round in 0..<300 {
            var bytes = [UInt8](original)
            for _ in 0..<(1 + round % 6) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                // Markup characters break structure; letters change names and values.
                bytes[position] = [UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\""), UInt8(ascii: "/"), UInt8(ascii: "="), 0, 0xFF, UInt8(ascii: "x")].randomElement(using: &random)!
            }
            if round % 10 == 9 { bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random))) }
            try Data(bytes).write(to: version.appendingPathComponent("contents"))
            do {
                for imported in try CoreDataImporter.importBundle(at: bundle.path, history: true) {
                    _ = SchemaYAMLWriter.yaml(imported.result.schema)
                }
            } catch {
                #expect(error.place.hasPrefix("Damaged.xcdatamodeld/Damaged.xcdatamodel/contents"), "\(error)")
            }
        }
    }
}
