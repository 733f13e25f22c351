// `dispatcher URL [WORKER]`: the smallest server on PostgreSQL. It enqueues five jobs (again:
// nothing changes, enqueueing is idempotent), claims up to three queued ones for WORKER with
// `FOR UPDATE SKIP LOCKED`, and prints them. It links the store's PostgreSQL adapter alone: no
// SQLite (LinkageTests checks it with `ldd` and `nm`).
import ExampleModels
import Foundation
import PersistentStorePostgres

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: dispatcher POSTGRES-URL [WORKER]\n".utf8))
    exit(2)
}
let worker = arguments.count > 2 ? arguments[2] : "dispatcher"
do {
    let pool = try StorePool(url: arguments[1], size: 2, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations)
    let queue = try await pool.withStore { try await $0.insert(Queue(name: "mail"), onConflict: .ignore) }
    guard let queueID = queue.id else { throw StoreError.notSupported("the queue came back without its key") }
    _ = try await pool.withStore { try await $0.insert((0..<5).map { Job(name: "job-\($0)", queueID: queueID) }, onConflict: .ignore) }
    let queued = JobState.queued
    let claimed = try await pool.withStore { store in
        try await store.claim(
            Job.self, where: #Predicate { $0.state == queued }, sortBy: [SortDescriptor(\.name)], limit: 3,
            set: [.set(\.state, to: .running), .set(\.lockedBy, to: worker)])
    }
    let left = try await pool.withStore { try await $0.count(Job.self, where: #Predicate { $0.state == queued }) }
    print("claimed: \(claimed.map(\.name)), queued: \(left)")
} catch {
    // StoreError's description masks the URL's password.
    FileHandle.standardError.write(Data("dispatcher: error: \(error)\n".utf8))
    exit(1)
}
