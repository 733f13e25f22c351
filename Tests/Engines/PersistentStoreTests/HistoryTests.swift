import ExampleModels
import Foundation
import PersistentStorePostgres
import PersistentStoreSQLite
import SQLiteKit
import SchemaMetadata
import Testing

@testable import PersistentStoreCore

func todoStore(_ path: String? = nil, author: String? = nil, retention: HistoryRetention = .forever) throws -> Store {
    try Store.open(
        url: path ?? storePath(), schema: TodoSchema.descriptor, migrations: TodoSchema.migrations,
        configuration: .init(author: author, historyRetention: retention, keys: testKeys))
}

/// The history table, read back through the store and straight from SQLite.
@Suite struct HistoryTests {
    @Test(arguments: StoreEngine.available)
    func everyCommitAppendsOneTransactionWithItsChangesInOrder(_ engine: StoreEngine) async throws {
        let store = try todoStore(try engine.freshURL(), author: "app")
        let start = try await store.currentHistoryToken()
        let milk = TodoItem(taskName: "Buy milk")
        let bread = TodoItem(taskName: "Bake bread")
        try await store.insert([milk, bread])
        var done = milk
        done.isCompleted = true
        try await store.insert(done)
        try await store.insert(done)  // unchanged: no transaction
        try await store.delete(bread)
        let history = try await store.history(after: start)
        #expect(history.count == 3)
        #expect(history.map(\.author) == ["app", "app", "app"])
        #expect(zip(history, history.dropFirst()).allSatisfy { $0.token < $1.token && $0.date <= $1.date })
        #expect(history[0].changes.map(\.kind) == [.insert, .insert])
        #expect(history[0].changes.map(\.key) == [[.text(milk.id.uuidString.lowercased())], [.text(bread.id.uuidString.lowercased())]])
        // An insert carries its values, as an update does: a watcher need not look the row up
        // (by then it may show newer data). An encrypted attribute is listed without its value.
        let inserted = history[0].changes[0]
        #expect(inserted.changedAttributes == ["taskName", "startDate", "isCompleted", "dueDate", "notes", "priority"])
        #expect(try inserted.value(\TodoItem.taskName) == "Buy milk")
        #expect(try inserted.value(\TodoItem.isCompleted) == false)
        #expect(try inserted.value(\TodoItem.startDate).map { abs($0.timeIntervalSince(milk.startDate)) < 0.001 } == true)
        #expect(inserted.values["dueDate"] == .null && inserted.values["notes"] == nil, "\(inserted.values)")
        #expect(
            history[1].changes == [
                HistoryChange(
                    entity: "TodoItem", kind: .update, key: [.text(milk.id.uuidString.lowercased())],
                    changedAttributes: ["isCompleted"], values: ["isCompleted": .integer(1)])
            ])
        #expect(try history[1].changes[0].value(\TodoItem.isCompleted) == true)
        #expect(try history[1].changes[0].key(as: UUID.self) == milk.id)
        let removal = try #require(history[2].changes.first)
        #expect(removal.kind == .delete)
        #expect(try removal.tombstone(\TodoItem.taskName) == "Bake bread", "taskName is preserved on deletion")
        #expect(removal.tombstone?["startDate"] == nil, "only preserved attributes are kept")
        #expect(try await store.history(after: history[1].token).map(\.token) == [history[2].token])
        #expect(try await store.currentHistoryToken() == history[2].token)
    }

    @Test(arguments: StoreEngine.available)
    func aRolledBackTransactionLeavesNoHistory(_ engine: StoreEngine) async throws {
        let store = try todoStore(try engine.freshURL())
        let start = try await store.currentHistoryToken()
        struct Abort: Error {}
        let aborted = await #expect(throws: StoreError.self) {
            try await store.transaction { store in
                try store.insert(TodoItem(taskName: "never"))
                throw Abort()
            }
        }
        #expect(aborted?.bodyError is Abort, "the body's error, carried by StoreError.body")
        #expect(try await store.history(after: start).isEmpty)
        #expect(try await store.count(TodoItem.self) == 0)
    }

    /// A write that fails inside a transaction is undone on its own (a savepoint): its rows and
    /// its history go, the rest of the transaction commits.
    @Test(arguments: StoreEngine.available)
    func aFailedWriteInsideATransactionLeavesNoTrace(_ engine: StoreEngine) async throws {
        let store = try engine.flightsStore()
        let start = try await store.currentHistoryToken()
        try await store.transaction { store in
            try store.insert(airport("KSFO"))
            // The second flight points at no airport: the foreign key fails after the first
            // flight of the same call was written.
            #expect(throws: StoreError.self) {
                try store.insert([flight("UA1", origin: nil), flight("UA2", origin: 999_999)])
            }
            try store.insert(airport("KBOS"))
        }
        #expect(try await store.fetch(Airport.self).map(\.icao) == ["KSFO", "KBOS"])
        #expect(try await store.count(Flight.self) == 0, "the failed call is undone entirely")
        let history = try await store.history(after: start)
        #expect(history.count == 1)
        #expect(history[0].entities == ["Airport"])
        #expect(history[0].changes.count == 2, "\(history[0].changes)")
    }

    @Test(arguments: StoreEngine.available)
    func preservedValuesLandInTombstones(_ engine: StoreEngine) async throws {
        let store = try Store.open(url: try engine.freshURL(), schema: UsersSchema.descriptor, migrations: UsersSchema.migrations, configuration: .init(keys: testKeys))
        let seen = Date(timeIntervalSince1970: 1_790_000_000.125)
        try await store.insert(User(identifier: "u1", name: "Ada", lastSeen: seen))
        try await store.insert(User(identifier: "u2", name: "Grace"))
        let start = try await store.currentHistoryToken()
        try await store.delete(User.self, where: #Predicate { _ in true })
        let changes = try #require(try await store.history(after: start).first).changes
        #expect(changes.map(\.kind) == [.delete, .delete])
        let ada = try #require(changes.first { $0.key == [.text("u1")] })
        #expect(try ada.tombstone(\User.lastSeen) == seen)
        let grace = try #require(changes.first { $0.key == [.text("u2")] })
        #expect(try grace.tombstone(\User.lastSeen) == nil)
        #expect(grace.tombstone?["lastSeen"] == .null, "a preserved nil is kept as null")
    }

    @Test(arguments: StoreEngine.available)
    func cascadesAndLinksAreRecorded(_ engine: StoreEngine) async throws {
        // Garage turns history off in its schema; the configuration turns it back on.
        let store = try Store.open(
            url: try engine.freshURL(), schema: GarageSchema.descriptor, migrations: GarageSchema.migrations,
            configuration: .init(recordsHistory: true))
        let owner = try await store.insert(Person(name: "Ada"))
        let car = try await store.insert(Car(vin: "V1", make: "Ford", model: "T", ownerID: owner.id))
        let mechanic = try await store.insert(Mechanic(name: "Grace"))
        let start = try await store.currentHistoryToken()
        try await store.link(Car.mechanics, car, mechanic)
        let link = try #require(try await store.history(after: start).first)
        #expect(Set(link.entities) == ["Car", "Mechanic"])
        #expect(link.changes.contains(HistoryChange(entity: "Car", kind: .update, key: [.integer(car.id!)], changedAttributes: ["mechanics"])))
        #expect(link.changes.contains(HistoryChange(entity: "Mechanic", kind: .update, key: [.integer(mechanic.id!)], changedAttributes: ["cars"])))
        try await store.insert(ServiceVisit(day: Date(timeIntervalSince1970: 1_790_000_000), notes: "oil", carID: car.id!))
        let beforeDelete = try await store.currentHistoryToken()
        try await store.delete(car)
        let deletion = try #require(try await store.history(after: beforeDelete).first)
        // The car, its visits (delete rule cascade) and its link rows (the database's ON DELETE
        // CASCADE), which change the mechanic's side of the link.
        #expect(Set(deletion.entities) == ["Car", "ServiceVisit", "Mechanic"], "\(deletion.changes)")
        #expect(deletion.changes.contains { $0.entity == "Car" && $0.kind == .delete && $0.key == [.integer(car.id!)] })
        #expect(deletion.changes.contains { $0.entity == "ServiceVisit" && $0.kind == .delete })
        #expect(deletion.changes.contains(HistoryChange(entity: "Mechanic", kind: .update, key: [.integer(mechanic.id!)], changedAttributes: ["cars"])))
    }

    /// Where SQLite lacks the pre-update hook, temporary triggers record the same history: the
    /// same work through both gives the same changes.
    @Test func theTriggerFallbackRecordsWhatTheHookRecords() async throws {
        func run(triggers: Bool) async throws -> [[HistoryChange]] {
            var configuration = Store.Configuration(recordsHistory: true, keys: testKeys)
            configuration.recordsWithTriggers = triggers
            let garage = try Store(path: storePath(), schema: GarageSchema.descriptor, migrations: GarageSchema.migrations, configuration: configuration)
            let owner = try await garage.insert(Person(name: "Ada", birthYear: 1815))
            var car = try await garage.insert(Car(vin: "V1", make: "Ford", model: "T", price: Decimal(string: "1234.5"), photo: Data([0, 1, 2]), ownerID: owner.id))
            let mechanic = try await garage.insert(Mechanic(name: "Grace"))
            try await garage.link(Car.mechanics, car, mechanic)
            car.mileage = 12
            car.color = Color(red: 0.1, green: 0.2, blue: 0.30000000000000004)
            try await garage.insert(car)
            // A new model whose unique value is taken: the plain insert fails, the upsert updates.
            car = try await garage.insert(Car(vin: "V1", make: "Ford", model: "A", photo: Data([0, 1, 2]), ownerID: owner.id))
            try await garage.transaction { store in
                try store.insert(Person(name: "Kept"))
                #expect(throws: StoreError.self) { try store.insert(Car(vin: "V2", make: "X", model: "Y", ownerID: 999_999)) }
            }
            try await garage.delete(car)
            let users = try Store(path: storePath(), schema: UsersSchema.descriptor, migrations: UsersSchema.migrations, configuration: configuration)
            try await users.insert(User(identifier: "o'hara", name: "O'Hara", lastSeen: Date(timeIntervalSince1970: 1.5)))
            try await users.delete(User.self, where: #Predicate { _ in true })
            return try await garage.history().map(\.changes) + users.history().map(\.changes)
        }
        let viaHook = try await run(triggers: false)
        let viaTriggers = try await run(triggers: true)
        #expect(viaHook.count == 10)
        #expect(viaHook == viaTriggers)
    }

    @Test func historyCanBeTurnedOffAndCostsNothingThen() async throws {
        let store = try Store(path: storePath(), schema: GarageSchema.descriptor, migrations: GarageSchema.migrations)
        #expect(await store.recordsHistory == false)
        try await store.insert(Person(name: "Ada"))
        await #expect(throws: StoreError.self) { try await store.history() }
        let connection = try SQLiteConnection(path: await store.path!)
        #expect(try connection.query("SELECT count(*) FROM sqlite_master WHERE name = 'schemagen_history'") == [[.integer(0)]])
    }

    @Test func bulkInsertsOfConsecutiveKeysAreStoredAsRuns() async throws {
        let store = try flightsStore()
        let start = try await store.currentHistoryToken()
        try await store.insert((0..<1000).map { airport(String(format: "K%03d", $0)) })
        let raw = try SQLiteConnection(path: await store.path!).query("SELECT changes FROM schemagen_history WHERE token > ?", [.integer(start.value)])
        guard case .text(let text)? = raw.first?.first else {
            Issue.record("no history row")
            return
        }
        #expect(text.count < 120, "1000 consecutive keys are one run: \(text)")
        let changes = try #require(try await store.history(after: start).first).changes
        #expect(changes.count == 1000)
        #expect(changes.map(\.kind).allSatisfy { $0 == .insert })
        let keys = changes.compactMap { change -> Int64? in if case .integer(let key) = change.key.first { return key } else { return nil } }
        #expect(keys == Array(keys.first!...(keys.first! + 999)))
    }

    @Test(arguments: StoreEngine.available)
    func pruningByTokenAndRetention(_ engine: StoreEngine) async throws {
        let path = try engine.freshURL()
        let store = try todoStore(path)
        for index in 0..<10 { try await store.insert(TodoItem(taskName: "item \(index)")) }
        let all = try await store.history()
        #expect(all.count == 10)
        let removed = try await store.deleteHistory(before: all[4].token)
        #expect(removed == 4)
        #expect(try await store.history().map(\.token) == Array(all[4...].map(\.token)))
        // A reader behind the pruned point is told so, instead of silently missing changes.
        await #expect(throws: StoreError.self) { try await store.history(after: all[1].token) }
        #expect(try await store.history(after: all[3].token).count == 6)

        let kept = try todoStore(path, retention: .transactions(3))
        for index in 0..<5 { try await kept.insert(TodoItem(taskName: "more \(index)")) }
        #expect(try await kept.history().count == 3)

        let aged = try todoStore(path, retention: .age(.milliseconds(200)))
        try await _Concurrency.Task.sleep(for: .milliseconds(300))
        try await aged.insert(TodoItem(taskName: "fresh"))
        #expect(try await aged.history().count == 1, "only the fresh transaction is younger than 200 ms")
    }

    @Test(arguments: StoreEngine.available)
    func historyWithBlobsRealsAndNullsRoundTrips(_ engine: StoreEngine) throws {
        let changes: [ChangeRecorder.Change] = [
            .init(
                entity: 0, kind: .update, key: .values([.text("k\"1\n")]),
                payload: [
                    (0, .blob([0, 1, 254, 255])), (1, .real(1)), (2, .real(-.infinity)), (3, .null), (4, .integer(-9_223_372_036_854_775_808)),
                ]),
            .init(entity: 0, kind: .delete, key: .values([.integer(7), .text("b")]), payload: []),
            .init(entity: 0, kind: .delete, key: .values([.integer(8), .text("c")]), payload: []),
        ]
        let text = HistoryCodec.encode(changes, entities: ["E"], names: ["a", "b", "c", "d", "e"])
        let decoded = try HistoryCodec.decode(text)
        #expect(
            decoded == [
                HistoryChange(
                    entity: "E", kind: .update, key: [.text("k\"1\n")], changedAttributes: ["a", "b", "c", "d", "e"],
                    values: ["a": .blob([0, 1, 254, 255]), "b": .real(1), "c": .real(-.infinity), "d": .null, "e": .integer(-9_223_372_036_854_775_808)]),
                HistoryChange(entity: "E", kind: .delete, key: [.integer(7), .text("b")], tombstone: [:]),
                HistoryChange(entity: "E", kind: .delete, key: [.integer(8), .text("c")], tombstone: [:]),
            ])
    }

    /// `history: {insertValues: false}` (Flights, a catalogue loaded in bulk) lists inserts by
    /// key only, in ranges, as before.
    @Test func aSchemaCanListInsertsByKeyOnly() async throws {
        #expect(!FlightsSchema.descriptor.recordsInsertValues && TodoSchema.descriptor.recordsInsertValues)
        let path = storePath()
        let store = try flightsStore(path)
        let start = try await store.currentHistoryToken()
        try await store.insert((1...5).map { airport("K\($0)AA") })
        let changes = try #require(try await store.history(after: start).first?.changes)
        #expect(changes.map(\.kind) == Array(repeating: .insert, count: 5) && changes.allSatisfy(\.values.isEmpty))
        let raw = try SQLiteConnection(path: path).query("SELECT changes FROM schemagen_history ORDER BY token DESC LIMIT 1")
        #expect(raw == [[.text("[{\"entity\":\"Airport\",\"kind\":\"insert\",\"keys\":[{\"from\":1,\"through\":5}]}]")]])
    }
}
