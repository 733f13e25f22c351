import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// Stamps the device's own changes with its clock, in the order the history holds them, each at
/// the time its transaction committed: an edit made offline at ten keeps ten, and loses to a
/// change another device made at eleven. Runs before anything pulled is merged, in the same
/// transaction, so a change made before a pull is never stamped after it.
struct LocalChanges: Sendable {
    let entities: [SyncedEntity]
    let clock: NodeClock
    /// History transactions read at once.
    static let batch = 500

    /// Stamps what the history holds after the progress's token, and marks those records
    /// pending; the progress moves past them. Each transaction takes one clock, at its commit
    /// time, in commit order; each field of a record takes the clock of the last transaction
    /// that changed it, so an edit made at ten and another at half past keep their own times.
    func stamp(_ progress: inout SyncClientRow, in store: isolated Store) throws(SyncClientError) {
        while true {
            let transactions: [HistoryTransaction]
            do {
                transactions = try store.history(after: HistoryToken(progress.stampedThrough), author: .excluding(SyncClient.author), limit: Self.batch)
            } catch {
                guard case .historyPruned = error else { throw .store(error) }
                // Pruned past what was stamped: every row is compared with its state instead.
                try stampEveryRow(in: store)
                progress.stampedThrough = try inStore { () throws(StoreError) in try store.currentHistoryToken().value }
                return
            }
            var touched: [String: [String: Touch]] = [:]
            var order: [String: [String]] = [:]
            for transaction in transactions {
                let changes = transaction.changes.filter { $0.key.count == 1 && names.contains($0.entity) }
                guard !changes.isEmpty else { continue }
                let wall = Int64((transaction.date.timeIntervalSince1970 * 1_000).rounded(.down))
                let stamp: SyncClock
                do { stamp = try clock.tick(wallMilliseconds: wall) } catch { throw .clock(error) }
                for change in changes {
                    guard let key = SyncedEntity.keyText(change.key[0]) else { continue }
                    if touched[change.entity]?[key] == nil { order[change.entity, default: []].append(key) }
                    var touch = touched[change.entity]?[key] ?? Touch(last: stamp)
                    touch.last = stamp
                    for field in change.changedAttributes {
                        touch.fields[field] = stamp
                        touch.values[field] = change.values[field]
                    }
                    touched[change.entity, default: [:]][key] = touch
                }
            }
            for entity in entities {
                guard let keys = order[entity.name], let touches = touched[entity.name] else { continue }
                try stamp(entity, keys: keys, in: store, written: touches.mapValues { ($0.values, $0.fields) }) { key in
                    let touch = touches[key]
                    return { (field: String?) throws(SyncClockError) -> SyncClock in
                        guard let touch else { return try clock.tick() }
                        return field.flatMap { touch.fields[$0] } ?? touch.last
                    }
                }
            }
            if let last = transactions.last { progress.stampedThrough = last.token.value }
            if transactions.count < Self.batch { return }
        }
    }

    /// The clocks of one record's changes in a batch of transactions, and the values they
    /// wrote (as the history holds them: none for encrypted attributes).
    private struct Touch {
        var last: SyncClock
        var fields: [String: SyncClock] = [:]
        var values: [String: StoredValue] = [:]
    }

    private var names: Set<String> { Set(entities.map(\.name)) }

    /// Compares every row of every synced entity with its state, stamping what differs now, and
    /// every state whose row is gone, stamping its delete: the first sync of a store that already
    /// holds records, one whose history was pruned, or one whose app was updated.
    func stampEveryRow(in store: isolated Store) throws(SyncClientError) {
        let records = SyncStateRecords(clock: clock)
        for entity in entities {
            var cursor: RecordCursor?
            repeat {
                let page = try inStore { () throws(StoreError) in
                    try store.records(of: entity.descriptor, orderedBy: RecordOrder(entity.keyColumn), after: cursor, limit: Self.batch)
                }
                let keys = page.records.compactMap { $0[entity.keyColumn].flatMap(SyncedEntity.keyText) }
                try stamp(entity, keys: keys, in: store) { _ in records.now() }
                cursor = page.next
            } while cursor != nil
            var after: String?
            repeat {
                let gone = try inStore { () throws(StoreError) in
                    try store.syncStatesWithoutRows(of: entity.descriptor, keyColumn: entity.keyColumn, after: after, limit: Self.batch)
                }
                try stamp(entity, keys: gone.map(\.key), in: store) { _ in records.now() }
                after = gone.count < Self.batch ? nil : gone.last?.key
            } while after != nil
        }
    }

    /// Stamps these records where they differ from their state, and marks them pending. A record
    /// deleted since its state was kept takes the values `written` before the delete first, so
    /// an edit made and then deleted still counts where a later edit elsewhere brings it back.
    private func stamp(
        _ entity: SyncedEntity, keys: [String], in store: isolated Store, written: [String: (values: [String: StoredValue], clocks: [String: SyncClock])] = [:],
        clocks: (String) -> StampClock
    ) throws(SyncClientError) {
        let records = SyncStateRecords(clock: clock)
        // A record without a state was made here: the server has not accepted it yet.
        let known = try inStore { () throws(StoreError) in try store.syncStates(entity: entity.name, keys: keys) }
        let loaded = try onDevice { () throws(SyncStateError) in
            try records.load(entity, keys: keys, in: store, written: { written[$0].map { Set($0.clocks.keys) } ?? [] }, stamp: clocks)
        }
        var madeHere: [String] = []
        for key in keys {
            guard var record = loaded[key], record.stateChanged else { continue }
            if known[key] == nil { madeHere.append(key) }
            if record.row == nil, record.state.isDeleted, let edits = written[key] {
                var change = SyncChange()
                for (field, value) in edits.values where entity.columns[field] != nil && !entity.rules.counters.contains(field) {
                    guard let stamp = edits.clocks[field] else { continue }
                    change.values[field] = value
                    change.clocks[field] = stamp
                }
                record.state.merge(change, rules: entity.rules, fromServer: true)
            }
            try onDevice { () throws(SyncStateError) in try records.save(record.state, of: entity, key: key, in: store) }
            var seen: String?
            if entity.rules.conflicts == .serverWins {
                // The clock each value had before the device first changed it since its last push.
                var clocks = Self.decodeSeen(try inStore { () throws(StoreError) in try store.syncPendingSeen(entity: entity.name, key: key) })
                for case (let field, let before?) in record.stamped where clocks[field] == nil { clocks[field] = before }
                seen = Self.encodeSeen(clocks)
            }
            try inStore { () throws(StoreError) in try store.markSyncPending(entity: entity.name, key: key, seen: seen) }
        }
        try inStore { () throws(StoreError) in try store.markSyncUnshared(entity: entity.name, keys: madeHere) }
    }

    static func decodeSeen(_ text: String?) -> [String: SyncClock] {
        guard let text, let object = try? JSONDecoder().decode([String: String].self, from: Data(text.utf8)) else { return [:] }
        return object.compactMapValues(SyncClock.init(text:))
    }

    static func encodeSeen(_ clocks: [String: SyncClock]) -> String? {
        guard !clocks.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(clocks.mapValues(\.text))).map { String(decoding: $0, as: UTF8.self) }
    }
}
