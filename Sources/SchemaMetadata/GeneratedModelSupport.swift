/// The machinery generated models share, so each model's generated code holds only what is
/// specific to it: its properties, its initializer and lists of its key paths.

/// Reads a row's stored values in `entity.rowColumns` order for a generated
/// `init(storedValues:)`: each call converts the next value to the type the initializer's
/// parameter asks for.
public struct StoredRowReader {
    @usableFromInline let values: [StoredValue]
    @usableFromInline var position = 0

    /// Refuses a row with the wrong number of values, naming the model.
    @inlinable
    public init(_ values: [StoredValue], count: Int, of model: String) throws {
        guard values.count == count else { throw StoredValueError("expected \(count) values for \(model), found \(values.count)") }
        self.values = values
    }

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
    /// For a generated `column(for:)`: `paths` lists the model's key paths in `rowColumns`
    /// order, and the column is the one at the same place.
    public static func column(for keyPath: AnyKeyPath, among paths: [PartialKeyPath<Self>]) -> String? {
        guard let position = paths.firstIndex(where: { $0 == keyPath }) else { return nil }
        let columns = entity.rowColumns
        return position < columns.count ? columns[position] : nil
    }
}

extension JoinedModel {
    /// For a generated `member(for:)`: `paths` lists the view's key paths in `rowColumns`
    /// order, then one per relationship in declaration order.
    public static func member(for keyPath: AnyKeyPath, among paths: [PartialKeyPath<Self>]) -> JoinedMember? {
        guard let position = paths.firstIndex(where: { $0 == keyPath }) else { return nil }
        let columns = entity.rowColumns
        if position < columns.count { return .column(columns[position]) }
        let relationship = position - columns.count
        return relationship < entity.relationships.count ? .relationship(entity.relationships[relationship].name) : nil
    }
}

/// One field of a generated patch type: where it is in the patch and in the model, its name
/// (for messages) and its JSON key (the name unless given). Typed when made, so the patch's
/// coding and applying are generic.
public struct PatchField<Patch, Model> {
    let decode: (inout Patch, KeyedDecodingContainer<PatchCodingKey>) throws -> Void
    let encode: (Patch, inout KeyedEncodingContainer<PatchCodingKey>) throws -> Void
    let apply: (Patch, inout Model) throws(PatchError) -> Void

    /// A field whose model property is required: null cannot clear it.
    public static func required<Value: Codable & Sendable & Hashable>(
        _ patch: WritableKeyPath<Patch, PatchValue<Value>>, _ model: WritableKeyPath<Model, Value>, _ name: String, key: String? = nil
    ) -> PatchField {
        let codingKey = PatchCodingKey(key ?? name)
        return PatchField(
            decode: { patchValue, container in patchValue[keyPath: patch] = try container.decodePatch(Value.self, forKey: codingKey) },
            encode: { patchValue, container in try container.encodePatch(patchValue[keyPath: patch], forKey: codingKey) },
            apply: { (patchValue, target) throws(PatchError) in try patchValue[keyPath: patch].apply(to: &target[keyPath: model], field: name) })
    }

    /// A field whose model property is optional: null clears it.
    public static func optional<Value: Codable & Sendable & Hashable>(
        _ patch: WritableKeyPath<Patch, PatchValue<Value>>, _ model: WritableKeyPath<Model, Value?>, _ name: String, key: String? = nil
    ) -> PatchField {
        let codingKey = PatchCodingKey(key ?? name)
        return PatchField(
            decode: { patchValue, container in patchValue[keyPath: patch] = try container.decodePatch(Value.self, forKey: codingKey) },
            encode: { patchValue, container in try container.encodePatch(patchValue[keyPath: patch], forKey: codingKey) },
            apply: { patchValue, target in patchValue[keyPath: patch].apply(to: &target[keyPath: model], field: name) })
    }
}

/// A patch's JSON key, by name.
public struct PatchCodingKey: CodingKey, Sendable {
    public let stringValue: String
    public var intValue: Int? { nil }
    public init(_ name: String) { stringValue = name }
    public init?(stringValue: String) { self.stringValue = stringValue }
    public init?(intValue: Int) { nil }
}

/// A generated patch type: its fields listed once, coding and applying done here.
public protocol ModelPatch: Codable, Hashable, Sendable {
    associatedtype Model
    /// Starts with every field absent.
    init()
    static var fields: [PatchField<Self, Model>] { get }
}

extension ModelPatch {
    public init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: PatchCodingKey.self)
        for field in Self.fields { try field.decode(&self, container) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: PatchCodingKey.self)
        for field in Self.fields { try field.encode(self, &container) }
    }

    /// A copy with one field set, for building a patch in one expression:
    /// `TodoItemPatch().setting(\.notes, to: .null)`.
    public func setting<Value>(_ field: WritableKeyPath<Self, PatchValue<Value>>, to value: PatchValue<Value>) -> Self {
        var copy = self
        copy[keyPath: field] = value
        return copy
    }

    /// Applies the fields that were sent. Null for a required field fails and changes nothing.
    public func apply(to model: inout Model) throws(PatchError) {
        var updated = model
        for field in Self.fields { try field.apply(self, &updated) }
        model = updated
    }
}
