/// One field of a partial update: not sent (leave the stored value alone), sent as null
/// (clear it), or sent with a value (replace it).
public enum PatchValue<Value: Sendable & Hashable>: Sendable, Hashable {
    /// Not sent: the stored value stays.
    case absent
    /// Sent as null: the value is cleared (an optional property only).
    case null
    /// Sent with a value, which replaces the stored one.
    case set(Value)

    /// Applies the field to a required property: null cannot clear it.
    public func apply(to target: inout Value, field: String) throws(PatchError) {
        switch self {
        case .absent: return
        case .null: throw PatchError.nullForRequiredField(field)
        case .set(let value): target = value
        }
    }

    /// Applies the field to an optional property: null clears it.
    public func apply(to target: inout Value?, field: String) {
        switch self {
        case .absent: return
        case .null: target = nil
        case .set(let value): target = value
        }
    }

    /// Whether the field is left as it is.
    public var isAbsent: Bool {
        if case .absent = self { return true }
        return false
    }
}

/// A patch that cannot be applied.
public enum PatchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The patch sets null on a field that must have a value.
    case nullForRequiredField(String)
    /// The field is not a settable stored property of the model.
    case notWritable(String)

    /// What is wrong, naming the field.
    public var description: String {
        switch self {
        case .nullForRequiredField(let field): "'\(field)' is required and cannot be set to null"
        case .notWritable(let field): "'\(field)' is not a settable stored property"
        }
    }
}

extension KeyedDecodingContainer {
    /// Decodes a patch field: a missing key is `.absent`, an explicit null is `.null`.
    public func decodePatch<Value: Decodable & Sendable & Hashable>(_ type: Value.Type, forKey key: Key) throws -> PatchValue<Value> {
        guard contains(key) else { return .absent }
        if try decodeNil(forKey: key) { return .null }
        return .set(try decode(Value.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    /// Encodes a patch field: absent fields are left out, null ones written as null.
    public mutating func encodePatch<Value: Encodable & Sendable & Hashable>(_ value: PatchValue<Value>, forKey key: Key) throws {
        switch value {
        case .absent: return
        case .null: try encodeNil(forKey: key)
        case .set(let wrapped): try encode(wrapped, forKey: key)
        }
    }
}
