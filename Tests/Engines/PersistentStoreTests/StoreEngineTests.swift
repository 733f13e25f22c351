import DatabaseLocation
import ExampleModels
import Foundation
import PersistentStorePostgres
import PersistentStoreSQLite
import PostgresKit
import SQLDialects
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

/// The engines the store opens; each test below runs on both, the same code choosing only the
/// URL. PostgreSQL runs on the throwaway server the tests start; where its binaries are missing
/// the PostgreSQL cases are skipped, and say so.
enum StoreEngine: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    static var available: [StoreEngine] { PostgresServer.available ? allCases : [.sqlite] }

    /// A fresh, empty database's URL.
    func freshURL() throws -> String {
        switch self {
        case .sqlite: return storePath()
        case .postgres: return try #require(PostgresServer.shared, "the PostgreSQL test server did not start").createDatabase()
        }
    }

    /// A Flights store on a fresh database, history off unless asked for.
    func flights() throws -> Store {
        try flights(at: freshURL())
    }

    /// A store of any schema on a fresh database, as `store(_:_:)` opens one on SQLite (history
    /// as the schema says, the test keys).
    func store(_ schema: SchemaDescriptor, _ migrations: [EmbeddedMigration]) throws -> Store {
        try Store.open(url: freshURL(), schema: schema, migrations: migrations, configuration: .init(keys: testKeys))
    }

    /// A Flights store as `flightsStore()` opens one on SQLite.
    func flightsStore() throws -> Store {
        try Store.open(url: freshURL(), schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
    }

    /// How many external values the database at `url` keeps: Garage's car photos' files beside a
    /// SQLite file, or the rows of PostgreSQL's side table.
    func externalValueCount(at url: String) throws -> Int {
        switch self {
        case .sqlite: return (try? FileManager.default.contentsOfDirectory(atPath: url + ".external/car/photo"))?.count ?? 0
        case .postgres:
            guard case .integer(let count)? = try PostgresConnection(url).query("SELECT count(*) FROM schemagen_external_values").first?.first else { return -1 }
            return Int(count)
        }
    }

    func flights(at url: String, history: Bool = false, author: String? = nil) throws -> Store {
        try Store.open(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: .init(author: author, recordsHistory: history))
    }
}

extension Store {
    /// A store on whichever engine `url` names, as an app that links both adapters opens one:
    /// `Store(url:)` for PostgreSQL, `Store(path:)` for a SQLite file.
    static func open(url: String, schema: SchemaDescriptor, migrations: [EmbeddedMigration], configuration: Configuration = Configuration()) throws(StoreError) -> Store {
        if case .postgres? = try? DatabaseLocation.parse(url) {
            return try Store(url: url, schema: schema, migrations: migrations, configuration: configuration)
        }
        return try Store(path: url, schema: schema, migrations: migrations, configuration: configuration)
    }
}

extension StorePool {
    /// A pool on whichever engine `url` names (`Store.open(url:)`).
    static func open(
        url: String, size: Int, schema: SchemaDescriptor, migrations: [EmbeddedMigration], configuration: Store.Configuration = Store.Configuration()
    ) throws(StoreError) -> StorePool {
        try StorePool(size: size, configuration: configuration) { (configuration) throws(StoreError) in
            try Store.open(url: url, schema: schema, migrations: migrations, configuration: configuration)
        }
    }
}

@Suite(.serialized) struct StoreEngineTests {
    init() {
        if !PostgresServer.available { print("◇ \(PostgresServer.skipReason): StoreEngineTests run on SQLite only") }
    }

    @Test(arguments: StoreEngine.available)
    func insertFetchCountAndPredicates(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let store = try engine.flights(at: url)
        #expect(try await store.read { $0.database.dialect.name } == engine.rawValue)
        let sfo = try await store.insert(airport("KSFO", "San Francisco"))
        let lax = try await store.insert(airport("KLAX", "Los Angeles"))
        #expect(sfo.id != nil && lax.id != nil && sfo.id != lax.id)
        #expect(try await store.model(Airport.self, key: sfo.id!) == sfo)
        try await store.insert([
            flight("UA1", origin: sfo.id, destination: lax.id, distance: 337), flight("UA2", origin: sfo.id, distance: 2586),
            flight("DL1", origin: lax.id, destination: sfo.id, distance: 337),
        ])
        #expect(try await store.count(Flight.self) == 3)
        if engine == .postgres {
            // The rows are on the server, as another client sees them.
            #expect(try PostgresConnection(url).query("SELECT count(*) FROM flights") == [[.integer(3)]])
        }
        let long = try await store.fetch(Flight.self, where: #Predicate { ($0.routeDistance ?? 0) > 1000 })
        #expect(long.map(\.ident) == ["UA2"])
        let sorted = try await store.fetch(Flight.self, sortBy: [SortDescriptor(\.ident, order: .reverse)], limit: 2, offset: 1)
        #expect(sorted.map(\.ident) == ["UA1", "DL1"])
        #expect(try await store.fetch(Flight.self, sortBy: [SortDescriptor(\.ident)], offset: 2).map(\.ident) == ["UA2"])
        #expect(try await store.count(Flight.self, where: #Predicate { $0.ident.contains("A") && $0.destinationID == nil }) == 1)
        #expect(try await store.fetch(Airport.self, where: #Predicate { $0.icao.starts(with: "KS") }).map(\.icao) == ["KSFO"])
        #expect(try await store.count(Airport.self, where: #Predicate { $0.icao.localizedStandardContains("lax") }) == 1)
        #expect(try await store.count(Flight.self, where: #Predicate { ["UA1", "DL1"].contains($0.ident) }) == 2)
        // Null-safe equality, as Swift compares optionals.
        #expect(try await store.count(Flight.self, where: #Predicate { $0.destinationID == nil }) == 1)
        #expect(try await store.count(Flight.self, where: #Predicate { $0.destinationID != nil }) == 2)
        var streamed: [String] = []
        try await store.read { store in
            var idents: [String] = []
            try store.forEach(Flight.self, sortBy: [SortDescriptor(\.ident)]) { idents.append($0.ident) }
            return idents
        }.forEach { streamed.append($0) }
        #expect(streamed == ["DL1", "UA1", "UA2"])
    }

    @Test(arguments: StoreEngine.available)
    func datesAndOptionalsRoundTrip(_ engine: StoreEngine) async throws {
        let store = try engine.flights()
        var model = flight("UA9", origin: nil)
        model.actualOff = Date(timeIntervalSince1970: 1_764_612_345.678)
        model.scheduledOff = Date(timeIntervalSince1970: -86_400.5)
        let stored = try await store.insert(model)
        let fetched = try #require(try await store.model(Flight.self, key: stored.id!))
        #expect(fetched.actualOff == StoredDate.rounded(model.actualOff!))
        #expect(fetched.scheduledOff == StoredDate.rounded(model.scheduledOff!))
        #expect(fetched.actualOn == nil && fetched.originID == nil)
        let cutoff = Date(timeIntervalSince1970: 1_764_612_000)
        #expect(try await store.count(Flight.self, where: #Predicate { $0.actualOff != nil && $0.actualOff! > cutoff }) == 1)
    }

    /// nil sorts as Swift sorts optionals, on both engines: first going up, last going down
    /// (PostgreSQL puts NULL last going up unless told).
    @Test(arguments: StoreEngine.available)
    func nilSortsFirstGoingUpAndLastGoingDown(_ engine: StoreEngine) async throws {
        let store = try engine.flights()
        var unknown = flight("UA0", origin: nil)
        unknown.routeDistance = nil
        try await store.insert([flight("UA2", origin: nil, distance: 200), unknown, flight("UA1", origin: nil, distance: 100)])
        #expect(try await store.fetch(Flight.self, sortBy: [SortDescriptor(\.routeDistance)]).map(\.ident) == ["UA0", "UA1", "UA2"])
        #expect(try await store.fetch(Flight.self, sortBy: [SortDescriptor(\.routeDistance, order: .reverse)]).map(\.ident) == ["UA2", "UA1", "UA0"])
    }

    @Test(arguments: StoreEngine.available)
    func upsertsOnUniqueValuesAndKeys(_ engine: StoreEngine) async throws {
        let store = try engine.flights()
        let first = try await store.insert(airport("KSFO", "Old name"))
        // The same unique value, no key: the stored row is updated, its key kept.
        let again = try await store.insert(airport("KSFO", "San Francisco"))
        #expect(again.id == first.id)
        #expect(try await store.count(Airport.self) == 1)
        // The key given: that row is updated.
        var renamed = again
        renamed.name = "SFO"
        #expect(try await store.insert(renamed).id == first.id)
        #expect(try await store.model(Airport.self, key: first.id!)?.name == "SFO")
        // Bulk: half new, half existing.
        try await store.insert([airport("KSFO", "Again"), airport("KLAX"), airport("KJFK")])
        #expect(try await store.count(Airport.self) == 3)
        #expect(try await store.first(Airport.self, where: #Predicate { $0.icao == "KSFO" })?.name == "Again")
        #expect(try await store.update(Airport.self, set: \.city, to: "Bay Area", where: #Predicate { $0.icao == "KSFO" }) == 1)
        #expect(try await store.delete(Airport.self, where: #Predicate { $0.city == "City" }) == 2)
        #expect(try await store.fetch(Airport.self).map(\.icao) == ["KSFO"])
    }

    /// Bulk writes of more rows than one pipeline batch: new rows get their keys, rows whose
    /// unique value is stored update it and get its key, each row is in the history, and a row
    /// that fails undoes the whole call.
    @Test(arguments: StoreEngine.available)
    func bulkWritesKeyEveryRowAndFailWhole(_ engine: StoreEngine) async throws {
        let store = try engine.flights(at: try engine.freshURL(), history: true)
        let sfo = try await store.insert(airport("KSFO"))
        let count = Store.pipelineBatch * 2 + 7
        let firstPass = try await store.insert((0..<count).map { flight("F\($0)", origin: sfo.id, distance: $0) })
        #expect(Set(firstPass.compactMap(\.id)).count == count)
        // Half again (their ident is unique), half new, in one call.
        let secondPass = try await store.insert((count / 2..<(count + count / 2)).map { flight("F\($0)", origin: sfo.id, distance: $0 + 10_000) })
        #expect(try await store.count(Flight.self) == count + count / 2)
        for written in secondPass {
            let stored = try #require(try await store.model(Flight.self, key: written.id!), "\(written.ident) is stored under the key returned")
            #expect(stored.ident == written.ident && stored.routeDistance == written.routeDistance)
        }
        #expect(secondPass.first?.id == firstPass[count / 2].id)
        let start = try await store.currentHistoryToken()
        // A flight from an airport that does not exist, in the middle: nothing of the call stays.
        var batch = (0..<300).map { flight("G\($0)", origin: sfo.id) }
        batch[150] = flight("G150", origin: 999_999)
        await #expect(throws: StoreError.self) { try await store.insert(batch) }
        #expect(try await store.count(Flight.self, where: #Predicate { $0.ident.starts(with: "G") }) == 0)
        #expect(try await store.history(after: start).isEmpty)
        // The connection is usable after the failure, and each row of a bulk write is recorded.
        try await store.insert((0..<300).map { flight("H\($0)", origin: sfo.id) })
        let history = try await store.history(after: start)
        #expect(history.count == 1 && history.first?.changes.count == 300)
    }

    /// Bulk writes large enough for a staging table on a server (COPY, then one INSERT ...
    /// SELECT): keys come back per row, updates keep the stored keys, repeated conflict values
    /// in one call (which one statement cannot update twice) still end as the last one, every
    /// row is in the history, and a failing row undoes the call.
    @Test(arguments: StoreEngine.available)
    func largeBulkWritesKeyEveryRowAsSmallOnesDo(_ engine: StoreEngine) async throws {
        let store = try engine.flights(at: try engine.freshURL(), history: true)
        let sfo = try await store.insert(airport("KSFO"))
        let count = Store.stagingThreshold * 3
        let start = try await store.currentHistoryToken()
        let firstPass = try await store.insert((0..<count).map { flight("F\($0)", origin: sfo.id, distance: $0) })
        #expect(Set(firstPass.compactMap(\.id)).count == count)
        let secondPass = try await store.insert((count / 2..<(count + count / 2)).map { flight("F\($0)", origin: sfo.id, distance: $0 + 100_000) })
        #expect(try await store.count(Flight.self) == count + count / 2)
        #expect(secondPass.first?.id == firstPass[count / 2].id, "an update keeps the stored key")
        let stored = Dictionary(uniqueKeysWithValues: try await store.fetch(Flight.self).map { ($0.ident, $0) })
        for written in firstPass.prefix(count / 2) + secondPass {
            #expect(stored[written.ident]?.id == written.id && stored[written.ident]?.routeDistance == written.routeDistance, "\(written.ident)")
        }
        // The same ident twice in one call: the later one is stored, both get its key.
        var repeated = (0..<count).map { flight("R\($0)", origin: sfo.id) }
        repeated[count - 1] = flight("R0", origin: sfo.id, distance: 7)
        let written = try await store.insert(repeated)
        #expect(written[0].id == written[count - 1].id)
        #expect(try await store.first(Flight.self, where: #Predicate { $0.ident == "R0" })?.routeDistance == 7)
        let history = try await store.history(after: start)
        #expect(history.count == 3 && history.map(\.changes.count) == [count, count, count])
        // A row whose airport does not exist: nothing of the call stays.
        var failing = (0..<count).map { flight("G\($0)", origin: sfo.id) }
        failing[count / 3] = flight("G-bad", origin: 999_999)
        await #expect(throws: StoreError.self) { try await store.insert(failing) }
        #expect(try await store.count(Flight.self, where: #Predicate { $0.ident.starts(with: "G") }) == 0)
        #expect(try await store.history(after: start).count == 3)
    }

    /// `forEach` streams: on PostgreSQL through a cursor, a batch at a time (one is open while
    /// the body runs), inside `read`, a transaction or neither; a `forEach` in another's body and
    /// queries in between work; an error from the body stops it and leaves the store usable.
    @Test(arguments: StoreEngine.available)
    func forEachStreamsEveryRowOnceAndStopsOnAnError(_ engine: StoreEngine) async throws {
        let store = try engine.flights()
        let sfo = try await store.insert(airport("KSFO"))
        let count = 3_500
        try await store.insert((0..<count).map { flight(String(format: "F%05d", $0), origin: sfo.id, distance: $0) })
        let (seen, cursors, inner) = try await store.read { store in
            var seen: [String] = []
            var cursors = -1
            var inner = 0
            try store.forEach(Flight.self, sortBy: [SortDescriptor(\.ident)]) { flight in
                if seen.isEmpty {
                    if store.database.dialect.name == "postgres" {
                        if case .integer(let open)? = try store.database.query("SELECT count(*) FROM pg_cursors" as SQL).first?.first { cursors = Int(open) }
                    }
                    try store.forEach(Airport.self) { _ in inner += 1 }
                    inner += try store.count(Airport.self)
                }
                seen.append(flight.ident)
            }
            return (seen, cursors, inner)
        }
        #expect(seen.count == count && seen == seen.sorted() && Set(seen).count == count)
        #expect(inner == 2)
        if engine == .postgres { #expect(cursors == 2, "the outer and the inner forEach each had a cursor open") }
        struct Stop: Error {}
        var visited = 0
        do {
            try await store.read { store in
                var visited = 0
                try store.forEach(Flight.self) { _ in
                    visited += 1
                    if visited == 1_500 { throw Stop() }
                }
            }
        } catch {
            // The body's own error comes out carried by `.body`, unchanged.
            if error.bodyError is Stop { visited = 1_500 }
        }
        #expect(visited == 1_500, "the body's error came out as StoreError.body")
        #expect(try await store.count(Flight.self) == count)
        // Outside `read`, as a single call in a transaction.
        let total = try await store.transaction { store in
            var total = 0
            try store.forEach(Flight.self, where: #Predicate { ($0.routeDistance ?? 0) >= 1_000 }) { _ in total += 1 }
            return total
        }
        #expect(total == count - 1_000)
    }

    @Test(arguments: StoreEngine.available)
    func transactionsRollBackWholeAndSavepointsInside(_ engine: StoreEngine) async throws {
        let store = try engine.flights()
        struct Abandon: Error {}
        let failure = await #expect(throws: StoreError.self) {
            try await store.transaction { store in
                try store.insert(airport("KSFO"))
                throw Abandon()
            }
        }
        #expect(failure?.bodyError is Abandon, "the body's error, carried by StoreError.body")
        #expect(try await store.count(Airport.self) == 0)
        // A write that fails inside a transaction is undone alone; the rest commits.
        try await store.transaction { store in
            try store.insert(airport("KSFO"))
            do {
                try store.insert(flight("XX1", origin: 999_999))  // no such airport
                Issue.record("a foreign key pointing nowhere was accepted")
            } catch {}
            try store.insert(airport("KLAX"))
        }
        #expect(try await store.fetch(Airport.self, sortBy: [SortDescriptor(\.icao)]).map(\.icao) == ["KLAX", "KSFO"])
        #expect(try await store.count(Flight.self) == 0)
    }

    /// Two stores (two connections, as two processes have) increment one value at once, each
    /// increment read and written in one transaction: none is lost. SQLite queues the writers
    /// on its lock; PostgreSQL runs them side by side, rolls back the one that conflicts, and
    /// the store runs its body again.
    @Test(arguments: StoreEngine.available)
    func concurrentReadModifyWriteTransactionsLoseNoUpdate(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let first = try engine.flights(at: url, history: true)
        let second = try engine.flights(at: url, history: true)
        let sfo = try await first.insert(airport("KSFO"))
        try await first.insert(flight("UA1", origin: sfo.id, distance: 0))
        let runs = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in [first, second] {
                group.addTask {
                    for _ in 0..<100 {
                        try await store.transaction { store in
                            runs.add()
                            var stored = try #require(try store.first(Flight.self, where: #Predicate { $0.ident == "UA1" }))
                            stored.routeDistance = (stored.routeDistance ?? 0) + 1
                            try store.insert(stored)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await first.first(Flight.self, where: #Predicate { $0.ident == "UA1" })?.routeDistance == 200)
        #expect(runs.value >= 200)
        let history = try await second.history(after: HistoryToken(0))
        #expect(history.filter { $0.changes.contains { $0.entity == "Flight" } }.count == 201, "each committed increment recorded once")
    }

    @Test(arguments: StoreEngine.available)
    func relationshipsAndDeleteRules(_ engine: StoreEngine) async throws {
        let store = try engine.flights()
        let sfo = try await store.insert(airport("KSFO")), lax = try await store.insert(airport("KLAX"))
        let united = try await store.insert(Airline(code: "UAL", name: "United", shortName: "United"))
        let one = try await store.insert(flight("UA1", origin: sfo.id, destination: lax.id, airline: united.id))
        try await store.insert(flight("UA2", origin: sfo.id, airline: united.id))
        #expect(try await store.related(Airport.flightsFrom, of: sfo).map(\.ident) == ["UA1", "UA2"])
        #expect(try await store.target(Flight.destination, of: one) == lax)
        let joined = try await store.fetch(Flight.self, joining: #Predicate { $0.origin?.icao == "KSFO" && $0.destination?.icao == "KLAX" })
        #expect(joined.map(\.ident) == ["UA1"])
        #expect(try await store.count(Airport.self, joining: #Predicate { $0.flightsFrom.contains { $0.ident == "UA2" } }) == 1)
        // Deleting the airline nullifies its flights' references (the schema's rule).
        try await store.delete(united)
        #expect(try await store.count(Flight.self, where: #Predicate { $0.airlineID != nil }) == 0)
        #expect(try await store.count(Flight.self) == 2)
    }

    @Test(arguments: StoreEngine.available)
    func historyRecordsInsertsUpdatesDeletesAndCascadesInTheSameTransaction(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let store = try engine.flights(at: url, history: true, author: "app")
        let start = try await store.currentHistoryToken()
        let sfo = try await store.insert(airport("KSFO", "San Francisco"))
        let united = try await store.insert(Airline(code: "UAL", name: "United", shortName: "United"))
        let flight = try await store.insert(flight("UA1", origin: sfo.id, airline: united.id))
        var renamed = sfo
        renamed.name = "SFO"
        try await store.insert(renamed)
        // Deleting the airline sets the flight's airlineID to nil (the database's ON DELETE SET
        // NULL): the history has both, in one transaction.
        try await store.delete(united)
        // A rolled-back transaction leaves no history.
        struct Abandon: Error {}
        _ = try? await store.transaction { store in
            try store.insert(airport("KLAX"))
            throw Abandon()
        }
        let transactions = try await store.history(after: start)
        #expect(transactions.count == 5)
        #expect(transactions.allSatisfy { $0.author == "app" })
        #expect(transactions.map(\.token.value) == transactions.map(\.token.value).sorted())
        let insert = try #require(transactions.first?.changes.first)
        #expect(insert.kind == .insert && insert.entity == "Airport" && insert.key == [.integer(sfo.id!)])
        #expect(insert.values.isEmpty, "Flights says history: {insertValues: false}")
        let update = try #require(transactions[3].changes.first)
        #expect(update.kind == .update && update.changedAttributes == ["name"] && update.values["name"] == .text("SFO"))
        let last = transactions[4].changes
        #expect(last.contains { $0.kind == .delete && $0.entity == "Airline" && $0.key == [.integer(united.id!)] })
        #expect(last.contains { $0.kind == .update && $0.entity == "Flight" && $0.key == [.integer(flight.id!)] && $0.changedAttributes == ["airline"] })
        // Another store on the same database reads the same history; filtered by author.
        let other = try engine.flights(at: url, history: true, author: "widget")
        #expect(try await other.history(after: start).count == 5)
        #expect(try await other.history(after: start, author: .excluding("app")).isEmpty)
        try await other.insert(airport("KJFK"))
        #expect(try await store.history(after: start, author: .only("widget")).count == 1)
        let newest = try await store.currentHistoryToken()
        #expect(try await store.deleteHistory(before: newest) == 5)
        await #expect(throws: StoreError.self) { _ = try await store.history(after: start) }
    }

    @Test(arguments: StoreEngine.available)
    func changesStreamsThisStoresCommits(_ engine: StoreEngine) async throws {
        let store = try engine.flights(at: try engine.freshURL(), history: true)
        let stream = try await store.changes()
        try await store.insert(airport("KSFO"))
        var iterator = stream.makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.changes.map(\.entity) == ["Airport"])
    }

    /// Another store on the same database (another process or machine, here another
    /// connection) commits; this store's `changes()` hears of it: through the file watcher on
    /// SQLite, LISTEN/NOTIFY on PostgreSQL.
    @Test(arguments: StoreEngine.available)
    func changesArriveFromAnotherStoreOnTheSameDatabase(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let watcher = try engine.flights(at: url, history: true, author: "watcher")
        let writer = try engine.flights(at: url, history: true, author: "writer")
        let stream = try await watcher.changes(author: .only("writer"))
        try await writer.insert(airport("KSFO"))
        try await writer.insert(airport("KLAX"))
        let seen = try await collect(stream, count: 2, within: 20)
        #expect(seen.count == 2)
        #expect(seen.flatMap { $0.changes.map(\.entity) } == ["Airport", "Airport"])
    }

    /// An observed query reruns when another store commits, with history on or off.
    @Test(arguments: StoreEngine.available.flatMap { engine in [(engine, true), (engine, false)] })
    func observedQueriesRerunOnAnotherStoresCommit(_ engine: StoreEngine, history: Bool) async throws {
        let url = try engine.freshURL()
        let watcher = try engine.flights(at: url, history: history)
        let writer = try engine.flights(at: url, history: history)
        let counts = await watcher.observeCount(Airport.self)
        let reached = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for try await count in counts where count == 2 { return true }
                return false
            }
            group.addTask {
                try await writer.insert(airport("KSFO"))
                try await writer.insert(airport("KLAX"))
                try await _Concurrency.Task.sleep(for: .seconds(20))
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(reached, "the observed count reached 2")
    }

    /// Full-text search over the schema's searchable attributes: FTS5 on SQLite, tsvector on
    /// PostgreSQL; user text never causes a syntax error, each engine's raw syntax is its own.
    @Test(arguments: StoreEngine.available)
    func searchFindsWordsRanksThemAndMarksExcerpts(_ engine: StoreEngine) async throws {
        let store = try engine.flights()
        try await store.insert([
            airport("KSFO", "San Francisco International"), airport("KLAX", "Los Angeles International"), airport("KSJC", "San Jose Mineta"),
        ])
        let san = try await store.search(Airport.self, matching: "SAN")
        #expect(Set(san.map(\.model.icao)) == ["KSFO", "KSJC"])
        #expect(san.map(\.rank) == san.map(\.rank).sorted(), "best first")
        #expect(try await store.search(Airport.self, matching: "international francisco").map(\.model.icao) == ["KSFO"])
        #expect(try await store.search(Airport.self, matching: "san", where: #Predicate { $0.icao == "KSJC" }).map(\.model.icao) == ["KSJC"])
        #expect(try await store.search(Airport.self, matching: "san", limit: 1).count == 1)
        for hostile in ["\"'); DROP TABLE airports; --", "a & | ! :* (", "NEAR(", "   "] {
            #expect(try await store.search(Airport.self, matching: hostile).isEmpty, "\(hostile)")
        }
        let marked = try await store.search(Airport.self, matching: "jose", snippets: SnippetStyle(open: "<b>", close: "</b>"))
        #expect(marked.first?.snippets["name"]?.contains("<b>Jose</b>") == true, "\(marked.first?.snippets ?? [:])")
        #expect(try await store.search(Airport.self, .words("san  jose")).map(\.model.icao) == ["KSJC"])
        switch engine {
        case .sqlite:
            #expect(try await store.search(Airport.self, .engineSyntax("san AND jose")).map(\.model.icao) == ["KSJC"])
            #expect(try await store.search(Airport.self, .engineSyntax("internat*")).count == 2)
        case .postgres:
            #expect(try await store.search(Airport.self, .engineSyntax("san & jose")).map(\.model.icao) == ["KSJC"])
            #expect(try await store.search(Airport.self, .engineSyntax("internat:*")).count == 2)
        }
        let malformed = engine == .sqlite ? "san AND (" : "san & ("
        await #expect {
            _ = try await store.search(Airport.self, .engineSyntax(malformed))
        } throws: { error in
            "\(error)".contains("is not valid") && "\(error)".contains(engine == .sqlite ? "FTS5" : "tsquery")
        }
        try await deprecatedRawSearches(store, engine)
    }

    /// `search(_:fts5:)` and `search(_:tsquery:)`, from the release before `SearchQuery`: each
    /// still runs on its own engine and is refused, naming the engine, on the other.
    @available(*, deprecated)
    func deprecatedRawSearches(_ store: Store, _ engine: StoreEngine) async throws {
        switch engine {
        case .sqlite:
            #expect(try await store.search(Airport.self, fts5: "san AND jose").map(\.model.icao) == ["KSJC"])
            await #expect { _ = try await store.search(Airport.self, tsquery: "san & jose") } throws: { "\($0)".contains("runs on sqlite") }
        case .postgres:
            #expect(try await store.search(Airport.self, tsquery: "san & jose").map(\.model.icao) == ["KSJC"])
            await #expect { _ = try await store.search(Airport.self, fts5: "san AND jose") } throws: { "\($0)".contains("runs on postgres") }
        }
    }

    /// Garage's cars: decimals, URLs, value types (JSON) and an external-storage photo, which
    /// lives in files beside a SQLite database and in a side table on PostgreSQL. Replaced and
    /// deleted values go, and a rolled-back write leaves none behind.
    @Test(arguments: StoreEngine.available)
    func valueTypesAndExternalStorageRoundTrip(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let store = try Store.open(url: url, schema: GarageSchema.descriptor, migrations: GarageSchema.migrations)
        func externalValues() throws -> Int {
            switch engine {
            case .sqlite:
                let folder = url + ".external"
                let files = FileManager.default.enumerator(atPath: folder)?.allObjects.compactMap { $0 as? String } ?? []
                return files.filter { !$0.hasSuffix(".tmp") && !(try! FileManager.default.attributesOfItem(atPath: folder + "/" + $0)[.type] as? FileAttributeType == .typeDirectory) }.count
            case .postgres:
                guard case .integer(let count)? = try PostgresConnection(url).query("SELECT count(*) FROM schemagen_external_values").first?.first else { return -1 }
                return Int(count)
            }
        }
        let photo = Data((0..<100_000).map { UInt8($0 % 251) })
        let car = Car(
            vin: "VIN1", make: "Ford", model: "T", color: Color(red: 0.25, green: 0.5, blue: 1, label: "Sky"), price: Decimal(string: "19999.99"),
            mileage: 42, manual: URL(string: "https://example.com/t.pdf"), photo: photo)
        let stored = try await store.insert(car)
        let fetched = try #require(try await store.model(Car.self, key: stored.id!))
        #expect(fetched.photo == photo && fetched.price == Decimal(string: "19999.99") && fetched.color == car.color && fetched.manual == car.manual)
        #expect(try externalValues() == 1)
        var repainted = fetched
        repainted.photo = Data([1, 2, 3])
        try await store.insert(repainted)
        #expect(try await store.model(Car.self, key: stored.id!)?.photo == Data([1, 2, 3]))
        #expect(try externalValues() == 1, "the replaced photo is gone")
        struct Abandon: Error {}
        _ = try? await store.transaction { store in
            try store.insert(Car(vin: "VIN2", make: "Ford", model: "A", photo: photo))
            throw Abandon()
        }
        #expect(try externalValues() == 1, "a rolled-back photo is gone")
        try await store.delete(repainted)
        #expect(try externalValues() == 0)
    }

    /// A car saved 100 times with its photo unchanged (as an app toggling another property does)
    /// keeps the photo's file and column value: no file written, no `photo` in the history. Two
    /// cars with the same bytes hold their own files, so deleting one leaves the other readable.
    @Test(arguments: StoreEngine.available)
    func anUnchangedExternalValueIsNotWrittenAgain(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let store = try Store.open(url: url, schema: GarageSchema.descriptor, migrations: GarageSchema.migrations, configuration: .init(recordsHistory: true))
        func storedNames() async throws -> [StoredValue] {
            try await store.read { try $0.database.query("SELECT photo FROM car ORDER BY id" as SQL).map { $0[0] } }
        }
        func externalValueCount() throws -> Int { try engine.externalValueCount(at: url) }
        let photo = Data((0..<50_000).map { UInt8($0 % 253) })
        var car = try await store.insert(Car(vin: "VIN1", make: "Ford", model: "T", photo: photo))
        let name = try await storedNames()
        func fileModified() throws -> Date? {
            guard engine == .sqlite, case .text(let file) = name[0] else { return nil }
            return try FileManager.default.attributesOfItem(atPath: url + ".external/car/photo/" + file)[.modificationDate] as? Date
        }
        let written = try fileModified()
        let start = try await store.currentHistoryToken()
        for mileage in 1...100 {
            car.mileage = Int32(mileage)
            car = try await store.insert(car)
        }
        #expect(try await storedNames() == name, "the column keeps the same name")
        #expect(try externalValueCount() == 1)
        #expect(try fileModified() == written, "the file is not written again")
        let history = try await store.history(after: start)
        #expect(history.count == 100)
        #expect(history.allSatisfy { $0.changes.allSatisfy { $0.changedAttributes == ["mileage"] } }, "\(history.first?.changes.first?.changedAttributes ?? [])")

        // Through upsert by the unique VIN, `.update(only:)` and a patch-free bulk insert, too.
        try await store.insert([car])
        try await store.insert(car, onConflict: .update(only: [\Car.photo, \Car.mileage]))
        #expect(try await storedNames() == name)

        // The same bytes in a second car: their own file each; the first car's deletion keeps the
        // second's.
        let twin = try await store.insert(Car(vin: "VIN2", make: "Ford", model: "A", photo: photo))
        let names = try await storedNames()
        #expect(names.count == 2 && names[0] != names[1])
        #expect(try externalValueCount() == 2)
        try await store.delete(car)
        #expect(try externalValueCount() == 1)
        #expect(try await store.model(Car.self, key: twin.id!)?.photo == photo)

        // A changed photo is a change: a new value, the old one gone at commit.
        var changed = twin
        changed.photo = Data([7, 7, 7])
        let before = try await store.currentHistoryToken()
        try await store.insert(changed)
        #expect(try await storedNames() != [names[1]])
        #expect(try externalValueCount() == 1)
        #expect(try await store.history(after: before).first?.changes.first?.changedAttributes == ["photo"])
        #expect(try await store.model(Car.self, key: twin.id!)?.photo == Data([7, 7, 7]))
    }

    /// A row changed outside the store to name a file outside its folder is refused with the
    /// reason: the file is neither read by a fetch nor removed by the row's delete.
    @Test func anExternalNameWithAFolderPartIsRefused() async throws {
        let url = storePath()
        let store = try Store.open(url: url, schema: GarageSchema.descriptor, migrations: GarageSchema.migrations)
        let car = try await store.insert(Car(vin: "V1", make: "Ford", model: "T", photo: Data([1, 2, 3])))
        // Photos are in `<database>.external/car/photo`: three folders up is the database's own.
        let victim = URL(fileURLWithPath: url).deletingLastPathComponent().appendingPathComponent("victim").path
        #expect(FileManager.default.createFile(atPath: victim, contents: Data("keep me".utf8)))
        try await store.transaction { store in _ = try store.database.query("UPDATE car SET photo = '../../../victim'" as SQL) }
        await #expect { _ = try await store.fetch(Car.self) } throws: { "\($0)".contains("not an external file's name") }
        await #expect { try await store.delete(car) } throws: { "\($0)".contains("not an external file's name") }
        #expect(FileManager.default.contents(atPath: victim) == Data("keep me".utf8))
        #expect(try await store.count(Car.self) == 1, "the refused delete changed nothing")
    }

    /// Insert-if-absent and `.update(only:)` on a model with an external value: the stored value
    /// stays unless the update names it, and what was written for a row that turned out to be
    /// stored is not left behind.
    @Test(arguments: StoreEngine.available)
    func conflictPoliciesKeepOrReplaceExternalValues(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let store = try Store.open(url: url, schema: GarageSchema.descriptor, migrations: GarageSchema.migrations)
        func externalValueCount() throws -> Int { try engine.externalValueCount(at: url) }
        let first = Data(repeating: 1, count: 4_000), second = Data(repeating: 2, count: 4_000)
        let inserted = try await store.insert(Car(vin: "V1", make: "Ford", model: "T", mileage: 1, photo: first), onConflict: .ignore)
        #expect(inserted.id != nil && inserted.photo == first)
        let kept = try await store.insert(Car(vin: "V1", make: "Fiat", model: "500", mileage: 2, photo: second), onConflict: .ignore)
        #expect(kept.id == inserted.id && kept.make == "Ford" && kept.photo == first)
        #expect(try externalValueCount() == 1, "the value written for the conflicting row is gone")
        let folder = url + ".external/car/photo"
        func folderModified() throws -> Date? {
            engine == .sqlite ? try FileManager.default.attributesOfItem(atPath: folder)[.modificationDate] as? Date : nil
        }
        let before = try folderModified()
        let mileage = try await store.insert(Car(vin: "V1", make: "Fiat", model: "500", mileage: 9, photo: second), onConflict: .update(only: [\Car.mileage]))
        #expect(mileage.id == inserted.id && mileage.mileage == 9 && mileage.make == "Ford" && mileage.photo == first)
        #expect(try externalValueCount() == 1)
        #expect(try folderModified() == before, "an update that leaves the photo writes no file, and removes none")
        let photo = try await store.insert(Car(vin: "V1", make: "Fiat", model: "500", mileage: 0, photo: second), onConflict: .update(only: [\Car.photo]))
        #expect(photo.photo == second && photo.mileage == 9)
        #expect(try externalValueCount() == 1)
        #expect(try await store.model(Car.self, key: inserted.id!) == photo)
        // A new row through `.update(only:)` is inserted whole.
        let fresh = try await store.insert([Car(vin: "V2", make: "VW", model: "Golf", mileage: 3, photo: first)], onConflict: .update(only: [\Car.mileage]))
        #expect(fresh[0].id != nil && fresh[0].make == "VW" && fresh[0].photo == first)
        #expect(try externalValueCount() == 2)
        #expect(try await store.model(Car.self, key: fresh[0].id!) == fresh[0])
    }

    /// Insert-if-absent of many models, some stored: each stored one comes back as stored,
    /// found by its key before its unique value as one at a time would find it, a model twice
    /// in the batch too; the new ones go in. Importing stored rows again writes no external
    /// file: the folder is not touched at all.
    @Test(arguments: StoreEngine.available)
    func insertIfAbsentOfStoredRowsReadsThemTogetherAndWritesNoFile(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let store = try Store.open(url: url, schema: GarageSchema.descriptor, migrations: GarageSchema.migrations)
        let photo = Data(repeating: 5, count: 2_000), other = Data(repeating: 6, count: 2_000)
        let stored = try await store.insert((1...3).map { Car(vin: "V\($0)", make: "Ford", model: "T\($0)", photo: $0 == 3 ? nil : photo) })
        let folder = url + ".external/car/photo"
        func folderModified() throws -> Date? {
            engine == .sqlite ? try FileManager.default.attributesOfItem(atPath: folder)[.modificationDate] as? Date : nil
        }
        let before = try folderModified()
        var byKey = Car(vin: "V9", make: "Fiat", model: "Panda", photo: other)
        byKey.id = stored[2].id
        let batch = [
            Car(vin: "V1", make: "Fiat", model: "500", photo: other), Car(vin: "V2", make: "Fiat", model: "Uno", photo: other), byKey,
            Car(vin: "V1", make: "VW", model: "Golf", photo: other),
        ]
        let again = try await store.insert(batch, onConflict: .ignore)
        #expect(again == [stored[0], stored[1], stored[2], stored[0]])
        #expect(try folderModified() == before, "no file written, and none removed")
        #expect(try engine.externalValueCount(at: url) == 2)
        let mixed = try await store.insert([Car(vin: "V4", make: "VW", model: "Polo", photo: other), Car(vin: "V2", make: "VW", model: "Up", photo: nil)], onConflict: .ignore)
        #expect(mixed[0].id != nil && mixed[0].photo == other && mixed[1] == stored[1])
        #expect(try engine.externalValueCount(at: url) == 3)
        #expect(try await store.count(Car.self) == 4)
        // A model given the next free key and a stored VIN, then one without a key, which takes
        // that key (SQLite): the first is still the stored car of its VIN, as one at a time.
        var nextKey = Car(vin: "V1", make: "Kia", model: "Rio")
        nextKey.id = (try await store.fetch(Car.self).compactMap(\.id).max() ?? 0) + 1
        let taken = try await store.insert([nextKey, Car(vin: "V10", make: "Kia", model: "Ceed")], onConflict: .ignore)
        #expect(taken[0] == stored[0], "\(taken[0])")
        #expect(taken[1].vin == "V10" && taken[1].id != nil)

        // After a stored car, the rest is looked up before it is inserted; the answers stay
        // those of one at a time. A new car takes a free key; the next model has that key and a
        // stored VIN, and one at a time it meets the new car by its key first. A new VIN twice
        // is inserted once.
        let freeKey = (try await store.fetch(Car.self).compactMap(\.id).max() ?? 0) + 10
        var newWithKey = Car(vin: "V50", make: "Seat", model: "Ibiza")
        newWithKey.id = freeKey
        var sameKey = Car(vin: "V2", make: "Seat", model: "Leon")
        sameKey.id = freeKey
        let looked = try await store.insert(
            [Car(vin: "V1", make: "Opel", model: "Corsa"), newWithKey, sameKey, Car(vin: "V60", make: "Opel", model: "Astra"), Car(vin: "V60", make: "Opel", model: "Kadett")],
            onConflict: .ignore)
        #expect(looked[0] == stored[0])
        #expect(looked[1] == newWithKey)
        #expect(looked[2] == newWithKey, "the row the model's key meets first, as one at a time")
        #expect(looked[3].model == "Astra" && looked[4] == looked[3])
        #expect(try await store.count(Car.self) == 7)
        // A long array: a stored car, 150 new ones (a chunk of them finds none stored, and the
        // look-ups stop), a stored car again, and a new one twice.
        let long =
            [Car(vin: "V1", make: "Opel", model: "Corsa")] + (0..<150).map { Car(vin: "N\($0)", make: "Saab", model: "900") }
            + [Car(vin: "V2", make: "Opel", model: "Corsa"), Car(vin: "N7", make: "Saab", model: "9000")]
        let longStored = try await store.insert(long, onConflict: .ignore)
        #expect(longStored[0] == stored[0] && longStored[151] == stored[1] && longStored[152] == longStored[8])
        #expect(Set(longStored[1...150].compactMap(\.id)).count == 150 && longStored[1...150].allSatisfy { $0.model == "900" })
        #expect(try await store.count(Car.self) == 157)
        // The same with the key the database gives a new car (the next one, on SQLite).
        if engine == .sqlite {
            var clash = Car(vin: "V2", make: "Seat", model: "Leon")
            clash.id = (try await store.fetch(Car.self).compactMap(\.id).max() ?? 0) + 1
            let given = try await store.insert([Car(vin: "V1", make: "Opel", model: "Corsa"), Car(vin: "V70", make: "Opel", model: "Vectra"), clash], onConflict: .ignore)
            #expect(given[1].id == clash.id && given[2] == given[1], "\(given[2])")
        }
    }

    /// `dateOnly`: Garage's `Mechanic.hiredOn` is a calendar day (`date` on PostgreSQL,
    /// `YYYY-MM-DD` text on SQLite). A date with a time of day is kept as its day in UTC through
    /// every write path, comes back as the start of that day, and is compared as a day; a row
    /// the database fills gets today's date.
    @Test(arguments: StoreEngine.available)
    func dateOnlyAttributesKeepTheDay(_ engine: StoreEngine) async throws {
        let store = try Store.open(url: try engine.freshURL(), schema: GarageSchema.descriptor, migrations: GarageSchema.migrations)
        let day = Date(timeIntervalSince1970: 1_796_256_000)  // 2026-12-03T00:00:00Z
        let evening = day.addingTimeInterval(22.5 * 3600), noon = day.addingTimeInterval(12 * 3600)
        func stored() async throws -> [[StoredValue]] {
            try await store.read { try $0.database.query("SELECT hired_on FROM mechanic ORDER BY id" as SQL) }
        }

        let ada = try await store.insert(Mechanic(name: "Ada", hiredOn: evening))
        #expect(ada.hiredOn == day, "the model handed back holds what a fetch reads")
        #expect(try await store.model(Mechanic.self, key: ada.id!)?.hiredOn == day)
        #expect(try await stored() == [[.text("2026-12-03")]])
        if engine == .postgres {
            #expect(try await store.read { try $0.database.query("SELECT pg_typeof(hired_on)::text FROM mechanic" as SQL) } == [[.text("date")]])
        }

        // Compared as days: the same day is equal at any hour, and not before its evening.
        #expect(try await store.count(Mechanic.self, where: #Predicate { $0.hiredOn == noon }) == 1)
        #expect(try await store.count(Mechanic.self, where: #Predicate { $0.hiredOn < evening }) == 0)
        #expect(try await store.count(Mechanic.self, where: #Predicate { $0.hiredOn <= evening }) == 1)
        #expect(try await store.count(Mechanic.self, where: #Predicate { [noon].contains($0.hiredOn) }) == 1)

        // A bulk update, an upsert through Codable (`update(only:)`) and a bulk insert.
        try await store.update(Mechanic.self, set: \.hiredOn, to: evening.addingTimeInterval(86_400))
        #expect(try await stored() == [[.text("2026-12-04")]])
        var later = ada
        later.hiredOn = evening.addingTimeInterval(2 * 86_400)
        let upserted = try await store.insert(later, onConflict: .update(only: [\Mechanic.hiredOn]))
        #expect(upserted.hiredOn == day.addingTimeInterval(2 * 86_400))
        #expect(try await stored() == [[.text("2026-12-05")]])
        let many = try await store.insert((0..<3).map { Mechanic(name: "M\($0)", hiredOn: noon.addingTimeInterval(Double($0) * 86_400)) })
        #expect(many.map(\.hiredOn) == (0..<3).map { day.addingTimeInterval(Double($0) * 86_400) })
        #expect(try await stored().dropFirst() == [[.text("2026-12-03")], [.text("2026-12-04")], [.text("2026-12-05")]])

        // A row written without it gets the database's default: today (CURRENT_DATE).
        try await store.transaction { store in _ = try store.database.query("INSERT INTO mechanic (name) VALUES ('Grace')" as SQL) }
        let today = try await store.read { try $0.database.query("SELECT count(*) FROM mechanic WHERE name = 'Grace' AND hired_on = CURRENT_DATE" as SQL) }
        #expect(today == [[.integer(1)]])
        let grace = try #require(try await store.fetch(Mechanic.self, where: #Predicate { $0.name == "Grace" }).first)
        #expect(grace.hiredOn == StoredDate.startOfDay(grace.hiredOn))
    }

    /// An encrypted attribute renamed with its column kept (`column:`), as `generate` tells
    /// (`sealed-name-changed`): the values sealed under the old name still open, with no
    /// migration step; the same rename with the column renamed too leaves them unreadable,
    /// which is why it is refused.
    @Test func anEncryptedAttributeRenamedWithItsColumnKeptStillOpens() async throws {
        let first = Shelf.first.replacingOccurrences(of: "reads: {type: Int32, default: 0}", with: "reads: {type: Int32, default: 0}\n      secret: {type: String?, encrypt: true}")
        let renamed = first.replacingOccurrences(of: "version: 1", with: "version: 2")
        func reopened(_ second: String) async throws -> (Result<StoredRecord?, any Error>, String) {
            let shelf = try Shelf(first: first, second: second)
            let path = storePath()
            let store = try Store(path: path, schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)), configuration: .init(keys: testKeys))
            _ = try await store.insertRecord(of: shelf.v1.entities[0], values: ["id": .text(Board.key(1)), "title": .text("Dune"), "secret": .text("the pin")])
            let updated = try Store(path: path, schema: shelf.v2, migrations: shelf.migrations, configuration: .init(keys: testKeys))
            let read: Result<StoredRecord?, any Error>
            do { read = .success(try await updated.records(of: shelf.v2.entities[0], limit: 1).records.first) } catch { read = .failure(error) }
            return (read, shelf.migrations[1].up)
        }
        let kept = try await reopened(renamed.replacingOccurrences(of: "secret: {type: String?, encrypt: true}", with: "hidden: {type: String?, encrypt: true, renamedFrom: secret, column: secret}"))
        #expect(try kept.0.get()?["secret"] == .text("the pin"), "records are read by column: \(kept.0)")
        #expect(!kept.1.contains("ALTER"), "nothing to migrate: the column is the same")
        let moved = try await reopened(renamed.replacingOccurrences(of: "secret: {type: String?, encrypt: true}", with: "hidden: {type: String?, encrypt: true, renamedFrom: secret}"))
        #expect(throws: (any Error).self) { try moved.0.get() }
    }

    /// Users: an email encrypted deterministically (unique, looked up by equality) and an
    /// image's bytes encrypted in external storage, on both engines; the database holds only
    /// ciphertext, and a wrong key is refused.
    @Test(arguments: StoreEngine.available)
    func encryptedValuesRoundTripAndTheDatabaseHoldsCiphertext(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let store = try Store.open(url: url, schema: UsersSchema.descriptor, migrations: UsersSchema.migrations, configuration: .init(keys: testKeys))
        let ada = try await store.insert(User(identifier: "u1", name: "Ada", email: "ada@example.com", lastSeen: Date(timeIntervalSince1970: 1_000)))
        try await store.insert(User(identifier: "u2", name: "Grace", email: "grace@example.com"))
        let found = try await store.fetch(User.self, where: #Predicate { $0.email == "ada@example.com" })
        #expect(found.map(\.identifier) == ["u1"])
        // The same email again is the same ciphertext: the unique value makes it an update.
        try await store.insert(User(identifier: "u1", name: "Ada L.", email: "ada@example.com"))
        #expect(try await store.count(User.self) == 2)
        let bytes = Data((0..<10_000).map { UInt8($0 % 256) })
        let image = try await store.insert(Image(url: URL(string: "https://example.com/ada.png")!, data: bytes, ownerID: ada.identifier))
        let second = try await store.insert(Image(url: URL(string: "https://example.com/grace.png")!, data: Data([9]), ownerID: "u2"))
        #expect(image.id != nil && second.id != nil && image.id != second.id)
        #expect(try await store.model(Image.self, key: image.id!)?.data == bytes)
        // A sealed external value written back unchanged keeps its file (compared opened).
        let sealedName = try await store.read { try $0.database.query("SELECT data FROM image WHERE id = \(value: .integer(image.id!))" as SQL) }
        try await store.insert(image)
        #expect(try await store.read { try $0.database.query("SELECT data FROM image WHERE id = \(value: .integer(image.id!))" as SQL) } == sealedName)
        if case .text(let name)? = sealedName.first?.first { #expect(!name.contains("-") || name.count == 36, "a sealed value's name carries no digest") }
        // What the database holds is ciphertext.
        let stored: [[StoredValue]]
        switch engine {
        case .sqlite: stored = try await store.read { try $0.database.query("SELECT email FROM \"user\"") }
        case .postgres: stored = try PostgresConnection(url).query("SELECT email FROM \"user\"")
        }
        #expect(
            stored.count == 2
                && !stored.contains { row in
                    if case .text(let text) = row[0] { text.contains("example.com") } else { false }
                })
        // Another key under the same id is refused before anything is read.
        #expect(throws: StoreError.self) {
            _ = try Store.open(url: url, schema: UsersSchema.descriptor, migrations: UsersSchema.migrations, configuration: .init(keys: KeySource.ring(testKeyRing(("test", 0x43)))))
        }
    }
}

/// The first `count` transactions of a stream, or fewer when `seconds` pass first.
func collect(_ stream: AsyncThrowingStream<HistoryTransaction, Error>, count: Int, within seconds: Double) async throws -> [HistoryTransaction] {
    try await withThrowingTaskGroup(of: [HistoryTransaction]?.self) { group in
        group.addTask {
            var seen: [HistoryTransaction] = []
            for try await transaction in stream {
                seen.append(transaction)
                if seen.count == count { break }
            }
            return seen
        }
        group.addTask {
            try await _Concurrency.Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return first ?? []
    }
}

/// What only the PostgreSQL side of `Store.open(url:)` does.
@Suite(.serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct StorePostgresOpeningTests {
    @Test func aPasswordNeverAppearsInAnError() throws {
        do {
            _ = try Store.open(url: "postgres://app:s3cret-Pa55@127.0.0.1:1/flights", schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
            Issue.record("a server that is not there was opened")
        } catch {
            #expect(!error.description.contains("s3cret-Pa55"), "\(error)")
            #expect(error.databaseFailure == .connectionLost)
        }
    }

    @Test func aSchemaWithoutPostgreSQLMigrationsIsRefusedWithTheFix() throws {
        let url = try StoreEngine.postgres.freshURL()
        #expect {
            // Generated before `postgres` was among the schema's dialects.
            let sqliteOnly = TodoSchema.migrations.map { migration in
                var migration = migration
                migration.dialects = [:]
                return migration
            }
            _ = try Store.open(url: url, schema: TodoSchema.descriptor, migrations: sqliteOnly)
        } throws: { error in
            "\(error)".contains("add `postgres` to the schema's `dialects:`")
        }
    }

    @Test func aSecondOpeningFindsTheDatabaseMigratedAndADatabaseNewerThanTheCodeIsRefused() async throws {
        let url = try StoreEngine.postgres.freshURL()
        let config = Store.Configuration(recordsHistory: false)
        let first = try Store.open(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: config)
        try await first.insert(airport("KSFO"))
        let second = try Store.open(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: config)
        #expect(try await second.count(Airport.self) == 1)
        #expect {
            _ = try Store.open(url: url, schema: FlightsSchema.descriptor, migrations: Array(FlightsSchema.migrations.dropLast()), configuration: config)
        } throws: { error in
            if case StoreError.databaseNewer = error { true } else { false }
        }
    }

    /// Writes of a client that is not a store (psql, another service) are not recorded, as on
    /// SQLite, and do not fail for lack of the store's session table.
    @Test func otherClientsWritesAreNotRecordedAndDoNotFail() async throws {
        let url = try StoreEngine.postgres.freshURL()
        let store = try StoreEngine.postgres.flights(at: url, history: true)
        let start = try await store.currentHistoryToken()
        try PostgresConnection(url).execute("INSERT INTO airports (icao, name) VALUES ('KBOS', 'Boston')")
        #expect(try await store.count(Airport.self) == 1)
        #expect(try await store.history(after: start).isEmpty)
    }

    /// A write whose COMMIT fails (the connection is cut just before it) leaves the store as it
    /// was: nothing of it is written, and the next writes and transactions each run in a
    /// transaction of their own (a failed COMMIT once counted the nesting level twice). With the
    /// failover handling off: with it on, the store would connect again and run it again
    /// (`CommitOutcomeTests`).
    @Test func aWriteThatFailsAtCommitLeavesTheStoreUsable() async throws {
        let url = try StoreEngine.postgres.freshURL()
        let armed = Counter()
        let configuration = Store.Configuration(
            recordsHistory: true, postgres: PostgresSettings(failoverTimeout: .zero),
            beforeCommit: {
                guard armed.value == 1 else { return }
                armed.add()
                _ = try? PostgresConnection(url).query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'schemagen store' AND datname = current_database()")
            })
        let store = try Store.open(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: configuration)
        armed.add()
        await #expect(throws: StoreError.self) {
            try await store.transaction { store in _ = try store.insert(airport("KSFO")) }
        }
        #expect(armed.value == 2, "the connection was cut before COMMIT")
        for icao in ["KLAX", "KJFK"] { try await store.insert(airport(icao)) }
        try await store.transaction { store in _ = try store.insert(airport("KBOS")) }
        struct Abort: Error {}
        let aborted = await #expect(throws: StoreError.self) {
            try await store.transaction { store in
                _ = try store.insert(airport("KORD"))
                throw Abort()
            }
        }
        #expect(aborted?.bodyError is Abort, "the body's error, carried by StoreError.body")
        #expect(try await store.fetch(Airport.self, sortBy: [SortDescriptor(\.icao)]).map(\.icao) == ["KBOS", "KJFK", "KLAX"])
    }

    /// The listener's connection is cut (its backend terminated, as a restarted server or a
    /// dropped link would): it connects again, and what was committed meanwhile arrives from
    /// the history, each transaction once.
    @Test func aCutListenerReconnectsAndMissesNothing() async throws {
        let url = try StoreEngine.postgres.freshURL()
        let watcher = try StoreEngine.postgres.flights(at: url, history: true)
        let writer = try StoreEngine.postgres.flights(at: url, history: true, author: "writer")
        let stream = try await watcher.changes(author: .only("writer"))
        try await writer.insert(airport("KSFO"))
        #expect(try await collect(stream, count: 1, within: 20).count == 1)
        let admin = try PostgresConnection(url)
        let cut = try admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'schemagen listener' AND datname = current_database()")
        #expect(!cut.isEmpty, "a listener was connected")
        try await writer.insert(airport("KLAX"))
        try await writer.insert(airport("KJFK"))
        let after = try await collect(stream, count: 2, within: 20)
        #expect(after.count == 2)
        #expect(Set(after.map(\.token)).count == 2, "no transaction twice")
        // Nothing more arrives: each was delivered once.
        #expect(try await collect(stream, count: 1, within: 1).isEmpty)
    }

    /// The store's connection is cut (its backend terminated, as a server restart or a lost
    /// link would): the call in progress fails, a transaction that was open writes nothing, and
    /// the next call connects again. With the failover handling off (`failoverTimeout` zero);
    /// with it on, the calls wait and run again (`CommitOutcomeTests`,
    /// `aTransactionThatLosesItsServerEachTimeGivesUpAfterTheTimeout`).
    @Test func aLostConnectionFailsTheCallInProgressAndTheNextCallReconnects() async throws {
        let url = try StoreEngine.postgres.freshURL()
        let store = try Store.open(
            url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations,
            configuration: .init(recordsHistory: true, postgres: PostgresSettings(failoverTimeout: .zero)))
        let start = try await store.currentHistoryToken()
        try await store.insert(airport("KSFO"))
        @Sendable func cut() throws {
            _ = try PostgresConnection(url).query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'schemagen store' AND datname = current_database()")
        }
        try cut()
        do {
            try await store.insert(airport("KLAX"))
        } catch let error as StoreError {
            #expect(error.databaseFailure == .connectionLost, "\(error)")
        }
        try await store.insert(airport("KJFK"))
        #expect(try await store.first(Airport.self, where: #Predicate { $0.icao == "KJFK" }) != nil)
        // Cut inside a transaction: its first write is rolled back with it, and the rest fails.
        await #expect(throws: (any Error).self) {
            try await store.transaction { store in
                try store.insert(airport("KBOS"))
                try cut()
                try store.insert(airport("KORD"))
            }
        }
        #expect(try await store.count(Airport.self, where: #Predicate { $0.icao == "KBOS" || $0.icao == "KORD" }) == 0)
        // The history holds exactly the committed transactions.
        let committed = try await store.count(Airport.self)
        #expect(try await store.history(after: start).count == committed)
    }
}

/// Counts from any thread (a transaction body may run again after a conflict).
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
