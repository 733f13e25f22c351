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
    }

    @Test func aNodesClockNeverGoesBack() {
        var clock = HybridLogicalClock(node: "phone")
        let first = clock.tick(wallMilliseconds: 1_000)
        let sameMillisecond = clock.tick(wallMilliseconds: 1_000)
        let wallWentBack = clock.tick(wallMilliseconds: 400)
        #expect(first < sameMillisecond && sameMillisecond < wallWentBack)
        #expect(wallWentBack.milliseconds == 1_000 && wallWentBack.counter == 2)
        #expect(clock.tick(wallMilliseconds: 2_000) == SyncClock(milliseconds: 2_000, counter: 0, node: "phone"))
    }

    @Test func aChangeMadeAfterSeeingAnotherOrdersAfterIt() throws {
        // The server's wall clock runs 30 s ahead of the phone's.
        var server = HybridLogicalClock(node: "server")
        var phone = HybridLogicalClock(node: "phone")
        let serverChange = server.tick(wallMilliseconds: 130_000)
        try phone.receive(serverChange, wallMilliseconds: 100_000)
        let phoneChange = phone.tick(wallMilliseconds: 100_001)
        #expect(phoneChange > serverChange, "the phone saw the server's change before making its own")
        // Both at the same millisecond and counter: each side still moves past what it saw.
        var left = HybridLogicalClock(node: "a")
        let seen = try left.receive(SyncClock(milliseconds: 5_000, counter: 7, node: "b"), wallMilliseconds: 5_000)
        #expect(seen == SyncClock(milliseconds: 5_000, counter: 8, node: "a"))
    }

    @Test func aClockFarAheadIsRefusedNamingIt() {
        var clock = HybridLogicalClock(node: "server", maximumDriftMilliseconds: 60_000)
        let wrong = SyncClock(milliseconds: 10_000_000, counter: 0, node: "broken-tablet")
        #expect { try clock.receive(wrong, wallMilliseconds: 1_000_000) } throws: { error in
            let message = "\(error)"
            return message.contains("broken-tablet") && message.contains("9000000 ms ahead") && message.contains("NTP")
        }
        #expect(clock.latest.milliseconds == 0, "a refused clock is not taken")
    }

    @Test func aFullCounterMovesToTheNextMillisecond() throws {
        var clock = HybridLogicalClock(node: "a", latest: SyncClock(milliseconds: 9, counter: .max, node: "a"))
        #expect(clock.tick(wallMilliseconds: 9) == SyncClock(milliseconds: 10, counter: 0, node: "a"))
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
