import CSQLite
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
        case (3, "sync-floor"):
            print(String(format: "floor %.4f", try SyncFloor.run(folder: arguments[2])))
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

/// `store-benchmark sync-floor DIR`: what any first sync that keeps a state per record must
/// write on the device, straight through the SQLite C API with no network, no JSON parsing and
/// no merging: the server's rows read from DIR/server.sqlite, then written into a copy of
/// DIR/empty.sqlite in transactions of 500 (a page), each with its record's state (values and
/// clocks as JSON, as long as the client's) and one history row a page. Prints its seconds.
enum SyncFloor {
    static let columns = ["id", "task_name", "start_date", "is_completed", "due_date", "notes", "priority"]

    static func run(folder: String) throws -> Double {
        var server: OpaquePointer?
        sqlite3_open_v2(folder + "/server.sqlite", &server, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        defer { sqlite3_close(server) }
        let device = folder + "/floor-\(UUID().uuidString).sqlite"
        try FileManager.default.copyItem(atPath: folder + "/empty.sqlite", toPath: device)
        defer { try? FileManager.default.removeItem(atPath: device) }
        var db: OpaquePointer?
        sqlite3_open_v2(device, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        defer { sqlite3_close(db) }
        sqlite3_exec(db, "PRAGMA journal_mode = WAL; " + SQLiteSettings.applicationStore.pragmas(inMemory: false), nil, nil, nil)
        sqlite3_exec(
            db,
            "CREATE TABLE IF NOT EXISTS schemagen_sync_records (schema TEXT NOT NULL, schema_version INTEGER NOT NULL, entity TEXT NOT NULL, record_key TEXT NOT NULL, state TEXT NOT NULL, updated_at REAL, PRIMARY KEY (schema, schema_version, entity, record_key))",
            nil, nil, nil)
        let start = DispatchTime.now().uptimeNanoseconds
        var read: OpaquePointer?, insert: OpaquePointer?, state: OpaquePointer?, history: OpaquePointer?
        sqlite3_prepare_v2(server, "SELECT \(columns.joined(separator: ", ")) FROM todo_item ORDER BY id", -1, &read, nil)
        sqlite3_prepare_v2(db, "INSERT INTO todo_item (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))", -1, &insert, nil)
        sqlite3_prepare_v2(db, "INSERT INTO schemagen_sync_records VALUES ('Todo', 4, 'TodoItem', ?, ?, ?)", -1, &state, nil)
        sqlite3_prepare_v2(db, "INSERT INTO schemagen_history (schema, author, committed_at, entities, changes) VALUES ('Todo', 'sync', ?, 'TodoItem', ?)", -1, &history, nil)
        defer { for statement in [read, insert, state, history] { sqlite3_finalize(statement) } }
        let clock = "001796069700125-00000000-server"
        var inPage = 0
        var changes = "["
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        while sqlite3_step(read) == SQLITE_ROW {
            var values = "{", clocks = "{"
            for index in 0..<columns.count {
                let type = sqlite3_column_type(read, Int32(index))
                switch type {
                case SQLITE_INTEGER: sqlite3_bind_int64(insert, Int32(index + 1), sqlite3_column_int64(read, Int32(index)))
                case SQLITE_TEXT: sqlite3_bind_text(insert, Int32(index + 1), sqlite3_column_text(read, Int32(index)), -1, StoreBenchmark.transient)
                case SQLITE_BLOB:
                    sqlite3_bind_blob(insert, Int32(index + 1), sqlite3_column_blob(read, Int32(index)), sqlite3_column_bytes(read, Int32(index)), StoreBenchmark.transient)
                default: sqlite3_bind_null(insert, Int32(index + 1))
                }
                guard index > 0 else { continue }
                let text =
                    type == SQLITE_NULL
                    ? "null" : type == SQLITE_INTEGER ? "{\"integer\":\(sqlite3_column_int64(read, Int32(index)))}" : "{\"text\":\"\(String(cString: sqlite3_column_text(read, Int32(index))))\"}"
                values += (index > 1 ? "," : "") + "\"\(columns[index])\":" + text
                clocks += (index > 1 ? "," : "") + "\"\(columns[index])\":\"\(clock)\""
            }
            let key = String(cString: sqlite3_column_text(read, 0))
            sqlite3_step(insert)
            sqlite3_reset(insert)
            StoreBenchmark.bindText(state, 1, key)
            StoreBenchmark.bindText(state, 2, "{\"clocks\":\(clocks)},\"values\":\(values)}}")
            sqlite3_bind_double(state, 3, Date().timeIntervalSince1970)
            sqlite3_step(state)
            sqlite3_reset(state)
            changes += (inPage > 0 ? "," : "") + "{\"entity\":\"TodoItem\",\"kind\":\"insert\",\"key\":[\"\(key)\"],\"values\":\(values)}}"
            inPage += 1
            if inPage == 500 {
                finishPage(db, history, &changes)
                inPage = 0
            }
        }
        if inPage > 0 { finishPage(db, history, &changes) }
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        // Written whole, or the figure means nothing.
        var count: OpaquePointer?
        sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM todo_item) + (SELECT count(*) FROM schemagen_sync_records)", -1, &count, nil)
        defer { sqlite3_finalize(count) }
        guard sqlite3_step(count) == SQLITE_ROW, sqlite3_column_int64(count, 0) == 2 * rows(server) else { throw SyncFloorError.incomplete }
        return seconds
    }

    struct SyncFloorError: Error { static let incomplete = SyncFloorError() }

    static func rows(_ server: OpaquePointer?) -> Int64 {
        var count: OpaquePointer?
        sqlite3_prepare_v2(server, "SELECT count(*) FROM todo_item", -1, &count, nil)
        defer { sqlite3_finalize(count) }
        return sqlite3_step(count) == SQLITE_ROW ? sqlite3_column_int64(count, 0) : -1
    }

    /// The page's history row, and its commit; the next page's transaction begins.
    static func finishPage(_ db: OpaquePointer?, _ history: OpaquePointer?, _ changes: inout String) {
        sqlite3_bind_double(history, 1, Date().timeIntervalSince1970)
        StoreBenchmark.bindText(history, 2, changes + "]")
        sqlite3_step(history)
        sqlite3_reset(history)
        sqlite3_exec(db, "COMMIT; BEGIN", nil, nil, nil)
        changes = "["
    }
}
