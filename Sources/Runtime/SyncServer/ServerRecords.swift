import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore

/// One record as the server holds it: its row (nil when deleted or never made), and its sync
/// state, brought up to date with what was written outside sync.
struct ServerRecord {
    var state: SyncRecord
    var row: StoredRecord?
    /// Whether the state differs from what is stored (writes outside sync were stamped).
    var stateChanged: Bool
}

/// Reads records with their sync state, and stamps what the server app (or psql, or a
/// migration) wrote directly: a value that differs from the state's was written outside sync,
/// so it is the server's change, made now. The state keeps the values it stamped, which is how
/// such writes are told apart from sync's own, whoever the writer was.
struct ServerRecords {
    let clock: ServerClock

    /// The records of `entity` with these keys (wire text), each brought up to date.
    func load(_ entity: SyncedEntity, keys: [String], in store: isolated Store) throws(SyncServerError) -> [String: ServerRecord] {
        let states: [String: String]
        do { states = try store.syncStates(entity: entity.name, keys: keys) } catch { throw .store(error) }
        var records: [String: ServerRecord] = [:]
        for key in keys where records[key] == nil {
            guard let stored = SyncedEntity.storedKey(key) else { continue }
            let row: StoredRecord?
            do {
                row = try store.records(of: entity.descriptor, where: [RecordFilter(entity.keyColumn, .equals(stored))], limit: 1).records.first
            } catch {
                throw .store(error)
            }
            let kept = try states[key].map { text throws(SyncServerError) in try Self.decode(text, entity: entity.name, key: key) }
            records[key] = try reconciled(entity, state: kept, row: row)
        }
        return records
    }

    /// The record with what was written outside sync stamped as the server's change.
    func reconciled(_ entity: SyncedEntity, state kept: SyncRecord?, row: StoredRecord?) throws(SyncServerError) -> ServerRecord {
        var state = kept ?? SyncRecord()
        var stamp: SyncClock?
        func now() throws(SyncServerError) -> SyncClock {
            if let stamp { return stamp }
            do { stamp = try clock.tick() } catch { throw .clock(error) }
            return stamp!
        }
        guard let row else {
            // Deleted outside sync: a tombstone, so devices delete it too.
            guard kept != nil, !state.isDeleted else { return ServerRecord(state: state, row: nil, stateChanged: false) }
            state.merge(SyncChange(deleted: try now()), rules: entity.rules, fromServer: true)
            return ServerRecord(state: state, row: nil, stateChanged: true)
        }
        let revived = kept == nil || state.isDeleted
        var change = SyncChange()
        for (field, value) in entity.fieldValues(of: row) {
            if entity.rules.counters.contains(field) {
                let stored: Int64 = if case .integer(let number) = value { number } else { 0 }
                let known = state.counter(field)
                guard stored != known || revived && state.counterTotals[field] == nil else { continue }
                let own = state.counterTotals[field]?[clock.node]?.total ?? 0
                change.counters[field] = CounterTotal(total: own &+ (stored &- known), clock: try now())
            } else if revived || state.values[field] != value || state.clocks[field] == nil {
                change.values[field] = value
                change.clocks[field] = try now()
            }
        }
        guard stamp != nil else { return ServerRecord(state: state, row: row, stateChanged: false) }
        state.merge(change, rules: entity.rules, fromServer: true)
        return ServerRecord(state: state, row: row, stateChanged: true)
    }

    /// Stores a record's state.
    func save(_ state: SyncRecord, of entity: SyncedEntity, key: String, in store: isolated Store) throws(SyncServerError) {
        let text: String
        do { text = String(decoding: try Self.encoder.encode(state), as: UTF8.self) } catch { throw .store(.coding("the sync state of \(entity.name) \(key): \(error)")) }
        do { try store.writeSyncState(entity: entity.name, key: key, state: text) } catch { throw .store(error) }
    }

    static func decode(_ text: String, entity: String, key: String) throws(SyncServerError) -> SyncRecord {
        do {
            return try JSONDecoder().decode(SyncRecord.self, from: Data(text.utf8))
        } catch {
            throw .store(.coding("the stored sync state of \(entity) \(key) cannot be read (\(error)); it was changed outside the server"))
        }
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
}
