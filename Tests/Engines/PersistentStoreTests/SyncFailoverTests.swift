import Foundation
import SchemaMetadata
import SyncCore
import TestSupport
import Testing

@testable import PersistentStoreCore
@testable import SyncClient
@testable import SyncServer

/// A sync server on a Patroni cluster whose leader is killed while devices push: a push the
/// failover cut short is sent again and applied once, and every device ends with the server's
/// records, counters counted once.
@Suite(.blocking, .serialized, .enabled(if: PatroniCluster.available, Comment(rawValue: PatroniCluster.skipReason)))
struct SyncFailoverTests {
    @Test func pushesGoOnWhileTheLeaderIsKilled() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        defer { try? cluster.restoreKilledNodes() }
        let serverStore = try Store.open(url: try cluster.createDatabase(), schema: Board.schema, migrations: Board.migrations)
        let server = try await SyncServer(store: serverStore, schema: Board.schema)
        let ipad = try await Phone.open(server, "ipad-ada"), phone = try await Phone.open(server, "phone-ada")
        let list = Board.key(1)
        _ = try await ipad.store.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text("ada"), "title": .text("Home")])
        try await ipad.client.sync()
        let killed = LockedBox<PatroniCluster.Node?>(nil)
        let killer = Thread {
            usleep(1_000_000)
            killed.value = try? cluster.killLeader()
        }
        killer.start()
        var cards = 0, likes: Int64 = 0, failures: [String] = [], afterKill = 0
        let deadline = Date().addingTimeInterval(300)
        // Each round the iPad adds a card and likes the first one; a sync the failover cuts
        // short is tried again. Rounds go on until 20 came after the kill.
        while afterKill < 20, Date() < deadline {
            if killed.value != nil { afterKill += 1 }
            cards += 1
            likes += 1
            _ = try await ipad.store.insertRecord(
                of: Board.card, values: ["id": .text(Board.key(100 + cards)), "title": .text("Card \(cards)"), "list_id": .text(list), "likes": .integer(0)])
            _ = try await ipad.store.updateRecord(of: Board.card, key: [.text(Board.key(101))], set: ["likes": .integer(likes)])
            do {
                try await ipad.client.sync()
            } catch {
                failures.append("\(error)")
            }
        }
        _ = try #require(killed.value, "the leader was not killed")
        try await Phone.eventually {
            try await ipad.client.sync()
            return try await ipad.client.status().pending == 0
        }
        try await Phone.eventually {
            try await phone.client.sync()
            return try await Board.snapshot(phone.store) == Board.snapshot(serverStore)
        }
        #expect(try await serverStore.countRecords(of: Board.card) == cards, "every card once; failed syncs: \(failures)")
        let first = try await serverStore.records(of: Board.card, where: [RecordFilter("id", .equals(.text(Board.key(101))))], limit: 1).records.first
        #expect(first?["likes"] == .integer(likes), "the likes counted once: \(String(describing: first))")
        #expect(try await Board.snapshot(ipad.store) == Board.snapshot(serverStore))
    }
}
