import ExampleModels
import Foundation
import PersistentStorePostgres
import PersistentStoreSQLite
import SQLiteKit
import Testing

@testable import PersistentStoreCore

/// `forEach` hands models over one by one, and `read` gives it a snapshot without the write lock.
@Suite struct StreamingTests {
    @Test(arguments: StoreEngine.available)
    func forEachVisitsWhatFetchReturnsInTheSameOrder(_ engine: StoreEngine) async throws {
        let store = try engine.flightsStore()
        try await store.insert((0..<500).map { airport(String(format: "K%03d", $0), "Airport \($0 % 7)") })
        let sort = [SortDescriptor(\Airport.name), SortDescriptor(\Airport.icao, order: .reverse)]
        let fetched = try await store.fetch(Airport.self, where: #Predicate { $0.name != "Airport 3" }, sortBy: sort)
        let streamed = try await store.read { store in
            var models: [Airport] = []
            try store.forEach(Airport.self, where: #Predicate { $0.name != "Airport 3" }, sortBy: sort) { models.append($0) }
            return models
        }
        #expect(streamed == fetched)
        #expect(streamed.count == 500 - 71)
    }

    @Test(arguments: StoreEngine.available)
    func anErrorFromTheBodyStopsTheIterationAndComesOutUnchanged(_ engine: StoreEngine) async throws {
        struct Enough: Error, Equatable {}
        let store = try engine.flightsStore()
        try await store.insert((0..<50).map { airport(String(format: "K%03d", $0)) })
        let seen = try await store.read { store in
            var seen = 0
            do {
                try store.forEach(Airport.self) { _ in
                    seen += 1
                    if seen == 10 { throw Enough() }
                }
            } catch is Enough {
                return seen
            }
            return -1
        }
        #expect(seen == 10)
    }

    @Test(arguments: StoreEngine.available)
    func theBodyMayRunOtherQueriesEvenTheSameOne(_ engine: StoreEngine) async throws {
        let store = try engine.flightsStore()
        try await store.insert((0..<30).map { airport(String(format: "K%03d", $0)) })
        let pairs = try await store.read { store in
            var pairs = 0
            try store.forEach(Airport.self) { _ in
                // The same query again, and enough different ones to turn the statement cache over.
                try store.forEach(Airport.self) { _ in pairs += 1 }
                for limit in 1...70 { _ = try store.fetch(Airport.self, limit: limit) }
            }
            return pairs
        }
        #expect(pairs == 900)
    }

    @Test func readIsASnapshotWithoutTheWriteLockAndRefusesWrites() async throws {
        let path = storePath()
        let store = try flightsStore(path)
        try await store.insert(airport("KSFO"))
        let counts = try await store.read { store in
            let before = try store.count(Airport.self)
            // Another connection writes meanwhile: it is not blocked, and the snapshot holds.
            let other = try SQLiteConnection(path: path)
            try other.execute("INSERT INTO airports (icao, name, city, country_code, latitude, longitude, timezone) VALUES ('KOAK', 'Oakland', 'Oakland', 'US', 1, 2, 'UTC');")
            let after = try store.count(Airport.self)
            var write = ""
            do { try store.insert(airport("KLAX")) } catch { write = "\(error)" }
            return (before, after, write)
        }
        #expect(counts.0 == 1 && counts.1 == 1, "one snapshot for the whole read")
        #expect(counts.2.contains("inside read { }"), "\(counts.2)")
        #expect(try await store.count(Airport.self) == 2, "the other connection's row, and no KLAX")
    }

    @Test(arguments: StoreEngine.available)
    func encryptedValuesArriveOpened(_ engine: StoreEngine) async throws {
        let todo = try Store.open(url: try engine.freshURL(), schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: testKeys))
        try await todo.insert((0..<20).map { TodoItem(taskName: "task \($0)", notes: "secret \($0)") })
        let notes = try await todo.read { store in
            var notes: [String] = []
            try store.forEach(TodoItem.self, sortBy: [SortDescriptor(\TodoItem.taskName)]) { notes.append($0.notes ?? "") }
            return notes
        }
        #expect(notes.count == 20 && notes.allSatisfy { $0.hasPrefix("secret ") })
        #expect(Set(notes).count == 20)
    }
}
