import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why the server cannot start, or a write that cannot go on.
public enum HTTPServerError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The address is not an IPv4 or IPv6 address.
    case badHost(String)
    /// Binding or listening failed: the port is taken, say.
    case cannotListen(host: String, port: Int, reason: String)
    /// The client closed the connection, stopped reading, or the server is stopping.
    case clientGone

    public var description: String {
        switch self {
        case .badHost(let host): "'\(host)' is not an IP address to listen on (127.0.0.1, ::1, 0.0.0.0)"
        case .cannotListen(let host, let port, let reason): "cannot listen on \(host):\(port): \(reason)"
        case .clientGone: "the client has gone"
        }
    }
}

/// A small HTTP/1.1 server over sockets, for local tools (no package can be fetched, and the
/// toolchain's Foundation has no server). One thread per connection, up to a limit; beyond it a
/// new connection gets 503 at once, so a flood never queues the ones being served.
///
/// What it does, and the limits that keep a bad client from hurting it:
/// - keep-alive (HTTP/1.1 by default), pipelined requests answered in order;
/// - request line, header and body limits (`HTTPRequestParser.Limits`), answered 414, 431, 413;
/// - a request must arrive whole within `requestTimeout` of its first byte (408), and an idle
///   connection closes after `idleTimeout`, so slow clients hold a thread for bounded time;
/// - a client that stops reading is dropped after `writeTimeout`;
/// - streamed bodies (chunked), for server-sent events and exports.
///
///     let server = try HTTPServer(.init(port: 0)) { request in .text("hello") }
///     print("http://127.0.0.1:\(server.port)/")
///     server.stop()
public final class HTTPServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// The address to listen on; only this machine by default.
        public var host: String
        /// 0: any free port (`port` says which).
        public var port: Int
        public var limits: HTTPRequestParser.Limits
        public var maxConnections: Int
        /// Seconds a request may take to arrive, from its first byte to its last.
        public var requestTimeout: Double
        /// Seconds a kept-alive connection waits for its next request.
        public var idleTimeout: Double
        /// Seconds a write may wait for a client that does not read.
        public var writeTimeout: Double
        /// The answer to a request the server refuses before any handler sees it (too large, too
        /// slow, malformed, too many connections): plain text by default; an API answers in its
        /// own error format.
        public var refusal: @Sendable (_ status: HTTPStatus, _ reason: String) -> HTTPResponse = { status, reason in
            .text("\(status.code) \(status.reason): \(reason)\n", status: status)
        }

        public init(
            host: String = "127.0.0.1", port: Int = 0, limits: HTTPRequestParser.Limits = .init(), maxConnections: Int = 64, requestTimeout: Double = 10,
            idleTimeout: Double = 15, writeTimeout: Double = 10
        ) {
            self.host = host
            self.port = port
            self.limits = limits
            self.maxConnections = maxConnections
            self.requestTimeout = requestTimeout
            self.idleTimeout = idleTimeout
            self.writeTimeout = writeTimeout
        }
    }

    /// Answers one request. Called on the connection's thread, so it may block (a stream waits
    /// for events); it must not keep the request past its answer.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    public let configuration: Configuration
    /// The port listened on.
    public let port: Int
    private let handler: Handler
    private let listener: Int32
    private let lock = NSLock()
    private var connections: Set<Int32> = []
    private var stopping = false
    private let running = DispatchGroup()

    /// Binds and listens now (an error says why it cannot), then accepts on a thread of its own.
    public init(_ configuration: Configuration, handler: @escaping Handler) throws(HTTPServerError) {
        self.configuration = configuration
        self.handler = handler
        (listener, port) = try Self.listen(host: configuration.host, port: configuration.port)
        running.enter()
        Thread { [self] in
            acceptLoop()
            running.leave()
        }.start()
    }

    /// Whether `stop()` was called.
    public var isStopping: Bool { lock.withLock { stopping } }

    /// Stops accepting, closes every connection (streams end at their next write), and waits
    /// up to `timeout` seconds for the connections' threads; true when they all finished.
    @discardableResult
    public func stop(timeout: Double = 10) -> Bool {
        let open: [Int32] = lock.withLock {
            stopping = true
            return Array(connections)
        }
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        return running.wait(timeout: .now() + timeout) == .success
    }

    // MARK: - Listening

    private static func listen(host: String, port: Int) throws(HTTPServerError) -> (Int32, Int) {
        guard (0...65535).contains(port) else { throw .cannotListen(host: host, port: port, reason: "a port is 0 to 65535") }
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
        } else {
            throw .badHost(host)
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .cannotListen(host: host, port: port, reason: String(cString: strerror(errno))) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound: Int32 =
            family == AF_INET
            ? withUnsafePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            : withUnsafePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        guard bound == 0, Glibc.listen(fd, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .cannotListen(host: host, port: port, reason: reason)
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let actual: UInt16 =
            family == AF_INET
            ? withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) } }
            : withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) } }
        return (fd, Int(actual))
    }

    /// Accepts until `stop`, then closes the listening socket, so the port refuses at once.
    private func acceptLoop() {
        defer { close(listener) }
        while !isStopping {
            var listening = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            // A short wait, so that `stop` is seen without closing the socket under `accept`.
            guard poll(&listening, 1, 100) > 0 else { continue }
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { continue }
            // Not inherited by processes a handler starts (Glibc's module has no accept4).
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let admitted: Bool = lock.withLock {
                guard !stopping, connections.count < configuration.maxConnections else { return false }
                connections.insert(fd)
                return true
            }
            guard admitted else {
                // Sent without waiting: a flood never holds the accepting thread.
                var busy = configuration.refusal(.serviceUnavailable, "busy: too many connections; try again")
                busy.headers.append(("Retry-After", "1"))
                let body: [UInt8] = if case .bytes(let bytes) = busy.body { bytes } else { [] }
                let bytes = busy.head(keepAlive: false, version: .http11) + body
                _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
                close(fd)
                continue
            }
            running.enter()
            Thread { [self] in
                HTTPConnection(fd: fd, server: self).serve()
                lock.withLock { _ = connections.remove(fd) }
                close(fd)
                running.leave()
            }.start()
        }
    }

    // MARK: - For the connections

    func answer(_ request: HTTPRequest) -> HTTPResponse { handler(request) }
}

/// One client connection: reads requests within the limits and deadlines, answers each.
struct HTTPConnection {
    let fd: Int32
    let server: HTTPServer

    func serve() {
        var timeout = timeval(tv_sec: Int(server.configuration.writeTimeout), tv_usec: Int(server.configuration.writeTimeout.truncatingRemainder(dividingBy: 1) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var parser = HTTPRequestParser(limits: server.configuration.limits)
        var idleSince = Date()
        var requestStarted: Date?
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while !server.isStopping {
            switch parser.next() {
            case .request(let request):
                requestStarted = nil
                guard respond(to: request) else { return }
                idleSince = Date()
            case .failure(let failure):
                sendLast(server.configuration.refusal(failure.status, failure.reason))
                drainBeforeClosing()
                return
            case .needMore:
                let partial = parser.hasPartialRequest
                if partial && requestStarted == nil { requestStarted = Date() }
                let deadline = partial ? requestStarted!.addingTimeInterval(server.configuration.requestTimeout) : idleSince.addingTimeInterval(server.configuration.idleTimeout)
                let wait = deadline.timeIntervalSinceNow
                var readable = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = wait > 0 ? poll(&readable, 1, Int32(min(wait * 1000, 1000).rounded(.up))) : 0
                if ready == 0 {
                    guard Date() >= deadline else { continue }
                    if partial {
                        sendLast(server.configuration.refusal(.requestTimeout, "the request did not arrive whole within \(server.configuration.requestTimeout) s"))
                    }
                    return
                }
                if ready < 0 && errno == EINTR { continue }
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                parser.append(buffer[0..<count])
            }
        }
    }

    /// Sends the answer; false when the connection must close.
    private func respond(to request: HTTPRequest) -> Bool {
        let response = server.answer(request)
        let keepAlive = request.keepsAlive && !server.isStopping
        let headOnly = request.method == "HEAD"
        do {
            switch response.body {
            case .bytes(let body):
                try sendAll(response.head(keepAlive: keepAlive, version: request.version) + (headOnly ? [] : body))
                return keepAlive
            case .stream(let write):
                try sendAll(response.head(keepAlive: keepAlive, version: request.version))
                if headOnly { return keepAlive }
                let writer = HTTPBodyWriter(chunked: request.version == .http11, stopping: { server.isStopping }) { bytes in
                    guard !server.isStopping else { throw HTTPServerError.clientGone }
                    try sendAll(bytes)
                }
                try write(writer)
                try writer.finish()
                return keepAlive && request.version == .http11
            }
        } catch {
            return false
        }
    }

    /// An answer before the connection closes (a refused request), sent if the client still reads.
    private func sendLast(_ response: HTTPResponse) {
        guard case .bytes(let body) = response.body else { return }
        try? sendAll(response.head(keepAlive: false, version: .http11) + body)
    }

    /// Reads and drops what the client still sends after a refusal, for a bounded time, before the
    /// connection closes. Closing a socket with unread bytes sends a reset, and a client still
    /// sending its body would see "connection reset" instead of the refusal (a lingering close).
    private func drainBeforeClosing() {
        shutdown(fd, Int32(SHUT_WR))
        let deadline = Date().addingTimeInterval(HTTPConnection.lingeringTime)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while !server.isStopping {
            let wait = deadline.timeIntervalSinceNow
            guard wait > 0 else { return }
            var readable = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&readable, 1, Int32(min(wait, 0.5) * 1000))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
        }
    }

    /// How long a refused client may go on sending before the connection closes anyway.
    static let lingeringTime: TimeInterval = 5

    /// Every byte, or `clientGone` (closed, reset, or not reading within the write timeout).
    private func sendAll(_ bytes: [UInt8]) throws(HTTPServerError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                throw .clientGone
            }
            offset += sent
        }
    }
}

/// Runs async `body` on the calling connection's thread and waits for it: a handler is called on
/// a thread of the server's own, not one of the concurrency pool's, so waiting there holds no
/// pool thread.
///
///     let answer = try waitingOnThisThread { try await store.count(Airport.self) }
public func waitingOnThisThread<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try box.result!.get()
}

/// The result a waiting thread reads once the task signalled it.
private final class ResultBox<T: Sendable>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
