import Foundation
import SchemaMetadata

// What devices and the server say to each other, as JSON: a push of a device's changes, a pull
// of the server's, and their answers. Every message names the protocol's version, so that a
// server can refuse one it does not speak instead of misreading it.

/// One record's change in a push: the entity, the record's key (a UUID's text) and the change.
public struct SyncRecordChange: Sendable, Hashable {
    /// The entity's name.
    public var entity: String
    /// The record's key.
    public var key: String
    /// What the node changed.
    public var change: SyncChange

    /// A record's change.
    ///
    ///     let item = SyncRecordChange(entity: "TodoItem", key: id.uuidString.lowercased(), change: change)
    public init(entity: String, key: String, change: SyncChange) {
        self.entity = entity
        self.key = key
        self.change = change
    }
}

/// A device's changes since its last acknowledged push. `sequence` numbers the device's pushes:
/// the server applies each number once, so a push retried after a lost answer counts once.
public struct SyncPush: Sendable, Hashable {
    /// The device's id, stable across launches.
    public var device: String
    /// The schema version the app was built with: the server answers in that version's shape.
    public var schemaVersion: Int
    /// This push's number; each push's is one more than the last acknowledged one's.
    public var sequence: Int64
    /// The changes, one per record.
    public var changes: [SyncRecordChange]

    /// A push.
    ///
    ///     let push = SyncPush(device: "ipad-7", schemaVersion: 3, sequence: 12, changes: changes)
    public init(device: String, schemaVersion: Int, sequence: Int64, changes: [SyncRecordChange]) {
        self.device = device
        self.schemaVersion = schemaVersion
        self.sequence = sequence
        self.changes = changes
    }
}

/// One record as the server holds it: what a pull brings, and what a refused change is
/// answered with.
public struct SyncRecordState: Sendable, Hashable {
    /// The entity's name.
    public var entity: String
    /// The record's key.
    public var key: String
    /// The record: values with their clocks, counter totals, its delete.
    public var record: SyncRecord
    /// Whether the record left the user's scope (a list given to another owner, or an item
    /// under it): the device removes it, without a delete of its own, and `record` is empty.
    public var removed: Bool

    /// A record's state, or (`removed`) the word that it left the user's scope.
    ///
    ///     let state = SyncRecordState(entity: "TodoItem", key: key, record: record)
    public init(entity: String, key: String, record: SyncRecord, removed: Bool = false) {
        self.entity = entity
        self.key = key
        self.record = record
        self.removed = removed
    }
}

/// A change the server did not apply as sent, with why and the record as it stands.
public struct SyncRejection: Sendable, Hashable {
    /// Why a change was refused.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        /// It lost to a later change, or (`serverWins`) to a value the device had not seen.
        case conflict
        /// It would break a unique value another record holds.
        case unique
        /// The record is outside the user's scope.
        case scope
        /// The entity does not sync, or the change names what the entity does not have.
        case unknown
        /// The server cannot take it as sent: a malformed key, a clock of another node or too
        /// far ahead, a value of the wrong type, a delete a rule denies. `detail` says which.
        case invalid
    }

    /// The entity's name.
    public var entity: String
    /// The record's key.
    public var key: String
    /// The attributes refused (empty when the whole record was).
    public var attributes: [String]
    /// Why.
    public var reason: Reason
    /// The server's record, for the device to take; nil when the user may not see it.
    public var current: SyncRecord?
    /// What exactly was refused, for a developer to read; never another user's data.
    public var detail: String?

    /// A rejection.
    ///
    ///     SyncRejection(entity: "TodoItem", key: key, attributes: ["title"], reason: .conflict, current: record)
    public init(entity: String, key: String, attributes: [String], reason: Reason, current: SyncRecord?, detail: String? = nil) {
        self.entity = entity
        self.key = key
        self.attributes = attributes
        self.reason = reason
        self.current = current
        self.detail = detail
    }
}

/// The server's answer to a push: the sequence it acknowledges (then the device may forget
/// those changes), what it refused, and its clock, for the device's clock to take in.
public struct SyncPushAnswer: Sendable, Hashable {
    /// The push's sequence, now applied.
    public var acknowledged: Int64
    /// The changes not applied as sent.
    public var rejected: [SyncRejection]
    /// The server's clock when it answered.
    public var clock: SyncClock

    /// An answer.
    ///
    ///     SyncPushAnswer(acknowledged: 12, rejected: [], clock: clock)
    public init(acknowledged: Int64, rejected: [SyncRejection], clock: SyncClock) {
        self.acknowledged = acknowledged
        self.rejected = rejected
        self.clock = clock
    }
}

/// A device asking for the server's changes after the last page it took.
public struct SyncPull: Sendable, Hashable {
    /// The device's id.
    public var device: String
    /// The schema version the app was built with.
    public var schemaVersion: Int
    /// Where the last page ended (the server's, opaque to the device); nil for a first sync.
    public var after: String?
    /// The most records a page may hold.
    public var limit: Int

    /// A pull.
    ///
    ///     let pull = SyncPull(device: "ipad-7", schemaVersion: 3, after: saved, limit: 500)
    public init(device: String, schemaVersion: Int, after: String?, limit: Int) {
        self.device = device
        self.schemaVersion = schemaVersion
        self.after = after
        self.limit = limit
    }
}

/// A page of the server's records changed after the pull's position.
public struct SyncPullAnswer: Sendable, Hashable {
    /// The records, each as the server holds it.
    public var records: [SyncRecordState]
    /// Where this page ends: the next pull's `after`.
    public var next: String
    /// Whether more pages follow.
    public var hasMore: Bool
    /// The server's clock when it answered.
    public var clock: SyncClock

    /// A page.
    ///
    ///     SyncPullAnswer(records: states, next: "4711", hasMore: false, clock: clock)
    public init(records: [SyncRecordState], next: String, hasMore: Bool, clock: SyncClock) {
        self.records = records
        self.next = next
        self.hasMore = hasMore
        self.clock = clock
    }
}
