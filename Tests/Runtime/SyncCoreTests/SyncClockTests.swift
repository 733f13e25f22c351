import SyncCore
import Testing

/// The hybrid logical clock orders changes across nodes whose wall clocks disagree.
@Suite struct SyncClockTests {
    @Test func textSortsAsClocksDoAndReadsBack() throws {
        var generator = SeededGenerator(seed: 7)
        let clocks = (0..<500).map { _ in
            SyncClock(
                milliseconds: Int64.random(in: 0...3, using: &generator) * 1_000_000_000_000 + Int64.random(in: 0...9, using: &generator),
                counter: UInt32.random(in: 0...3, using: &generator) * 0x1000_0000, node: ["a", "b", "ipad-7", "server"].randomElement(using: &generator)!)
        }
        #expect(clocks.sorted().map(\.text) == clocks.map(\.text).sorted())
        for clock in clocks { #expect(SyncClock(text: clock.text) == clock) }
        #expect(SyncClock(text: "001796069700125-00000002-server")?.counter == 2)
        #expect(SyncClock(text: "1796069700125-00000002-server") == nil, "too few digits")
        #expect(SyncClock(text: "001796069700125-0000000g-server") == nil, "not hexadecimal")
        #expect(SyncClock(text: "001796069700125-00000002-") == nil, "no node")
        #expect(SyncClock(text: "001796069700125-00000002-a-b")?.node == "a-b", "a node may hold dashes")
        #expect(SyncClock(milliseconds: -5, counter: 0, node: "a").text == "000000000000000-00000000-a")
        #expect(SyncClock(text: "+01796069700125-00000002-server") == nil, "only the exact spelling reads back")
        #expect(SyncClock(text: "001796069700125-0000000A-server") == nil, "lowercase hexadecimal only")
        #expect(SyncClock(text: "001796069700125-00000002-sérvér") == nil, "nodes are ASCII")
        #expect(SyncClock(text: "001796069700125-00000002-\u{301}x") == nil, "a combining mark is no node")
        // Byte order, as the text sorts and as a "C" collation compares, not Swift's string order.
        #expect(SyncClock(milliseconds: 1, counter: 0, node: "B") < SyncClock(milliseconds: 1, counter: 0, node: "a"))
    }

    @Test func aNodeNameIsCheckedAndAWallClockOutOfRangeRefused() throws {
        #expect(throws: SyncClockError.badNode("")) { try HybridLogicalClock(node: "") }
        #expect(throws: SyncClockError.badNode("ipad 7")) { try HybridLogicalClock(node: "ipad 7") }
        #expect(throws: SyncClockError.badNode(String(repeating: "a", count: 65))) { try HybridLogicalClock(node: String(repeating: "a", count: 65)) }
        var clock = try HybridLogicalClock(node: "ipad-7")
        // Microseconds passed as milliseconds.
        let microseconds: Int64 = 1_796_069_700_125_000
        #expect { _ = try clock.tick(wallMilliseconds: microseconds) } throws: { "\($0)".contains("pass milliseconds since 1970") }
        var last = try HybridLogicalClock(node: "a", latest: SyncClock(milliseconds: SyncClock.maximumMilliseconds, counter: .max, node: "a"))
        #expect(throws: SyncClockError.outOfRange(wallMilliseconds: 5)) { try last.tick(wallMilliseconds: 5) }
    }

    @Test func aNodesClockNeverGoesBack() throws {
        var clock = try HybridLogicalClock(node: "phone")
        let first = try clock.tick(wallMilliseconds: 1_000)
        let sameMillisecond = try clock.tick(wallMilliseconds: 1_000)
        let wallWentBack = try clock.tick(wallMilliseconds: 400)
        #expect(first < sameMillisecond && sameMillisecond < wallWentBack)
        #expect(wallWentBack.milliseconds == 1_000 && wallWentBack.counter == 2)
        #expect(try clock.tick(wallMilliseconds: 2_000) == SyncClock(milliseconds: 2_000, counter: 0, node: "phone"))
    }

    @Test func aChangeMadeAfterSeeingAnotherOrdersAfterIt() throws {
        // The server's wall clock runs 30 s ahead of the phone's.
        var server = try HybridLogicalClock(node: "server")
        var phone = try HybridLogicalClock(node: "phone")
        let serverChange = try server.tick(wallMilliseconds: 130_000)
        try phone.receive(serverChange, wallMilliseconds: 100_000)
        let phoneChange = try phone.tick(wallMilliseconds: 100_001)
        #expect(phoneChange > serverChange, "the phone saw the server's change before making its own")
        // Both at the same millisecond and counter: each side still moves past what it saw.
        var left = try HybridLogicalClock(node: "a")
        let seen = try left.receive(SyncClock(milliseconds: 5_000, counter: 7, node: "b"), wallMilliseconds: 5_000)
        #expect(seen == SyncClock(milliseconds: 5_000, counter: 8, node: "a"))
    }

    @Test func aClockFarAheadIsRefusedNamingIt() throws {
        var clock = try HybridLogicalClock(node: "server", maximumDriftMilliseconds: 60_000)
        let wrong = SyncClock(milliseconds: 10_000_000, counter: 0, node: "broken-tablet")
        #expect { try clock.receive(wrong, wallMilliseconds: 1_000_000) } throws: { error in
            let message = "\(error)"
            return message.contains("broken-tablet") && message.contains("9000000 ms ahead") && message.contains("NTP")
        }
        #expect(clock.latest.milliseconds == 0, "a refused clock is not taken")
    }

    @Test func aFullCounterMovesToTheNextMillisecond() throws {
        var clock = try HybridLogicalClock(node: "a", latest: SyncClock(milliseconds: 9, counter: .max, node: "a"))
        #expect(try clock.tick(wallMilliseconds: 9) == SyncClock(milliseconds: 10, counter: 0, node: "a"))
    }
}

/// A small deterministic generator, so that a failing case can be run again.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state = state &+ 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
