import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy in front of a PostgreSQL server that can cut a connection at its COMMIT, as a
/// failover does at the worst moment: `.beforeCommit` drops the COMMIT (the server never sees it,
/// and rolls the transaction back), `.afterCommit` lets it through and drops the server's answer
/// (the transaction committed, and the client never hears it), and `.beforeStatement(prefix)`
/// drops the first simple query that starts with `prefix` (a `RELEASE` mid-transaction). It
/// reads the protocol's message framing from the client, so it knows a simple query's text
/// when one passes. Each new
/// connection goes to the server `upstream` names at that moment (the cluster's primary).
///
///     let proxy = try CommitCuttingProxy { cluster.leader()!.port }
///     proxy.cut = .afterCommit                       // the next COMMIT's answer is lost
///     let url = "postgresql://postgres@127.0.0.1:\(proxy.port)/db"
public final class CommitCuttingProxy: @unchecked Sendable {
    public enum Cut: Sendable, Equatable { case none, beforeCommit, afterCommit, beforeStatement(String) }

    public let port: Int
    private let listener: Int32
    private let upstream: @Sendable () -> Int?
    private let state = LockedValue<(cut: Cut, cuts: Int, stopped: Bool)>((.none, 0, false))

    /// What the next COMMIT meets; set back to `.none` once a connection was cut.
    public var cut: Cut {
        get { state.withLock { $0.cut } }
        set { state.withLock { $0.cut = newValue } }
    }

    /// How many connections were cut.
    public var cuts: Int { state.withLock { $0.cuts } }

    public init(upstream: @escaping @Sendable () -> Int?) throws {
        self.upstream = upstream
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }) == 0, listen(descriptor, 64) == 0 else {
            close(descriptor)
            throw TestDaemonError("the proxy cannot listen: \(String(cString: strerror(errno)))")
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    /// Stops accepting; open connections end when either side closes.
    public func stop() {
        let first = state.withLock { current -> Bool in
            defer { current.stopped = true }
            return !current.stopped
        }
        if first { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                break
            }
            guard let port = upstream() else {
                close(client)
                continue
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: port)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(client)
                close(server)
                continue
            }
            let thread = Thread { [self] in relay(client: client, server: server) }
            thread.start()
        }
        close(listener)
    }

    /// Copies bytes both ways, reading the client's messages to find a COMMIT.
    private func relay(client: Int32, server: Int32) {
        defer {
            close(client)
            close(server)
        }
        var pending: [UInt8] = []
        // The startup message (and an SSL request before it) has no type byte.
        var untyped = 1
        var answersDropped = false
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            var descriptors = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: server, events: Int16(POLLIN), revents: 0)]
            guard poll(&descriptors, 2, 1000) >= 0 else { return }
            if descriptors[1].revents != 0 {
                let count = read(server, &buffer, buffer.count)
                if count <= 0 { return }
                if answersDropped {
                    // The server answered the COMMIT: the client never hears it.
                    return
                }
                guard writeAll(client, buffer, count) else { return }
            }
            if descriptors[0].revents != 0 {
                let count = read(client, &buffer, buffer.count)
                if count <= 0 { return }
                pending += buffer[0..<count]
                // Whole messages are forwarded; a COMMIT is the proxy's to cut.
                while let (length, query) = nextMessage(pending, untyped: untyped > 0) {
                    if untyped > 0 {
                        // An SSL request (80877103) is followed by the real startup message.
                        let code = pending.count >= 8 ? Int(pending[4]) << 24 | Int(pending[5]) << 16 | Int(pending[6]) << 8 | Int(pending[7]) : 0
                        untyped = code == 80_877_103 ? 1 : 0
                    }
                    let message = Array(pending[0..<length])
                    pending.removeFirst(length)
                    if let query {
                        let isCommit = query == "COMMIT" || query == "COMMIT;"
                        let cut = state.withLock { current -> Cut in
                            let cut = current.cut
                            let applies: Bool
                            switch cut {
                            case .none: applies = false
                            case .beforeCommit, .afterCommit: applies = isCommit
                            case .beforeStatement(let prefix): applies = query.hasPrefix(prefix.uppercased())
                            }
                            guard applies else { return .none }
                            current.cut = .none
                            current.cuts += 1
                            return cut
                        }
                        switch cut {
                        case .beforeCommit, .beforeStatement: return
                        case .afterCommit: answersDropped = true
                        case .none: break
                        }
                    }
                    guard writeAll(server, message, message.count) else { return }
                }
            }
        }
    }

    /// The length of the first whole message in `bytes`, and a simple query's text (trimmed,
    /// upper-cased); nil until the message is whole.
    private func nextMessage(_ bytes: [UInt8], untyped: Bool) -> (Int, String?)? {
        let offset = untyped ? 0 : 1
        guard bytes.count >= offset + 4 else { return nil }
        let length = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
        let total = offset + length
        guard length >= 4, bytes.count >= total else { return nil }
        guard !untyped, bytes[0] == UInt8(ascii: "Q") else { return (total, nil) }
        return (total, String(decoding: bytes[5..<(total - 1)], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).uppercased())
    }

    private func writeAll(_ socket: Int32, _ bytes: [UInt8], _ count: Int) -> Bool {
        var sent = 0
        while sent < count {
            let written = bytes.withUnsafeBytes { write(socket, $0.baseAddress! + sent, count - sent) }
            if written <= 0 {
                if written < 0, errno == EINTR { continue }
                return false
            }
            sent += written
        }
        return true
    }
}
