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

    package init(state: SyncRecord, row: StoredRecord?, stateChanged: Bool = false, stamped: [String: SyncClock?] = [:]) {
        self.state = state
        self.row = row
        self.stateChanged = stateChanged
        self.stamped = stamped
    }
}

/// Why a node could not read or keep a record's sync state.
package enum SyncStateError: Error {
    case store(StoreError)
    case clock(SyncClockError)
}

/// Reads records with their sync state, and stamps what was written without sync: a value that
/// differs from the state's was written since the state was kept (on the server, by the server
/// app, psql or a migration; on a device, by the app), so it is this node's change. The state
/// keeps the values it stamped, which is how such writes are told apart from sync's own,
/// whoever the writer was.
package struct SyncStateRecords: Sendable {
    /// The node whose changes are stamped.
    package let node: String

    package init(node: String) { self.node = node }

    /// The records of `entity` with these keys (wire text), each brought up to date with clocks
    /// from `stamp`.
    package func load(_ entity: SyncedEntity, keys: [String], in store: isolated Store, stamp: () throws(SyncClockError) -> SyncClock) throws(SyncStateError)
        -> [String: SyncedRecord]
    {
        let states: [String: String]
        do { states = try store.syncStates(entity: entity.name, keys: keys) } catch { throw .store(error) }
        var records: [String: SyncedRecord] = [:]
        for key in keys where records[key] == nil {
            guard let stored = SyncedEntity.storedKey(key) else { continue }
            let row: StoredRecord?
            do {
                row = try store.records(of: entity.descriptor, where: [RecordFilter(entity.keyColumn, .equals(stored))], limit: 1).records.first
            } catch {
                throw .store(error)
            }
            let kept = try states[key].map { text throws(SyncStateError) in try Self.decode(text, entity: entity.name, key: key) }
            records[key] = try reconciled(entity, state: kept, row: row, stamp: stamp)
        }
        return records
    }

    /// The record with what was written outside sync stamped as this node's change.
    package func reconciled(_ entity: SyncedEntity, state kept: SyncRecord?, row: StoredRecord?, stamp: () throws(SyncClockError) -> SyncClock) throws(SyncStateError)
        -> SyncedRecord
    {
        var state = kept ?? SyncRecord()
        var clock: SyncClock?
        func now() throws(SyncStateError) -> SyncClock {
            if let clock { return clock }
            do { clock = try stamp() } catch { throw .clock(error) }
            return clock!
        }
        guard let row else {
            // Deleted without sync: a tombstone, so that other nodes delete it too.
            guard kept != nil, !state.isDeleted else { return SyncedRecord(state: state, row: nil) }
            state.merge(SyncChange(deleted: try now()), rules: entity.rules, fromServer: true)
            return SyncedRecord(state: state, row: nil, stateChanged: true)
        }
        let revived = kept == nil || state.isDeleted
        var change = SyncChange()
        var stamped: [String: SyncClock?] = [:]
        for (field, value) in entity.fieldValues(of: row) {
            if entity.rules.counters.contains(field) {
                let stored: Int64 = if case .integer(let number) = value { number } else { 0 }
                let known = state.counter(field)
                guard stored != known || revived && state.counterTotals[field] == nil else { continue }
                let own = state.counterTotals[field]?[node]?.total ?? 0
                change.counters[field] = CounterTotal(total: own &+ (stored &- known), clock: try now())
                stamped[field] = state.counterTotals[field]?[node]?.clock
            } else if revived || state.values[field] != value || state.clocks[field] == nil {
                change.values[field] = value
                change.clocks[field] = try now()
                stamped[field] = state.clocks[field]
            }
        }
        guard clock != nil else { return SyncedRecord(state: state, row: row) }
        state.merge(change, rules: entity.rules, fromServer: true)
        return SyncedRecord(state: state, row: row, stateChanged: true, stamped: stamped)
    }

    /// Stores a record's state.
    package func save(_ state: SyncRecord, of entity: SyncedEntity, key: String, in store: isolated Store) throws(SyncStateError) {
        let text: String
        do { text = String(decoding: try Self.encoder.encode(state), as: UTF8.self) } catch { throw .store(.coding("the sync state of \(entity.name) \(key): \(error)")) }
        do { try store.writeSyncState(entity: entity.name, key: key, state: text) } catch { throw .store(error) }
    }

    package static func decode(_ text: String, entity: String, key: String) throws(SyncStateError) -> SyncRecord {
        do {
            return try JSONDecoder().decode(SyncRecord.self, from: Data(text.utf8))
        } catch {
            throw .store(.coding("the stored sync state of \(entity) \(key) cannot be read (\(error)); it was changed outside sync"))
        }
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
}
