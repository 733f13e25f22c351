/// The machinery generated models share, so each model's generated code holds only what is
/// specific to it: its properties, its initializer and lists of its key paths.

/// Reads a row's stored values in `entity.rowColumns` order for a generated
/// `init(storedValues:)`: each call converts the next value to the type the initializer's
/// parameter asks for.
public struct StoredRowReader {
    @usableFromInline let values: [StoredValue]
    @usableFromInline var position = 0

    /// Refuses a row with the wrong number of values, naming the model.
    ///
    ///     var row = try StoredRowReader(values, count: 3, of: "Person")
    @inlinable
    public init(_ values: [StoredValue], count: Int, of model: String) throws {
        guard values.count == count else { throw StoredValueError("expected \(count) values for \(model), found \(values.count)") }
        self.values = values
    }

    /// The next value, read as the property's type.
    @inlinable
    public mutating func next<T: StoredValueConvertible>() throws -> T {
        defer { position += 1 }
        return try T(storedValue: values[position])
    }

    /// A value type or array kept as JSON text.
    @inlinable
    public mutating func json<T: Decodable>() throws -> T {
        defer { position += 1 }
        return try StoredJSON.decode(T.self, from: values[position])
    }

    /// The same, NULL read as nil.
    @inlinable
    public mutating func optionalJSON<T: Decodable>() throws -> T? {
        defer { position += 1 }
        return try StoredJSON.decode(T?.self, from: values[position])
    }
}

extension PersistentModel {
    /// `paths` lists the model's key paths in `rowColumns` order, and the column is the one at
    /// the same place.
    public static func column(for keyPath: AnyKeyPath, among paths: [PartialKeyPath<Self>]) -> String? {
        guard let position = paths.firstIndex(where: { $0 == keyPath }) else { return nil }
        let columns = entity.rowColumns
        return position < columns.count ? columns[position] : nil
    }
}

extension JoinedModel {
    /// What a key path of the view names, found in `keyPaths`.
    public static func member(for keyPath: AnyKeyPath) -> JoinedMember? { member(for: keyPath, among: keyPaths) }

    /// `paths` lists the view's key paths in `rowColumns` order, then one per relationship in
    /// declaration order.
    public static func member(for keyPath: AnyKeyPath, among paths: [PartialKeyPath<Self>]) -> JoinedMember? {
        guard let position = paths.firstIndex(where: { $0 == keyPath }) else { return nil }
        let columns = entity.rowColumns
        if position < columns.count { return .column(columns[position]) }
        let relationship = position - columns.count
        return relationship < entity.relationships.count ? .relationship(entity.relationships[relationship].name) : nil
    }
}
