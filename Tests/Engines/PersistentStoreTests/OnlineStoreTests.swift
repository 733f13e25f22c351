import ExampleModels
import Foundation
import MigrationFiles
import MigrationPlanner
import MigratorCore
import MigratorPostgres
import PersistentStorePostgres
import PostgresKit
import RelationalModel
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

/// The store on a PostgreSQL schema planned online: it reads and writes through its version's
/// views (`todo_v2`) while the migration is expanded and renames a column, records history
/// under its own names, and keeps working through contract. An app one version older keeps
/// opening the database during the rollout.
@Suite(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct OnlineStoreTests {
    /// Todo as its YAML says (version 2 here), and a version 1 whose `taskName` was `taskTitle`
    /// and, `retyped`, whose `isCompleted` was a number (so the table is rebuilt by copying).
    static func migrations(retyped: Bool) throws -> [EmbeddedMigration] {
        try Self.migrationsWithContract(retyped: retyped).map { script in
            EmbeddedMigration(
                version: script.version, name: script.name, up: "SELECT 1;", down: "SELECT 1;",
                dialects: ["postgres": .init(up: script.up, down: script.down, contract: script.contract)])
        }
    }

    /// Todo's versions 1 and 2 as this suite changes them.
    static func versions(retyped: Bool) throws -> (SchemaSnapshot, SchemaSnapshot) {
        let yaml = try String(contentsOf: repositoryRoot.appendingPathComponent("Schemas/Todo.yaml"), encoding: .utf8)
        func snapshot(_ text: String) throws -> SchemaSnapshot {
            let loaded = SchemaLoader.load(source: .init(path: "Todo.yaml", text: text))
            return SnapshotBuilder.snapshot(of: try #require(loaded.schema, "\(loaded.diagnostics.map(\.message))"))
        }
        let current = yaml.replacingOccurrences(of: "version: 4", with: "version: 2")
        var first = current.replacingOccurrences(of: "version: 2", with: "version: 1").replacingOccurrences(of: "taskName: {", with: "taskTitle: {")
        if retyped { first = first.replacingOccurrences(of: "isCompleted: {type: Bool, default: false}", with: "isCompleted: {type: Int32, default: 0}") }
        let v1 = try snapshot(first)
        let v2 = try snapshot(current.replacingOccurrences(of: "taskName: {", with: "taskName: {renamedFrom: taskTitle, "))
        #expect(v1.table(named: "todo_item")?.column(named: "task_title") != nil)
        #expect((v1.table(named: "todo_item")?.column(named: "is_completed")?.kind == .integer) == retyped)
        return (v1, v2)
    }

    @Test(arguments: [false, true])
    func theStoreWorksThroughItsVersionsViewsWhileARenameIsExpandedAndAfterItCompletes(retyped: Bool) async throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let url = try server.createDatabase()
        let migrations = try Self.migrations(retyped: retyped)
        let raw = try PostgresConnection(url)
        // Version 1 is live, with rows its app wrote.
        let first = migrations.prefix(1).compactMap { $0.variant(for: "postgres") }
        try Migrator(database: PostgresMigrationDatabase(raw), schema: "Todo", scripts: first).up()
        try raw.execute("INSERT INTO todo_item (id, task_title, start_date, is_completed) VALUES (gen_random_uuid(), 'written by version 1', now(), \(retyped ? "0" : "false"))")
        if retyped { #expect(try raw.query("SELECT count(*) FROM pg_class WHERE relname = 'schemagen_2_todo_item'") == [[.integer(0)]]) }

        // The version-2 app opens it: the expand runs, and it reads through todo_v2.
        let store = try Store.open(url: url, schema: TodoSchema.descriptor, migrations: migrations, configuration: .init(author: "v2", keys: testKeys))
        #expect(try raw.query("SELECT phase FROM schemagen_online_migrations") == [[.text("expanded")]])
        #expect(try raw.query("SELECT count(*) FROM pg_class WHERE relname = 'schemagen_2_todo_item'") == [[.integer(retyped ? 1 : 0)]], "a type change copies the table")
        #expect(try await store.fetch(TodoItem.self).map(\.taskName) == ["written by version 1"])
        let start = try await store.currentHistoryToken()
        var milk = TodoItem(taskName: "Buy milk")
        try await store.insert(milk)
        milk.taskName = "Buy oat milk"
        try await store.insert(milk)
        // Version 1 still writes the table under its own names; both see each other's rows.
        #expect(try raw.query("SELECT task_title FROM todo_item WHERE id = $1", [.text(milk.id.uuidString.lowercased())]) == [[.text("Buy oat milk")]])
        try raw.execute("UPDATE todo_item SET task_title = 'edited by version 1' WHERE task_title = 'written by version 1'")
        #expect(Set(try await store.fetch(TodoItem.self).map(\.taskName)) == ["Buy oat milk", "edited by version 1"])
        // History under the code's names, from the renamed column.
        var history = try await store.history(after: start)
        #expect(history.count == 2)
        #expect(try history.first?.changes.first?.value(\TodoItem.taskName) == "Buy milk")
        #expect(try history.last?.changes.first?.value(\TodoItem.taskName) == "Buy oat milk")
        #expect(history.last?.changes.first?.changedAttributes == ["taskName"])

        // An app of version 1 (its code knows migration 1 only) still opens the database.
        let older = try Store.open(url: url, schema: TodoSchema.descriptor, migrations: Array(migrations.prefix(1)), configuration: .init(keys: testKeys))
        _ = older
        // Its change triggers are on the old table now; a write of this version carried there
        // is recorded by them too, and this version's store reads back only its own table's image.
        let beforeBread = try await store.currentHistoryToken()
        try await store.insert(TodoItem(taskName: "Buy bread"))
        let bread = try await store.history(after: beforeBread)
        #expect(bread.count == 1 && bread.first?.changes.count == 1, "\(bread)")
        #expect(try bread.first?.changes.first?.value(\TodoItem.taskName) == "Buy bread")

        // Complete: the table takes the new names; the open store goes on as before.
        let full = try Self.migrationsWithContract(retyped: retyped)
        try Migrator(database: PostgresMigrationDatabase(try PostgresConnection(url)), schema: "Todo", scripts: full).complete()
        #expect(try raw.query("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'todo_item' AND column_name = 'task_name'") == [[.integer(1)]])
        let token = try await store.currentHistoryToken()
        milk.taskName = "Buy soy milk"
        try await store.insert(milk)
        history = try await store.history(after: token)
        #expect(try history.first?.changes.first?.value(\TodoItem.taskName) == "Buy soy milk")
        #expect(Set(try await store.fetch(TodoItem.self).map(\.taskName)) == ["Buy soy milk", "edited by version 1", "Buy bread"])
        // A store opened now finds no mapping left and works the same.
        let later = try Store.open(url: url, schema: TodoSchema.descriptor, migrations: migrations, configuration: .init(keys: testKeys))
        #expect(Set(try await later.fetch(TodoItem.self).map(\.taskName)) == ["Buy soy milk", "edited by version 1", "Buy bread"])
    }

    /// The same migrations with their contract phases, as `migrate complete` reads them.
    static func migrationsWithContract(retyped: Bool) throws -> [MigrationScript] {
        let (v1, v2) = try versions(retyped: retyped)
        return [Migration(from: nil, to: v1, renderer: PostgresRenderer(), online: true), Migration(from: v1, to: v2, renderer: PostgresRenderer(), online: true)]
            .enumerated().map { offset, migration in
                var script = MigrationScript(version: offset + 1, name: "v\(offset + 1)", up: migration.upSQL(), down: migration.downSQL())
                script.contract = migration.contractSQL()
                return script
            }
    }
}
