/// Reads HTTP/1.1 requests (RFC 9112) from bytes as they arrive, within limits, and says what
/// is wrong with a malformed one as the status to answer with. Pure: no sockets, so the
/// tests and the fuzz target drive it directly.
///
///     var parser = HTTPRequestParser(limits: .init())
///     parser.append(bytes)
///     switch parser.next() { case .request(let request): ...; case .needMore: read more; case .failure(let failure): answer failure.status }
public struct HTTPRequestParser: Sendable {
    /// What a request may be at most.
    public struct Limits: Sendable {
        /// The request line (method, target, version).
        public var requestLineBytes = 8 * 1024
        /// The whole header section, request line included.
        public var headerBytes = 32 * 1024
        public var headerCount = 100
        /// The decoded body.
        public var bodyBytes = 1024 * 1024

        public init(requestLineBytes: Int = 8 * 1024, headerBytes: Int = 32 * 1024, headerCount: Int = 100, bodyBytes: Int = 1024 * 1024) {
            self.requestLineBytes = requestLineBytes
            self.headerBytes = headerBytes
            self.headerCount = headerCount
            self.bodyBytes = bodyBytes
        }
    }

    /// Why a request is refused: the status to answer with (the connection then closes) and a
    /// short reason for the answer's body.
    public struct Failure: Error, Sendable, Equatable {
        public var status: HTTPStatus
        public var reason: String
    }

    public enum Outcome: Sendable, Equatable {
        case request(HTTPRequest)
        /// The bytes so far are the start of a request; read more.
        case needMore
        case failure(Failure)
    }

    public let limits: Limits
    private var buffer: [UInt8] = []
    private var start = 0

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Bytes received, after those appended before.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Whether bytes of an unfinished request are waiting (a client that stops halfway).
    public var hasPartialRequest: Bool { buffer[start...].contains { $0 != 13 && $0 != 10 } }

    /// The next whole request, if the bytes hold one; a pipelined request after it stays for
    /// the next call.
    public mutating func next() -> Outcome {
        var position = start
        // A server ignores empty lines before a request line (RFC 9112, section 2.2).
        while position < buffer.count, buffer[position] == 13 || buffer[position] == 10 { position += 1 }
        guard let head = headEnd(from: position) else {
            if buffer.count - position > limits.headerBytes { return .failure(Failure(status: .requestHeaderFieldsTooLarge, reason: "the header section is over \(limits.headerBytes) bytes")) }
            if let lineEnd = buffer[position...].firstIndex(of: 10) {
                if lineEnd - position > limits.requestLineBytes { return .failure(Failure(status: .uriTooLong, reason: "the request line is over \(limits.requestLineBytes) bytes")) }
            } else if buffer.count - position > limits.requestLineBytes {
                return .failure(Failure(status: .uriTooLong, reason: "the request line is over \(limits.requestLineBytes) bytes"))
            }
            return .needMore
        }
        if head.end - position > limits.headerBytes { return .failure(Failure(status: .requestHeaderFieldsTooLarge, reason: "the header section is over \(limits.headerBytes) bytes")) }
        var request: HTTPRequest
        let framing: BodyFraming
        switch parseHead(lines(position..<head.linesEnd)) {
        case .failure(let failure): return .failure(failure)
        case .success(let parsed): (request, framing) = parsed
        }
        var bodyStart = head.end
        switch framing {
        case .none:
            break
        case .length(let length):
            guard buffer.count - bodyStart >= length else { return .needMore }
            request.body = Array(buffer[bodyStart..<bodyStart + length])
            bodyStart += length
        case .chunked:
            switch decodeChunked(from: bodyStart) {
            case .failure(let failure): return .failure(failure)
            case .success(nil): return .needMore
            case .success(let decoded?):
                request.body = decoded.body
                bodyStart = decoded.end
            }
        }
        start = bodyStart
        return .request(request)
    }

    // MARK: - The head

    private enum BodyFraming { case none, length(Int), chunked }

    /// Where the header section ends: after the empty line (CRLF CRLF, or bare LFs, which RFC
    /// 9112 lets a recipient accept).
    private func headEnd(from position: Int) -> (linesEnd: Int, end: Int)? {
        var index = position
        while let newline = buffer[index...].firstIndex(of: 10) {
            let next = newline + 1
            if next < buffer.count, buffer[next] == 10 { return (newline, next + 1) }
            if next + 1 < buffer.count, buffer[next] == 13, buffer[next + 1] == 10 { return (newline, next + 2) }
            if next >= buffer.count { return nil }
            index = next
        }
        return nil
    }

    /// The lines of the head without their CR LF.
    private func lines(_ range: Range<Int>) -> [ArraySlice<UInt8>] {
        buffer[range].split(separator: 10, omittingEmptySubsequences: false).map { line in line.last == 13 ? line.dropLast() : line }
    }

    private func parseHead(_ lines: [ArraySlice<UInt8>]) -> Result<(HTTPRequest, BodyFraming), Failure> {
        func bad(_ reason: String) -> Result<(HTTPRequest, BodyFraming), Failure> { .failure(Failure(status: .badRequest, reason: reason)) }
        guard let requestLine = lines.first else { return bad("no request line") }
        if requestLine.count > limits.requestLineBytes { return .failure(Failure(status: .uriTooLong, reason: "the request line is over \(limits.requestLineBytes) bytes")) }
        let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else { return bad("the request line is not 'METHOD target HTTP/1.1'") }
        guard parts[0].allSatisfy(Self.isTokenByte) else { return bad("the method is not a token") }
        let versionText = String(decoding: parts[2], as: UTF8.self)
        guard let version = HTTPVersion(rawValue: versionText) else {
            if versionText.hasPrefix("HTTP/"), versionText.count == 8 { return .failure(Failure(status: .httpVersionNotSupported, reason: "\(versionText) is not spoken here; use HTTP/1.1")) }
            return bad("'\(versionText.prefix(16))' is not an HTTP version")
        }
        let target = parts[1]
        guard target.first == UInt8(ascii: "/"), target.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            return bad("the target is not a path starting with /")
        }
        let targetText = String(decoding: target, as: UTF8.self)
        let pathPart = targetText.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard let path = Self.percentDecoded(pathPart[0], plusIsSpace: false) else { return bad("the path has a bad percent-encoding or an encoded NUL") }
        var query: [(name: String, value: String)] = []
        if pathPart.count == 2 {
            for pair in pathPart[1].split(separator: "&") {
                let nameValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = Self.percentDecoded(nameValue[0], plusIsSpace: true),
                    let value = Self.percentDecoded(nameValue.count == 2 ? nameValue[1] : "", plusIsSpace: true)
                else { return bad("the query has a bad percent-encoding or an encoded NUL") }
                query.append((name, value))
            }
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let first = line.first else { continue }
            if first == 32 || first == 9 { return bad("a header line is folded (obs-fold), which RFC 9112 refuses") }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return bad("a header line has no colon") }
            let name = line[line.startIndex..<colon]
            // No whitespace between the name and the colon (RFC 9112, section 5.1).
            guard !name.isEmpty, name.allSatisfy(Self.isTokenByte) else { return bad("a header name is not a token") }
            let value = line[(colon + 1)...]
            guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { return bad("a header value has a control character") }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self).trimmingSpaces))
            if headers.count > limits.headerCount { return .failure(Failure(status: .requestHeaderFieldsTooLarge, reason: "more than \(limits.headerCount) header fields")) }
        }
        var request = HTTPRequest(method: String(decoding: parts[0], as: UTF8.self), target: targetText, path: path, query: query, version: version, headers: headers)
        let hosts = headers.filter { $0.name.caseInsensitiveCompare("Host") }
        if version == .http11, hosts.count != 1 { return bad("an HTTP/1.1 request needs exactly one Host header") }
        let encodings = headers.filter { $0.name.caseInsensitiveCompare("Transfer-Encoding") }
        let lengths = headers.filter { $0.name.caseInsensitiveCompare("Content-Length") }
        if !encodings.isEmpty {
            // Both framings at once is how requests are smuggled (RFC 9112, section 6.1).
            if !lengths.isEmpty { return bad("both Transfer-Encoding and Content-Length") }
            let codings = encodings.flatMap { $0.value.split(separator: ",").map { $0.trimmingSpaces.lowercased() } }
            guard codings == ["chunked"] else {
                return .failure(Failure(status: .notImplemented, reason: "the transfer coding '\(codings.joined(separator: ", "))' is not understood; send chunked or Content-Length"))
            }
            request.body = []
            return .success((request, .chunked))
        }
        let values = Set(lengths.flatMap { $0.value.split(separator: ",").map(\.trimmingSpaces) })
        guard values.count <= 1 else { return bad("Content-Length headers disagree") }
        guard let text = values.first else { return .success((request, .none)) }
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let length = Int(text) else { return bad("Content-Length is not a number") }
        if length > limits.bodyBytes { return .failure(Failure(status: .contentTooLarge, reason: "the body is over \(limits.bodyBytes) bytes")) }
        return .success((request, length == 0 ? .none : .length(length)))
    }

    // MARK: - A chunked body

    /// The decoded body and where the message ends; nil while incomplete.
    private func decodeChunked(from position: Int) -> Result<(body: [UInt8], end: Int)?, Failure> {
        var body: [UInt8] = []
        var index = position
        while true {
            guard let lineEnd = buffer[index...].firstIndex(of: 10) else {
                return buffer.count - index > 1024 ? .failure(Failure(status: .badRequest, reason: "a chunk size line is too long")) : .success(nil)
            }
            var line = buffer[index..<lineEnd]
            if line.last == 13 { line = line.dropLast() }
            // chunk-ext after ';' is ignored, as RFC 9112 allows.
            let sizeText = line.split(separator: UInt8(ascii: ";"), maxSplits: 1, omittingEmptySubsequences: false)[0]
            guard !sizeText.isEmpty, sizeText.count <= 15, sizeText.allSatisfy({ $0.isHexDigit }), let size = Int(String(decoding: sizeText, as: UTF8.self), radix: 16) else {
                return .failure(Failure(status: .badRequest, reason: "a chunk size is not hexadecimal"))
            }
            index = lineEnd + 1
            if size == 0 {
                // Trailer fields, then the empty line; trailers are read and dropped.
                while true {
                    guard let end = buffer[index...].firstIndex(of: 10) else { return .success(nil) }
                    let empty = end == index || (end == index + 1 && buffer[index] == 13)
                    index = end + 1
                    if empty { return .success((body, index)) }
                    if index - position > limits.bodyBytes + limits.headerBytes { return .failure(Failure(status: .requestHeaderFieldsTooLarge, reason: "the trailer section is too large")) }
                }
            }
            if body.count + size > limits.bodyBytes { return .failure(Failure(status: .contentTooLarge, reason: "the body is over \(limits.bodyBytes) bytes")) }
            guard buffer.count - index >= size + 1 else { return .success(nil) }
            body.append(contentsOf: buffer[index..<index + size])
            index += size
            if buffer[index] == 13 {
                guard index + 1 < buffer.count else { return .success(nil) }
                index += 1
            }
            guard buffer[index] == 10 else { return .failure(Failure(status: .badRequest, reason: "a chunk does not end with CRLF")) }
            index += 1
        }
    }

    // MARK: - Bytes

    /// tchar (RFC 9110, section 5.6.2).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
        default: return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Percent-decoded text; nil for a bad escape, an encoded NUL or bytes that are not UTF-8.
    public static func percentDecoded(_ text: Substring, plusIsSpace: Bool) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(), let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16), high.isHexDigit, low.isHexDigit
                else { return nil }
                guard value != 0 else { return nil }
                bytes.append(value)
            } else if byte == UInt8(ascii: "+"), plusIsSpace {
                bytes.append(32)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension UInt8 {
    var isHexDigit: Bool { (48...57).contains(self) || (65...70).contains(self) || (97...102).contains(self) }
}
