import Foundation
import SchemaMetadata

/// A position in a store's history: every committed transaction gets a larger one. Save it and
/// ask for `history(after:)` later to learn what changed since.
public struct HistoryToken: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The position as a number (the history table's row id).
    public let value: Int64

    /// A token at a position saved earlier.
    ///
    ///     let transactions = try await store.history(after: HistoryToken(savedPosition))
    public init(_ value: Int64) { self.value = value }

    /// Earlier positions come first.
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool { lhs.value < rhs.value }

    /// The number.
    public var description: String { String(value) }

    /// A token saved as its number.
    ///
    ///     let token = try JSONDecoder().decode(HistoryToken.self, from: Data("42".utf8))   // HistoryToken(42)
    public init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int64.self) }

    /// Saved as its number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// One committed transaction: who wrote it, when, and each row it changed, in order.
public struct HistoryTransaction: Sendable, Hashable {
    /// Its position in the history.
    public let token: HistoryToken
    /// The `author` the writing store was opened with, if any (`app`, `widget`).
    public let author: String?
    /// When it committed.
    public let date: Date
    /// The entities whose rows changed.
    public let entities: [String]
    /// Each row it changed, in the order it wrote them.
    public let changes: [HistoryChange]
}

/// One row inserted, updated or deleted.
public struct HistoryChange: Sendable, Hashable {
    /// What happened to the row.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The row was inserted.
        case insert
        /// The row was updated.
        case update
        /// The row was deleted.
        case delete
    }

    /// The entity whose row changed.
    public let entity: String
    /// Inserted, updated or deleted.
    public let kind: Kind
    /// The primary key's values, in key order (one for a single-column key).
    public let key: [StoredValue]
    /// For an update: the attributes and relationships that changed, in declaration order. For
    /// an insert: every stored attribute and relationship (none when the schema says `history:
    /// {insertValues: false}`).
    public let changedAttributes: [String]
    /// For an update: the new values of the changed attributes; for an insert, the inserted
    /// ones. Encrypted and external-storage attributes are listed without their value, and
    /// relationships changed through a many-to-many link have none either.
    public let values: [String: StoredValue]
    /// For a delete: the values of the attributes marked `preserveValueOnDeletion`.
    public let tombstone: [String: StoredValue]?

    /// A change as the history table records it.
    ///
    ///     HistoryChange(entity: "Car", kind: .update, key: [.integer(7)], changedAttributes: ["mechanics"])
    public init(
        entity: String, kind: Kind, key: [StoredValue], changedAttributes: [String] = [], values: [String: StoredValue] = [:],
        tombstone: [String: StoredValue]? = nil
    ) {
        self.entity = entity
        self.kind = kind
        self.key = key
        self.changedAttributes = changedAttributes
        self.values = values
        self.tombstone = tombstone
    }

    /// True when the change is to a row of `M`.
    public func isOf<M: PersistentModel>(_ type: M.Type) -> Bool { entity == M.entity.name }

    /// The key as the model's key type: `change.key(as: UUID.self)`.
    public func key<K: Decodable>(as type: K.Type) throws(StoreError) -> K {
        guard key.count == 1 else { throw .coding("the key of this \(entity) change has \(key.count) columns; read `key`") }
        do { return try RowDecoder.value(K.self, from: key[0], key: "key") } catch { throw .coding("\(error)") }
    }

    /// A preserved value from a delete's tombstone: `change.tombstone(\User.name)`. Nil when
    /// the change is not a delete of `M`, or the attribute is not preserved.
    public func tombstone<M: PersistentModel, V: Decodable>(_ keyPath: KeyPath<M, V>) throws(StoreError) -> V? {
        guard entity == M.entity.name, let tombstone, let name = Self.attribute(of: keyPath) else { return nil }
        return try decode(tombstone[name], as: V.self, name: name)
    }

    /// The same for an optional attribute (`\User.lastSeen`): nil also when the value was nil.
    public func tombstone<M: PersistentModel, V: Decodable>(_ keyPath: KeyPath<M, V?>) throws(StoreError) -> V? {
        guard entity == M.entity.name, let tombstone, let name = Self.attribute(of: keyPath) else { return nil }
        return try decode(tombstone[name], as: V.self, name: name)
    }

    /// The new value of an inserted or updated attribute: `change.value(\TodoItem.isCompleted)`.
    /// Nil when the change did not set it.
    public func value<M: PersistentModel, V: Decodable>(_ keyPath: KeyPath<M, V>) throws(StoreError) -> V? {
        guard entity == M.entity.name, let name = Self.attribute(of: keyPath) else { return nil }
        return try decode(values[name], as: V.self, name: name)
    }

    /// The same for an optional attribute: nil also when it was set to nil.
    public func value<M: PersistentModel, V: Decodable>(_ keyPath: KeyPath<M, V?>) throws(StoreError) -> V? {
        guard entity == M.entity.name, let name = Self.attribute(of: keyPath) else { return nil }
        return try decode(values[name], as: V.self, name: name)
    }

    static func attribute<M: PersistentModel>(of keyPath: AnyKeyPath, in type: M.Type = M.self) -> String? {
        guard let column = M.column(for: keyPath) else { return nil }
        return M.entity.columns.first { $0.column == column }?.property
    }

    static func attribute<M: PersistentModel, V>(of keyPath: KeyPath<M, V>) -> String? {
        attribute(of: keyPath as AnyKeyPath, in: M.self)
    }

    private func decode<V: Decodable>(_ stored: StoredValue?, as type: V.Type, name: String) throws(StoreError) -> V? {
        guard let stored, stored != .null else { return nil }
        do {
            return try RowDecoder.value(V.self, from: stored, key: name)
        } catch {
            throw .coding("\(entity).\(name) in the history: \(error)")
        }
    }
}

/// How long the store keeps its history. Pruning happens as the store commits.
public enum HistoryRetention: Sendable, Hashable {
    /// Until `deleteHistory(before:)` removes it.
    case forever
    /// The newest transactions of this store's schema.
    case transactions(Int)
    /// Transactions younger than this.
    case age(Duration)
}

/// Whose transactions `history` and `changes` return.
public enum AuthorFilter: Sendable, Hashable {
    /// Everyone's transactions, and those written without an author.
    case any
    /// Only this author's.
    case only(String)
    /// Everyone's but this author's (a widget skipping its own writes).
    case excluding(String)

    func admits(_ author: String?) -> Bool {
        switch self {
        case .any: true
        case .only(let name): author == name
        case .excluding(let name): author != name
        }
    }
}
