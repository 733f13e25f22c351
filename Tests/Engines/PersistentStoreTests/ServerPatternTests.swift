import ExampleModels
import Foundation
import PersistentStorePostgres
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

/// What a server app built on the store needs (the Dispatch job queue): claiming work without
/// conflicts, inserts that keep what they should, typed errors whose retries show, and
/// `changes(after: nil)` starting from now. Each on both engines.
/// #Predicate captures values, not enum cases: the states as constants.
let queued = JobState.queued, running = JobState.running, done = JobState.done

@Suite(.blocking) struct ServerPatternTests {
    static func dispatch(_ url: String, events: (@Sendable (StoreEvent) -> Void)? = nil) throws -> Store {
        try Store.open(url: url, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations, configuration: .init(author: "test", events: events))
    }

    /// A queue and `count` queued jobs, their priorities cycling 0, 1, 2.
    static func enqueue(_ store: Store, count: Int, queue name: String = "mail") async throws -> Queue {
        let queue = try await store.insert(Queue(name: name))
        try await store.insert((0..<count).map { Job(name: "\(name)-\($0)", payload: "{\"n\":\($0)}", priority: $0 % 3, queueID: queue.id!) })
        return queue
    }

    @Test(arguments: StoreEngine.available)
    func claimTakesTheFirstFreeJobsInOrderAndSetsThem(_ engine: StoreEngine) async throws {
        let store = try Self.dispatch(try engine.freshURL())
        let queue = try await Self.enqueue(store, count: 7)
        let token = try await store.currentHistoryToken()
        let queueID = queue.id!
        let before = Date()
        let first = try await store.claim(
            Job.self, where: #Predicate { $0.queueID == queueID && $0.state == queued },
            sortBy: [SortDescriptor(\.priority, order: .reverse), SortDescriptor(\.name)], limit: 3,
            set: [.set(\.state, to: .running), .set(\.lockedBy, to: "w1"), .set(\.lockedAt, to: before), .increment(\.attempts)])
        // Priority 2 first (mail-2, mail-5), then priority 1 by name.
        #expect(first.map(\.name) == ["mail-2", "mail-5", "mail-1"])
        #expect(first.allSatisfy { $0.state == .running && $0.lockedBy == "w1" && $0.attempts == 1 && $0.lockedAt == StoredDate.rounded(before) })
        #expect(try await store.count(Job.self, where: #Predicate { $0.state == running }) == 3)
        // The rest, fewer than asked for, then nothing.
        let rest = try await store.claim(Job.self, where: #Predicate { $0.state == queued }, limit: 10, set: [.set(\.state, to: .running)])
        #expect(rest.count == 4)
        #expect(try await store.claim(Job.self, where: #Predicate { $0.state == queued }, limit: 10, set: [.set(\.state, to: .running)]).isEmpty)
        #expect(try await store.claim(Job.self, limit: 0, set: [.set(\.state, to: .running)]).isEmpty)

        // The history records each claim as updates of the claimed rows' changed columns.
        let history = try await store.history(after: token)
        #expect(history.count == 2)
        let updates = history[0].changes.filter { $0.kind == .update }
        #expect(updates.count == 3 && Set(updates.flatMap(\.changedAttributes)) == ["state", "lockedBy", "lockedAt", "attempts"])
        #expect(try updates.map { try $0.value(\Job.lockedBy) } == [String?](repeating: "w1", count: 3))

        // Encrypted and external properties cannot be set in place, an unknown one not at all.
        await #expect(throws: StoreError.self) { try await store.claim(Job.self, limit: 1, set: []) }
        let released = try await store.update(Job.self, set: [.set(\.state, to: .queued), .set(\.lockedBy, to: nil)], where: #Predicate { $0.lockedBy == "w1" })
        #expect(released == 3)
        #expect(try await store.count(Job.self, where: #Predicate { $0.state == queued && $0.lockedBy == nil }) == 3)
    }

    /// Four workers on their own connections claim 2,000 jobs one or a few at a time and mark
    /// each done: every job is done exactly once, and on PostgreSQL the claims abort (almost) no
    /// transaction, measured by the server (`pg_stat_database.xact_rollback`) and the stores.
    @Test(arguments: StoreEngine.available)
    func fourWorkersClaimTwoThousandJobsEachOnceWithoutConflicts(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let producer = try Self.dispatch(url)
        let jobCount = 2_000
        _ = try await Self.enqueue(producer, count: jobCount)
        let rollbacksBefore = engine == .postgres ? try Self.rollbacks(url) : 0
        var workers: [Store] = []
        for _ in 0..<4 { workers.append(try Self.dispatch(url)) }
        let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
            for (index, worker) in workers.enumerated() {
                group.addTask {
                    var done: [String] = []
                    while true {
                        let jobs = try await worker.claim(
                            Job.self, where: #Predicate { $0.state == queued }, sortBy: [SortDescriptor(\.priority, order: .reverse)], limit: 1 + index % 3,
                            set: [.set(\.state, to: .running), .set(\.lockedBy, to: "worker-\(index)"), .increment(\.attempts)])
                        if jobs.isEmpty { return done }
                        for job in jobs {
                            let id = job.id!
                            try await worker.update(Job.self, set: [.set(\.state, to: .done), .set(\.finishedAt, to: Date())], where: #Predicate { $0.id == id })
                            done.append(job.name)
                        }
                    }
                }
            }
            var all: [[String]] = []
            for try await names in group { all.append(names) }
            return all
        }
        let names = claimed.flatMap { $0 }
        #expect(names.count == jobCount, "every job claimed once: \(names.count) claims")
        #expect(Set(names).count == jobCount)
        #expect(claimed.filter { !$0.isEmpty }.count >= 2, "the workers shared the work: \(claimed.map(\.count))")
        #expect(try await producer.count(Job.self, where: #Predicate { $0.state == done && $0.attempts == 1 }) == jobCount)
        var retries = 0
        for worker in workers { retries += await worker.counters.retries }
        #expect(retries == 0, "claims met no conflict to retry")
        if engine == .postgres {
            workers.removeAll()
            let aborted = try Self.rollbacks(url, settlingFrom: rollbacksBefore) - rollbacksBefore
            #expect(Double(aborted) / Double(jobCount) < 0.05, "\(aborted) aborted transactions for \(jobCount) jobs")
        }
    }

    /// The server's count of rolled-back transactions in the database. Backends report their
    /// counts when they end or every second or so: after the workers closed, the count is read
    /// until it has stopped moving.
    static func rollbacks(_ url: String, settlingFrom start: Int? = nil) throws -> Int {
        let connection = try PostgresConnection(url)
        func read() throws -> Int {
            guard case .integer(let count)? = try connection.query("SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()").first?.first else { return 0 }
            return Int(count)
        }
        guard start != nil else { return try read() }
        var last = try read()
        for _ in 0..<8 {
            usleep(500_000)
            let now = try read()
            if now == last { break }
            last = now
        }
        return last
    }

    @Test(arguments: StoreEngine.available)
    func aRerunOfEnqueueKeepsFinishedJobsFinished(_ engine: StoreEngine) async throws {
        let store = try Self.dispatch(try engine.freshURL())
        let queue = try await store.insert(Queue(name: "reports"), onConflict: .ignore)
        let created = Date(timeIntervalSince1970: 1_700_000_000)
        let jobs = (0..<3).map { Job(name: "report-\($0)", payload: "v1", priority: 1, createdAt: created, queueID: queue.id!) }
        let first = try await store.insert(jobs, onConflict: .ignore)
        #expect(first.allSatisfy { $0.id != nil && $0.state == .queued })
        // Worker runs report-0 to the end.
        _ = try await store.claim(Job.self, where: #Predicate { $0.name == "report-0" }, limit: 1, set: [.set(\.state, to: .running)])
        try await store.update(Job.self, set: [.set(\.state, to: .done)], where: #Predicate { $0.name == "report-0" })
        let token = try await store.currentHistoryToken()

        // The rerun, a day later, with new payloads: insert-if-absent leaves every stored job
        // as it is and returns it as stored; a new job is inserted.
        let later = created.addingTimeInterval(86_400)
        let rerun = (0..<4).map { Job(name: "report-\($0)", payload: "v2", priority: 5, createdAt: later, queueID: queue.id!) }
        let kept = try await store.insert(rerun, onConflict: .ignore)
        #expect(kept.map(\.state) == [.done, .queued, .queued, .queued])
        #expect(Array(kept.prefix(3).map(\.id)) == first.map(\.id))
        #expect(kept.prefix(3).allSatisfy { $0.payload == "v1" && $0.createdAt == created })
        #expect(kept[3].payload == "v2" && kept[3].createdAt == StoredDate.rounded(later))
        #expect(try await store.count(Job.self) == 4)
        // Only the new job is in the history: nothing else changed.
        let history = try await store.history(after: token)
        #expect(history.flatMap(\.changes).map(\.kind) == [.insert])

        // Updating only some properties keeps the state and the creation date.
        let refreshed = try await store.insert(
            Job(name: "report-0", payload: "v3", priority: 9, createdAt: later, queueID: queue.id!), onConflict: .update(only: [\.payload, \.priority]))
        #expect(refreshed.id == first[0].id && refreshed.state == .done && refreshed.createdAt == created)
        #expect(refreshed.payload == "v3" && refreshed.priority == 9)
        let stored = try #require(try await store.model(Job.self, key: first[0].id!))
        #expect(stored == refreshed)
        let bulk = try await store.insert(
            [Job(name: "report-1", payload: "v4", queueID: queue.id!), Job(name: "report-9", payload: "new", queueID: queue.id!)], onConflict: .update(only: [\.payload]))
        #expect(bulk.map(\.payload) == ["v4", "new"] && bulk[0].priority == 1 && bulk[0].createdAt == created)

        // The default is unchanged: every column is written.
        let replaced = try await store.insert(Job(name: "report-2", payload: "all", createdAt: later, queueID: queue.id!))
        #expect(replaced.state == .queued && replaced.priority == 0 && replaced.createdAt == StoredDate.rounded(later))
        #expect(try await store.insert(Job(name: "report-2", payload: "again", queueID: queue.id!), onConflict: .update).payload == "again")

        // An unknown property is refused before anything is written.
        let unknown = OnConflict<Job>.update(only: [\Job.name.count])
        await #expect(throws: StoreError.self) { try await store.insert(Job(name: "report-3", queueID: queue.id!), onConflict: unknown) }
    }

    /// A transaction throws StoreError, with the body's own error carried by `.body`.
    @Test(arguments: StoreEngine.available)
    func transactionsThrowTypedErrors(_ engine: StoreEngine) async throws {
        struct Refused: Error, Equatable { let reason: String }
        let store = try Self.dispatch(try engine.freshURL())
        do {
            try await store.transaction { store in
                try store.insert(Queue(name: "temporary"))
                throw Refused(reason: "no")
            }
            Issue.record("the body's error came out")
        } catch {
            // `error` is a StoreError: no cast.
            #expect(error.bodyError as? Refused == Refused(reason: "no"))
            guard case .body(let cause) = error else { throw error }
            #expect(cause as? Refused == Refused(reason: "no"))
            #expect(error.databaseFailure == nil)
        }
        #expect(try await store.count(Queue.self) == 0, "rolled back")
        do {
            _ = try await store.read { store -> Int in throw Refused(reason: "read") }
            Issue.record("the read's error came out")
        } catch {
            #expect(error.bodyError as? Refused == Refused(reason: "read"))
        }
        // A StoreError from inside is not wrapped.
        do {
            try await store.transaction { store in _ = try store.fetch(Job.self, where: #Predicate { $0.name.count > 2 }) }
        } catch {
            guard case .unsupportedPredicate = error else { throw error }
        }
    }

    /// Conflicting serializable transactions on PostgreSQL are retried, counted and reported;
    /// when the conflicts outlast the busy timeout the error says the retries ran out.
    @Test func retriesAreCountedReportedAndSayWhenTheyRunOut() async throws {
        guard PostgresServer.available else { return print("◇ \(PostgresServer.skipReason)") }
        let url = try StoreEngine.postgres.freshURL()
        let events = EventLog()
        let store = try Store.open(
            url: url, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations,
            configuration: .init(busyTimeout: .milliseconds(600), events: { events.append($0) }))
        let queue = try await store.insert(Queue(name: "q"))
        let queueID = queue.id!
        // Another session holds the row's lock: each try of the transaction gives up its lock
        // wait after 100 ms (55P03), a refusal that passes, so the store tries again.
        let holder = try PostgresConnection(url)
        try holder.execute("BEGIN; UPDATE queue SET paused = true WHERE id = \(queueID);")
        do {
            try await store.transaction { store in
                do { try store.database.execute("SET LOCAL lock_timeout = '100ms'") } catch let failure as DatabaseFailure { throw StoreError.database(failure) }
                try store.update(Queue.self, set: \.paused, to: false, where: #Predicate { $0.id == queueID })
            }
            Issue.record("the update passed a held lock")
        } catch {
            guard case .retriesExhausted(let attempts, let last) = error else { throw error }
            #expect(attempts >= 2, "\(error)")
            // Each try waits out its 100 ms lock timeout, and the busy timeout (0.6 s) is
            // checked after each: at most 7 tries, however loaded the machine, not for ever.
            #expect(attempts <= 7, "\(error)")
            #expect(last.code == "55P03" && error.databaseFailure == .busy)
            #expect(error.description.contains("gave up after \(attempts) attempts"))
            let counted = await store.counters
            #expect(counted.retries == attempts - 1 && counted.retriesExhausted == 1)
            #expect(events.kinds.filter { $0 == .retry }.count == attempts - 1)
            #expect(events.kinds.last == .retriesExhausted)
            #expect(events.all.first?.failure?.code == "55P03" && events.all.first?.operation == "transaction")
        }
        try holder.execute("ROLLBACK")
        try await store.transaction { store in try store.update(Queue.self, set: \.paused, to: false, where: #Predicate { $0.id == queueID }) }
    }

    /// `changes(after: nil)` starts from now: what was committed before is not delivered, what
    /// is committed after is. A token replays from that point.
    @Test(arguments: StoreEngine.available)
    func changesAfterNilStartsFromNow(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let store = try Self.dispatch(url)
        try await store.insert(Queue(name: "before"))
        let fromNow = try await store.changes(after: nil)
        let fromStart = try await store.changes(after: HistoryToken(0))
        try await store.insert(Queue(name: "after"))
        var iterator = fromNow.makeAsyncIterator()
        let next = try #require(try await iterator.next())
        #expect(try next.changes.map { try $0.value(\Queue.name) } == ["after"])
        var replay = fromStart.makeAsyncIterator()
        let first = try #require(try await replay.next()), second = try #require(try await replay.next())
        #expect(try [first, second].flatMap(\.changes).map { try $0.value(\Queue.name) } == ["before", "after"])
    }
}

/// Events a store reported, from any thread.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [StoreEvent] = []

    func append(_ event: StoreEvent) {
        lock.lock()
        defer { lock.unlock() }
        events.append(event)
    }

    var all: [StoreEvent] {
        lock.lock()
        defer { lock.unlock() }
        return events
    }

    var kinds: [StoreEvent.Kind] { all.map(\.kind) }
}
