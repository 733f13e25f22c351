import ExampleModels
import Foundation
import PersistentStorePostgres
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

/// A store waits on its server without holding a thread of the executor it was called from
/// (Swift's cooperative pool, one thread per core, in an app): calls started from one thread
/// all get in flight at once. A store without an executor of its own would run its call on
/// that thread and hold it until the server answered.
@Suite(.blocking, .serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct StoreExecutorTests {
    @Test func storesWaitingOnTheServerDoNotHoldTheirCallersThreads() async throws {
        let url = try #require(PostgresServer.shared).createDatabase()
        let count = 2 * ProcessInfo.processInfo.activeProcessorCount + 2
        let stores = try (0..<count).map { _ in try StoreEngine.postgres.flights(at: url) }
        // The test holds a lock each store's call waits for, on the server.
        let holder = try PostgresConnection(url)
        _ = try holder.query("SELECT pg_advisory_lock(4242)")
        // Waiting calls, as the server counts them, watched from a thread of its own, which
        // lets the calls go in any case: were the threads held, the count would stop at their
        // number, and nothing would hang.
        let watched = WatchedWaits(holder: holder, watcher: try PostgresConnection(url))
        let done = DispatchSemaphore(value: 0)
        let watcher = Thread {
            watched.watch(until: count)
            done.signal()
        }
        watcher.start()
        // The calls start on one thread of their own, which the rest of the suite cannot hold
        // up: a store that kept its caller's thread while waiting would leave one call in flight.
        let caller = OneThreadExecutor()
        defer { caller.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in stores {
                group.addTask(executorPreference: caller) {
                    try await store.read { store in _ = try store.query("SELECT pg_advisory_lock_shared(4242), pg_advisory_unlock_shared(4242)") }
                }
            }
            try await group.waitForAll()
        }
        done.wait()
        #expect(watched.waiting == Int64(count), "\(watched.waiting) of \(count) stores had their call in flight")
    }
}

/// The watcher of `storesWaitingOnTheServerDoNotHoldTheirCallersThreads`, on a thread of its own.
private final class WatchedWaits: @unchecked Sendable {
    let holder: PostgresConnection
    let watcher: PostgresConnection
    private(set) var waiting: Int64 = 0

    init(holder: PostgresConnection, watcher: PostgresConnection) {
        self.holder = holder
        self.watcher = watcher
    }

    func watch(until count: Int) {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, waiting < Int64(count) {
            if case .integer(let found)? = try? watcher.query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = 4242").first?.first {
                waiting = found
            }
            usleep(20_000)
        }
        _ = try? holder.query("SELECT pg_advisory_unlock(4242)")
    }
}

/// A task executor of one thread of its own, stopped by `stop()`.
private final class OneThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    init() {
        Thread { [self] in work() }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty, !stopped { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
