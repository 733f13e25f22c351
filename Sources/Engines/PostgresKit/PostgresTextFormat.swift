import CPostgreSQL
import SchemaMetadata

/// Values in PostgreSQL's text format that arrive other than as a result's own columns: as the
/// elements of a `text[]` (each a value cast to text), typed by the column they came from.
public enum PostgresTextFormat {
    /// The elements of a one-dimensional array's text output (`{1,"a b",NULL}`), nil for an
    /// element that is NULL; nil when `literal` is not such an array. Quoted elements undo
    /// their backslash escapes; an unquoted `NULL` (any case) is the null element.
    ///
    ///     PostgresTextFormat.arrayElements(#"{1,"a b",NULL}"#)   // ["1", "a b", nil]
    public static func arrayElements(_ literal: String) -> [String?]? {
        let bytes = Array(literal.utf8)
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return nil }
        if bytes.count == 2 { return [] }
        var elements: [String?] = []
        var index = 1
        let end = bytes.count - 1
        while index <= end {
            var element: [UInt8] = []
            if bytes[index] == UInt8(ascii: "\"") {
                index += 1
                while index < end, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\") { index += 1 }
                    guard index < end else { return nil }
                    element.append(bytes[index])
                    index += 1
                }
                // The closing quote, then a comma or the closing brace.
                index += 1
                guard index <= end, index == end || bytes[index] == UInt8(ascii: ",") else { return nil }
                elements.append(String(decoding: element, as: UTF8.self))
            } else {
                while index < end, bytes[index] != UInt8(ascii: ",") {
                    element.append(bytes[index])
                    index += 1
                }
                let text = String(decoding: element, as: UTF8.self)
                elements.append(text.uppercased() == "NULL" ? nil : text)
            }
            index += 1
        }
        return elements
    }

    /// A value's text output typed as a column of `dataType` (information_schema's
    /// `data_type`: `bigint`, `timestamp with time zone`, ...) reads, so a value read this way
    /// equals the same value read as a column. A boolean arrives as its text cast (`true`).
    ///
    ///     PostgresTextFormat.value("2026-12-01 18:00:00.5+00", dataType: "timestamp with time zone")   // .text("2026-12-01T18:00:00.500Z")
    public static func value(_ text: String, dataType: String) -> StoredValue {
        if dataType == "boolean" { return .integer(text == "t" || text == "true" ? 1 : 0) }
        return PostgresConnection.value(text, type: oid(ofDataType: dataType))
    }

    static func oid(ofDataType dataType: String) -> Oid {
        switch dataType {
        case "timestamp with time zone": 1184
        case "bigint": 20
        case "smallint": 21
        case "integer": 23
        case "real": 700
        case "double precision": 701
        case "bytea": 17
        default: 25
        }
    }
}
