import CPostgreSQL
import Foundation
import SQLDialects

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Listens on a notification channel (`LISTEN`) with a connection of its own, on a thread of its
/// own, and calls `onNotify` for each notification that arrives. A connection that is lost (a
/// restarted server, a cut link) is made again with growing pauses; `onNotify` is also called
/// after every (re)connection, and after every failed attempt, since what was sent meanwhile is
/// unknown: the listener's user catches up from its own record (the store's history, by token),
/// every few seconds at most while no connection listens.
///
///     let listener = PostgresListener(target: url, channel: "schemagen_commits") { wake() }
///     defer { listener.stop() }
public final class PostgresListener: @unchecked Sendable {
    /// Silence after which the connection is checked with a query: a link cut without a reset
    /// is noticed within this time.
    public static let checkInterval: Double = 2
    /// How long the check (or a connection attempt) waits on a link that stopped answering.
    public static let networkTimeout: Double = 4
    private let lock = NSLock()
    private var stopped = false
    private var running = true
    private let stopPipe: (read: Int32, write: Int32)

    /// Starts listening at once, in the background.
    ///
    ///     let listener = PostgresListener(target: url, channel: "schemagen_commits", applicationName: "cache warmer") { cache.refresh() }
    public init(target: String, channel: String, applicationName: String = "schemagen listener", onNotify: @escaping @Sendable () -> Void) {
        var descriptors: [Int32] = [-1, -1]
        if pipe(&descriptors) != 0 { descriptors = [-1, -1] }
        stopPipe = (descriptors[0], descriptors[1])
        let thread = Thread { [self] in
            run(target: target, channel: channel, applicationName: applicationName, onNotify: onNotify)
            lock.lock()
            running = false
            lock.unlock()
            close(stopPipe.read)
            close(stopPipe.write)
        }
        thread.name = "schemagen listener"
        thread.start()
    }

    /// Stops listening; the thread ends and closes its connection.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        if running {
            var byte: UInt8 = 1
            _ = write(stopPipe.write, &byte, 1)
        }
    }

    deinit { stop() }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    /// Waits up to `seconds` for the stop signal or `socket` to be readable: true when stopped.
    private func wait(_ seconds: Double, socket: Int32 = -1) -> (stopped: Bool, readable: Bool) {
        var descriptors = [pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
        if socket >= 0 { descriptors.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0)) }
        let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(seconds * 1000))
        if ready < 0 { return (isStopped, false) }
        return (descriptors[0].revents != 0 || isStopped, socket >= 0 && descriptors[1].revents != 0)
    }

    private func run(target: String, channel: String, applicationName: String, onNotify: @Sendable () -> Void) {
        var pause = 0.05
        while !isStopped {
            guard let connection = try? PostgresConnection(target, applicationName: applicationName, networkTimeout: Self.networkTimeout),
                (try? connection.execute("LISTEN \(PostgresDialect().quote(channel))")) != nil,
                let socket = connection.socket
            else {
                // No one listens: the user looks for itself, as often as attempts are made.
                onNotify()
                if wait(pause).stopped { return }
                pause = min(pause * 2, 2)
                continue
            }
            pause = 0.05
            // Connected: whatever was sent while no one listened is caught up now.
            onNotify()
            var silent = 0.0
            while true {
                let (stopped, readable) = wait(0.25, socket: socket)
                if stopped { return }
                if readable {
                    silent = 0
                    guard let count = connection.consumeNotifications() else { break }
                    if count > 0 { onNotify() }
                    continue
                }
                silent += 0.25
                if silent >= Self.checkInterval {
                    silent = 0
                    guard (try? connection.execute("SELECT 1")) != nil else { break }
                    // The check's round trip may have brought notifications with it.
                    if let count = connection.consumeNotifications(), count > 0 { onNotify() }
                }
            }
        }
    }
}

extension PostgresConnection {
    /// The connection's socket, for waiting on it with poll(2); nil when it is closed.
    public var socket: Int32? {
        let descriptor = PQsocket(rawHandle)
        return descriptor >= 0 ? descriptor : nil
    }

    /// Reads what the server sent and counts the notifications among it; nil when the
    /// connection is lost.
    public func consumeNotifications() -> Int? {
        guard PQconsumeInput(rawHandle) == 1 else { return nil }
        var count = 0
        while let notification = PQnotifies(rawHandle) {
            count += 1
            PQfreemem(notification)
        }
        return count
    }
}
