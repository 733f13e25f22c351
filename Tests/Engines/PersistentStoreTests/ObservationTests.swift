import ExampleModels
import Foundation
import PersistentStorePostgres
import PersistentStoreSQLite
import SQLiteKit
import SchemaMetadata
import Testing

@testable import PersistentStoreCore

/// What a stream yielded so far, gathered by a task of its own.
actor Collected<Element: Sendable> {
    private(set) var items: [Element] = []
    private(set) var failure: String?
    private(set) var finished = false

    func add(_ item: Element) { items.append(item) }
    func fail(_ error: any Error) { failure = "\(error)" }
    func finish() { finished = true }

    /// Starts gathering `stream`; cancel the task to stop.
    static func gather(_ stream: AsyncThrowingStream<Element, Error>) -> (Collected, _Concurrency.Task<Void, Never>) {
        let collected = Collected()
        let task = _Concurrency.Task {
            do {
                for try await item in stream { await collected.add(item) }
            } catch {
                await collected.fail(error)
            }
            await collected.finish()
        }
        return (collected, task)
    }
}

/// Polls `condition` every 5 ms until it holds, giving up after `seconds` worth of polls. Polls
/// are counted rather than the clock read: when other tests keep every thread of the pool busy
/// (processes waited for, CPU-bound work), this test and the store wait together, and a wall
/// clock would blame the store for the machine's load. Two minutes of wall time end it anyway.
/// The default is generous (30 s of polls): it only costs time when the condition never holds,
/// and a clean-clone run of the whole suite on two cores starved a 5 s wait once.
func eventually(within seconds: Double = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let hardDeadline = Date().addingTimeInterval(120)
    var polls = Int(seconds / 0.005)
    while polls > 0, Date() < hardDeadline {
        if try await condition() { return true }
        try? await _Concurrency.Task.sleep(for: .milliseconds(5))
        polls -= 1
    }
    return try await condition()
}

@Suite struct ObservationTests {
    @Test(arguments: StoreEngine.available)
    func changesStreamsEveryCommitInOrderWithAuthorFilters(_ engine: StoreEngine) async throws {
        let path = try engine.freshURL()
        let app = try todoStore(path, author: "app")
        let widget = try todoStore(path, author: "widget")
        let (everything, task1) = Collected.gather(try await app.changes())
        let (others, task2) = Collected.gather(try await app.changes(author: .excluding("app")))
        defer {
            task1.cancel()
            task2.cancel()
        }
        for index in 0..<10 {
            let store = index.isMultiple(of: 2) ? app : widget
            try await store.insert(TodoItem(taskName: "item \(index)"))
        }
        #expect(await eventually { await everything.items.count == 10 })
        let tokens = await everything.items.map(\.token)
        #expect(tokens == tokens.sorted() && Set(tokens).count == 10, "in commit order, each once")
        #expect(await everything.items.map(\.author) == (0..<10).map { $0.isMultiple(of: 2) ? "app" : "widget" })
        #expect(await eventually { await others.items.count == 5 })
        #expect(await others.items.allSatisfy { $0.author == "widget" })
        // The widget's commits came through another connection: the file watcher carried them.
    }

    @Test(arguments: StoreEngine.available)
    func changesCanReplayFromASavedToken(_ engine: StoreEngine) async throws {
        let store = try todoStore(try engine.freshURL())
        try await store.insert(TodoItem(taskName: "one"))
        let saved = try await store.currentHistoryToken()
        try await store.insert(TodoItem(taskName: "two"))
        try await store.insert(TodoItem(taskName: "three"))
        let (replayed, task) = Collected.gather(try await store.changes(after: saved))
        defer { task.cancel() }
        #expect(await eventually { await replayed.items.count == 2 })
        try await store.insert(TodoItem(taskName: "four"))
        #expect(await eventually { await replayed.items.count == 3 })
    }

    @Test(arguments: StoreEngine.available)
    func aStreamBehindPrunedHistoryFailsLoudly(_ engine: StoreEngine) async throws {
        let store = try todoStore(try engine.freshURL())
        try await store.insert(TodoItem(taskName: "one"))
        let saved = try await store.currentHistoryToken()
        try await store.insert(TodoItem(taskName: "two"))
        try await store.insert(TodoItem(taskName: "three"))
        try await store.deleteHistory(before: try await store.currentHistoryToken())
        let (stream, task) = Collected.gather(try await store.changes(after: saved))
        defer { task.cancel() }
        #expect(await eventually { await stream.finished })
        #expect(await stream.failure?.contains("was pruned") == true)
    }

    @Test func observeYieldsAtOnceThenAfterRelevantCommitsOnly() async throws {
        let path = storePath()
        let store = try flightsStore(path)
        try await store.insert(airport("KSFO", "San Francisco"))
        let (results, task) = Collected.gather(await store.observe(Airport.self, where: #Predicate { $0.icao.starts(with: "KS") }, sortBy: [SortDescriptor(\.icao)]))
        defer { task.cancel() }
        #expect(await eventually { await results.items.count == 1 })
        #expect(await results.items.first?.map(\.icao) == ["KSFO"])
        try await store.insert(airport("KSEA", "Seattle"))
        #expect(await eventually { await results.items.last?.map(\.icao) == ["KSEA", "KSFO"] })
        // A commit to another table does not wake the query: once its delivery has read the
        // commit (the delivered token reaches it), no query was woken.
        #expect(await eventually { await store.observation.counts.queryRuns >= 2 })
        let runs = await store.observation.counts.queryRuns
        let wakeUps = await store.observation.counts.queryWakeUps
        try await store.insert(Airline(code: "UAL", name: "United"))
        let token = try await store.currentHistoryToken().value
        #expect(await eventually { await store.observation.deliveredToken >= token })
        #expect(await store.observation.counts.queryWakeUps == wakeUps)
        // Nothing runs while nothing changes: the watcher's fallback tick (every second) delivers,
        // asks SQLite's data_version, finds it unchanged and wakes nothing.
        let deliveries = await store.observation.counts.deliveries
        #expect(await eventually { await store.observation.counts.deliveries >= deliveries + 2 })
        #expect(await store.observation.counts.queryWakeUps == wakeUps)
        #expect(await store.observation.counts.queryRuns == runs)
        // Cancelling ends the observation and stops the watcher.
        task.cancel()
        #expect(await eventually { await store.subscriberCount == 0 })
        #expect(await store.observation.watcher == nil)
    }

    @Test(arguments: StoreEngine.available)
    func burstsOfCommitsCoalesce(_ engine: StoreEngine) async throws {
        let store = try todoStore(try engine.freshURL())
        let stream = await store.observeCount(TodoItem.self)
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next() == 0)
        // 200 commits while the consumer is not reading: it then gets the newest count, once or
        // twice, not 200 results.
        for index in 0..<200 { try await store.insert(TodoItem(taskName: "item \(index)")) }
        try await _Concurrency.Task.sleep(for: .milliseconds(100))
        var seen: [Int] = []
        while seen.last != 200, let next = try await iterator.next() { seen.append(next) }
        #expect(seen.last == 200)
        #expect(seen.count <= 2, "\(seen)")
        // Reruns wait 10 ms for more commits, so how many coalesce depends on the machine's
        // load (under 50 alone, 56 once with the whole suite running): at most one per two
        // commits shows they do.
        let runs = await store.observation.counts.queryRuns
        #expect(runs < 100, "reruns coalesced: \(runs)")
    }

    /// The joined predicate reads airports too: a change to the origin airport, committed by
    /// another connection, reruns it.
    @Test(arguments: StoreEngine.available)
    func aJoinedPredicateFiresOnAChangeToTheJoinedTable(_ engine: StoreEngine) async throws {
        let path = try engine.freshURL()
        let store = try flightsStore(path)
        let sfo = try await store.insert(airport("KSFO", "San Francisco"))
        let lax = try await store.insert(airport("KLAX", "Los Angeles"))
        try await store.insert([flight("UA1", origin: sfo.id), flight("UA2", origin: lax.id)])
        let (results, task) = Collected.gather(await store.observe(Flight.self, joining: #Predicate { $0.origin?.name == "San Francisco" }))
        defer { task.cancel() }
        #expect(await eventually { await results.items.last?.map(\.ident) == ["UA1"] })
        let other = try flightsStore(path)
        var renamed = lax
        renamed.name = "San Francisco"
        try await other.insert(renamed)
        #expect(await eventually { await results.items.last?.map(\.ident).sorted() == ["UA1", "UA2"] })
    }

    /// A write that bypasses the store (the sqlite3 shell, a migration) leaves no history; the
    /// data version still changes, so every observed query reruns.
    @Test func writesWithoutAStoreStillWakeObservers() async throws {
        let path = storePath()
        let store = try todoStore(path)
        let (results, task) = Collected.gather(await store.observeCount(TodoItem.self))
        defer { task.cancel() }
        #expect(await eventually { await results.items == [0] })
        let raw = try SQLiteConnection(path: path)
        try raw.execute("INSERT INTO todo_item (id, task_name, start_date, is_completed) VALUES ('00000000-0000-0000-0000-000000000001', 'raw', '2026-11-30T00:00:00.000Z', 0);")
        #expect(await eventually(within: 2) { await results.items.last == 1 })
    }

    /// History off: observers still rerun, after every commit of any connection.
    @Test(arguments: StoreEngine.available)
    func observingWorksWithoutHistory(_ engine: StoreEngine) async throws {
        let path = try engine.freshURL()
        let garage = try Store.open(url: path, schema: GarageSchema.descriptor, migrations: GarageSchema.migrations)
        let (results, task) = Collected.gather(await garage.observeCount(Person.self))
        defer { task.cancel() }
        #expect(await eventually { await results.items == [0] })
        try await garage.insert(Person(name: "Ada"))
        #expect(await eventually { await results.items.last == 1 })
        let other = try Store.open(url: path, schema: GarageSchema.descriptor, migrations: GarageSchema.migrations)
        try await other.insert(Person(name: "Grace"))
        #expect(await eventually { await results.items.last == 2 })
        await #expect(throws: StoreError.self) { try await garage.changes() }
    }

    @Test func anInMemoryStoreDeliversItsOwnCommits() async throws {
        let store = try Store(path: nil, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: testKeys))
        let (changes, task) = Collected.gather(try await store.changes())
        defer { task.cancel() }
        try await store.insert(TodoItem(taskName: "in memory"))
        // Longer than the default: under the full suite's process tests it once took more.
        let delivered = await eventually(within: 30) { await changes.items.count == 1 }
        // Said in full when it fails: it has failed under the whole suite's load, never alone.
        let state =
            "stream failure: \(await changes.failure ?? "none"), finished: \(await changes.finished), deliveries: \(await store.observation.counts.deliveries), yielded: \(await store.observation.counts.transactionsYielded), newest token read: \(await store.observation.counts.newestTokenRead), history tokens: \(try await store.history().map(\.token.value)), subscribers: \(await store.subscriberCount), history: \(try await store.history().count) rows"
        #expect(delivered, "\(state)")
        #expect(await store.observation.watcher == nil)
    }
}
