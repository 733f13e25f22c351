import ExampleModels
import Foundation
import PersistentStorePostgres
import PostgresKit
import SchemaMetadata

/// The store on PostgreSQL against libpq driven by hand (PostgresKit's thin connection), with
/// the same statements prepared the same way: 20,000 rows in one transaction, copied into a
/// staging table and upserted from it with their keys returned, as the store writes that many;
/// then every row read back into models. Also a bulk insert against plain COPY, and single-row
/// writes from concurrent clients.
enum PostgresBench {
    static func viaStore(url: String, _ first: consuming [Flight], _ second: consuming [Flight]) async throws -> (Double, Double, Double) {
        let store = try Store(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: .init(recordsHistory: false))
        var start = DispatchTime.now().uptimeNanoseconds
        let inserted = try await store.insert(consume first)
        let insert = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        start = DispatchTime.now().uptimeNanoseconds
        let upserted = try await store.insert(consume second)
        let upsert = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        start = DispatchTime.now().uptimeNanoseconds
        let all = try await store.fetch(Flight.self)
        let fetch = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard all.count == inserted.count + upserted.count / 2, inserted.allSatisfy({ $0.id != nil }) else { throw CancellationError() }
        return (insert, upsert, fetch)
    }

    static func raw(url: String, _ first: [Flight], _ second: [Flight]) throws -> (Double, Double, Double) {
        // The same tables, created by the same migrations.
        _ = try Store(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: .init(recordsHistory: false))
        let connection = try PostgresConnection(url)
        let columns = StoreBenchmark.columns
        let list = columns.map { "\"\($0)\"" }.joined(separator: ", ")
        let updates = columns.dropFirst().map { "\"\($0)\" = excluded.\"\($0)\"" }.joined(separator: ", ")
        connection.preparesStatements = true
        // As the store writes this many rows: COPY into a staging table of the transaction,
        // then one upsert from it returning each key with its ident.
        func write(_ flights: [Flight]) throws -> [Int64] {
            var ids: [Int64] = []
            ids.reserveCapacity(flights.count)
            try connection.execute("BEGIN")
            for start in stride(from: 0, to: flights.count, by: 10_000) {
                let chunk = flights[start..<min(start + 10_000, flights.count)]
                try connection.execute(
                    "CREATE TEMP TABLE IF NOT EXISTS stage ON COMMIT DROP AS SELECT \(list) FROM \"flights\" WITH NO DATA; TRUNCATE stage")
                _ = try connection.copy(into: "stage", columns: columns, rows: chunk.lazy.map(values))
                var keys: [String: Int64] = [:]
                for row in try connection.query(
                    "INSERT INTO \"flights\" (\(list)) SELECT \(list) FROM stage ON CONFLICT (\"ident\") DO UPDATE SET \(updates) RETURNING \"id\", \"ident\"")
                {
                    if case .integer(let id) = row[0], case .text(let ident) = row[1] { keys[ident] = id }
                }
                for flight in chunk { if let id = keys[flight.ident] { ids.append(id) } }
            }
            try connection.execute("COMMIT")
            return ids
        }
        var ids: [Int64] = []
        let insert = try StoreBenchmark.seconds { ids = try write(first) }
        let upsert = try StoreBenchmark.seconds { ids = try write(second) }
        var fetched: [Flight] = []
        let fetch = try StoreBenchmark.seconds {
            let rows = try connection.query("SELECT \"id\", \(list) FROM \"flights\" ORDER BY \"id\"")
            fetched.reserveCapacity(rows.count)
            for row in rows {
                func text(_ column: Int) -> String? { if case .text(let value) = row[column] { value } else { nil } }
                func date(_ column: Int) -> Date? { text(column).flatMap(StoredDate.date) }
                func int(_ column: Int) -> Int? { if case .integer(let value) = row[column] { Int(value) } else { nil } }
                func key(_ column: Int) -> Int64? { if case .integer(let value) = row[column] { value } else { nil } }
                var real: Double? = nil
                if case .real(let value) = row[8] { real = value }
                var flight = Flight(
                    ident: text(1) ?? "", actualOff: date(2), scheduledOff: date(3), estimatedOff: date(4), scheduledOn: date(5),
                    estimatedOn: date(6), actualOn: date(7), progressPercent: real, status: text(9) ?? "", routeDistance: int(10),
                    filedAirspeed: int(11), filedAltitude: int(12), aircraftType: text(13), originID: key(14), destinationID: key(15), airlineID: key(16))
                flight.id = key(0)
                fetched.append(flight)
            }
        }
        guard fetched.count == first.count + second.count / 2, !ids.isEmpty else { throw CancellationError() }
        return (insert, upsert, fetch)
    }

    /// A flight's values in the order of `StoreBenchmark.columns`.
    static func values(_ flight: Flight) -> [StoredValue] {
        func date(_ value: Date?) -> StoredValue { value.map { .text(StoredDate.text($0)) } ?? .null }
        func int(_ value: Int?) -> StoredValue { value.map { .integer(Int64($0)) } ?? .null }
        return [
            .text(flight.ident), date(flight.actualOff), date(flight.scheduledOff), date(flight.estimatedOff), date(flight.scheduledOn),
            date(flight.estimatedOn), date(flight.actualOn), flight.progressPercent.map(StoredValue.real) ?? .null, .text(flight.status),
            int(flight.routeDistance), int(flight.filedAirspeed), int(flight.filedAltitude), flight.aircraftType.map(StoredValue.text) ?? .null,
            flight.originID.map(StoredValue.integer) ?? .null, flight.destinationID.map(StoredValue.integer) ?? .null,
            flight.airlineID.map(StoredValue.integer) ?? .null,
        ]
    }

    static func migrated(_ url: String) throws -> Store {
        try Store(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: .init(recordsHistory: false))
    }

    /// Seconds for the store to insert `flights` in one call (history off, as COPY keeps none).
    static func bulkViaStore(url: String, _ flights: consuming [Flight]) async throws -> Double {
        let store = try migrated(url)
        let count = flights.count
        let start = DispatchTime.now().uptimeNanoseconds
        let inserted = try await store.insert(consume flights)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard inserted.count == count, try await store.count(Flight.self) == count else { throw CancellationError() }
        return seconds
    }

    /// Seconds for `COPY ... FROM STDIN` of the same rows, in one transaction.
    static func bulkViaCopy(url: String, _ flights: [Flight]) throws -> Double {
        _ = try migrated(url)
        let connection = try PostgresConnection(url)
        var copied = 0
        let seconds = try StoreBenchmark.seconds {
            try connection.execute("BEGIN")
            copied = try connection.copy(into: "flights", columns: StoreBenchmark.columns, rows: flights.lazy.map(values))
            try connection.execute("COMMIT")
        }
        guard copied == flights.count else { throw CancellationError() }
        return seconds
    }

    /// Seconds for `clients` clients to write `flights` between them, one row per call: a
    /// `StorePool` of that size, each client a task.
    static func clientsViaStore(url: String, clients: Int, _ flights: [Flight], failover: Bool = true, history: Bool = false) async throws -> Double {
        _ = try migrated(url)
        let settings = failover ? PostgresSettings() : PostgresSettings(failoverTimeout: .zero)
        let pool = try StorePool(
            url: url, size: clients, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: .init(recordsHistory: history, postgres: settings))
        let start = DispatchTime.now().uptimeNanoseconds
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                let share = Array(flights[(client * flights.count / clients)..<((client + 1) * flights.count / clients)])
                group.addTask {
                    for flight in share { try await pool.withStore { _ = try await $0.insert(flight) } }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard try await pool.withStore({ try await $0.count(Flight.self) }) == flights.count else { throw CancellationError() }
        return seconds
    }

    /// The same through `clients` libpq connections on threads of their own, each row one
    /// prepared INSERT ... RETURNING in autocommit, as a hand-written server would.
    static func clientsViaLibpq(url: String, clients: Int, _ flights: [Flight]) throws -> Double {
        _ = try migrated(url)
        let columns = StoreBenchmark.columns
        let sql =
            "INSERT INTO \"flights\" (\(columns.map { "\"\($0)\"" }.joined(separator: ", "))) VALUES (\(columns.indices.map { "$\($0 + 1)" }.joined(separator: ", "))) RETURNING \"id\""
        let connections = try (0..<clients).map { _ in try PostgresConnection(url) }
        for connection in connections { connection.preparesStatements = true }
        let failures = Failures()
        let shared = UncheckedConnections(connections)
        let seconds = StoreBenchmark.seconds {
            DispatchQueue.concurrentPerform(iterations: clients) { client in
                let connection = shared.connections[client]
                for index in (client * flights.count / clients)..<((client + 1) * flights.count / clients) {
                    do { _ = try connection.query(sql, values(flights[index])) } catch { failures.record() }
                }
            }
        }
        guard failures.count == 0, try connections[0].query("SELECT count(*) FROM flights") == [[.integer(Int64(flights.count))]] else { throw CancellationError() }
        return seconds
    }
}

/// Connections handed to threads, each used by one thread only.
private final class UncheckedConnections: @unchecked Sendable {
    let connections: [PostgresConnection]
    init(_ connections: [PostgresConnection]) { self.connections = connections }
}

private final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var failed = 0
    func record() { lock.withLock { failed += 1 } }
    var count: Int { lock.withLock { failed } }
}
