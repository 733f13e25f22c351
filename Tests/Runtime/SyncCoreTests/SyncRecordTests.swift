import SchemaMetadata
import SyncCore
import Testing

/// Records converge: the same changes merged in any order, any number of times, give the same
/// record, and the one an independent reference model computes.
@Suite struct SyncRecordTests {
    static let attributes = ["title", "notes", "isDone"]
    static let rules = SyncRules(conflicts: .lastWriterWins, counters: ["likes"])

    /// Random edits, deletes and counter increments by `nodes` nodes whose wall clocks are
    /// skewed, each node seeing some of the others' changes before making its own.
    static func changes(nodes: Int, count: Int, using generator: inout SeededGenerator) throws -> [SyncChange] {
        var clocks = try (0..<nodes).map { try HybridLogicalClock(node: "node-\($0)") }
        let skew = (0..<nodes).map { _ in Int64.random(in: -20_000...20_000, using: &generator) }
        var likes = [Int64](repeating: 0, count: nodes)
        var made: [SyncChange] = []
        var wall: Int64 = 1_000_000
        for _ in 0..<count {
            wall += Int64.random(in: 0...3, using: &generator)
            let node = Int.random(in: 0..<nodes, using: &generator)
            if let earlier = made.randomElement(using: &generator), let clock = earlier.clocks.values.first ?? earlier.deleted {
                try clocks[node].receive(clock, wallMilliseconds: wall + skew[node])
            }
            let clock = try clocks[node].tick(wallMilliseconds: wall + skew[node])
            var change = SyncChange()
            switch Int.random(in: 0..<10, using: &generator) {
            case 0: change.deleted = clock
            case 1, 2:
                likes[node] += Int64.random(in: -2...5, using: &generator)
                change.counters["likes"] = CounterTotal(total: likes[node], clock: clock)
            default:
                for attribute in attributes where Bool.random(using: &generator) {
                    change.values[attribute] = Bool.random(using: &generator) ? .text("v\(Int.random(in: 0..<100, using: &generator))") : .null
                    change.clocks[attribute] = clock
                }
            }
            made.append(change)
        }
        return made
    }

    /// What the record must be, computed without `SyncRecord`: for each attribute the value of
    /// the latest clock, for each node its latest counter total, the latest delete.
    struct Reference: Equatable {
        var values: [String: StoredValue] = [:]
        var likes: Int64 = 0
        var isDeleted = false

        init(_ changes: [SyncChange]) {
            var latest: [String: SyncClock] = [:]
            var totals: [String: CounterTotal] = [:]
            var deleted: SyncClock?
            for change in changes {
                for (attribute, clock) in change.clocks where latest[attribute].map({ clock > $0 }) ?? true {
                    latest[attribute] = clock
                    values[attribute] = change.values[attribute]
                }
                if let total = change.counters["likes"], totals[total.clock.node].map({ total.clock > $0.clock }) ?? true { totals[total.clock.node] = total }
                if let delete = change.deleted, deleted.map({ delete > $0 }) ?? true { deleted = delete }
            }
            likes = totals.values.reduce(0) { $0 + $1.total }
            let latestChange = (Array(latest.values) + totals.values.map(\.clock)).max()
            isDeleted = deleted.map { delete in latestChange.map { delete >= $0 } ?? true } ?? false
        }

        init(_ record: SyncRecord) {
            values = record.values
            likes = record.counter("likes")
            isDeleted = record.isDeleted
        }
    }

    @Test(arguments: 0..<20) func anyOrderAndRepeatsGiveTheSameRecord(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let changes = try Self.changes(nodes: 4, count: 60, using: &generator)
        var inOrder = SyncRecord()
        for change in changes { inOrder.merge(change, rules: Self.rules) }
        #expect(Reference(inOrder) == Reference(changes))
        for _ in 0..<5 {
            // Shuffled, and a third of the changes delivered twice (a push retried).
            let delivered = (changes + changes.filter { _ in Int.random(in: 0..<3, using: &generator) == 0 }).shuffled(using: &generator)
            var record = SyncRecord()
            for change in delivered { record.merge(change, rules: Self.rules) }
            #expect(record == inOrder)
        }
    }

    /// Replicas that took different changes, merged record into record, end as one replica
    /// that took them all: a device taking the server's record loses nothing of either.
    @Test(arguments: 0..<10) func recordsMergeAsTheirChangesWould(seed: UInt64) throws {
        var generator = SeededGenerator(seed: 100 + seed)
        let changes = try Self.changes(nodes: 3, count: 40, using: &generator)
        var all = SyncRecord()
        var left = SyncRecord()
        var right = SyncRecord()
        for change in changes {
            all.merge(change, rules: Self.rules)
            if Bool.random(using: &generator) { left.merge(change, rules: Self.rules) } else { right.merge(change, rules: Self.rules) }
        }
        var leftThenRight = left
        leftThenRight.merge(right)
        var rightThenLeft = right
        rightThenLeft.merge(left)
        #expect(leftThenRight == all && rightThenLeft == all)
        let again = leftThenRight.merge(all)
        #expect(!again.changedRecord && again.lost.isEmpty, "taking the same record again changes nothing")
    }

    @Test func aChangeMergedTwiceChangesNothingTheSecondTime() {
        let clock = SyncClock(milliseconds: 10, counter: 0, node: "a")
        let change = SyncChange(values: ["title": .text("Milk")], clocks: ["title": clock], counters: ["likes": CounterTotal(total: 2, clock: clock)])
        var record = SyncRecord()
        #expect(record.merge(change, rules: Self.rules).applied == ["title"])
        let again = record.merge(change, rules: Self.rules)
        #expect(!again.changedRecord && again.lost.isEmpty)
        #expect(record.counter("likes") == 2)
    }

    @Test func aDeleteWinsOverEarlierChangesAndLosesToLaterOnes() {
        func clock(_ milliseconds: Int64, _ node: String) -> SyncClock { SyncClock(milliseconds: milliseconds, counter: 0, node: node) }
        var record = SyncRecord()
        record.merge(SyncChange(values: ["title": .text("Milk")], clocks: ["title": clock(10, "a")]), rules: Self.rules)
        let deleting = record.merge(SyncChange(deleted: clock(20, "b")), rules: Self.rules)
        #expect(record.isDeleted && deleting.deletionChanged)
        // An edit made offline before the delete arrives later: the record stays deleted.
        record.merge(SyncChange(values: ["notes": .text("2 litres")], clocks: ["notes": clock(15, "c")]), rules: Self.rules)
        #expect(record.isDeleted)
        // An edit made after the delete brings it back, with every value it had.
        let reviving = record.merge(SyncChange(values: ["isDone": .integer(1)], clocks: ["isDone": clock(30, "a")]), rules: Self.rules)
        #expect(!record.isDeleted && reviving.deletionChanged)
        #expect(record.values == ["title": .text("Milk"), "notes": .text("2 litres"), "isDone": .integer(1)])
    }

    @Test func equalClocksKeepTheSameValueEverywhere() {
        let clock = SyncClock(milliseconds: 10, counter: 0, node: "a")
        let milk = SyncChange(values: ["title": .text("Milk")], clocks: ["title": clock], counters: ["likes": CounterTotal(total: 2, clock: clock)])
        let oat = SyncChange(values: ["title": .text("Oat milk")], clocks: ["title": clock], counters: ["likes": CounterTotal(total: 5, clock: clock)])
        var first = SyncRecord()
        first.merge(milk, rules: Self.rules)
        let second = first.merge(oat, rules: Self.rules)
        var other = SyncRecord()
        other.merge(oat, rules: Self.rules)
        let losing = other.merge(milk, rules: Self.rules)
        #expect(first == other && first.values["title"] == .text("Oat milk") && first.counter("likes") == 5)
        #expect(second.applied == ["title"] && losing.lost == ["title", "likes"], "the value that gave way is reported")
    }

    @Test func anUpdateAndADeleteWithOneClockLeaveTheRecordDeleted() {
        let clock = SyncClock(milliseconds: 10, counter: 0, node: "a")
        var record = SyncRecord()
        record.merge(SyncChange(values: ["title": .text("Milk")], clocks: ["title": clock], deleted: clock), rules: Self.rules)
        #expect(record.isDeleted)
    }

    @Test func aCounterStopsAtItsBounds() {
        var record = SyncRecord()
        record.merge(SyncChange(counters: ["likes": CounterTotal(total: .max, clock: SyncClock(milliseconds: 1, counter: 0, node: "a"))]), rules: Self.rules)
        record.merge(SyncChange(counters: ["likes": CounterTotal(total: 5, clock: SyncClock(milliseconds: 1, counter: 0, node: "b"))]), rules: Self.rules)
        #expect(record.counter("likes") == .max)
    }

    /// A value no node can name the increments of (an app update's migration made the row) is
    /// a placeholder total: the real totals replace it when they arrive, so it is not counted
    /// twice; without them it stands.
    @Test func aPlaceholderTotalGivesWayToTheRealOnes() throws {
        let unknown = SyncClock(milliseconds: 0, counter: 0, node: "unknown")
        let made = try #require(SyncRecord(values: [:], clocks: [:], counterTotals: ["likes": ["unknown": CounterTotal(total: 3, clock: unknown)]]))
        var server = SyncRecord()
        server.merge(SyncChange(counters: ["likes": CounterTotal(total: 3, clock: SyncClock(milliseconds: 5, counter: 0, node: "server"))]), rules: Self.rules)
        var local = made
        local.dropPlaceholderTotals(of: "unknown", where: server)
        local.merge(server)
        #expect(local.counter("likes") == 3, "not 6")
        var alone = made
        alone.dropPlaceholderTotals(of: "unknown", where: SyncRecord())
        #expect(alone.counter("likes") == 3, "kept where no real total came")
    }

    @Test func serverWinsKeepsAValueTheDeviceHadNotSeen() {
        let rules = SyncRules(conflicts: .serverWins)
        func clock(_ milliseconds: Int64, _ node: String) -> SyncClock { SyncClock(milliseconds: milliseconds, counter: 0, node: node) }
        var record = SyncRecord()
        record.merge(SyncChange(values: ["title": .text("Milk")], clocks: ["title": clock(10, "server")]), rules: rules, fromServer: true)
        record.merge(SyncChange(values: ["title": .text("Oat milk")], clocks: ["title": clock(20, "server")]), rules: rules, fromServer: true)
        // The device edited the value of clock 10, not knowing the server's of clock 20: it
        // loses, though its clock is later.
        let stale = record.merge(SyncChange(values: ["title": .text("Soy milk")], clocks: ["title": clock(30, "phone")], seen: ["title": clock(10, "server")]), rules: rules)
        #expect(stale.lost == ["title"] && record.values["title"] == .text("Oat milk"))
        // Having pulled the server's value, its next edit applies.
        let current = record.merge(SyncChange(values: ["title": .text("Soy milk")], clocks: ["title": clock(40, "phone")], seen: ["title": clock(20, "server")]), rules: rules)
        #expect(current.applied == ["title"] && record.values["title"] == .text("Soy milk"))
        // Under last writer wins, the same stale edit would have won.
        var lastWriter = SyncRecord()
        lastWriter.merge(SyncChange(values: ["title": .text("Oat milk")], clocks: ["title": clock(20, "server")]), rules: Self.rules)
        lastWriter.merge(SyncChange(values: ["title": .text("Soy milk")], clocks: ["title": clock(30, "phone")], seen: ["title": clock(10, "server")]), rules: Self.rules)
        #expect(lastWriter.values["title"] == .text("Soy milk"))
    }

    @Test func whatCannotBeMergedIsReportedNotDropped() {
        let clock = SyncClock(milliseconds: 10, counter: 0, node: "a")
        var record = SyncRecord()
        let outcome = record.merge(
            SyncChange(
                values: ["likes": .integer(5), "title": .text("no clock")], clocks: ["likes": clock],
                counters: ["title": CounterTotal(total: 1, clock: clock)]), rules: Self.rules)
        #expect(outcome.lost == ["likes", "title"])
        #expect(!outcome.changedRecord && record == SyncRecord())
    }
}

/// The rules come from what generated metadata declares.
@Suite struct SyncRulesTests {
    @Test func rulesFollowTheDeclaration() {
        let rules = SyncRules(SyncDescriptor(scope: .user(path: ["list", "owner"]), conflicts: .serverWins, counters: ["likes", "views"]))
        #expect(rules == SyncRules(conflicts: .serverWins, counters: ["likes", "views"]))
        #expect(SyncRules(SyncDescriptor(scope: .all)) == SyncRules())
    }
}
