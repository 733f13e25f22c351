import ExampleModels
import Foundation
import PersistentStorePostgres

/// `failover-writers WRITERS URL LOG STOP`: writers on a cluster's multi-host URL, each write a
/// transaction that enqueues a job and counts it on a counter job (Dispatch), until the file
/// STOP appears. Each acknowledged write goes to LOG as `name seconds` (Unix time), for
/// `bench/run store-failover` to find the pause after each leader kill, and to check that
/// every acknowledged write is in the database once. Any error a writer sees ends the run.
enum FailoverWriters {
    static func run(writers: Int, url: String, log: String, stop: String) async throws {
        let settings = PostgresSettings(failoverTimeout: .seconds(180))
        let pool = try StorePool(
            url: url, size: writers, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations,
            configuration: .init(author: "failover-bench", postgres: settings))
        let queueID = try await pool.withStore { store -> Int64 in
            let queue = try await store.insert(Queue(name: "failover"))
            try await store.insert(Job(name: "counter", queueID: queue.id!))
            return queue.id!
        }
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let lines = LogLines(handle)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var written = 0
                    while !FileManager.default.fileExists(atPath: stop) {
                        let name = "w\(writer)-\(written)"
                        try await pool.transaction { store in
                            try store.insert(Job(name: name, queueID: queueID))
                            _ = try store.update(Job.self, set: [.increment(\.attempts)], where: #Predicate { $0.name == "counter" })
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
