import ExampleModels
import Foundation
import SQLiteKit
import SchemaMetadata
import SyncCore
import TestSupport
import Testing

@testable import PersistentStoreCore
@testable import SyncClient
@testable import SyncServer
@testable import SyncStorage

/// The cases a sync engine gets wrong: edits that keep their own time, a local edit made while
/// a conflict's answer was lost, a store made again under an old device id, deleted records of
/// another user, encrypted values in the sync state.
@Suite(.serialized) struct SyncEdgeTests {
    /// A key is a UUID as the store spells it: the hand-written check agrees with Foundation's
    /// parser and its lowercase spelling, on UUIDs and on each one broken a character at a time.
    @Test func keysAreCheckedAsFoundationWouldCheckThem() {
        func foundation(_ text: String) -> Bool { UUID(uuidString: text).map { $0.uuidString.lowercased() == text } ?? false }
        var texts = ["", "not a key", String(repeating: "a", count: 36)]
        for _ in 0..<200 {
            let key = UUID().uuidString.lowercased()
            texts += [key, key.uppercased(), String(key.dropLast()), key + "0"]
            let position = key.index(key.startIndex, offsetBy: Int.random(in: 0..<36))
            for replacement in ["g", "-", "A", "0", " ", "é"] { texts.append(key.replacingCharacters(in: position...position, with: replacement)) }
        }
        for text in texts { #expect((SyncedEntity.storedKey(text) != nil) == foundation(text), "\(text)") }
    }

    static func title(_ phone: Phone) async throws -> StoredValue? {
        try await phone.store.records(of: Board.list, limit: 1).records.first?["title"]
    }

    @Test(arguments: StoreEngine.available)
    func aLaterOfflineEditKeepsItsOwnTime(_ engine: StoreEngine) async throws {
        let (_, server) = try await Board.server(engine)
        let ipad = try await Phone.open(server, "ipad-ada"), phone = try await Phone.open(server, "phone-ada")
        let list = Board.key(1)
        _ = try await ipad.store.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text("ada"), "title": .text("Home")])
        try await ipad.client.sync()
        try await phone.client.sync()
        // The iPad edits at ten, the phone at a quarter past, the iPad again at half past.
        _ = try await ipad.store.updateRecord(of: Board.list, key: [.text(list)], set: ["title": .text("ten")])
        try await _Concurrency.Task.sleep(for: .milliseconds(30))
        _ = try await phone.store.updateRecord(of: Board.list, key: [.text(list)], set: ["title": .text("quarter past")])
        try await phone.client.sync()
        try await _Concurrency.Task.sleep(for: .milliseconds(30))
        _ = try await ipad.store.updateRecord(of: Board.list, key: [.text(list)], set: ["title": .text("half past")])
        try await ipad.client.sync()
        try await Phone.eventually {
            try await phone.client.sync()
            return try await Self.title(phone) == .text("half past")
        }
        #expect(try await Self.title(ipad) == .text("half past"))
    }

    @Test(arguments: StoreEngine.available)
    func aLocalEditMadeWhileAConflictsAnswerWasLostSurvives(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let flaky = FlakyTransport(server.transport(for: "ada"))
        let ipad = try await Phone.open(server, "ipad-ada", transport: flaky), phone = try await Phone.open(server, "phone-ada")
        let list = Board.key(1)
        _ = try await ipad.store.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text("ada"), "title": .text("Home")])
        try await ipad.client.sync()
        try await phone.client.sync()
        _ = try await ipad.store.updateRecord(of: Board.list, key: [.text(list)], set: ["title": .text("old")])
        try await _Concurrency.Task.sleep(for: .milliseconds(30))
        _ = try await phone.store.updateRecord(of: Board.list, key: [.text(list)], set: ["title": .text("newer")])
        try await phone.client.sync()
        flaky.loseNextPushAnswer()
        await #expect(throws: SyncClientError.self) { try await ipad.client.sync() }
        try await _Concurrency.Task.sleep(for: .milliseconds(30))
        _ = try await ipad.store.updateRecord(of: Board.list, key: [.text(list)], set: ["title": .text("newest")])
        try await ipad.client.sync()
        #expect(try await Self.title(ipad) == .text("newest"), "the conflict's answer did not undo the later edit")
        try await Phone.eventually {
            try await phone.client.sync()
            return try await Self.title(phone) == .text("newest")
        }
        #expect(try await serverStore.records(of: Board.list, limit: 1).records.first?["title"] == .text("newest"))
    }

    @Test(arguments: StoreEngine.available)
    func aStoreMadeAgainUnderAnOldDeviceIdStillPushes(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let first = try await Phone.open(server, "ipad-ada")
        for number in 1...3 {
            _ = try await first.store.insertRecord(of: Board.list, values: ["id": .text(Board.key(number)), "owner": .text("ada"), "title": .text("List \(number)")])
            try await first.client.sync()
        }
        // The app is installed again: a new file, the same id.
        let again = try await Phone.open(server, "ipad-ada")
        _ = try await again.store.insertRecord(of: Board.list, values: ["id": .text(Board.key(9)), "owner": .text("ada"), "title": .text("After reinstall")])
        try await again.client.sync()
        #expect(try await serverStore.countRecords(of: Board.list) == 4, "the new store's list reached the server")
        #expect(try await again.client.status().pending == 0)
        #expect(try await again.store.countRecords(of: Board.list) == 4, "and it has the others")
    }

    @Test(arguments: StoreEngine.available)
    func deletedRecordsStayTheirOwners(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let ada = try await Phone.open(server, "ipad-ada")
        let list = Board.key(1), card = Board.key(2)
        _ = try await ada.store.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text("ada"), "title": .text("Private")])
        _ = try await ada.store.insertRecord(of: Board.card, values: ["id": .text(card), "title": .text("Secret plan"), "list_id": .text(list), "likes": .integer(0)])
        try await ada.client.sync()
        _ = try await serverStore.deleteRecord(of: Board.list, key: [.text(list)])  // cascades to the card
        // Bob pulls no tombstone of hers, and a push to her deleted card tells him nothing.
        let bob = Device("mac-bob", base: SyncServer.wallMilliseconds())
        let pulled = try await bob.pullAll(server, user: "bob", limit: 50)
        #expect(pulled.isEmpty, "\(pulled.map(\.key))")
        let probe = try await server.push(bob.push(1, [bob.change("Card", card, ["title": .text("x")], at: -3_600_000)]), user: "bob")
        #expect(probe.rejected.map(\.reason) == [.scope] && probe.rejected.first?.current == nil, "\(probe.rejected)")
        // Her device takes both deletes.
        try await Phone.eventually {
            try await ada.client.sync()
            return try await ada.store.countRecords(of: Board.list) == 0
        }
        #expect(try await ada.store.countRecords(of: Board.card) == 0)
    }

    @Test(arguments: StoreEngine.available)
    func aDeviceWhoseHistoryWasPrunedLearnsWhatWasDeletedMeanwhile(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let ipad = try await Phone.open(server, "ipad-ada"), phone = try await Phone.open(server, "phone-ada")
        let list = Board.key(1), card = Board.key(2)
        try await Board.homeList(list, card: card, madeOn: ipad, syncedTo: phone)
        // The server app deletes the card, and the history up to it is pruned: the phone's
        // cursor no longer holds, and it starts over.
        _ = try await serverStore.deleteRecord(of: Board.card, key: [.text(card)])
        _ = try await serverStore.updateRecord(of: Board.list, key: [.text(list)], set: ["title": .text("Home, renamed")])
        _ = try await serverStore.deleteHistory(before: try await serverStore.currentHistoryToken())
        try await Phone.eventually {
            try await phone.client.sync()
            return try await phone.store.countRecords(of: Board.card) == 0
        }
        #expect(try await phone.store.records(of: Board.list, limit: 1).records.first?["title"] == .text("Home, renamed"))
    }

    /// An app update that renames an encrypted attribute (its column kept, as `generate`
    /// requires) and adds another under its old name: the device's kept state opens under the
    /// new name. An edit made offline before the update is pushed as the device's; a value it
    /// did not change keeps its clock, not the oldest one; the new attribute takes none of it.
    @Test func anEncryptedAttributeRenamedByAnUpdateKeepsItsClocksAndEdits() async throws {
        let first = Shelf.first.replacingOccurrences(of: "reads: {type: Int32, default: 0}", with: "reads: {type: Int32, default: 0}\n      secret: {type: String?, encrypt: true}")
        let second = first.replacingOccurrences(of: "version: 1", with: "version: 2")
            .replacingOccurrences(
                of: "secret: {type: String?, encrypt: true}",
                with: "hidden: {type: String?, encrypt: true, renamedFrom: secret, column: secret}\n      secret: {type: String?, encrypt: true, column: secret_note}")
        let shelf = try Shelf(first: first, second: second)
        let v1 = Array(shelf.migrations.prefix(1)), book = shelf.v1.entities[0]
        let server = try await SyncServer(
            store: try Store(path: temporaryPath("shelf-server.sqlite"), schema: shelf.v1, migrations: v1, configuration: .init(keys: testKeys)), schema: shelf.v1)
        let path = temporaryPath("shelf-device.sqlite")
        let edited = Board.key(1), kept = Board.key(2)
        do {
            let device = try Store(path: path, schema: shelf.v1, migrations: v1, configuration: .init(keys: testKeys))
            for (key, secret) in [(edited, "the pin"), (kept, "the code")] {
                _ = try await device.insertRecord(of: book, values: ["id": .text(key), "title": .text("T"), "secret": .text(secret)])
            }
            try await SyncClient(store: device, schema: shelf.v1, device: "ipad", transport: server.transport(for: "ada")).sync()
            _ = try await device.updateRecord(of: book, key: [.text(edited)], set: ["secret": .text("the new pin")])
        }
        let device = try Store(path: path, schema: shelf.v2, migrations: shelf.migrations, configuration: .init(keys: testKeys))
        let updated = try await SyncClient(store: device, schema: shelf.v2, device: "ipad", transport: Offline())
        _ = try? await updated.sync()
        #expect(try await updated.status().pending == 1, "the offline edit, and only it")
        let states = try await device.read { try $0.syncStates(entity: "Book", keys: [edited, kept]) }
        func clock(_ key: String) throws -> SyncClock? { try SyncJSON.decode(record: Array((states[key] ?? "").utf8)).clocks["hidden"] }
        let keptClock = try #require(try clock(kept)), editedClock = try #require(try clock(edited))
        #expect(keptClock != AppUpdate.unknownAge, "its clock carried: \(states[kept] ?? "none")")
        #expect(editedClock.node == "ipad" && editedClock > keptClock, "stamped as the device's own, after: \(states[edited] ?? "none")")
        #expect(!(states[edited] ?? "").contains("the new pin") && !(states[kept] ?? "").contains("the code"), "still sealed in the state")
        // A new attribute under the name the renamed one had takes nothing of its state.
        #expect(try SyncJSON.decode(record: Array((states[kept] ?? "").utf8)).clocks["secret"].map { $0 == AppUpdate.unknownAge } ?? true)
    }

    @Test func encryptedValuesStayEncryptedInTheSyncState() async throws {
        let serverPath = temporaryPath("todo-server.sqlite"), devicePath = temporaryPath("todo-device.sqlite"), otherPath = temporaryPath("todo-other.sqlite")
        func open(_ path: String) throws -> Store {
            try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: testKeys))
        }
        let server = try await SyncServer(store: try open(serverPath), schema: TodoSchema.descriptor)
        let device = try open(devicePath)
        _ = try await device.insert(TodoItem(taskName: "call the bank", notes: "the pin is 4711"))
        let client = try await SyncClient(store: device, schema: TodoSchema.descriptor, device: "laptop", transport: server.transport(for: "ada"))
        try await client.sync()
        let other = try open(otherPath)
        try await SyncClient(store: other, schema: TodoSchema.descriptor, device: "phone", transport: server.transport(for: "ada")).sync()
        #expect(try await other.fetch(TodoItem.self).first?.notes == "the pin is 4711", "the phone reads the note")
        for path in [serverPath, devicePath, otherPath] {
            let connection = try SQLiteConnection(path: path)
            let tables = try connection.query("SELECT name FROM sqlite_master WHERE name LIKE 'schemagen_sync_%'").map { "\($0[0])" }
            #expect(tables.count >= 2, "\(path): \(tables)")
            for table in ["schemagen_sync_records", "schemagen_sync_client", "schemagen_sync_pending"] where tables.contains(where: { $0.contains(table) }) {
                let rows = try connection.query("SELECT * FROM \(table)")
                #expect(!"\(rows)".contains("4711"), "\(path): \(table) holds the note in clear")
            }
        }
    }
}
