import Foundation
import SchemaMetadata

extension SchemaSnapshot {
    /// Reads a snapshot file's JSON. A reader made for the snapshot's own shape goes first: a
    /// 1,000-entity snapshot is megabytes, and Foundation's `JSONDecoder` took a fifth of a
    /// second of `generate` to decode it. Anything that reader does not expect (a hand-edited
    /// or damaged file, a shape from another version) goes to `JSONDecoder`, which decides, and
    /// whose errors are the ones reported.
    public static func decode(_ data: Data) throws -> SchemaSnapshot {
        let fast = data.withUnsafeBytes { raw -> SchemaSnapshot? in
            var reader = SnapshotReader(bytes: raw.bindMemory(to: UInt8.self))
            return reader.snapshot()
        }
        if let snapshot = fast {
            return snapshot
        }
        return try JSONDecoder().decode(SchemaSnapshot.self, from: data)
    }
}

/// A JSON reader for exactly what `SchemaSnapshot`'s synthesized `Encodable` writes: objects
/// with known keys in any order, optional keys absent or null, enums with payloads as
/// `{"case": {"_0": value}}`. It answers nil, never a partial snapshot, at the first surprise.
struct SnapshotReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func snapshot() -> SchemaSnapshot? {
        var schema: String?, version: Int?, tables: [TableSnapshot]?, format: Int?, grants: [GrantSnapshot]?
        let read = object { reader, key in
            switch key {
            case "format": return reader.optional(&format) { $0.integer().map(Int.init) }
            case "grants": return reader.optional(&grants) { $0.array { $0.grant() } }
            case "schema": schema = reader.string()
            case "version": version = reader.integer().map(Int.init)
            case "tables": tables = reader.array { $0.table() }
            default: return false
            }
            return true
        }
        skipSpace()
        guard read, position == bytes.count, let schema, let version, let tables else { return nil }
        var snapshot = SchemaSnapshot(schema: schema, version: version, tables: tables)
        snapshot.format = format
        snapshot.grants = grants
        return snapshot
    }

    private mutating func grant() -> GrantSnapshot? {
        var role: String?, access: GrantSnapshot.Access?
        let read = object { reader, key in
            switch key {
            case "role": role = reader.string()
            case "access": access = reader.string().flatMap(GrantSnapshot.Access.init(rawValue:))
            default: return false
            }
            return true
        }
        guard read, let role, let access else { return nil }
        return GrantSnapshot(role: role, access: access)
    }

    // MARK: - The snapshot's types

    private mutating func table() -> TableSnapshot? {
        var name: String?, entity: String?, renamedFrom: String?, columns: [ColumnSnapshot]?, primaryKey: [String]?
        var indexes: [IndexSnapshot]?, foreignKeys: [ForeignKeySnapshot]?, doc: String?
        let read = object { reader, key in
            switch key {
            case "doc": return reader.optional(&doc) { $0.string() }
            case "name": name = reader.string()
            case "entity": return reader.optional(&entity) { $0.string() }
            case "renamedFrom": return reader.optional(&renamedFrom) { $0.string() }
            case "columns": columns = reader.array { $0.column() }
            case "primaryKey": primaryKey = reader.array { $0.string() }
            case "indexes": indexes = reader.array { $0.index() }
            case "foreignKeys": foreignKeys = reader.array { $0.foreignKey() }
            default: return false
            }
            return true
        }
        guard read, let name, let columns, let primaryKey, let indexes, let foreignKeys else { return nil }
        var table = TableSnapshot(
            name: name, entity: entity, renamedFrom: renamedFrom, columns: columns, primaryKey: primaryKey,
            indexes: indexes, foreignKeys: foreignKeys)
        table.doc = doc
        return table
    }

    private mutating func column() -> ColumnSnapshot? {
        var name: String?, property: String?, renamedFrom: String?, kind: StorageKind?, isNullable: Bool?
        var defaultValue: ColumnDefault?, isAutoIncrement: Bool?, enumValues: [String]?, bits: Int?
        var precision: Int?, scale: Int?, doc: String?, movedFrom: String?, backfill: ColumnBackfill?
        let read = object { reader, key in
            switch key {
            case "backfill": return reader.optional(&backfill) { $0.columnBackfill() }
            case "movedFrom": return reader.optional(&movedFrom) { $0.string() }
            case "precision": return reader.optional(&precision) { $0.integer().map(Int.init) }
            case "scale": return reader.optional(&scale) { $0.integer().map(Int.init) }
            case "doc": return reader.optional(&doc) { $0.string() }
            case "name": name = reader.string()
            case "property": return reader.optional(&property) { $0.string() }
            case "renamedFrom": return reader.optional(&renamedFrom) { $0.string() }
            case "kind": kind = reader.string().flatMap(StorageKind.init(rawValue:))
            case "isNullable": isNullable = reader.bool()
            case "defaultValue": return reader.optional(&defaultValue) { $0.columnDefault() }
            case "isAutoIncrement": isAutoIncrement = reader.bool()
            case "enumValues": return reader.optional(&enumValues) { $0.array { $0.string() } }
            case "bits": return reader.optional(&bits) { $0.integer().map(Int.init) }
            default: return false
            }
            return true
        }
        guard read, let name, let kind, let isNullable, let isAutoIncrement else { return nil }
        var column = ColumnSnapshot(
            name: name, property: property, renamedFrom: renamedFrom, kind: kind, isNullable: isNullable,
            defaultValue: defaultValue, isAutoIncrement: isAutoIncrement, enumValues: enumValues, bits: bits)
        column.precision = precision
        column.scale = scale
        column.doc = doc
        column.movedFrom = movedFrom
        column.backfill = backfill
        return column
    }

    private mutating func columnBackfill() -> ColumnBackfill? {
        var result: ColumnBackfill?
        var cases = 0
        let read = object { reader, key in
            cases += 1
            switch key {
            case "value": result = reader.payload { $0.columnDefault() }.map(ColumnBackfill.value)
            case "sql": result = reader.payload { $0.stringMap() }.map(ColumnBackfill.sql)
            default: return false
            }
            return result != nil
        }
        return read && cases == 1 ? result : nil
    }

    private mutating func stringMap() -> [String: String]? {
        var map: [String: String] = [:]
        let read = object { reader, key in
            guard let value = reader.string() else { return false }
            map[key] = value
            return true
        }
        return read ? map : nil
    }

    private mutating func columnDefault() -> ColumnDefault? {
        var result: ColumnDefault?
        var cases = 0
        let read = object { reader, key in
            cases += 1
            switch key {
            case "null":
                guard reader.emptyObject() else { return false }
                result = .null
            case "now":
                guard reader.emptyObject() else { return false }
                result = .now
            case "uuid":
                guard reader.emptyObject() else { return false }
                result = .uuid
            case "integer": result = reader.payload { $0.integer() }.map(ColumnDefault.integer)
            case "real": result = reader.payload { $0.double() }.map(ColumnDefault.real)
            case "text": result = reader.payload { $0.string() }.map(ColumnDefault.text)
            case "blob": result = reader.payload { $0.string() }.map(ColumnDefault.blob)
            default: return false
            }
            return result != nil
        }
        return read && cases == 1 ? result : nil
    }

    private mutating func index() -> IndexSnapshot? {
        var name: String?, columns: [String]?, isUnique: Bool?, isFullText: Bool?, jsonColumns: [String]?
        let read = object { reader, key in
            switch key {
            case "name": name = reader.string()
            case "columns": columns = reader.array { $0.string() }
            case "isUnique": isUnique = reader.bool()
            case "isFullText": isFullText = reader.bool()
            case "jsonColumns": return reader.optional(&jsonColumns) { $0.array { $0.string() } }
            default: return false
            }
            return true
        }
        guard read, let name, let columns, let isUnique, let isFullText else { return nil }
        return IndexSnapshot(name: name, columns: columns, isUnique: isUnique, isFullText: isFullText, jsonColumns: jsonColumns)
    }

    private mutating func foreignKey() -> ForeignKeySnapshot? {
        var columns: [String]?, table: String?, referencedColumns: [String]?, onDelete: ForeignKeySnapshot.Action?
        let read = object { reader, key in
            switch key {
            case "columns": columns = reader.array { $0.string() }
            case "table": table = reader.string()
            case "referencedColumns": referencedColumns = reader.array { $0.string() }
            case "onDelete": onDelete = reader.string().flatMap(ForeignKeySnapshot.Action.init(rawValue:))
            default: return false
            }
            return true
        }
        guard read, let columns, let table, let referencedColumns, let onDelete else { return nil }
        return ForeignKeySnapshot(columns: columns, table: table, referencedColumns: referencedColumns, onDelete: onDelete)
    }

    // MARK: - JSON

    /// Reads an object, handing each key to `member`, which reads the value and answers whether
    /// it was one it expected. Every value a member reads must have been read in full.
    private mutating func object(_ member: (inout SnapshotReader, String) -> Bool) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return true }
        // A key given twice is a hand edit; `JSONDecoder` decides what it means.
        var seen: [String] = []
        while true {
            guard let key = string(), !seen.contains(key), take(UInt8(ascii: ":")) else { return false }
            seen.append(key)
            let start = position
            guard member(&self, key), position > start else { return false }
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "}"))
        }
    }

    private mutating func emptyObject() -> Bool { object { _, _ in false } }

    /// `{"_0": value}`, the payload of an enum case.
    private mutating func payload<T>(_ value: (inout SnapshotReader) -> T?) -> T? {
        var result: T?
        let read = object { reader, key in
            guard key == "_0", result == nil else { return false }
            result = value(&reader)
            return result != nil
        }
        return read ? result : nil
    }

    /// A value that may be `null`; false when it is neither null nor readable.
    private mutating func optional<T>(_ target: inout T?, _ value: (inout SnapshotReader) -> T?) -> Bool {
        if literal("null") {
            target = nil
            return true
        }
        target = value(&self)
        return target != nil
    }

    private mutating func array<T>(_ element: (inout SnapshotReader) -> T?) -> [T]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var items: [T] = []
        if take(UInt8(ascii: "]")) { return items }
        while true {
            guard let item = element(&self) else { return nil }
            items.append(item)
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "]")) ? items : nil
        }
    }

    private mutating func bool() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// A whole number written without fraction or exponent, within 64 bits.
    private mutating func integer() -> Int64? {
        skipSpace()
        var index = position
        let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var magnitude: UInt64 = 0
        let firstDigit = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
            index += 1
        }
        guard index > firstDigit else { return nil }
        if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) { return nil }
        position = index
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// Any JSON number, read by the standard library's parser.
    private mutating func double() -> Double? {
        skipSpace()
        var index = position
        while index < bytes.count, "0123456789+-.eE".utf8.contains(bytes[index]) { index += 1 }
        guard index > position, let value = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[position..<index]), as: UTF8.self)) else { return nil }
        position = index
        return value
    }

    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = position
        // Most strings have no escapes: they are the bytes between the quotes.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                // Invalid UTF-8 is left to `JSONDecoder`, which refuses it.
                guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self) else { return nil }
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            position += 1
        }
        return escapedString(from: start)
    }

    /// The rest of a string with escapes, from its first byte after the quote.
    private mutating func escapedString(from start: Int) -> String? {
        var out: [UInt8] = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { return nil }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800...0xDBFF).contains(scalar) {
                        // A surrogate pair: the low half must follow as another \u escape.
                        guard take(UInt8(ascii: "\\"), skippingSpace: false), take(UInt8(ascii: "u"), skippingSpace: false),
                            let low = hex4(), (0xDC00...0xDFFF).contains(low)
                        else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    out.append(contentsOf: String(unicode).utf8)
                default: return nil
                }
            case 0..<0x20: return nil
            default: out.append(byte)
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt32? {
        guard position + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        skipSpace()
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[position + offset] != word.utf8Start[offset] { return false }
        position += count
        return true
    }

    private mutating func take(_ byte: UInt8, skippingSpace: Bool = true) -> Bool {
        if skippingSpace { skipSpace() }
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    private mutating func skipSpace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }
}
