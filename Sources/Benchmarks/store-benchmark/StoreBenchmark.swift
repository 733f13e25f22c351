import CSQLite
import ExampleModels
import Foundation
import MigratorCore
import MigratorSQLite
import PersistentStoreCore
import PersistentStoreSQLite
import SQLiteKit
import SchemaMetadata

/// `store-benchmark store|store-without-history|raw ROWS DIR`: inserts ROWS flights, upserts
/// ROWS of which half exist, and fetches everything back, through the store (recording history,
/// or not) or through the raw SQLite C API (prepared statements, values bound by hand), printing
/// the seconds of each phase.
///
/// `store-benchmark inbox-store|inbox-store-without-history|inbox-raw ROWS DIR`: the same on a mail client's messages, with
/// insert-if-absent and `.update(only:)` (`InboxBench`).
///
/// `store-benchmark records store|raw ROWS REPEATS DIR`: the studio's record pages, first and
/// deep (`RecordPages`).
///
/// `store-benchmark latency store|poll COUNT DIR`: a child process commits COUNT to-do items,
/// one transaction each, while this process waits for them: through the store's `changes()`
/// (file events, data_version, history), or by a raw connection asking `PRAGMA data_version`
/// every millisecond (busy polling, the baseline). Prints each commit-to-notice latency in
/// microseconds. `latency store-postgres|poll-postgres COUNT URL` does the same on a PostgreSQL
/// database: LISTEN/NOTIFY against polling the history table every millisecond.
/// `postgres-store|postgres-raw ROWS URL`: the insert, upsert and fetch above on PostgreSQL,
/// through the store or through libpq by hand. `postgres-bulk-store|postgres-bulk-copy ROWS
/// URL`: one bulk insert through the store, or COPY. `postgres-clients-store|postgres-clients-raw
/// CLIENTS ROWS URL`: single-row writes from concurrent clients (a `StorePool`, or threads with
/// a libpq connection each); `postgres-clients-store-no-failover`: the store without waiting out
/// a failover (`failoverTimeout` zero: no commit id written), for what that safety costs;
/// `postgres-clients-store-history`: the store with its history on. `failover-writers WRITERS URL
/// LOG STOP`: writers on a cluster while `bench/run store-failover` kills its leaders.
@main
struct StoreBenchmark {
    static func main() async throws {
        let arguments = CommandLine.arguments
        if arguments.count == 5, arguments[1] == "latency", let count = Int(arguments[3]) {
            let latencies =
                arguments[2].hasSuffix("-postgres")
                ? try await Latency.measurePostgres(mode: arguments[2], count: count, url: arguments[4])
                : try await Latency.measure(mode: arguments[2], count: count, folder: arguments[4])
            print(latencies.map(String.init).joined(separator: " "))
            return
        }
        if arguments.count == 6, arguments[1] == "failover-writers", let writers = Int(arguments[2]) {
            try await FailoverWriters.run(writers: writers, url: arguments[3], log: arguments[4], stop: arguments[5])
            return
        }
        if arguments.count == 4, arguments[1] == "latency-writer", let count = Int(arguments[2]) {
            try await Latency.write(count: count, path: arguments[3])
            return
        }
        if arguments.count >= 5, arguments.count <= 6, arguments[1] == "encryption", let rows = Int(arguments[3]) {
            let bodyBytes = arguments.count == 6 ? Int(arguments[5]) : nil
            let timings =
                switch arguments[2] {
                case "evp": try EncryptionAndSearch.libcrypto(rows: rows, bodyBytes: bodyBytes)
                case "cipher": try EncryptionAndSearch.cipherAlone(rows: rows, bodyBytes: bodyBytes)
                default: try await EncryptionAndSearch.notes(arguments[2], rows: rows, folder: arguments[4], bodyBytes: bodyBytes)
                }
            print(String(format: "insert %.4f fetch %.4f", timings.insert, timings.fetch))
            return
        }
        if arguments.count == 6, arguments[1] == "records", let rows = Int(arguments[3]), let repeats = Int(arguments[4]) {
            let timings = try await RecordPages.measure(arguments[2], rows: rows, repeats: repeats, folder: arguments[5])
            print(timings.map { "\($0.first) \($0.deep)" }.joined(separator: "\n"))
            return
        }
        if arguments.count == 6, arguments[1] == "search", let rows = Int(arguments[3]), let queries = Int(arguments[4]) {
            let latencies = try await EncryptionAndSearch.search(arguments[2], rows: rows, queries: queries, folder: arguments[5])
            print(latencies.map(String.init).joined(separator: " "))
            return
        }
        if arguments.count == 4, ["inbox-store", "inbox-store-without-history", "inbox-raw", "inbox-raw-history"].contains(arguments[1]), let rows = Int(arguments[2]) {
            let path = arguments[3] + "/\(arguments[1]).sqlite"
            let times: [String: Double] =
                switch arguments[1] {
                case "inbox-raw": try InboxBench.raw(path, rows: rows)
                case "inbox-raw-history": try await InboxBench.rawWithHistory(path, rows: rows)
                default: try await InboxBench.viaStore(path, rows: rows, history: arguments[1] == "inbox-store")
                }
            print(InboxBench.phases.map { String(format: "\($0) %.4f", times[$0] ?? 0) }.joined(separator: " "))
            return
        }
        if try await runPostgresMode(arguments) { return }
        if try await SyncBench.run(arguments) { return }
        let modes = ["store", "store-without-history", "raw", "store-sqlite-defaults", "raw-sqlite-defaults"]
        guard arguments.count == 4, let rows = Int(arguments[2]), modes.contains(arguments[1]) else {
            FileHandle.standardError.write(
                Data(
                    "usage: store-benchmark store|store-without-history|raw ROWS DIR | inbox-store|inbox-store-without-history|inbox-raw|inbox-raw-history ROWS DIR | postgres-store|postgres-raw ROWS URL | postgres-bulk-store|postgres-bulk-copy ROWS URL | postgres-clients-store|postgres-clients-store-no-failover|postgres-clients-store-history|postgres-clients-raw CLIENTS ROWS URL | latency store|poll COUNT DIR | encryption plain|padded|secret|evp|cipher ROWS DIR [BODY-BYTES] | search store|raw ROWS QUERIES DIR | sync-prepare ROWS DIR | sync-initial DIR | sync-floor DIR | sync-push ROWS CHANGES DIR | sync-devices DEVICES ROWS ROUNDS DIR\n"
                        .utf8))
            exit(2)
        }
        let path = arguments[3] + "/\(arguments[1]).sqlite"
        let first = (0..<rows).map(flight)
        let second = (rows / 2..<rows / 2 + rows).map(flight)
        // The store's settings for an application store, or SQLite's defaults, on both sides.
        let settings: SQLiteSettings = arguments[1].hasSuffix("sqlite-defaults") ? .sqliteDefaults : .applicationStore
        let timings =
            arguments[1].hasPrefix("raw")
            ? try raw(path, first, second, settings: settings)
            : try await viaStore(path, first, second, history: arguments[1] != "store-without-history", settings: settings)
        print(String(format: "insert %.4f upsert %.4f fetch %.4f", timings.0, timings.1, timings.2))
    }

    /// The PostgreSQL modes; false when `arguments` name none of them.
    static func runPostgresMode(_ arguments: [String]) async throws -> Bool {
        if arguments.count == 4, ["postgres-store", "postgres-raw"].contains(arguments[1]), let rows = Int(arguments[2]) {
            let first = (0..<rows).map(flight)
            let second = (rows / 2..<rows / 2 + rows).map(flight)
            let timings =
                arguments[1] == "postgres-raw"
                ? try PostgresBench.raw(url: arguments[3], first, second) : try await PostgresBench.viaStore(url: arguments[3], first, second)
            print(String(format: "insert %.4f upsert %.4f fetch %.4f", timings.0, timings.1, timings.2))
            return true
        }
        if arguments.count == 4, ["postgres-bulk-store", "postgres-bulk-copy"].contains(arguments[1]), let rows = Int(arguments[2]) {
            let flights = (0..<rows).map(flight)
            let seconds =
                arguments[1] == "postgres-bulk-copy"
                ? try PostgresBench.bulkViaCopy(url: arguments[3], flights) : try await PostgresBench.bulkViaStore(url: arguments[3], flights)
            print(String(format: "insert %.4f", seconds))
            return true
        }
        if arguments.count == 5, ["postgres-clients-store", "postgres-clients-store-no-failover", "postgres-clients-store-history", "postgres-clients-raw"].contains(arguments[1]),
            let clients = Int(arguments[2]),
            let rows = Int(arguments[3])
        {
            let flights = (0..<rows).map(flight)
            let seconds =
                arguments[1] == "postgres-clients-raw"
                ? try PostgresBench.clientsViaLibpq(url: arguments[4], clients: clients, flights)
                : try await PostgresBench.clientsViaStore(
                    url: arguments[4], clients: clients, flights, failover: arguments[1] != "postgres-clients-store-no-failover",
                    history: arguments[1] == "postgres-clients-store-history")
            print(String(format: "writes %.4f", seconds))
            return true
        }
        return false
    }

    static func flight(_ index: Int) -> Flight {
        let base = Date(timeIntervalSince1970: 1_700_000_000 + Double(index))
        return Flight(
            ident: "F\(index)", actualOff: index % 3 == 0 ? base : nil, scheduledOff: base, estimatedOff: base.addingTimeInterval(60),
            scheduledOn: base.addingTimeInterval(3600), estimatedOn: base.addingTimeInterval(3660), actualOn: nil,
            progressPercent: Double(index % 100), status: "Scheduled", routeDistance: index % 5000, filedAirspeed: 450,
            filedAltitude: 350, aircraftType: "B738", originID: nil, destinationID: nil, airlineID: nil)
    }

    static func seconds(_ work: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try work()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// The flights are handed to the store (`consume`), as a bulk load would hand them: the
    /// store returns them with their keys in the same memory, as the raw side reads the keys
    /// back without a second array of models.
    static func viaStore(_ path: String, _ first: consuming [Flight], _ second: consuming [Flight], history: Bool, settings: SQLiteSettings) async throws -> (Double, Double, Double) {
        let store = try Store(
            path: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations,
            configuration: .init(recordsHistory: history, sqlite: settings))
        var start = DispatchTime.now().uptimeNanoseconds
        let inserted = try await store.insert(consume first)
        let insert = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        start = DispatchTime.now().uptimeNanoseconds
        let upserted = try await store.insert(consume second)
        let upsert = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        start = DispatchTime.now().uptimeNanoseconds
        let all = try await store.fetch(Flight.self)
        let fetch = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard all.count == inserted.count + upserted.count / 2, inserted.allSatisfy({ $0.id != nil }),
            upserted.allSatisfy({ $0.id != nil })
        else { throw CancellationError() }
        return (insert, upsert, fetch)
    }

    // MARK: - The same work through the C API

    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    static let columns = [
        "ident", "actual_off", "scheduled_off", "estimated_off", "scheduled_on", "estimated_on", "actual_on",
        "progress_percent", "status", "route_distance", "filed_airspeed", "filed_altitude", "aircraft_type",
        "origin_id", "destination_id", "airline_id",
    ]

    static func raw(_ path: String, _ first: [Flight], _ second: [Flight], settings: SQLiteSettings) throws -> (Double, Double, Double) {
        // The same tables, created by the same migrations.
        let setup = try SQLiteConnection(path: path)
        _ = try setup.query("PRAGMA journal_mode = WAL;")
        try Migrator(connection: setup, schema: FlightsSchema.name, embedded: FlightsSchema.migrations).up()
        var db: OpaquePointer?
        // Opened as the store opens its connection: one thread at a time, so without SQLite's
        // per-call connection mutex (the default, serialized mode, takes it on every call).
        sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        defer { sqlite3_close(db) }
        sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; " + settings.pragmas(inMemory: false), nil, nil, nil)
        let list = columns.map { "\"\($0)\"" }.joined(separator: ", ")
        let marks = columns.map { _ in "?" }.joined(separator: ", ")
        // Each row's id is read back, as the store hands back models with their keys: the id the
        // insert gave, or (an upsert that updated) the stored row's, looked up by its ident.
        let insertSQL = "INSERT INTO flights (\(list)) VALUES (\(marks))"
        let upsertSQL =
            "INSERT INTO flights (\(list)) VALUES (\(marks)) ON CONFLICT (ident) DO UPDATE SET "
            + columns.dropFirst().map { "\"\($0)\" = excluded.\"\($0)\"" }.joined(separator: ", ")
        var ids: [Int64] = []
        ids.reserveCapacity(first.count)

        let insert = seconds { rawWrite(db, first, insertSQL, ids: &ids) }
        let upsert = seconds { rawWrite(db, second, upsertSQL, ids: &ids) }
        var fetched: [Flight] = []
        let fetch = seconds { fetched = rawFetch(db, "SELECT id, \(list) FROM flights ORDER BY id", capacity: first.count + second.count / 2) }
        _ = fetched
        return (insert, upsert, fetch)
    }

    /// One transaction of prepared inserts (or upserts), each row's id read back.
    static func rawWrite(_ db: OpaquePointer?, _ flights: [Flight], _ sql: String, ids: inout [Int64]) {
        var statement: OpaquePointer?
        var lookup: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        sqlite3_prepare_v2(db, "SELECT id FROM flights WHERE ident = ?", -1, &lookup, nil)
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        ids.removeAll(keepingCapacity: true)
        for flight in flights {
            bindText(statement, 1, flight.ident)
            bindDate(statement, 2, flight.actualOff)
            bindDate(statement, 3, flight.scheduledOff)
            bindDate(statement, 4, flight.estimatedOff)
            bindDate(statement, 5, flight.scheduledOn)
            bindDate(statement, 6, flight.estimatedOn)
            bindDate(statement, 7, flight.actualOn)
            bindDouble(statement, 8, flight.progressPercent)
            bindText(statement, 9, flight.status)
            bindInt(statement, 10, flight.routeDistance)
            bindInt(statement, 11, flight.filedAirspeed)
            bindInt(statement, 12, flight.filedAltitude)
            bindText(statement, 13, flight.aircraftType)
            for (offset, key) in [flight.originID, flight.destinationID, flight.airlineID].enumerated() {
                if let key { sqlite3_bind_int64(statement, Int32(14 + offset), key) } else { sqlite3_bind_null(statement, Int32(14 + offset)) }
            }
            sqlite3_set_last_insert_rowid(db, 0)
            while sqlite3_step(statement) == SQLITE_ROW {}
            sqlite3_reset(statement)
            var id = sqlite3_last_insert_rowid(db)
            if id == 0 {
                bindText(lookup, 1, flight.ident)
                if sqlite3_step(lookup) == SQLITE_ROW { id = sqlite3_column_int64(lookup, 0) }
                sqlite3_reset(lookup)
            }
            ids.append(id)
        }
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        sqlite3_finalize(statement)
        sqlite3_finalize(lookup)
    }

    /// Every row into structs, columns read by index.
    static func rawFetch(_ db: OpaquePointer?, _ sql: String, capacity: Int) -> [Flight] {
        var fetched: [Flight] = []
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        fetched.reserveCapacity(capacity)
        while sqlite3_step(statement) == SQLITE_ROW {
            func text(_ column: Int32) -> String { String(cString: sqlite3_column_text(statement, column)) }
            func date(_ column: Int32) -> Date? { sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : parseDate(text(column)) }
            func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
            func key(_ column: Int32) -> Int64? { isNull(column) ? nil : sqlite3_column_int64(statement, column) }
            func int(_ column: Int32) -> Int? { isNull(column) ? nil : Int(sqlite3_column_int64(statement, column)) }
            var flight = Flight(
                ident: text(1), actualOff: date(2), scheduledOff: date(3), estimatedOff: date(4),
                scheduledOn: date(5), estimatedOn: date(6), actualOn: date(7),
                progressPercent: isNull(8) ? nil : sqlite3_column_double(statement, 8), status: text(9),
                routeDistance: int(10), filedAirspeed: int(11),
                filedAltitude: int(12), aircraftType: isNull(13) ? nil : text(13),
                originID: key(14), destinationID: key(15), airlineID: key(16))
            flight.id = sqlite3_column_int64(statement, 0)
            fetched.append(flight)
        }
        sqlite3_finalize(statement)
        return fetched
    }

    static func bindText(_ statement: OpaquePointer?, _ index: Int32, _ text: String?) {
        guard let text else {
            sqlite3_bind_null(statement, index)
            return
        }
        sqlite3_bind_text(statement, index, text, -1, transient)
    }

    static func bindInt(_ statement: OpaquePointer?, _ index: Int32, _ value: Int?) {
        guard let value else {
            sqlite3_bind_null(statement, index)
            return
        }
        sqlite3_bind_int64(statement, index, Int64(value))
    }

    static func bindDouble(_ statement: OpaquePointer?, _ index: Int32, _ value: Double?) {
        guard let value else {
            sqlite3_bind_null(statement, index)
            return
        }
        sqlite3_bind_double(statement, index, value)
    }

    static func bindDate(_ statement: OpaquePointer?, _ index: Int32, _ date: Date?) {
        guard let date else {
            sqlite3_bind_null(statement, index)
            return
        }
        bindText(statement, index, formatDate(date))
    }

    /// Raw code formats and parses dates the same way the store does.
    static func formatDate(_ date: Date) -> String { StoredDate.text(date) }
    static func parseDate(_ text: String) -> Date? { StoredDate.date(text) }
}
