import CSQLite
import ExampleModels
import FieldEncryption
import Foundation
import PersistentStore
import SchemaMetadata
import SQLiteKit

/// `store-benchmark encryption plain|secret ROWS DIR` and `store-benchmark search store|raw ROWS QUERIES DIR`.
enum EncryptionAndSearch {
    static let keys: KeySource = {
        do { return .ring(try KeyRing([(id: "bench", bytes: [UInt8](repeating: 7, count: 32))])) } catch { preconditionFailure("benchmark key") }
    }()

    /// Inserts ROWS notes in one transaction and fetches them all; seconds of each.
    static func notes(_ mode: String, rows: Int, folder: String) async throws -> (insert: Double, fetch: Double) {
        switch mode {
        case "plain": return try await notes(PlainNote.self, rows: rows, path: folder + "/plain.sqlite")
        default: return try await notes(SecretNote.self, rows: rows, path: folder + "/secret.sqlite")
        }
    }

    static func notes<Note: BenchmarkNote>(_ type: Note.Type, rows: Int, path: String) async throws -> (insert: Double, fetch: Double) {
        let store = try Store(path: path, schema: Note.schema, migrations: NoteSchemas.migration(table: Note.entity.table, encrypted: Note.entity.columns[1].isEncrypted),
                              configuration: .init(keys: keys))
        let notes = (0..<rows).map { Note(id: nil, title: "note \($0)", body: "The body of note \($0): a sentence or two that someone would rather keep to themselves.") }
        var start = DispatchTime.now().uptimeNanoseconds
        try await store.insert(notes)
        let insert = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        start = DispatchTime.now().uptimeNanoseconds
        let all = try await store.fetch(Note.self)
        let fetch = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard all.count == rows, all.last?.body == notes.last?.body else { throw CancellationError() }
        return (insert, fetch)
    }

    static let words = ["paint", "kitchen", "call", "plumber", "buy", "milk", "bread", "water", "plants", "garden", "fix", "bike", "book",
                        "flight", "hotel", "email", "report", "tax", "return", "clean", "garage", "walk", "dog", "cat", "vet", "dentist",
                        "birthday", "present", "mum", "dad", "school", "forms", "car", "service", "insurance", "renew", "passport",
                        "photos", "backup", "laptop", "printer", "ink", "shelf", "lamp", "curtains", "sofa", "rug", "window", "door", "lock"]

    /// Deterministic task names: three to seven words each.
    static func taskName(_ index: Int) -> String {
        var state = UInt64(index) &* 6364136223846793005 &+ 1442695040888963407
        func next() -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33)
        }
        return (0..<(3 + next() % 5)).map { _ in words[next() % words.count] }.joined(separator: " ")
    }

    static func queries(_ count: Int) -> [String] {
        (0..<count).map { index in index % 3 == 0 ? words[(index * 7) % words.count] : words[(index * 7) % words.count] + " " + words[(index * 13 + 5) % words.count] }
    }

    /// Fills ROWS to-do items (through the store, which fills the index by its triggers), then
    /// times QUERIES searches of one or two words, 20 results each; microseconds per query.
    static func search(_ mode: String, rows: Int, queries count: Int, folder: String) async throws -> [Int] {
        let path = folder + "/search.sqlite"
        let store = try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(recordsHistory: false, keys: keys))
        try await store.insert((0..<rows).map { TodoItem(taskName: taskName($0), startDate: Date(timeIntervalSince1970: Double($0))) })
        var latencies: [Int] = []
        if mode == "store" {
            for query in queries(count) {
                let start = DispatchTime.now().uptimeNanoseconds
                let found = try await store.search(TodoItem.self, matching: query, limit: 20)
                latencies.append(Int((DispatchTime.now().uptimeNanoseconds - start) / 1000))
                guard !found.isEmpty else { throw CancellationError() }
            }
            return latencies
        }
        // The same query through the C API: prepared once, words quoted as phrases, rows read.
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        defer { sqlite3_close(db) }
        let sql = """
            SELECT t.id, t.task_name, t.start_date, t.is_completed, t.due_date, f.rank FROM todo_item t
            JOIN (SELECT rowid, rank FROM todo_item_task_name_fts WHERE todo_item_task_name_fts MATCH ?) f ON t.rowid = f.rowid
            ORDER BY f.rank, t.rowid LIMIT 20
            """
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        for query in queries(count) {
            let start = DispatchTime.now().uptimeNanoseconds
            let phrases = query.split(separator: " ").map { "\"\($0)\"" }.joined(separator: " ")
            sqlite3_bind_text(statement, 1, phrases, -1, StoreBenchmark.transient)
            var names: [String] = []
            while sqlite3_step(statement) == SQLITE_ROW {
                names.append(String(cString: sqlite3_column_text(statement, 1)))
                _ = String(cString: sqlite3_column_text(statement, 0))
                _ = String(cString: sqlite3_column_text(statement, 2))
            }
            sqlite3_reset(statement)
            latencies.append(Int((DispatchTime.now().uptimeNanoseconds - start) / 1000))
            guard !names.isEmpty else { throw CancellationError() }
        }
        return latencies
    }
}
