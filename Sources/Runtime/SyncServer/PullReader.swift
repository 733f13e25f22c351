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
    /// A device that pulled before and starts over (its history pruned): the tombstones of
    /// records deleted meanwhile, entity by entity, after the live records.
    case tombstones(token: Int64, entity: Int, after: String?)
    /// After `token`; `skip` records of the next transaction already sent (one transaction
    /// larger than a page goes in several).
    case history(token: Int64, skip: Int)

    /// The cursor as the device keeps it: `s.<token>.<entity>[.<key>]` or `h.<token>[.<skip>]`.
    var text: String {
        switch self {
        case .scan(let token, let entity, let after): "s.\(token).\(entity)" + (after.map { ".\($0)" } ?? "")
        case .tombstones(let token, let entity, let after): "t.\(token).\(entity)" + (after.map { ".\($0)" } ?? "")
        case .history(let token, let skip): "h.\(token)" + (skip > 0 ? ".\(skip)" : "")
        }
    }

    /// A cursor this server gave, for a schema of `entities` synced entities.
    init?(text: String, entities: Int) {
        let parts = text.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, let token = Int64(parts[1]), token >= 0 else { return nil }
        switch parts[0] {
        case "h" where parts.count == 2:
            self = .history(token: token, skip: 0)
        case "h" where parts.count == 3:
            guard let skip = Int(parts[2]), skip > 0 else { return nil }
            self = .history(token: token, skip: skip)
        case "s" where parts.count >= 3, "t" where parts.count >= 3:
            guard let entity = Int(parts[2]), (0...entities).contains(entity) else { return nil }
            let after = parts.count == 4 ? parts[3] : nil
            if let after, SyncedEntity.storedKey(after) == nil { return nil }
            self = parts[0] == "s" ? .scan(token: token, entity: entity, after: after) : .tombstones(token: token, entity: entity, after: after)
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
    /// The states the server's other version keeps, for records without one in this version.
    let seeds: (any SyncStateSeeds)?
    /// Whether the pull goes on from a cursor (not a first page).
    var resuming = false
    /// Whether the device was known before this pull, where an earlier try of the same pull
    /// read it (that try wrote the device's row); nil to read it.
    var knownBefore: Bool?
    /// This version's entity for each name the history may record a change under: its own, and
    /// the other served version's (an entity renamed between them).
    var historyNames: [String: String] = [:]
    /// Each entity's names for the first step of its scope's path in the history: its own, and
    /// the other served version's where it was renamed.
    var scopeFieldNames: [String: Set<String>] = [:]

    /// A page; the history token after which it left committed history unread, held back by a
    /// transaction running when this one began (nil when none); and whether the device was
    /// known before.
    func page(after start: PullCursor, limit: Int, in store: isolated Store) throws(SyncServerError) -> (answer: SyncPullAnswer, heldBackAfter: Int64?, known: Bool) {
        let began = Date()
        let (known, seen) = try self.seen(in: store, startingOver: !resuming, at: began)
        let returning = knownBefore ?? (known != nil)
        let purged: Date?
        do { purged = try store.syncTombstonesPurgedThrough() } catch { throw .store(error) }
        // Going on from a cursor given before deletes it never saw were purged: it must start
        // over. (A pull from no cursor starts over, and counts as caught up from its start.)
        if resuming, let known, let purged, (known.caughtUpAt ?? known.firstSeen) < purged { throw .tombstonesPurged(device: device) }
        var cursor = start
        var records: [SyncRecordState] = []
        var hasMore = true
        var reachedEnd = false
        // Bounded work per pull: history of other users' records is read at most this many
        // batches before the page goes back, short, with `hasMore`.
        var batches = 0
        while records.count < limit, hasMore, batches < 20 {
            batches += 1
            switch cursor {
            case .scan(let token, let index, _) where index >= entities.count:
                cursor = returning ? .tombstones(token: token, entity: 0, after: nil) : .history(token: token, skip: 0)
            case .tombstones(let token, let index, _) where index >= entities.count:
                cursor = .history(token: token, skip: 0)
            case .tombstones(let token, let index, let after):
                let (found, next) = try tombstones(entities[index], after: after, limit: limit - records.count, in: store)
                records += found
                cursor = next.map { .tombstones(token: token, entity: index, after: $0) } ?? .tombstones(token: token, entity: index + 1, after: nil)
            case .scan(let token, let index, let after):
                let (found, next) = try scan(entities[index], after: after, limit: limit - records.count, in: store)
                records += found
                cursor = next.map { .scan(token: token, entity: index, after: $0) } ?? .scan(token: token, entity: index + 1, after: nil)
            case .history(let token, let skip):
                let (found, next, complete) = try changes(after: token, skipping: skip, limit: limit - records.count, in: store)
                records += found
                cursor = next
                hasMore = !complete
                reachedEnd = complete
                if found.isEmpty, !complete, next == .history(token: token, skip: skip) { hasMore = false }
            }
        }
        // Written once, with the page: at the end of the history, every delete recorded before
        // this pull began reached it.
        var row = seen
        if reachedEnd { row.caughtUpAt = began }
        var heldBackAfter: Int64?
        do {
            try store.writeSyncDevice(row)
            if reachedEnd, case .history(let token, _) = cursor, try store.unsettledHistory(after: token) { heldBackAfter = token }
        } catch { throw .store(error) }
        return (SyncPullAnswer(records: records, next: cursor.text, hasMore: hasMore, clock: clock.latest), heldBackAfter, returning)
    }

    /// The device as it was known before (nil for a new one, the user checked), and as seen now,
    /// its last push kept. A device starting over (no cursor) gets everything as of now, so it is
    /// caught up from now on: deletes purged before need not reach it.
    private func seen(in store: isolated Store, startingOver: Bool, at now: Date) throws(SyncServerError) -> (before: SyncDeviceRow?, now: SyncDeviceRow) {
        let known = try DeviceCheck(device: device, user: user).known(in: store)
        let row = SyncDeviceRow(
            device: device, user: user, schemaVersion: schemaVersion, sequence: known?.sequence ?? 0, answer: known?.answer, firstSeen: known?.firstSeen ?? now,
            lastSeen: now, caughtUpAt: startingOver ? now : nil)
        return (known, row)
    }

    /// Up to `limit` of the entity's tombstones (records deleted, whose state is kept) after the
    /// key `after`, in the user's scope, in key order; and the last key read, nil when none
    /// follow.
    private func tombstones(_ entity: SyncedEntity, after: String?, limit: Int, in store: isolated Store) throws(SyncServerError) -> ([SyncRecordState], String?) {
        let kept: [(key: String, state: String)]
        do { kept = try store.syncStatesWithoutRows(of: entity.descriptor, keyColumn: entity.keyColumn, after: after, limit: limit) } catch { throw .store(error) }
        let records = SyncStateRecords(clock: clock, seeds: seeds)
        let loaded = try served { () throws(SyncStateError) in try records.load(entity, keys: kept.map(\.key), in: store) { _ in records.now() } }
        // Deleted outside sync and not read since: stamped now.
        let stamped = kept.compactMap { item in loaded[item.key].flatMap { $0.stateChanged ? (item.key, $0.state) : nil } }
        try served { () throws(SyncStateError) in try records.save(stamped, of: entity, in: store) }
        let scope = scopeCheck
        var found: [SyncRecordState] = []
        for (key, _) in kept {
            guard let record = loaded[key], record.row == nil, record.state.isDeleted else { continue }
            guard try scope.owner(entity, record.state.values, in: store) ?? false else { continue }
            found.append(SyncRecordState(entity: entity.name, key: key, record: Self.tombstone(of: record.state)))
        }
        return (found, kept.count < limit ? nil : kept.last?.key)
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
        let records = SyncStateRecords(clock: clock, seeds: seeds)
        let scope = scopeCheck
        var found: [SyncRecordState] = []
        var stamped: [(key: String, state: SyncRecord)] = []
        let rows = Dictionary(keyed, uniquingKeysWith: { first, _ in first })
        let (kept, seeded) = try served { () throws(SyncStateError) in try records.kept(entity, states: states, rows: rows, keys: keyed.map(\.0), in: store) }
        var reconciled: [(key: String, record: SyncedRecord)] = []
        for (key, row) in keyed {
            let record = try served { () throws(SyncStateError) in try records.reconciled(entity, state: kept[key], row: row, stamp: records.now()) }
            reconciled.append((key, record))
            if record.stateChanged || seeded.contains(key) { stamped.append((key, record.state)) }
            if try scope.holds(entity, entity.fieldValues(of: row), in: store) { found.append(SyncRecordState(entity: entity.name, key: key, record: record.state)) }
        }
        try served { () throws(SyncStateError) in try records.save(stamped, of: entity, in: store) }
        try ScopeDepartures(entities: scope.entities, clock: clock).note(entity, reconciled, in: store)
        return (found, page.next == nil ? nil : keyed.last?.0)
    }

    /// The records changed in the history's transactions after `token` (past the first `skip`
    /// of the next one), at most `limit`: whole transactions while they fit, one larger than a
    /// page in parts. Where the next page starts, and whether the history ends here.
    private func changes(after token: Int64, skipping skip: Int, limit: Int, in store: isolated Store) throws(SyncServerError) -> ([SyncRecordState], PullCursor, Bool) {
        let transactions: [HistoryTransaction]
        do {
            transactions = try store.history(after: HistoryToken(token), limit: limit)
        } catch {
            if case .historyPruned = error { throw .cursorExpired(PullCursor.history(token: token, skip: skip).text) }
            throw .store(error)
        }
        var touched: [String: [String]] = [:]
        var seenKeys: Set<String> = []
        var picked = 0
        var cursor = PullCursor.history(token: token, skip: skip)
        var complete = transactions.count < limit
        var before = token
        var partlyHidden: Set<String> = []
        var moved: [String: Int64] = [:]
        for (index, transaction) in transactions.enumerated() {
            var changes: [(entity: String, key: String)] = []
            var inTransaction: Set<String> = []
            // Moves count only where their transaction is sent (this page or the next).
            var moves: Set<String> = []
            for change in transaction.changes where change.key.count == 1 {
                guard let entity = historyNames[change.entity] ?? entities.first(where: { $0.name == change.entity })?.name,
                    let key = SyncedEntity.keyText(change.key[0])
                else { continue }
                if hidesColumns(change, entity) { partlyHidden.insert(entity + "\u{0}" + key) }
                if movesScope(change, entity) { moves.insert(entity + "\u{0}" + key) }
                guard inTransaction.insert(entity + "\u{0}" + key).inserted else { continue }
                changes.append((entity, key))
            }
            let skipped = index == 0 ? min(skip, changes.count) : 0
            let fresh = changes.dropFirst(skipped).filter { !seenKeys.contains($0.entity + "\u{0}" + $0.key) }
            if picked + fresh.count > limit {
                complete = false
                // A transaction larger than a page: as much of it as fits, the rest next time.
                if picked == 0 {
                    for change in fresh.prefix(limit) {
                        touched[change.entity, default: []].append(change.key)
                        if moves.contains(change.entity + "\u{0}" + change.key) { moved[change.entity + "\u{0}" + change.key] = transaction.token.value }
                    }
                    picked = limit
                    cursor = .history(token: before, skip: skipped + limit)
                }
                break
            }
            for change in fresh {
                seenKeys.insert(change.entity + "\u{0}" + change.key)
                touched[change.entity, default: []].append(change.key)
            }
            for key in moves { moved[key] = transaction.token.value }
            picked += fresh.count
            before = transaction.token.value
            cursor = .history(token: before, skip: 0)
        }
        try addOneToOneDependents(of: partlyHidden, to: &touched, in: store)
        return (try read(touched, moved: moved, after: token, in: store), cursor, complete)
    }

    /// The most records a move may bring into a page with it (what hangs under a record that
    /// came into or left the user's scope): past it, the device pulls everything again instead,
    /// which a page of any size can carry, and lets go of what does not come.
    static let movedWithLimit = 1_000

    /// The touched records as sent: those in the user's scope with their state, tombstones, and
    /// the word `removed` for those that left it (`moved`: the records whose scope's first step
    /// changed, by the transaction that changed it, read after history token `after`). What
    /// hangs under a record that came into the user's scope comes with it, and what hangs under
    /// one that left goes with it. Parents are read first, so that their children join the
    /// entities read after them.
    private func read(_ touched: [String: [String]], moved: [String: Int64], after: Int64, in store: isolated Store) throws(SyncServerError) -> [SyncRecordState] {
        var touched = touched
        // Brought along with a record that moved in: checked as moved, with no move of their own.
        var broughtIn: Set<String> = []
        var touchedKeys = Set(touched.flatMap { entity, keys in keys.map { entity + "\u{0}" + $0 } })
        var leaving: [String: [String: Departure]] = [:], removedSoFar: [String: [String: Departure]] = [:]
        var brought = 0
        let records = SyncStateRecords(clock: clock, seeds: seeds)
        let scope = scopeCheck
        let departures = ScopeDepartures(entities: scope.entities, clock: clock)
        var found: [SyncRecordState] = []
        for entity in SyncedEntity.parentsFirst(entities) {
            let keys = touched[entity.name] ?? []
            let loaded = try served { () throws(SyncStateError) in try records.load(entity, keys: keys, in: store) { _ in records.now() } }
            let stamped = keys.compactMap { key in loaded[key].flatMap { $0.stateChanged ? (key, $0.state) : nil } }
            try served { () throws(SyncStateError) in try records.save(stamped, of: entity, in: store) }
            let tokens = moved.reduce(into: [String: Int64]()) { tokens, item in
                if item.key.hasPrefix(entity.name + "\u{0}") { tokens[String(item.key.dropFirst(entity.name.count + 1))] = item.value }
            }
            try departures.note(entity, keys.compactMap { key in loaded[key].map { (key, $0) } }, tokens: tokens, in: store)
            var movedIn: [String] = [], movedOut: [String] = [], held: Set<String> = []
            for key in keys {
                guard let record = loaded[key], record.row != nil || record.state.deleted != nil else { continue }
                let values = record.row.map(entity.fieldValues) ?? record.state.values
                // A record moved, then deleted, counts too: its tombstone is the new owner's.
                let wasMoved = moved[entity.name + "\u{0}" + key] != nil || broughtIn.contains(entity.name + "\u{0}" + key)
                // A tombstone's scope is told from the values it kept (and its parent's, kept
                // in the parent's tombstone); one whose scope cannot be told is not sent.
                guard try scope.owner(entity, values, in: store) ?? false else {
                    if wasMoved { movedOut.append(key) }
                    if let departure = departures.leftWithParent(entity, values, state: record.state, removedSoFar) { leaving[entity.name, default: [:]][key] = departure }
                    continue
                }
                held.insert(key)
                if wasMoved { movedIn.append(key) }
                found.append(SyncRecordState(entity: entity.name, key: key, record: record.row == nil ? Self.tombstone(of: record.state) : record.state))
            }
            var removed = leaving[entity.name, default: [:]].merging(try departures.left(entity, keys: movedOut, user: user, after: after, in: store)) { first, _ in first }
            for key in held { removed[key] = nil }
            for key in removed.keys.sorted() { found.append(SyncRecordState(entity: entity.name, key: key, record: SyncRecord(), removed: true)) }
            removedSoFar[entity.name] = removed
            // What hangs under a record comes with it only where it came from another user (or
            // with its own parent): a move between two of this user's parents brings nothing new.
            let cameFrom = try departures.arrived(entity, keys: movedIn.filter { !broughtIn.contains(entity.name + "\u{0}" + $0) }, user: user, after: after, in: store)
            let arrivals = movedIn.filter { broughtIn.contains(entity.name + "\u{0}" + $0) || cameFrom.contains($0) }
            for (dependent, children) in try departures.dependents(of: entity, keys: arrivals, in: store) {
                for child in children where touchedKeys.insert(dependent + "\u{0}" + child).inserted {
                    touched[dependent, default: []].append(child)
                    broughtIn.insert(dependent + "\u{0}" + child)
                    brought += 1
                }
            }
            for (dependent, children) in try departures.departedWith(entity, removed, in: store) {
                leaving[dependent, default: [:]].merge(children) { first, _ in first }
                brought += children.count
            }
            if brought > Self.movedWithLimit { throw .cursorExpired(PullCursor.history(token: after, skip: 0).text) }
        }
        return found
    }

    /// Whether an update changed the first step of the record's scope's path (an owner, a
    /// parent): the record may have come into this user's scope, or left it. A change made
    /// through the other served version names the field as that version does.
    private func movesScope(_ change: HistoryChange, _ entity: String) -> Bool {
        guard change.kind == .update, let names = scopeFieldNames[entity] else { return false }
        return change.changedAttributes.contains { names.contains($0) }
    }

    /// Whether a change names attributes this version's entity does not have: made through the
    /// other version, whose migration's triggers may have written this version's records too.
    private func hidesColumns(_ change: HistoryChange, _ entity: String) -> Bool {
        guard let mine = entities.first(where: { $0.name == entity }) else { return false }
        // A relationship whose key the other side holds is no column of this row.
        return change.changedAttributes.contains { name in
            mine.columns[name] == nil && !mine.descriptor.relationships.contains { $0.name == name && !$0.foreignKeyColumns.isEmpty }
        }
    }

    /// Adds, for each touched record whose change this version cannot see whole, the records
    /// that hold its key one-to-one (a table split's part, which the other version's write
    /// reached through the migration's triggers without a history entry of this version's).
    private func addOneToOneDependents(of partlyHidden: Set<String>, to touched: inout [String: [String]], in store: isolated Store) throws(SyncServerError) {
        guard !partlyHidden.isEmpty else { return }
        for entity in entities {
            for relationship in entity.descriptor.relationships where !relationship.isToMany && relationship.foreignKeyColumns.isEmpty {
                guard let dependent = entities.first(where: { $0.name == relationship.target }),
                    let link = dependent.descriptor.relationships.first(where: { $0.target == entity.name && $0.foreignKeyColumns.count == 1 })
                else { continue }
                for key in touched[entity.name] ?? [] where partlyHidden.contains(entity.name + "\u{0}" + key) {
                    guard let stored = SyncedEntity.storedKey(key) else { continue }
                    let rows: [StoredRecord]
                    do { rows = try store.records(of: dependent.descriptor, where: [RecordFilter(link.foreignKeyColumns[0], .equals(stored))], limit: 2).records } catch { throw .store(error) }
                    for row in rows {
                        guard let found = row[dependent.keyColumn].flatMap(SyncedEntity.keyText), !(touched[dependent.name]?.contains(found) ?? false) else { continue }
                        touched[dependent.name, default: []].append(found)
                    }
                }
            }
        }
    }

    /// Whether records are the user's, for every read of this pull.
    private var scopeCheck: ScopeCheck {
        ScopeCheck(entities: Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }), user: user, clock: clock)
    }

    /// A deleted record as sent: its delete's clock alone, none of its values.
    static func tombstone(of record: SyncRecord) -> SyncRecord {
        SyncRecord(values: [:], clocks: [:], deleted: record.deleted) ?? record
    }
}
