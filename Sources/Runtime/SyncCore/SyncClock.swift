import Foundation

/// When a change was made, as a hybrid logical clock gives it: the wall clock in milliseconds,
/// a counter for changes within one millisecond (or behind a clock seen from elsewhere), and
/// the node that made it, which breaks ties. Clocks order changes across devices and the
/// server so that every one of them picks the same winner.
///
///     let clock = SyncClock(milliseconds: 1_796_069_700_125, counter: 0, node: "ipad-7")
public struct SyncClock: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970, UTC.
    public fileprivate(set) var milliseconds: Int64
    /// Changes within the same millisecond, counted.
    public fileprivate(set) var counter: UInt32
    /// The device or server that made the change (`isNodeName`).
    public fileprivate(set) var node: String

    /// The largest millisecond a clock holds: 15 digits, the year 33658.
    public static let maximumMilliseconds: Int64 = 999_999_999_999_999

    /// A clock of its parts; milliseconds outside 0 through `maximumMilliseconds` are brought
    /// to the nearer end. A node that is no node name (`isNodeName`) gives a clock whose text
    /// does not read back: nodes come from `HybridLogicalClock`, which checks them.
    ///
    ///     let clock = SyncClock(milliseconds: 1_796_069_700_125, counter: 2, node: "server")
    public init(milliseconds: Int64, counter: UInt32, node: String) {
        self.milliseconds = min(max(milliseconds, 0), Self.maximumMilliseconds)
        self.counter = counter
        self.node = node
    }

    /// Whether `node` can name a node: 1 to 64 ASCII letters, digits, `.`, `_`, `:` or `-`,
    /// so that clocks compare the same as bytes, in Swift and under any database collation
    /// that orders ASCII by code (PostgreSQL: `COLLATE "C"`).
    public static func isNodeName(_ node: String) -> Bool {
        let bytes = node.utf8
        return (1...64).contains(bytes.count)
            && bytes.allSatisfy { byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 46 || byte == 95 || byte == 58 || byte == 45
            }
    }

    /// Earlier: by milliseconds, then counter, then the node's bytes.
    public static func < (left: SyncClock, right: SyncClock) -> Bool {
        if left.milliseconds != right.milliseconds { return left.milliseconds < right.milliseconds }
        if left.counter != right.counter { return left.counter < right.counter }
        return left.node.utf8.lexicographicallyPrecedes(right.node.utf8)
    }

    /// The clock as text that sorts as clocks do: 15 digits of milliseconds, 8 lowercase
    /// hexadecimal digits of counter, the node (`001796069700125-00000002-server`).
    public var text: String {
        let digits = String(milliseconds)
        let counterDigits = String(counter, radix: 16)
        return String(repeating: "0", count: max(0, 15 - digits.count)) + digits + "-"
            + String(repeating: "0", count: 8 - counterDigits.count) + counterDigits + "-" + node
    }

    /// The clock `text` spells exactly as `text` writes it, or nil for text that is not one.
    ///
    ///     let clock = SyncClock(text: "001796069700125-00000002-server")
    public init?(text: String) {
        self.init(utf8: Array(text.utf8)[...])
    }

    /// The clock the UTF-8 `bytes` spell, as `init(text:)` reads it: digits read in place, as a
    /// page of records holds thousands of clocks.
    init?(utf8 bytes: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        guard bytes.count > 25, bytes[start + 15] == 45, bytes[start + 24] == 45 else { return nil }
        var milliseconds: Int64 = 0
        for byte in bytes[start..<start + 15] {
            guard (48...57).contains(byte) else { return nil }
            milliseconds = milliseconds * 10 + Int64(byte - 48)
        }
        var counter: UInt32 = 0
        for byte in bytes[start + 16..<start + 24] {
            let digit: UInt8
            switch byte {
            case 48...57: digit = byte - 48
            case 97...102: digit = byte - 87
            default: return nil
            }
            counter = counter << 4 | UInt32(digit)
        }
        let node = String(decoding: bytes[(start + 25)...], as: UTF8.self)
        guard Self.isNodeName(node) else { return nil }
        self.init(milliseconds: milliseconds, counter: counter, node: node)
    }

    /// The clock's text.
    public var description: String { text }
}

/// Why a clock could not be given or taken.
public enum SyncClockError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A clock from elsewhere too far ahead of this machine's wall clock: the other machine's
    /// clock is wrong, and taking it would drag every later change with it.
    case ahead(SyncClock, byMilliseconds: Int64, allowedMilliseconds: Int64)
    /// A wall clock past the year 33658 (milliseconds passed where microseconds were meant,
    /// say), or a clock that has run out of counters there.
    case outOfRange(wallMilliseconds: Int64)
    /// A node name that is none (`SyncClock.isNodeName`).
    case badNode(String)

    /// What went wrong, and what to check.
    public var description: String {
        switch self {
        case .ahead(let clock, let ahead, let allowed):
            "the clock \(clock) of node '\(clock.node)' is \(ahead) ms ahead of this machine's (at most \(allowed) ms is accepted): "
                + "check the clocks of both machines (NTP)"
        case .outOfRange(let wall):
            "the wall clock \(wall) is past the last millisecond a sync clock holds (\(SyncClock.maximumMilliseconds)): pass milliseconds since 1970"
        case .badNode(let node):
            "'\(node.prefix(80))' cannot name a node: use 1 to 64 ASCII letters, digits, '.', '_', ':' or '-'"
        }
    }
}

/// A node's hybrid logical clock (Kulkarni et al., 2014): it stays close to the wall clock,
/// never goes back, and is always ahead of every clock the node has seen, so a change made
/// after seeing another is ordered after it even when the wall clocks disagree.
///
///     var clock = try HybridLogicalClock(node: "ipad-7")
///     let stamp = try clock.tick(wallMilliseconds: now)
public struct HybridLogicalClock: Sendable {
    /// The node this clock stamps changes for.
    public let node: String
    /// The latest clock given or seen.
    public private(set) var latest: SyncClock
    /// How far ahead of the wall clock a received clock may be.
    public let maximumDriftMilliseconds: Int64

    /// A clock for `node`, continuing from `latest` when the node kept it (it must never go
    /// back); refuses a node that is no node name (`SyncClock.isNodeName`).
    ///
    ///     var clock = try HybridLogicalClock(node: "ipad-7", latest: saved)
    public init(node: String, latest: SyncClock? = nil, maximumDriftMilliseconds: Int64 = 60_000) throws(SyncClockError) {
        guard SyncClock.isNodeName(node) else { throw .badNode(node) }
        self.node = node
        self.latest = SyncClock(milliseconds: latest?.milliseconds ?? 0, counter: latest?.counter ?? 0, node: node)
        self.maximumDriftMilliseconds = max(0, maximumDriftMilliseconds)
    }

    /// The clock of a change made now on this node.
    ///
    ///     let stamp = try clock.tick(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
    public mutating func tick(wallMilliseconds wall: Int64) throws(SyncClockError) -> SyncClock {
        let wall = try checked(wall)
        if wall > latest.milliseconds {
            latest = SyncClock(milliseconds: wall, counter: 0, node: node)
        } else {
            try advanceCounter(from: latest.counter, wall: wall)
        }
        return latest
    }

    /// Takes in a clock seen from another node, so that this node's later changes order after
    /// it; refuses one too far ahead of the wall clock.
    ///
    ///     try clock.receive(pushed, wallMilliseconds: now)
    @discardableResult
    public mutating func receive(_ remote: SyncClock, wallMilliseconds wall: Int64) throws(SyncClockError) -> SyncClock {
        let wall = try checked(wall)
        let ahead = remote.milliseconds - wall
        guard ahead <= maximumDriftMilliseconds else { throw .ahead(remote, byMilliseconds: ahead, allowedMilliseconds: maximumDriftMilliseconds) }
        let milliseconds = max(latest.milliseconds, remote.milliseconds, wall)
        if milliseconds == latest.milliseconds && milliseconds == remote.milliseconds {
            try advanceCounter(from: max(latest.counter, remote.counter), wall: wall)
        } else if milliseconds == latest.milliseconds {
            try advanceCounter(from: latest.counter, wall: wall)
        } else if milliseconds == remote.milliseconds {
            latest.milliseconds = milliseconds
            try advanceCounter(from: remote.counter, wall: wall)
        } else {
            latest = SyncClock(milliseconds: milliseconds, counter: 0, node: node)
        }
        return latest
    }

    /// A wall clock a sync clock can hold (0 through `SyncClock.maximumMilliseconds`).
    private func checked(_ wall: Int64) throws(SyncClockError) -> Int64 {
        guard wall <= SyncClock.maximumMilliseconds else { throw .outOfRange(wallMilliseconds: wall) }
        return max(wall, 0)
    }

    /// The counter one past `counter`; past its largest value, the next millisecond instead,
    /// so the clock still only moves forward (and refuses to, at the last millisecond).
    private mutating func advanceCounter(from counter: UInt32, wall: Int64) throws(SyncClockError) {
        if counter < .max {
            latest = SyncClock(milliseconds: latest.milliseconds, counter: counter + 1, node: node)
        } else if latest.milliseconds < SyncClock.maximumMilliseconds {
            latest = SyncClock(milliseconds: latest.milliseconds + 1, counter: 0, node: node)
        } else {
            throw .outOfRange(wallMilliseconds: wall)
        }
    }
}
