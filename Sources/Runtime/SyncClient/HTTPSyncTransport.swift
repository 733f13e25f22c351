import Foundation
import Gzip
import SyncCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Pushes and pulls over HTTP to a sync endpoint (`POST <base>/push`, `POST <base>/pull`), as
/// `SyncJSON` compressed with gzip both ways. The app gives the headers that sign the device in
/// (a token, fetched fresh for each request); they are sent and never logged or put in an error.
///
///     let transport = HTTPSyncTransport(base: URL(string: "https://todo.example.com/sync")!) { ["Authorization": "Bearer \(try await auth.token())"] }
public struct HTTPSyncTransport: SyncTransport {
    /// The endpoint's address, under which `push` and `pull` are.
    public let base: URL
    /// The headers that sign the device in, asked for before each request.
    public let credentials: @Sendable () async throws -> [String: String]
    /// Seconds a request may take.
    public let timeout: TimeInterval
    private let session: URLSession

    /// A transport to the endpoint at `base`.
    ///
    ///     let transport = HTTPSyncTransport(base: URL(string: "http://127.0.0.1:8080/sync")!) { ["Authorization": "Bearer dev"] }
    public init(base: URL, timeout: TimeInterval = 30, credentials: @escaping @Sendable () async throws -> [String: String] = { [:] }) {
        self.base = base
        self.timeout = timeout
        self.credentials = credentials
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    /// Sends a push and waits for its answer.
    ///
    ///     let answer = try await transport.push(push)
    public func push(_ push: SyncPush) async throws -> SyncPushAnswer {
        try SyncJSON.decode(SyncPushAnswer.self, from: try await exchange("push", try SyncJSON.encode(push)))
    }

    /// Sends a pull and waits for its page.
    ///
    ///     let page = try await transport.pull(SyncPull(device: "ipad-7", schemaVersion: 3, after: nil, limit: 500))
    public func pull(_ pull: SyncPull) async throws -> SyncPullAnswer {
        try SyncJSON.decode(SyncPullAnswer.self, from: try await exchange("pull", try SyncJSON.encode(pull)))
    }

    /// Posts `body` to the route and returns the answer's body; a failure as a
    /// `SyncTransportError` (the server's own message, never the request's headers).
    private func exchange(_ route: String, _ body: [UInt8]) async throws -> [UInt8] {
        var request = URLRequest(url: base.appendingPathComponent(route), timeoutInterval: timeout)
        request.httpMethod = "POST"
        for (name, value) in try await credentials() { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("gzip", forHTTPHeaderField: "Accept-Encoding")
        let packed = try Gzip.compress(body)
        if packed.count < body.count {
            request.setValue("gzip", forHTTPHeaderField: "Content-Encoding")
            request.httpBody = Data(packed)
        } else {
            request.httpBody = Data(body)
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw SyncTransportError.unreachable("\(request.url?.host ?? "the server"): \(reason(error))")
        }
        guard let http = response as? HTTPURLResponse else { throw SyncTransportError.unreachable("the answer is not HTTP") }
        var bytes = [UInt8](data)
        // URLSession inflates what it asked for on its own on some platforms; the header says
        // whether it is still gzip.
        if bytes.starts(with: [0x1f, 0x8b]), (http.value(forHTTPHeaderField: "Content-Encoding") ?? "").lowercased() == "gzip" {
            bytes = try Gzip.decompress(bytes, limit: SyncJSON.Limits().maximumBytes)
        }
        guard http.statusCode == 200 else { throw Self.failure(status: http.statusCode, body: bytes) }
        return bytes
    }

    /// Why a request got no answer, in words: Foundation on Linux says only "NSURLErrorDomain
    /// error -1001".
    func reason(_ error: any Error) -> String {
        let failure = error as NSError
        guard failure.domain == NSURLErrorDomain else { return failure.localizedDescription }
        switch URLError.Code(rawValue: failure.code) {
        case .timedOut: return "no answer within \(timeout) s"
        case .cannotConnectToHost: return "the connection was refused: is the server running, and on that port?"
        case .cannotFindHost, .dnsLookupFailed: return "the host name was not found"
        case .networkConnectionLost: return "the connection was lost"
        case .notConnectedToInternet: return "this machine is not connected to a network"
        case .badURL, .unsupportedURL: return "the address is not a URL a request can go to"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid:
            return "the secure connection failed (the server's certificate)"
        default: return failure.localizedDescription
        }
    }

    /// What a refused request tells the device: 410 starts its pull over, another 4xx is
    /// refused with the server's message, 5xx means try again later.
    static func failure(status: Int, body: [UInt8]) -> SyncTransportError {
        let error = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        let detail = error?["error"] as? [String: Any]
        let message = "HTTP \(status)" + ((detail?["message"] as? String).map { ": \($0.prefix(500))" } ?? "")
        switch status {
        case 410: return detail?["code"] as? String == "tombstonesPurged" ? .tombstonesPurged : .cursorExpired
        case 400..<500 where status != 408 && status != 429: return .refused(message)
        default: return .unreachable(message)
        }
    }
}
