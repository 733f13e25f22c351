import ExampleModels
import FieldEncryption
import Foundation
import PersistentStoreCore
import PersistentStoreSQLite
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The synced to-do example as users run it: `todo sync-server` in one process, devices with
/// their own files running `todo sync`, a server killed and started again in between.
@Suite(.blocking, .serialized) struct TodoSyncTests {
    static let tokens = ["TODO_SYNC_TOKENS": "token-ada=ada"]

    /// Starts `todo sync-server` on `database` and waits for its address.
    static func serve(_ database: String, environment extra: [String: String] = [:]) throws -> (BuiltTool.Running, String) {
        let server = try TodoProcessTests.todo.start(
            ["sync-server", "--database", database, "--port", "0"], environment: TodoProcessTests.environment.merging(tokens) { $1 }.merging(extra) { $1 })
        let line = server.read(.output, until: { $0.contains("/sync\n") })
        let address = try #require(line.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }, "\(line)")
        #expect(address.hasPrefix("http://127.0.0.1:"), "\(line)")
        return (server, address)
    }

    static func sync(_ database: String, device: String, server: String, token: String = "token-ada") throws -> BuiltTool.Run {
        try TodoProcessTests.run(["sync", "--server", server, "--device", device], database: database, environment: ["TODO_SYNC_TOKEN": token])
    }

    /// The items of a device's file, by id: name and whether done.
    static func items(_ database: String) throws -> [String: String] {
        let listed = try TodoProcessTests.run(["list", "--json"], database: database)
        let items = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]], "\(listed.error)")
        return Dictionary(
            uniqueKeysWithValues: items.compactMap { item in (item["id"] as? String).map { ($0, "\(item["name"] as? String ?? "") \((item["done"] as? Bool) == true ? "done" : "open")") } })
    }

    @Test(arguments: TodoEngine.available)
    func twoDevicesAndAServerKeepOneList(_ engine: TodoEngine) throws {
        let serverDatabase = try engine.freshDatabase()
        var (server, address) = try Self.serve(serverDatabase)
        var running = true
        defer { if running { _ = TodoProcessTests.stop(server) } }
        let laptop = temporaryPath("laptop.sqlite"), phone = temporaryPath("phone.sqlite")
        _ = try TodoProcessTests.add("buy milk", database: laptop)
        _ = try TodoProcessTests.run(["add", "call the plumber", "--notes", "the code is 4711"], database: laptop)
        let first = try Self.sync(laptop, device: "laptop", server: address)
        #expect(first.status == 0 && first.output.contains("0 pending"), "\(first.output)\(first.error)")
        #expect(try Self.sync(phone, device: "phone", server: address).status == 0)
        #expect(try Self.items(phone) == Self.items(laptop) && Self.items(phone).count == 2)

        // The server is killed; a device that syncs meanwhile fails, loses nothing, and syncs
        // once the server is back (on another port).
        kill(server.processIdentifier, SIGKILL)
        _ = server.finish()
        running = false
        let milk = try #require(try Self.items(phone).first { $0.value.hasPrefix("buy milk") }?.key)
        #expect(try TodoProcessTests.run(["done", milk], database: phone).status == 0)
        let cut = try Self.sync(phone, device: "phone", server: address)
        #expect(cut.status == 1 && cut.error.contains("could not be reached"), "\(cut.error)")
        (server, address) = try Self.serve(serverDatabase)
        running = true
        #expect(try Self.sync(phone, device: "phone", server: address).status == 0)
        _ = try TodoProcessTests.add("water the plants", database: laptop)
        #expect(try Self.sync(laptop, device: "laptop", server: address).status == 0)
        #expect(try Self.sync(phone, device: "phone", server: address).status == 0)
        let laptopItems = try Self.items(laptop)
        #expect(laptopItems == (try Self.items(phone)) && laptopItems.count == 3, "\(laptopItems)")
        #expect(laptopItems[milk]?.hasSuffix("done") == true, "the phone's toggle made while the server was down: \(laptopItems)")
        // The encrypted notes reached the phone, readable with its key.
        let plumber = try #require(laptopItems.first { $0.value.hasPrefix("call the plumber") }?.key)
        let shown = try TodoProcessTests.run(["show", plumber], database: phone)
        #expect(shown.status == 0 && shown.output.contains("the code is 4711"), "\(shown.output)\(shown.error)")

        // A wrong token is refused, and not printed back.
        let refused = try Self.sync(laptop, device: "laptop", server: address, token: "token-wrong")
        #expect(refused.status == 1 && refused.error.contains("401") && !refused.error.contains("token-wrong"), "\(refused.error)")
        let stopped = TodoProcessTests.stop(server)
        running = false
        #expect(stopped.status == 0 && stopped.error.contains("stopped (SIGTERM)"), "\(stopped.error)")
    }

    /// The server is killed after it applied and committed a push, before its answer went out:
    /// the device's sync fails, and the next one, to the server started again, is answered as
    /// the push was, and nothing is applied twice.
    @Test(arguments: TodoEngine.available)
    func aServerKilledBetweenApplyingAPushAndAnsweringItAppliesItOnce(_ engine: TodoEngine) throws {
        let serverDatabase = try engine.freshDatabase()
        let (paused, address) = try Self.serve(serverDatabase, environment: ["TODO_PAUSE_AFTER_PUSH": "60"])
        let laptop = temporaryPath("laptop.sqlite")
        _ = try TodoProcessTests.add("buy milk", database: laptop)
        let syncing = try TodoProcessTests.todo.start(
            ["sync", "--server", address, "--device", "laptop", "--database", laptop], environment: TodoProcessTests.environment.merging(["TODO_SYNC_TOKEN": "token-ada"]) { $1 })
        let said = paused.read(.error, until: { $0.contains("answer paused") }, within: 30)
        #expect(said.contains("answer paused"), "\(said)")
        kill(paused.processIdentifier, SIGKILL)
        _ = paused.finish()
        let cut = syncing.finish()
        #expect(cut.status == 1, "\(cut.output)\(cut.error)")
        var (server, again) = try Self.serve(serverDatabase)
        defer { _ = TodoProcessTests.stop(server) }
        let retried = try Self.sync(laptop, device: "laptop", server: again)
        #expect(retried.status == 0 && retried.output.contains("synced: 1 pushed, 0 pulled, 0 pending"), "\(retried.output)\(retried.error)")
        #expect(try Self.items(serverDatabase).count == 1)
        _ = TodoProcessTests.stop(server)
        (server, again) = try Self.serve(serverDatabase)
        #expect(try Self.sync(temporaryPath("phone.sqlite"), device: "phone", server: again).status == 0)
    }

    /// A new device killed mid-pull keeps the whole pages it took, and its next sync goes on from
    /// the last one.
    /// Mistakes in the tokens, the address or the environment are usage errors (2) that say
    /// what to set, never quoting a token; a server that is not there is 1, in words; a change
    /// that lost to a later one is said.
    @Test func mistakesAreToldAndALostChangeIsSaid() throws {
        let database = temporaryPath("server.sqlite")
        for (tokens, said) in [("sekrit-1", "entry 1 of TODO_SYNC_TOKENS is not token=user"), ("sekrit-1=ada,sekrit-1=bob", "entry 2 of TODO_SYNC_TOKENS repeats"), ("sekrit 1=ada", "holds a space")] {
            let run = try TodoProcessTests.run(["sync-server", "--port", "0"], database: database, environment: ["TODO_SYNC_TOKENS": tokens])
            #expect(run.status == 2 && run.error.contains(said) && !run.error.contains("sekrit"), "\(tokens): \(run.error)")
        }
        let laptop = temporaryPath("laptop.sqlite"), phone = temporaryPath("phone.sqlite")
        let noToken = try TodoProcessTests.run(["sync", "--server", "http://127.0.0.1:9/sync", "--device", "laptop"], database: laptop, environment: ["TODO_SYNC_TOKEN": ""])
        #expect(noToken.status == 2 && noToken.error.contains("set TODO_SYNC_TOKEN"), "\(noToken.error)")
        for address in ["http://127.0.0.1:99999/sync", "htp://127.0.0.1/sync", "not a url"] {
            let run = try Self.sync(laptop, device: "laptop", server: address)
            #expect(run.status == 2 && run.error.contains("not an http:// or https:// URL"), "\(address): \(run.error)")
        }
        let nobody = try Self.sync(laptop, device: "laptop", server: "http://127.0.0.1:9/sync")
        #expect(nobody.status == 1 && nobody.error.contains("the connection was refused"), "\(nobody.error)")

        let (server, address) = try Self.serve(database)
        defer { _ = TodoProcessTests.stop(server) }
        let notice = server.read(.error, until: { $0.contains("serving a new, empty one") }, within: 5)
        #expect(notice.contains("no database was at \(database)"), "a mistyped path would serve an empty list: \(notice)")
        let item = try TodoProcessTests.run(["add", "jam"], database: laptop).output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try Self.sync(laptop, device: "laptop", server: address).status == 0)
        let first = try Self.sync(phone, device: "phone", server: address)
        #expect(first.output.contains("synced: 0 pushed, 1 pulled, 0 pending"), "\(first.output)")
        // The laptop toggles first, the phone later and syncs first: the laptop's toggle loses.
        #expect(try TodoProcessTests.run(["done", item], database: laptop).status == 0)
        usleep(20_000)
        #expect(try TodoProcessTests.run(["done", item], database: phone).status == 0)
        #expect(try Self.sync(phone, device: "phone", server: address).status == 0)
        let lost = try Self.sync(laptop, device: "laptop", server: address)
        #expect(lost.status == 0 && lost.output.lowercased().contains("conflict: item \(item.lowercased()): iscompleted took a later change"), "\(lost.output)")
    }

    @Test func aDeviceKilledMidPullKeepsWholePagesAndGoesOn() throws {
        let serverDatabase = try TodoEngine.sqlite.freshDatabase()
        for index in 0..<30 { _ = try TodoProcessTests.add("item \(index)", database: serverDatabase) }
        let (server, address) = try Self.serve(serverDatabase)
        defer { _ = TodoProcessTests.stop(server) }
        let phone = temporaryPath("phone.sqlite")
        let environment = TodoProcessTests.environment.merging(["TODO_SYNC_TOKEN": "token-ada", "TODO_PAUSE_BEFORE_COMMIT": "0.3"]) { $1 }
        let syncing = try TodoProcessTests.todo.start(["sync", "--server", address, "--device", "phone", "--page-size", "5", "--database", phone], environment: environment)
        var taken = 0
        let deadline = Date().addingTimeInterval(60)
        while taken < 10, Date() < deadline {
            usleep(100_000)
            taken = (try? Self.items(phone).count) ?? 0
        }
        kill(syncing.processIdentifier, SIGKILL)
        _ = syncing.finish()
        let kept = try Self.items(phone).count
        #expect(kept >= 10 && kept < 30 && kept % 5 == 0, "whole pages of five: \(kept)")
        #expect(try Self.sync(phone, device: "phone", server: address).status == 0)
        #expect(try Self.items(phone) == Self.items(serverDatabase))
    }

    /// A server on PostgreSQL while version 4's online migration is expanded serves both app
    /// versions: a device of version 3 adds an item and syncs in its version's shape, a device of
    /// version 4 sets a priority it cannot see; updated, the old device pushes what it had not
    /// pushed, and pulls the priority.
    @Test(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
    func aDeviceOfThePreviousAppVersionSyncsAndIsUpdated() async throws {
        let serverDatabase = try TodoEngine.postgres.freshDatabase()
        let server = try TodoProcessTests.todo.start(
            ["sync-server", "--database", serverDatabase, "--port", "0"], environment: TodoProcessTests.environment.merging(Self.tokens) { $1 })
        defer { _ = TodoProcessTests.stop(server) }
        let lines = server.read(.output, until: { $0.contains("/sync\n") })
        #expect(lines.hasPrefix("app versions 3 and 4\n"), "\(lines)")
        let address = try #require(lines.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }, "\(lines)")
        let old = temporaryPath("old.sqlite"), new = temporaryPath("new.sqlite")
        func syncOld(_ version: [String]) throws -> BuiltTool.Run {
            try TodoProcessTests.run(["sync", "--server", address, "--device", "old-phone"] + version, database: old, environment: ["TODO_SYNC_TOKEN": "token-ada"])
        }
        #expect(try syncOld(["--app-version", "3"]).status == 0)

        // The old app (version 3's schema and migrations) adds an item; its device pushes it in
        // version 3's shape.
        let keys = Store.Configuration(keys: .ring(try KeyRing(parsing: "k1=\(TodoProcessTests.key)", source: "test")))
        let previous = TodoSchema.previousVersion
        let bread = UUID().uuidString.lowercased()
        do {
            let oldApp = try Store(path: old, schema: previous.descriptor, migrations: previous.migrations, configuration: keys)
            _ = try await oldApp.insertRecord(of: previous.descriptor.entities[0], values: ["id": .text(bread), "task_name": .text("bake bread")])
        }
        let pushed = try syncOld(["--app-version", "3"])
        #expect(pushed.status == 0 && pushed.output.contains("0 pending"), "\(pushed.output)\(pushed.error)")
        // The new app adds an urgent item; the new device sees the old one's item, priority 0.
        _ = try TodoProcessTests.run(["add", "buy milk", "--priority", "5"], database: new)
        #expect(try Self.sync(new, device: "new-phone", server: address).status == 0)
        let listed = try TodoProcessTests.run(["list"], database: new).output
        #expect(listed.contains("bake bread") && listed.contains("buy milk (priority 5)"), "\(listed)")
        #expect(try syncOld(["--app-version", "3"]).status == 0)
        do {
            let oldApp = try Store(path: old, schema: previous.descriptor, migrations: previous.migrations, configuration: keys)
            let names = try await oldApp.records(of: previous.descriptor.entities[0], limit: 10).records.compactMap { row -> String? in
                if case .text(let name)? = row["task_name"] { return name } else { return nil }
            }
            #expect(Set(names) == ["bake bread", "buy milk"], "the old device has the new device's item, without its priority")
            let milk = try #require(
                try await oldApp.records(of: previous.descriptor.entities[0], limit: 10).records.first { $0["task_name"] == .text("buy milk") }.flatMap { row -> String? in
                    if case .text(let id)? = row["id"] { return id } else { return nil }
                })
            // Offline, the old app renames the urgent item; then its app is updated.
            _ = try await oldApp.updateRecord(of: previous.descriptor.entities[0], key: [.text(milk)], set: ["task_name": .text("buy oat milk")])
        }

        // Updated: `todo sync` of this build migrates the file, pushes the rename in version 4's
        // shape, and pulls the priority the old app never had.
        let updated = try syncOld([])
        #expect(updated.status == 0 && updated.output.contains("0 pending"), "\(updated.output)\(updated.error)")
        let after = try TodoProcessTests.run(["list"], database: old).output
        #expect(after.contains("buy oat milk (priority 5)") && after.contains("bake bread"), "\(after)")
        #expect(try Self.sync(new, device: "new-phone", server: address).status == 0)
        #expect(try TodoProcessTests.run(["list"], database: new).output.contains("buy oat milk (priority 5)"))
    }
}
