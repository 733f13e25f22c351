import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// Records leaving a user's scope, and what hangs under them. A write outside sync can move a
/// record to another user (a list given to another owner, an item moved to another user's
/// list); the devices of the user it left must remove it, and the records whose scope runs
/// through it. The first read that stamps such a write notes whom the record left
/// (`schemagen_sync_departures`), since only that read sees the value it replaced; each pull of
/// that user then tells its devices to remove the record, whichever pull read the write first.
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
    /// the first step of their scope's path with a value that leads to another user.
    func note(_ entity: SyncedEntity, _ records: [(key: String, record: SyncedRecord)], in store: isolated Store) throws(SyncServerError) {
        guard let field = Self.scopeField(of: entity) else { return }
        var left: [String: [String]] = [:]
        for (key, record) in records {
            guard let row = record.row, let before = record.replaced[field], before != .null else { continue }
            let former = try ScopeCheck.endOfPath(entity, [field: before], entities: entities, clock: clock, in: store)
            guard case .text(let user)? = former else { continue }
            let now = try ScopeCheck.endOfPath(entity, entity.fieldValues(of: row), entities: entities, clock: clock, in: store)
            if now != former { left[user, default: []].append(key) }
        }
        for (user, keys) in left {
            do { try store.noteSyncDepartures(entity: entity.name, keys: keys, user: user) } catch { throw .store(error) }
        }
    }

    /// Which of these records of `entity` (out of the user's scope now) left `user`'s scope.
    func left(_ entity: SyncedEntity, keys: [String], user: String, in store: isolated Store) throws(SyncServerError) -> Set<String> {
        guard !keys.isEmpty else { return [] }
        // A UUID user is kept in its stored spelling (lowercase), as `sameUser` compares it.
        let spelling = UUID(uuidString: user) != nil ? user.lowercased() : user
        do { return try store.syncDepartures(entity: entity.name, keys: keys, user: spelling) } catch { throw .store(error) }
    }

    /// Whether a record's values put it under one of `removed` (by entity) whose scope its own
    /// goes on as: it left the user's scope with that record.
    func isUnder(_ entity: SyncedEntity, _ values: [String: StoredValue], _ removed: [String: Set<String>]) -> Bool {
        guard case .user(let path) = entity.scope, path.count >= 2, let link = entity.descriptor.relationships.first(where: { $0.name == path[0] }),
            let parent = entities[link.target], case .user(let parentPath) = parent.scope, Array(path.dropFirst()) == parentPath,
            let key = values[path[0]].flatMap(SyncedEntity.keyText)
        else { return false }
        return removed[parent.name]?.contains(key) ?? false
    }

    /// The records whose scope runs through these records of `entity`, by entity: those whose
    /// path starts with a relationship to it. `sameRest`: only those whose path goes on as
    /// `entity`'s own does (they leave a user's scope with it).
    func dependents(of entity: SyncedEntity, keys: [String], sameRest: Bool, in store: isolated Store) throws(SyncServerError) -> [String: [String]] {
        guard !keys.isEmpty else { return [:] }
        let parentPath: [String] = if case .user(let path) = entity.scope { path } else { [] }
        var found: [String: [String]] = [:]
        for dependent in entities.values {
            guard case .user(let path) = dependent.scope, path.count >= 2, !sameRest || Array(path.dropFirst()) == parentPath,
                let link = dependent.descriptor.relationships.first(where: { $0.name == path[0] && $0.target == entity.name && $0.foreignKeyColumns.count == 1 })
            else { continue }
            let rows: [StoredRecord]
            do { rows = try store.records(of: dependent.descriptor, column: link.foreignKeyColumns[0], in: keys.compactMap(SyncedEntity.storedKey)) } catch { throw .store(error) }
            let children = rows.compactMap { $0[dependent.keyColumn].flatMap(SyncedEntity.keyText) }
            if !children.isEmpty { found[dependent.name] = children }
        }
        return found
    }
}
