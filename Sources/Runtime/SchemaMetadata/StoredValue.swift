import Foundation

/// A value as SQLite stores it.
public enum StoredValue: Sendable, Hashable, CustomStringConvertible {
    /// NULL.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// Text.
    case text(String)
    /// Bytes.
    case blob([UInt8])

    /// The value as SQL would spell it: `NULL`, `42`, `'text'`, `x'00ff'`.
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'\(value)'"
        case .blob(let bytes): "x'" + bytes.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() + "'"
        }
    }
}

/// A model that generated code reads from and writes to a row directly, in
/// `entity.rowColumns` order, without going through Codable (several times faster).
public protocol RowCodable {
    /// The model's values in `entity.rowColumns` order.
    func storedValues() throws -> [StoredValue]
    /// The model from values in `entity.rowColumns` order; a value that does not fit throws.
    init(storedValues row: [StoredValue]) throws
}

/// A stored value that does not fit the property it is read into.
public struct StoredValueError: Error, Sendable, CustomStringConvertible {
    /// What did not fit, and what was found.
    public var message: String
    /// An error with its message.
    ///
    ///     throw StoredValueError("expected text, found 42")
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// Types kept in one column.
public protocol StoredValueConvertible {
    /// The value as a column keeps it.
    var storedValue: StoredValue { get }
    /// The value a column holds; one that does not fit the type throws `StoredValueError`.
    init(storedValue: borrowing StoredValue) throws
}

// Inlinable: generated models in other modules decode every column of every fetched row
// through these, and only inlined code is specialized for them (no generic metadata lookups).
extension String: StoredValueConvertible {
    /// The text itself.
    @inlinable public var storedValue: StoredValue { .text(self) }
    /// Reads text; any other value throws.
    ///
    ///     let city = try String(storedValue: .text("Millbrae"))
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        switch storedValue {
        case .text(let text): self = text
        default: throw StoredValueError("expected text, found \(copy storedValue)")
        }
    }
}

extension Bool: StoredValueConvertible {
    /// 1 or 0.
    @inlinable public var storedValue: StoredValue { .integer(self ? 1 : 0) }
    /// Reads an integer: 0 is false, anything else true.
    ///
    ///     let active = try Bool(storedValue: .integer(1))   // true
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        switch storedValue {
        case .integer(let number): self = number != 0
        default: throw StoredValueError("expected a boolean, found \(copy storedValue)")
        }
    }
}

extension Double: StoredValueConvertible {
    /// A real.
    @inlinable public var storedValue: StoredValue { .real(self) }
    /// Reads a real, or an integer converted.
    ///
    ///     let elevation = try Double(storedValue: .integer(13))   // 13.0
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        switch storedValue {
        case .real(let number): self = number
        case .integer(let number): self = Double(number)
        default: throw StoredValueError("expected a number, found \(storedValue)")
        }
    }
}

extension Float: StoredValueConvertible {
    /// A real.
    @inlinable public var storedValue: StoredValue { .real(Double(self)) }
    /// Reads a real or an integer, as `Double` does, then narrows it.
    ///
    ///     let ratio = try Float(storedValue: .real(0.5))
    @inlinable public init(storedValue: borrowing StoredValue) throws { self = Float(try Double(storedValue: storedValue)) }
}

extension StoredValueConvertible where Self: FixedWidthInteger {
    /// An integer.
    @inlinable public var storedValue: StoredValue { .integer(Int64(self)) }
    /// Reads an integer that fits the type exactly; a larger one throws.
    ///
    ///     let seats = try Int16(storedValue: .integer(180))
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        switch storedValue {
        case .integer(let number):
            if let value = Self(exactly: number) {
                self = value
                return
            }
        default: break
        }
        throw StoredValueError("expected an integer that fits \(Self.self), found \(copy storedValue)")
    }
}

extension Int: StoredValueConvertible {}
extension Int8: StoredValueConvertible {}
extension Int16: StoredValueConvertible {}
extension Int32: StoredValueConvertible {}
extension Int64: StoredValueConvertible {}

extension Data: StoredValueConvertible {
    /// The bytes as a blob.
    @inlinable public var storedValue: StoredValue { .blob([UInt8](self)) }
    /// Reads a blob, or text as its UTF-8 bytes.
    ///
    ///     let logo = try Data(storedValue: .blob([0x89, 0x50, 0x4E, 0x47]))
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        switch storedValue {
        case .blob(let bytes): self = Data(bytes)
        case .text(let text): self = Data(text.utf8)
        default: throw StoredValueError("expected bytes, found \(storedValue)")
        }
    }
}

extension UUID: StoredValueConvertible {
    /// Lowercase text, as PostgreSQL prints a `uuid`.
    @inlinable public var storedValue: StoredValue { .text(uuidString.lowercased()) }
    /// Reads text that `UUID(uuidString:)` accepts, in either case.
    ///
    ///     let id = try UUID(storedValue: .text("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"))
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        switch storedValue {
        case .text(let text):
            if let uuid = UUID(uuidString: text) {
                self = uuid
                return
            }
        default: break
        }
        throw StoredValueError("expected a UUID, found \(copy storedValue)")
    }
}

extension URL: StoredValueConvertible {
    /// The URL's text.
    @inlinable public var storedValue: StoredValue { .text(absoluteString) }
    /// Reads text that `URL(string:)` accepts.
    ///
    ///     let site = try URL(storedValue: .text("https://www.flysfo.com"))
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        switch storedValue {
        case .text(let text):
            if let url = URL(string: text) {
                self = url
                return
            }
        default: break
        }
        throw StoredValueError("expected a URL, found \(copy storedValue)")
    }
}

extension Decimal: StoredValueConvertible {
    /// Text, exactly (no binary floating point on the way).
    @inlinable public var storedValue: StoredValue { .text(description) }
    /// Reads decimal text exactly, or a number a NUMERIC column stored, through its shortest spelling.
    ///
    ///     let price = try Decimal(storedValue: .text("19.99"))
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        let text: String
        switch storedValue {
        case .text(let stored): text = stored
        // A column declared NUMERIC (an adopted database) stores numbers as numbers; a double's
        // shortest spelling is the decimal that was written (`0.99`, not 0.98999...).
        case .integer(let number): text = String(number)
        case .real(let number) where number.isFinite: text = String(number)
        default: throw StoredValueError("expected a decimal, found \(storedValue)")
        }
        guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
            throw StoredValueError("expected a decimal, found \(storedValue)")
        }
        self = decimal
    }
}

extension Date: StoredValueConvertible {
    /// ISO 8601 text in UTC with milliseconds (`StoredDate`), which sorts as time does.
    @inlinable public var storedValue: StoredValue { .text(StoredDate.text(self)) }
    /// Reads ISO 8601 text, with or without milliseconds, or one of SQLite's date spellings (`StoredDate.date`).
    ///
    ///     let departure = try Date(storedValue: .text("2024-01-31T08:00:00.000Z"))
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        switch storedValue {
        case .text(let text):
            if let date = StoredDate.date(text) {
                self = date
                return
            }
        default: break
        }
        throw StoredValueError("expected a date, found \(copy storedValue)")
    }
}

extension Date {
    /// The stored form of a `dateOnly` attribute: the day in UTC (`2024-01-31`), as generated
    /// row codecs write it:
    ///
    ///     hiredOn.storedDayValue
    @inlinable public var storedDayValue: StoredValue { .text(StoredDate.day(self)) }
}

extension Optional where Wrapped == Date {
    /// NULL for nil, else the day in UTC (`dateOnly` attributes).
    @inlinable public var storedDayValue: StoredValue { self.map { .text(StoredDate.day($0)) } ?? .null }
}

extension Optional: StoredValueConvertible where Wrapped: StoredValueConvertible {
    /// NULL for nil, else the wrapped value's.
    @inlinable public var storedValue: StoredValue { self?.storedValue ?? .null }
    /// Reads NULL as nil, anything else as the wrapped type.
    ///
    ///     let notes = try Optional<String>(storedValue: .null)   // nil
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        switch storedValue {
        case .null: self = nil
        default: self = try Wrapped(storedValue: storedValue)
        }
    }
}

extension StoredValueConvertible where Self: RawRepresentable, RawValue: StoredValueConvertible {
    /// The raw value's stored form.
    @inlinable public var storedValue: StoredValue { rawValue.storedValue }
    /// Reads the raw value, then the case it names; a raw value no case has throws.
    ///
    ///     let state = try JobState(storedValue: .text("queued"))   // .queued
    @inlinable public init(storedValue: borrowing StoredValue) throws {
        guard let value = Self(rawValue: try RawValue(storedValue: storedValue)) else { throw StoredValueError("\(storedValue) is not a case of \(Self.self)") }
        self = value
    }
}

/// Value types and arrays are kept as JSON text (dates inside them as stored dates).
public enum StoredJSON {
    /// The value as JSON text with sorted keys, dates in the stored date form.
    public static func value<T: Encodable>(_ value: T) throws -> StoredValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(StoredDate.text(date))
        }
        return .text(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// NULL for nil, else the JSON text.
    public static func value<T: Encodable>(_ value: T?) throws -> StoredValue {
        guard let value else { return .null }
        return try self.value(value)
    }

    /// The value JSON text holds.
    public static func decode<T: Decodable>(_ type: T.Type, from stored: StoredValue) throws -> T {
        guard case .text(let json) = stored else { throw StoredValueError("expected JSON text, found \(stored)") }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = StoredDate.date(text) else { throw StoredValueError("'\(text)' is not a stored date") }
            return date
        }
        return try decoder.decode(T.self, from: Data(json.utf8))
    }

    /// nil for NULL, else the value JSON text holds.
    public static func decode<T: Decodable>(_ type: T?.Type, from stored: StoredValue) throws -> T? {
        stored == .null ? nil : try decode(T.self, from: stored)
    }
}

extension EntityDescriptor {
    /// The columns generated row codecs read and write, in order: the implicit `id`, the stored
    /// attributes, then the single-column keys of to-one relationships.
    public var rowColumns: [String] {
        (hasImplicitKey ? ["id"] : []) + columns.map(\.column)
            + relationships.filter { $0.keyProperty != nil && $0.foreignKeyColumns.count == 1 }.map { $0.foreignKeyColumns[0] }
    }
}
