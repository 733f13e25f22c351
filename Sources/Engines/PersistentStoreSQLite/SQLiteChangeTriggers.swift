import JSONDocument
import PersistentStoreCore
import SchemaMetadata

/// Records changed rows with temporary triggers where SQLite lacks the pre-update hook (Apple's
/// system library, say). Updates and deletes are caught before they happen, as the hook catches
/// them, so a delete comes before the foreign-key actions it causes. Each trigger writes the
/// row's image (every column as an SQL literal, reals with 17 digits) to a temporary table, in
/// the same transaction, so rollbacks and savepoints undo it too; at commit the store reads the
/// images as if the hook had seen them. Temporary triggers belong to this connection: other
/// programs' writes are not recorded, as with the hook.
extension SQLiteStoreDatabase: ChangeTriggers {
    static let changedRowsTable = "schemagen_changed_rows"

    func installChangeTriggers(_ tables: [(table: String, columns: [String])]) throws(DatabaseFailure) -> Bool {
        let table = Self.changedRowsTable
        var sql = "CREATE TEMP TABLE IF NOT EXISTS \(table) (seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL, op TEXT NOT NULL, old_rowid INTEGER, new_rowid INTEGER, old_row TEXT, new_row TEXT);\n"
        for (name, columns) in tables {
            func image(_ row: String) -> String {
                "json_array("
                    + columns.map { column in
                        let value = "\(row).\(dialect.quote(column))"
                        return "CASE typeof(\(value)) WHEN 'real' THEN printf('%!.17g', \(value)) ELSE quote(\(value)) END"
                    }.joined(separator: ", ") + ")"
            }
            let quoted = dialect.quote(name), literal = dialect.literal(name)
            let trigger = { (event: String) in self.dialect.quote("schemagen_history_\(name)_\(event)") }
            sql += """
                CREATE TEMP TRIGGER IF NOT EXISTS \(trigger("insert")) AFTER INSERT ON main.\(quoted) BEGIN
                  INSERT INTO \(table) (tbl, op, new_rowid, new_row) VALUES (\(literal), 'insert', NEW.rowid, \(image("NEW")));
                END;
                CREATE TEMP TRIGGER IF NOT EXISTS \(trigger("update")) BEFORE UPDATE ON main.\(quoted) BEGIN
                  INSERT INTO \(table) (tbl, op, old_rowid, new_rowid, old_row, new_row) VALUES (\(literal), 'update', OLD.rowid, NEW.rowid, \(image("OLD")), \(image("NEW")));
                END;
                CREATE TEMP TRIGGER IF NOT EXISTS \(trigger("delete")) BEFORE DELETE ON main.\(quoted) BEGIN
                  INSERT INTO \(table) (tbl, op, old_rowid, old_row) VALUES (\(literal), 'delete', OLD.rowid, \(image("OLD")));
                END;

                """
        }
        try run(sql)
        return true
    }

    func drainChangedRows(_ body: (String, RowImage) -> Void) throws(DatabaseFailure) {
        let rows = try rows("SELECT tbl, op, old_rowid, new_rowid, old_row, new_row FROM \(Self.changedRowsTable) ORDER BY seq", [])
        for row in rows {
            guard case .text(let name) = row[0], case .text(let op) = row[1] else { continue }
            let operation: RowChangeOperation = op == "insert" ? .insert : op == "delete" ? .delete : .update
            body(
                name,
                RowImage(
                    operation: operation, oldRowID: Self.integer(row[2]), newRowID: Self.integer(row[3]),
                    oldValues: Self.literals(row[4]).map(SQLiteLiteral.value), newValues: Self.literals(row[5]).map(SQLiteLiteral.value)))
        }
        try discardChangedRows()
    }

    func discardChangedRows() throws(DatabaseFailure) { try run("DELETE FROM \(Self.changedRowsTable);") }

    private static func integer(_ value: StoredValue) -> Int64 {
        if case .integer(let number) = value { return number }
        return 0
    }

    /// The SQL literals of a row image, in column order.
    private static func literals(_ value: StoredValue) -> [String] {
        guard case .text(let text) = value, let node = try? JSONParser.parse(Array(text.utf8)), case .array(let items) = node.value else { return [] }
        return items.map { $0.string ?? "NULL" }
    }
}

/// SQLite's SQL literals, as the change triggers write them.
enum SQLiteLiteral {
    /// An SQL literal as `quote()` and `printf('%!.17g')` write it.
    static func value(_ literal: String) -> StoredValue {
        if literal == "NULL" { return .null }
        if literal.hasPrefix("'") {
            return .text(String(literal.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'"))
        }
        if literal.hasPrefix("X'") || literal.hasPrefix("x'") {
            let hex = Array(literal.utf8.dropFirst(2).dropLast())
            var bytes: [UInt8] = []
            bytes.reserveCapacity(hex.count / 2)
            var index = 0
            while index + 1 < hex.count {
                bytes.append(UInt8(nibble(hex[index]) << 4 | nibble(hex[index + 1])))
                index += 2
            }
            return .blob(bytes)
        }
        if let integer = Int64(literal) { return .integer(integer) }
        switch literal {
        case "Inf", "+Inf": return .real(.infinity)
        case "-Inf": return .real(-.infinity)
        default: return Double(literal).map(StoredValue.real) ?? .text(literal)
        }
    }

    private static func nibble(_ character: UInt8) -> Int {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(character - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(character - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(character - UInt8(ascii: "A") + 10)
        default: 0
        }
    }
}
