import SchemaMetadata

/// How concurrent changes to one synced entity are settled, as its `sync:` entry declares.
public struct SyncRules: Sendable, Hashable {
    /// Who wins when two nodes changed the same attribute: the schema's own policies.
    public typealias Conflicts = SyncDescriptor.Conflicts

    /// The policy for the entity's attributes.
    public var conflicts: Conflicts
    /// Integer attributes whose changes add up instead of replacing each other.
    public var counters: Set<String>

    /// Rules of a policy and counters.
    ///
    ///     let rules = SyncRules(conflicts: .lastWriterWins, counters: ["likes"])
    public init(conflicts: Conflicts = .lastWriterWins, counters: Set<String> = []) {
        self.conflicts = conflicts
        self.counters = counters
    }

    /// The rules an entity's generated metadata declares.
    ///
    ///     let rules = SyncRules(TodoSchema.descriptor.entity(named: "TodoItem")!.sync!)
    public init(_ declared: SyncDescriptor) {
        self.init(conflicts: declared.conflicts, counters: Set(declared.counters))
    }
}

/// One node's changes to one record, as it sends them: each changed attribute's value with its
/// clock, each counter's running total of the node's own increments, and a delete's clock.
public struct SyncChange: Sendable, Hashable {
    /// The attribute values, by attribute name.
    public var values: [String: StoredValue]
    /// Each value's clock, by attribute name: every key of `values` has one.
    public var clocks: [String: SyncClock]
    /// For `serverWins` entities: the clock of the value each change was made over, as the node
    /// last saw it (absent when it had seen none).
    public var seen: [String: SyncClock]
    /// Counters: the sum of every increment this node ever made to each, with the clock of its
    /// latest. Totals, not deltas, so that a change sent twice counts once.
    public var counters: [String: CounterTotal]
    /// When the record was deleted by this node, if it was.
    public var deleted: SyncClock?

    /// A change of values, counters and a delete.
    ///
    ///     let change = SyncChange(values: ["title": .text("Milk")], clocks: ["title": clock])
    public init(
        values: [String: StoredValue] = [:], clocks: [String: SyncClock] = [:], seen: [String: SyncClock] = [:], counters: [String: CounterTotal] = [:],
        deleted: SyncClock? = nil
    ) {
        self.values = values
        self.clocks = clocks
        self.seen = seen
        self.counters = counters
        self.deleted = deleted
    }
}

/// A node's own contribution to a counter: everything it ever added, as of a clock.
public struct CounterTotal: Sendable, Hashable {
    /// The sum of the node's increments.
    public var total: Int64
    /// The clock of the node's latest increment.
    public var clock: SyncClock

    /// A total as of a clock.
    ///
    ///     let likes = CounterTotal(total: 3, clock: clock)
    public init(total: Int64, clock: SyncClock) {
        self.total = total
        self.clock = clock
    }
}

/// What merging a change did.
public struct SyncMergeOutcome: Sendable, Hashable {
    /// The attributes whose value the change set.
    public var applied: Set<String> = []
    /// The attributes whose change lost: to a later clock, or (`serverWins`) to a value the
    /// node had not seen; also a counter sent as a plain value, a value without its clock, and
    /// a total for an attribute that is no counter. The record's values for them are what the
    /// node must take.
    public var lost: Set<String> = []
    /// The counters whose value changed.
    public var counted: Set<String> = []
    /// Whether the record's being deleted changed (deleted, or brought back by a later change).
    public var deletionChanged = false

    /// Whether the change altered the record at all.
    public var changedRecord: Bool { !applied.isEmpty || !counted.isEmpty || deletionChanged }
}

/// One synced record's state, the same wherever it is kept: each attribute's value with the
/// clock that set it, each node's counter totals, and the clock of its latest delete. Merging
/// the same changes in any order, any number of times, gives the same record (for
/// `lastWriterWins` and counters), which is what makes devices converge.
public struct SyncRecord: Sendable, Hashable {
    /// The values, by attribute name.
    public private(set) var values: [String: StoredValue] = [:]
    /// The clock of each value, by attribute name.
    public private(set) var clocks: [String: SyncClock] = [:]
    /// Each counter's totals, by counter, then by node.
    public private(set) var counterTotals: [String: [String: CounterTotal]] = [:]
    /// The clock of the latest delete, kept as the record's tombstone.
    public private(set) var deleted: SyncClock?

    /// An empty record: nothing known of it yet.
    ///
    ///     var record = SyncRecord()
    public init() {}

    /// A record as it was kept or sent; nil when a value has no clock or a clock no value, or a
    /// counter total is filed under a node other than its clock's.
    ///
    ///     let record = SyncRecord(values: ["title": .text("Milk")], clocks: ["title": clock])
    public init?(
        values: [String: StoredValue], clocks: [String: SyncClock], counterTotals: [String: [String: CounterTotal]] = [:], deleted: SyncClock? = nil
    ) {
        guard Self.sameKeys(values, clocks), counterTotals.values.allSatisfy({ $0.allSatisfy { node, total in total.clock.node == node } }) else { return nil }
        self.values = values
        self.clocks = clocks
        self.counterTotals = counterTotals
        self.deleted = deleted
    }

    /// Whether two maps have the same keys, found without building sets of them.
    static func sameKeys<A, B>(_ left: [String: A], _ right: [String: B]) -> Bool {
        left.count == right.count && left.keys.allSatisfy { right[$0] != nil }
    }

    /// The latest clock of anything but the delete: a change made after the delete brings the
    /// record back.
    public var latestChange: SyncClock? {
        // Read in place: every merge asks twice, and a record's clocks need no copy to compare.
        var latest = clocks.values.max()
        for totals in counterTotals.values {
            for total in totals.values where latest.map({ total.clock > $0 }) ?? true { latest = total.clock }
        }
        return latest
    }

    /// Whether the record is deleted: a delete wins over changes made before it, or with the
    /// same clock (an update and a delete in one transaction), and loses to one made after it.
    public var isDeleted: Bool {
        guard let deleted else { return false }
        guard let latest = latestChange else { return true }
        return deleted >= latest
    }

    /// A counter's value: the sum of every node's total, held at `Int64`'s bounds rather than
    /// wrapping past them.
    public func counter(_ name: String) -> Int64 {
        counterTotals[name, default: [:]].values.reduce(0) { sum, total in
            let (added, overflow) = sum.addingReportingOverflow(total.total)
            return overflow ? (total.total > 0 ? .max : .min) : added
        }
    }

    /// Merges a node's change under `rules`, keeping for each attribute the value with the
    /// later clock, for each node's counter the later total, and the later delete.
    /// `fromServer`: the server's own write, which `serverWins` never holds back.
    ///
    ///     let outcome = record.merge(change, rules: rules)
    @discardableResult
    public mutating func merge(_ change: SyncChange, rules: SyncRules, fromServer: Bool = false) -> SyncMergeOutcome {
        let wasDeleted = isDeleted
        var outcome = SyncMergeOutcome()
        for (attribute, value) in change.values {
            // A counter set as a plain value, or a value without its clock, cannot be merged:
            // it is reported as lost, never dropped unseen.
            guard !rules.counters.contains(attribute), let clock = change.clocks[attribute] else {
                outcome.lost.insert(attribute)
                continue
            }
            let stored = clocks[attribute]
            if rules.conflicts == .serverWins, !fromServer, let stored, stored != change.seen[attribute], stored != clock {
                // The node changed a value it had not seen: the server's stands.
                outcome.lost.insert(attribute)
                continue
            }
            take(value, clock: clock, for: attribute, into: &outcome)
        }
        for (counter, incoming) in change.counters {
            guard rules.counters.contains(counter) else {
                outcome.lost.insert(counter)
                continue
            }
            take(incoming, for: counter, into: &outcome)
        }
        if let incoming = change.deleted { takeDelete(incoming) }
        outcome.deletionChanged = wasDeleted != isDeleted
        return outcome
    }

    /// Merges another replica's record of the same row (a page of a pull): each value, counter
    /// total and delete as the changes that made them would have been merged, so a device that
    /// takes the server's record ends as if it had taken the server's changes. `serverWins` is
    /// the server's to enforce, when it takes pushes: records merge by clock alone.
    ///
    ///     let outcome = local.merge(pulled.record)
    @discardableResult
    public mutating func merge(_ other: SyncRecord) -> SyncMergeOutcome {
        // Into a record that knows nothing yet (each record of a first sync), a merge takes
        // everything: a copy, with no attribute looked up.
        if clocks.isEmpty, counterTotals.isEmpty, deleted == nil, !other.counterTotals.values.contains(where: \.isEmpty) {
            self = other
            return SyncMergeOutcome(applied: Set(other.clocks.keys), counted: Set(other.counterTotals.keys), deletionChanged: other.isDeleted)
        }
        let wasDeleted = isDeleted
        var outcome = SyncMergeOutcome()
        for (attribute, clock) in other.clocks { take(other.values[attribute] ?? .null, clock: clock, for: attribute, into: &outcome) }
        for (counter, totals) in other.counterTotals {
            for total in totals.values { take(total, for: counter, into: &outcome) }
        }
        if let incoming = other.deleted { takeDelete(incoming) }
        outcome.deletionChanged = wasDeleted != isDeleted
        return outcome
    }

    /// Takes `other`'s counter totals where they are later, node by node, and nothing else:
    /// another schema version's state of the same row, whose counters count the same
    /// increments, so that an increment made through one version is not counted again as a
    /// write outside sync in the other.
    ///
    ///     state.mergeCounterTotals(from: otherVersionsState)
    public mutating func mergeCounterTotals(from other: SyncRecord) {
        var outcome = SyncMergeOutcome()
        for (counter, totals) in other.counterTotals {
            for total in totals.values { take(total, for: counter, into: &outcome) }
        }
    }

    /// Drops the counter totals filed under `node` where `other` holds totals for the same
    /// counter: a placeholder for a value whose increments no node can name (an app update's
    /// migration made the row), which the real totals replace once they arrive.
    ///
    ///     local.dropPlaceholderTotals(of: "unknown", where: pulled)
    public mutating func dropPlaceholderTotals(of node: String, where other: SyncRecord) {
        for (counter, totals) in counterTotals where totals[node] != nil && !(other.counterTotals[counter] ?? [:]).isEmpty {
            counterTotals[counter]?[node] = nil
        }
    }

    /// Gives way to `other`'s values and clocks for these attributes, whatever the clocks say:
    /// a device takes the server's word where the server refused its change (`serverWins`), so
    /// that its own later clock does not keep a value the server will never take.
    ///
    ///     local.adopt(["theme"], from: rejection.current!)
    public mutating func adopt(_ attributes: Set<String>, from other: SyncRecord) {
        for attribute in attributes {
            values[attribute] = other.values[attribute]
            clocks[attribute] = other.clocks[attribute]
        }
    }

    /// A value, kept where its clock is later, or the same with a greater value (one change
    /// delivered again, or two that should not share a clock), so every replica keeps the same.
    private mutating func take(_ value: StoredValue, clock: SyncClock, for attribute: String, into outcome: inout SyncMergeOutcome) {
        if let stored = clocks[attribute], stored > clock || (stored == clock && !Self.precedes(values[attribute] ?? .null, value)) {
            if stored != clock || values[attribute] != value { outcome.lost.insert(attribute) }
            return
        }
        values[attribute] = value
        clocks[attribute] = clock
        outcome.applied.insert(attribute)
    }

    /// A node's counter total, kept where its clock is later, or the same with a greater total.
    private mutating func take(_ incoming: CounterTotal, for counter: String, into outcome: inout SyncMergeOutcome) {
        let node = incoming.clock.node
        if let stored = counterTotals[counter]?[node], stored.clock > incoming.clock || (stored.clock == incoming.clock && stored.total >= incoming.total) {
            if stored != incoming { outcome.lost.insert(counter) }
            return
        }
        counterTotals[counter, default: [:]][node] = incoming
        outcome.counted.insert(counter)
    }

    /// A delete, kept where it is later than the one kept.
    private mutating func takeDelete(_ incoming: SyncClock) {
        if deleted.map({ incoming > $0 }) ?? true { deleted = incoming }
    }

    /// A total order of values for breaking ties between equal clocks: by kind (NULL, integer,
    /// real, text, bytes), then by value (reals by their bits' order, so NaN has a place).
    static func precedes(_ left: StoredValue, _ right: StoredValue) -> Bool {
        func rank(_ value: StoredValue) -> Int {
            switch value {
            case .null: 0
            case .integer: 1
            case .real: 2
            case .text: 3
            case .blob: 4
            }
        }
        switch (left, right) {
        case (.integer(let a), .integer(let b)): return a < b
        case (.real(let a), .real(let b)): return a.isTotallyOrdered(belowOrEqualTo: b) && a.bitPattern != b.bitPattern
        case (.text(let a), .text(let b)): return a.utf8.lexicographicallyPrecedes(b.utf8)
        case (.blob(let a), .blob(let b)): return a.lexicographicallyPrecedes(b)
        default: return rank(left) < rank(right)
        }
    }
}
