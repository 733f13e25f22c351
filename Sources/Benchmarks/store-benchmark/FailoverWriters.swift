import ExampleModels
import Foundation
import PersistentStorePostgres

/// `failover-writers WRITERS URL LOG STOP`: writers on a cluster's multi-host URL, each write a
/// transaction that enqueues a job and counts it on the writer's counter job (Dispatch), until the file
/// STOP appears. Each acknowledged write goes to LOG as `name seconds` (Unix time), for
/// `bench/run store-failover` to find the pause after each leader kill, and to check that
/// every acknowledged write is in the database once. Any error a writer sees ends the run.
enum FailoverWriters {
    static func run(writers: Int, url: String, log: String, stop: String) async throws {
        let settings = PostgresSettings(failoverTimeout: .seconds(180))
        // Every event the stores report, beside the log: what led to an error, when one comes.
        _ = FileManager.default.createFile(atPath: log + ".events", contents: nil)
        let events = LogLines(try FileHandle(forWritingTo: URL(fileURLWithPath: log + ".events")))
        let pool = try StorePool(
            url: url, size: writers, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations,
            // Serializable transactions that conflict (SSI's page-level predicate locks) run
            // again within the busy timeout; commits slow down while the cluster fails over,
            // so the bench allows as long as for the failover itself.
            configuration: .init(busyTimeout: .seconds(180), author: "failover-bench", postgres: settings, events: { event in events.append("\(Date().timeIntervalSince1970) \(event)\n") }))
        // A counter per writer: one counter for all would make the writers' transactions
        // conflict with each other (serialization failures), which is not what this measures.
        let (queueID, counters) = try await pool.withStore { store -> (Int64, [Int64]) in
            let queue = try await store.insert(Queue(name: "failover"))
            guard let queueID = queue.id else { throw CocoaError(.coderInvalidValue) }
            var counters: [Int64] = []
            for writer in 0..<writers {
                guard let id = try await store.insert(Job(name: "counter-\(writer)", queueID: queueID)).id else { throw CocoaError(.coderInvalidValue) }
                counters.append(id)
            }
            return (queueID, counters)
        }
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let lines = LogLines(handle)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var written = 0
                    while !FileManager.default.fileExists(atPath: stop) {
                        let name = "w\(writer)-\(written)"
                        let counter: Int64? = counters[writer]
                        try await pool.transaction { store in
                            try store.insert(Job(name: name, queueID: queueID))
                            _ = try store.update(Job.self, set: [.increment(\.attempts)], where: #Predicate { $0.id == counter })
                        }
                        lines.append("\(name) \(Date().timeIntervalSince1970)\n")
                        written += 1
                    }
                }
            }
            try await group.waitForAll()
        }
        try handle.close()
    }
}

/// Lines appended from several tasks.
final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private let handle: FileHandle

    init(_ handle: FileHandle) { self.handle = handle }

    func append(_ line: String) { lock.withLock { handle.write(Data(line.utf8)) } }
}
