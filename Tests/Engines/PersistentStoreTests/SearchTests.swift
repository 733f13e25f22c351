import ExampleModels
import Foundation
import PersistentStorePostgres
import PersistentStoreSQLite
import SQLiteKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

/// A small to-do list whose relevance to "paint kitchen" is plain to a reader.
let searchFixture: [(name: String, done: Bool)] = [
    ("Paint the kitchen", false),  // both words, short
    ("Kitchen: paint the ceiling, then paint the walls", false),  // both, paint twice
    ("Buy paint", false),  // one word
    ("Clean the kitchen", true),  // one word
    ("Call the plumber about the kitchen sink, then buy paint for the hallway and the stairs", false),  // both, long
    ("Water the plants", false),  // neither
    ("Painting class on Tuesday", false),  // a longer word: no match
]

func searchStore() async throws -> (Store, String) {
    let path = storePath()
    let store = try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: testKeys))
    for (index, item) in searchFixture.enumerated() {
        try await store.insert(TodoItem(taskName: item.name, startDate: Date(timeIntervalSince1970: Double(index)), isCompleted: item.done))
    }
    return (store, path)
}

@Suite struct SearchTests {
    @Test func resultsComeBestFirstAsSQLiteRanksThem() async throws {
        let (store, path) = try await searchStore()
        let results = try await store.search(TodoItem.self, matching: "paint kitchen")
        // bm25 weighs length: the short task beats the one that says "paint" twice.
        #expect(
            results.map(\.model.taskName) == [
                "Paint the kitchen",
                "Kitchen: paint the ceiling, then paint the walls",
                "Call the plumber about the kitchen sink, then buy paint for the hallway and the stairs",
            ])
        #expect(results.map(\.rank) == results.map(\.rank).sorted(), "lower bm25 first")
        // The same order as SQLite's own bm25 over the index, asked directly.
        let direct = try SQLiteConnection(path: path).query(
            """
            SELECT t.task_name FROM todo_item_task_name_fts f JOIN todo_item t ON t.rowid = f.rowid
            WHERE todo_item_task_name_fts MATCH 'paint kitchen' ORDER BY bm25(todo_item_task_name_fts), t.rowid
            """)
        #expect(direct.map { $0[0] } == results.map { .text($0.model.taskName) })
        #expect(try await store.search(TodoItem.self, matching: "paint").count == 4)
        #expect(try await store.search(TodoItem.self, matching: "KITCHEN").count == 4, "case does not matter")
        #expect(try await store.search(TodoItem.self, matching: "paint", limit: 2).count == 2)
        #expect(try await store.search(TodoItem.self, matching: "   ").isEmpty)
    }

    @Test(arguments: StoreEngine.available)
    func aPredicateNarrowsTheResults(_ engine: StoreEngine) async throws {
        let (store, _) = try await searchStore()
        let open = try await store.search(TodoItem.self, matching: "kitchen", where: #Predicate { !$0.isCompleted })
        #expect(open.count == 3 && open.allSatisfy { !$0.model.isCompleted })
    }

    @Test(arguments: StoreEngine.available)
    func snippetsMarkTheMatches(_ engine: StoreEngine) async throws {
        let (store, _) = try await searchStore()
        let results = try await store.search(TodoItem.self, matching: "plumber", snippets: SnippetStyle(open: "<b>", close: "</b>", tokens: 4))
        let snippet = try #require(results.first?.snippets["taskName"])
        #expect(snippet.contains("<b>plumber</b>"), "\(snippet)")
        #expect(snippet.hasSuffix("…"), "\(snippet)")
        #expect(try await store.search(TodoItem.self, matching: "plumber").first?.snippets.isEmpty == true, "none unless asked")
    }

    /// Whatever a user types is words to find, never FTS5 syntax: no input is an error.
    @Test(arguments: StoreEngine.available)
    func noUserInputIsASyntaxError(_ engine: StoreEngine) async throws {
        let (store, _) = try await searchStore()
        let hostile = [
            "\"", "\"paint", "paint\"", "(", ")", "*", "paint*", "^paint", "NEAR(paint kitchen)", "paint AND", "OR", "NOT kitchen",
            "task_name:paint", "-paint", "+", "\\", "'", "''", "\u{0}", "ü", "🎨 paint", "{paint kitchen}", ":", "paint:kitchen", "a\"b\"c",
        ]
        for text in hostile {
            do { _ = try await store.search(TodoItem.self, matching: text) } catch { Issue.record("'\(text)': \(error)") }
        }
        var generator = SeededGenerator(seed: SeededGenerator.seed(default: 13))
        let alphabet = Array("paint kitchen\"()*^:-+'{}NEAR AND OR NOT \u{1F3A8}ü\t\n")
        for _ in 0..<500 {
            let text = String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            do { _ = try await store.search(TodoItem.self, matching: text) } catch { Issue.record("'\(text)': \(error)") }
        }
        #expect(try await store.search(TodoItem.self, matching: "\"paint\"").count == 4, "quotes separate words, as in the index")
    }

    @Test(arguments: StoreEngine.available)
    func rawFTS5QueriesAreAvailableAndCheckedApart(_ engine: StoreEngine) async throws {
        let (store, _) = try await searchStore()
        #expect(try await store.search(TodoItem.self, .engineSyntax("paint*")).count == 5, "a prefix query finds Painting too")
        #expect(try await store.search(TodoItem.self, .engineSyntax("kitchen NOT paint")).map(\.model.taskName) == ["Clean the kitchen"])
        do {
            _ = try await store.search(TodoItem.self, .engineSyntax("\"unbalanced"))
            Issue.record("a malformed FTS5 query ran")
        } catch {
            #expect("\(error)".contains("FTS5 query") && "\(error)".contains("is not valid") && "\(error)".contains(".words(_:)"), "\(error)")
        }
        // The words form of the same text is never a syntax error.
        #expect(try await store.search(TodoItem.self, .words("\"unbalanced")).isEmpty)
    }

    /// The index follows upserts, deletes and rollbacks, and SQLite's own check agrees.
    @Test func theIndexStaysConsistent() async throws {
        let (store, path) = try await searchStore()
        var item = try #require(try await store.search(TodoItem.self, matching: "plants").first?.model)
        item.taskName = "Water the garden"
        try await store.insert(item)
        #expect(try await store.search(TodoItem.self, matching: "plants").isEmpty)
        #expect(try await store.search(TodoItem.self, matching: "garden").map(\.model.id) == [item.id])
        try await store.delete(item)
        #expect(try await store.search(TodoItem.self, matching: "garden").isEmpty)
        struct Abort: Error {}
        let aborted = await #expect(throws: StoreError.self) {
            try await store.transaction { store in
                try store.insert(TodoItem(taskName: "Varnish the garden shed"))
                throw Abort()
            }
        }
        #expect(aborted?.bodyError is Abort, "the body's error, carried by StoreError.body")
        #expect(try await store.search(TodoItem.self, matching: "varnish").isEmpty)
        let raw = try SQLiteConnection(path: path)
        try raw.execute("INSERT INTO todo_item_task_name_fts (todo_item_task_name_fts) VALUES ('integrity-check')")
    }

    @Test(arguments: StoreEngine.available)
    func anEntityWithoutSearchableAttributesSaysSo(_ engine: StoreEngine) async throws {
        let store = try engine.flightsStore()
        await #expect(throws: StoreError.self) { try await store.search(Airline.self, matching: "united") }
    }

    /// The defect: a `[String]` attribute's snippet showed its JSON (`["[travel]","portugal"]`).
    /// Its strings are indexed and shown as text, separated by spaces, and the index follows
    /// updates; SQLite's own check agrees.
    @Test func aStringArrayIsSearchedAndShownAsItsWords() async throws {
        let path = storePath()
        let store = try Store(path: path, schema: TasksSchema.descriptor, migrations: TasksSchema.migrations)
        let list = try await store.insert(TaskList(name: "Trips"))
        var lisbon = try await store.insert(Task(name: "Book the flight", tags: ["travel", "portugal", "o'clock \"quoted\""], listID: list.id!))
        try await store.insert(Task(name: "Pack", tags: ["home"], listID: list.id!))
        let results = try await store.search(Task.self, matching: "portugal", snippets: SnippetStyle(open: "[", close: "]", tokens: 8))
        #expect(results.map(\.model.id) == [lisbon.id])
        #expect(results.first?.snippets["tags"] == "travel [portugal] o'clock \"quoted\"", "\(results.first?.snippets ?? [:])")
        #expect(try await store.search(Task.self, matching: "quoted").map(\.model.id) == [lisbon.id], "words inside a string are words")
        lisbon.tags = ["travel", "spain"]
        try await store.insert(lisbon)
        #expect(try await store.search(Task.self, matching: "portugal").isEmpty)
        #expect(try await store.search(Task.self, matching: "spain").map(\.model.id) == [lisbon.id])
        try SQLiteConnection(path: path).execute("INSERT INTO task_tags_fts (task_tags_fts) VALUES ('integrity-check')")
    }
}
