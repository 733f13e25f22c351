import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// The device's pushes: the pending records' own changes gathered into one push, and
/// acknowledged. What a push carried is kept before it is sent (its sequence number, and each
/// record with its pending version then), not its values, so nothing encrypted lies in the
/// store in clear: a push whose answer was lost is gathered again from the same records under
/// the same number, and the server answers it without applying it twice. A record changed since
/// keeps its pending version moved on, so its later change goes in the next push.
struct Outbox: Sendable {
    let entities: [String: SyncedEntity]
    let clock: NodeClock
    let device: String
    let schemaVersion: Int
    /// Records in one push, and the bytes their values may take.
    static let batch = 1_000
    static let byteBudget = 8 << 20

    /// One pending record and its version when it was gathered.
    struct Gathered: Codable, Hashable {
        let entity: String
        let key: String
        let version: Int64
    }

    /// The push to send: the one sent before and not acknowledged, gathered again, or a new one
    /// of pending changes; nil when nothing is pending. Kept in the progress before it is sent.
    func next(_ progress: inout SyncClientRow, in store: isolated Store) throws(SyncClientError) -> SyncPush? {
        if let outgoing = progress.outgoing, let sequence = Int64(outgoing),
            let gathered = progress.outgoingVersions.flatMap({ try? JSONDecoder().decode([Gathered].self, from: Data($0.utf8)) })
        {
            return SyncPush(device: device, schemaVersion: schemaVersion, sequence: sequence, changes: try changes(of: gathered, in: store).changes)
        }
        let pending = try inStore { () throws(StoreError) in try store.syncPending(limit: Self.batch) }
        guard !pending.isEmpty else { return nil }
        // Parents first: a new list goes before the items that point to it.
        let rank = Dictionary(uniqueKeysWithValues: SyncedEntity.parentsFirst(Array(entities.values)).enumerated().map { ($1.name, $0) })
        let ordered = pending.enumerated().sorted { ((rank[$0.element.entity] ?? 0), $0.offset) < ((rank[$1.element.entity] ?? 0), $1.offset) }.map(\.element)
        let (changes, gathered) = try changes(of: ordered.map { Gathered(entity: $0.entity, key: $0.key, version: $0.version) }, seen: ordered, in: store)
        let push = SyncPush(device: device, schemaVersion: schemaVersion, sequence: progress.acknowledged + 1, changes: changes)
        do {
            progress.outgoing = String(push.sequence)
            progress.outgoingVersions = String(decoding: try JSONEncoder().encode(gathered), as: UTF8.self)
        } catch {
            throw .store(.coding("the push to keep: \(error)"))
        }
        return push
    }

    /// The own changes of these records as they stand, up to the byte budget; and the records
    /// they cover (the rest wait for the next push).
    private func changes(of records: [Gathered], seen pending: [SyncPendingRow] = [], in store: isolated Store) throws(SyncClientError) -> (changes: [SyncRecordChange], gathered: [Gathered]) {
        let seenByKey = Dictionary(pending.map { ($0.entity + "\u{0}" + $0.key, $0.seen) }, uniquingKeysWith: { first, _ in first })
        var states: [String: [String: String]] = [:]
        for name in Set(records.map(\.entity)) {
            let keys = records.filter { $0.entity == name }.map(\.key)
            states[name] = try inStore { () throws(StoreError) in try store.syncStates(entity: name, keys: keys) }
        }
        let reader = SyncStateRecords(clock: clock)
        var changes: [SyncRecordChange] = []
        var covered: [Gathered] = []
        var bytes = 0
        for record in records {
            guard let entity = entities[record.entity], let text = states[record.entity]?[record.key] else {
                covered.append(record)
                continue
            }
            let state = try onDevice { () throws(SyncStateError) in try reader.decode(text, of: entity, key: record.key, in: store) }
            var seen = LocalChanges.decodeSeen(seenByKey[record.entity + "\u{0}" + record.key] ?? nil)
            if pending.isEmpty { seen = LocalChanges.decodeSeen(try inStore { () throws(StoreError) in try store.syncPendingSeen(entity: record.entity, key: record.key) }) }
            let change = ownChange(in: state, seen: seen)
            let size = change.values.values.reduce(200) { $0 + Self.size($1) }
            if bytes + size > Self.byteBudget, !covered.isEmpty { break }
            bytes += size
            covered.append(record)
            if change != SyncChange() { changes.append(SyncRecordChange(entity: record.entity, key: record.key, change: change)) }
        }
        return (changes, covered)
    }

    static func size(_ value: StoredValue) -> Int {
        switch value {
        case .text(let text): text.utf8.count
        case .blob(let bytes): bytes.count * 4 / 3
        default: 16
        }
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
        clock.advance(past: answer.clock)
        guard answer.acknowledged == push.sequence else {
            // The server has seen later pushes under this device id (a store made again with an
            // old id): this one was not applied. Its changes stay pending and go again, numbered
            // after the server's.
            progress.outgoing = nil
            progress.outgoingVersions = nil
            progress.acknowledged = answer.acknowledged
            return [.failed("the server has seen push \(answer.acknowledged) from device '\(device)'; this store's changes are sent again after it")]
        }
        let gathered = (progress.outgoingVersions.flatMap { try? JSONDecoder().decode([Gathered].self, from: Data($0.utf8)) }) ?? []
        let pushed = Dictionary(push.changes.map { ($0.entity + "\u{0}" + $0.key, $0.change) }, uniquingKeysWith: { first, _ in first })
        let refused = Dictionary(
            answer.rejected.filter { $0.current == nil && $0.reason != .conflict }.map { ($0.entity + "\u{0}" + $0.key, $0.reason.rawValue + ($0.detail.map { ": " + $0 } ?? "")) },
            uniquingKeysWith: { first, _ in first })
        for record in gathered {
            try inStore { () throws(StoreError) in try store.clearSyncPending(entity: record.entity, key: record.key, version: record.version) }
            // A record made here is the server's too once accepted; one it refused and does not
            // hold stays the device's own (a pull from the start keeps it).
            try inStore { () throws(StoreError) in
                try store.settleSyncUnshared(entity: record.entity, key: record.key, refused: refused[record.entity + "\u{0}" + record.key])
            }
            // Still pending (changed again meanwhile): it has now seen its own pushed values.
            if let change = pushed[record.entity + "\u{0}" + record.key], entities[record.entity]?.rules.conflicts == .serverWins {
                var seen = LocalChanges.decodeSeen(try inStore { () throws(StoreError) in try store.syncPendingSeen(entity: record.entity, key: record.key) })
                for (field, stamp) in change.clocks { seen[field] = stamp }
                try inStore { () throws(StoreError) in try store.setSyncPendingSeen(entity: record.entity, key: record.key, seen: LocalChanges.encodeSeen(seen)) }
            }
        }
        var events: [SyncEvent] = [.pushed(changes: push.changes.count)]
        for rejection in answer.rejected {
            let change = pushed[rejection.entity + "\u{0}" + rejection.key]
            if let current = rejection.current, let entity = entities[rejection.entity] {
                try yield(rejection, of: entity, to: current, pushed: change, in: store)
            }
            events.append(rejection.reason == .conflict ? .conflict(entity: rejection.entity, key: rejection.key, attributes: rejection.attributes) : .rejected(rejection))
        }
        progress.outgoing = nil
        progress.outgoingVersions = nil
        progress.acknowledged = push.sequence
        return events
    }

    /// Takes the server's record where it settled a change otherwise: merged by clock; and where
    /// the server refused a value outright (server wins, a unique value, a refused write), its
    /// value taken instead of the device's, unless the device changed it again since the push.
    private func yield(_ rejection: SyncRejection, of entity: SyncedEntity, to current: SyncRecord, pushed: SyncChange?, in store: isolated Store) throws(SyncClientError) {
        guard let stored = SyncedEntity.storedKey(rejection.key) else { return }
        let records = SyncStateRecords(clock: clock)
        let local =
            try onDevice { () throws(SyncStateError) in try records.load(entity, keys: [rejection.key], in: store) { _ in records.now() } }[rejection.key]
            ?? SyncedRecord(state: SyncRecord(), row: nil)
        var merged = local.state
        merged.dropPlaceholderTotals(of: AppUpdate.unknownAge.node, where: current)
        merged.merge(current)
        let overruled = rejection.reason != .conflict || entity.rules.conflicts == .serverWins
        if overruled, let pushed {
            let refused = rejection.attributes.isEmpty ? Set(pushed.clocks.keys) : Set(rejection.attributes)
            let unchanged = refused.filter { local.state.clocks[$0] == pushed.clocks[$0] }.subtracting(entity.rules.counters)
            merged.adopt(unchanged, from: current)
        }
        try inStore { () throws(StoreError) in try entity.write(merged, key: stored, over: local.row, in: store) }
        try onDevice { () throws(SyncStateError) in try records.save(merged, of: entity, key: rejection.key, in: store) }
    }
}
