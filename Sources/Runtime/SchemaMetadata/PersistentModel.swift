/// A generated model type: a plain Sendable value that the runtime store persists.
public protocol PersistentModel: Codable, Hashable, Identifiable, Sendable {
    /// The table, columns, keys and relationships of this model's entity.
    static var entity: EntityDescriptor { get }
    /// The column a key path of this model reads (`\Airport.icao` -> `icao`), for translating
    /// predicates and sort descriptors to SQL; nil for transient and computed properties.
    static func column(for keyPath: AnyKeyPath) -> String?
    /// The model from stored values in `entity.rowColumns` order, or nil without a row codec.
    static func decodeStored(_ row: [StoredValue]) throws -> Self?
    /// The stored values in `entity.rowColumns` order, or nil without a row codec.
    func encodeStored() throws -> [StoredValue]?
    /// Every row `produce` hands over, decoded, or nil without a row codec. A requirement so
    /// that the loop is compiled for the concrete model, not run through generic code per row.
    /// `expectedCount` reserves room up front when the caller knows roughly how many come.
    static func decodeStoredRows(expectedCount: Int, _ produce: (_ consume: ([StoredValue]) throws -> Void) throws -> Void) throws -> [Self]?
}

extension PersistentModel {
    /// No row codec: nil, and the store decodes through Codable.
    public static func decodeStored(_ row: [StoredValue]) throws -> Self? { nil }
    /// No row codec: nil, and the store encodes through Codable.
    public func encodeStored() throws -> [StoredValue]? { nil }
    /// No row codec: nil.
    public static func decodeStoredRows(expectedCount: Int, _ produce: (_ consume: ([StoredValue]) throws -> Void) throws -> Void) throws -> [Self]? { nil }
}

/// Models with a generated row codec use it, dispatched statically.
extension PersistentModel where Self: RowCodable {
    /// The row codec's reading.
    @inlinable public static func decodeStored(_ row: [StoredValue]) throws -> Self? { try Self(storedValues: row) }
    /// The row codec's writing.
    @inlinable public func encodeStored() throws -> [StoredValue]? { try storedValues() }
    /// Every row `produce` hands over, read by the row codec, with room for `expectedCount` reserved.
    @inlinable public static func decodeStoredRows(expectedCount: Int, _ produce: (_ consume: ([StoredValue]) throws -> Void) throws -> Void) throws -> [Self]? {
        var models: [Self] = []
        models.reserveCapacity(expectedCount)
        try produce { row in models.append(try Self(storedValues: row)) }
        return models
    }
}

/// A relationship of `Source` whose other side is `Target`, named for the runtime store
/// (`Airport.flightsFrom`). Generated for to-many sides and for to-one sides that do not hold
/// the key themselves.
public struct RelationshipPath<Source: PersistentModel, Target: PersistentModel>: Sendable, Hashable {
    /// The relationship's name in the schema.
    public let name: String

    /// The path of the relationship so named (generated code makes these).
    ///
    ///     let departures = RelationshipPath<Airport, Flight>(name: "flightsFrom")
    public init(name: String) {
        self.name = name
    }

    /// The relationship's metadata, or nil when the entity has none so named.
    public var descriptor: RelationshipDescriptor? { Source.entity.relationship(named: name) }
}

/// What a key path of a `Joined` view names.
public enum JoinedMember: Sendable, Hashable {
    /// A stored column, by name.
    case column(String)
    /// A relationship, by name.
    case relationship(String)
}

/// A predicate-only view of a model that also has its relationships as properties, so
/// predicates can follow them: `#Predicate<Flight.Joined> { $0.origin?.icao == "KSFO" }`.
/// Generated, and never instantiated: the store turns such predicates into SQL joins.
public protocol JoinedModel: AnyObject, Hashable, Sendable {
    /// The metadata of the model the view belongs to.
    static var entity: EntityDescriptor { get }
    /// The view's key paths in `entity.rowColumns` order, then one per relationship in
    /// declaration order.
    static var keyPaths: [PartialKeyPath<Self>] { get }
    /// What a key path of the view names; by default found through `keyPaths`.
    static func member(for keyPath: AnyKeyPath) -> JoinedMember?
}

extension JoinedModel {
    // Equatable only so predicates can compare a relationship with nil; views have no instances.
    /// Identity: views have no instances, so this only lets predicates compare with nil.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs === rhs }
    /// Identity, as `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// A model with a generated `Joined` view.
public protocol Joinable: PersistentModel {
    /// The model's view with relationships as properties, for predicates that follow them.
    associatedtype Joined: JoinedModel
}
