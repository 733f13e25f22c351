import Foundation
import SchemaMetadata
import SyncCore
import TestSupport
import Testing

@testable import PersistentStoreCore
@testable import SyncClient
@testable import SyncServer

/// Records that move from one user's scope to another's by a write of the server app: the
/// devices of the user they left remove them and what hangs under them, the devices of the user
/// they reach get them whole, and nobody else hears of them.
@Suite(.serialized) struct SyncScopeTests {
    @Test(arguments: StoreEngine.available)
    func aListGivenToAnotherOwnerLeavesTheFirstOwnersDevicesWithItsCards(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let ipad = try await Phone.open(server, "ipad-ada"), phone = try await Phone.open(server, "phone-ada")
        let mac = try await Phone.open(server, "mac-bob", transport: server.transport(for: "bob"))
        let given = Board.key(1), kept = Board.key(2), cards = [Board.key(11), Board.key(12)], keptCard = Board.key(13)
        _ = try await ipad.store.insertRecord(of: Board.list, values: ["id": .text(given), "owner": .text("ada"), "title": .text("Garden")])
        _ = try await ipad.store.insertRecord(of: Board.list, values: ["id": .text(kept), "owner": .text("ada"), "title": .text("Home")])
        for (card, list) in [(cards[0], given), (cards[1], given), (keptCard, kept)] {
            _ = try await ipad.store.insertRecord(of: Board.card, values: ["id": .text(card), "title": .text("Card \(card.suffix(2))"), "list_id": .text(list), "likes": .integer(0)])
        }
        try await ipad.client.sync()
        try await Phone.eventually {
            try await phone.client.sync()
            return try await phone.store.countRecords(of: Board.card) == 3
        }
        try await mac.client.sync()
        let carol = Device("mac-carol", base: SyncServer.wallMilliseconds())
        let carolsCursor = try await carol.pullAll(server, user: "carol", limit: 50, keepingCursor: true).cursor

        // The server app gives the garden list to Bob; Ada's phone, offline, edits one of its
        // cards and adds one (which the server never hears of).
        _ = try await serverStore.updateRecord(of: Board.list, key: [.text(given)], set: ["owner": .text("bob")])
        _ = try await phone.store.updateRecord(of: Board.card, key: [.text(cards[0])], set: ["title": .text("Prune the roses")])
        let madeOffline = Board.key(14)
        _ = try await phone.store.insertRecord(of: Board.card, values: ["id": .text(madeOffline), "title": .text("Water"), "list_id": .text(given), "likes": .integer(0)])

        var told: [SyncEvent] = []
        try await Phone.eventually {
            told += try await ipad.client.sync().events
            return try await ipad.store.countRecords(of: Board.list) == 1
        }
        #expect(try await Board.snapshot(ipad.store).keys.sorted() == [kept, keptCard].sorted(), "the home list and its card stay")
        let removed = told.compactMap { event -> String? in if case .removedFromScope(_, let key) = event { key } else { nil } }
        #expect(removed.sorted() == ([given] + cards).sorted(), "\(told)")
        #expect(try await ipad.client.status().pending == 0, "nothing of the removal is pushed")

        // The phone reads the move after the iPad stamped it: it is told all the same, and its
        // edit, refused by the server, goes with the card.
        let phoneReport = try await phone.client.sync()
        #expect(try await Board.snapshot(phone.store).keys.sorted() == [kept, keptCard].sorted())
        #expect(phoneReport.settledOtherwise.contains(.removedFromScope(entity: "Card", key: cards[0])), "\(phoneReport.events)")
        #expect(phoneReport.settledOtherwise.contains(.removedFromScope(entity: "Card", key: madeOffline)), "\(phoneReport.events)")
        #expect(try await phone.client.status().pending == 0)

        // Bob gets the list with both cards, though no card changed; Carol hears of none of it.
        try await Phone.eventually {
            try await mac.client.sync()
            return try await mac.store.countRecords(of: Board.card) == 2
        }
        #expect(try await Board.snapshot(mac.store).keys.sorted() == ([given] + cards).sorted())
        let carolsPages = try await carol.pull(server, user: "carol", after: carolsCursor) { _ in false }
        #expect(carolsPages.records.isEmpty, "\(carolsPages.records.map(\.key))")
        #expect(try await serverStore.countRecords(of: Board.card) == 3, "the server keeps every card")

        // A card moved by the server app from Ada's home list to Bob's list leaves Ada alone.
        _ = try await serverStore.updateRecord(of: Board.card, key: [.text(keptCard)], set: ["list_id": .text(given)])
        try await Phone.eventually {
            try await ipad.client.sync()
            return try await ipad.store.countRecords(of: Board.card) == 0
        }
        #expect(try await ipad.store.countRecords(of: Board.list) == 1)
        try await Phone.eventually {
            try await mac.client.sync()
            return try await mac.store.countRecords(of: Board.card) == 3
        }

        // Given back, the list comes back to Ada's devices with its cards, and leaves Bob's.
        _ = try await serverStore.updateRecord(of: Board.list, key: [.text(given)], set: ["owner": .text("ada")])
        try await Phone.eventually {
            try await phone.client.sync()
            return try await Board.snapshot(phone.store) == Board.snapshot(serverStore)
        }
        try await Phone.eventually {
            try await mac.client.sync()
            return try await mac.store.countRecords(of: Board.list) == 0
        }
        #expect(try await mac.store.countRecords(of: Board.card) == 0)
    }

    /// A card moved offline into a list given away meanwhile: the server refuses the move and
    /// sends the card back as it stands, so the device keeps it where the server does.
    @Test(arguments: StoreEngine.available)
    func aCardMovedOfflineIntoAListGivenAwayComesBack(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let phone = try await Phone.open(server, "phone-ada")
        let home = Board.key(1), garden = Board.key(2), card = Board.key(11), thrown = Board.key(12)
        _ = try await phone.store.insertRecord(of: Board.list, values: ["id": .text(home), "owner": .text("ada"), "title": .text("Home")])
        _ = try await phone.store.insertRecord(of: Board.list, values: ["id": .text(garden), "owner": .text("ada"), "title": .text("Garden")])
        for key in [card, thrown] {
            _ = try await phone.store.insertRecord(of: Board.card, values: ["id": .text(key), "title": .text("Tap"), "list_id": .text(home), "likes": .integer(0)])
        }
        try await phone.client.sync()
        _ = try await serverStore.updateRecord(of: Board.list, key: [.text(garden)], set: ["owner": .text("bob")])
        let bob = Device("mac-bob", base: SyncServer.wallMilliseconds())
        let bobsCursor = try await bob.pullAll(server, user: "bob", limit: 50, keepingCursor: true).cursor
        _ = try await phone.store.updateRecord(of: Board.card, key: [.text(card)], set: ["list_id": .text(garden), "title": .text("Tap (fixed)")])
        // Another card moved there and deleted, in one change: the delete stands, the move not.
        _ = try await phone.store.updateRecord(of: Board.card, key: [.text(thrown)], set: ["list_id": .text(garden)])
        _ = try await phone.store.deleteRecord(of: Board.card, key: [.text(thrown)])
        var told: [SyncEvent] = []
        try await Phone.eventually {
            told += try await phone.client.sync().events
            return try await phone.store.countRecords(of: Board.list) == 1
        }
        let held = try await Board.snapshot(phone.store)
        #expect(held[card]?["list_id"] == .text(home) && held[card]?["title"] == .text("Tap (fixed)"), "the move is refused, the edit stands: \(String(describing: held[card]))")
        #expect(try await Board.snapshot(serverStore)[card]?["title"] == .text("Tap (fixed)"))
        #expect(told.contains { if case .rejected(let rejection) = $0 { rejection.key == card && rejection.reason == .scope } else { false } }, "\(told)")
        #expect(!told.contains(.removedFromScope(entity: "Card", key: card)), "\(told)")
        #expect(try await serverStore.countRecords(of: Board.card) == 1, "the thrown card is deleted")
        let bobHears = try await bob.pull(server, user: "bob", after: bobsCursor) { _ in false }
        #expect(!bobHears.records.contains { $0.key == thrown || $0.key == card }, "\(bobHears.records.map(\.key))")
    }

    /// A card deleted on the server, then its list given away, read a page at a time: the card's
    /// delete is told to nobody (its list is Bob's by then), and it goes with the list.
    @Test(arguments: StoreEngine.available)
    func aCardDeletedBeforeItsListWasGivenAwayGoesWithTheList(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let ipad = try await Phone.open(server, "ipad-ada")
        let list = Board.key(1), card = Board.key(11)
        _ = try await ipad.store.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text("ada"), "title": .text("Garden")])
        _ = try await ipad.store.insertRecord(of: Board.card, values: ["id": .text(card), "title": .text("Roses"), "list_id": .text(list), "likes": .integer(0)])
        try await ipad.client.sync()
        _ = try await serverStore.deleteRecord(of: Board.card, key: [.text(card)])
        _ = try await serverStore.updateRecord(of: Board.list, key: [.text(list)], set: ["owner": .text("bob")])
        let paged = try await SyncClient(store: ipad.store, schema: Board.schema, device: "ipad-ada", transport: server.transport(for: "ada"), pageSize: 1)
        try await Phone.eventually {
            try await paged.sync()
            return try await ipad.store.countRecords(of: Board.list) == 0
        }
        #expect(try await ipad.store.countRecords(of: Board.card) == 0)
    }

    /// A list given on again: its first owner hears of the first move late, without the card the
    /// second owner added since, and nothing of the second move. An owner spelled as an
    /// uppercase UUID is told too.
    @Test(arguments: StoreEngine.available)
    func aSecondMoveIsNotToldToTheFirstOwnerAndUUIDOwnersAreTold(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let ada = UUID().uuidString, list = Board.key(1), card = Board.key(11), bobsCard = Board.key(12)
        let ipad = try await Phone.open(server, "ipad-ada", transport: server.transport(for: ada))
        _ = try await ipad.store.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text(ada), "title": .text("Garden")])
        _ = try await ipad.store.insertRecord(of: Board.card, values: ["id": .text(card), "title": .text("Roses"), "list_id": .text(list), "likes": .integer(0)])
        try await ipad.client.sync()
        let watcher = Device("phone-ada", base: SyncServer.wallMilliseconds())
        var cursor = try await watcher.pullAll(server, user: ada, limit: 50, keepingCursor: true).cursor
        // Another device of hers, offline across both moves.
        let tablet = Device("tablet-ada", base: SyncServer.wallMilliseconds())
        let tabletCursor = try await tablet.pullAll(server, user: ada, limit: 50, keepingCursor: true).cursor
        _ = try await serverStore.updateRecord(of: Board.list, key: [.text(list)], set: ["owner": .text("bob")])
        try await Phone.eventually {
            try await ipad.client.sync()
            return try await ipad.store.countRecords(of: Board.list) == 0
        }
        // Bob, who now owns the list, adds a card to it before Ada's phone hears of the move.
        let bob = Device("mac-bob", base: SyncServer.wallMilliseconds())
        let added = try await server.push(bob.push(1, [bob.change("Card", bobsCard, ["title": .text("Bob's"), "list": .text(list)], at: 5)]), user: "bob")
        #expect(added.rejected.isEmpty, "\(added.rejected)")
        let first = try await watcher.pull(server, user: ada, after: cursor) { $0.count >= 2 }
        #expect(first.records.filter(\.removed).map(\.key).sorted() == [list, card].sorted(), "\(first.records)")
        cursor = first.cursor
        _ = try await serverStore.updateRecord(of: Board.list, key: [.text(list)], set: ["owner": .text("carol")])
        let carol = Device("mac-carol", base: SyncServer.wallMilliseconds())
        _ = try await carol.pull(server, user: "carol", after: nil) { records in records.contains { $0.key == bobsCard } }
        let second = try await watcher.pull(server, user: ada, after: cursor) { _ in false }
        #expect(second.records.isEmpty, "\(second.records.map(\.key))")
        let late = try await tablet.pull(server, user: ada, after: tabletCursor) { _ in false }
        #expect(late.records.filter(\.removed).map(\.key).sorted() == [list, card].sorted() && late.records.allSatisfy(\.removed), "\(late.records)")
    }

    /// A list moved with more cards than a move may bring into a page: each device pulls
    /// everything again instead, Bob's gets every card, Ada's lets go of them.
    @Test(arguments: StoreEngine.available)
    func aListWithMoreCardsThanAPageBringsMovesByAPullFromTheStart(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let ipad = try await Phone.open(server, "ipad-ada"), mac = try await Phone.open(server, "mac-bob", transport: server.transport(for: "bob"))
        let list = Board.key(1), count = PullReader.movedWithLimit + 1
        _ = try await serverStore.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text("ada"), "title": .text("Big")])
        try await serverStore.transaction { store in
            try store.insertRecords(
                of: Board.card, rows: (0..<count).map { ["id": .text(Board.key(100 + $0)), "title": .text("Card \($0)"), "list_id": .text(list), "likes": .integer(0)] })
        }
        try await Phone.eventually {
            try await ipad.client.sync()
            return try await ipad.store.countRecords(of: Board.card) == count
        }
        try await mac.client.sync()
        _ = try await serverStore.updateRecord(of: Board.list, key: [.text(list)], set: ["owner": .text("bob")])
        // Pages of one record: no page holds more than that and what a move may bring.
        let sizes = PullWatch(server.transport(for: "ada"))
        let small = try await SyncClient(store: ipad.store, schema: Board.schema, device: "ipad-ada", transport: sizes, pageSize: 1)
        try await Phone.eventually {
            try await small.sync()
            return try await ipad.store.countRecords(of: Board.card) == 0
        }
        #expect(try await ipad.store.countRecords(of: Board.list) == 0)
        #expect(sizes.largest <= 1 + PullReader.movedWithLimit, "\(sizes.largest)")
        try await Phone.eventually {
            try await mac.client.sync()
            return try await mac.store.countRecords(of: Board.card) == count
        }
        #expect(try await mac.store.countRecords(of: Board.list) == 1)
    }

    /// A list given away and deleted before its first owner's device pulled: the device removes
    /// it and its cards all the same.
    @Test(arguments: StoreEngine.available)
    func aListGivenAwayThenDeletedLeavesTheFirstOwnersDevice(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let ipad = try await Phone.open(server, "ipad-ada"), mac = try await Phone.open(server, "mac-bob", transport: server.transport(for: "bob"))
        let list = Board.key(1), card = Board.key(11)
        _ = try await ipad.store.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text("ada"), "title": .text("Garden")])
        _ = try await ipad.store.insertRecord(of: Board.card, values: ["id": .text(card), "title": .text("Roses"), "list_id": .text(list), "likes": .integer(0)])
        try await ipad.client.sync()
        _ = try await serverStore.updateRecord(of: Board.list, key: [.text(list)], set: ["owner": .text("bob")])
        // Bob's device reads the move first (and stamps it); then the server app deletes the list.
        try await Phone.eventually {
            try await mac.client.sync()
            return try await mac.store.countRecords(of: Board.card) == 1
        }
        _ = try await serverStore.deleteRecord(of: Board.list, key: [.text(list)])
        var told: [SyncEvent] = []
        try await Phone.eventually {
            told += try await ipad.client.sync().events
            return try await ipad.store.countRecords(of: Board.list) == 0
        }
        #expect(try await ipad.store.countRecords(of: Board.card) == 0)
        #expect(told.contains(.removedFromScope(entity: "List", key: list)) && told.contains(.removedFromScope(entity: "Card", key: card)), "\(told)")
        try await Phone.eventually {
            try await mac.client.sync()
            return try await mac.store.countRecords(of: Board.list) == 0
        }
    }

    /// Scopes three steps deep: a space given away takes its lanes and their tasks with it, on
    /// both sides.
    @Test(arguments: StoreEngine.available)
    func aSpaceGivenAwayTakesItsLanesAndTheirTasks(_ engine: StoreEngine) async throws {
        let serverStore = try Store.open(url: engine.freshURL(), schema: Spaces.schema, migrations: Spaces.migrations)
        let server = try await SyncServer(store: serverStore, schema: Spaces.schema)
        func device(_ id: String, _ user: String) async throws -> (Store, SyncClient) {
            let store = try Store(path: storePath(), schema: Spaces.schema, migrations: Spaces.migrations)
            return (store, try await SyncClient(store: store, schema: Spaces.schema, device: id, transport: server.transport(for: user)))
        }
        let (adas, ada) = try await device("ipad-ada", "ada"), (bobs, bob) = try await device("mac-bob", "bob")
        let space = Board.key(1), lane = Board.key(2), tasks = [Board.key(3), Board.key(4)]
        _ = try await adas.insertRecord(of: Spaces.space, values: ["id": .text(space), "owner": .text("ada")])
        _ = try await adas.insertRecord(of: Spaces.lane, values: ["id": .text(lane), "space_id": .text(space)])
        for task in tasks { _ = try await adas.insertRecord(of: Spaces.task, values: ["id": .text(task), "lane_id": .text(lane)]) }
        try await ada.sync()
        _ = try await serverStore.updateRecord(of: Spaces.space, key: [.text(space)], set: ["owner": .text("bob")])
        var told: [SyncEvent] = []
        try await Phone.eventually {
            told += try await ada.sync().events
            return try await adas.countRecords(of: Spaces.space) == 0
        }
        #expect(try await adas.countRecords(of: Spaces.lane) == 0)
        #expect(try await adas.countRecords(of: Spaces.task) == 0)
        #expect(told.filter { if case .removedFromScope = $0 { true } else { false } }.count == 4, "\(told)")
        try await Phone.eventually {
            try await bob.sync()
            return try await bobs.countRecords(of: Spaces.task) == 2
        }
        #expect(try await bobs.countRecords(of: Spaces.lane) == 1)
        #expect(try await bobs.countRecords(of: Spaces.space) == 1)
    }
}

extension SyncScopeTests {
    /// A lane moved between two of its owner's spaces: her devices get the lane, not its tasks
    /// again (they hold them); given to another owner, the lane comes to that owner with them.
    @Test(arguments: StoreEngine.available)
    func aMoveBetweenTwoParentsOfOneUserBringsNothingUnderIt(_ engine: StoreEngine) async throws {
        let serverStore = try Store.open(url: engine.freshURL(), schema: Spaces.schema, migrations: Spaces.migrations)
        let server = try await SyncServer(store: serverStore, schema: Spaces.schema)
        let (home, work, lane) = (Board.key(1), Board.key(2), Board.key(3))
        for space in [home, work] { _ = try await serverStore.insertRecord(of: Spaces.space, values: ["id": .text(space), "owner": .text("ada")]) }
        _ = try await serverStore.insertRecord(of: Spaces.lane, values: ["id": .text(lane), "space_id": .text(home)])
        for task in 4...5 { _ = try await serverStore.insertRecord(of: Spaces.task, values: ["id": .text(Board.key(task)), "lane_id": .text(lane)]) }
        let ipad = Device("ipad-ada", base: SyncServer.wallMilliseconds())
        let cursor = try await ipad.pullAll(server, user: "ada", limit: 50, keepingCursor: true).cursor
        _ = try await serverStore.updateRecord(of: Spaces.lane, key: [.text(lane)], set: ["space_id": .text(work)])
        let moved = try await ipad.pull(server, user: "ada", after: cursor) { records in records.contains { $0.key == lane } }
        #expect(moved.records.map(\.key) == [lane], "\(moved.records.map(\.key))")
        _ = try await serverStore.updateRecord(of: Spaces.space, key: [.text(work)], set: ["owner": .text("bob")])
        let mac = Device("mac-bob", base: SyncServer.wallMilliseconds())
        let bobs = try await mac.pullAll(server, user: "bob", limit: 50, keepingCursor: true)
        #expect(bobs.records.filter { !$0.removed }.map(\.key).sorted() == [work, lane, Board.key(4), Board.key(5)].sorted(), "\(bobs.records.map(\.key))")
    }
}

/// Spaces of lanes of tasks, each synced through the one above it to the space's owner.
enum Spaces {
    static func column(_ name: String, key: Bool = false) -> ColumnDescriptor {
        ColumnDescriptor(property: name, column: name, storage: key ? .uuid : .text, swiftType: key ? "UUID" : "String", isOptional: false, isPrimaryKey: key)
    }

    static func link(_ name: String, to target: String) -> RelationshipDescriptor {
        RelationshipDescriptor(name: name, target: target, foreignKeyColumns: [name + "_id"], keyProperty: name + "ID")
    }

    static let space = EntityDescriptor(
        name: "Space", table: "spaces", primaryKey: ["id"], hasImplicitKey: false, columns: [column("id", key: true), column("owner")], relationships: [], indexes: [],
        sync: SyncDescriptor(scope: .user(path: ["owner"])))
    static let lane = EntityDescriptor(
        name: "Lane", table: "lanes", primaryKey: ["id"], hasImplicitKey: false, columns: [column("id", key: true)], relationships: [link("space", to: "Space")],
        indexes: [], sync: SyncDescriptor(scope: .user(path: ["space", "owner"])))
    static let task = EntityDescriptor(
        name: "Task", table: "tasks", primaryKey: ["id"], hasImplicitKey: false, columns: [column("id", key: true)], relationships: [link("lane", to: "Lane")],
        indexes: [], sync: SyncDescriptor(scope: .user(path: ["lane", "space", "owner"])))
    static let schema = SchemaDescriptor(name: "Spaces", version: 1, entities: [space, lane, task])

    static func tables(_ uuid: String) -> String {
        """
        CREATE TABLE spaces (id \(uuid) PRIMARY KEY, owner TEXT NOT NULL);
        CREATE TABLE lanes (id \(uuid) PRIMARY KEY, space_id \(uuid) NOT NULL REFERENCES spaces (id));
        CREATE TABLE tasks (id \(uuid) PRIMARY KEY, lane_id \(uuid) NOT NULL REFERENCES lanes (id));
        """
    }

    static let migrations = [
        EmbeddedMigration(
            version: 1, name: "create_spaces", up: tables("TEXT"), down: "DROP TABLE tasks; DROP TABLE lanes; DROP TABLE spaces;",
            dialects: ["postgres": .init(up: tables("uuid"), down: "DROP TABLE tasks; DROP TABLE lanes; DROP TABLE spaces;")])
    ]
}
