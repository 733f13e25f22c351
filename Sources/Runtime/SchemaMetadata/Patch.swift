/// A generated model whose coded properties are listed by key path: `Patch<Model>` sets them
/// and `column(for:)` comes from the list, so neither is generated per entity.
public protocol PatchableModel: PersistentModel {
    /// The coded properties in order: the implicit `id`, the stored attributes, the
    /// single-column keys of to-one relationships (so far `entity.rowColumns` order), then the
    /// keys that span several columns.
    static var keyPaths: [PartialKeyPath<Self>] { get }
}

extension PatchableModel {
    /// The column of a key path, found in `keyPaths`.
    public static func column(for keyPath: AnyKeyPath) -> String? {
        column(for: keyPath, among: keyPaths)
    }

    /// The fields a patch can set, in `keyPaths` order: every coded property but the
    /// implicit `id`, with its name (for messages) and JSON key.
    static var patchFields: [(path: PartialKeyPath<Self>, name: String, jsonKey: String)] {
        let entity = entity
        let keys = entity.relationships.compactMap { relationship in relationship.keyProperty.map { (property: $0, columns: relationship.foreignKeyColumns.count) } }
        var names = entity.columns.map { ($0.property, $0.jsonKey) }
        for key in keys where key.columns == 1 { names.append((key.property, key.property)) }
        for key in keys where key.columns > 1 { names.append((key.property, key.property)) }
        let paths = keyPaths.dropFirst(entity.hasImplicitKey ? 1 : 0)
        return zip(paths, names).map { (path: $0, name: $1.0, jsonKey: $1.1) }
    }
}

// @unchecked: key paths are immutable, and only values of the model's own property types,
// which are Sendable as the model is, get in (the typed setters require it).
/// A partial update of a model, as an HTTP PATCH body carries one: a field left out stays, null
/// clears it, a value replaces it. Decoded from JSON by the model's JSON keys (a missing key is
/// absent, an explicit null is null) and encoded the same way; built in code by key path:
/// `Patch<Airport>().setting(\.city, to: .set("Millbrae"))` or `patch[\.notes] = .null`.
/// Transient properties can be set in code and applied, but, as in the model's own coding, are
/// never encoded or decoded.
public struct Patch<Model: PatchableModel>: Codable, Hashable, @unchecked Sendable {
    enum Change: Hashable {
        case clear
        /// The new value, of the property's own type (`String?` for an optional `String`).
        case value(AnyHashable)
    }

    var changes: [PartialKeyPath<Model>: Change] = [:]

    /// A patch that changes nothing.
    ///
    ///     let patch = Patch<Airport>().setting(\.city, to: .set("Millbrae"))
    public init() {}

    /// Whether the patch changes nothing.
    public var isEmpty: Bool { changes.isEmpty }

    /// A required property's change: `.null` is kept, and fails when the patch is applied.
    public subscript<Value: Codable & Hashable & Sendable>(field: WritableKeyPath<Model, Value>) -> PatchValue<Value> {
        get {
            switch changes[field] {
            case nil: .absent
            case .clear: .null
            case .value(let value): (value.base as? Value).map(PatchValue.set) ?? .absent
            }
        }
        set {
            switch newValue {
            case .absent: changes[field] = nil
            case .null: changes[field] = .clear
            case .set(let value): changes[field] = .value(AnyHashable(value))
            }
        }
    }

    /// An optional property's change: `.null` clears it.
    public subscript<Wrapped: Codable & Hashable & Sendable>(field: WritableKeyPath<Model, Wrapped?>) -> PatchValue<Wrapped> {
        get {
            switch changes[field] {
            case nil: .absent
            case .clear: .null
            case .value(let value): (value.base as? Wrapped?).flatMap { $0 }.map(PatchValue.set) ?? .null
            }
        }
        set {
            switch newValue {
            case .absent: changes[field] = nil
            case .null: changes[field] = .clear
            case .set(let value): changes[field] = .value(AnyHashable(Optional(value)))
            }
        }
    }

    /// A copy with one required property's change, for building a patch in one expression.
    public func setting<Value: Codable & Hashable & Sendable>(_ field: WritableKeyPath<Model, Value>, to change: PatchValue<Value>) -> Patch {
        var copy = self
        copy[field] = change
        return copy
    }

    /// A copy with one optional property's change.
    public func setting<Wrapped: Codable & Hashable & Sendable>(_ field: WritableKeyPath<Model, Wrapped?>, to change: PatchValue<Wrapped>) -> Patch {
        var copy = self
        copy[field] = change
        return copy
    }

    /// Applies the changes. Null for a required property fails and changes nothing.
    public func apply(to model: inout Model) throws(PatchError) {
        var updated = model
        // In field order, so that of several failing changes the same one is always reported.
        let fields = Model.patchFields
        let listed = Set(fields.map(\.path))
        let ordered =
            fields.compactMap { field in changes[field.path].map { (field.path, field.name, $0) } }
            + changes.filter { !listed.contains($0.key) }.map { ($0.key, "\($0.key)", $0.value) }
        for (path, name, change) in ordered {
            guard let valueType = type(of: path).valueType as? any (Codable & Hashable & Sendable).Type else { throw .notWritable(name) }
            try Self.write(change, at: path, of: valueType, named: name, into: &updated)
        }
        model = updated
    }

    private static func write<Value: Codable & Hashable & Sendable>(
        _ change: Change, at path: PartialKeyPath<Model>, of type: Value.Type, named name: String, into model: inout Model
    ) throws(PatchError) {
        guard let path = path as? WritableKeyPath<Model, Value> else { throw .notWritable(name) }
        switch change {
        case .clear:
            guard let null = (Value.self as? any NullablePatchValue.Type)?.noValue as? Value else { throw .nullForRequiredField(name) }
            model[keyPath: path] = null
        case .value(let value):
            guard let value = value.base as? Value else { throw .notWritable(name) }
            model[keyPath: path] = value
        }
    }

    /// A patch from JSON keyed by the model's JSON keys: a missing key leaves its property
    /// alone, null clears it, a value of the property's type sets it.
    ///
    ///     let patch = try JSONDecoder().decode(Patch<Airport>.self, from: Data(#"{"city": "Millbrae", "state": null}"#.utf8))
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: PatchCodingKey.self)
        for field in Model.patchFields {
            let key = PatchCodingKey(field.jsonKey)
            guard container.contains(key) else { continue }
            if try container.decodeNil(forKey: key) {
                changes[field.path] = .clear
            } else if let valueType = type(of: field.path).valueType as? any (Codable & Hashable & Sendable).Type {
                changes[field.path] = .value(try Self.decode(valueType, forKey: key, in: container))
            }
        }
    }

    private static func decode<Value: Codable & Hashable & Sendable>(
        _ type: Value.Type, forKey key: PatchCodingKey, in container: KeyedDecodingContainer<PatchCodingKey>
    ) throws -> AnyHashable {
        AnyHashable(try container.decode(Value.self, forKey: key))
    }

    /// The patch as JSON: only the fields it changes, null for the ones it clears.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: PatchCodingKey.self)
        for field in Model.patchFields {
            switch changes[field.path] {
            case nil: continue
            case .clear: try container.encodeNil(forKey: PatchCodingKey(field.jsonKey))
            case .value(let value):
                guard let encodable = value.base as? any Encodable else { continue }
                try container.encode(encodable, forKey: PatchCodingKey(field.jsonKey))
            }
        }
    }
}

/// What null means for a property's type: only optionals have it.
protocol NullablePatchValue {
    static var noValue: Self { get }
}

extension Optional: NullablePatchValue {
    static var noValue: Self { .none }
}

/// A patch's JSON key, by name.
public struct PatchCodingKey: CodingKey, Sendable {
    /// The JSON key.
    public let stringValue: String
    /// Patches are objects: never an index.
    public var intValue: Int? { nil }
    /// The key of a JSON name.
    ///
    ///     let key = PatchCodingKey("airport_code")
    public init(_ name: String) { stringValue = name }
    /// The key of a JSON name.
    ///
    ///     let key = PatchCodingKey(stringValue: "airport_code")   // never nil
    public init?(stringValue: String) { self.stringValue = stringValue }
    /// Never: patches have no indexed keys.
    ///
    ///     PatchCodingKey(intValue: 0)   // nil
    public init?(intValue: Int) { nil }
}

extension PersistentModel {
    /// `keyPaths` of a `PatchableModel`, for generic code that knows only `PersistentModel`.
    public static var listedKeyPaths: [AnyKeyPath]? {
        func paths<P: PatchableModel>(_ type: P.Type) -> [AnyKeyPath] { type.keyPaths }
        return (Self.self as? any PatchableModel.Type).map { paths($0) }
    }
}
