import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// The device's pushes: the pending records' own changes gathered into one push, kept before it
/// is sent (so a push whose answer was lost is sent again unchanged, under its sequence number,
/// and the server answers it without applying it twice), and acknowledged.
struct Outbox: Sendable {
    let entities: [String: SyncedEntity]
    let clock: NodeClock
    let device: String
    let schemaVersion: Int
    /// Records in one push.
    static let batch = 1_000

    /// One pending record and its version when it was gathered.
    struct Gathered: Codable, Hashable {
        let entity: String
        let key: String
        let version: Int64
    }

    /// The push to send: the one sent before and not acknowledged, or a new one of pending
    /// changes; nil when nothing is pending. Kept in the progress before it is sent.
    func next(_ progress: inout SyncClientRow, in store: isolated Store) throws(SyncClientError) -> SyncPush? {
        if let outgoing = progress.outgoing {
            do { return try SyncJSON.decode(SyncPush.self, from: Array(outgoing.utf8)) } catch { throw .store(.coding("the push kept for sending again: \(error)")) }
        }
        let pending = try inStore { () throws(StoreError) in try store.syncPending(limit: Self.batch) }
        guard !pending.isEmpty else { return nil }
        var states: [String: [String: String]] = [:]
        for name in Set(pending.map(\.entity)) {
            let keys = pending.filter { $0.entity == name }.map(\.key)
            states[name] = try inStore { () throws(StoreError) in try store.syncStates(entity: name, keys: keys) }
        }
        var changes: [SyncRecordChange] = []
        var gathered: [Gathered] = []
        for row in pending {
            gathered.append(Gathered(entity: row.entity, key: row.key, version: row.version))
            guard entities[row.entity] != nil, let text = states[row.entity]?[row.key] else { continue }
            let state = try onDevice { () throws(SyncStateError) in try SyncStateRecords.decode(text, entity: row.entity, key: row.key) }
            let change = ownChange(in: state, seen: LocalChanges.decodeSeen(row.seen))
            if change != SyncChange() { changes.append(SyncRecordChange(entity: row.entity, key: row.key, change: change)) }
        }
        let push = SyncPush(device: device, schemaVersion: schemaVersion, sequence: progress.acknowledged + 1, changes: changes)
        do {
            progress.outgoing = String(decoding: try SyncJSON.encode(push), as: UTF8.self)
            progress.outgoingVersions = String(decoding: try JSONEncoder().encode(gathered), as: UTF8.self)
        } catch {
            throw .store(.coding("the push to keep: \(error)"))
        }
        return push
    }

    /// What this device changed in the record: its values, its counters' totals and its delete,
    /// each with its clock; what other nodes changed is theirs to send.
    func ownChange(in state: SyncRecord, seen: [String: SyncClock]) -> SyncChange {
        var change = SyncChange()
        for (field, stamp) in state.clocks where stamp.node == device {
            change.values[field] = state.values[field] ?? .null
            change.clocks[field] = stamp
            if let before = seen[field] { change.seen[field] = before }
        }
        for (counter, totals) in state.counterTotals {
            if let own = totals[device] { change.counters[counter] = own }
        }
        if let deleted = state.deleted, deleted.node == device { change.deleted = deleted }
        return change
    }

    /// Takes in the server's answer to `push`: the records it carried are no longer pending
    /// (unless changed again since), and each record the server refused or settled otherwise
    /// takes the server's word. Returns the events to tell the app.
    func acknowledge(_ answer: SyncPushAnswer, to push: SyncPush, _ progress: inout SyncClientRow, in store: isolated Store) throws(SyncClientError) -> [SyncEvent] {
        guard answer.acknowledged >= push.sequence else {
            throw .badAnswer("push \(push.sequence) was answered with acknowledged \(answer.acknowledged)")
        }
        try? clock.receive(answer.clock)
        let gathered = (progress.outgoingVersions.flatMap { try? JSONDecoder().decode([Gathered].self, from: Data($0.utf8)) }) ?? []
        for record in gathered {
            try inStore { () throws(StoreError) in try store.clearSyncPending(entity: record.entity, key: record.key, version: record.version) }
        }
        var events: [SyncEvent] = [.pushed(changes: push.changes.count)]
        for rejection in answer.rejected {
            if rejection.reason == .conflict, let current = rejection.current, let entity = entities[rejection.entity] {
                try yield(rejection.attributes, of: entity, key: rejection.key, to: current, in: store)
                events.append(.conflict(entity: rejection.entity, key: rejection.key, attributes: rejection.attributes))
            } else {
                events.append(.rejected(rejection))
            }
        }
        progress.outgoing = nil
        progress.outgoingVersions = nil
        progress.acknowledged = push.sequence
        return events
    }

    /// Takes the server's record where it settled a change otherwise: merged by clock, and the
    /// attributes it refused taken as the server has them.
    private func yield(_ attributes: [String], of entity: SyncedEntity, key: String, to current: SyncRecord, in store: isolated Store) throws(SyncClientError) {
        guard let stored = SyncedEntity.storedKey(key) else { return }
        let records = SyncStateRecords(node: clock.node)
        let local = try onDevice { () throws(SyncStateError) in try records.load(entity, keys: [key], in: store, stamp: clock.tick) }[key] ?? SyncedRecord(state: SyncRecord(), row: nil)
        var merged = local.state
        merged.merge(current)
        merged.adopt(Set(attributes).subtracting(entity.rules.counters), from: current)
        try inStore { () throws(StoreError) in try entity.write(merged, key: stored, over: local.row, in: store) }
        try onDevice { () throws(SyncStateError) in try records.save(merged, of: entity, key: key, in: store) }
    }
}
