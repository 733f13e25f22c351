import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// Records leaving a user's scope, and what hangs under them. A write outside sync can move a
/// record to another user (a list given to another owner, an item moved to another user's
/// list); the devices of the user it left must remove it, and the records whose scope runs
/// through it. The first read that stamps such a write notes whom the record left, when, and by
/// which history transaction (`schemagen_sync_departures`), since only that read sees the value
/// it replaced; a pull of that user whose history reaches that transaction then tells its
/// device to remove the record, whichever pull read the write first.
struct ScopeDepartures {
    let entities: [String: SyncedEntity]
    let clock: NodeClock

    /// The field whose change moves a record of `entity` to another scope: the first step of its
    /// scope's path; nil for `all`.
    static func scopeField(of entity: SyncedEntity) -> String? {
        guard case .user(let path) = entity.scope else { return nil }
        return path.first
    }

    /// Notes the users these records left, where a write outside sync stamped just now replaced
    /// the first step of their scope's path with a value that leads to another user. A record
    /// that was nobody's before (no parent, or one whose owner cannot be told) is noted as
    /// having left the user "" (nobody signs in so): it came from elsewhere all the same.
    /// `tokens`: the history transaction that moved each record, where the read knows it;
    /// others count as moved by the latest.
    func note(_ entity: SyncedEntity, _ records: [(key: String, record: SyncedRecord)], tokens: [String: Int64] = [:], in store: isolated Store) throws(SyncServerError) {
        guard let field = Self.scopeField(of: entity) else { return }
        var left: [String: [(key: String, clock: String?)]] = [:]
        for (key, record) in records {
            guard let row = record.row, let before = record.replaced[field] else { continue }
            let former = before == .null ? nil : try ScopeCheck.endOfPath(entity, [field: before], entities: entities, clock: clock, in: store)
            let user: String = if case .text(let text)? = former { Self.spelling(of: text) } else { "" }
            let now = try ScopeCheck.endOfPath(entity, entity.fieldValues(of: row), entities: entities, clock: clock, in: store)
            if now != former { left[user, default: []].append((key, record.state.clocks[field]?.text)) }
        }
        guard !left.isEmpty else { return }
        let latest: Int64
        do { latest = try store.currentHistoryToken().value } catch { throw .store(error) }
        for (user, moves) in left {
            for (token, group) in Dictionary(grouping: moves, by: { tokens[$0.key] ?? latest }) {
                do { try store.noteSyncDepartures(entity: entity.name, moves: group, user: user, token: token) } catch { throw .store(error) }
            }
        }
    }

    /// Which of these records of `entity` (out of the user's scope now) left `user`'s scope by a
    /// transaction after history token `after` (one the pull reads now; a device past it was
    /// told before), each with its move.
    func left(_ entity: SyncedEntity, keys: [String], user: String, after: Int64, in store: isolated Store) throws(SyncServerError) -> [String: Departure] {
        guard !keys.isEmpty, !user.isEmpty else { return [:] }
        let noted: [String: String?]
        do { noted = try store.syncDepartures(entity: entity.name, keys: keys, user: Self.spelling(of: user), after: after) } catch { throw .store(error) }
        return noted.mapValues { Departure(clock: $0.flatMap { SyncClock(text: $0) }) }
    }

    /// Which of these records of `entity` (in `user`'s scope now) came from another user's scope,
    /// or from nobody's, by a transaction after history token `after`: a move between two parents
    /// of the same user brings nothing new to that user's devices.
    func arrived(_ entity: SyncedEntity, keys: [String], user: String, after: Int64, in store: isolated Store) throws(SyncServerError) -> Set<String> {
        guard !keys.isEmpty else { return [] }
        do { return try store.syncDepartures(entity: entity.name, keys: keys, otherThan: Self.spelling(of: user), after: after) } catch { throw .store(error) }
    }

    /// A user as notes keep it: a UUID in lowercase, whichever way the owner column or the sign-in
    /// spells it (`sameUser` takes either); any other id as it is.
    static func spelling(of user: String) -> String {
        UUID(uuidString: user) != nil ? user.lowercased() : user
    }

    /// The clock of the move a record left the user's scope by, with its parent: where its
    /// values put it under one of `removed` (by entity, each with its move's clock) whose scope
    /// its own goes on as, and its state linked it there before that move (a deleted card of the
    /// list given away).
    func leftWithParent(_ entity: SyncedEntity, _ values: [String: StoredValue], state: SyncRecord, _ removed: [String: [String: Departure]]) -> Departure? {
        guard let (parent, key) = parentLink(of: entity, values), let departure = removed[parent]?[key], Self.scopeField(of: entity).map({ departure.precedes(state.clocks[$0]) }) ?? false
        else { return nil }
        return departure
    }

    /// The entity and key of the record a record's scope runs through, where its path goes on
    /// as that record's own.
    private func parentLink(of entity: SyncedEntity, _ values: [String: StoredValue]) -> (String, String)? {
        guard case .user(let path) = entity.scope, path.count >= 2, let link = entity.descriptor.relationships.first(where: { $0.name == path[0] }),
            let parent = entities[link.target], case .user(let parentPath) = parent.scope, Array(path.dropFirst()) == parentPath,
            let key = values[path[0]].flatMap(SyncedEntity.keyText)
        else { return nil }
        return (parent.name, key)
    }

    /// The records whose scope runs through these records of `entity`, by entity: those whose
    /// path starts with a relationship to it.
    func dependents(of entity: SyncedEntity, keys: [String], in store: isolated Store) throws(SyncServerError) -> [String: [String]] {
        try children(of: entity, keys: keys, sameRest: false, in: store).mapValues { $0.map(\.key) }
    }

    /// The records that left a user's scope with these records of `entity` (each with its
    /// move), by entity, each with its parent's move: those whose path goes on as `entity`'s
    /// own, linked to it before it moved. One linked since (a card another user added to the
    /// list given away) was never this user's, and is not named to them.
    func departedWith(_ entity: SyncedEntity, _ parents: [String: Departure], in store: isolated Store) throws(SyncServerError) -> [String: [String: Departure]] {
        guard !parents.isEmpty else { return [:] }
        var found: [String: [String: Departure]] = [:]
        for (child, rows) in try children(of: entity, keys: Array(parents.keys), sameRest: true, in: store) {
            guard let childEntity = entities[child], let field = Self.scopeField(of: childEntity) else { continue }
            let texts: [String: String]
            do { texts = try store.syncStates(entity: child, keys: rows.map(\.key)) } catch { throw .store(error) }
            let records = SyncStateRecords(clock: clock)
            for (key, parent) in rows {
                // Never stamped: no device of anyone holds it.
                guard let text = texts[key], let departure = parents[parent] else { continue }
                let state = try served { () throws(SyncStateError) in try records.decode(text, of: childEntity, key: key, in: store) }
                guard departure.precedes(state.clocks[field]) else { continue }
                found[child, default: [:]][key] = departure
            }
        }
        return found
    }

    /// The records linked to these records of `entity` by the first step of their scope's path,
    /// by entity, each with the key it links to. `sameRest`: only those whose path goes on as
    /// `entity`'s own.
    private func children(of entity: SyncedEntity, keys: [String], sameRest: Bool, in store: isolated Store) throws(SyncServerError) -> [String: [(key: String, parent: String)]] {
        guard !keys.isEmpty else { return [:] }
        let parentPath: [String] = if case .user(let path) = entity.scope { path } else { [] }
        var found: [String: [(key: String, parent: String)]] = [:]
        for dependent in entities.values {
            guard case .user(let path) = dependent.scope, path.count >= 2, !sameRest || Array(path.dropFirst()) == parentPath,
                let link = dependent.descriptor.relationships.first(where: { $0.name == path[0] && $0.target == entity.name && $0.foreignKeyColumns.count == 1 })
            else { continue }
            let rows: [StoredRecord]
            do { rows = try store.records(of: dependent.descriptor, column: link.foreignKeyColumns[0], in: keys.compactMap(SyncedEntity.storedKey)) } catch { throw .store(error) }
            let children = rows.compactMap { row -> (key: String, parent: String)? in
                guard let key = row[dependent.keyColumn].flatMap(SyncedEntity.keyText), let parent = row[link.foreignKeyColumns[0]].flatMap(SyncedEntity.keyText) else { return nil }
                return (key, parent)
            }
            if !children.isEmpty { found[dependent.name] = children }
        }
        return found
    }
}

/// The move a record left a user's scope by: the clock the move was stamped with when it was
/// noted (nil where none was kept), after which no link to it was the user's.
struct Departure {
    let clock: SyncClock?

    /// Whether a child's link, stamped `linked`, was made before the move (or the move's clock
    /// is not known, and the link counts).
    func precedes(_ linked: SyncClock?) -> Bool {
        guard let clock else { return true }
        guard let linked else { return false }
        return linked < clock
    }
}
