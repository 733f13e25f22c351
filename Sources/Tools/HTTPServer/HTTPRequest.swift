/// One HTTP/1.1 request as the parser read it: the method, the target split into a decoded path
/// and query, the headers in order, and the whole body.
public struct HTTPRequest: Sendable, Equatable {
    /// The method token as sent (`GET`, `POST`), case-sensitive as RFC 9110 says.
    public var method: String
    /// The request target as sent: `/entities/Flight?sort=code`.
    public var target: String
    /// The target's path, percent-decoded: `/entities/Flight`.
    public var path: String
    /// The query's name-value pairs in order, percent-decoded, `+` read as a space (the
    /// `application/x-www-form-urlencoded` rule browsers follow).
    public var query: [(name: String, value: String)]
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: HTTPVersion
    /// Header fields in order, names as sent.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(
        method: String, target: String, path: String, query: [(name: String, value: String)] = [], version: HTTPVersion = .http11,
        headers: [(name: String, value: String)] = [], body: [UInt8] = []
    ) {
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// The first header of that name, compared without case; nil when absent.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) }?.value
    }

    /// The first query value of that name.
    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Whether the connection stays open after the answer: HTTP/1.1 unless `Connection: close`,
    /// HTTP/1.0 only with `Connection: keep-alive` (RFC 9112, section 9.3).
    public var keepsAlive: Bool {
        let tokens = (header("Connection") ?? "").split(separator: ",").map { $0.trimmingSpaces.lowercased() }
        switch version {
        case .http11: return !tokens.contains("close")
        case .http10: return tokens.contains("keep-alive")
        }
    }

    /// The cookie of that name from `Cookie` headers.
    public func cookie(_ name: String) -> String? {
        for (headerName, value) in headers where headerName.caseInsensitiveCompare("Cookie") {
            for pair in value.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
                if parts.count == 2, parts[0] == name { return parts[1] }
            }
        }
        return nil
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.path == rhs.path && lhs.version == rhs.version && lhs.body == rhs.body
            && lhs.query.elementsEqual(rhs.query, by: { $0 == $1 }) && lhs.headers.elementsEqual(rhs.headers, by: { $0 == $1 })
    }
}

/// The protocol versions the server speaks.
public enum HTTPVersion: String, Sendable {
    case http10 = "HTTP/1.0"
    case http11 = "HTTP/1.1"
}

extension String {
    /// ASCII case-insensitive equality, as header names and tokens compare.
    func caseInsensitiveCompare(_ other: String) -> Bool {
        utf8.count == other.utf8.count && zip(utf8, other.utf8).allSatisfy { Self.lowered($0) == Self.lowered($1) }
    }

    static func lowered(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }

    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    var trimmingSpaces: String {
        var bytes = Substring(self).utf8[...]
        while let first = bytes.first, first == 32 || first == 9 { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == 32 || last == 9 { bytes = bytes.dropLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Substring {
    var trimmingSpaces: String { String(self).trimmingSpaces }
}
