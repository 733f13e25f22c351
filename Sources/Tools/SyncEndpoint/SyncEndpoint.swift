import Foundation
import Gzip
import HTTPServer
import SyncCore
import SyncServer

/// A sync server over HTTP, on the toolkit's own server: `POST <prefix>/push` and
/// `POST <prefix>/pull`, each a `SyncJSON` message in and out, gzip both ways where the device
/// asks for it. The server app says who the user is (`authenticate`, from the request's
/// headers); the endpoint never logs or echoes a header.
///
///     let endpoint = SyncEndpoint(server: server) { request in users.user(forToken: request.header("Authorization")) }
///     var configuration = HTTPServer.Configuration(port: 8080, limits: SyncEndpoint.limits)
///     configuration.refusal = SyncEndpoint.refusal
///     let http = try HTTPServer(configuration) { endpoint.respond(to: $0) }
public struct SyncEndpoint: Sendable {
    /// The server answering.
    public let server: SyncServer
    /// The path the two routes are under, `/sync` by default.
    public let prefix: String
    /// The user a request is from; nil when it is not signed in (401).
    public let authenticate: @Sendable (HTTPRequest) -> String?

    /// The largest message body, compressed or not, in bytes: `SyncJSON.Limits`'s.
    public static let maximumBodyBytes = SyncJSON.Limits().maximumBytes

    /// Request limits for an `HTTPServer` serving this endpoint: bodies up to
    /// `maximumBodyBytes`.
    public static var limits: HTTPRequestParser.Limits { HTTPRequestParser.Limits(bodyBytes: maximumBodyBytes) }

    /// The server's own refusals (a body too large, a request too slow or malformed, too many
    /// connections) in this endpoint's error format, for `HTTPServer.Configuration.refusal`.
    ///
    ///     var configuration = HTTPServer.Configuration(port: 8080, limits: SyncEndpoint.limits)
    ///     configuration.refusal = SyncEndpoint.refusal
    @Sendable public static func refusal(_ status: HTTPStatus, _ reason: String) -> HTTPResponse {
        let code =
            switch status.code {
            case 413: "tooLarge"
            case 408: "timeout"
            case 503: "unavailable"
            default: "badRequest"
            }
        return error(status, code, reason)
    }

    /// An endpoint for `server` under `prefix`, with the server app's sign-in.
    ///
    ///     let endpoint = SyncEndpoint(server: server) { request in request.header("Authorization") == "Bearer secret" ? "ada" : nil }
    public init(server: SyncServer, prefix: String = "/sync", authenticate: @escaping @Sendable (HTTPRequest) -> String?) {
        self.server = server
        self.prefix = prefix
        self.authenticate = authenticate
    }

    /// Answers one request; a handler for `HTTPServer`.
    ///
    ///     let response = endpoint.respond(to: request)
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        let route = request.path.hasPrefix(prefix + "/") ? String(request.path.dropFirst(prefix.count + 1)) : ""
        guard route == "push" || route == "pull" else { return Self.error(.notFound, "notFound", "no sync route \(request.path.prefix(80)); use \(prefix)/push or \(prefix)/pull") }
        guard request.method == "POST" else {
            var response = Self.error(.methodNotAllowed, "methodNotAllowed", "\(prefix)/\(route) takes POST")
            response.headers.append(("Allow", "POST"))
            return response
        }
        guard let user = authenticate(request) else { return Self.error(.unauthorized, "unauthenticated", "sign in first: the request carries no credentials the server accepts") }
        let body: [UInt8]
        switch Self.body(of: request) {
        case .success(let bytes): body = bytes
        case .failure(let refusal): return refusal.response
        }
        let gzipped = (request.header("Accept-Encoding") ?? "").lowercased().contains("gzip")
        do {
            let answer: [UInt8] =
                route == "push"
                ? try waitingOnThisThread { [server] in try SyncJSON.encode(try await server.push(try SyncJSON.decode(SyncPush.self, from: body), user: user)) }
                : try waitingOnThisThread { [server] in try SyncJSON.encode(try await server.pull(try SyncJSON.decode(SyncPull.self, from: body), user: user)) }
            return Self.json(answer, gzipped: gzipped)
        } catch let error as SyncMessageError {
            return Self.error(.badRequest, "badMessage", error.description)
        } catch let error as SyncServerError {
            return Self.response(to: error)
        } catch {
            return Self.error(.internalServerError, "internal", "the sync server failed: \(error)")
        }
    }

    /// The request's body, inflated when it says it is gzip; refused when it is neither.
    static func body(of request: HTTPRequest) -> Result<[UInt8], Refusal> {
        switch (request.header("Content-Encoding") ?? "identity").lowercased() {
        case "identity": return .success(request.body)
        case "gzip":
            do {
                return .success(try Gzip.decompress(request.body, limit: maximumBodyBytes))
            } catch {
                if case .tooLarge = error { return .failure(Refusal(response: Self.error(.contentTooLarge, "tooLarge", "the body inflates past \(maximumBodyBytes) bytes"))) }
                return .failure(Refusal(response: Self.error(.badRequest, "badEncoding", "the gzip body cannot be read: \(error)")))
            }
        case let other:
            return .failure(
                Refusal(response: error(HTTPStatus(415, "Unsupported Media Type"), "unsupportedEncoding", "Content-Encoding '\(other.prefix(40))' is not gzip or identity")))
        }
    }

    /// A request refused before it reached the server.
    struct Refusal: Error {
        let response: HTTPResponse
    }

    /// The status and code a device acts on for each way the server refuses.
    static func response(to error: SyncServerError) -> HTTPResponse {
        switch error {
        case .cursorExpired: Self.error(HTTPStatus(410, "Gone"), "cursorExpired", error.description)
        case .tombstonesPurged: Self.error(HTTPStatus(410, "Gone"), "tombstonesPurged", error.description)
        case .deviceOfAnotherUser: Self.error(.forbidden, "deviceOfAnotherUser", error.description)
        case .unservedVersion: Self.error(.conflict, "unservedVersion", error.description)
        case .clockAhead: Self.error(.conflict, "clockAhead", error.description)
        case .badDevice: Self.error(.badRequest, "badRequest", error.description)
        case .badCursor: Self.error(.badRequest, "badCursor", error.description)
        case .store, .clock:
            // Passing: the store's connection or a failover. The device tries again later.
            HTTPResponse(
                status: .serviceUnavailable, headers: [("Content-Type", "application/json"), ("Retry-After", "5")],
                body: .bytes(errorBody("unavailable", "the sync server's database is unavailable (a lost connection, a failover); try again")))
        case .historyOff, .nothingSynced, .badVersions: Self.error(.internalServerError, "misconfigured", error.description)
        }
    }

    static func json(_ bytes: [UInt8], gzipped: Bool) -> HTTPResponse {
        var headers = [("Content-Type", "application/json"), ("Cache-Control", "no-store")]
        guard gzipped, let packed = try? Gzip.compress(bytes), packed.count < bytes.count else { return HTTPResponse(headers: headers, body: .bytes(bytes)) }
        headers.append(("Content-Encoding", "gzip"))
        return HTTPResponse(headers: headers, body: .bytes(packed))
    }

    static func error(_ status: HTTPStatus, _ code: String, _ message: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: .bytes(errorBody(code, message)))
    }

    /// `{"error": {"code": ..., "message": ...}}`.
    static func errorBody(_ code: String, _ message: String) -> [UInt8] {
        let object = ["error": ["code": code, "message": message]]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map(Array.init) ?? Array("{}".utf8)
    }
}
