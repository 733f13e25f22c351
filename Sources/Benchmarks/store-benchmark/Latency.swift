import CSQLite
import ExampleModels
import Foundation
import PersistentStoreCore
import PersistentStorePostgres
import PersistentStoreSQLite
import PostgresKit
import SQLiteKit

#if canImport(Glibc)
import Glibc
#endif

/// Cross-process change latency: from a commit in one process to another process noticing it.
enum Latency {
    /// Commits `count` items, one transaction each, about 20 ms apart (so each is noticed on its
    /// own), then exits.
    static func write(count: Int, path: String) async throws {
        if path.hasPrefix("postgres") {
            // PostgreSQL: the Flights schema, which has PostgreSQL migrations.
            let store = try Store(url: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: .init(author: "writer"))
            for index in 0..<count {
                try await store.insert(Airport(icao: "X\(index)", name: "Airport \(index)"))
                try await _Concurrency.Task.sleep(for: .milliseconds(15 + index % 11))
            }
            return
        }
        let store = try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(author: "writer", keys: EncryptionAndSearch.keys))
        for index in 0..<count {
            try await store.insert(TodoItem(taskName: "item \(index)"))
            try await _Concurrency.Task.sleep(for: .milliseconds(15 + index % 11))
        }
    }

    static func measure(mode: String, count: Int, folder: String) async throws -> [Int] {
        let path = folder + "/latency-\(mode).sqlite"
        // The file and its tables exist before anyone watches.
        let store = try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: EncryptionAndSearch.keys))
        switch mode {
        case "store":
            let changes = try await store.changes()
            let writer = try spawnWriter(count: count, path: path)
            var latencies: [Int] = []
            for try await transaction in changes {
                latencies.append(Int(Date().timeIntervalSince(transaction.date) * 1_000_000))
                if latencies.count == count { break }
            }
            waitpid(writer, nil, 0)
            return latencies
        case "poll":
            let raw = try SQLiteConnection(path: path)
            var version = try raw.dataVersion()
            var seen = try await store.currentHistoryToken().value
            let writer = try spawnWriter(count: count, path: path)
            var latencies: [Int] = []
            while latencies.count < count {
                let now = try raw.dataVersion()
                if now != version {
                    version = now
                    let noticed = Date()
                    for row in try raw.query("SELECT token, committed_at FROM schemagen_history WHERE token > ? ORDER BY token", [.integer(seen)]) {
                        guard case .integer(let token) = row[0], case .real(let committed) = row[1] else { continue }
                        seen = token
                        latencies.append(Int((noticed.timeIntervalSince1970 - committed) * 1_000_000))
                    }
                }
                usleep(1000)
            }
            waitpid(writer, nil, 0)
            return latencies
        default:
            throw CancellationError()
        }
    }

    /// The same on PostgreSQL (`folder` is the database's URL): the store hears commits by
    /// LISTEN/NOTIFY; the baseline polls the history table every millisecond.
    static func measurePostgres(mode: String, count: Int, url: String) async throws -> [Int] {
        let store = try Store(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
        switch mode {
        case "store-postgres":
            let changes = try await store.changes()
            let writer = try spawnWriter(count: count, path: url)
            var latencies: [Int] = []
            for try await transaction in changes {
                latencies.append(Int(Date().timeIntervalSince(transaction.date) * 1_000_000))
                if latencies.count == count { break }
            }
            waitpid(writer, nil, 0)
            return latencies
        case "poll-postgres":
            let raw = try PostgresConnection(url)
            var seen = try await store.currentHistoryToken().value
            let writer = try spawnWriter(count: count, path: url)
            var latencies: [Int] = []
            while latencies.count < count {
                let rows = try raw.query("SELECT token, committed_at FROM schemagen_history WHERE token > $1 ORDER BY token", [.integer(seen)])
                let noticed = Date()
                for row in rows {
                    guard case .integer(let token) = row[0], case .real(let committed) = row[1] else { continue }
                    seen = token
                    latencies.append(Int((noticed.timeIntervalSince1970 - committed) * 1_000_000))
                }
                usleep(1000)
            }
            waitpid(writer, nil, 0)
            return latencies
        default:
            throw CancellationError()
        }
    }

    /// This executable again, as the writer.
    static func spawnWriter(count: Int, path: String) throws -> pid_t {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let arguments = [executable, "latency-writer", String(count), path]
        var pid: pid_t = 0
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let status = posix_spawn(&pid, executable, nil, nil, &argv, environ)
        guard status == 0 else { throw CancellationError() }
        return pid
    }
}
