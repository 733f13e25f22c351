import Foundation
import HTTPServer
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A client on a raw socket, to send what no well-behaved client sends.
final class RawClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else {
            close(fd)
            throw RawClientError(description: "cannot connect to port \(port): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Whether every byte was sent (false once the server reset the connection).
    @discardableResult func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// What arrives until the server closes, `done` says enough, or `seconds` pass; and whether
    /// the server closed.
    func read(within seconds: Double = 5, until done: (String) -> Bool = { _ in false }) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var readable = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&readable, 1, 50) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (String(decoding: received, as: UTF8.self), true) }
            received += buffer[0..<count]
            if done(String(decoding: received, as: UTF8.self)) { break }
        }
        return (String(decoding: received, as: UTF8.self), false)
    }
}

struct RawClientError: Error, CustomStringConvertible {
    let description: String
}

/// The server as clients meet it: curl for the protocol, raw sockets for what curl would never
/// send, and a flood of connections.
@Suite(.serialized) struct HTTPServerTests {
    static func echo(_ request: HTTPRequest) -> HTTPResponse {
        .text("\(request.method) \(request.path) \(request.body.count)\n")
    }

    func curl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try runProgram("/usr/bin/curl", ["--silent", "--show-error", "--max-time", "10"] + arguments, in: temporaryFolder())
    }

    @Test func curlGetsAnswersAndReusesTheConnection() throws {
        let server = try HTTPServer(.init()) { Self.echo($0) }
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let run = try curl(["--verbose", base + "/a", base + "/b", "--data-binary", "xyz", "--request", "PUT"])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("PUT /a 3") && run.output.contains("PUT /b 3"), "\(run.output)")
        #expect(run.output.contains("Re-using existing connection") || run.output.contains("Reusing existing connection"), "keep-alive: \(run.output)")
        let head = try curl(["--head", base + "/c"])
        #expect(head.output.contains("HTTP/1.1 200 OK") && head.output.contains("Content-Length: 10"), "\(head.output)")
    }

    @Test func pipelinedRequestsAreAnsweredInOrderAndCloseEndsTheConnection() throws {
        let server = try HTTPServer(.init()) { Self.echo($0) }
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        client.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let answer = client.read()
        #expect(answer.closed)
        let first = try #require(answer.text.range(of: "GET /1 0")), second = try #require(answer.text.range(of: "GET /2 0"))
        #expect(first.lowerBound < second.lowerBound)
        #expect(answer.text.contains("Connection: close"))
    }

    @Test func malformedAndOversizedRequestsGetA4xxAndTheConnectionCloses() throws {
        let server = try HTTPServer(.init(limits: .init(bodyBytes: 1000))) { Self.echo($0) }
        defer { server.stop() }
        for (request, status) in [
            ("GET / HTTP/1.1\r\n\r\n", "400 Bad Request"), ("BAD\r\n\r\n", "400 Bad Request"), ("GET / HTTP/3.0\r\nHost: x\r\n\r\n", "505 HTTP Version Not Supported"),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", "413 Content Too Large"),
        ] {
            let client = try RawClient(port: server.port)
            client.send(request)
            let answer = client.read()
            #expect(answer.text.hasPrefix("HTTP/1.1 \(status)") && answer.closed, "\(request): \(answer)")
        }
        let big = temporaryFolder().appendingPathComponent("big")
        try Data(repeating: 65, count: 5000).write(to: big)
        let refused = try curl(["--write-out", "%{http_code}", "--data-binary", "@" + big.path, "http://127.0.0.1:\(server.port)/"])
        #expect(refused.output.hasSuffix("413"), "\(refused.output)")
    }

    /// A client that sends its whole oversized body before reading reads the 413, not a reset:
    /// the server reads what is still coming before it closes.
    @Test func aClientStillSendingItsBodyReadsTheRefusal() throws {
        let server = try HTTPServer(.init(limits: .init(bodyBytes: 1000))) { Self.echo($0) }
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        let body = [UInt8](repeating: 65, count: 4_000_000)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.2)
        let sentWhole = client.send(body)
        #expect(sentWhole, "the body is read, not reset")
        let answer = client.read()
        #expect(answer.text.hasPrefix("HTTP/1.1 413 Content Too Large") && answer.closed, "\(answer)")
    }

    @Test func aSlowClientGets408AndAnIdleOneIsClosed() throws {
        let server = try HTTPServer(.init(requestTimeout: 1, idleTimeout: 1)) { Self.echo($0) }
        defer { server.stop() }
        let slow = try RawClient(port: server.port)
        slow.send("GET / HTTP/1.1\r\nHost: x\r\n")
        let started = Date()
        let answer = slow.read(within: 5)
        #expect(answer.text.hasPrefix("HTTP/1.1 408 Request Timeout") && answer.closed, "\(answer)")
        #expect(Date().timeIntervalSince(started) < 4)
        // Trickling a byte at a time does not extend the deadline.
        let trickle = try RawClient(port: server.port)
        var closed = false
        for byte in Array("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa".utf8) {
            trickle.send([byte])
            if trickle.read(within: 0.1).closed {
                closed = true
                break
            }
        }
        #expect(closed, "the request deadline holds against a trickle")
        let idle = try RawClient(port: server.port)
        #expect(idle.read(within: 4).closed, "an idle connection closes")
    }

    /// More connections than the limit: the extra ones get 503 at once, the held ones are not
    /// disturbed, and once they go, the server answers again.
    @Test func aFloodOfConnectionsIsTurnedAwayAndTheServerRecovers() throws {
        let server = try HTTPServer(.init(maxConnections: 8, requestTimeout: 30, idleTimeout: 30)) { Self.echo($0) }
        defer { server.stop() }
        var held: [RawClient] = []
        for _ in 0..<8 { held.append(try RawClient(port: server.port)) }
        // Each held one is admitted: it answers.
        for client in held { client.send("GET /held HTTP/1.1\r\nHost: x\r\n\r\n") }
        for client in held { #expect(client.read(within: 5, until: { $0.contains("GET /held 0") }).text.contains("200 OK")) }
        var turnedAway = 0
        for _ in 0..<100 {
            let extra = try RawClient(port: server.port)
            if extra.read(within: 2, until: { $0.contains("busy") }).text.hasPrefix("HTTP/1.1 503 Service Unavailable") { turnedAway += 1 }
        }
        #expect(turnedAway == 100)
        held.removeAll()
        var answered = false
        for _ in 0..<50 where !answered {
            let fresh = try RawClient(port: server.port)
            fresh.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
            answered = fresh.read(within: 2, until: { $0.contains("GET /again 0") }).text.contains("200 OK")
            if !answered { usleep(100_000) }
        }
        #expect(answered)
    }

    /// Server-sent events reach the client as they are sent; stopping the server ends the
    /// stream and every connection, and `stop` returns once their threads are done.
    @Test func eventsStreamUntilTheServerStops() throws {
        let server = try HTTPServer(.init()) { request in
            guard request.path == "/events" else { return Self.echo(request) }
            return .eventStream { writer in
                try writer.sendEvent("first", event: "change", id: "1")
                try writer.sendEvent("two\nlines")
                while true {
                    usleep(50_000)
                    try writer.sendComment("alive")
                }
            }
        }
        let client = try RawClient(port: server.port)
        client.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = client.read(within: 5, until: { $0.contains("data: lines") })
        #expect(answer.text.contains("Content-Type: text/event-stream") && answer.text.contains("Transfer-Encoding: chunked"), "\(answer.text)")
        #expect(answer.text.contains("event: change\nid: 1\ndata: first\n\n") && answer.text.contains("data: two\ndata: lines\n\n"))
        let curlStream = try curl(["--no-buffer", "--max-time", "1", "http://127.0.0.1:\(server.port)/events"])
        #expect(curlStream.output.contains("data: first"), "\(curlStream.output)")
        #expect(server.stop(timeout: 5), "every connection thread finished")
        #expect(client.read(within: 5).closed)
        // The port no longer answers. A connect alone can still succeed, as another test may
        // have taken the freed port or Linux may join a client to itself, so ask for an answer.
        if let late = try? RawClient(port: server.port) {
            late.send("GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(!late.read(within: 0.5).text.contains("GET /late 0"))
        }
    }

    @Test func aTakenPortAndABadHostAreSaid() throws {
        let first = try HTTPServer(.init()) { Self.echo($0) }
        defer { first.stop() }
        #expect(throws: HTTPServerError.self) { _ = try HTTPServer(.init(port: first.port)) { Self.echo($0) } }
        do {
            _ = try HTTPServer(.init(port: first.port)) { Self.echo($0) }
        } catch {
            #expect(error.description.contains("cannot listen on 127.0.0.1:\(first.port)") && error.description.contains("in use"), "\(error)")
        }
        #expect(throws: HTTPServerError.badHost("localhost")) { _ = try HTTPServer(.init(host: "localhost")) { Self.echo($0) } }
    }

    /// Header values that would split the response are left out.
    @Test func responseHeadersCannotBeSplit() throws {
        let server = try HTTPServer(.init()) { _ in HTTPResponse(headers: [("X-Bad", "a\r\nSet-Cookie: evil=1"), ("X-Good", "fine")], body: .bytes(Array("ok".utf8))) }
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let answer = client.read().text
        #expect(answer.contains("X-Good: fine") && !answer.contains("evil") && !answer.contains("X-Bad"), "\(answer)")
    }

    /// Random bytes thrown at a live server never stop it from answering the next client.
    @Test func randomBytesOnTheWireNeverStopTheServer() throws {
        let server = try HTTPServer(.init(requestTimeout: 0.3, idleTimeout: 0.3)) { Self.echo($0) }
        defer { server.stop() }
        var random = SeededGenerator(seed: SeededGenerator.seed(default: 77))
        for _ in 0..<30 {
            let client = try RawClient(port: server.port)
            client.send((0..<Int.random(in: 1...4000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            _ = client.read(within: 1)
        }
        let check = try curl(["http://127.0.0.1:\(server.port)/alive"])
        #expect(check.output == "GET /alive 0\n", "\(check.output)")
    }
}

/// Files named by untrusted text stay inside their folder.
@Suite struct ConfinedFileTests {
    @Test func namesThatLeaveTheFolderAreRefused() throws {
        let root = temporaryFolder()
        let folder = root.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data("in".utf8).write(to: folder.appendingPathComponent("sub/a.bin"))
        try Data("secret".utf8).write(to: root.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("link").path, withDestinationPath: root.appendingPathComponent("secret.txt").path)
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("inner").path, withDestinationPath: folder.appendingPathComponent("sub/a.bin").path)
        #expect(ConfinedFile.resolve("sub/a.bin", inside: folder.path)?.hasSuffix("/files/sub/a.bin") == true)
        #expect(ConfinedFile.resolve("inner", inside: folder.path)?.hasSuffix("/files/sub/a.bin") == true, "a link that stays inside is followed")
        for name in ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", "link", "sub", "", "sub/./a.bin", "sub//a.bin", "a\u{0}b", "..\\secret.txt", "missing"] {
            #expect(ConfinedFile.resolve(name, inside: folder.path) == nil, "\(name)")
        }
    }
}
