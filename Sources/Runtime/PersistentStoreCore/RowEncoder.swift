import Foundation
import SchemaMetadata

/// Turns a model into column values through its own `Encodable` conformance, so Codable keys
/// (`jsonKey`), enums (raw values), value types and arrays (JSON text) follow the generated
/// code. Nil optionals are simply absent.
enum RowEncoder {
    /// The model's values by Codable key, day columns (`dateOnly`) as their days.
    static func encode<M: PersistentModel>(_ model: M) throws -> [String: StoredValue] {
        let encoder = RowEncoding()
        try model.encode(to: encoder)
        if let problem = encoder.problem { throw problem }
        var values = encoder.values
        for column in M.entity.columns where column.storage == .day {
            if let value = values[column.jsonKey] { values[column.jsonKey] = StoredDate.dayValue(value) }
        }
        return values
    }

    /// One value as a column keeps it: a day column's date as its day.
    static func value(_ value: some Encodable, for column: ColumnDescriptor?) throws -> StoredValue {
        let stored = try self.value(value)
        return column?.storage == .day ? StoredDate.dayValue(stored) : stored
    }

    /// One value as the database keeps it.
    static func value(_ value: some Encodable) throws -> StoredValue {
        switch value {
        case let date as Date: return .text(StoredDate.text(date))
        case let data as Data: return .blob([UInt8](data))
        case let uuid as UUID: return .text(uuid.uuidString.lowercased())
        case let url as URL: return .text(url.absoluteString)
        case let decimal as Decimal: return .text(decimal.description)
        case let text as String: return .text(text)
        case let flag as Bool: return .integer(flag ? 1 : 0)
        case let number as Double: return .real(number)
        case let number as Float: return .real(Double(number))
        case let number as any BinaryInteger: return .integer(Int64(number))
        default:
            // Enums and other single values encode themselves as one primitive; anything with
            // keys or elements is stored as JSON text.
            let probe = SingleValueProbe()
            if (try? value.encode(to: probe)) != nil, let captured = probe.captured { return captured }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .custom { date, encoder in
                var container = encoder.singleValueContainer()
                try container.encode(StoredDate.text(date))
            }
            return .text(String(decoding: try encoder.encode(value), as: UTF8.self))
        }
    }
}

/// Problems encoding or decoding a row.
struct RowCodingError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

private final class RowEncoding: Encoder {
    var values: [String: StoredValue] = [:]
    var problem: RowCodingError?
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RowContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        problem = RowCodingError(message: "a model must encode as a keyed container")
        return DiscardingUnkeyed()
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        problem = RowCodingError(message: "a model must encode as a keyed container")
        return SingleValueProbe()
    }
}

private struct RowContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: RowEncoding
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { encoder.values[key.stringValue] = .null }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        encoder.values[key.stringValue] = try RowEncoder.value(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        encoder.problem = RowCodingError(message: "nested containers are not supported in a row ('\(key.stringValue)')")
        return KeyedEncodingContainer(RowContainer<NestedKey>(encoder: RowEncoding()))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        encoder.problem = RowCodingError(message: "nested containers are not supported in a row ('\(key.stringValue)')")
        return DiscardingUnkeyed()
    }

    mutating func superEncoder() -> any Encoder { RowEncoding() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { RowEncoding() }
}

/// Captures a value that encodes itself as one primitive (a raw-value enum, say).
final class SingleValueProbe: Encoder, SingleValueEncodingContainer {
    var captured: StoredValue?
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(FailingKeyed<Key>())
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { DiscardingUnkeyed(fails: true) }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() throws { captured = .null }
    func encode<T: Encodable>(_ value: T) throws {
        if captured != nil { throw RowCodingError(message: "more than one value") }
        captured = try RowEncoder.value(value)
    }
}

/// A keyed container that marks a value as not a single primitive.
private struct FailingKeyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil(forKey key: Key) throws { throw RowCodingError(message: "keyed") }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { throw RowCodingError(message: "keyed") }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(FailingKeyed<NestedKey>())
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { DiscardingUnkeyed(fails: true) }
    mutating func superEncoder() -> any Encoder { SingleValueProbe() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { SingleValueProbe() }
}

private struct DiscardingUnkeyed: UnkeyedEncodingContainer {
    var fails = false
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }
    mutating func encodeNil() throws { if fails { throw RowCodingError(message: "unkeyed") } }
    mutating func encode<T: Encodable>(_ value: T) throws { if fails { throw RowCodingError(message: "unkeyed") } }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(FailingKeyed<NestedKey>())
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { SingleValueProbe() }
}
