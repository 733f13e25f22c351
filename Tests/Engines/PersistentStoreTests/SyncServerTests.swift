import Foundation
import PostgresKit
import SchemaMetadata
import SyncCore
import TestSupport
import Testing

@testable import PersistentStoreCore
@testable import SyncServer

/// The sync server on a real store, on each engine: pushes applied once and settled as the
/// schema declares, pulls paged and scoped, the server app's own writes stamped and sent.
@Suite(.serialized) struct SyncServerTests {
    @Test(arguments: StoreEngine.available)
    func pushesReachOtherDevicesOfTheUserAndOnlyThem(_ engine: StoreEngine) async throws {
        let (store, server) = try await Board.server(engine)
        let start = SyncServer.wallMilliseconds()
        let ada = Device("ipad-ada", base: start), phone = Device("phone-ada", base: start), bob = Device("mac-bob", base: start)
        let list = Board.key(1), card = Board.key(2), otherCard = Board.key(3)
        let pushed = try await server.push(
            ada.push(
                1,
                [
                    ada.change("List", list, ["owner": .text("ada"), "title": .text("Groceries")]),
                    ada.change("Card", card, ["title": .text("Milk"), "list": .text(list), "code": .text("M-1")]),
                    ada.change("Card", otherCard, ["title": .text("Eggs"), "list": .text(list)]),
                ]), user: "ada")
        #expect(pushed.acknowledged == 1 && pushed.rejected.isEmpty, "\(pushed.rejected)")
        #expect(try await store.countRecords(of: Board.card) == 2)

        // Another device of hers gets all three, in pages of two that resume where they ended.
        let pulled = try await phone.pullAll(server, user: "ada", limit: 2)
        #expect(pulled.map(\.key).sorted() == [list, card, otherCard].sorted())
        #expect(pulled.first { $0.key == card }?.record.values["title"] == .text("Milk"))
        // Bob sees none of it, and cannot write into her list or take her device's id.
        #expect(try await bob.pullAll(server, user: "bob", limit: 10).isEmpty)
        let intrusion = try await server.push(bob.push(1, [bob.change("Card", card, ["title": .text("Mine now")])]), user: "bob")
        #expect(intrusion.rejected.map(\.reason) == [.scope] && intrusion.rejected.first?.current == nil)
        let moved = try await server.push(bob.push(2, [bob.change("Card", Board.key(9), ["title": .text("Spy"), "list": .text(list)])]), user: "bob")
        #expect(moved.rejected.map(\.reason) == [.scope])
        await #expect(throws: SyncServerError.self) { try await server.push(ada.push(2, []), user: "bob") }
        #expect(try await store.countRecords(of: Board.card) == 2, "nothing of Bob's was written")
        let devices = try await server.devices()
        #expect(Set(devices.map(\.device)) == ["ipad-ada", "phone-ada", "mac-bob"] && devices.first { $0.device == "ipad-ada" }?.sequence == 1)
    }

    @Test(arguments: StoreEngine.available)
    func aRetriedPushIsAnsweredAgainAndAppliedOnce(_ engine: StoreEngine) async throws {
        let (store, server) = try await Board.server(engine)
        let start = SyncServer.wallMilliseconds()
        let ada = Device("ipad-ada", base: start)
        let list = Board.key(1), card = Board.key(2)
        _ = try await server.push(ada.push(1, [ada.change("List", list, ["owner": .text("ada"), "title": .text("Home")])]), user: "ada")
        let push = ada.push(2, [ada.change("Card", card, ["title": .text("Fix the tap"), "list": .text(list)], likes: 3)])
        let first = try await server.push(push, user: "ada")
        let before = try await store.currentHistoryToken()
        let again = try await server.push(push, user: "ada")
        #expect(again == first, "the same answer")
        #expect(try await store.currentHistoryToken() == before, "nothing written again")
        // An older push (its answer lost long ago) is acknowledged up to the newest.
        let older = try await server.push(ada.push(1, [ada.change("List", list, ["title": .text("Old")])]), user: "ada")
        #expect(older.acknowledged == 2 && older.rejected.isEmpty)
        let row = try #require(try await store.records(of: Board.card, limit: 5).records.first)
        #expect(row["likes"] == .integer(3) && row["title"] == .text("Fix the tap"))
        let lists = try await store.records(of: Board.list, limit: 5).records
        #expect(lists.first?["title"] == .text("Home"), "the older push was not applied")
    }

    @Test(arguments: StoreEngine.available)
    func conflictsSettleAsDeclared(_ engine: StoreEngine) async throws {
        let (store, server) = try await Board.server(engine)
        let start = SyncServer.wallMilliseconds()
        let ada = Device("ipad-ada", base: start), phone = Device("phone-ada", base: start)
        let list = Board.key(1), card = Board.key(2)
        _ = try await server.push(
            ada.push(1, [ada.change("List", list, ["owner": .text("ada"), "title": .text("Home")]), ada.change("Card", card, ["title": .text("Tap"), "list": .text(list)])]),
            user: "ada")
        // The phone's edit is later; the iPad's, made earlier offline, arrives after it and loses.
        let later = try await server.push(phone.push(1, [phone.change("Card", card, ["title": .text("Tap (kitchen)")], at: 20_000)]), user: "ada")
        #expect(later.rejected.isEmpty)
        let earlier = try await server.push(ada.push(2, [ada.change("Card", card, ["title": .text("Tap (bath)")], at: 10_000)]), user: "ada")
        let conflict = try #require(earlier.rejected.first)
        #expect(conflict.reason == .conflict && conflict.attributes == ["title"] && conflict.current?.values["title"] == .text("Tap (kitchen)"))
        // Counters add up across devices, and a direct write by the server app adds its part.
        _ = try await server.push(ada.push(3, [ada.change("Card", card, [:], likes: 2, at: 30_000)]), user: "ada")
        _ = try await server.push(phone.push(2, [phone.change("Card", card, [:], likes: 5, at: 31_000)]), user: "ada")
        var row = try #require(try await store.records(of: Board.card, limit: 1).records.first)
        #expect(row["likes"] == .integer(7))
        _ = try await store.updateRecord(of: Board.card, key: [.text(card)], set: ["likes": .integer(10)])
        _ = try await server.push(ada.push(4, [ada.change("Card", card, [:], likes: 4, at: 40_000)]), user: "ada")
        row = try #require(try await store.records(of: Board.card, limit: 1).records.first)
        #expect(row["likes"] == .integer(12), "2 + 5 + the server's 3, then the iPad's total of 4")
        // Server wins: a device's change over a value it had not seen stands only on the server's say.
        let setting = Board.key(5)
        _ = try await server.push(ada.push(5, [ada.change("Setting", setting, ["owner": .text("ada"), "theme": .text("dark")], at: 50_000)]), user: "ada")
        _ = try await store.updateRecord(of: Board.setting, key: [.text(setting)], set: ["theme": .text("light")])
        let unseen = try await server.push(phone.push(3, [phone.change("Setting", setting, ["theme": .text("blue")], at: 30_000)]), user: "ada")
        #expect(unseen.rejected.map(\.reason) == [.conflict] && unseen.rejected.first?.current?.values["theme"] == .text("light"))
    }

    @Test(arguments: StoreEngine.available)
    func theServerAppsOwnWritesAndDeletesReachDevices(_ engine: StoreEngine) async throws {
        let (store, server) = try await Board.server(engine)
        let start = SyncServer.wallMilliseconds()
        let ada = Device("ipad-ada", base: start)
        let list = Board.key(1), card = Board.key(2)
        _ = try await server.push(ada.push(1, [ada.change("List", list, ["owner": .text("ada"), "title": .text("Home")])]), user: "ada")
        var cursor = try await ada.pullAll(server, user: "ada", limit: 50, keepingCursor: true).cursor
        // The server app adds a card and renames the list, outside sync.
        _ = try await store.insertRecord(of: Board.card, values: ["id": .text(card), "title": .text("From the web"), "list_id": .text(list), "likes": .integer(0)])
        _ = try await store.updateRecord(of: Board.list, key: [.text(list)], set: ["title": .text("Home (shared)")])
        var pulled = try await ada.pull(server, user: "ada", after: cursor) { records in records.contains { $0.key == card } && records.contains { $0.key == list } }
        let card0 = try #require(pulled.records.last { $0.key == card })
        #expect(card0.record.values["title"] == .text("From the web") && card0.record.clocks["title"]?.node == "server")
        #expect(pulled.records.last { $0.key == list }?.record.values["title"] == .text("Home (shared)"))
        cursor = pulled.cursor
        // A device's change made before the server's loses to it.
        let stale = try await server.push(ada.push(2, [ada.change("Card", card, ["title": .text("Stale")], at: -60_000)]), user: "ada")
        #expect(stale.rejected.map(\.reason) == [.conflict])
        // Deleted by the device: gone on the server, and sent to others as a tombstone without values.
        _ = try await server.push(ada.push(3, [ada.change("Card", card, [:], deleteAt: 30_000)]), user: "ada")
        #expect(try await store.countRecords(of: Board.card) == 0)
        let phone = Device("phone-ada", base: start)
        pulled = try await phone.pull(server, user: "ada", after: cursor) { records in records.contains { $0.key == card && $0.record.isDeleted } }
        let tombstone = try #require(pulled.records.last { $0.key == card })
        #expect(tombstone.record.isDeleted && tombstone.record.values.isEmpty)
        // Deleted by the server app: a tombstone stamped by the server.
        _ = try await store.deleteRecord(of: Board.list, key: [.text(list)])
        pulled = try await phone.pull(server, user: "ada", after: pulled.cursor) { records in records.contains { $0.key == list } }
        #expect(pulled.records.last { $0.key == list }?.record.deleted?.node == "server")
    }

    /// A record the server app wrote and no read stamped yet, met by a device's older push of
    /// the same key: the server's write is stamped as made now, and stands.
    @Test(arguments: StoreEngine.available)
    func anUnstampedServerWriteStandsOverAnOlderPushOfTheSameKey(_ engine: StoreEngine) async throws {
        let (store, server) = try await Board.server(engine)
        let ada = Device("ipad-ada", base: SyncServer.wallMilliseconds())
        let list = Board.key(1)
        _ = try await store.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text("ada"), "title": .text("From the web")])
        let answer = try await server.push(ada.push(1, [ada.change("List", list, ["owner": .text("ada"), "title": .text("Older")], at: -30_000)]), user: "ada")
        #expect(answer.rejected.map(\.reason) == [.conflict], "\(answer.rejected)")
        #expect(try await store.records(of: Board.list, limit: 1).records.first?["title"] == .text("From the web"))
    }

    @Test(arguments: StoreEngine.available)
    func theServersClockNeverGoesBackAcrossARestart(_ engine: StoreEngine) async throws {
        let (store, first) = try await Board.server(engine)
        let ada = Device("ipad-ada", base: SyncServer.wallMilliseconds())
        let list = Board.key(1), card = Board.key(2)
        _ = try await first.push(ada.push(1, [ada.change("List", list, ["owner": .text("ada"), "title": .text("Home")])]), user: "ada")
        let cursor = try await ada.pullAll(first, user: "ada", limit: 50, keepingCursor: true).cursor
        // Started again on a machine whose clock went back an hour, the server app adds a card.
        let second = try await SyncServer(store: store, schema: Board.schema, wallClock: { SyncServer.wallMilliseconds() - 3_600_000 })
        _ = try await store.insertRecord(of: Board.card, values: ["id": .text(card), "title": .text("Added now"), "list_id": .text(list), "likes": .integer(0)])
        let pulled = try await ada.pull(second, user: "ada", after: cursor) { $0.contains { $0.key == card } }
        let stamp = try #require(pulled.records.last { $0.key == card }?.record.clocks["title"])
        #expect(stamp.milliseconds >= ada.base, "stamped after what the server gave before its restart: \(stamp)")
        // A change the device made half an hour ago, offline, loses to the card added now.
        let stale = try await second.push(ada.push(2, [ada.change("Card", card, ["title": .text("Half an hour ago")], at: -1_800_000)]), user: "ada")
        #expect(stale.rejected.map(\.reason) == [.conflict], "\(stale.rejected)")
        #expect(try await second.devices().map(\.device) == ["ipad-ada"], "the server's own row is no device")
    }

    @Test(arguments: StoreEngine.available)
    func aTransactionLargerThanAPageComesInParts(_ engine: StoreEngine) async throws {
        let (store, server) = try await Board.server(engine)
        let ada = Device("ipad-ada", base: SyncServer.wallMilliseconds())
        let list = Board.key(1)
        _ = try await server.push(ada.push(1, [ada.change("List", list, ["owner": .text("ada"), "title": .text("Big")])]), user: "ada")
        let start = try await ada.pullAll(server, user: "ada", limit: 50, keepingCursor: true).cursor
        // The server app adds 25 cards in one transaction; pages of 10 carry them all, once.
        try await store.transaction { store in
            for number in 2..<27 {
                _ = try store.insertRecord(of: Board.card, values: ["id": .text(Board.key(number)), "title": .text("Card \(number)"), "list_id": .text(list), "likes": .integer(0)])
            }
        }
        var keys: [String] = []
        var cursor = start
        var pages = 0
        for _ in 0..<100 where keys.count < 25 {
            let page = try await server.pull(SyncPull(device: ada.id, schemaVersion: Board.version, after: cursor, limit: 10), user: "ada")
            #expect(page.records.count <= 10)
            keys += page.records.map(\.key)
            cursor = page.next
            pages += page.records.isEmpty ? 0 : 1
            if page.records.isEmpty { try await _Concurrency.Task.sleep(for: .milliseconds(20)) }
        }
        #expect(keys.count == 25 && Set(keys).count == 25 && pages == 3, "\(pages) pages: \(keys.count) records")
    }

    @Test(arguments: StoreEngine.available)
    func whatCannotBeAppliedIsToldAndTheRestGoesOn(_ engine: StoreEngine) async throws {
        let (store, server) = try await Board.server(engine)
        let start = SyncServer.wallMilliseconds()
        let ada = Device("ipad-ada", base: start)
        let list = Board.key(1)
        var taken = ada.change("Card", Board.key(3), ["title": .text("B"), "list": .text(list), "code": .text("X")])
        taken.change.clocks["title"] = SyncClock(milliseconds: ada.base, counter: 0, node: "someone-else")
        var ahead = ada.change("Card", Board.key(6), ["title": .text("Later")])
        ahead.change.clocks["title"] = SyncClock(milliseconds: ada.base + 3_600_000, counter: 0, node: ada.id)
        let answer = try await server.push(
            ada.push(
                1,
                [
                    ada.change("List", list, ["owner": .text("ada"), "title": .text("Home")]),
                    ada.change("Card", Board.key(2), ["title": .text("A"), "list": .text(list), "code": .text("X")]),
                    ada.change("Card", Board.key(4), ["title": .text("C"), "list": .text(list), "code": .text("X")]),
                    taken,
                    ada.change("Card", "NOT-A-KEY", ["title": .text("D")]),
                    ada.change("Card", Board.key(7), ["colour": .text("red")]),
                    ada.change("Ghost", Board.key(8), ["title": .text("E")]),
                    ada.change("Card", Board.key(9), ["title": .integer(5), "list": .text(list)]),
                ]), user: "ada")
        let reasons = Dictionary(answer.rejected.map { ($0.key, $0.reason) }, uniquingKeysWith: { first, _ in first })
        #expect(reasons[Board.key(4)] == .unique, "\(answer.rejected)")
        #expect(reasons[Board.key(3)] == .invalid && reasons["NOT-A-KEY"] == .invalid)
        // A device whose clock runs an hour ahead is refused whole: it keeps its changes.
        await #expect(throws: SyncServerError.self) { _ = try await server.push(ada.push(2, [ahead]), user: "ada") }
        #expect(try await server.devices().first { $0.device == ada.id }?.sequence == 1, "the refused push counts for nothing")
        #expect(reasons[Board.key(7)] == .unknown && reasons[Board.key(8)] == .unknown)
        #expect(reasons[Board.key(9)] == .invalid, "a number for a text attribute")
        #expect(answer.acknowledged == 1 && answer.rejected.allSatisfy { $0.detail?.isEmpty == false })
        let titles = try await store.records(of: Board.card, limit: 10).records.compactMap { $0["title"] }
        #expect(titles.contains(.text("A")) && !titles.contains(.text("C")), "the rest of the push applied")
        #expect(!answer.rejected.contains { $0.detail?.contains("\"X\"") == true || $0.detail?.contains("(X)") == true }, "no other record's value told")
        await #expect(throws: SyncServerError.self) { _ = try await server.push(SyncPush(device: "ipad ada", schemaVersion: Board.version, sequence: 3, changes: []), user: "ada") }
        await #expect(throws: SyncServerError.self) { _ = try await server.push(SyncPush(device: ada.id, schemaVersion: 2, sequence: 2, changes: []), user: "ada") }
        await #expect(throws: SyncServerError.self) { _ = try await server.pull(SyncPull(device: ada.id, schemaVersion: Board.version, after: "h.x", limit: 5), user: "ada") }
        let noHistory = try Store.open(url: engine.freshURL(), schema: Board.schema, migrations: Board.migrations, configuration: .init(recordsHistory: false))
        await #expect(throws: SyncServerError.self) { _ = try await SyncServer(store: noHistory, schema: Board.schema) }
    }
}

/// One device in a test: its id, and the changes it makes, each stamped with its own clock.
struct Device {
    let id: String
    /// The wall clock when the test began: every change's clock counts from it.
    let base: Int64
    init(_ id: String, base: Int64) {
        self.id = id
        self.base = base
    }

    func push(_ sequence: Int64, _ changes: [SyncRecordChange]) -> SyncPush {
        SyncPush(device: id, schemaVersion: Board.version, sequence: sequence, changes: changes)
    }

    /// A change of `values` (and a counter's running total), stamped `at` milliseconds after the
    /// test's start.
    func change(_ entity: String, _ key: String, _ values: [String: StoredValue], likes: Int64? = nil, at offset: Int64 = 0, deleteAt: Int64? = nil) -> SyncRecordChange {
        let clock = SyncClock(milliseconds: base + offset, counter: 0, node: id)
        var change = SyncChange(values: values, clocks: values.mapValues { _ in clock })
        if let likes { change.counters["likes"] = CounterTotal(total: likes, clock: clock) }
        if let deleteAt { change.deleted = SyncClock(milliseconds: base + deleteAt, counter: 0, node: id) }
        return SyncRecordChange(entity: entity, key: key, change: change)
    }

    /// Every page from the start; the records, and with `keepingCursor` where the last ended.
    func pullAll(_ server: SyncServer, user: String, limit: Int, keepingCursor: Bool = false) async throws -> (records: [SyncRecordState], cursor: String?) {
        var cursor: String?
        var records: [SyncRecordState] = []
        for _ in 0..<100 {
            let page = try await server.pull(SyncPull(device: id, schemaVersion: Board.version, after: cursor, limit: limit), user: user)
            #expect(page.records.count <= limit)
            records += page.records
            cursor = page.next
            if !page.hasMore { break }
        }
        return (records, cursor)
    }

    /// Pulls after `cursor` until what came holds what is `wanted`, at most 50 times: on
    /// PostgreSQL a commit a moment old can come one pull later, as `Store.history` says.
    func pull(_ server: SyncServer, user: String, after cursor: String?, until wanted: ([SyncRecordState]) -> Bool) async throws -> (
        records: [SyncRecordState], cursor: String?
    ) {
        var cursor = cursor
        var records: [SyncRecordState] = []
        for _ in 0..<50 {
            let page = try await server.pull(SyncPull(device: id, schemaVersion: Board.version, after: cursor, limit: 50), user: user)
            records += page.records
            cursor = page.next
            if wanted(records) { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        return (records, cursor)
    }

    func pullAll(_ server: SyncServer, user: String, limit: Int) async throws -> [SyncRecordState] {
        try await pullAll(server, user: user, limit: limit, keepingCursor: false).records
    }
}

/// A board of lists, cards and settings, synced: lists by owner, cards through their list (with
/// a unique code and a counter), settings by owner with the server's say.
enum Board {
    static let version = 1

    static func key(_ number: Int) -> String { String(format: "00000000-0000-4000-8000-%012d", number) }

    static func server(_ engine: StoreEngine) async throws -> (Store, SyncServer) {
        let store = try Store.open(url: engine.freshURL(), schema: schema, migrations: migrations)
        return (store, try await SyncServer(store: store, schema: schema))
    }

    static func column(_ name: String, _ storage: StorageKind = .text, _ swiftType: String = "String", optional: Bool = false, key: Bool = false) -> ColumnDescriptor {
        ColumnDescriptor(property: name, column: name, storage: storage, swiftType: swiftType, isOptional: optional, isPrimaryKey: key)
    }

    static let list = EntityDescriptor(
        name: "List", table: "lists", primaryKey: ["id"], hasImplicitKey: false, columns: [column("id", .uuid, "UUID", key: true), column("owner"), column("title")],
        relationships: [RelationshipDescriptor(name: "cards", target: "Card", isToMany: true, inverse: "list", deleteRule: .cascade)], indexes: [],
        sync: SyncDescriptor(scope: .user(path: ["owner"])))
    static let card = EntityDescriptor(
        name: "Card", table: "cards", primaryKey: ["id"], hasImplicitKey: false,
        columns: [column("id", .uuid, "UUID", key: true), column("title"), column("code", optional: true), column("likes", .integer, "Int")],
        relationships: [RelationshipDescriptor(name: "list", target: "List", isOptional: true, inverse: "cards", foreignKeyColumns: ["list_id"], keyProperty: "listID")],
        indexes: [], sync: SyncDescriptor(scope: .user(path: ["list", "owner"]), counters: ["likes"]))
    static let setting = EntityDescriptor(
        name: "Setting", table: "settings", primaryKey: ["id"], hasImplicitKey: false,
        columns: [column("id", .uuid, "UUID", key: true), column("owner"), column("theme", optional: true)], relationships: [], indexes: [],
        sync: SyncDescriptor(scope: .user(path: ["owner"]), conflicts: .serverWins))
    static let schema = SchemaDescriptor(name: "Board", version: version, entities: [list, card, setting])

    static let migrations = [
        EmbeddedMigration(
            version: 1, name: "create_board", up: tables(uuid: "TEXT", integer: "INTEGER"), down: "DROP TABLE settings; DROP TABLE cards; DROP TABLE lists;",
            dialects: ["postgres": .init(up: tables(uuid: "uuid", integer: "bigint"), down: "DROP TABLE settings; DROP TABLE cards; DROP TABLE lists;")])
    ]

    static func tables(uuid: String, integer: String) -> String {
        """
        CREATE TABLE lists (id \(uuid) PRIMARY KEY, owner TEXT NOT NULL, title TEXT NOT NULL);
        CREATE TABLE cards (id \(uuid) PRIMARY KEY, title TEXT NOT NULL, code TEXT UNIQUE, likes \(integer) NOT NULL DEFAULT 0,
            list_id \(uuid) REFERENCES lists (id) ON DELETE CASCADE);
        CREATE TABLE settings (id \(uuid) PRIMARY KEY, owner TEXT NOT NULL, theme TEXT);
        """
    }
}
