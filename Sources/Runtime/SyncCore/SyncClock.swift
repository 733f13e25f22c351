import Foundation

/// When a change was made, as a hybrid logical clock gives it: the wall clock in milliseconds,
/// a counter for changes within one millisecond (or behind a clock seen from elsewhere), and
/// the node that made it, which breaks ties. Clocks order changes across devices and the
/// server so that every one of them picks the same winner.
///
///     let clock = SyncClock(milliseconds: 1_796_069_700_125, counter: 0, node: "ipad-7")
public struct SyncClock: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970, UTC.
    public var milliseconds: Int64
    /// Changes within the same millisecond, counted.
    public var counter: UInt32
    /// The device or server that made the change.
    public var node: String

    /// The largest millisecond a clock holds: 15 digits, the year 33658.
    public static let maximumMilliseconds: Int64 = 999_999_999_999_999

    /// A clock of its parts; milliseconds outside 0 through `maximumMilliseconds` are brought
    /// to the nearer end, so that every clock has a text that sorts.
    ///
    ///     let clock = SyncClock(milliseconds: 1_796_069_700_125, counter: 2, node: "server")
    public init(milliseconds: Int64, counter: UInt32, node: String) {
        self.milliseconds = min(max(milliseconds, 0), Self.maximumMilliseconds)
        self.counter = counter
        self.node = node
    }

    /// Earlier: by milliseconds, then counter, then node.
    public static func < (left: SyncClock, right: SyncClock) -> Bool {
        (left.milliseconds, left.counter, left.node) < (right.milliseconds, right.counter, right.node)
    }

    /// The clock as text that sorts as clocks do: 15 digits of milliseconds, 8 hexadecimal
    /// digits of counter, the node (`001796069700125-00000002-server`).
    public var text: String {
        let digits = String(milliseconds)
        let counterDigits = String(counter, radix: 16)
        return String(repeating: "0", count: max(0, 15 - digits.count)) + digits + "-"
            + String(repeating: "0", count: 8 - counterDigits.count) + counterDigits + "-" + node
    }

    /// The clock `text` spells, or nil for text that is not one.
    ///
    ///     let clock = SyncClock(text: "001796069700125-00000002-server")
    public init?(text: String) {
        let parts = text.split(separator: "-", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 15, parts[1].count == 8, !parts[2].isEmpty,
            parts[0].allSatisfy(\.isASCIIDigit), let milliseconds = Int64(parts[0]), let counter = UInt32(parts[1], radix: 16)
        else { return nil }
        self.init(milliseconds: milliseconds, counter: counter, node: String(parts[2]))
    }

    /// The clock's text.
    public var description: String { text }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

/// A clock that came from elsewhere too far ahead of this one's wall clock to be taken: the
/// other machine's clock is wrong, and taking it would drag every later change with it.
public struct SyncClockError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The clock refused.
    public var clock: SyncClock
    /// How far ahead of the wall clock it was, in milliseconds.
    public var aheadMilliseconds: Int64
    /// The most that is accepted, in milliseconds.
    public var allowedMilliseconds: Int64

    /// What was refused, and what to check.
    public var description: String {
        "the clock \(clock) of node '\(clock.node)' is \(aheadMilliseconds) ms ahead of this machine's (at most \(allowedMilliseconds) ms is accepted): "
            + "check the clocks of both machines (NTP)"
    }
}

/// A node's hybrid logical clock (Kulkarni et al., 2014): it stays close to the wall clock,
/// never goes back, and is always ahead of every clock the node has seen, so a change made
/// after seeing another is ordered after it even when the wall clocks disagree.
///
///     var clock = HybridLogicalClock(node: "ipad-7")
///     let stamp = clock.tick(wallMilliseconds: now)
public struct HybridLogicalClock: Sendable {
    /// The node this clock stamps changes for.
    public let node: String
    /// The latest clock given or seen.
    public private(set) var latest: SyncClock
    /// How far ahead of the wall clock a received clock may be.
    public let maximumDriftMilliseconds: Int64

    /// A clock for `node`, continuing from `latest` when the node kept it (it must never go back).
    ///
    ///     var clock = HybridLogicalClock(node: "ipad-7", latest: saved)
    public init(node: String, latest: SyncClock? = nil, maximumDriftMilliseconds: Int64 = 60_000) {
        self.node = node
        self.latest = SyncClock(milliseconds: latest?.milliseconds ?? 0, counter: latest?.counter ?? 0, node: node)
        self.maximumDriftMilliseconds = maximumDriftMilliseconds
    }

    /// The clock of a change made now on this node.
    ///
    ///     let stamp = clock.tick(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
    public mutating func tick(wallMilliseconds wall: Int64) -> SyncClock {
        if wall > latest.milliseconds {
            latest = SyncClock(milliseconds: wall, counter: 0, node: node)
        } else {
            advanceCounter(from: latest.counter)
        }
        return latest
    }

    /// Takes in a clock seen from another node, so that this node's later changes order after
    /// it; refuses one too far ahead of the wall clock (`SyncClockError`).
    ///
    ///     try clock.receive(pushed, wallMilliseconds: now)
    @discardableResult
    public mutating func receive(_ remote: SyncClock, wallMilliseconds wall: Int64) throws(SyncClockError) -> SyncClock {
        let ahead = remote.milliseconds - wall
        guard ahead <= maximumDriftMilliseconds else {
            throw SyncClockError(clock: remote, aheadMilliseconds: ahead, allowedMilliseconds: maximumDriftMilliseconds)
        }
        let milliseconds = max(latest.milliseconds, remote.milliseconds, wall)
        if milliseconds == latest.milliseconds && milliseconds == remote.milliseconds {
            latest.milliseconds = milliseconds
            advanceCounter(from: max(latest.counter, remote.counter))
        } else if milliseconds == latest.milliseconds {
            advanceCounter(from: latest.counter)
        } else if milliseconds == remote.milliseconds {
            latest.milliseconds = milliseconds
            advanceCounter(from: remote.counter)
        } else {
            latest = SyncClock(milliseconds: milliseconds, counter: 0, node: node)
        }
        return latest
    }

    /// The counter one past `counter`; past its largest value, the next millisecond instead,
    /// so the clock still only moves forward.
    private mutating func advanceCounter(from counter: UInt32) {
        if counter == .max {
            latest = SyncClock(milliseconds: latest.milliseconds + 1, counter: 0, node: node)
        } else {
            latest = SyncClock(milliseconds: latest.milliseconds, counter: counter + 1, node: node)
        }
    }
}
