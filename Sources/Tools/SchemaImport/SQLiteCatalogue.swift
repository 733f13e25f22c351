import SQLiteKit

/// What SQLite's own catalogue says about a database: `sqlite_schema`, `table_list`,
/// `table_xinfo`, `index_list`/`index_xinfo` and `foreign_key_list`, read as they are. The
/// importer interprets it; round-trip checks compare two of them.
public struct SQLiteCatalogue: Sendable, Equatable {
    public struct Column: Sendable, Equatable {
        public var name: String
        /// As declared: `NVARCHAR(120)`, or empty.
        public var declaredType: String
        public var isNotNull: Bool
        /// The default's SQL text, as written: `'abc'`, `0`, `CURRENT_TIMESTAMP`.
        public var defaultSQL: String?
        /// Position in the primary key, from 1; 0 when not part of it.
        public var keyPosition: Int
        /// 0 ordinary, 1 hidden (virtual tables), 2 generated virtual, 3 generated stored.
        public var hidden: Int
    }

    public struct Index: Sendable, Equatable {
        public var name: String
        public var isUnique: Bool
        /// `c` made by CREATE INDEX, `u` by a UNIQUE constraint, `pk` by the primary key.
        public var origin: String
        public var isPartial: Bool
        /// Key columns in order; nil for an expression.
        public var columns: [String?]
        public var isDescending: [Bool]
        public var collations: [String]
        public var sql: String?
    }

    public struct ForeignKey: Sendable, Equatable {
        public var id: Int
        public var columns: [String]
        public var table: String
        /// Empty when the statement wrote `REFERENCES t` without columns (the target's key).
        public var referencedColumns: [String]
        public var onUpdate: String
        public var onDelete: String
    }

    public struct Table: Sendable, Equatable {
        public var name: String
        /// `table`, `virtual` or `shadow`.
        public var kind: String
        public var isWithoutRowID: Bool
        public var isStrict: Bool
        public var sql: String?
        public var columns: [Column]
        public var indexes: [Index]
        public var foreignKeys: [ForeignKey]

        public func column(named name: String) -> Column? {
            columns.first { $0.name.lowercased() == name.lowercased() }
        }
        /// Key column names in key order.
        public var primaryKey: [String] {
            columns.filter { $0.keyPosition > 0 }.sorted { $0.keyPosition < $1.keyPosition }.map(\.name)
        }
    }

    /// Views and triggers: kept only to be reported.
    public struct OtherObject: Sendable, Equatable {
        public var type: String
        public var name: String
        public var table: String
        public var sql: String?
    }

    public var tables: [Table]
    public var others: [OtherObject]

    public func table(named name: String) -> Table? { tables.first { $0.name.lowercased() == name.lowercased() } }

    /// Reads the `main` database of a connection. Tables come in `sqlite_schema` order.
    public static func read(_ connection: SQLiteConnection) throws(SQLiteError) -> SQLiteCatalogue {
        var kinds: [String: (kind: String, withoutRowID: Bool, strict: Bool)] = [:]
        for row in try connection.query("SELECT name, type, wr, strict FROM pragma_table_list WHERE schema = 'main'") {
            kinds[text(row[0])] = (text(row[1]), integer(row[2]) != 0, integer(row[3]) != 0)
        }
        var tables: [Table] = []
        var others: [OtherObject] = []
        let objects = try connection.query("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid")
        for row in objects {
            let type = text(row[0]), name = text(row[1]), sql = optionalText(row[3])
            switch type {
            case "table":
                let kind = kinds[name] ?? (sql?.uppercased().hasPrefix("CREATE VIRTUAL") == true ? ("virtual", false, false) : ("table", false, false))
                tables.append(
                    Table(
                        name: name, kind: kind.kind, isWithoutRowID: kind.withoutRowID, isStrict: kind.strict, sql: sql,
                        columns: try columns(of: name, connection), indexes: [], foreignKeys: []))
            case "view", "trigger":
                others.append(OtherObject(type: type, name: name, table: text(row[2]), sql: sql))
            default:
                break
            }
        }
        let indexSQL = Dictionary(objects.filter { text($0[0]) == "index" }.map { (text($0[1]), optionalText($0[3])) }, uniquingKeysWith: { first, _ in first })
        for position in tables.indices where tables[position].kind == "table" {
            let name = tables[position].name
            tables[position].indexes = try indexes(of: name, sql: indexSQL, connection)
            tables[position].foreignKeys = try foreignKeys(of: name, connection)
        }
        return SQLiteCatalogue(tables: tables, others: others)
    }

    private static func columns(of table: String, _ connection: SQLiteConnection) throws(SQLiteError) -> [Column] {
        try connection.query("SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid", [.text(table)]).map { row in
            Column(
                name: text(row[0]), declaredType: text(row[1]), isNotNull: integer(row[2]) != 0,
                defaultSQL: optionalText(row[3]), keyPosition: Int(integer(row[4])), hidden: Int(integer(row[5])))
        }
    }

    private static func indexes(of table: String, sql: [String: String?], _ connection: SQLiteConnection) throws(SQLiteError) -> [Index] {
        var result: [Index] = []
        // index_list is newest first; the catalogue keeps creation order.
        for row in try connection.query("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?) ORDER BY seq DESC", [.text(table)]) {
            let name = text(row[0])
            var columns: [String?] = [], descending: [Bool] = [], collations: [String] = []
            for column in try connection.query("SELECT cid, name, \"desc\", coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno", [.text(name)]) {
                // cid -2 is an expression; -1 the rowid.
                columns.append(integer(column[0]) == -2 ? nil : optionalText(column[1]) ?? "rowid")
                descending.append(integer(column[2]) != 0)
                collations.append(text(column[3]))
            }
            result.append(
                Index(
                    name: name, isUnique: integer(row[1]) != 0, origin: text(row[2]), isPartial: integer(row[3]) != 0,
                    columns: columns, isDescending: descending, collations: collations, sql: sql[name] ?? nil))
        }
        return result
    }

    private static func foreignKeys(of table: String, _ connection: SQLiteConnection) throws(SQLiteError) -> [ForeignKey] {
        var result: [ForeignKey] = []
        for row in try connection.query("SELECT id, seq, \"table\", \"from\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq", [.text(table)]) {
            let id = Int(integer(row[0]))
            let to = optionalText(row[4])
            if let last = result.indices.last, result[last].id == id {
                result[last].columns.append(text(row[3]))
                if let to { result[last].referencedColumns.append(to) }
            } else {
                result.append(
                    ForeignKey(
                        id: id, columns: [text(row[3])], table: text(row[2]), referencedColumns: to.map { [$0] } ?? [],
                        onUpdate: text(row[5]), onDelete: text(row[6])))
            }
        }
        // foreign_key_list numbers keys from the last declared; the catalogue keeps declaration order.
        return result.sorted { $0.id > $1.id }
    }

    private static func text(_ value: SQLiteValue) -> String { optionalText(value) ?? "" }

    private static func optionalText(_ value: SQLiteValue) -> String? {
        switch value {
        case .text(let text): text
        case .integer(let number): String(number)
        case .real(let number): String(number)
        case .blob(let bytes): String(decoding: bytes, as: UTF8.self)
        case .null: nil
        }
    }

    private static func integer(_ value: SQLiteValue) -> Int64 {
        if case .integer(let number) = value { return number }
        return 0
    }
}
