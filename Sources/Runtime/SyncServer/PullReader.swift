import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// Where a device's pulls have reached. A new device first scans every record in scope, entity
/// by entity in key order, from the history token current when it started; then it reads the
/// history after that token, so a change made during the scan comes again, and merging it twice
/// changes nothing.
enum PullCursor: Equatable {
    case scan(token: Int64, entity: Int, after: String?)
    case history(token: Int64)

    /// The cursor as the device keeps it: `s.<token>.<entity>[.<key>]` or `h.<token>`.
    var text: String {
        switch self {
        case .scan(let token, let entity, let after): "s.\(token).\(entity)" + (after.map { ".\($0)" } ?? "")
        case .history(let token): "h.\(token)"
        }
    }

    /// A cursor this server gave, for a schema of `entities` synced entities.
    init?(text: String, entities: Int) {
        let parts = text.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, let token = Int64(parts[1]), token >= 0 else { return nil }
        switch parts[0] {
        case "h" where parts.count == 2:
            self = .history(token: token)
        case "s" where parts.count >= 3:
            guard let entity = Int(parts[2]), (0...entities).contains(entity) else { return nil }
            let after = parts.count == 4 ? parts[3] : nil
            if let after, SyncedEntity.storedKey(after) == nil { return nil }
            self = .scan(token: token, entity: entity, after: after)
        default:
            return nil
        }
    }
}

/// Answers one pull inside a transaction: a page of records in the user's scope, each as the
/// server holds it (values, clocks, counter totals, tombstone), with writes made outside sync
/// stamped first.
struct PullReader: Sendable {
    let entities: [SyncedEntity]
    let clock: NodeClock
    let device: String
    let user: String
    let schemaVersion: Int

    func page(after start: PullCursor, limit: Int, in store: isolated Store) throws(SyncServerError) -> SyncPullAnswer {
        try seen(in: store)
        var cursor = start
        var records: [SyncRecordState] = []
        var hasMore = true
        while records.count < limit, hasMore {
            switch cursor {
            case .scan(let token, let index, _) where index >= entities.count:
                cursor = .history(token: token)
            case .scan(let token, let index, let after):
                let (found, next) = try scan(entities[index], after: after, limit: limit - records.count, in: store)
                records += found
                cursor = next.map { .scan(token: token, entity: index, after: $0) } ?? .scan(token: token, entity: index + 1, after: nil)
            case .history(let token):
                let (found, last, complete) = try changes(after: token, limit: limit - records.count, in: store)
                records += found
                cursor = .history(token: last)
                hasMore = !complete
            }
        }
        return SyncPullAnswer(records: records, next: cursor.text, hasMore: hasMore, clock: clock.latest)
    }

    /// Notes the device as seen now (the user checked), keeping its last push.
    private func seen(in store: isolated Store) throws(SyncServerError) {
        let known = try DeviceCheck(device: device, user: user).known(in: store)
        let now = Date()
        let row = SyncDeviceRow(
            device: device, user: user, schemaVersion: schemaVersion, sequence: known?.sequence ?? 0, answer: known?.answer, firstSeen: known?.firstSeen ?? now,
            lastSeen: now)
        do { try store.writeSyncDevice(row) } catch { throw .store(error) }
    }

    /// Up to `limit` of the entity's records after the key `after`, in key order; and the last
    /// key read, nil when none follow.
    private func scan(_ entity: SyncedEntity, after: String?, limit: Int, in store: isolated Store) throws(SyncServerError) -> ([SyncRecordState], String?) {
        let page: (records: [StoredRecord], next: RecordCursor?)
        do {
            page = try store.records(
                of: entity.descriptor, orderedBy: RecordOrder(entity.keyColumn), after: after.map { RecordCursor(values: [.text($0)]) }, limit: limit)
        } catch {
            throw .store(error)
        }
        let keyed = page.records.compactMap { record in record[entity.keyColumn].flatMap(SyncedEntity.keyText).map { ($0, record) } }
        let states: [String: String]
        do { states = try store.syncStates(entity: entity.name, keys: keyed.map(\.0)) } catch { throw .store(error) }
        let records = SyncStateRecords(clock: clock)
        let scope = ScopeCheck(entities: Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }), user: user, clock: clock)
        var found: [SyncRecordState] = []
        for (key, row) in keyed {
            let kept = try states[key].map { text throws(SyncServerError) in try served { () throws(SyncStateError) in try records.decode(text, of: entity, key: key, in: store) } }
            let record = try served { () throws(SyncStateError) in try records.reconciled(entity, state: kept, row: row, stamp: records.now()) }
            if record.stateChanged { try served { () throws(SyncStateError) in try records.save(record.state, of: entity, key: key, in: store) } }
            if try scope.holds(entity, entity.fieldValues(of: row), in: store) { found.append(SyncRecordState(entity: entity.name, key: key, record: record.state)) }
        }
        return (found, page.next == nil ? nil : keyed.last?.0)
    }

    /// The records changed in the history's transactions after `token`, up to `limit`
    /// transactions; the last token read, and whether the history ends there.
    private func changes(after token: Int64, limit: Int, in store: isolated Store) throws(SyncServerError) -> ([SyncRecordState], Int64, Bool) {
        let transactions: [HistoryTransaction]
        do {
            transactions = try store.history(after: HistoryToken(token), limit: limit)
        } catch {
            if case .historyPruned = error { throw .cursorExpired(PullCursor.history(token: token).text) }
            throw .store(error)
        }
        var touched: [String: [String]] = [:]
        var seenKeys: Set<String> = []
        for change in transactions.lazy.flatMap(\.changes) where change.key.count == 1 {
            guard entities.contains(where: { $0.name == change.entity }), let key = SyncedEntity.keyText(change.key[0]) else { continue }
            if seenKeys.insert(change.entity + "\u{0}" + key).inserted { touched[change.entity, default: []].append(key) }
        }
        let records = SyncStateRecords(clock: clock)
        let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let scope = ScopeCheck(entities: byName, user: user, clock: clock)
        var found: [SyncRecordState] = []
        for entity in entities {
            guard let keys = touched[entity.name] else { continue }
            let loaded = try served { () throws(SyncStateError) in try records.load(entity, keys: keys, in: store) { _ in records.now() } }
            for key in keys {
                guard let record = loaded[key], record.row != nil || record.state.deleted != nil else { continue }
                if record.stateChanged { try served { () throws(SyncStateError) in try records.save(record.state, of: entity, key: key, in: store) } }
                let values = record.row.map(entity.fieldValues) ?? record.state.values
                // A tombstone's scope is told from the values it kept (and its parent's, kept
                // in the parent's tombstone); one whose scope cannot be told is not sent.
                guard try scope.owner(entity, values, in: store) ?? false else { continue }
                found.append(SyncRecordState(entity: entity.name, key: key, record: record.row == nil ? Self.tombstone(of: record.state) : record.state))
            }
        }
        return (found, transactions.last?.token.value ?? token, transactions.count < limit)
    }

    /// A deleted record as sent: its delete's clock alone, none of its values.
    static func tombstone(of record: SyncRecord) -> SyncRecord {
        SyncRecord(values: [:], clocks: [:], deleted: record.deleted) ?? record
    }
}
