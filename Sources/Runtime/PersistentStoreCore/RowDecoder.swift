import Foundation
import SchemaMetadata

/// Builds a model from column values through its own `Decodable` conformance.
enum RowDecoder {
    static func decode<M: Decodable>(_ type: M.Type, from values: [String: StoredValue]) throws -> M {
        var keys: [String: Int] = [:]
        var row: [StoredValue] = []
        for (key, value) in values {
            keys[key] = row.count
            row.append(value)
        }
        return try M(from: RowDecoding(keys: RowKeys(positions: keys), row: row))
    }

    /// Decodes a row read in query order; `keys` maps Codable keys to positions, once per query.
    static func decode<M: Decodable>(_ type: M.Type, row: [StoredValue], keys: RowKeys) throws -> M {
        try M(from: RowDecoding(keys: keys, row: row))
    }

    /// One stored value as `T`.
    static func value<T: Decodable>(_ type: T.Type, from stored: StoredValue, key: String) throws -> T {
        func mismatch() -> RowCodingError { RowCodingError(message: "column for '\(key)' holds \(stored), not a \(T.self)") }
        switch (T.self, stored) {
        case (is Date.Type, .text(let text)):
            guard let date = StoredDate.date(text) as? T else { throw mismatch() }
            return date
        case (is Data.Type, .blob(let bytes)):
            guard let data = Data(bytes) as? T else { throw mismatch() }
            return data
        case (is UUID.Type, .text(let text)):
            guard let uuid = UUID(uuidString: text) as? T else { throw mismatch() }
            return uuid
        case (is URL.Type, .text(let text)):
            guard let url = URL(string: text) as? T else { throw mismatch() }
            return url
        case (is Decimal.Type, .text(let text)):
            guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) as? T else { throw mismatch() }
            return decimal
        case (is String.Type, .text(let text)):
            guard let result = text as? T else { throw mismatch() }
            return result
        case (is Bool.Type, .integer(let number)):
            guard let result = (number != 0) as? T else { throw mismatch() }
            return result
        case (is Double.Type, .real(let number)), (is Float.Type, .real(let number)):
            guard let result = (T.self == Float.self ? Float(number) as Any : number as Any) as? T else { throw mismatch() }
            return result
        case (is Double.Type, .integer(let number)), (is Float.Type, .integer(let number)):
            guard let result = (T.self == Float.self ? Float(number) as Any : Double(number) as Any) as? T else { throw mismatch() }
            return result
        default:
            if case .integer(let number) = stored, let integer = T.self as? any BinaryInteger.Type {
                guard let result = integer.init(exactly: number) as? T else { throw mismatch() }
                return result
            }
            // Raw-value enums decode from one value; value types and arrays from JSON text.
            if let single = try? T(from: SingleValueRowDecoding(value: stored, key: key)) { return single }
            guard case .text(let json) = stored else { throw mismatch() }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .custom { decoder in
                let text = try decoder.singleValueContainer().decode(String.self)
                guard let date = StoredDate.date(text) else { throw RowCodingError(message: "'\(text)' is not a stored date") }
                return date
            }
            return try decoder.decode(T.self, from: Data(json.utf8))
        }
    }
}

/// Positions of Codable keys in a row, shared by every row of a query.
final class RowKeys: @unchecked Sendable {
    let positions: [String: Int]
    init(positions: [String: Int]) { self.positions = positions }

    /// The keys of a row of `columns`: attributes by their Codable key, single-column foreign
    /// keys by their key property (`originID`), the implicit key as `id`.
    convenience init(entity: EntityDescriptor, columns: [String]) {
        var keyForColumn: [String: String] = ["id": "id"]
        for column in entity.columns { keyForColumn[column.column] = column.jsonKey }
        for relationship in entity.relationships where relationship.foreignKeyColumns.count == 1 {
            if let property = relationship.keyProperty { keyForColumn[relationship.foreignKeyColumns[0]] = property }
        }
        var positions: [String: Int] = [:]
        for (index, name) in columns.enumerated() { positions[keyForColumn[name] ?? name] = index }
        self.init(positions: positions)
    }
}

private struct RowDecoding: Decoder {
    let keys: RowKeys
    let row: [StoredValue]
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RowDecodingContainer<Key>(keys: keys, row: row))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw RowCodingError(message: "a row is keyed") }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw RowCodingError(message: "a row is keyed") }
}

private struct RowDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let keys: RowKeys
    let row: [StoredValue]
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { keys.positions.keys.compactMap(Key.init(stringValue:)) }

    private func value(_ key: Key) -> StoredValue? {
        guard let position = keys.positions[key.stringValue], position < row.count else { return nil }
        return row[position]
    }

    func contains(_ key: Key) -> Bool { value(key) != nil }
    func decodeNil(forKey key: Key) throws -> Bool { (value(key) ?? .null) == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let stored = value(key), stored != .null else {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: [key], debugDescription: "column for '\(key.stringValue)' is NULL or missing"))
        }
        return try RowDecoder.value(T.self, from: stored, key: key.stringValue)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw RowCodingError(message: "nested containers are not supported in a row")
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw RowCodingError(message: "nested containers are not supported in a row")
    }
    func superDecoder() throws -> any Decoder { throw RowCodingError(message: "no super decoder in a row") }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw RowCodingError(message: "no super decoder in a row") }
}

/// One stored value, for types that decode from a single value (raw-value enums).
private struct SingleValueRowDecoding: Decoder, SingleValueDecodingContainer {
    let value: StoredValue
    let key: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<K: CodingKey>(keyedBy type: K.Type) throws -> KeyedDecodingContainer<K> { throw RowCodingError(message: "single value") }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw RowCodingError(message: "single value") }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { value == .null }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try RowDecoder.value(T.self, from: value, key: key) }
}
