import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// Applies one device's push inside the server's transaction: each record's change merged into
/// the server's state by the entity's rules, the merged record written through the store (so
/// its rules, uniqueness and history apply), and the device's sequence and answer kept.
struct PushApplier: Sendable {
    let entities: [String: SyncedEntity]
    let clock: NodeClock
    let device: String
    let user: String
    let schemaVersion: Int
    /// The states the server's other version keeps, for records without one in this version.
    let seeds: (any SyncStateSeeds)?

    func apply(_ push: SyncPush, in store: isolated Store) throws(SyncServerError) -> SyncPushAnswer {
        let now = Date()
        let known = try DeviceCheck(device: device, user: user).known(in: store)
        if let known, push.sequence <= known.sequence {
            // Applied before (its answer was lost): answered again, not applied again.
            if push.sequence == known.sequence, let text = known.answer, let answer = try? SyncJSON.decode(SyncPushAnswer.self, from: Array(text.utf8)) {
                return answer
            }
            return SyncPushAnswer(acknowledged: known.sequence, rejected: [], clock: clock.latest)
        }
        try refuseClocksAhead(push)
        // A device that last caught up before deletes were purged may push a change to a record
        // deleted meanwhile, which would bring it back: it pulls everything first.
        let purged: Date?
        do { purged = try store.syncTombstonesPurgedThrough() } catch { throw .store(error) }
        if let known, let purged, (known.caughtUpAt ?? known.firstSeen) < purged { throw .tombstonesPurged(device: device) }
        let records = SyncStateRecords(clock: clock, seeds: seeds)
        var rejected: [SyncRejection] = []
        // Keys this push wrote: a row another entity's trigger made under the same key (a
        // table split's part) is met for the first time in the same push.
        var written: Set<String> = []
        for change in push.changes {
            if let rejection = try apply(change, records, partOfWritten: written.contains(change.key), in: store) { rejected.append(rejection) }
            written.insert(change.key)
        }
        let answer = SyncPushAnswer(acknowledged: push.sequence, rejected: rejected, clock: clock.latest)
        let text: String
        do { text = String(decoding: try SyncJSON.encode(answer), as: UTF8.self) } catch { throw .store(.coding("the push answer: \(error)")) }
        let row = SyncDeviceRow(
            device: device, user: user, schemaVersion: schemaVersion, sequence: push.sequence, answer: text, firstSeen: known?.firstSeen ?? now, lastSeen: now)
        do { try store.writeSyncDevice(row) } catch { throw .store(error) }
        return answer
    }

    /// One record's change; what was not applied as sent comes back as a rejection.
    private func apply(_ pushed: SyncRecordChange, _ records: SyncStateRecords, partOfWritten: Bool, in store: isolated Store) throws(SyncServerError) -> SyncRejection? {
        func rejection(_ reason: SyncRejection.Reason, _ detail: String) -> SyncRejection { Self.rejection(of: pushed, reason, detail: detail) }
        guard let entity = entities[pushed.entity] else { return rejection(.unknown, "\(pushed.entity.prefix(80)) is no entity that syncs") }
        guard let key = SyncedEntity.storedKey(pushed.key) else { return rejection(.invalid, "the key is not a UUID in lowercase") }
        if let (reason, detail) = problem(with: pushed.change, of: entity) { return rejection(reason, detail) }
        let record =
            try served { () throws(SyncStateError) in
                try records.load(entity, keys: [pushed.key], in: store, firstSight: partOfWritten ? Self.firstSight(clock) : nil) { _ in records.now() }
            }[pushed.key]
            ?? SyncedRecord(state: SyncRecord(), row: nil)
        let scope = ScopeCheck(entities: entities, user: user, clock: clock)
        // A record that exists, or existed (its tombstone keeps its values), is its owner's.
        let existing = record.row.map(entity.fieldValues) ?? (record.state.values.isEmpty ? nil : record.state.values)
        if let existing, try !scope.holds(entity, existing, in: store) {
            return rejection(.scope, "the record belongs to another user")
        }
        var merged = record.state
        var outcome = merged.merge(pushed.change, rules: entity.rules)
        var moveRefused = false
        let field = ScopeDepartures.scopeField(of: entity)
        // A delete is checked where it moves the record too: its tombstone would be the other
        // user's.
        let moves = field.map { pushed.change.values[$0] != nil } ?? false
        let owned = !merged.isDeleted || moves ? try scope.owner(entity, entity.rowValues(of: merged), in: store) : true
        if owned == nil {
            // Its path cannot be told (a parent the server does not hold yet): refused without the
            // server's record, so the device keeps its change.
            return rejection(.scope, "the change would move the record out of the user's scope")
        }
        if owned == false {
            // The record stays the user's, where it was: the rest of the change stands, and the
            // device takes the record back as it stands (otherwise it would keep it where the
            // server does not, and lose it with that parent).
            guard existing != nil, let field, moves else {
                return Self.rejection(of: pushed, .scope, current: existing == nil ? nil : record.state, detail: "the change would move the record out of the user's scope")
            }
            var rest = pushed.change
            (rest.values[field], rest.clocks[field], rest.seen[field]) = (nil, nil, nil)
            merged = record.state
            outcome = merged.merge(rest, rules: entity.rules)
            guard try scope.holds(entity, entity.rowValues(of: merged), in: store) else {
                return Self.rejection(of: pushed, .scope, current: record.state, detail: "the change would move the record out of the user's scope")
            }
            outcome.lost.insert(field)
            moveRefused = true
        }
        let conflict: SyncRejection? =
            if moveRefused {
                Self.rejection(of: pushed, .scope, attributes: outcome.lost.sorted(), current: merged, detail: "the move would take the record out of the user's scope; the rest of the change stands")
            } else if outcome.lost.isEmpty {
                nil
            } else {
                Self.rejection(of: pushed, .conflict, attributes: outcome.lost.sorted(), current: merged, detail: "a later change, or the server's, stands")
            }
        do throws(StoreError) {
            try entity.write(merged, key: key, over: record.row, in: store)
        } catch {
            return Self.refused(error, pushed, before: record)
        }
        try served { () throws(SyncStateError) in try records.save(merged, of: entity, key: pushed.key, in: store) }
        // A write outside sync stamped just now may have moved the record from another user.
        try ScopeDepartures(entities: entities, clock: clock).note(entity, [(pushed.key, record)], in: store)
        return conflict
    }

    /// The clock of a row the server never stamped, met by a push that names its key: a row a
    /// migration's triggers made as a part of the device's own record (a table split's part,
    /// made when the device's book was written). Older than any change but a device's values
    /// of unknown age, so the pushed values stand over its defaults, and those of a device
    /// that made the same part by its own update do not.
    static func firstSight(_ clock: NodeClock) -> StampClock {
        { _ in SyncClock(milliseconds: 0, counter: 1, node: clock.node) }
    }

    /// A write the store refused, undone on its own (a savepoint): told back without any other
    /// record's values (a unique value's message would name them).
    private static func refused(_ error: StoreError, _ pushed: SyncRecordChange, before record: SyncedRecord) -> SyncRejection {
        let current = record.row == nil ? nil : record.state
        if case .database(let failure) = error, failure.kind == .uniquenessConflict {
            return rejection(of: pushed, .unique, current: current, detail: "a unique value is held by another record")
        }
        if case .deleteDenied = error { return rejection(of: pushed, .invalid, current: current, detail: "a delete rule denies deleting it while related records exist") }
        // The database's own message can hold values of other rows: only its kind is told.
        if case .database(let failure) = error {
            return rejection(of: pushed, .invalid, current: current, detail: "a constraint of the server's database refused it (\(failure.kind.map { "\($0)" } ?? "unknown"))")
        }
        return rejection(of: pushed, .invalid, current: current, detail: "the server's store refused it: \(error)")
    }

    private static func rejection(
        of pushed: SyncRecordChange, _ reason: SyncRejection.Reason, attributes: [String] = [], current: SyncRecord? = nil, detail: String
    ) -> SyncRejection {
        SyncRejection(entity: pushed.entity, key: pushed.key, attributes: attributes, reason: reason, current: current, detail: detail)
    }

    /// A device whose clock runs ahead of the server's by more than the drift allowed is refused
    /// as a whole, and keeps its changes to send once its clock is right: merged, they would win
    /// over every change made after them until their time came.
    private func refuseClocksAhead(_ push: SyncPush) throws(SyncServerError) {
        let now = clock.now
        for change in push.changes where change.change.clocks.values.contains(where: { $0.node == device }) || change.change.deleted?.node == device {
            let stamps = Array(change.change.clocks.values) + change.change.counters.values.map(\.clock) + (change.change.deleted.map { [$0] } ?? [])
            if let ahead = stamps.filter({ $0.node == device }).map(\.milliseconds).max(), ahead - now > 60_000 {
                throw .clockAhead(device: device, byMilliseconds: ahead - now)
            }
        }
    }

    /// What makes a change unfit to merge: a name the entity does not have, a clock that is not
    /// this device's, or one too far ahead of the server's.
    private func problem(with change: SyncChange, of entity: SyncedEntity) -> (SyncRejection.Reason, String)? {
        let names = Set(change.values.keys).union(change.clocks.keys).union(change.seen.keys).union(change.counters.keys)
        if let unknown = names.sorted().first(where: { entity.columns[$0] == nil }) {
            return (.unknown, "\(entity.name) has no attribute or to-one relationship '\(unknown.prefix(80))' that syncs")
        }
        let clocks = Array(change.clocks.values) + change.counters.values.map(\.clock) + (change.deleted.map { [$0] } ?? [])
        for stamp in clocks {
            guard stamp.node == device else { return (.invalid, "a clock of node '\(stamp.node)', not of the pushing device '\(device)'") }
            do { try clock.receive(stamp) } catch { return (.invalid, "\(error)") }
        }
        return nil
    }
}

/// The device's record on the server, checked to be the user's.
struct DeviceCheck {
    let device: String
    let user: String

    func known(in store: isolated Store) throws(SyncServerError) -> SyncDeviceRow? {
        let known: SyncDeviceRow?
        do { known = try store.syncDevice(device) } catch { throw .store(error) }
        if let known, known.user != user { throw .deviceOfAnotherUser(device: device) }
        return known
    }
}

/// Whether a record is in the user's scope: its path of to-one relationships followed through
/// the store to the attribute compared with the user.
struct ScopeCheck {
    let entities: [String: SyncedEntity]
    let user: String
    let clock: NodeClock

    /// Nil when a record on the path is gone (the scope cannot be told).
    func holds(_ entity: SyncedEntity, _ values: [String: StoredValue], in store: isolated Store) throws(SyncServerError) -> Bool {
        (try owner(entity, values, in: store)) ?? false
    }

    func owner(_ entity: SyncedEntity, _ values: [String: StoredValue], in store: isolated Store) throws(SyncServerError) -> Bool? {
        guard case .user(let path) = entity.scope, !path.isEmpty else { return true }
        return try Self.endOfPath(entity, values, entities: entities, clock: clock, in: store).map { sameUser($0, user) }
    }

    /// The value a record's scope path ends at (its owner, as stored), from the record's values;
    /// nil when the scope is `all`, or a record on the path is gone and kept no state.
    static func endOfPath(
        _ entity: SyncedEntity, _ values: [String: StoredValue], entities: [String: SyncedEntity], clock: NodeClock, in store: isolated Store
    ) throws(SyncServerError) -> StoredValue? {
        guard case .user(let path) = entity.scope, !path.isEmpty else { return nil }
        var values = values
        var current = entity
        for step in path.dropLast() {
            guard let relationship = current.descriptor.relationships.first(where: { $0.name == step }), let target = entities[relationship.target],
                let link = values[step], link != .null
            else { return nil }
            let found: StoredRecord?
            do {
                found = try store.records(of: target.descriptor, where: [RecordFilter(target.keyColumn, .equals(link))], limit: 1).records.first
            } catch {
                throw .store(error)
            }
            if let found {
                values = target.fieldValues(of: found)
            } else {
                // Deleted: its tombstone keeps the values it had, its owner among them.
                guard let key = SyncedEntity.keyText(link) else { return nil }
                let kept: String?
                do { kept = try store.syncStates(entity: target.name, keys: [key])[key] } catch { throw .store(error) }
                guard let kept else { return nil }
                values = try served { () throws(SyncStateError) in try SyncStateRecords(clock: clock).decode(kept, of: target, key: key, in: store) }.values
            }
            current = target
        }
        return values[path[path.count - 1]] ?? .null
    }
}

/// A user id compared with a scope's attribute: text as it is, a UUID in its stored spelling.
func sameUser(_ value: StoredValue?, _ user: String) -> Bool {
    guard case .text(let text)? = value else { return false }
    return text == user || text == user.lowercased() && UUID(uuidString: user) != nil
}
