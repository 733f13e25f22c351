import Diagnostics
import Foundation
import MigrationFiles
import MigrationPlanner
import ProjectConfig
import RelationalModel
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

/// Online planning without a server: the switch (schema, config), the plan's shape, what it
/// says is not online, and the phase file format.
@Suite(.blocking) struct OnlinePlanTests {
    static let base = """
        entities:
          Item:
            attributes:
              name: String
              quantity: Int32

        """

    func plan(_ before: String, _ after: String) throws -> Migration {
        Migration(
            from: SnapshotBuilder.snapshot(of: try schema(before, version: 1)), to: SnapshotBuilder.snapshot(of: try schema(after, version: 2)),
            renderer: PostgresRenderer(), online: true)
    }

    @Test func theSchemaAndTheConfigurationTurnItOn() throws {
        let on = SchemaLoader.load(source: .init(path: "s.yaml", text: "schema: S\nversion: 1\nonline: true\n" + Self.base))
        #expect(on.schema?.online == true)
        let unsaid = SchemaLoader.load(source: .init(path: "s.yaml", text: "schema: S\nversion: 1\n" + Self.base))
        #expect(unsaid.schema?.online == nil)
        let wrong = SchemaLoader.load(source: .init(path: "s.yaml", text: "schema: S\nversion: 1\nonline: yes\n" + Self.base))
        #expect(wrong.diagnostics.contains { $0.message.contains("'online' in the schema expects true or false") && $0.message.contains("YAML 1.2") })

        let folder = temporaryFolder()
        let file = folder.appendingPathComponent(".schemagen.yaml")
        try Data("online: true\ndialects: [postgres]\n".utf8).write(to: file)
        let (config, problems, _) = ProjectConfig.load(path: file.path)
        #expect(problems.isEmpty && config?.online == true)
        try Data("online: sometimes\n".utf8).write(to: file)
        #expect(ProjectConfig.load(path: file.path).1.map(\.message) == ["'online' expects true or false"])

        // SQLite has no online plan: its migrations stay whole.
        let sqlite = Migration(from: nil, to: SnapshotBuilder.snapshot(of: try schema(Self.base, version: 1)), renderer: SQLiteRenderer(), online: true)
        #expect(sqlite.online == nil && sqlite.contractSQL() == nil)
    }

    /// A backfilled table's new indexes come after its backfill (each row the backfill writes
    /// would otherwise enter every index again), and the backfill's UPDATE bounds its own rows
    /// by the range too (`OnlineSafetyTests` reads the server's plan for it).
    @Test func aBackfilledTablesIndexesAreBuiltAfterItsBackfill() throws {
        let after = Self.base.replacingOccurrences(of: "name: String\n      quantity: Int32", with: "name: {type: String, indexed: true}\n      quantity: Int64")
        let sections = try #require(try plan(Self.base, after).online).expand.sections
        let backfill = try #require(sections.firstIndex { if case .backfill = $0 { true } else { false } })
        let index = try #require(sections.firstIndex { if case .statement(let sql, _) = $0 { sql.contains("CREATE INDEX CONCURRENTLY") } else { false } })
        #expect(backfill < index, "\(sections)")
        guard case .backfill(_, let update) = sections[backfill] else { return }
        #expect(
            update.hasPrefix(
                "INSERT INTO \"schemagen_2_item\" (\"id\", \"name\", \"quantity\") SELECT \"id\", \"name\", \"quantity\"::bigint FROM \"item\" AS schemagen_source WHERE \"id\" >= $1::bigint AND \"id\" <= $2::bigint AND NOT EXISTS ("
            ), "\(update)")
    }

    @Test func aFirstMigrationCreatesTheTablesAndItsVersionsViewsAndHasNothingToContract() throws {
        let migration = Migration(from: nil, to: SnapshotBuilder.snapshot(of: try schema(Self.base, version: 1)), renderer: PostgresRenderer(), online: true)
        let plan = try #require(migration.online)
        #expect(plan.contract.sections.isEmpty)
        #expect(migration.upSQL().contains("-- online: expand"))
        #expect(migration.upSQL().contains("CREATE VIEW \"s_v1\".\"item\" AS SELECT \"id\", \"name\", \"quantity\" FROM \"item\";"))
        #expect(try MigrationHeader.parse(migration.downSQL()).online == .rollback)
        #expect(try MigrationHeader.parse(try #require(migration.contractSQL())).online == .contract)
    }

    /// A type change rebuilds the table beside the old one (`OnlineCopy`): expand copies, the new
    /// version reads the copy under its names, contract swaps it in, rollback drops it.
    @Test func aTypeChangeCopiesTheTableAndContractSwapsItIn() throws {
        let migration = try plan(Self.base, Self.base.replacingOccurrences(of: "name: String", with: "title: {type: String, renamedFrom: name}").replacingOccurrences(of: "Int32", with: "Int64"))
        let plan = try #require(migration.online)
        let expand = plan.expand.text, contract = plan.contract.text, rollback = plan.rollback.text
        for removal in ["DROP COLUMN", "RENAME COLUMN", "RENAME TO", "SET NOT NULL", "DROP TABLE"] {
            #expect(!expand.contains(removal), "expand must not \(removal)")
        }
        #expect(expand.contains("CREATE TABLE IF NOT EXISTS \"schemagen_2_item\" (\n    \"id\" bigint NOT NULL,\n    \"title\" text NOT NULL,\n    \"quantity\" bigint NOT NULL,"))
        #expect(expand.contains("SELECT \"id\", \"name\", \"quantity\"::bigint FROM \"item\" AS schemagen_source"), "the old columns fill the new ones")
        #expect(expand.contains("CREATE TRIGGER \"schemagen_2_item_copy\" AFTER INSERT OR UPDATE OR DELETE ON \"item\""))
        #expect(expand.contains("INSERT INTO \"item\" (\"id\", \"name\", \"quantity\") VALUES (NEW.\"id\", NEW.\"title\", NEW.\"quantity\"::integer);"), "the new version's rows carried back")
        #expect(expand.contains("CREATE VIEW \"s_v2\".\"item\" AS SELECT \"id\", \"title\", \"quantity\" FROM \"schemagen_2_item\";"))
        let sections = plan.expand.sections
        let backward = try #require(sections.firstIndex { if case .transaction(let sql, _) = $0 { sql.contains("CREATE TRIGGER \"schemagen_2_item_copy_back\"") } else { false } })
        let copy = try #require(sections.firstIndex { if case .backfill(let backfill, _) = $0 { backfill.table == "item" } else { false } })
        #expect(copy < backward, "copied rows never fire the trigger that carries the new version's writes back")
        #expect(contract.contains("EXECUTE format('ALTER TABLE %I RENAME TO %I', 'schemagen_2_item', 'item');"))
        #expect(contract.contains("ALTER TABLE \"item\" RENAME CONSTRAINT \"schemagen_2_item_pkey\" TO \"item_pkey\";"))
        #expect(rollback.contains("DROP TABLE IF EXISTS \"schemagen_2_item\";"))
        #expect(plan.offline.isEmpty)
        #expect(try OnlinePhase.parse(migration.upSQL()).sections == plan.expand.sections)
        #expect(try OnlinePhase.parse(try #require(migration.contractSQL())).sections == plan.contract.sections)
        // The rows left to copy, for the batches' second pass.
        guard case .backfill(let backfill, let statement) = sections[copy] else { return }
        let pending = try #require(backfill.pendingQuery(in: statement))
        #expect(pending.hasPrefix("SELECT schemagen_source.\"id\" AS \"id\" FROM \"item\" AS schemagen_source WHERE \"id\" >= $1::bigint"), "\(pending)")
        #expect(!pending.contains("FOR SHARE"))
    }

    /// What the copy cannot carry both ways keeps the in-place plan: here an enum's values change
    /// with the type.
    @Test func anEnumChangeWithATypeChangeStaysInPlace() throws {
        let before = "enums:\n  Status:\n    type: String\n    cases: {open: open, closed: closed}\n" + Self.base + "      status: Status\n"
        let after = before.replacingOccurrences(of: "Int32", with: "Int64").replacingOccurrences(of: "closed: closed}", with: "closed: closed, archived: archived}")
        let expand = try #require(try plan(before, after).online).expand.text
        #expect(!expand.contains("schemagen_2_item\""), "\(expand)")
        #expect(expand.contains("ADD COLUMN IF NOT EXISTS \"schemagen_2_quantity\" bigint"))
    }

    @Test func expandOnlyAddsAndContractRemoves() throws {
        let migration = try plan(
            Self.base, Self.base.replacingOccurrences(of: "name: String", with: "title: {type: String, renamedFrom: name}").replacingOccurrences(of: "quantity: Int32", with: "quantity: Int32?"))
        let plan = try #require(migration.online)
        let expand = plan.expand.text, contract = plan.contract.text
        for removal in ["DROP COLUMN", "RENAME COLUMN", "RENAME TO", "SET NOT NULL", "DROP TABLE"] {
            #expect(!expand.contains(removal), "expand must not \(removal)")
        }
        #expect(expand.contains("\"name\" AS \"title\""), "the new version's view reads the old column under the new name")
        #expect(expand.contains("ALTER TABLE \"item\" ALTER COLUMN \"quantity\" DROP NOT NULL;"))
        #expect(contract.contains("DROP SCHEMA IF EXISTS \"s_v1\" CASCADE;"))
        #expect(contract.contains("ALTER TABLE \"item\" RENAME COLUMN \"name\" TO \"title\";"))
        #expect(plan.offline.isEmpty)
        // The files read back as the sections they were written from.
        #expect(try OnlinePhase.parse(migration.upSQL()).sections == plan.expand.sections)
        #expect(try OnlinePhase.parse(try #require(migration.contractSQL())).sections == plan.contract.sections)
    }

    @Test func whatCannotBeOnlineIsSaidWithWhy() throws {
        let keyed = Self.base.replacingOccurrences(of: "name: String", with: "name: {type: String, primaryKey: true}")
        let migration = try plan(keyed, keyed.replacingOccurrences(of: "Int32", with: "Int64").replacingOccurrences(of: "quantity: Int64", with: "quantity: {type: Int64, indexed: true}"))
        #expect(migration.online?.offline.isEmpty == true, "a widened column that gains an index is online")
        let retyped = try plan(keyed, keyed.replacingOccurrences(of: "name: {type: String, primaryKey: true}", with: "name: {type: Int, primaryKey: true}"))
        let offline = try #require(retyped.online?.offline)
        #expect(offline.count == 1 && offline[0].contains("part of the primary key"), "\(offline)")
        #expect(retyped.upSQL().contains("-- Not online (blocks writers while it runs): item.name: its type changes and it is part of the primary key"))
        let searchable = try plan(Self.base, Self.base.replacingOccurrences(of: "name: String", with: "name: {type: String, searchable: true}"))
        #expect(searchable.online?.offline.first?.contains("full-text index") == true)
    }

    @Test func phaseFilesAreReadStrictly() throws {
        func failure(_ text: String) -> String? {
            do {
                _ = try OnlinePhase.parse(text)
                return nil
            } catch { return error.description }
        }
        #expect(failure("-- a comment\nSELECT 1;\n")?.contains("line 2: SQL before the first section") == true)
        #expect(failure("-- section: vacuum\nVACUUM;\n")?.contains("line 1: unknown section 'vacuum'") == true)
        #expect(failure("-- section: backfill {\"table\": \"t\"}\nUPDATE t SET a = 1;\n")?.contains("needs {\"table\", \"key\", \"type\", \"batch\"}") == true)
        #expect(failure("-- section: backfill {\"table\":\"t\",\"key\":\"id\",\"type\":\"bigint\",\"batch\":0}\nUPDATE t SET a = 1;\n") != nil, "a batch of no rows never ends")
        #expect(failure("-- section: statement {\"relations\": 3}\nSELECT 1;\n")?.contains("line 1: the facts after the section's kind") == true)
        // A file written before sections carried their facts: they are read from its SQL.
        let phase = try OnlinePhase.parse("-- header\n\n-- section: transaction\n\nSELECT 1;\n-- section: statement\nCREATE INDEX CONCURRENTLY \"i\" ON \"t\" (\"c\");\n")
        #expect(
            phase.sections == [
                .transaction("SELECT 1;", .init(relations: [])), .statement("CREATE INDEX CONCURRENTLY \"i\" ON \"t\" (\"c\");", .init(relations: ["i", "t", "c"], concurrently: true)),
            ])
        #expect(phase.lines == [5, 7])
    }

    /// The facts the planner writes on each section line say what the migrator of earlier
    /// releases read from the SQL: the same index work done concurrently, the same pending-rows
    /// query, the same copies; and the names it quotes, less those inside string constants.
    @Test func sectionFactsSayWhatTheSQLSays() throws {
        let before = Self.base + "  Tag:\n    attributes:\n      title: String\n"
        let after =
            Self.base.replacingOccurrences(of: "name: String\n      quantity: Int32", with: "label: {type: String, renamedFrom: name, indexed: true}\n      quantity: Int64")
            + "  Tag:\n    attributes:\n      title: String\n      made: {type: Date, default: now}\n      code: {type: UUID, default: uuid, unique: true}\n"
        let migration = try plan(before, after)
        let online = try #require(migration.online)
        var kinds: Set<String> = []
        for section in online.expand.sections + online.contract.sections + online.rollback.sections {
            switch section {
            case .transaction(let sql, let facts), .statement(let sql, let facts):
                let earlier = OnlinePhase.SectionFacts.ofEarlierFile(sql)
                #expect(facts.concurrently == earlier.concurrently, "\(sql)")
                #expect(Set(facts.relations).isSubset(of: earlier.relations), "\(facts.relations) / \(earlier.relations)")
                if facts.concurrently { kinds.insert("concurrently") }
            case .backfill(let backfill, let update):
                var bare = backfill
                (bare.pending, bare.copies) = (nil, nil)
                let earlier = try #require(try OnlinePhase.parse("-- section: backfill \(String(decoding: try JSONEncoder().encode(bare), as: UTF8.self))\n\(update)").sections.first)
                guard case .backfill(let read, _) = earlier else { continue }
                #expect(read.pending == backfill.pending && read.copies == backfill.copies, "\(update)")
                kinds.insert(backfill.copies == true ? "copy" : "update")
            case .check: kinds.insert("check")
            }
        }
        #expect(kinds == ["concurrently", "copy", "update", "check"], "\(kinds)")
        // And they come back from the file as they were written.
        #expect(try OnlinePhase.parse(migration.upSQL()).sections == online.expand.sections)
    }

    @Test func generateWritesTheContractFileAndTheManifestGuardsIt() throws {
        let folder = temporaryFolder()
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Schemas"), withIntermediateDirectories: true)
        let yaml = "schema: Shop\nversion: 1\ndialects: [postgres]\nonline: true\n" + Self.base
        try Data(yaml.utf8).write(to: folder.appendingPathComponent("Schemas/Shop.yaml"))
        let tool = BuiltTool("schemagen")
        #expect(try tool.run(["generate", "--migrations-only"], in: folder).status == 0)
        let changed = yaml.replacingOccurrences(of: "version: 1", with: "version: 2").replacingOccurrences(of: "name: String", with: "name: {type: String, primaryKey: true}")
        try Data(changed.utf8).write(to: folder.appendingPathComponent("Schemas/Shop.yaml"))
        let second = try tool.run(["generate", "--migrations-only", "--allow-destructive"], in: folder)
        #expect(second.status == 0, "\(second.error)")
        #expect(second.error.contains("not online: item: a new primary key"), "\(second.error)")
        let directory = MigrationDirectory(path: folder.appendingPathComponent("Migrations/Shop/postgres").path)
        let entry = try #require(directory.entries().last)
        #expect(FileManager.default.fileExists(atPath: directory.path + "/" + entry.contractFile))
        #expect(directory.verify().isEmpty)
        try Data("-- section: transaction\nDROP TABLE item;\n".utf8).write(to: URL(fileURLWithPath: directory.path + "/" + entry.contractFile))
        #expect(directory.verify().map(\.message).contains { $0.contains("\(entry.contractFile) changed after it was generated") })
    }
}
