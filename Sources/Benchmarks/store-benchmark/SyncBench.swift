import ExampleModels
import Foundation
import Gzip
import HTTPServer
import PersistentStoreCore
import PersistentStoreSQLite
import SchemaMetadata
import SyncClient
import SyncCore
import SyncEndpoint
import SyncServer
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `store-benchmark sync-prepare|sync-initial|sync-push|sync-devices ...`: sync of the to-do
/// example's items over HTTP on loopback, a server and devices each with its own SQLite file.
/// - `sync-prepare ROWS DIR`: DIR/server.sqlite with ROWS items, and DIR/empty.sqlite, a device
///   file with the schema and nothing in it (the `sqlite3` baseline imports into a copy).
/// - `sync-initial DIR`: a new device's first sync of DIR/server.sqlite (a copy); prints its
///   seconds, the records and the bytes on the wire.
/// - `sync-push ROWS CHANGES DIR`: a device in step with a server of ROWS items changes CHANGES
///   of them; prints the seconds of the sync that pushes them.
/// - `sync-devices DEVICES ROWS ROUNDS DIR`: DEVICES devices in step with a server of ROWS items;
///   each round the server app changes ten items and every device syncs at once. Prints each
///   pull's milliseconds, then the bytes and records the pulls carried.
enum SyncBench {
    static let token = "bench-token"

    static func item(_ index: Int) -> TodoItem {
        TodoItem(
            id: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", index))!, taskName: "Task \(index): call about the invoice",
            startDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)), isCompleted: index % 3 == 0,
            dueDate: index % 2 == 0 ? Date(timeIntervalSince1970: 1_800_000_000 + Double(index)) : nil)
    }

    static func open(_ path: String) throws -> Store {
        try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations)
    }

    static func run(_ arguments: [String]) async throws -> Bool {
        // The schema encrypts notes: a key, though the benchmark writes none.
        setenv("SCHEMAGEN_KEYS", "bench=\(Data(repeating: 7, count: 32).base64EncodedString())", 1)
        switch (arguments.count, arguments.dropFirst().first) {
        case (4, "sync-prepare"):
            try await prepare(rows: Int(arguments[2])!, folder: arguments[3])
        case (3, "sync-initial"):
            let (seconds, records, bytes) = try await initial(folder: arguments[2])
            print(String(format: "initial %.4f records %d bytes %d", seconds, records, bytes))
        case (5, "sync-push"):
            print(String(format: "push %.4f", try await push(rows: Int(arguments[2])!, changes: Int(arguments[3])!, folder: arguments[4])))
        case (6, "sync-devices"):
            let (latencies, bytes, records) = try await devices(count: Int(arguments[2])!, rows: Int(arguments[3])!, rounds: Int(arguments[4])!, folder: arguments[5])
            print(latencies.map { String(format: "%.3f", $0) }.joined(separator: " "))
            print("bytes \(bytes) records \(records)")
        default:
            return false
        }
        return true
    }

    static func fill(_ store: Store, rows: Int) async throws {
        for start in stride(from: 0, to: rows, by: 1_000) { try await store.insert((start..<min(start + 1_000, rows)).map(item)) }
    }

    static func prepare(rows: Int, folder: String) async throws {
        try await fill(try open(folder + "/server.sqlite"), rows: rows)
        _ = try open(folder + "/empty.sqlite")
    }

    /// An endpoint serving `store` on a free port, counting the bytes of its answers.
    final class Serving: Sendable {
        let http: HTTPServer
        let base: URL
        let sentBytes: @Sendable () -> Int

        init(_ store: Store) async throws {
            let server = try await SyncServer(store: store, schema: TodoSchema.descriptor)
            let endpoint = SyncEndpoint(server: server) { $0.header("Authorization") == "Bearer \(SyncBench.token)" ? "bench" : nil }
            let sent = Mutex(0)
            http = try HTTPServer(.init(limits: SyncEndpoint.limits, maxConnections: 256)) { request in
                let response = endpoint.respond(to: request)
                if case .bytes(let body) = response.body { sent.withLock { $0 += body.count } }
                return response
            }
            base = URL(string: "http://127.0.0.1:\(http.port)/sync")!
            self.sentBytes = { sent.withLock { $0 } }
        }

        func client(_ store: Store, device: String, transport: (any SyncTransport)? = nil) async throws -> SyncClient {
            let http = HTTPSyncTransport(base: base) { ["Authorization": "Bearer \(SyncBench.token)"] }
            return try await SyncClient(store: store, schema: TodoSchema.descriptor, device: device, transport: transport ?? http)
        }
    }

    static func initial(folder: String) async throws -> (Double, Int, Int) {
        let serving = try await Serving(try open(folder + "/server.sqlite"))
        defer { _ = serving.http.stop() }
        let device = folder + "/device-\(UUID().uuidString).sqlite"
        try FileManager.default.copyItem(atPath: folder + "/empty.sqlite", toPath: device)
        let store = try open(device)
        // A device the server has not seen: each run is a new one.
        let client = try await serving.client(store, device: "new-\(UUID().uuidString.prefix(8).lowercased())")
        let before = serving.sentBytes()
        let start = DispatchTime.now().uptimeNanoseconds
        try await client.sync()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return (seconds, try await store.count(TodoItem.self), serving.sentBytes() - before)
    }

    static func push(rows: Int, changes: Int, folder: String) async throws -> Double {
        let server = try open(folder + "/push-server.sqlite")
        try await fill(server, rows: rows)
        let serving = try await Serving(server)
        defer { _ = serving.http.stop() }
        let store = try open(folder + "/push-device.sqlite")
        let client = try await serving.client(store, device: "pusher")
        try await client.sync()
        var changed = try await store.fetch(TodoItem.self, limit: changes)
        for index in changed.indices {
            changed[index].isCompleted.toggle()
            changed[index].taskName += " (edited)"
        }
        try await store.insert(changed)
        let start = DispatchTime.now().uptimeNanoseconds
        try await client.sync()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func devices(count: Int, rows: Int, rounds: Int, folder: String) async throws -> ([Double], Int, Int) {
        let server = try open(folder + "/fleet-server.sqlite")
        try await fill(server, rows: rows)
        let serving = try await Serving(server)
        defer { _ = serving.http.stop() }
        var clients: [(SyncClient, CountingTransport)] = []
        for number in 0..<count {
            let counting = CountingTransport(HTTPSyncTransport(base: serving.base) { ["Authorization": "Bearer \(SyncBench.token)"] })
            let client = try await serving.client(try open(folder + "/fleet-\(number).sqlite"), device: "device-\(number)", transport: counting)
            try await client.sync()
            counting.reset()
            clients.append((client, counting))
        }
        for round in 0..<rounds {
            var edited = try await server.fetch(TodoItem.self, limit: 10, offset: round * 10 % max(1, rows - 10))
            for index in edited.indices { edited[index].taskName = "Round \(round): " + edited[index].taskName }
            try await server.insert(edited)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (client, _) in clients { group.addTask { try await client.sync() } }
                try await group.waitForAll()
            }
        }
        let latencies = clients.flatMap { $0.1.pullMilliseconds }
        return (latencies, clients.reduce(0) { $0 + $1.1.bytes }, clients.reduce(0) { $0 + $1.1.records })
    }
}

/// A transport that times each pull and counts the records and answer bytes it carried.
final class CountingTransport: SyncTransport, Sendable {
    let inner: any SyncTransport
    private let state = Mutex((pulls: [Double](), records: 0, bytes: 0))

    init(_ inner: any SyncTransport) { self.inner = inner }

    var pullMilliseconds: [Double] { state.withLock { $0.pulls } }
    var records: Int { state.withLock { $0.records } }
    var bytes: Int { state.withLock { $0.bytes } }
    func reset() { state.withLock { $0 = ([], 0, 0) } }

    func push(_ push: SyncPush) async throws -> SyncPushAnswer { try await inner.push(push) }

    func pull(_ pull: SyncPull) async throws -> SyncPullAnswer {
        let start = DispatchTime.now().uptimeNanoseconds
        let answer = try await inner.pull(pull)
        let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        // The answer's size as sent, compressed as the endpoint compresses it.
        let sent = (try? SyncJSON.encode(answer)).map { (try? Gzip.compress($0))?.count ?? $0.count } ?? 0
        state.withLock { state in
            state.pulls.append(milliseconds)
            state.records += answer.records.count
            state.bytes += sent
        }
        return answer
    }
}
