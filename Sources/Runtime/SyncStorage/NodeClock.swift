import SyncCore
import Synchronization

/// A node's hybrid logical clock, shared by the transactions that stamp its changes (a store's
/// transaction body runs on the store's executor, not the node's).
package final class NodeClock: Sendable {
    private let state: Mutex<HybridLogicalClock>
    package let node: String
    package let wallClock: @Sendable () -> Int64

    package init(node: String, latest: SyncClock? = nil, wallClock: @escaping @Sendable () -> Int64) throws(SyncClockError) {
        state = Mutex(try HybridLogicalClock(node: node, latest: latest))
        self.node = node
        self.wallClock = wallClock
    }

    /// The clock of a change made now.
    package func tick() throws(SyncClockError) -> SyncClock {
        try tick(wallMilliseconds: wallClock())
    }

    /// The clock of a change made at `wall` (a transaction's commit time): after every clock
    /// given or seen before, as a change made after them must be.
    package func tick(wallMilliseconds wall: Int64) throws(SyncClockError) -> SyncClock {
        try state.withLock { clock throws(SyncClockError) in try clock.tick(wallMilliseconds: wall) }
    }

    /// Takes in another node's clock; refuses one too far ahead of the time as this node knows
    /// it: its wall clock, or its latest clock where that is later (a wall clock that went back).
    package func receive(_ remote: SyncClock) throws(SyncClockError) {
        let wall = wallClock()
        _ = try state.withLock { clock throws(SyncClockError) in try clock.receive(remote, wallMilliseconds: max(wall, clock.latest.milliseconds)) }
    }

    /// The time as this node knows it, in milliseconds: its wall clock, or its latest clock
    /// where that is later.
    package var now: Int64 { max(wallClock(), latest.milliseconds) }

    /// Takes in a clock the node must order after whatever its wall clock says: the server's
    /// (a device trusts it over its own wall clock), or a value's it stamps over.
    package func advance(past remote: SyncClock) {
        state.withLock { clock in
            guard remote > clock.latest else { return }
            // Received at the remote's own time, the drift check cannot refuse it.
            _ = try? clock.receive(remote, wallMilliseconds: remote.milliseconds)
        }
    }

    /// The clock a node stamps a change with when the value it changes already has `existing`,
    /// which is not earlier than `proposed` (a skewed clock): the next one after it.
    package func after(_ existing: SyncClock, proposed: SyncClock) -> SyncClock {
        guard existing >= proposed else { return proposed }
        advance(past: existing)
        return (try? tick(wallMilliseconds: existing.milliseconds)) ?? proposed
    }

    /// The latest clock given or seen.
    package var latest: SyncClock { state.withLock { $0.latest } }
}
