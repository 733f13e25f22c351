import Foundation
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
    static func serve(_ database: String) throws -> (BuiltTool.Running, String) {
        let server = try TodoProcessTests.todo.start(
            ["sync-server", "--database", database, "--port", "0"], environment: TodoProcessTests.environment.merging(tokens) { $1 })
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
}
