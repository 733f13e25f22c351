import Foundation
import PostgresKit
import Testing

/// The listener's user catches up from its own record while no connection listens: a commit
/// made then is found within seconds, not only once a connection is made.
@Suite struct PostgresListenerTests {
    final class Count: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add() {
            lock.lock()
            value += 1
            lock.unlock()
        }
        var current: Int {
            lock.lock()
            defer { lock.unlock() }
            return value
        }
    }

    @Test func aListenerThatCannotConnectStillWakesItsUser() async throws {
        // A port nothing listens on: every attempt is refused at once.
        let count = Count()
        let listener = PostgresListener(target: "postgresql://nobody@127.0.0.1:9/none?connect_timeout=1", channel: "schemagen_commits") { count.add() }
        defer { listener.stop() }
        let deadline = Date().addingTimeInterval(10)
        while count.current < 3, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(count.current >= 3, "woken \(count.current) times in 10 s without a connection")
    }
}
