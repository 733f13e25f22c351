import ExampleModels
import Foundation
import PersistentStorePostgres
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

/// A store waits on its server without holding a thread of the executor it was called from:
/// more stores than that executor has threads all have a call in flight at once. On Swift's
/// cooperative pool (one thread per core), or on the `.blocking` threads these tests run on
/// (as many), a store without an executor of its own would have no more.
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
        DispatchQueue.global().async {
            watched.watch(until: count)
            done.signal()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in stores {
                group.addTask { try await store.read { store in _ = try store.query("SELECT pg_advisory_lock_shared(4242), pg_advisory_unlock_shared(4242)") } }
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
