import SQLDialects

/// Rules for names in schemas and the SQL names derived from them.
public enum Naming {
    /// Letters, digits and `_`, not starting with a digit (ASCII, so every language and database
    /// the schema reaches can spell it).
    public static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first else { return false }
        guard isLetterOrUnderscore(first) else { return false }
        return name.utf8.allSatisfy { isLetterOrUnderscore($0) || ($0 >= 48 && $0 <= 57) }
    }

    /// Starts with an uppercase ASCII letter.
    public static func isUpperCamelCase(_ name: String) -> Bool {
        guard let first = name.utf8.first else { return false }
        return first >= 65 && first <= 90
    }

    /// Starts with a lowercase ASCII letter or `_`.
    public static func isLowerCamelCase(_ name: String) -> Bool {
        guard let first = name.utf8.first else { return false }
        return (first >= 97 && first <= 122) || first == 95
    }

    private static func isLetterOrUnderscore(_ byte: UInt8) -> Bool {
        (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 95
    }

    /// `countryCode` -> `country_code`, `URLString` -> `url_string`, `userID` -> `user_id`.
    /// A name as SQL compares identifiers (case-insensitively); names without capitals, most
    /// generated columns, are returned as they are.
    static func foldedForComparison(_ name: String) -> String {
        name.utf8.contains { $0 >= 0x41 && $0 <= 0x5A || $0 >= 0x80 } ? name.lowercased() : name
    }

    public static func snakeCase(_ name: String) -> String {
        if name.utf8.allSatisfy({ $0 < 0x80 }) { return asciiSnakeCase(name) }
        let characters = Array(name)
        var out = ""
        out.reserveCapacity(characters.count + 4)
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                    if previous != "_" { out.append("_") }
                }
            }
            out += character.lowercased()
        }
        return out
    }

    /// The same rules as `snakeCase` on bytes, for the ASCII names schemas almost always use.
    /// A name without capitals is already its own snake case and is returned as it is.
    private static func asciiSnakeCase(_ name: String) -> String {
        func isUpper(_ b: UInt8) -> Bool { b >= 65 && b <= 90 }
        func isLower(_ b: UInt8) -> Bool { b >= 97 && b <= 122 }
        func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }
        guard name.utf8.contains(where: isUpper) else { return name }
        var name = name
        return name.withUTF8 { bytes in
            // Each capital adds at most one underscore.
            String(unsafeUninitializedCapacity: bytes.count * 2) { out in
                var count = 0
                for index in bytes.indices {
                    let byte = bytes[index]
                    if isUpper(byte), index > 0 {
                        let previous = bytes[index - 1]
                        let nextIsLower = index + 1 < bytes.count && isLower(bytes[index + 1])
                        if isLower(previous) || isDigit(previous) || (isUpper(previous) && nextIsLower) {
                            out[count] = UInt8(ascii: "_")
                            count += 1
                        }
                    }
                    out[count] = isUpper(byte) ? byte + 32 : byte
                    count += 1
                }
                return count
            }
        }
    }

    // MARK: Relational names, each rule written once (the validator derives them into the
    // schema model, the relational model reads them there, importers recognize them)

    /// An entity's table, or an attribute's column, unless the schema names one: `scheduledOff` -> `scheduled_off`.
    public static func defaultName(of entityOrAttribute: String) -> String { snakeCase(entityOrAttribute) }

    /// The columns that hold a to-one link's key: the relationship's name and each of the
    /// target's key columns, `origin_id` (or `car_id`, `car_day` for a composite key).
    public static func foreignKeyColumns(of relationship: String, targetKey: [String]) -> [String] {
        let prefix = snakeCase(relationship)
        return targetKey.map { "\(prefix)_\($0)" }
    }

    /// A many-to-many link's join table: the owning entity's table and the relationship, `car_mechanics`.
    public static func joinTable(ownerTable: String, relationship: String) -> String { "\(ownerTable)_\(snakeCase(relationship))" }

    /// A join table's columns for one side's key: named after the entity (`car_id`), or
    /// `source_` and `target_` when an entity links to itself.
    public static func joinColumns(of entity: String, key: [String], selfLink: Bool, isTarget: Bool) -> [String] {
        let prefix = selfLink ? (isTarget ? "target" : "source") : snakeCase(entity)
        return key.map { "\(prefix)_\($0)" }
    }

    /// The property that holds a to-one relationship's key in a model: the relationship's name
    /// and `ID` (`origin` -> `originID`). The one place the rule is written: the validator
    /// claims the name, code generation declares it, diagrams show it, importers avoid it.
    public static func keyProperty(of relationship: String) -> String { relationship + "ID" }

    /// The longest identifier every dialect keeps whole (PostgreSQL truncates longer ones).
    public static let portableIdentifierLength = SQLDialectName.portableIdentifierBytes

    /// Why a `table` or `column` override cannot be a database name, or nil when it can. Any
    /// printable text may name a table or column (spaces, quotes and punctuation are quoted in
    /// SQL), but not control characters or line separators, which could end a SQL comment or a
    /// line of generated code, nor leading or trailing whitespace, which no reader would notice.
    public static func problemWithDatabaseName(_ name: String) -> String? {
        if name.isEmpty { return "is empty" }
        for scalar in name.unicodeScalars where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029 {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            let what =
                switch scalar {
                case "\n": "a line break"
                case "\r": "a carriage return"
                case "\t": "a tab"
                case "\u{2028}": "a line separator"
                case "\u{2029}": "a paragraph separator"
                default: "a control character"
                }
            return "contains \(code) (\(what))"
        }
        if let first = name.unicodeScalars.first, first.properties.isWhitespace { return "starts with whitespace" }
        if let last = name.unicodeScalars.last, last.properties.isWhitespace { return "ends with whitespace" }
        return nil
    }

    /// SQLite reserves table names starting with this prefix for itself.
    public static let reservedTablePrefix = "sqlite_"
}
