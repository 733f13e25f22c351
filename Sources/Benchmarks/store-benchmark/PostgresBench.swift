import ExampleModels
import Foundation
import PersistentStorePostgres
import PostgresKit
import SchemaMetadata

/// The store on PostgreSQL against libpq driven by hand (PostgresKit's thin connection: the
/// same `PQexecParams` calls the store's adapter makes), with the same statements: an upsert
/// per row returning its key, in one transaction; then every row read back into models.
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
        let marks = columns.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
        let insertSQL =
            "INSERT INTO \"flights\" (\(list)) VALUES (\(marks)) ON CONFLICT (\"ident\") DO UPDATE SET "
            + columns.dropFirst().map { "\"\($0)\" = excluded.\"\($0)\"" }.joined(separator: ", ") + " RETURNING \"id\""
        func values(_ flight: Flight) -> [StoredValue] {
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
        func write(_ flights: [Flight]) throws -> [Int64] {
            var ids: [Int64] = []
            ids.reserveCapacity(flights.count)
            try connection.execute("BEGIN")
            for flight in flights {
                if case .integer(let id)? = try connection.query(insertSQL, values(flight)).first?.first { ids.append(id) }
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
}
