import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// Merges a pulled page into the device's store, in one transaction with the cursor that ends
/// it: a device killed mid-pull has taken whole pages, and pulls the rest from where it stopped.
struct Inbox: Sendable {
    let entities: [String: SyncedEntity]
    let clock: NodeClock

    /// Merges each record into the device's, writes the rows that changed (as author `sync`, so
    /// they are never pushed back), removes those that left the user's scope, and moves the
    /// cursor. Returns how many records changed, and those removed that were here.
    /// While the device pulls everything again (`progress.sweepSince`), the state of every
    /// record that comes is written again, changed or not: the sweep keeps those.
    func take(_ page: SyncPullAnswer, _ progress: inout SyncClientRow, in store: isolated Store) throws(SyncClientError) -> (changed: Int, removed: [(entity: String, key: String)]) {
        let kept = page.records.filter { !$0.removed }
        // Merged first: a card the page moves to another list is no longer under the list it
        // removes.
        let changed = try merge(kept, sweeping: progress.sweepSince != nil, clock: page.clock, in: store)
        let removed = try remove(page.records.filter(\.removed), keeping: Set(kept.map { $0.entity + "\u{0}" + $0.key }), in: store)
        progress.pullCursor = page.next
        return (changed + removed.count, removed)
    }

    /// Removes the records that left the user's scope, children first, as `sync` (so that no
    /// delete is pushed), and forgets their state, pending changes included: the server no
    /// longer takes them from this user. Under them, what was made here and never accepted goes
    /// too (the server cannot name it), and what the server accepted and did not name (deleted
    /// there meanwhile, or linked after the move). One changed here and not pushed yet (moved
    /// here) is the user's still, held elsewhere on the server: the records above it stay, so
    /// that no delete rule takes it; its push, refused, brings it back where the server holds
    /// it. A record the page also sends (`keeping`) stays. Returns those that were here.
    private func remove(_ records: [SyncRecordState], keeping: Set<String>, in store: isolated Store) throws(SyncClientError) -> [(entity: String, key: String)] {
        guard !records.isEmpty else { return [] }
        var leaving: [String: Set<String>] = [:]
        for record in records where SyncedEntity.storedKey(record.key) != nil && !keeping.contains(record.entity + "\u{0}" + record.key) {
            leaving[record.entity, default: []].insert(record.key)
        }
        var frontier = leaving.compactMap { name, keys in entities[name].map { ($0, keys.sorted()) } }
        var heldUnder: [(entity: String, parent: String)] = []
        var above: [String: (entity: String, key: String)] = [:]
        while let (parent, parentKeys) = frontier.popLast() {
            for (child, found) in try underneath(parent, keys: parentKeys, sameRest: true, in: store) {
                guard let childEntity = entities[child] else { continue }
                let fresh = found.filter { !(leaving[child]?.contains($0.key) ?? false) && !keeping.contains(child + "\u{0}" + $0.key) }
                for item in found where above[child + "\u{0}" + item.key] == nil { above[child + "\u{0}" + item.key] = (item.link.target, item.parent) }
                let madeHere = try inStore { () throws(StoreError) in try store.syncUnsharedKeys(entity: child, keys: fresh.map(\.key)) }
                let pending = try inStore { () throws(StoreError) in try store.syncPendingKeys(entity: child, keys: fresh.map(\.key)) }
                let staying = Set(fresh.map(\.key)).subtracting(madeHere).intersection(pending)
                for item in fresh where staying.contains(item.key) { heldUnder.append((item.link.target, item.parent)) }
                // Only what leaves is gone through: a record the user keeps takes its own along.
                let going = fresh.map(\.key).filter { !staying.contains($0) }
                leaving[child, default: []].formUnion(going)
                if !going.isEmpty { frontier.append((childEntity, going)) }
            }
        }
        // The records above one that stays, up to the one the server named, stay with it.
        for held in heldUnder {
            var next: (entity: String, key: String)? = (held.entity, held.parent)
            while let record = next, leaving[record.entity]?.remove(record.key) != nil {
                next = above[record.entity + "\u{0}" + record.key]
            }
        }
        var removed: [(entity: String, key: String)] = []
        for entity in SyncedEntity.parentsFirst(Array(entities.values)).reversed() {
            for name in leaving[entity.name, default: []].sorted() {
                let key = SyncedEntity.storedKey(name)!
                let held = try inStore { () throws(StoreError) in try store.deleteRecord(of: entity.descriptor, key: [key]) }
                try inStore { () throws(StoreError) in try store.forgetSyncRecord(entity: entity.name, key: name) }
                if held { removed.append((entity.name, name)) }
            }
        }
        return removed
    }

    /// The records here whose scope runs through these records of `entity`, however far down (a
    /// board's lists and their cards), by entity. `sameRest`: only those whose path goes on as
    /// their parent's (they leave a user's scope with it).
    private func everythingUnder(_ entity: SyncedEntity, keys: [String], sameRest: Bool, in store: isolated Store) throws(SyncClientError) -> [String: Set<String>] {
        var found: [String: Set<String>] = [:]
        var frontier = [(entity, keys)]
        while let (parent, parentKeys) = frontier.popLast() {
            for (child, linked) in try underneath(parent, keys: parentKeys, sameRest: sameRest, in: store) {
                // A record met before (a cycle of parents) is not followed again.
                let fresh = linked.map(\.key).filter { found[child, default: []].insert($0).inserted }
                if !fresh.isEmpty, let childEntity = entities[child] { frontier.append((childEntity, fresh)) }
            }
        }
        return found
    }

    /// The records here whose scope runs through these records of `entity` (a list's cards), by
    /// entity: those whose scope's path starts with a relationship to it, each with that link and
    /// the key it holds.
    private func underneath(_ entity: SyncedEntity, keys: [String], sameRest: Bool, in store: isolated Store) throws(SyncClientError) -> [String: [Linked]] {
        guard !keys.isEmpty else { return [:] }
        let parentPath: [String] = if case .user(let path) = entity.scope { path } else { [] }
        var found: [String: [Linked]] = [:]
        for child in entities.values {
            guard case .user(let path) = child.scope, path.count >= 2, !sameRest || Array(path.dropFirst()) == parentPath,
                let link = child.descriptor.relationships.first(where: { $0.name == path[0] && $0.target == entity.name && $0.foreignKeyColumns.count == 1 })
            else { continue }
            let rows = try inStore { () throws(StoreError) in
                try store.records(of: child.descriptor, column: link.foreignKeyColumns[0], in: keys.compactMap(SyncedEntity.storedKey))
            }
            let children = rows.compactMap { row -> Linked? in
                guard let key = row[child.keyColumn].flatMap(SyncedEntity.keyText), let parent = row[link.foreignKeyColumns[0]].flatMap(SyncedEntity.keyText) else { return nil }
                return Linked(key: key, link: link, parent: parent)
            }
            if !children.isEmpty { found[child.name] = children }
        }
        return found
    }

    /// A record found under another: its key, the relationship that links it, the key it holds.
    private struct Linked {
        let key: String
        let link: RelationshipDescriptor
        let parent: String
    }

    /// Merges the records pulled into the device's; how many changed.
    private func merge(_ pulledRecords: [SyncRecordState], sweeping: Bool, clock serverClock: SyncClock, in store: isolated Store) throws(SyncClientError) -> Int {
        let records = SyncStateRecords(clock: clock)
        // The device's clock goes past the server's, whatever its wall clock says: its next
        // change is made after what it has seen.
        clock.advance(past: serverClock)
        for pulled in pulledRecords {
            for stamp in [pulled.record.latestChange, pulled.record.deleted].compactMap({ $0 }) { clock.advance(past: stamp) }
        }
        var changed = 0
        // Parents first, as the server sends them: a list is written before its items.
        for entity in SyncedEntity.parentsFirst(Array(entities.values)) {
            let pulled = pulledRecords.filter { $0.entity == entity.name && SyncedEntity.storedKey($0.key) != nil }
            guard !pulled.isEmpty else { continue }
            let local = try onDevice { () throws(SyncStateError) in try records.load(entity, keys: pulled.map(\.key), in: store) { _ in records.now() } }
            var inserts: [[String: StoredValue]] = []
            var states: [(key: String, state: SyncRecord)] = []
            // A record may come twice in a page (a first sync's scan, then the history after
            // it): taken once, both merged.
            var order: [String] = []
            var incoming = [String: SyncRecord](minimumCapacity: pulled.count)
            inserts.reserveCapacity(pulled.count)
            states.reserveCapacity(pulled.count)
            order.reserveCapacity(pulled.count)
            for record in pulled {
                if incoming[record.key] == nil { order.append(record.key) }
                var combined = incoming[record.key] ?? SyncRecord()
                combined.merge(record.record)
                incoming[record.key] = combined
            }
            for name in order {
                let mine = local[name] ?? SyncedRecord(state: SyncRecord(), row: nil)
                var merged = mine.state
                merged.dropPlaceholderTotals(of: AppUpdate.unknownAge.node, where: incoming[name]!)
                merged.merge(incoming[name]!)
                let rowMatches = (mine.row == nil) == merged.isDeleted
                guard merged != mine.state || !rowMatches else {
                    if sweeping { states.append((name, merged)) }
                    continue
                }
                let key = SyncedEntity.storedKey(name)!
                if mine.row == nil, !merged.isDeleted {
                    // New here (a first sync is all new): inserted with the others, a few
                    // statements a page.
                    inserts.append(entity.rowColumns(of: merged, key: key))
                } else {
                    try write(merged, of: entity, key: key, over: mine.row, name, in: store)
                }
                states.append((name, merged))
                changed += 1
            }
            do {
                try store.insertRecords(of: entity.descriptor, rows: inserts)
            } catch {
                throw .store(.notSupported("the pulled \(entity.name) records cannot be written on this device (\(error)); the page is taken again at the next sync"))
            }
            try onDevice { () throws(SyncStateError) in try records.save(states, of: entity, in: store) }
        }
        return changed
    }

    /// Writes one record that was here before: updated or deleted.
    private func write(_ merged: SyncRecord, of entity: SyncedEntity, key: StoredValue, over row: StoredRecord?, _ name: String, in store: isolated Store) throws(SyncClientError) {
        do {
            try entity.write(merged, key: key, over: row, in: store)
        } catch {
            // Nothing of this page is kept: the next sync takes it again, once the cause is gone.
            throw .store(.notSupported("the pulled \(entity.name) \(name) cannot be written on this device (\(error)); the page is taken again at the next sync"))
        }
    }

    /// After pulling everything again since `since`: the rows the server did not send (their
    /// state not written since) and that it had accepted are records deleted while the device
    /// was away; they go, children first, as `sync`, so the deletes are not pushed back. Records
    /// made here and not accepted yet, or refused, stay. A record changed here since the last
    /// push goes too, its change with it: its delete was purged, so nothing tells whether the
    /// change came after it, and the delete stands. Returns how many went, and those changed here.
    func sweep(since: Date, in store: isolated Store) throws(SyncClientError) -> (removed: Int, changesDropped: [(entity: String, key: String)]) {
        var removed = 0
        var dropped: [(entity: String, key: String)] = []
        for entity in SyncedEntity.parentsFirst(Array(entities.values)).reversed() {
            let gone = try inStore { () throws(StoreError) in try store.syncKeysNotRefreshed(of: entity.descriptor, keyColumn: entity.keyColumn, since: since) }
            for (key, pending) in gone {
                guard let name = SyncedEntity.keyText(key) else { continue }
                // Kept here (made here, not accepted): those the delete rule takes with it are told.
                let kept = try everythingUnder(entity, keys: [name], sameRest: false, in: store)
                guard try inStore({ () throws(StoreError) in try store.deleteRecord(of: entity.descriptor, key: [key]) }) else { continue }
                removed += 1
                try inStore { () throws(StoreError) in try store.forgetSyncRecord(entity: entity.name, key: name) }
                if pending { dropped.append((entity.name, name)) }
                for (child, keys) in kept {
                    guard let childEntity = entities[child] else { continue }
                    let still = try inStore { () throws(StoreError) in try store.records(of: childEntity.descriptor, column: childEntity.keyColumn, in: keys.compactMap(SyncedEntity.storedKey)) }
                    let present = Set(still.compactMap { $0[childEntity.keyColumn].flatMap(SyncedEntity.keyText) })
                    for lost in keys.sorted() where !present.contains(lost) {
                        try inStore { () throws(StoreError) in try store.forgetSyncRecord(entity: child, key: lost) }
                        dropped.append((child, lost))
                    }
                }
            }
        }
        return (removed, dropped)
    }
}
