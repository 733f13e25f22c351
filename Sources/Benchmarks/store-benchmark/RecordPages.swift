import CSQLite
import ExampleModels
import Foundation
import PersistentStoreCore
import PersistentStoreSQLite
import SchemaMetadata

/// `store-benchmark records store|raw ROWS REPEATS DIR`: the studio's pages on a table of ROWS
/// flights, longest route first (an indexed column, 1% of it nil), fifty a page. Each of REPEATS
/// rounds times the first page and a page nine tenths of the way in, reached by its cursor
/// (keyset pagination), through
/// `Store.records`, or the same statements through the SQLite C API (prepared once, rows read).
/// Prints `first` and `deep` microseconds per round.
enum RecordPages {
    static func measure(_ mode: String, rows: Int, repeats: Int, folder: String) async throws -> [(first: Int, deep: Int)] {
        let path = folder + "/records.sqlite"
        let store = try Store(path: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: .init(recordsHistory: false))
        let batch = 50_000
        for start in stride(from: 0, to: rows, by: batch) {
            try await store.insert(
                (start..<min(rows, start + batch)).map { index in
                    var made = StoreBenchmark.flight(index)
                    made.routeDistance = index % 97 == 0 ? nil : (index &* 7919) % 1_000_003
                    return made
                })
        }
        let entity = FlightsSchema.descriptor.entity(named: "Flight")!
        let order = RecordOrder("route_distance", ascending: false)
        // The cursor nine tenths of the way in (among the distances; the nils come last).
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        defer { sqlite3_close(db) }
        var find: OpaquePointer?
        sqlite3_prepare_v2(db, "SELECT route_distance, id FROM flights ORDER BY route_distance DESC NULLS LAST, id DESC LIMIT 1 OFFSET \(rows * 9 / 10)", -1, &find, nil)
        guard sqlite3_step(find) == SQLITE_ROW else { throw CancellationError() }
        let deepCursor = RecordCursor(values: [
            sqlite3_column_type(find, 0) == SQLITE_NULL ? .null : .integer(sqlite3_column_int64(find, 0)), .integer(sqlite3_column_int64(find, 1)),
        ])
        sqlite3_finalize(find)
        var timings: [(Int, Int)] = []
        if mode == "store" {
            for _ in 0..<repeats {
                let first = try await time { _ = try await store.records(of: entity, orderedBy: order, limit: 50) }
                let deep = try await time { _ = try await store.records(of: entity, orderedBy: order, after: deepCursor, limit: 50) }
                timings.append((first, deep))
            }
            return timings
        }
        // The statements the store runs, by hand: the keyset condition and the order as it writes them.
        let columns = entity.recordColumns.map { "\"\($0)\"" }.joined(separator: ", ")
        let firstSQL = "SELECT \(columns) FROM flights WHERE route_distance IS NOT NULL ORDER BY route_distance DESC, id DESC LIMIT 51"
        let deepSQL =
            "SELECT \(columns) FROM flights WHERE route_distance IS NOT NULL AND (route_distance, id) < (?1, ?2) ORDER BY route_distance DESC, id DESC LIMIT 51"
        var first: OpaquePointer?, deep: OpaquePointer?
        sqlite3_prepare_v2(db, firstSQL, -1, &first, nil)
        sqlite3_prepare_v2(db, deepSQL, -1, &deep, nil)
        defer {
            sqlite3_finalize(first)
            sqlite3_finalize(deep)
        }
        func read(_ statement: OpaquePointer?) -> Int {
            var count = 0
            while sqlite3_step(statement) == SQLITE_ROW {
                for column in 0..<sqlite3_column_count(statement) where sqlite3_column_type(statement, column) == SQLITE_TEXT { _ = String(cString: sqlite3_column_text(statement, column)) }
                count += 1
            }
            sqlite3_reset(statement)
            return count
        }
        guard case .integer(let distance) = deepCursor.values[0], case .integer(let key) = deepCursor.values[1] else { throw CancellationError() }
        for _ in 0..<repeats {
            let firstTime = try await time { _ = read(first) }
            let deepTime = try await time {
                sqlite3_bind_int64(deep, 1, distance)
                sqlite3_bind_int64(deep, 2, key)
                _ = read(deep)
            }
            timings.append((firstTime, deepTime))
        }
        return timings
    }

    static func time(_ work: () async throws -> Void) async throws -> Int {
        let start = DispatchTime.now().uptimeNanoseconds
        try await work()
        return Int((DispatchTime.now().uptimeNanoseconds - start) / 1000)
    }
}
