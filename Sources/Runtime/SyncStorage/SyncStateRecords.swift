import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore

/// One record as a node (the server or a device) holds it: its row (nil when deleted or never
/// made), and its sync state, brought up to date with what was written outside sync.
package struct SyncedRecord: Sendable {
    package var state: SyncRecord
    package var row: StoredRecord?
    /// Whether the state differs from what is stored (writes outside sync were stamped).
    package var stateChanged: Bool
    /// The fields stamped just now, each with the clock it had before (nil when it had none).
    package var stamped: [String: SyncClock?]
    /// The values the stamped fields held in the kept state before (where it held one): what a
    /// write outside sync replaced, such as the owner a list had.
    package var replaced: [String: StoredValue]

    package init(state: SyncRecord, row: StoredRecord?, stateChanged: Bool = false, stamped: [String: SyncClock?] = [:], replaced: [String: StoredValue] = [:]) {
        self.state = state
        self.row = row
        self.stateChanged = stateChanged
        self.stamped = stamped
        self.replaced = replaced
    }
}

/// Why a node could not read or keep a record's sync state.
package enum SyncStateError: Error {
    case store(StoreError)
    case clock(SyncClockError)
}

/// The clock a write made outside sync is stamped with, by field (nil: a delete).
package typealias StampClock = (_ field: String?) throws(SyncClockError) -> SyncClock

/// Reads records with their sync state, and stamps what was written without sync: a value that
/// differs from the state's was written since the state was kept (on the server, by the server
/// app, psql or a migration; on a device, by the app), so it is this node's change. The state
/// keeps the values it stamped, which is how such writes are told apart from sync's own,
/// whoever the writer was. Encrypted values stay sealed in the state, as in the row.
package struct SyncStateRecords: Sendable {
    /// The node whose changes are stamped.
    package let clock: NodeClock
    /// Where a record without a state in this version finds the clocks another version kept.
    package let seeds: (any SyncStateSeeds)?

    package init(clock: NodeClock, seeds: (any SyncStateSeeds)? = nil) {
        self.clock = clock
        self.seeds = seeds
    }

    /// One clock for every field of a record: a change the node makes now.
    package func now() -> StampClock {
        var taken: SyncClock?
        let clock = self.clock
        return { (_: String?) throws(SyncClockError) -> SyncClock in
            if let taken { return taken }
            let stamp = try clock.tick()
            taken = stamp
            return stamp
        }
    }

    /// The records of `entity` with these keys (wire text), read in one statement a few hundred
    /// at a time, each brought up to date with clocks from `stamp(key)`.
    /// `written(key)`: the fields the history says this node wrote since, stamped even where
    /// the row holds the kept value again (an edit undone before a sync is still the latest).
    /// `firstSight`: the clock of a row no version kept a state for, where it is not `stamp`'s.
    package func load(
        _ entity: SyncedEntity, keys: [String], in store: isolated Store, written: (String) -> Set<String> = { _ in [] }, firstSight: StampClock? = nil,
        stamp: (String) -> StampClock
    ) throws(SyncStateError) -> [String: SyncedRecord] {
        let states: [String: String]
        do { states = try store.syncStates(entity: entity.name, keys: keys) } catch { throw .store(error) }
        let rows: [StoredRecord]
        do { rows = try store.records(of: entity.descriptor, column: entity.keyColumn, in: keys.compactMap(SyncedEntity.storedKey)) } catch { throw .store(error) }
        var byKey: [String: StoredRecord] = [:]
        for row in rows {
            if let key = row[entity.keyColumn].flatMap(SyncedEntity.keyText) { byKey[key] = row }
        }
        let (kept, seeded) = try kept(entity, states: states, rows: byKey, keys: keys, in: store)
        var records: [String: SyncedRecord] = [:]
        for key in keys where records[key] == nil && SyncedEntity.storedKey(key) != nil {
            records[key] = try reconciled(entity, state: kept[key], row: byKey[key], written: written(key), stamp: kept[key] == nil ? firstSight ?? stamp(key) : stamp(key))
            // A seeded state is kept from now on: a later write is then told from it.
            if seeded.contains(key) { records[key]?.stateChanged = true }
        }
        return records
    }

    /// The kept states of these records (`states`, as stored), decoded; a record with none in
    /// this version takes the clocks another version kept for it (`seeds`), its values as its
    /// row holds them now, so that what it kept there is not stamped again as new here. A record
    /// with counters takes the other version's later totals too: an increment counted there is
    /// not stamped again here as a write outside sync.
    package func kept(
        _ entity: SyncedEntity, states: [String: String], rows: [String: StoredRecord], keys: [String], in store: isolated Store
    ) throws(SyncStateError) -> (states: [String: SyncRecord], seeded: Set<String>) {
        var kept: [String: SyncRecord] = [:]
        for (key, text) in states { kept[key] = try decode(text, of: entity, key: key, in: store) }
        let counted = !entity.rules.counters.isEmpty
        let asked = keys.filter { (counted || kept[$0] == nil) && SyncedEntity.storedKey($0) != nil }
        guard let seeds, !asked.isEmpty else { return (kept, []) }
        var seeded: Set<String> = []
        for (key, other) in try seeds.states(of: entity, keys: asked, in: store) {
            if var mine = kept[key] {
                mine.mergeCounterTotals(from: other)
                kept[key] = mine
            } else if rows[key] == nil, !other.isDeleted, seeds.seedsOnlyParts(of: entity) {
                // Its source holds no value the split moved (the part was never made): none yet.
                continue
            } else {
                kept[key] = Self.seeded(other, row: rows[key].map(entity.fieldValues), counters: entity.rules.counters)
                seeded.insert(key)
            }
        }
        return (kept, seeded)
    }

    /// Another version's state in this version's names: a field keeps the clock it had there
    /// where the row still holds the value kept there (a number of the other storage kind counts
    /// when equal); one written since, or new, has none, so it is stamped now.
    static func seeded(_ other: SyncRecord, row: [String: StoredValue]?, counters: Set<String>) -> SyncRecord {
        guard let row else { return other }
        var values: [String: StoredValue] = [:], clocks: [String: SyncClock] = [:]
        for (field, value) in row where !counters.contains(field) {
            guard let clock = other.clocks[field], let kept = other.values[field], Self.same(kept, value) else { continue }
            values[field] = value
            clocks[field] = clock
        }
        return SyncRecord(values: values, clocks: clocks, counterTotals: other.counterTotals, deleted: other.deleted) ?? other
    }

    /// Equal values, an integer and a real of the same number included.
    static func same(_ left: StoredValue, _ right: StoredValue) -> Bool {
        switch (left, right) {
        case (.integer(let whole), .real(let number)), (.real(let number), .integer(let whole)): Double(whole) == number
        default: left == right
        }
    }

    /// Stamps the deletes of `entity`'s records whose row is gone and whose state does not say
    /// so yet (deleted without sync and not read since), a page at a time; how many.
    package func stampDeletes(of entity: SyncedEntity, in store: isolated Store, page: Int = 500) throws(SyncStateError) -> [String] {
        var stamped: [String] = []
        var after: String?
        repeat {
            let kept: [(key: String, state: String)]
            do { kept = try store.syncStatesWithoutRows(of: entity.descriptor, keyColumn: entity.keyColumn, after: after, limit: page) } catch { throw .store(error) }
            let loaded = try load(entity, keys: kept.map(\.key), in: store) { _ in now() }
            let changed = kept.compactMap { item in loaded[item.key].flatMap { $0.stateChanged ? (item.key, $0.state) : nil } }
            try save(changed, of: entity, in: store)
            stamped += changed.map(\.0)
            after = kept.count < page ? nil : kept.last?.key
        } while after != nil
        return stamped
    }

    /// The record with what was written outside sync stamped as this node's change, each field
    /// after the clock it had (a skewed wall clock never makes a new write lose to an old one).
    /// A field in `written` is stamped even where its value is the kept one.
    package func reconciled(
        _ entity: SyncedEntity, state kept: SyncRecord?, row: StoredRecord?, written: Set<String> = [], stamp: StampClock
    ) throws(SyncStateError) -> SyncedRecord {
        var state = kept ?? SyncRecord()
        func clock(_ field: String?, after existing: SyncClock?) throws(SyncStateError) -> SyncClock {
            let proposed: SyncClock
            do { proposed = try stamp(field) } catch { throw .clock(error) }
            guard let existing else { return proposed }
            return self.clock.after(existing, proposed: proposed)
        }
        guard let row else {
            // Deleted without sync: a tombstone, so that other nodes delete it too. (A state
            // seeded from another version's tombstone is deleted already.)
            guard kept != nil, !state.isDeleted else { return SyncedRecord(state: state, row: nil) }
            state.merge(SyncChange(deleted: try clock(nil, after: state.latestChange)), rules: entity.rules, fromServer: true)
            return SyncedRecord(state: state, row: nil, stateChanged: true)
        }
        let revived = kept == nil || state.isDeleted
        var change = SyncChange()
        var stamped: [String: SyncClock?] = [:]
        var replaced: [String: StoredValue] = [:]
        for (field, value) in entity.fieldValues(of: row) {
            if entity.rules.counters.contains(field) {
                let stored: Int64 = if case .integer(let number) = value { number } else { 0 }
                let known = state.counter(field)
                guard stored != known || revived && state.counterTotals[field] == nil else { continue }
                let own = state.counterTotals[field]?[self.clock.node]
                change.counters[field] = CounterTotal(total: (own?.total ?? 0) &+ (stored &- known), clock: try clock(field, after: own?.clock))
                stamped[field] = own?.clock
            } else if revived || state.values[field] != value || state.clocks[field] == nil || written.contains(field) {
                change.values[field] = value
                change.clocks[field] = try clock(field, after: revived ? state.deleted : state.clocks[field])
                stamped[field] = state.clocks[field]
                if let before = state.values[field], before != value { replaced[field] = before }
            }
        }
        guard !stamped.isEmpty || !change.values.isEmpty || !change.counters.isEmpty else { return SyncedRecord(state: state, row: row) }
        state.merge(change, rules: entity.rules, fromServer: true)
        return SyncedRecord(state: state, row: row, stateChanged: true, stamped: stamped, replaced: replaced)
    }

    /// Stores a record's state, its encrypted values sealed as its row's are.
    package func save(_ state: SyncRecord, of entity: SyncedEntity, key: String, in store: isolated Store) throws(SyncStateError) {
        let text = try encoded(state, of: entity, key: key, in: store)
        do { try store.writeSyncState(entity: entity.name, key: key, state: text) } catch { throw .store(error) }
    }

    /// Stores several records' states in a few statements (a pulled page).
    package func save(_ states: [(key: String, state: SyncRecord)], of entity: SyncedEntity, in store: isolated Store) throws(SyncStateError) {
        var texts: [(key: String, state: String)] = []
        for (key, state) in states { texts.append((key, try encoded(state, of: entity, key: key, in: store))) }
        do { try store.writeSyncStates(entity: entity.name, texts) } catch { throw .store(error) }
    }

    /// A state as it is kept: JSON, its encrypted values sealed.
    private func encoded(_ state: SyncRecord, of entity: SyncedEntity, key: String, in store: isolated Store) throws(SyncStateError) -> String {
        var sealed = state
        if !entity.encryptedFields.isEmpty, let stored = SyncedEntity.storedKey(key) {
            var values = state.values
            for field in entity.encryptedFields {
                guard let value = values[field], let column = entity.columns[field] else { continue }
                do { values[field] = try store.sealForSyncState(value, table: entity.descriptor.table, column: column, key: [stored]) } catch { throw .store(error) }
            }
            sealed = SyncRecord(values: values, clocks: state.clocks, counterTotals: state.counterTotals, deleted: state.deleted) ?? state
        }
        do { return String(decoding: try SyncJSON.encode(record: sealed), as: UTF8.self) } catch { throw .store(.coding("the sync state of \(entity.name) \(key): \(error)")) }
    }

    /// A kept state, its encrypted values opened; one no key opens any more (retired since) is
    /// left out, so that the field is stamped again from its row. A state kept in an earlier
    /// version names each field as `keptName` says (a renamed attribute's earlier name; nil for
    /// one it did not hold): its column, and so its seal, is the same (`generate` refuses
    /// another: `sealed-name-changed`).
    package func decode(
        _ text: String, of entity: SyncedEntity, key: String, in store: isolated Store, keptName: (String) -> String? = { $0 }
    ) throws(SyncStateError) -> SyncRecord {
        let state: SyncRecord
        do {
            state = try SyncJSON.decode(record: Array(text.utf8))
        } catch {
            throw .store(.coding("the stored sync state of \(entity.name) \(key) cannot be read (\(error)); it was changed outside sync"))
        }
        guard !entity.encryptedFields.isEmpty, let stored = SyncedEntity.storedKey(key) else { return state }
        var values = state.values, clocks = state.clocks
        for field in entity.encryptedFields {
            guard let name = keptName(field), let value = values[name], let column = entity.columns[field] else { continue }
            if let opened = store.openSyncState(value, table: entity.descriptor.table, column: column, key: [stored]) {
                values[name] = opened
            } else {
                values[name] = nil
                clocks[name] = nil
            }
        }
        return SyncRecord(values: values, clocks: clocks, counterTotals: state.counterTotals, deleted: state.deleted) ?? state
    }
}

/// The states other schema versions kept for records, in one version's names: a server serving
/// two versions at once keeps one state per version (each reads its rows through its own
/// views), and a record first read in one takes the clocks the other kept.
package protocol SyncStateSeeds: Sendable {
    /// The states kept in another version for these records of `entity` (some may have none),
    /// their fields, counters and tombstone under `entity`'s names.
    func states(of entity: SyncedEntity, keys: [String], in store: isolated Store) throws(SyncStateError) -> [String: SyncRecord]
    /// Whether `entity`'s seeds are another entity's states for the fields a table split moved
    /// (the entity is a split's part): a record without a row then has no part yet, and is
    /// not deleted.
    func seedsOnlyParts(of entity: SyncedEntity) -> Bool
}
