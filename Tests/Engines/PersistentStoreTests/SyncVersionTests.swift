import CodeGeneration
import Foundation
import MigrationFiles
import MigrationPlanner
import MigratorCore
import MigratorPostgres
import PostgresKit
import RelationalModel
import SchemaKit
import SchemaMetadata
import SyncCore
import TestSupport
import Testing

@testable import PersistentStoreCore
@testable import SyncClient
@testable import SyncServer
@testable import SyncStorage

/// Devices on two schema versions syncing with one PostgreSQL server while the online migration
/// between them is expanded: a rename, a type change (the table copied) and a new attribute.
/// Each device pushes and pulls in its own version's shape, through its version's views; one
/// device's app is updated mid-test, with an edit it had not pushed, and nothing is reset or lost.
@Suite(.serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct SyncVersionTests {
    @Test func devicesOnTwoVersionsSyncThroughTheirViewsAndOneIsUpdated() async throws {
        let url = try #require(PostgresServer.shared, "the PostgreSQL test server did not start").createDatabase()
        let shelf = try Shelf()
        #expect(shelf.v2.entities[0].columns.first { $0.property == "name" }?.renamedFrom == "title")
        let v1Server = try Store.open(url: url, schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)))
        var server = try await SyncServer(versions: [.init(store: v1Server, schema: shelf.v1)])
        let ipadPath = storePath()
        var ipad = try await Shelf.Device.open(path: ipadPath, "ipad-ada", schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)), server: server)
        let dune = Board.key(1), old = Board.key(2), emma = Board.key(3), kafka = Board.key(4), ulysses = Board.key(5), persuasion = Board.key(6)
        _ = try await ipad.store.insertRecord(of: shelf.v1.entities[0], values: ["id": .text(dune), "title": .text("Dune"), "pages": .integer(412), "rating": .integer(4)])
        _ = try await ipad.store.insertRecord(of: shelf.v1.entities[0], values: ["id": .text(old), "title": .text("Old"), "pages": .integer(10), "rating": .integer(1)])
        try await ipad.client.sync()

        // Version 2 is expanded; the server now serves both versions, each through its views.
        let v2Server = try Store.open(url: url, schema: shelf.v2, migrations: shelf.migrations)
        server = try await SyncServer(versions: [.init(store: v1Server, schema: shelf.v1), .init(store: v2Server, schema: shelf.v2)])
        #expect(await server.versions == [1, 2])
        ipad = try await ipad.reconnected(to: server)
        let phone = try await Shelf.Device.open(path: storePath(), "phone-ada", schema: shelf.v2, migrations: shelf.migrations, server: server)
        try await phone.client.sync()
        var book = try #require(try await phone.book(dune))
        #expect(book["name"] == .text("Dune") && book["pages"] == .integer(412) && book["rating"] == .real(4) && book["genre"] == .text("none"), "\(book)")
        // The server app writes the book through version 2 (its state there was taken from
        // version 1's): the phone gets the write.
        _ = try await v2Server.updateRecord(of: shelf.v2.entities[0], key: [.text(dune)], set: ["genre": .text("classic")])
        try await phone.syncs(until: dune, "genre", is: .text("classic"))

        // The phone (version 2) renames and rates; the iPad (version 1) sees it under its names.
        _ = try await phone.store.updateRecord(of: shelf.v2.entities[0], key: [.text(dune)], set: ["name": .text("Dune Messiah"), "rating": .real(4.5), "genre": .text("sf")])
        try await phone.client.sync()
        // The iPad deletes a book; the phone loses it too.
        _ = try await ipad.store.deleteRecord(of: shelf.v1.entities[0], key: [.text(old)])
        try await ipad.syncs(until: dune, "title", is: .text("Dune Messiah"))
        try await Phone.eventually {
            try await phone.client.sync()
            return try await phone.book(old) == nil
        }

        // A counter incremented on each version counts each increment once on both.
        _ = try await ipad.store.updateRecord(of: shelf.v1.entities[0], key: [.text(dune)], set: ["reads": .integer(3)])
        try await ipad.client.sync()
        try await phone.syncs(until: dune, "reads", is: .integer(3))
        _ = try await phone.store.updateRecord(of: shelf.v2.entities[0], key: [.text(dune)], set: ["reads": .integer(5)])
        try await phone.client.sync()
        try await ipad.syncs(until: dune, "reads", is: .integer(5))

        // A book only version 1 has read: the server keeps no version-2 state of it yet.
        _ = try await ipad.store.insertRecord(of: shelf.v1.entities[0], values: ["id": .text(kafka), "title": .text("Kafka"), "pages": .integer(200), "rating": .integer(3)])
        _ = try await ipad.store.insertRecord(of: shelf.v1.entities[0], values: ["id": .text(ulysses), "title": .text("Ulysses"), "pages": .integer(730), "rating": .integer(2)])
        _ = try await ipad.store.insertRecord(of: shelf.v1.entities[0], values: ["id": .text(persuasion), "title": .text("Persuasion"), "pages": .integer(250), "rating": .integer(2)])
        try await ipad.client.sync()
        try await Phone.eventually {
            try await phone.client.sync()
            let both = try await (phone.book(ulysses), phone.book(persuasion))
            return both.0 != nil && both.1 != nil
        }
        // Offline, the iPad rates a book, and a sync stamps the change but cannot push it.
        _ = try await ipad.store.updateRecord(of: shelf.v1.entities[0], key: [.text(persuasion)], set: ["rating": .integer(4)])
        let offline = try await SyncClient(store: ipad.store, schema: shelf.v1, device: ipad.id, transport: Offline())
        _ = try? await offline.sync()
        #expect(try await offline.status().pending == 1, "stamped, not pushed")
        // Offline, the iPad edits two titles and adds a book; then its app is updated to
        // version 2: its file migrates as the store opens, and the client carries its state.
        _ = try await ipad.store.updateRecord(of: shelf.v1.entities[0], key: [.text(dune)], set: ["title": .text("Dune (1965)"), "reads": .integer(6)])
        _ = try await ipad.store.updateRecord(of: shelf.v1.entities[0], key: [.text(kafka)], set: ["title": .text("The Trial"), "rating": .integer(5)])
        _ = try await ipad.store.deleteRecord(of: shelf.v1.entities[0], key: [.text(ulysses)])
        _ = try await ipad.store.insertRecord(of: shelf.v1.entities[0], values: ["id": .text(emma), "title": .text("Emma"), "pages": .integer(474), "rating": .integer(5)])
        // The server's state is in the tables' schema, which a contract keeps, not among a
        // version's views; one state per version a record was read in.
        let connection = try PostgresConnection(url)
        let places = try connection.query(
            "SELECT DISTINCT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname LIKE 'schemagen_sync%' AND c.relkind = 'r'")
        #expect(places == [[.text("public")]])
        #expect(try connection.query("SELECT DISTINCT schema_version FROM schemagen_sync_records ORDER BY 1") == [[.integer(1)], [.integer(2)]])
        ipad = try await Shelf.Device.open(path: ipadPath, "ipad-ada", schema: shelf.v2, migrations: shelf.migrations, server: server)
        #expect(try await ipad.client.status().pending == 5, "the unpushed edits, the delete and the new book are pending")
        try await ipad.client.sync()
        book = try #require(try await ipad.book(dune))
        #expect(book["name"] == .text("Dune (1965)"), "its own edit stands: \(book)")
        #expect(book["reads"] == .integer(6), "3 and 1 read on the iPad, 2 on the phone, each counted once: \(book)")
        #expect(book["genre"] == .text("sf") && book["rating"] == .real(4.5), "what is new in version 2 came from the server, not the device's defaults: \(book)")
        #expect(try await ipad.book(emma)?["name"] == .text("Emma"))
        #expect(try await ipad.book(kafka)?["name"] == .text("The Trial"), "its edit is later than the clocks version 1 kept, which version 2 takes")
        // Ratings the update widened to Double: the edits made before it stand, stamped or not;
        // Dune's, which the iPad did not change, is the server's (4.5 above).
        #expect(try await ipad.book(kafka)?["rating"] == .real(5), "an edit the update converted, not stamped before it")
        #expect(try await ipad.book(persuasion)?["rating"] == .real(4), "an edit the update converted, stamped and not pushed")
        try await Phone.eventually {
            try await phone.client.sync()
            let arrived = try await phone.book(emma) != nil, gone = try await phone.book(ulysses) == nil
            return try await phone.book(dune)?["name"] == .text("Dune (1965)") && arrived && gone
        }
        #expect(try await phone.book(kafka)?["rating"] == .real(5))
        #expect(try await phone.book(persuasion)?["rating"] == .real(4))
        let row = try await v2Server.records(of: shelf.v2.entities[0], where: [RecordFilter("id", .equals(.text(dune)))], limit: 1).records.first
        #expect(row?["genre"] == .text("sf") && row?["name"] == .text("Dune (1965)") && row?["reads"] == .integer(6), "\(String(describing: row))")
        #expect(try await Shelf.snapshot(ipad.store, shelf.v2) == Shelf.snapshot(phone.store, shelf.v2))
        #expect(try await Shelf.snapshot(ipad.store, shelf.v2) == Shelf.snapshot(v2Server, shelf.v2))
        #expect(Set(try await server.devices().map(\.schemaVersion)) == [2], "both devices are on version 2 now")

        // No device is left on version 1: complete contracts, and version 2 alone syncs on.
        try Migrator(database: PostgresMigrationDatabase(connection), schema: "Shelf", scripts: shelf.scripts).complete()
        server = try await SyncServer(versions: [.init(store: v2Server, schema: shelf.v2)])
        await #expect(throws: SyncServerError.self) { try await server.pull(SyncPull(device: "tablet-1", schemaVersion: 1, after: nil, limit: 10), user: "ada") }
        ipad = try await ipad.reconnected(to: server)
        _ = try await ipad.store.updateRecord(of: shelf.v2.entities[0], key: [.text(emma)], set: ["genre": .text("classic")])
        try await ipad.client.sync()
        try await Phone.eventually {
            try await phone.reconnected(to: server).client.sync()
            return try await phone.book(emma)?["genre"] == .text("classic")
        }
    }

    /// An entity renamed between the versions: each device syncs under its version's entity
    /// name, and the one updated carries its records, pending changes and counters across.
    @Test func anEntityRenamedBetweenTheVersionsSyncsUnderBothNames() async throws {
        let url = try #require(PostgresServer.shared, "the PostgreSQL test server did not start").createDatabase()
        let shelf = try Shelf(second: Shelf.renamingTheEntity)
        #expect(shelf.v2.entities[0].name == "Volume" && shelf.v2.entities[0].renamedFrom == "Book")
        let v1Server = try Store.open(url: url, schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)))
        let ipadPath = storePath()
        var ipad = try await Shelf.Device.open(
            path: ipadPath, "ipad-ada", schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)), server: try await SyncServer(versions: [.init(store: v1Server, schema: shelf.v1)]))
        let dune = Board.key(1), emma = Board.key(3)
        _ = try await ipad.store.insertRecord(of: shelf.v1.entities[0], values: ["id": .text(dune), "title": .text("Dune"), "pages": .integer(412)])
        try await ipad.client.sync()

        let v2Server = try Store.open(url: url, schema: shelf.v2, migrations: shelf.migrations)
        let server = try await SyncServer(versions: [.init(store: v1Server, schema: shelf.v1), .init(store: v2Server, schema: shelf.v2)])
        ipad = try await ipad.reconnected(to: server)
        let phone = try await Shelf.Device.open(path: storePath(), "phone-ada", schema: shelf.v2, migrations: shelf.migrations, server: server)
        try await phone.client.sync()
        #expect(try await phone.book(dune)?["title"] == .text("Dune"))
        _ = try await phone.store.updateRecord(of: shelf.v2.entities[0], key: [.text(dune)], set: ["pages": .integer(500), "reads": .integer(2)])
        try await phone.client.sync()
        try await ipad.syncs(until: dune, "pages", is: .integer(500))
        // The history records each version's writes under its own entity name.
        _ = try await ipad.store.updateRecord(of: shelf.v1.entities[0], key: [.text(dune)], set: ["pages": .integer(501)])
        try await ipad.client.sync()
        try await phone.syncs(until: dune, "pages", is: .integer(501))
        // Offline on version 1, then updated: an edit, a read and a new book, all pending.
        _ = try await ipad.store.updateRecord(of: shelf.v1.entities[0], key: [.text(dune)], set: ["title": .text("Dune (1965)"), "reads": .integer(3)])
        _ = try await ipad.store.insertRecord(of: shelf.v1.entities[0], values: ["id": .text(emma), "title": .text("Emma")])
        ipad = try await Shelf.Device.open(path: ipadPath, "ipad-ada", schema: shelf.v2, migrations: shelf.migrations, server: server)
        #expect(try await ipad.client.status().pending == 2)
        try await ipad.client.sync()
        try await Phone.eventually {
            try await phone.client.sync()
            let arrived = try await phone.book(emma) != nil, title = try await phone.book(dune)?["title"]
            return arrived && title == .text("Dune (1965)")
        }
        #expect(try await phone.book(dune)?["reads"] == .integer(3), "2 on the phone, 1 on the iPad")
        #expect(try await Shelf.snapshot(ipad.store, shelf.v2) == Shelf.snapshot(phone.store, shelf.v2))
        #expect(try await Shelf.snapshot(ipad.store, shelf.v2) == Shelf.snapshot(v2Server, shelf.v2))
    }
}

extension SyncVersionTests {
    /// A table split between the versions: version 2 keeps each book's blurb in an entity of its
    /// own, keyed as its book. Each version's writes reach the other's shape, and a device whose
    /// file splits as its app is updated ends with the server's blurbs, not its copies.
    /// The owner attribute renamed between the versions: a book the server app gives away
    /// through version 1 leaves its first owner's version-2 device.
    @Test func aBookGivenAwayThroughTheOtherVersionLeavesItsOwnersDevice() async throws {
        let url = try #require(PostgresServer.shared, "the PostgreSQL test server did not start").createDatabase()
        let owned = Shelf.first.replacingOccurrences(of: "      title: String\n", with: "      title: String\n      owner: String\n")
            .replacingOccurrences(of: "Book: {scope: all", with: "Book: {scope: owner == $user")
        let renamed = owned.replacingOccurrences(of: "version: 1", with: "version: 2")
            .replacingOccurrences(of: "      owner: String\n", with: "      keeper: {type: String, renamedFrom: owner}\n")
            .replacingOccurrences(of: "scope: owner == $user", with: "scope: keeper == $user")
        let shelf = try Shelf(first: owned, second: renamed)
        let v1Server = try Store.open(url: url, schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)))
        let v2Server = try Store.open(url: url, schema: shelf.v2, migrations: shelf.migrations)
        let server = try await SyncServer(versions: [.init(store: v1Server, schema: shelf.v1), .init(store: v2Server, schema: shelf.v2)])
        let phone = try await Shelf.Device.open(path: storePath(), "phone-ada", schema: shelf.v2, migrations: shelf.migrations, server: server)
        let dune = Board.key(1)
        _ = try await phone.store.insertRecord(of: shelf.v2.entities[0], values: ["id": .text(dune), "title": .text("Dune"), "keeper": .text("ada")])
        try await phone.client.sync()
        _ = try await v1Server.updateRecord(of: shelf.v1.entities[0], key: [.text(dune)], set: ["owner": .text("bob")])
        try await Phone.eventually {
            try await phone.client.sync()
            return try await phone.book(dune) == nil
        }
    }

    @Test func aTableSplitBetweenTheVersionsSyncsInBothShapes() async throws {
        let url = try #require(PostgresServer.shared, "the PostgreSQL test server did not start").createDatabase()
        let shelf = try Shelf(first: Shelf.beforeTheSplit, second: Shelf.split)
        let (book1, book2) = (shelf.v1.entities[0], shelf.v2.entities[0])
        let blurb = try #require(shelf.v2.entities.first { $0.name == "Blurb" })
        let v1Server = try Store.open(url: url, schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)))
        let ipadPath = storePath()
        var ipad = try await Shelf.Device.open(
            path: ipadPath, "ipad-ada", schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)), server: try await SyncServer(versions: [.init(store: v1Server, schema: shelf.v1)]))
        let dune = Board.key(1), emma = Board.key(3), kafka = Board.key(4)
        _ = try await ipad.store.insertRecord(of: book1, values: ["id": .text(dune), "title": .text("Dune"), "blurb": .text("spice"), "stars": .integer(1)])
        _ = try await ipad.store.insertRecord(of: book1, values: ["id": .text(emma), "title": .text("Emma")])
        try await ipad.client.sync()

        let v2Server = try Store.open(url: url, schema: shelf.v2, migrations: shelf.migrations)
        let server = try await SyncServer(versions: [.init(store: v1Server, schema: shelf.v1), .init(store: v2Server, schema: shelf.v2)])
        ipad = try await ipad.reconnected(to: server)
        let phone = try await Shelf.Device.open(path: storePath(), "phone-ada", schema: shelf.v2, migrations: shelf.migrations, server: server)
        try await phone.client.sync()
        func text(_ store: Store, _ key: String) async throws -> StoredValue? {
            try await store.records(of: blurb, where: [RecordFilter("id", .equals(.text(key)))], limit: 1).records.first?["text"]
        }
        #expect(try await text(phone.store, dune) == .text("spice"))
        #expect(try await text(phone.store, emma) ?? .null == .null, "no blurb (a row for its stars)")

        // The phone edits a blurb: the iPad reads it as its book's. The iPad gives a book a
        // blurb: the phone gets a blurb record.
        _ = try await phone.store.updateRecord(of: blurb, key: [.text(dune)], set: ["text": .text("sand")])
        try await phone.client.sync()
        try await ipad.syncs(until: dune, "blurb", is: .text("sand"))
        _ = try await ipad.store.updateRecord(of: book1, key: [.text(emma)], set: ["blurb": .text("novel")])
        try await ipad.client.sync()
        try await Phone.eventually {
            try await phone.client.sync()
            return try await text(phone.store, emma) == .text("novel")
        }

        // Offline, the iPad edits a title, gives Dune a second star and edits Emma's blurb (both
        // moved to the blurb by the split), and adds a book with a blurb, while the phone edits
        // Dune's blurb again and gives it two more stars. Then the iPad's app is updated: its
        // file splits to the same keys.
        _ = try await ipad.store.updateRecord(of: book1, key: [.text(dune)], set: ["title": .text("Dune (1965)"), "stars": .integer(2)])
        _ = try await ipad.store.updateRecord(of: book1, key: [.text(emma)], set: ["blurb": .text("a novel")])
        _ = try await ipad.store.insertRecord(of: book1, values: ["id": .text(kafka), "title": .text("Kafka"), "blurb": .text("trial"), "stars": .integer(2)])
        _ = try await phone.store.updateRecord(of: blurb, key: [.text(dune)], set: ["text": .text("dunes"), "stars": .integer(3)])
        try await phone.client.sync()
        ipad = try await Shelf.Device.open(path: ipadPath, "ipad-ada", schema: shelf.v2, migrations: shelf.migrations, server: server)
        try await ipad.client.sync()
        #expect(try await text(ipad.store, dune) == .text("dunes"), "the phone's later edit stands, not the copy the split made")
        #expect(try await ipad.book(dune)?["title"] == .text("Dune (1965)"))
        #expect(try await text(ipad.store, kafka) == .text("trial"), "the blurb of the book made offline is the device's")
        let stars = try await ipad.store.records(of: blurb, where: [RecordFilter("id", .equals(.text(kafka)))], limit: 1).records.first?["stars"]
        #expect(stars == .integer(2), "its stars, counted offline before the update, are the device's to push: \(String(describing: stars))")
        func starsOf(_ store: Store, _ key: String) async throws -> StoredValue? {
            try await store.records(of: blurb, where: [RecordFilter("id", .equals(.text(key)))], limit: 1).records.first?["stars"]
        }
        try await Phone.eventually {
            try await ipad.client.sync()
            return try await starsOf(ipad.store, dune) == .integer(4)
        }
        #expect(try await text(ipad.store, emma) == .text("a novel"), "an edit made offline to a field the split moved is pushed")
        try await Phone.eventually {
            try await phone.client.sync()
            let title = try await phone.book(dune)?["title"], trial = try await text(phone.store, kafka), novel = try await text(phone.store, emma)
            return title == .text("Dune (1965)") && trial == .text("trial") && novel == .text("a novel")
        }
        #expect(try await starsOf(phone.store, dune) == .integer(4), "each star counted once: the iPad's two, one made before its update, and the phone's two")
        let oldDune = try await v1Server.records(of: book1, where: [RecordFilter("id", .equals(.text(dune)))], limit: 1).records.first
        #expect(oldDune?["stars"] == .integer(4), "\(String(describing: oldDune))")
        for entity in [book2, blurb] {
            let held = try await Shelf.snapshot(ipad.store, entity)
            #expect(try await held == Shelf.snapshot(phone.store, entity), "\(entity.name)")
            #expect(try await held == Shelf.snapshot(v2Server, entity), "\(entity.name)")
        }
        let old = try await v1Server.records(of: book1, where: [RecordFilter("id", .equals(.text(kafka)))], limit: 1).records.first
        #expect(old?["blurb"] == .text("trial"), "version 1 reads the blurb as its book's: \(String(describing: old))")
    }

    /// A split whose source the same version renames (`Volume`, was `Book`): `movedFrom` names
    /// it as the new version does, and both the server's seeds and a device find its states
    /// under the earlier name. (Only the states: `generate` refuses to plan such a version,
    /// `split-of-renamed-table`, so it never reaches a database.)
    @Test func aSplitOfARenamedEntityFindsItsSourceUnderItsEarlierName() throws {
        let shelf = try Shelf(first: Shelf.beforeTheSplit, second: Shelf.splitRenamingTheBook)
        let newer = Dictionary(uniqueKeysWithValues: shelf.v2.entities.compactMap(SyncedEntity.init).map { ($0.name, $0) })
        let older = Dictionary(uniqueKeysWithValues: shelf.v1.entities.compactMap(SyncedEntity.init).map { ($0.name, $0) })
        let blurb = try #require(newer["Blurb"])
        // A device tries the name `movedFrom` gives, then the one it was renamed from.
        let onDevice = try #require(blurb.splitSource(in: newer))
        #expect(onDevice.entity == "Volume" && onDevice.formerly == "Book" && onDevice.fields == ["text": "blurb", "stars": "stars"])
        #expect(blurb.splitSource(in: newer, earlier: older)?.entity == "Book")
        // Renamed a version before, its `renamedFrom` kept: the earlier version's own name.
        let volumes = Shelf.beforeTheSplit.replacingOccurrences(of: "  Book:\n    attributes:", with: "  Volume:\n    renamedFrom: Book\n    attributes:")
            .replacingOccurrences(of: "  Book: {scope: all", with: "  Volume: {scope: all")
        let renamedBefore = try Shelf(first: volumes, second: Shelf.splitRenamingTheBook)
        let earlierVolume = Dictionary(uniqueKeysWithValues: renamedBefore.v1.entities.compactMap(SyncedEntity.init).map { ($0.name, $0) })
        #expect(blurb.splitSource(in: newer, earlier: earlierVolume)?.entity == "Volume")
        let clock = try NodeClock(node: "server", wallClock: { 1 })
        let forward = try #require(VersionSeeds(this: shelf.v2, other: shelf.v1, clock: clock))
        #expect(forward.parts["Blurb"]?.map { $0.entity } == ["Book"] && forward.seedsOnlyParts(of: blurb))
        let back = try #require(VersionSeeds(this: shelf.v1, other: shelf.v2, clock: clock))
        #expect(back.parts["Book"]?.first?.fields == ["blurb": "text", "stars": "stars"])
        #expect(back.links["Book"]?.entity == "Volume")
    }

    /// A new attribute or entity under the name another was renamed from is new: the server
    /// keeps no state of the older version's for it (the renamed one takes that state).
    @Test func aNewAttributeUnderARenamedOnesNameTakesNoStateOfIt() throws {
        let clock = try NodeClock(node: "server", wallClock: { 1 })
        let reused = Shelf.second.replacingOccurrences(of: "      pages:", with: "      title: String?\n      pages:")
        let shelf = try Shelf(first: Shelf.first, second: reused)
        let forward = try #require(VersionSeeds(this: shelf.v2, other: shelf.v1, clock: clock)).links["Book"]?.fields
        #expect(forward?["name"] == "title" && forward?["title"] == nil, "\(String(describing: forward))")
        let back = try #require(VersionSeeds(this: shelf.v1, other: shelf.v2, clock: clock)).links["Book"]?.fields
        #expect(back?["title"] == "name", "\(String(describing: back))")
        // An entity renamed, and a new one under its old name.
        let volumes = Shelf.renamingTheEntity.replacingOccurrences(
            of: "sync:\n", with: "  Book:\n    attributes:\n      id: {type: UUID, primaryKey: true, default: uuid}\nsync:\n  Book: {scope: all}\n")
        let renamed = try Shelf(first: Shelf.first, second: volumes)
        let seeds = try #require(VersionSeeds(this: renamed.v2, other: renamed.v1, clock: clock))
        #expect(seeds.links["Volume"]?.entity == "Book" && seeds.links["Book"] == nil, "\(seeds.links.keys.sorted())")
        #expect(try #require(VersionSeeds(this: renamed.v1, other: renamed.v2, clock: clock)).links["Book"]?.entity == "Volume")
    }

    /// A book without a blurb has no part: a version-2 device gives it one, and the part stands
    /// (its source's state is not taken for a part deleted), reaching version 1 as the book's.
    @Test func aPartMadeForABookThatHadNoneStands() async throws {
        let url = try #require(PostgresServer.shared, "the PostgreSQL test server did not start").createDatabase()
        let shelf = try Shelf(first: Shelf.beforeTheTextSplit, second: Shelf.textSplit)
        let book1 = shelf.v1.entities[0]
        let blurb = try #require(shelf.v2.entities.first { $0.name == "Blurb" })
        let v1Server = try Store.open(url: url, schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)))
        let emma = Board.key(3)
        _ = try await v1Server.insertRecord(of: book1, values: ["id": .text(emma), "title": .text("Emma")])
        let v2Server = try Store.open(url: url, schema: shelf.v2, migrations: shelf.migrations)
        let server = try await SyncServer(versions: [.init(store: v1Server, schema: shelf.v1), .init(store: v2Server, schema: shelf.v2)])
        let ipad = try await Shelf.Device.open(path: storePath(), "ipad-ada", schema: shelf.v1, migrations: Array(shelf.migrations.prefix(1)), server: server)
        try await ipad.client.sync()
        let phone = try await Shelf.Device.open(path: storePath(), "phone-ada", schema: shelf.v2, migrations: shelf.migrations, server: server)
        try await phone.client.sync()
        #expect(try await phone.store.countRecords(of: blurb) == 0, "no part for a book without a blurb")
        _ = try await phone.store.insertRecord(of: blurb, values: ["id": .text(emma), "text": .text("novel"), "book_id": .text(emma)])
        try await phone.client.sync()
        try await phone.client.sync()
        #expect(try await phone.store.countRecords(of: blurb) == 1, "the phone keeps its blurb")
        #expect(try await v2Server.records(of: blurb, limit: 5).records.first?["text"] == .text("novel"))
        try await Phone.eventually {
            try await ipad.client.sync()
            return try await ipad.book(emma)?["blurb"] == .text("novel")
        }
    }
}

/// A transport whose every request fails, as a device without a network meets it.
struct Offline: SyncTransport {
    func push(_ push: SyncPush) async throws -> SyncPushAnswer { throw SyncTransportError.unreachable("offline") }
    func pull(_ pull: SyncPull) async throws -> SyncPullAnswer { throw SyncTransportError.unreachable("offline") }
}

/// A shelf of books, version 1 and version 2: `title` renamed `name`, `rating` an Int32 made a
/// Double (the table is copied on PostgreSQL, rebuilt on SQLite), `genre` new with a default.
struct Shelf {
    let v1: SchemaDescriptor
    let v2: SchemaDescriptor
    /// Both versions' migrations, SQLite and PostgreSQL, as generated code embeds them.
    let migrations: [EmbeddedMigration]
    /// The PostgreSQL migrations with their contract phase, as `migrate complete` reads them.
    let scripts: [MigrationScript]

    static let first = """
        schema: Shelf
        version: 1
        dialects: [sqlite, postgres]
        online: true
        entities:
          Book:
            attributes:
              id: {type: UUID, primaryKey: true, default: uuid}
              title: String
              pages: {type: Int32, default: 0}
              rating: {type: Int32, default: 0}
              reads: {type: Int32, default: 0}
        sync:
          Book: {scope: all, counters: [reads]}

        """

    static let second = first.replacingOccurrences(of: "version: 1", with: "version: 2")
        .replacingOccurrences(of: "title: String", with: "name: {type: String, renamedFrom: title}")
        .replacingOccurrences(of: "rating: {type: Int32, default: 0}", with: "rating: {type: Double, default: 0}\n      genre: {type: String, default: \"none\"}")

    /// Version 2 renames the entity instead: `Book` becomes `Volume`, its table with it.
    static let renamingTheEntity = first.replacingOccurrences(of: "version: 1", with: "version: 2")
        .replacingOccurrences(of: "  Book:\n    attributes:", with: "  Volume:\n    renamedFrom: Book\n    attributes:")
        .replacingOccurrences(of: "  Book: {scope: all", with: "  Volume: {scope: all")

    /// A table split instead: version 2 moves each book's blurb to an entity of its own, keyed
    /// as its book (`movedFrom: Book.id`), so every database splits to the same keys.
    static let beforeTheSplit = first.replacingOccurrences(of: "      rating: {type: Int32, default: 0}\n", with: "      blurb: String?\n      stars: {type: Int32, default: 0}\n")
        .replacingOccurrences(of: "counters: [reads]", with: "counters: [reads, stars]")
    static let split = """
        schema: Shelf
        version: 2
        dialects: [sqlite, postgres]
        online: true
        entities:
          Book:
            attributes:
              id: {type: UUID, primaryKey: true, default: uuid}
              title: String
              pages: {type: Int32, default: 0}
              reads: {type: Int32, default: 0}
            relationships:
              blurb: {to: Blurb?, inverse: book, deleteRule: cascade}
          Blurb:
            attributes:
              id: {type: UUID, primaryKey: true, movedFrom: Book.id}
              text: {type: String?, movedFrom: Book.blurb}
              stars: {type: Int32, default: 0, movedFrom: Book.stars}
            relationships:
              book: {to: Book, inverse: blurb}
        sync:
          Book: {scope: all, counters: [reads]}
          Blurb: {scope: all, counters: [stars]}

        """

    /// The split, with the book renamed `Volume` by the same version.
    static let splitRenamingTheBook = split.replacingOccurrences(of: "  Book:\n    attributes:", with: "  Volume:\n    renamedFrom: Book\n    attributes:")
        .replacingOccurrences(of: "movedFrom: Book.", with: "movedFrom: Volume.")
        .replacingOccurrences(of: "book: {to: Book, inverse: blurb}", with: "book: {to: Volume, inverse: blurb}")
        .replacingOccurrences(of: "  Book: {scope: all", with: "  Volume: {scope: all")

    /// A split whose part holds nullable values only: a book without a blurb has no part.
    static let beforeTheTextSplit = first.replacingOccurrences(of: "      rating: {type: Int32, default: 0}\n", with: "      blurb: String?\n")
    static let textSplit = split.replacingOccurrences(of: "      stars: {type: Int32, default: 0, movedFrom: Book.stars}\n", with: "")
        .replacingOccurrences(of: "  Blurb: {scope: all, counters: [stars]}", with: "  Blurb: {scope: all}")

    init(first: String = Self.first, second: String = Self.second) throws {
        func load(_ text: String) throws -> (Schema, SchemaSnapshot) {
            let loaded = SchemaLoader.load(source: .init(path: "Shelf.yaml", text: text))
            let schema = try #require(loaded.schema, "\(loaded.diagnostics.map(\.message))")
            return (schema, SnapshotBuilder.snapshot(of: schema))
        }
        let (schema1, snapshot1) = try load(first), (schema2, snapshot2) = try load(second)
        v1 = TemplateContext(schema: schema1, model: snapshot1, sourceFile: "Shelf.yaml").schemaDescriptor
        v2 = TemplateContext(schema: schema2, model: snapshot2, sourceFile: "Shelf.yaml").schemaDescriptor
        let steps = [(nil, snapshot1), (snapshot1, snapshot2)] as [(SchemaSnapshot?, SchemaSnapshot)]
        var migrations: [EmbeddedMigration] = [], scripts: [MigrationScript] = []
        for (offset, (from, to)) in steps.enumerated() {
            let lite = Migration(from: from, to: to, renderer: SQLiteRenderer())
            let postgres = Migration(from: from, to: to, renderer: PostgresRenderer(), online: true)
            migrations.append(
                EmbeddedMigration(
                    version: offset + 1, name: "v\(offset + 1)", up: lite.upSQL(), down: lite.downSQL(),
                    dialects: ["postgres": .init(up: postgres.upSQL(), down: postgres.downSQL(), contract: postgres.contractSQL())]))
            var script = MigrationScript(version: offset + 1, name: "v\(offset + 1)", up: postgres.upSQL(), down: postgres.downSQL())
            script.contract = postgres.contractSQL()
            scripts.append(script)
        }
        self.migrations = migrations
        self.scripts = scripts
    }

    /// Every book as a store holds it, by key.
    static func snapshot(_ store: Store, _ schema: SchemaDescriptor) async throws -> [String: [String: StoredValue]] {
        try await snapshot(store, schema.entities[0])
    }

    /// Every record of an entity as a store holds it, by key.
    static func snapshot(_ store: Store, _ entity: EntityDescriptor) async throws -> [String: [String: StoredValue]] {
        var books: [String: [String: StoredValue]] = [:]
        for record in try await store.records(of: entity, limit: 1_000).records {
            guard case .text(let key)? = record["id"] else { continue }
            books[key.lowercased()] = Dictionary(uniqueKeysWithValues: zip(record.columns, record.values).filter { $0.0 != "id" })
        }
        return books
    }

    /// A device with its own SQLite file, on one version of the app.
    struct Device {
        let id: String
        let path: String
        let schema: SchemaDescriptor
        let migrations: [EmbeddedMigration]
        let store: Store
        let client: SyncClient

        static func open(path: String, _ id: String, schema: SchemaDescriptor, migrations: [EmbeddedMigration], server: SyncServer) async throws -> Device {
            let store = try Store(path: path, schema: schema, migrations: migrations)
            let client = try await SyncClient(store: store, schema: schema, device: id, transport: server.transport(for: "ada"))
            return Device(id: id, path: path, schema: schema, migrations: migrations, store: store, client: client)
        }

        /// The same store, syncing with another server.
        func reconnected(to server: SyncServer) async throws -> Device {
            let client = try await SyncClient(store: store, schema: schema, device: id, transport: server.transport(for: "ada"))
            return Device(id: id, path: path, schema: schema, migrations: migrations, store: store, client: client)
        }

        /// Syncs until book `key`'s `field` holds `value` here.
        func syncs(until key: String, _ field: String, is value: StoredValue) async throws {
            try await Phone.eventually {
                try await client.sync()
                return try await book(key)?[field] == value
            }
        }

        func book(_ key: String) async throws -> StoredRecord? {
            try await store.records(of: schema.entities[0], where: [RecordFilter("id", .equals(.text(key)))], limit: 1).records.first
        }
    }
}
