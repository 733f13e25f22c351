import Foundation
import Gzip
import HTTPServer
import SchemaMetadata
import SyncCore
import Testing

@testable import PersistentStoreCore
@testable import SyncClient
@testable import SyncEndpoint
@testable import SyncServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sync over real HTTP on loopback: the endpoint on the toolkit's HTTP server, devices through
/// `HTTPSyncTransport`, gzip both ways, the server app's sign-in, and each bad request refused
/// with its status, never echoing a credential.
@Suite(.serialized) struct SyncHTTPTests {
    static let tokens = ["token-ada": "ada", "token-bob": "bob"]

    /// A sync endpoint on a free port for `server`; stopped by the caller.
    static func endpoint(_ server: SyncServer) throws -> (HTTPServer, URL) {
        let endpoint = SyncEndpoint(server: server) { request in
            request.header("Authorization").flatMap { header in header.hasPrefix("Bearer ") ? tokens[String(header.dropFirst(7))] : nil }
        }
        var configuration = HTTPServer.Configuration(limits: SyncEndpoint.limits)
        configuration.refusal = SyncEndpoint.refusal
        let http = try HTTPServer(configuration) { endpoint.respond(to: $0) }
        return (http, URL(string: "http://127.0.0.1:\(http.port)/sync")!)
    }

    static func transport(_ base: URL, token: String) -> HTTPSyncTransport {
        HTTPSyncTransport(base: base, timeout: 10) { ["Authorization": "Bearer \(token)"] }
    }

    @Test(arguments: StoreEngine.available)
    func devicesSyncOverHTTP(_ engine: StoreEngine) async throws {
        let (serverStore, server) = try await Board.server(engine)
        let (http, base) = try Self.endpoint(server)
        defer { _ = http.stop() }
        let ipad = try await Phone.open(server, "ipad-ada", transport: Self.transport(base, token: "token-ada"))
        let phone = try await Phone.open(server, "phone-ada", transport: Self.transport(base, token: "token-ada"), pageSize: 2)
        let list = Board.key(1)
        _ = try await ipad.store.insertRecord(of: Board.list, values: ["id": .text(list), "owner": .text("ada"), "title": .text("Home")])
        for number in 2..<7 {
            _ = try await ipad.store.insertRecord(
                of: Board.card, values: ["id": .text(Board.key(number)), "title": .text(String(repeating: "Milk ", count: 40)), "list_id": .text(list), "likes": .integer(0)])
        }
        try await ipad.client.sync()
        try await phone.client.sync()
        _ = try await phone.store.updateRecord(of: Board.list, key: [.text(list)], set: ["title": .text("Home (phone)")])
        try await phone.client.sync()
        try await Phone.eventually {
            try await ipad.client.sync()
            return try await Board.snapshot(ipad.store) == Board.snapshot(serverStore)
        }
        #expect(try await Board.snapshot(phone.store) == Board.snapshot(serverStore))
        #expect(try await Board.snapshot(ipad.store)[list]?["title"] == .text("Home (phone)"))

        // Signed in as nobody, or as another user with her device's id: refused, token unseen.
        let stranger = try await Phone.open(server, "mac-eve", transport: Self.transport(base, token: "token-wrong"))
        do {
            try await stranger.client.sync()
            Issue.record("an unknown token synced")
        } catch {
            #expect("\(error)".contains("HTTP 401") && !"\(error)".contains("token-wrong"), "\(error)")
        }
        let bob = Self.transport(base, token: "token-bob")
        await #expect(throws: SyncTransportError.self) { _ = try await bob.pull(SyncPull(device: "phone-ada", schemaVersion: Board.version, after: nil, limit: 5)) }
    }

    /// Both 410s a device acts on are told apart by their code, as the endpoint writes them.
    @Test func theTwo410sAreToldApart() {
        for (error, told) in [(SyncServerError.cursorExpired("h.1"), SyncTransportError.cursorExpired), (.tombstonesPurged(device: "pad"), .tombstonesPurged)] {
            let response = SyncEndpoint.response(to: error)
            #expect(response.status.code == 410)
            guard case .bytes(let body) = response.body else {
                Issue.record("no body")
                continue
            }
            #expect(HTTPSyncTransport.failure(status: 410, body: body) == told)
        }
    }

    @Test func badRequestsAreRefusedWithTheirStatus() async throws {
        let (_, server) = try await Board.server(.sqlite)
        let (http, base) = try Self.endpoint(server)
        defer { _ = http.stop() }
        let pull = try SyncJSON.encode(SyncPull(device: "ipad-ada", schemaVersion: Board.version, after: nil, limit: 5))
        func post(_ route: String, _ body: [UInt8], method: String = "POST", encoding: String? = nil, token: String? = "token-ada") async throws -> (Int, String, String?) {
            var request = URLRequest(url: base.appendingPathComponent(route))
            request.httpMethod = method
            if method == "POST" { request.httpBody = Data(body) }
            if let encoding { request.setValue(encoding, forHTTPHeaderField: "Content-Encoding") }
            if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
            let (data, response) = try await URLSession.shared.data(for: request)
            let http = try #require(response as? HTTPURLResponse)
            return (http.statusCode, String(decoding: data, as: UTF8.self), http.value(forHTTPHeaderField: "Content-Encoding"))
        }
        #expect(try await post("pull", pull).0 == 200)
        #expect(try await post("pull", try Gzip.compress(pull), encoding: "gzip").0 == 200, "a gzip body")
        #expect(try await post("pull", pull, token: nil).0 == 401)
        #expect(try await post("pull", pull, method: "GET").0 == 405)
        #expect(try await post("nowhere", pull).0 == 404)
        #expect(try await post("pull", Array("{not json".utf8)).0 == 400)
        #expect(try await post("pull", Array("not gzip".utf8), encoding: "gzip").0 == 400)
        #expect(try await post("pull", pull, encoding: "br").0 == 415)
        let bomb = try Gzip.compress([UInt8](repeating: 32, count: SyncEndpoint.maximumBodyBytes + 1))
        #expect(try await post("push", bomb, encoding: "gzip").0 == 413, "inflating past the limit")
        // Refused by the HTTP server itself, before the endpoint: in the endpoint's JSON all the same.
        let large = try await post("push", [UInt8](repeating: 32, count: SyncEndpoint.maximumBodyBytes + 1))
        #expect(large.0 == 413 && large.1.contains("\"code\":\"tooLarge\""), "\(large.1.prefix(200))")
        let expired = try SyncJSON.encode(SyncPull(device: "ipad-ada", schemaVersion: Board.version, after: "h.x", limit: 5))
        let refused = try await post("pull", expired)
        #expect(refused.0 == 400 && refused.1.contains("badCursor") && !refused.1.contains("token-ada"), "\(refused)")
        let old = try SyncJSON.encode(SyncPull(device: "ipad-ada", schemaVersion: Board.version + 1, after: nil, limit: 5))
        #expect(try await post("pull", old).0 == 409)
    }
}
