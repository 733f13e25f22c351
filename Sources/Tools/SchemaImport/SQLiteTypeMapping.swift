import Foundation

/// Declared SQLite column types to schema types, following "Determination Of Column Affinity"
/// (sqlite.org/datatype3.html, section 3.1) in its order, after a few names that say more
/// than their affinity: BOOLEAN, DATE, DATETIME, TIMESTAMP, UUID.
enum SQLiteTypeMapping {
    struct Mapping: Equatable {
        var type: String
        /// Why the choice needs a word, when it does.
        var remark: String?
        /// DATE (as Rails, Django and Prisma declare calendar days): a `Date` kept as its day.
        var isDateOnly = false
    }

    /// SQLite's affinity for a declared type: INTEGER, TEXT, BLOB, REAL or NUMERIC.
    static func affinity(of declared: String) -> String {
        let upper = declared.uppercased()
        if upper.contains("INT") { return "INTEGER" }
        if upper.contains("CHAR") || upper.contains("CLOB") || upper.contains("TEXT") { return "TEXT" }
        if upper.contains("BLOB") || upper.isEmpty { return "BLOB" }
        if upper.contains("REAL") || upper.contains("FLOA") || upper.contains("DOUB") { return "REAL" }
        return "NUMERIC"
    }

    static func schemaType(forDeclared declared: String) -> Mapping {
        let upper = declared.uppercased().trimmingCharacters(in: .whitespaces)
        // The name without a size: `NUMERIC(10,2)` -> `NUMERIC`, `VARYING CHARACTER(20)` stays two words.
        let base = upper.split(separator: "(").first.map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
        switch base {
        case "BOOLEAN", "BOOL": return Mapping(type: "Bool")
        case "DATE": return Mapping(type: "Date", remark: nil, isDateOnly: true)
        case "DATETIME", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITHOUT TIME ZONE":
            return Mapping(type: "Date", remark: nil)
        case "UUID", "GUID", "UNIQUEIDENTIFIER": return Mapping(type: "UUID")
        case "STRING":
            // A classic trap: STRING has none of CHAR, CLOB or TEXT, so SQLite gives it NUMERIC
            // affinity and stores '0123' as the integer 123. The intent is text.
            return Mapping(
                type: "String", remark: "declared type STRING has NUMERIC affinity in SQLite (text that looks like a number is stored as a number); imported as String, whose column keeps text as text"
            )
        case "ANY":
            return Mapping(type: "Data", remark: "a column of type ANY holds values of every type; imported as Data (bytes)")
        default:
            break
        }
        switch affinity(of: upper) {
        case "INTEGER":
            let remark =
                ["INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "INT2", "INT8", "UNSIGNED BIG INT"].contains(base)
                ? nil : "declared type \(declared) has INTEGER affinity (its name contains INT); imported as Int"
            return Mapping(type: "Int", remark: remark)
        case "TEXT": return Mapping(type: "String")
        case "REAL": return Mapping(type: "Double")
        case "BLOB":
            return upper.isEmpty
                ? Mapping(type: "Data", remark: "the column has no declared type, so it holds values of every type; imported as Data (bytes)")
                : Mapping(type: "Data")
        default:
            let known = ["NUMERIC", "DECIMAL", "MONEY", "NUMBER"].contains(base)
            return Mapping(type: "Decimal", remark: known ? nil : "declared type \(declared) has NUMERIC affinity; imported as Decimal")
        }
    }
}
