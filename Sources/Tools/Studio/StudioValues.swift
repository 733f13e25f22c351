import Foundation
import PersistentStoreCore
import SchemaKit
import SchemaMetadata
import TextEscaping

/// Stored values as the schema names them, for the pages: enum cases by name, dates in ISO
/// form with their time zone, bytes as a size (with an image preview where they are one),
/// locked values as locked. And the way back: text a person typed into a filter, as the
/// stored value the store compares with.
enum StudioValues {
    /// The value as HTML for a table cell or a record page.
    static func html(_ value: StoredValue, column: ColumnDescriptor, attribute: Attribute?, schema: Schema, locked: Bool) -> String {
        if case .null = value { return "<span class=\"null\">nil</span>" }
        if locked { return "<span class=\"locked\" title=\"encrypted; start the studio with --key-file to read it\">&#x1F512; locked</span>" }
        if let attribute, case .enumeration(let name) = attribute.type, let type = schema.enumType(named: name),
            let match = type.cases.first(where: { stored($0.rawValue) == value })
        {
            return "<span class=\"enum\">.\(TextEscaping.html(match.name))</span>"
        }
        switch (column.storage, value) {
        case (.boolean, .integer(let number)): return number == 0 ? "false" : "true"
        case (.boolean, .text(let text)): return text == "t" || text == "true" ? "true" : "false"
        case (.blob, .blob(let bytes)): return blob(bytes)
        case (.date, _): return "<time>\(TextEscaping.html(isoDate(value)))</time>"
        case (.json, .text(let text)): return "<code>\(TextEscaping.html(String(text.prefix(400))))</code>"
        default: return TextEscaping.html(String(plain(value).prefix(400)))
        }
    }

    /// A value as an export writes it: an enum's case by name, as the pages show it.
    static func exported(_ value: StoredValue, attribute: Attribute?, schema: Schema) -> StoredValue {
        guard let attribute, case .enumeration(let name) = attribute.type, let type = schema.enumType(named: name),
            let match = type.cases.first(where: { stored($0.rawValue) == value })
        else { return value }
        return .text(match.name)
    }

    /// A CSV field: Booleans as `true` and `false`, as JSON writes them; the rest as `plain`.
    static func csvField(_ value: StoredValue, column: ColumnDescriptor) -> String {
        switch (column.storage, value) {
        case (.boolean, .integer(let number)): number == 0 ? "false" : "true"
        case (.boolean, .text(let text)): text == "t" || text == "true" ? "true" : "false"
        default: plain(value)
        }
    }

    /// An enum case's raw value as the store keeps it.
    static func stored(_ raw: EnumType.RawValue) -> StoredValue {
        switch raw {
        case .string(let text): .text(text)
        case .int(let number): .integer(number)
        }
    }

    /// Text without markup: what an export writes, and what a link carries.
    static func plain(_ value: StoredValue) -> String {
        switch value {
        case .null: ""
        case .integer(let number): String(number)
        case .real(let number): String(number)
        case .text(let text): text
        case .blob(let bytes): bytes.map { String(format: "%02x", $0) }.joined()
        }
    }

    /// A date as the store keeps it, shown in ISO 8601 with its zone (UTC).
    static func isoDate(_ value: StoredValue) -> String {
        switch value {
        case .text(let text): return text.hasSuffix("Z") || text.contains("+") ? text : text + " (UTC)"
        case .real(let seconds): return ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds))
        case .integer(let seconds): return ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        default: return plain(value)
        }
    }

    /// Bytes: their size, and a preview where they are a PNG, JPEG or GIF image.
    static func blob(_ bytes: [UInt8]) -> String {
        let size = ByteCountFormatter.string(fromByteCount: Int64(bytes.count), countStyle: .file)
        guard let type = imageType(bytes), bytes.count <= 512 * 1024 else { return "<span class=\"bytes\">\(TextEscaping.html(size))</span>" }
        return
            "<span class=\"bytes\">\(TextEscaping.html(size))</span> <img class=\"preview\" alt=\"image, \(TextEscaping.html(size))\" src=\"data:\(type);base64,\(Data(bytes).base64EncodedString())\">"
    }

    /// The image type its first bytes say, by their signatures.
    static func imageType(_ bytes: [UInt8]) -> String? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if bytes.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        return nil
    }

    /// Text a person typed, as the value the store holds for the column; nil when it is not one
    /// (a letter in a number).
    static func stored(_ text: String, column: ColumnDescriptor, attribute: Attribute?, schema: Schema) -> StoredValue? {
        if let attribute, case .enumeration(let name) = attribute.type, let type = schema.enumType(named: name),
            let match = type.cases.first(where: { $0.name == text || $0.name == String(text.drop(while: { $0 == "." })) })
        {
            return stored(match.rawValue)
        }
        switch column.storage {
        case .integer: return Int64(text.trimmingCharacters(in: .whitespaces)).map(StoredValue.integer)
        case .real: return Double(text.trimmingCharacters(in: .whitespaces)).map(StoredValue.real)
        case .boolean:
            switch text.lowercased() {
            case "true", "yes", "1": return .integer(1)
            case "false", "no", "0": return .integer(0)
            default: return nil
            }
        case .blob: return nil
        default: return .text(text)
        }
    }
}

/// A cursor as a link carries it: each value typed by a letter, joined by commas, each part
/// percent-safe (`i42,tOakland`): never parsed as anything but these values.
enum CursorText {
    static func encode(_ cursor: RecordCursor) -> String {
        cursor.values.map { value in
            switch value {
            case .null: "n"
            case .integer(let number): "i\(number)"
            case .real(let number): "r\(number)"
            case .text(let text): "t" + Data(text.utf8).base64EncodedString()
            case .blob(let bytes): "b" + Data(bytes).base64EncodedString()
            }
        }.joined(separator: ",")
    }

    static func decode(_ text: String) -> RecordCursor? {
        var values: [StoredValue] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let kind = part.first else { return nil }
            let rest = String(part.dropFirst())
            switch kind {
            case "n" where rest.isEmpty: values.append(.null)
            case "i":
                guard let number = Int64(rest) else { return nil }
                values.append(.integer(number))
            case "r":
                guard let number = Double(rest) else { return nil }
                values.append(.real(number))
            case "t":
                guard let data = Data(base64Encoded: rest) else { return nil }
                values.append(.text(String(decoding: data, as: UTF8.self)))
            case "b":
                guard let data = Data(base64Encoded: rest) else { return nil }
                values.append(.blob(Array(data)))
            default: return nil
            }
        }
        return values.isEmpty ? nil : RecordCursor(values: values)
    }
}

/// Lines of an export: CSV as RFC 4180 writes it, JSON objects keyed by the schema's names.
enum StudioExport {
    /// One CSV record: fields with a comma, quote or line break quoted, quotes doubled; CRLF.
    static func csvLine(_ fields: [String]) -> String {
        fields.map { field in
            field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) ? "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : field
        }.joined(separator: ",") + "\r\n"
    }

    /// One record as a JSON object: numbers as numbers, booleans as booleans, bytes as base64.
    static func jsonObject(_ labels: [String], _ values: [StoredValue], _ columns: [ColumnDescriptor]) -> String {
        let members = zip(labels, zip(values, columns)).map { label, pair -> String in
            let (value, column) = pair
            let json: String
            switch (value, column.storage) {
            case (.null, _): json = "null"
            case (.integer(let number), .boolean): json = number == 0 ? "false" : "true"
            case (.text(let text), .boolean): json = text == "t" || text == "true" ? "true" : "false"
            case (.integer(let number), _): json = String(number)
            case (.real(let number), _): json = number.isFinite ? String(number) : "null"
            case (.text(let text), _): json = TextEscaping.json(text)
            case (.blob(let bytes), _): json = TextEscaping.json(Data(bytes).base64EncodedString())
            }
            return TextEscaping.json(label) + ":" + json
        }
        return "{" + members.joined(separator: ",") + "}"
    }
}
