import Dispatch

/// Where a store's calls run: a serial queue of its own, off Swift's cooperative pool.
///
/// A store's calls wait on its database (a server's round trip, SQLite's busy wait) without
/// giving their thread back. On the cooperative pool, which has one thread per core, a few
/// stores waiting on a server would hold every thread: other tasks of the app would stall,
/// and a `StorePool` of eight would have no more calls in flight than there are cores. A
/// serial dispatch queue gets a thread of its own while it waits.
final class StoreExecutor: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
