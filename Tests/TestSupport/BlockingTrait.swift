import Foundation
import Testing

/// Runs a suite's tests on threads of their own instead of Swift's cooperative pool.
///
/// Swift Testing runs every test, synchronous ones too, on the cooperative pool, which has one
/// thread per core. A test that waits for a child process or a server holds its thread for as
/// long: on two cores, two such tests stop every async test beside them (a clean-clone run held
/// the pool for 166 s, and an observation test's stream consumer never got a thread in its two
/// minutes). Tests of a suite marked `.blocking` run on `BlockingThreads` instead, one thread
/// per core, so blocking tests still run about as many at once as before while the pool stays
/// free for async work.
public struct BlockingTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(BlockingThreads.shared) { try await function() }
    }
}

extension Trait where Self == BlockingTrait {
    /// The suite's tests block on processes, servers or sleeps: they run on threads of their own.
    public static var blocking: Self { BlockingTrait() }
}

/// A task executor with a fixed set of threads, taking jobs first come first served: a job
/// that blocks one of them holds up only the other blocking tests.
public final class BlockingThreads: TaskExecutor, @unchecked Sendable {
    public static let shared = BlockingThreads(width: max(2, ProcessInfo.processInfo.activeProcessorCount))

    /// Whether the calling thread is one of these.
    public static var isCurrent: Bool { Thread.current.threadDictionary[marker] != nil }
    private static let marker = "BlockingThreads"

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    init(width: Int) {
        for _ in 0..<width {
            let thread = Thread { [unowned self] in self.work() }
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        Thread.current.threadDictionary[Self.marker] = true
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
