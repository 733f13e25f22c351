import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// Carries a device's sync state to the schema version its app was updated to, after the store
/// migrated its file: each record's clocks go to the attributes' new names (`renamedFrom`), so
/// that what the app changed and did not push still differs from its state and is pushed, in
/// the new version; an attribute that is new, or whose values the migration converted, takes
/// a clock older than any node's, so the server's value wins when the device pulls again.
struct AppUpdate: Sendable {
    let entities: [SyncedEntity]
    let clock: NodeClock
    /// Rows read at once.
    static let batch = 500

    /// The clock of a value whose history an update lost: before every node's.
    static let unknownAge = SyncClock(milliseconds: 0, counter: 0, node: "unknown")

    /// Carries every state kept in version `earlier`'s names to this one's, then removes them.
    func carry(from earlier: Int, _ progress: inout SyncClientRow, in store: isolated Store) throws(SyncClientError) {
        var renamed: [String: String] = [:]
        for entity in entities {
            let earlierName = entity.descriptor.renamedFrom ?? entity.name
            if earlierName != entity.name { renamed[earlierName] = entity.name }
            try carryRows(of: entity, from: earlier, named: earlierName, in: store)
            try carryTombstones(of: entity, from: earlier, named: earlierName, in: store)
            if earlierName != entity.name { try inStore { () throws(StoreError) in try store.renameSyncPending(entity: earlierName, to: entity.name) } }
        }
        // A push sent and not acknowledged goes again under its number, its records under their
        // new names.
        if !renamed.isEmpty, let text = progress.outgoingVersions, let gathered = try? JSONDecoder().decode([Outbox.Gathered].self, from: Data(text.utf8)) {
            let carried = gathered.map { Outbox.Gathered(entity: renamed[$0.entity] ?? $0.entity, key: $0.key, version: $0.version) }
            progress.outgoingVersions = (try? JSONEncoder().encode(carried)).map { String(decoding: $0, as: UTF8.self) } ?? text
        }
        try inStore { () throws(StoreError) in try store.deleteSyncStates(version: earlier) }
    }

    /// The states of the entity's rows, a page at a time.
    private func carryRows(of entity: SyncedEntity, from earlier: Int, named earlierName: String, in store: isolated Store) throws(SyncClientError) {
        let records = SyncStateRecords(clock: clock)
        var cursor: RecordCursor?
        repeat {
            let page = try inStore { () throws(StoreError) in
                try store.records(of: entity.descriptor, orderedBy: RecordOrder(entity.keyColumn), after: cursor, limit: Self.batch)
            }
            let rows = page.records.compactMap { row in row[entity.keyColumn].flatMap(SyncedEntity.keyText).map { ($0, row) } }
            let texts = try inStore { () throws(StoreError) in try store.syncStates(entity: earlierName, keys: rows.map(\.0), version: earlier) }
            let withoutState = rows.map(\.0).filter { texts[$0] == nil }
            let onServer = try sharedElsewhere(withoutState, from: earlier, in: store)
            let sources = try splitSources(of: entity, keys: withoutState.filter(onServer.contains), from: earlier, in: store)
            // Values the server never saw are this device's latest: stamped now, they win over
            // what the server's own migration put in the same record (a default).
            let fresh: SyncClock
            do { fresh = try clock.tick() } catch { throw .clock(error) }
            var carried: [(key: String, state: SyncRecord)] = []
            var unclocked: [String] = []
            for (key, row) in rows {
                guard let text = texts[key] else {
                    // No state before the update: a row its migration made (a table split's part)
                    // or one made offline and never pushed.
                    let made = unclockedState(of: entity, row: entity.fieldValues(of: row), serverHoldsIt: onServer.contains(key), fresh: fresh)
                    carried.append((key, sources[key].map { Self.overlaying($0, onto: made) } ?? made))
                    unclocked.append(key)
                    continue
                }
                let kept = try onDevice { () throws(SyncStateError) in
                    try records.decode(text, of: entity, key: key, in: store, keptName: { entity.earlierName(of: $0) })
                }
                carried.append((key, carry(kept, of: entity, row: entity.fieldValues(of: row))))
            }
            try onDevice { () throws(SyncStateError) in try records.save(carried, of: entity, in: store) }
            for key in unclocked { try inStore { () throws(StoreError) in try store.markSyncPending(entity: entity.name, key: key, seen: nil) } }
            try inStore { () throws(StoreError) in try store.markSyncUnshared(entity: entity.name, keys: unclocked) }
            cursor = page.next
        } while cursor != nil
    }

    /// Which of these keys the server holds under another entity of the earlier version (the
    /// record a table split's part comes from): a state kept there, and accepted.
    private func sharedElsewhere(_ keys: [String], from earlier: Int, in store: isolated Store) throws(SyncClientError) -> Set<String> {
        guard !keys.isEmpty else { return [] }
        var shared: Set<String> = []
        for entity in entities {
            let earlierName = entity.descriptor.renamedFrom ?? entity.name
            let kept = try inStore { () throws(StoreError) in try store.syncStates(entity: earlierName, keys: keys, version: earlier) }
            guard !kept.isEmpty else { continue }
            let unshared = try inStore { () throws(StoreError) in try store.syncUnsharedKeys(entity: earlierName, keys: Array(kept.keys)) }
            shared.formUnion(Set(kept.keys).subtracting(unshared))
        }
        return shared
    }

    /// The states of a table split's parts, for keys whose source record the server holds: the
    /// moved fields' values, clocks and counter totals as the device kept them in the source's
    /// state, under the part's names. What the device changed there and had not pushed then
    /// differs from its row, or is its own already, and is pushed; a counter's own total goes on
    /// from where it was, so the server (which carries the source's totals to the part the same
    /// way) counts each increment once.
    private func splitSources(
        of entity: SyncedEntity, keys: [String], from earlier: Int, in store: isolated Store
    ) throws(SyncClientError) -> [String: SyncRecord] {
        let current = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        guard !keys.isEmpty, let source = entity.splitSource(in: current) else { return [:] }
        var texts = try inStore { () throws(StoreError) in try store.syncStates(entity: source.entity, keys: keys, version: earlier) }
        if let formerly = source.formerly, texts.count < keys.count {
            let rest = keys.filter { texts[$0] == nil }
            texts.merge(try inStore { () throws(StoreError) in try store.syncStates(entity: formerly, keys: rest, version: earlier) }) { first, _ in first }
        }
        let moved = Set(source.fields.keys).subtracting(entity.encryptedFields)
        var states: [String: SyncRecord] = [:]
        for (key, text) in texts {
            let kept: SyncRecord
            do { kept = try SyncJSON.decode(record: Array(text.utf8)) } catch { continue }
            var values: [String: StoredValue] = [:], clocks: [String: SyncClock] = [:], counters: [String: [String: CounterTotal]] = [:]
            // A sealed value was sealed under the source's table: the part's row tells it.
            for (field, theirs) in source.fields where moved.contains(field) {
                if entity.rules.counters.contains(field) {
                    // Kept as a plain value there (not a counter then): the server's totals decide.
                    if kept.clocks[theirs] != nil { continue }
                    counters[field] = kept.counterTotals[theirs] ?? [:]
                } else if let clock = kept.clocks[theirs] {
                    values[field] = kept.values[theirs] ?? .null
                    clocks[field] = clock
                }
            }
            states[key] = SyncRecord(values: values, clocks: clocks, counterTotals: counters)
        }
        return states
    }

    /// `unclocked` with the fields `source` holds (a split part's, from `splitSources`): a
    /// counter's totals replaced whole (none kept is none counted), so that the row's count
    /// beyond them is the device's; a value only where it is stored as the row's is (a value
    /// the split converted gives way to the server's, as `carry` does).
    static func overlaying(_ source: SyncRecord, onto unclocked: SyncRecord) -> SyncRecord {
        var values = unclocked.values, clocks = unclocked.clocks, counters = unclocked.counterTotals
        for field in Set(source.clocks.keys).union(source.counterTotals.keys) {
            if let clock = source.clocks[field] {
                let kept = source.values[field] ?? .null
                guard unclocked.values[field].map({ sameKind($0, kept) }) ?? true else { continue }
                values[field] = kept
                clocks[field] = clock
            } else {
                let totals = source.counterTotals[field] ?? [:]
                counters[field] = totals.isEmpty ? nil : totals
            }
        }
        return SyncRecord(values: values, clocks: clocks, counterTotals: counters) ?? unclocked
    }

    /// The tombstones: states whose rows are gone.
    private func carryTombstones(of entity: SyncedEntity, from earlier: Int, named earlierName: String, in store: isolated Store) throws(SyncClientError) {
        let records = SyncStateRecords(clock: clock)
        var after: String?
        repeat {
            let kept = try inStore { () throws(StoreError) in
                try store.syncStatesWithoutRows(
                    of: entity.descriptor, keyColumn: entity.keyColumn, after: after, limit: Self.batch, version: earlier, entityName: earlierName)
            }
            var carried: [(key: String, state: SyncRecord)] = []
            for (key, text) in kept {
                let state = try onDevice { () throws(SyncStateError) in
                    try records.decode(text, of: entity, key: key, in: store, keptName: { entity.earlierName(of: $0) })
                }
                carried.append((key, carry(state, of: entity, row: nil)))
            }
            try onDevice { () throws(SyncStateError) in try records.save(carried, of: entity, in: store) }
            after = kept.count < Self.batch ? nil : kept.last?.key
        } while after != nil
    }

    /// One record's state in the new names. A value is carried with its clock where the row
    /// still holds one of its kind (a rename, a wider integer), or where this device wrote it
    /// and the migration widened it (an integer made a real); where the migration made or
    /// converted it otherwise, the row's value takes `unknownAge`, unless the row differs from
    /// the kept value widened (changed here and not stamped yet): then the kept value stays,
    /// for the row to be stamped. Encrypted values come opened (`decode`'s `keptName`).
    func carry(_ kept: SyncRecord, of entity: SyncedEntity, row: [String: StoredValue]?) -> SyncRecord {
        var values: [String: StoredValue] = [:], clocks: [String: SyncClock] = [:], counters: [String: [String: CounterTotal]] = [:]
        for field in entity.columns.keys {
            let earlier = entity.earlierName(of: field)
            if entity.rules.counters.contains(field) {
                if let earlier, let totals = kept.counterTotals[earlier] { counters[field] = totals }
                continue
            }
            let current = row?[field]
            guard let earlier, let clock = kept.clocks[earlier], let value = kept.values[earlier] else {
                if let current {
                    values[field] = current
                    clocks[field] = Self.unknownAge
                }
                continue
            }
            guard let current, !Self.sameKind(current, value) else {
                values[field] = value
                clocks[field] = clock
                continue
            }
            // The migration converted the value. Where it widened it (`widened`), this device's
            // own write is the same on both sides and keeps its clock; any other node's may be
            // a later version's write narrowed for this one, and gives way to the server's. A
            // row that differs from the kept value widened was changed here since it was
            // stamped, and is stamped again.
            let converted = Self.widened(value, like: current)
            values[field] = converted ?? current
            clocks[field] = converted != nil && clock.node == self.clock.node ? clock : Self.unknownAge
        }
        return SyncRecord(values: values, clocks: clocks, counterTotals: counters, deleted: kept.deleted) ?? SyncRecord()
    }

    /// A row without a state, pushed as this device's. Where the server holds a record of that
    /// key (`serverHoldsIt`: its own migration split the same row to the same key) and the
    /// device kept no state of its source (`splitSources`), its values take a clock older than
    /// any other, so the server's win, and a counter is kept as of no node's, not pushed, giving
    /// way to the server's totals. Where it does not (a book made here offline, split by the
    /// update), the values take `fresh`, and a counter is the device's own.
    func unclockedState(of entity: SyncedEntity, row: [String: StoredValue], serverHoldsIt: Bool = true, fresh: SyncClock? = nil) -> SyncRecord {
        let oldest = SyncClock(milliseconds: 0, counter: 0, node: clock.node)
        let stamp = serverHoldsIt ? oldest : fresh ?? oldest
        var values: [String: StoredValue] = [:], clocks: [String: SyncClock] = [:], counters: [String: [String: CounterTotal]] = [:]
        for (field, value) in row {
            if entity.rules.counters.contains(field) {
                guard case .integer(let total) = value, total != 0 else { continue }
                counters[field] = serverHoldsIt ? [Self.unknownAge.node: CounterTotal(total: total, clock: Self.unknownAge)] : [clock.node: CounterTotal(total: total, clock: oldest)]
            } else {
                values[field] = value
                clocks[field] = stamp
            }
        }
        return SyncRecord(values: values, clocks: clocks, counterTotals: counters) ?? SyncRecord()
    }

    /// A value converted as a migration that widens its type converts it: an integer made a
    /// real (SQLite's `CAST`, PostgreSQL's on the server and Swift's `Double(_:)` give the same,
    /// and the server takes an integer and a real of the same number for the same value). Nil
    /// for anything else: a narrowing conversion, which the engines round differently, or
    /// one to text, which they spell differently (a Bool is `1` on SQLite, `true` on
    /// PostgreSQL).
    static func widened(_ value: StoredValue, like row: StoredValue) -> StoredValue? {
        guard case .integer(let integer) = value, case .real = row else { return nil }
        return .real(Double(integer))
    }

    /// Whether two values are stored alike (NULL is like any).
    static func sameKind(_ left: StoredValue, _ right: StoredValue) -> Bool {
        switch (left, right) {
        case (.null, _), (_, .null), (.text, .text), (.integer, .integer), (.real, .real), (.blob, .blob): true
        default: false
        }
    }
}
