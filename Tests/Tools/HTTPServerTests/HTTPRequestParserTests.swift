import HTTPServer
import TestSupport
import Testing

/// The parser against RFC 9112's rules: what it reads, and the status each malformed request
/// gets.
@Suite struct HTTPRequestParserTests {
    static func parse(_ text: String, limits: HTTPRequestParser.Limits = .init()) -> HTTPRequestParser.Outcome {
        var parser = HTTPRequestParser(limits: limits)
        parser.append(Array(text.utf8))
        return parser.next()
    }

    static func status(_ text: String, limits: HTTPRequestParser.Limits = .init()) -> Int? {
        if case .failure(let failure) = parse(text, limits: limits) { return failure.status.code }
        return nil
    }

    @Test func aRequestIsReadWithItsDecodedPathQueryHeadersAndBody() throws {
        guard case .request(let request) = Self.parse("POST /entities/Flight%20Log?sort=code&q=a+b%26c&flag HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-A:  spaced \r\n\r\nhello")
        else {
            Issue.record("not read")
            return
        }
        #expect(request.method == "POST" && request.path == "/entities/Flight Log" && request.version == .http11)
        #expect(request.query.map { "\($0.name)=\($0.value)" } == ["sort=code", "q=a b&c", "flag="])
        #expect(request.header("x-a") == "spaced" && request.header("HOST") == "x")
        #expect(request.body == Array("hello".utf8))
        #expect(request.keepsAlive)
    }

    @Test func emptyLinesBeforeARequestAndBareLineFeedsAreAccepted() {
        guard case .request(let request) = Self.parse("\r\n\nGET / HTTP/1.0\nConnection: keep-alive\n\n") else {
            Issue.record("not read")
            return
        }
        #expect(request.version == .http10 && request.keepsAlive)
        guard case .request(let closing) = Self.parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n") else { return }
        #expect(!closing.keepsAlive)
    }

    @Test func pipelinedRequestsComeOneAtATimeAndPiecesWait() {
        var parser = HTTPRequestParser()
        let two = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\n"
        let bytes = Array(two.utf8)
        // Byte by byte: a request only once it is whole.
        var paths: [String] = []
        var bodies: [String] = []
        for byte in bytes {
            parser.append([byte])
            while case .request(let request) = parser.next() {
                paths.append(request.path)
                bodies.append(String(decoding: request.body, as: UTF8.self))
            }
        }
        #expect(paths == ["/a", "/b"] && bodies == ["", "abcde"], "\(paths) \(bodies)")
        #expect(parser.next() == .needMore && !parser.hasPartialRequest)
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\n\r\n", 400, "no Host in HTTP/1.1"),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "two Hosts"),
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "another version"),
        ("GET / HTTQ/1.1\r\nHost: x\r\n\r\n", 400, "not a version"),
        ("GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400, "a space in the target"),
        ("GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "absolute form"),
        ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "a method that is no token"),
        ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400, "space before the colon"),
        ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400, "obs-fold"),
        ("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400, "no colon"),
        ("GET / HTTP/1.1\r\nHost: x\u{1}\r\n\r\n", 400, "a control character"),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both framings"),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "an unknown coding"),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400, "lengths that disagree"),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, "a negative length"),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400, "a length too long to be a number"),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n", 413, "a body over the limit"),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "a chunk size that is not hex"),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", 400, "a chunk without its CRLF"),
        ("GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "a bad escape"),
        ("GET /a%00b HTTP/1.1\r\nHost: x\r\n\r\n", 400, "an encoded NUL"),
        ("GET /%ff HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bytes that are not UTF-8"),
    ])
    func malformedRequestsGetTheirStatus(_ text: String, _ expected: Int, _ why: String) {
        #expect(Self.status(text) == expected, "\(why)")
    }

    @Test func limitsAreAnsweredBeforeTheWholeRequestArrives() {
        let limits = HTTPRequestParser.Limits(requestLineBytes: 64, headerBytes: 256, headerCount: 3, bodyBytes: 10)
        // A request line still arriving, already over its limit.
        #expect(Self.status("GET /" + String(repeating: "a", count: 100), limits: limits) == 414)
        #expect(Self.status("GET / HTTP/1.1\r\nHost: x\r\nA: " + String(repeating: "b", count: 300), limits: limits) == 431)
        #expect(Self.status("GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: limits) == 431)
        #expect(Self.status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n", limits: limits) == 413)
        #expect(Self.parse("GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n\r\n", limits: limits) != .needMore)
    }

    /// Random bytes and random damage to valid requests never crash the parser, and reading
    /// them in pieces never gives other requests than reading them whole.
    @Test func randomInputNeverCrashesOrReadsDifferentlyInPieces() {
        var random = SeededGenerator(seed: SeededGenerator.seed(default: 5150))
        let valid = Array("POST /a?b=c HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbodyGET / HTTP/1.1\r\nHost: y\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n".utf8)
        let alphabet = Array("GET / HTTP/1.1\r\n:;%0aZ-chunked0123456789\u{0}\t ".utf8)
        let limits = HTTPRequestParser.Limits(requestLineBytes: 128, headerBytes: 512, headerCount: 8, bodyBytes: 64)
        for round in 0..<3000 {
            var bytes = valid
            if round % 3 == 0 {
                bytes = (0..<Int.random(in: 0...300, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            } else {
                for _ in 0..<Int.random(in: 1...6, using: &random) {
                    let at = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: bytes[at] = UInt8.random(in: 0...255, using: &random)
                    case 1: bytes.remove(at: at)
                    default: bytes.insert(alphabet.randomElement(using: &random)!, at: at)
                    }
                    if bytes.isEmpty { bytes = [13] }
                }
            }
            func read(_ pieces: [ArraySlice<UInt8>]) -> (requests: [HTTPRequest], failed: Bool) {
                var parser = HTTPRequestParser(limits: limits)
                var requests: [HTTPRequest] = []
                for piece in pieces {
                    parser.append(piece)
                    loop: while true {
                        switch parser.next() {
                        case .request(let request): requests.append(request)
                        case .needMore: break loop
                        case .failure: return (requests, true)
                        }
                    }
                }
                return (requests, false)
            }
            let whole = read([bytes[...]])
            let cut = Int.random(in: 0...bytes.count, using: &random)
            let pieces = read([bytes[..<cut], bytes[cut...]])
            if !whole.failed && !pieces.failed { #expect(whole.requests == pieces.requests, "round \(round)") }
        }
    }
}
