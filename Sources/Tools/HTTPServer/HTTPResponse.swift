/// A status code and its reason phrase (RFC 9110, section 15).
public struct HTTPStatus: Sendable, Hashable {
    public var code: Int
    public var reason: String

    public init(_ code: Int, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public static let ok = HTTPStatus(200, "OK")
    public static let noContent = HTTPStatus(204, "No Content")
    public static let seeOther = HTTPStatus(303, "See Other")
    public static let notModified = HTTPStatus(304, "Not Modified")
    public static let badRequest = HTTPStatus(400, "Bad Request")
    public static let unauthorized = HTTPStatus(401, "Unauthorized")
    public static let forbidden = HTTPStatus(403, "Forbidden")
    public static let notFound = HTTPStatus(404, "Not Found")
    public static let methodNotAllowed = HTTPStatus(405, "Method Not Allowed")
    public static let requestTimeout = HTTPStatus(408, "Request Timeout")
    public static let conflict = HTTPStatus(409, "Conflict")
    public static let contentTooLarge = HTTPStatus(413, "Content Too Large")
    public static let uriTooLong = HTTPStatus(414, "URI Too Long")
    public static let unprocessableContent = HTTPStatus(422, "Unprocessable Content")
    public static let requestHeaderFieldsTooLarge = HTTPStatus(431, "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(500, "Internal Server Error")
    public static let notImplemented = HTTPStatus(501, "Not Implemented")
    public static let serviceUnavailable = HTTPStatus(503, "Service Unavailable")
    public static let httpVersionNotSupported = HTTPStatus(505, "HTTP Version Not Supported")
}

/// What the server sends back: a status, headers, and a body that is either bytes or written
/// as it is made (chunked: server-sent events, a streamed export).
public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        /// Written piece by piece while the connection is open; the writer throws once the
        /// client has gone, which ends the stream.
        case stream(@Sendable (HTTPBodyWriter) throws -> Void)
    }

    public var status: HTTPStatus
    /// Header fields; `Content-Length`, `Transfer-Encoding` and `Connection` are the server's.
    public var headers: [(name: String, value: String)]
    public var body: Body

    public init(status: HTTPStatus = .ok, headers: [(name: String, value: String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Text in UTF-8 with its content type.
    public static func text(_ text: String, status: HTTPStatus = .ok, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }

    /// A stream of server-sent events (`text/event-stream`), never cached.
    public static func eventStream(_ write: @escaping @Sendable (HTTPBodyWriter) throws -> Void) -> HTTPResponse {
        HTTPResponse(headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-store")], body: .stream(write))
    }

    /// The head as sent: the status line, the headers, the framing and connection headers.
    /// A header name or value with CR, LF or NUL is left out: it would split the response.
    func head(keepAlive: Bool, version: HTTPVersion) -> [UInt8] {
        var text = "\(version == .http10 ? "HTTP/1.0" : "HTTP/1.1") \(status.code) \(status.reason)\r\n"
        for (name, value) in headers where Self.isSafe(name) && Self.isSafe(value) {
            let lowered = name.lowercased()
            guard lowered != "content-length", lowered != "transfer-encoding", lowered != "connection" else { continue }
            text += "\(name): \(value)\r\n"
        }
        switch body {
        case .bytes(let bytes):
            if status.code != 204 && status.code != 304 { text += "Content-Length: \(bytes.count)\r\n" }
            text += keepAlive ? (version == .http10 ? "Connection: keep-alive\r\n" : "") : "Connection: close\r\n"
        case .stream:
            // HTTP/1.0 has no chunked coding: the end of the stream is the end of the connection.
            text += version == .http11 ? "Transfer-Encoding: chunked\r\n" : ""
            text += keepAlive && version == .http11 ? "" : "Connection: close\r\n"
        }
        return Array((text + "\r\n").utf8)
    }

    static func isSafe(_ text: String) -> Bool { !text.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 } }
}

/// Writes a streamed body to the client, chunk by chunk.
public final class HTTPBodyWriter: @unchecked Sendable {
    private let send: ([UInt8]) throws -> Void
    private let chunked: Bool
    private let stopping: () -> Bool

    init(chunked: Bool, stopping: @escaping () -> Bool = { false }, send: @escaping ([UInt8]) throws -> Void) {
        self.chunked = chunked
        self.stopping = stopping
        self.send = send
    }

    /// Whether the server is stopping: a stream that waits for something to send checks this
    /// between waits and ends, so stopping is not held up by the wait.
    public var serverIsStopping: Bool { stopping() }

    /// Sends bytes now; throws `HTTPServerError.clientGone` once the client has closed.
    public func write(_ bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { return }
        if chunked {
            try send(Array(String(bytes.count, radix: 16).utf8) + [13, 10] + bytes + [13, 10])
        } else {
            try send(bytes)
        }
    }

    public func write(_ text: String) throws { try write(Array(text.utf8)) }

    /// One server-sent event: an optional event name and id, and the data, one `data:` line per
    /// line of it (HTML's "Server-sent events" format).
    public func sendEvent(_ data: String, event: String? = nil, id: String? = nil) throws {
        var text = ""
        if let event, HTTPResponse.isSafe(event) { text += "event: \(event)\n" }
        if let id, HTTPResponse.isSafe(id) { text += "id: \(id)\n" }
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) {
            text += "data: \(line.replacingOccurrences(of: "\r", with: ""))\n"
        }
        try write(text + "\n")
    }

    /// A comment line, which keeps the connection alive and finds a client that has gone.
    public func sendComment(_ text: String = "") throws {
        try write(": \(text.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: ""))\n\n")
    }

    /// The last chunk.
    func finish() throws {
        if chunked { try send(Array("0\r\n\r\n".utf8)) }
    }
}
