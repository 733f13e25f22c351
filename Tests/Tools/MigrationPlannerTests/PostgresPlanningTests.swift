import Diagnostics
import Foundation
import MigrationFiles
import MigrationPlanner
import RelationalModel
import SchemaKit
import TestSupport
import Testing

/// Planning for PostgreSQL without a server: names, lint for locks, the header, folders.
@Suite(.blocking) struct PostgresPlanningTests {
    @Test func longDerivedNamesAreShortenedDeterministically() {
        let long = String(repeating: "a_very_long_table_name_", count: 4) + "idx"
        let short = PostgresRenderer.identifier(long)
        #expect(short.utf8.count <= 63)
        #expect(short == PostgresRenderer.identifier(long), "the same name every time")
        #expect(short != PostgresRenderer.identifier(long + "2"), "two long names stay apart")
        #expect(PostgresRenderer.identifier("short_idx") == "short_idx")
        let multibyte = String(repeating: "é", count: 40)
        #expect(PostgresRenderer.identifier(multibyte).utf8.count <= 63, "cut on whole characters")
    }

    @Test func changesAreMadeInPlaceAndTheHeaderSaysPostgres() throws {
        let v1 = SnapshotBuilder.snapshot(of: try schema("entities:\n  Airport:\n    table: airports\n    attributes:\n      icao: String\n      elevation: Int?\n", version: 1))
        let v2 = SnapshotBuilder.snapshot(of: try schema("entities:\n  Airport:\n    table: airports\n    attributes:\n      icao: String\n      elevation: {type: Double, default: 0}\n", version: 2))
        let migration = Migration(from: v1, to: v2, renderer: PostgresRenderer())
        let up = migration.upSQL()
        #expect(up.contains("ALTER TABLE \"airports\" ALTER COLUMN \"elevation\" TYPE double precision USING \"elevation\"::double precision;"))
        #expect(up.contains("UPDATE \"airports\" SET \"elevation\" = 0.0 WHERE \"elevation\" IS NULL;"))
        #expect(up.contains("ALTER TABLE \"airports\" ALTER COLUMN \"elevation\" SET NOT NULL;"))
        #expect(migration.downSQL().contains("ALTER COLUMN \"elevation\" DROP NOT NULL;"))
        let header = try MigrationHeader.parse(up)
        #expect(header.dialect == "postgres" && header.runsInTransaction && !header.foreignKeysOff && header.rowCopies.isEmpty)
    }

    @Test func lockLintNamesTheLineWhatItBlocksAndTheRecipe() throws {
        let before = "entities:\n  Airport:\n    table: airports\n    attributes:\n      icao: String\n      elevation: Int?\n"
        let after =
            "entities:\n  Airport:\n    table: airports\n    attributes:\n      icao: {type: String, indexed: true}\n      elevation: {type: Double, default: 0}\n      seenAt: {type: Date, default: now}\n"
        let new = try schema(after, version: 2)
        let migration = Migration(from: SnapshotBuilder.snapshot(of: try schema(before, version: 1)), to: SnapshotBuilder.snapshot(of: new), renderer: PostgresRenderer())
        let findings = MigrationLint.lockFindings(for: migration, schema: new)
        // `now()` is stable: PostgreSQL 11+ adds the column without rewriting, so no rewrite warning.
        #expect(Set(findings.map(\.code)) == ["lock-create-index", "lock-set-not-null", "lock-type-change", "lock-backfill"])
        #expect(try #require(findings.first { $0.code == "lock-type-change" }).message.contains("(bigint to double precision)"), "types as PostgreSQL names them")
        let setNotNull = try #require(findings.first { $0.code == "lock-set-not-null" })
        #expect(setNotNull.location?.line == 8, "the line of the attribute (after the two lines `schema` adds)")
        #expect(setNotNull.message.contains("ACCESS EXCLUSIVE") && setNotNull.message.contains("NOT VALID"))
        // SQLite's plan of the same change takes no locks other sessions notice.
        #expect(!SQLiteRenderer().dialect.capabilities.lockingDDL)
    }

    /// The rules a DBA expects: a volatile default rewrites and a stable one does not, a re-added
    /// CHECK validates every row, a backfill runs under the lock already held, and locking
    /// several tables in turn can deadlock with the application.
    @Test func lockLintKnowsWhatRewritesValidatesAndDeadlocks() throws {
        let before =
            "enums:\n  Kind: {cases: [small, large]}\nentities:\n  Airport:\n    table: airports\n    attributes:\n      icao: String\n      kind: Kind?\n      note: String?\n  Runway:\n    attributes:\n      length: Int\n"
        let after =
            "enums:\n  Kind: {cases: [small, large, heliport]}\nentities:\n  Airport:\n    table: airports\n    attributes:\n      icao: String\n      kind: Kind?\n      note: {type: String, default: none}\n      token: {type: UUID, default: uuid}\n      seenAt: {type: Date, default: now}\n  Runway:\n    attributes:\n      length: Int\n      surface: {type: String, default: asphalt}\n"
        let new = try schema(after, version: 2)
        let migration = Migration(from: SnapshotBuilder.snapshot(of: try schema(before, version: 1)), to: SnapshotBuilder.snapshot(of: new), renderer: PostgresRenderer())
        let findings = MigrationLint.lockFindings(for: migration, schema: new)
        let rewrites = findings.filter { $0.code == "lock-add-column-rewrite" }
        #expect(rewrites.count == 1 && rewrites[0].message.contains("'airports.token'"), "\(rewrites.map(\.message))")
        #expect(findings.contains { $0.code == "lock-check-constraint" && $0.message.contains("re-adding the CHECK of 'airports.kind'") && $0.message.contains("NOT VALID") })
        // note: made required with a new default, so the backfill follows SET DEFAULT's ACCESS EXCLUSIVE.
        #expect(findings.contains { $0.code == "lock-backfill" && $0.message.contains("'airports.note'") })
        let order = try #require(findings.first { $0.code == "lock-order" })
        #expect(order.message.contains("(airports, runway)") && order.message.contains("deadlock"), "\(order.message)")
        // One table: no lock-order warning.
        let single = Migration(
            from: SnapshotBuilder.snapshot(of: try schema(before, version: 1)),
            to: SnapshotBuilder.snapshot(of: try schema(before.replacingOccurrences(of: "      note: String?\n", with: "      note: String?\n      extra: Int?\n"), version: 2)),
            renderer: PostgresRenderer())
        #expect(!MigrationLint.lockFindings(for: single, schema: new).contains { $0.code == "lock-order" })
    }

    /// Snapshots written before docs and one-to-one keys were recorded still match the schema
    /// that wrote them: upgrading the toolkit asks for no migration.
    @Test func snapshotsOfTheFirstFormatMatchWhatTheyCouldNotRecord() throws {
        let yaml =
            "entities:\n  User:\n    doc: People.\n    attributes:\n      name: {type: String, doc: Full name.}\n    relationships:\n      image: {to: Image?, inverse: owner, deleteRule: cascade}\n  Image:\n    attributes:\n      data: Data\n    relationships:\n      owner: {to: User?, column: owner_id, inverse: image}\n"
        let current = SnapshotBuilder.snapshot(of: try schema(yaml, version: 1))
        #expect(current.table(named: "image")?.indexes.contains { $0.isUnique && $0.columns == ["owner_id"] } == true, "a one-to-one key is unique")
        #expect(current.table(named: "user")?.doc == "People.")
        // The same model as the previous release wrote it: no format, no docs, a plain index.
        var legacy = current
        legacy.format = nil
        for index in legacy.tables.indices {
            legacy.tables[index].doc = nil
            for column in legacy.tables[index].columns.indices { legacy.tables[index].columns[column].doc = nil }
            legacy.tables[index].indexes = legacy.tables[index].indexes.map { index in
                index.isUnique && index.columns == ["owner_id"] ? IndexSnapshot(name: "image_owner_id_idx", columns: ["owner_id"], isUnique: false, isFullText: false) : index
            }
        }
        let decoded = try SchemaSnapshot.decode(try legacy.canonicalJSON())
        #expect(decoded.format == nil)
        #expect(decoded.matches(current), "the first format matches")
        // The current format records both: a changed doc is a change.
        let edited = SnapshotBuilder.snapshot(of: try schema(yaml.replacingOccurrences(of: "Full name.", with: "The name."), version: 2))
        #expect(!current.matches(edited))
        let comments = Migration(from: current, to: edited, renderer: PostgresRenderer())
        #expect(comments.upSQL().contains("COMMENT ON COLUMN \"user\".\"name\" IS 'The name.';"))
        #expect(comments.downSQL().contains("COMMENT ON COLUMN \"user\".\"name\" IS 'Full name.';"))
        #expect(Migration(from: current, to: edited, renderer: SQLiteRenderer()).steps.isEmpty, "SQLite keeps no comments")
        // Planned from the first format, the next migration brings the database up to date.
        let upgrade = Migration(from: decoded, to: edited, renderer: PostgresRenderer()).upSQL()
        #expect(upgrade.contains("COMMENT ON TABLE \"user\" IS 'People.';"))
        #expect(upgrade.contains("ADD CONSTRAINT \"image_owner_id_key\" UNIQUE (\"owner_id\")"))
    }

    /// A split from an entity the same version renames is refused before anything is written:
    /// the new table's key would point at the new name before the old table takes it. Renamed
    /// in one version and split in the next, it plans.
    @Test func aSplitOfATableRenamedInTheSameVersionIsRefused() throws {
        let before = "entities:\n  Book:\n    attributes:\n      title: String\n      blurb: String?\n"
        let split = """
            entities:
              Volume:
                renamedFrom: Book
                attributes:
                  title: String
                relationships:
                  blurb: {to: Blurb?, inverse: book, deleteRule: cascade}
              Blurb:
                attributes:
                  text: {type: String?, movedFrom: Volume.blurb}
                relationships:
                  book: {to: Volume, inverse: blurb}

            """
        func findings(_ from: String, _ to: String) throws -> [Diagnostic] {
            let new = try schema(to, version: 2)
            let migration = Migration(from: SnapshotBuilder.snapshot(of: try schema(from, version: 1)), to: SnapshotBuilder.snapshot(of: new), renderer: SQLiteRenderer())
            return MigrationLint.findings(for: migration, schema: new, allowDestructive: true).filter { $0.code == "split-of-renamed-table" }
        }
        let refused = try findings(before, split)
        #expect(refused.count == 1 && refused[0].severity == .error && refused[0].message.contains("renames to 'volume'"), "\(refused.map(\.message))")
        let renamedFirst = before.replacingOccurrences(of: "  Book:\n", with: "  Volume:\n    renamedFrom: Book\n")
        #expect(try findings(renamedFirst, split.replacingOccurrences(of: "    renamedFrom: Book\n", with: "")).isEmpty)
    }

    /// An encrypted value is sealed under its table's and column's names: a version that renames
    /// either, or a split that moves it, is refused, whatever `--allow-destructive` says. The
    /// property or entity renamed alone, its `column:` or `table:` kept, plans.
    @Test func renamingWhereEncryptedValuesAreSealedIsRefused() throws {
        let before = "entities:\n  Book:\n    attributes:\n      title: String\n      secret: {type: String?, encrypt: true}\n"
        let column = before.replacingOccurrences(of: "secret: {type: String?, encrypt: true}", with: "hidden: {type: String?, encrypt: true, renamedFrom: secret}")
        let table = before.replacingOccurrences(of: "  Book:\n", with: "  Volume:\n    renamedFrom: Book\n")
        let split = """
            entities:
              Book:
                attributes:
                  title: String
                relationships:
                  vault: {to: Vault?, inverse: book, deleteRule: cascade}
              Vault:
                attributes:
                  secret: {type: String?, encrypt: true, movedFrom: Book.secret}
                relationships:
                  book: {to: Book, inverse: vault}

            """
        for renderer in [SQLiteRenderer() as any MigrationRenderer, PostgresRenderer()] {
            func findings(_ from: String, _ to: String, knowingPrevious: Bool = false) throws -> [Diagnostic] {
                let (old, new) = (try schema(from, version: 1), try schema(to, version: 2))
                let migration = Migration(from: SnapshotBuilder.snapshot(of: old), to: SnapshotBuilder.snapshot(of: new), renderer: renderer)
                return MigrationLint.findings(for: migration, schema: new, allowDestructive: true, previous: knowingPrevious ? old : nil).filter { $0.code == "sealed-name-changed" }
            }
            let renamed = try findings(before, column)
            #expect(renamed.count == 1 && renamed[0].severity == .error, "\(renamed.map(\.message))")
            #expect(renamed.first.map { $0.message.contains("'book.secret'") && $0.message.contains("'column: secret'") } == true, "\(renamed.map(\.message))")
            let moved = try findings(before, table)
            #expect(moved.count == 1 && moved[0].message.contains("'table: book'"), "\(moved.map(\.message))")
            let copied = try findings(before, split)
            #expect(copied.count == 1 && copied[0].message.contains("'vault.secret'"), "\(copied.map(\.message))")
            #expect(try findings(before, column.replacingOccurrences(of: "renamedFrom: secret}", with: "renamedFrom: secret, column: secret}")).isEmpty)
            #expect(try findings(before, table.replacingOccurrences(of: "renamedFrom: Book\n", with: "renamedFrom: Book\n    table: book\n")).isEmpty)
            // A column encrypted in the same version held clear values: renaming it seals nothing.
            let clear = before.replacingOccurrences(of: "secret: {type: String?, encrypt: true}", with: "secret: String?")
            #expect(try findings(clear, column).isEmpty)
            // A split that would copy sealed values into a clear column is refused too; one that
            // copies clear values into an encrypted column is not.
            let unsealed = split.replacingOccurrences(of: "secret: {type: String?, encrypt: true, movedFrom: Book.secret}", with: "secret: {type: String?, movedFrom: Book.secret}")
            #expect(try findings(before, unsealed).count == 1)
            #expect(try findings(clear, split).isEmpty)
            // External values (files in a folder named after the table and column), sealed or not.
            for options in ["externalStorage: true, encrypt: true", "externalStorage: true"] {
                let scan = before.replacingOccurrences(of: "secret: {type: String?, encrypt: true}", with: "scan: {type: Data?, \(options)}")
                let renamedScan = scan.replacingOccurrences(of: "scan: {type: Data?, \(options)}", with: "document: {type: Data?, \(options), renamedFrom: scan}")
                let external = try findings(scan, renamedScan)
                #expect(external.count == 1 && external[0].message.contains("folder") && external[0].message.contains("'column: scan'"), "\(external.map(\.message))")
                #expect(try findings(scan, renamedScan.replacingOccurrences(of: "renamedFrom: scan}", with: "renamedFrom: scan, column: scan}")).isEmpty)
            }
            // Clear bytes renamed are values like any other, also in the version that encrypts
            // them, where the previous schema says they were clear (a snapshot alone cannot tell
            // them from sealed bytes, and refuses).
            let bytes = before.replacingOccurrences(of: "secret: {type: String?, encrypt: true}", with: "photo: Data?")
            #expect(try findings(bytes, bytes.replacingOccurrences(of: "photo: Data?", with: "image: {type: Data?, renamedFrom: photo}")).isEmpty)
            let encryptedAndRenamed = bytes.replacingOccurrences(of: "photo: Data?", with: "image: {type: Data?, encrypt: true, renamedFrom: photo}")
            #expect(try findings(bytes, encryptedAndRenamed, knowingPrevious: true).isEmpty)
            #expect(try findings(bytes, encryptedAndRenamed).count == 1)
            let sealedBytes = bytes.replacingOccurrences(of: "photo: Data?", with: "photo: {type: Data?, encrypt: true}")
            #expect(try findings(sealedBytes, encryptedAndRenamed, knowingPrevious: true).count == 1, "sealed bytes stay bound to their names")
        }
    }

    /// How values are sealed, against the version recorded before: a mode switched or
    /// encryption removed, and a key changed under randomized values, are refused; a clear
    /// attribute encrypted (`reencrypt` seals its values) is not.
    @Test func changingHowStoredValuesAreSealedIsRefused() throws {
        let before = "entities:\n  Book:\n    attributes:\n      title: String\n      secret: {type: String?, encrypt: true}\n      code: {type: String?, encrypt: deterministic}\n"
        func findings(_ from: String, _ to: String) throws -> [Diagnostic] {
            MigrationLint.encryptionFindings(previous: try schema(from, version: 1), schema: try schema(to, version: 2))
        }
        let randomized = "secret: {type: String?, encrypt: true}", deterministic = "code: {type: String?, encrypt: deterministic}"
        let switched = try findings(before, before.replacingOccurrences(of: randomized, with: "secret: {type: String?, encrypt: deterministic}"))
        #expect(switched.count == 1 && switched[0].severity == .error && switched[0].code == "encryption-changed", "\(switched.map(\.message))")
        #expect(switched.first?.message.contains("'Book.secret' was 'encrypt: true' in version 1 and is 'encrypt: deterministic' now") == true, "\(switched.map(\.message))")
        #expect(try findings(before, before.replacingOccurrences(of: deterministic, with: "code: {type: String?, encrypt: true}")).count == 1)
        let cleared = try findings(before, before.replacingOccurrences(of: deterministic, with: "code: String?"))
        #expect(cleared.count == 1 && cleared[0].message.contains("'Book.code' was 'encrypt: deterministic'") && cleared[0].message.contains("ciphertext"), "\(cleared.map(\.message))")
        // Found under its earlier names: an attribute and an entity renamed (their names kept).
        let renamed = before.replacingOccurrences(of: randomized, with: "hidden: {type: String?, encrypt: deterministic, renamedFrom: secret, column: secret}")
        #expect(try findings(before, renamed).count == 1)
        let moved = before.replacingOccurrences(of: "  Book:\n", with: "  Volume:\n    renamedFrom: Book\n    table: book\n")
        #expect(try findings(before, moved.replacingOccurrences(of: deterministic, with: "code: String?")).count == 1)
        // A key changed under randomized values (the deterministic ones are not bound to it).
        let keyed = before.replacingOccurrences(of: "    attributes:\n", with: "    primaryKey: [title]\n    attributes:\n")
        let rekeyed = try findings(before, keyed)
        #expect(
            rekeyed.count == 1 && rekeyed[0].message.contains("'Book' changes its primary key (id (implicit integer) in version 1; title (String) now)")
                && rekeyed[0].message.contains("(secret)"), "\(rekeyed.map(\.message))")
        // A key whose type changes is another key; one renamed (or with a `renamedFrom` left from
        // an earlier version) is the same.
        #expect(try findings(keyed, keyed.replacingOccurrences(of: "title: String", with: "title: Int")).count == 1)
        #expect(try findings(keyed, keyed.replacingOccurrences(of: "[title]", with: "[name]").replacingOccurrences(of: "title: String", with: "name: {type: String, renamedFrom: title}")).isEmpty)
        #expect(try findings(keyed, keyed.replacingOccurrences(of: "title: String", with: "title: {type: String, renamedFrom: heading}")).isEmpty)
        // A new clear attribute under the name an encrypted one was renamed from is new.
        let reused = before.replacingOccurrences(of: randomized, with: "legacy: {type: String?, encrypt: true, renamedFrom: secret, column: secret}\n      secret: {type: String?, column: secret_v2}")
        #expect(try findings(before, reused).isEmpty)
        #expect(try findings(before.replacingOccurrences(of: randomized, with: "secret: String?"), keyed.replacingOccurrences(of: randomized, with: "secret: String?")).isEmpty)
        // Encrypting a clear attribute, or changing nothing, is not refused.
        #expect(try findings(before.replacingOccurrences(of: randomized, with: "secret: String?"), before).isEmpty)
        #expect(try findings(before, before).isEmpty)
    }

    /// `backfill` stands in for a default where existing rows need a value, and every dialect
    /// planned needs its expression.
    @Test func aBackfillSatisfiesRequiredWithoutDefault() throws {
        let before = "entities:\n  Cheat:\n    attributes:\n      code: String\n      name: String?\n"
        func findings(_ after: String, _ renderer: some MigrationRenderer) throws -> [Diagnostic] {
            let new = try schema(after, version: 2)
            let migration = Migration(from: SnapshotBuilder.snapshot(of: try schema(before, version: 1)), to: SnapshotBuilder.snapshot(of: new), renderer: renderer)
            return MigrationLint.findings(for: migration, schema: new, allowDestructive: false).filter { $0.code == "required-without-default" }
        }
        let bare = try findings(before.replacingOccurrences(of: "name: String?", with: "name: String"), PostgresRenderer())
        #expect(bare.count == 1 && bare[0].message.contains("add a 'backfill'"), "\(bare.map(\.message))")
        #expect(try findings(before.replacingOccurrences(of: "name: String?", with: "name: {type: String, backfill: Untitled}"), PostgresRenderer()).isEmpty)
        let sqliteOnly = before.replacingOccurrences(of: "name: String?", with: "name: {type: String, backfill: {sqlite: \"code\"}}")
        #expect(try findings(sqliteOnly, SQLiteRenderer()).isEmpty)
        let gap = try findings(sqliteOnly, PostgresRenderer())
        #expect(gap.count == 1 && gap[0].message.contains("not for postgres"), "\(gap.map(\.message))")
        // A backfill is no default: new rows must still give a value.
        let snapshot = SnapshotBuilder.snapshot(of: try schema(before.replacingOccurrences(of: "name: String?", with: "name: {type: String, backfill: Untitled}"), version: 2))
        #expect(snapshot.table(named: "cheat")?.column(named: "name")?.defaultValue == nil)
        // Adding or removing a backfill alone plans no migration.
        let withBackfill = SnapshotBuilder.snapshot(of: try schema(before.replacingOccurrences(of: "name: String?", with: "name: {type: String?, backfill: x}"), version: 1))
        #expect(SnapshotBuilder.snapshot(of: try schema(before, version: 1)).matches(withBackfill))
    }

    @Test func generatePlansBothFoldersWithOneNumbering() throws {
        let folder = temporaryFolder()
        let schemaFile = folder.appendingPathComponent("Shop.yaml")
        let tool = BuiltTool("schemagen")
        try "schema: Shop\nversion: 1\nentities:\n  Item:\n    attributes:\n      name: String\n".write(to: schemaFile, atomically: true, encoding: .utf8)
        let migrations = folder.appendingPathComponent("Migrations").path
        #expect(try tool.run(["generate", "--migrations-only", "--schema", schemaFile.path, "--migrations", migrations]).status == 0)
        // Adding postgres later re-plans the history for it, with the same numbers.
        try "schema: Shop\nversion: 2\ndialects: [sqlite, postgres]\nentities:\n  Item:\n    attributes:\n      name: String\n      price: Decimal?\n".write(
            to: schemaFile, atomically: true, encoding: .utf8)
        let run = try tool.run(["generate", "--migrations-only", "--schema", schemaFile.path, "--migrations", migrations])
        #expect(run.status == 0, "\(run.error)")
        let sqlite = MigrationDirectory(path: migrations + "/Shop").entries().map(\.prefix)
        let postgres = MigrationDirectory(path: migrations + "/Shop/postgres").entries().map(\.prefix)
        #expect(sqlite == ["0001_create_shop", "0002_add_item_price"])
        #expect(postgres == sqlite)
        #expect(MigrationDirectory(path: migrations + "/Shop/postgres").verify().isEmpty)
        #expect(try tool.run(["generate", "--migrations-only", "--check", "--schema", schemaFile.path, "--migrations", migrations]).status == 0)
        let diff = try tool.run(["diff", "--schema", schemaFile.path, "--migrations", migrations, "--dialect", "postgres"])
        #expect(diff.output.contains("Shop (postgres): no changes since version 2."), "\(diff.output)")
    }

    @Test func namesPostgreSQLWouldCutAreRefused() throws {
        let folder = temporaryFolder()
        let schemaFile = folder.appendingPathComponent("Long.yaml")
        let long = String(repeating: "x", count: 70)
        try "schema: Long\nversion: 1\ndialects: [postgres]\nentities:\n  Item:\n    table: \(long)\n    attributes:\n      name: String\n".write(to: schemaFile, atomically: true, encoding: .utf8)
        let run = try BuiltTool("schemagen").run(["generate", "--migrations-only", "--schema", schemaFile.path, "--migrations", folder.appendingPathComponent("M").path])
        #expect(run.status == 1)
        #expect(run.error.contains("is longer than the 63 bytes postgres keeps of a name"), "\(run.error)")
    }
}
