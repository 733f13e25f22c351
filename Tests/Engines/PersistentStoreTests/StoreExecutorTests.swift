import ExampleModels
import Foundation
import PersistentStorePostgres
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

/// A store waits on its server without holding one of Swift's cooperative threads (one per
/// core): more stores than cores all have a call in flight at once, and other tasks run
/// meanwhile.
@Suite(.serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct StoreExecutorTests {
    @Test func storesWaitingOnTheServerDoNotHoldTheCooperativePool() async throws {
        let url = try #require(PostgresServer.shared).createDatabase()
        let count = 2 * ProcessInfo.processInfo.activeProcessorCount + 2
        let stores = try (0..<count).map { _ in try StoreEngine.postgres.flights(at: url) }
        // The test holds a lock each store's call waits for, on the server.
        let holder = try PostgresConnection(url)
        _ = try holder.query("SELECT pg_advisory_lock(4242)")
        let calls = _Concurrency.Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for store in stores {
                    group.addTask { try await store.read { store in _ = try store.query("SELECT pg_advisory_lock_shared(4242), pg_advisory_unlock_shared(4242)") } }
                }
                try await group.waitForAll()
            }
        }
        // Waiting calls, as the server counts them, watched from a thread outside the
        // cooperative pool, which lets the calls go in any case: were the pool held, the
        // count would stop at its threads, and nothing would hang.
        let watched = WatchedWaits(holder: holder, watcher: try PostgresConnection(url))
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            watched.watch(until: count)
            done.signal()
        }
        try await calls.value
        done.wait()
        let waiting = watched.waiting
        #expect(watched.taskRanMeanwhile, "a task of the cooperative pool ran while every store waited")
        #expect(waiting == Int64(count), "\(waiting) of \(count) stores had their call in flight")
    }
}

/// The watcher of `storesWaitingOnTheServerDoNotHoldTheCooperativePool`, on a thread of its own.
private final class WatchedWaits: @unchecked Sendable {
    let holder: PostgresConnection
    let watcher: PostgresConnection
    private(set) var waiting: Int64 = 0
    private(set) var taskRanMeanwhile = false

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
        let ran = DispatchSemaphore(value: 0)
        _Concurrency.Task.detached { ran.signal() }
        taskRanMeanwhile = ran.wait(timeout: .now() + 10) == .success
        _ = try? holder.query("SELECT pg_advisory_unlock(4242)")
    }
}
