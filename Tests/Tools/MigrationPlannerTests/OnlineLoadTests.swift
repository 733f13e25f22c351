import Foundation
import MigrationFiles
import MigrationPlanner
import MigratorCore
import MigratorPostgres
import PostgresKit
import RelationalModel
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

/// The rolling deploy an online migration exists for, on a real server: clients of version 1
/// keep writing a 300,000-row table while version 2 expands (a renamed column, one made
/// required, an integer widened, a new column with a default, a new index); clients of version
/// 2 join once it is served; version 1's clients stop; the migration completes while version
/// 2's clients keep writing. No transaction of either version may fail, none of version 1 may
/// take a second during expand, and every committed increment and insert must be there after
/// contract, under the new names.
@Suite(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct OnlineLoadTests {
    static let before = """
        entities:
          Item:
            attributes:
              name: String
              quantity: Int32
              price: Double?

        """
    static let after = """
        entities:
          Item:
            attributes:
              title: {type: String, renamedFrom: name}
              quantity: Int64
              price: {type: Double, default: 0}
              sku: {type: String, default: none}
            indexes: [[title]]

        """

    /// What one client committed, and how long its transactions took.
    final class Tally: @unchecked Sendable {
        let lock = NSLock()
        var increments: [Int64: Int64] = [:]
        var inserted: [(id: Int64, name: String, price: Double?)] = []
        var failures: [String] = []
        var committed = 0
        var slowest = 0.0
        var slowestDuringExpand = 0.0

        func record(_ body: (Tally) -> Void) { lock.withLock { body(self) } }
    }

    final class Flag: @unchecked Sendable {
        let lock = NSLock()
        var value = false
        func set(_ new: Bool) { lock.withLock { value = new } }
        var isSet: Bool { lock.withLock { value } }
    }

    /// A client of one version: each transaction adds one to a random row's quantity and
    /// inserts a row (version 1 leaves the price out every third time).
    static func client(url: String, version: Int, seed: Int, stop: Flag, expanding: Flag, tally: Tally) -> Thread {
        Thread {
            do {
                let connection = try PostgresConnection(url)
                try connection.execute("SET search_path TO load_v\(version)")
                var generator = SystemRandomNumberGenerator()
                var count = 0
                while !stop.isSet {
                    let id = Int64.random(in: 1...300_000, using: &generator)
                    let name = "v\(version)-\(seed)-\(count)"
                    let price: Double? = version == 1 && count % 3 == 0 ? nil : Double(count)
                    count += 1
                    let started = Date()
                    do {
                        try connection.execute("BEGIN")
                        _ = try connection.query("UPDATE item SET quantity = quantity + 1 WHERE id = $1", [.integer(id)])
                        let column = version == 1 ? "name" : "title"
                        let rows = try connection.query(
                            "INSERT INTO item (\(column), quantity, price) VALUES ($1, 1, $2) RETURNING id",
                            [.text(name), price.map { .real($0) } ?? .null])
                        try connection.execute("COMMIT")
                        let seconds = Date().timeIntervalSince(started)
                        let during = expanding.isSet
                        tally.record { tally in
                            tally.committed += 1
                            tally.increments[id, default: 0] += 1
                            if case .integer(let new)? = rows.first?.first { tally.inserted.append((new, name, price)) }
                            tally.slowest = max(tally.slowest, seconds)
                            if during { tally.slowestDuringExpand = max(tally.slowestDuringExpand, seconds) }
                        }
                    } catch {
                        try? connection.execute("ROLLBACK")
                        tally.record { $0.failures.append("version \(version): \(error)") }
                    }
                }
            } catch {
                tally.record { $0.failures.append("version \(version) could not connect: \(error)") }
            }
        }
    }

    /// Polls without holding a thread of the cooperative pool.
    static func waitUntil(_ condition: () -> Bool) async throws {
        while !condition() { try await _Concurrency.Task.sleep(nanoseconds: 10_000_000) }
    }

    @Test func oldAndNewClientsWriteThroughExpandAndContractWithoutAFailedTransaction() async throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let url = try server.createDatabase()
        let v1 = SnapshotBuilder.snapshot(of: try schema(Self.before, version: 1).renamed("Load"))
        let v2 = SnapshotBuilder.snapshot(of: try schema(Self.after, version: 2).renamed("Load"))
        let first = Migration(from: nil, to: v1, renderer: PostgresRenderer(), online: true)
        let second = Migration(from: v1, to: v2, renderer: PostgresRenderer(), online: true)
        let scripts = [first, second].enumerated().map { offset, migration in
            var script = MigrationScript(version: offset + 1, name: "v\(offset + 1)", up: migration.upSQL(), down: migration.downSQL())
            script.contract = migration.contractSQL()
            return script
        }
        #expect(second.online?.offline == [], "every change of this migration is planned online")

        let firstScript = Array(scripts.prefix(1))
        // The blocking work on a thread of its own (the tests beside this one are async).
        let initial = try await offThePool { () throws -> [[StoredValue]] in
            let connection = try PostgresConnection(url)
            try Migrator(database: PostgresMigrationDatabase(connection), schema: "Load", scripts: firstScript).up()
            try connection.execute(
                "INSERT INTO item (name, quantity, price) SELECT 'seed-' || g, g % 1000, CASE WHEN g % 4 = 0 THEN NULL ELSE g END FROM generate_series(1, 300000) g")
            try connection.execute("ANALYZE item")
            return try connection.query("SELECT sum(quantity)::bigint FROM item")
        }

        let (stopOld, stopNew, expanding) = (Flag(), Flag(), Flag())
        let (old, new) = (Tally(), Tally())
        let oldClients = (0..<3).map { Self.client(url: url, version: 1, seed: $0, stop: stopOld, expanding: expanding, tally: old) }
        oldClients.forEach { $0.start() }
        try await Self.waitUntil { old.lock.withLock { old.committed } > 50 }

        // Expand, with the version-1 clients writing.
        expanding.set(true)
        let deploy = Handed(Migrator(database: PostgresMigrationDatabase(try PostgresConnection(url)), schema: "Load", scripts: scripts))
        let expandStarted = Date()
        try await offThePool { try deploy.value.up() }
        let expandSeconds = Date().timeIntervalSince(expandStarted)
        expanding.set(false)
        #expect(try deploy.value.servedVersions() == [1, 2])

        // Version 2 rolls out beside version 1, then version 1 is gone.
        let newClients = (0..<3).map { Self.client(url: url, version: 2, seed: $0, stop: stopNew, expanding: expanding, tally: new) }
        newClients.forEach { $0.start() }
        try await Self.waitUntil { new.lock.withLock { new.committed } > 200 }
        stopOld.set(true)
        try await Self.waitUntil { oldClients.allSatisfy(\.isFinished) }

        // Complete, with the version-2 clients writing.
        let baseline = new.lock.withLock { new.committed }
        try await offThePool { try deploy.value.complete() }
        try await Self.waitUntil { new.lock.withLock { new.committed } > baseline + 100 }
        stopNew.set(true)
        try await Self.waitUntil { newClients.allSatisfy(\.isFinished) }

        #expect(old.failures.isEmpty, "\(old.failures.prefix(5))")
        #expect(new.failures.isEmpty, "\(new.failures.prefix(5))")
        #expect(old.slowestDuringExpand < 1.0, "the slowest version-1 transaction during expand took \(old.slowestDuringExpand) s")
        #expect(old.committed > 100 && new.committed > 300, "old \(old.committed), new \(new.committed) transactions")
        print(
            "online load: expand took \(String(format: "%.1f", expandSeconds)) s; version 1 committed \(old.committed) transactions (slowest during expand \(String(format: "%.3f", old.slowestDuringExpand)) s), version 2 \(new.committed) (slowest \(String(format: "%.3f", new.slowest)) s)"
        )

        // Every increment and insert, under the new names.
        let check = try PostgresConnection(url)
        let increments = old.increments.values.reduce(0, +) + new.increments.values.reduce(0, +) + Int64(old.inserted.count + new.inserted.count)
        guard case .integer(let start)? = initial.first?.first else {
            Issue.record("no initial sum")
            return
        }
        #expect(try check.query("SELECT sum(quantity)::bigint FROM item") == [[.integer(start + increments)]])
        #expect(try check.query("SELECT count(*) FROM item") == [[.integer(Int64(300_000 + old.inserted.count + new.inserted.count))]])
        let columns = try check.query("SELECT column_name::text, data_type::text, is_nullable::text FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'item' ORDER BY 1")
        #expect(
            columns == [
                [.text("id"), .text("bigint"), .text("NO")], [.text("price"), .text("double precision"), .text("NO")],
                [.text("quantity"), .text("bigint"), .text("NO")], [.text("sku"), .text("text"), .text("NO")], [.text("title"), .text("text"), .text("NO")],
            ])
        // Rows version 1 wrote read through version 2 with the change applied.
        for (id, name, price) in old.inserted.prefix(200) {
            #expect(try check.query("SELECT title, price, sku FROM load_v2.item WHERE id = $1", [.integer(id)]) == [[.text(name), .real(price ?? 0), .text("none")]])
        }
        #expect(try check.query("SELECT count(*) FROM item WHERE title LIKE 'seed-%' AND price = 0") == [[.integer(75_000)]], "the required column filled from its default")
        #expect(try check.query("SELECT count(*) FROM pg_indexes WHERE tablename = 'item' AND indexdef LIKE '%(title)%'") == [[.integer(1)]])
        #expect(try check.query("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'load_v%' ORDER BY 1") == [[.text("load_v2")]])
    }
}

extension Schema {
    /// The same schema under another name (the name its version schemas are called after).
    func renamed(_ name: String) -> Schema {
        var copy = self
        copy.name = name
        return copy
    }
}
