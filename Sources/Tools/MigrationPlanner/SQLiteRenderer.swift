import Foundation
import RelationalModel
import SQLDialects
import SchemaMetadata

/// SQLite's SQL for every step: ALTER TABLE where SQLite 3.35 can, sqlite.org's rebuild
/// procedure where it cannot.
public struct SQLiteRenderer: MigrationRenderer {
    public init() {}

    public var dialect: any SQLDialect { Self.dialect }
    static let dialect = SQLiteDialect()

    /// ALTER TABLE ADD COLUMN takes no key, and a NOT NULL column only with a constant non-null default.
    /// SQLite's column types hold neither widths nor allowed values.
    public func typeName(_ column: ColumnSnapshot) -> String { dialect.columnType(column.kind) }

    /// The storage kind is written too (a boolean's CHECK, say), so a kind change rebuilds
    /// even where the column type stays.
    public func needsChange(from: ColumnSnapshot, to: ColumnSnapshot) -> Bool {
        Self.type(of: from.kind) != Self.type(of: to.kind) || from.kind != to.kind || from.isNullable != to.isNullable
            || from.defaultValue != to.defaultValue || from.isAutoIncrement != to.isAutoIncrement
    }

    static func temporaryName(_ table: String) -> String { MigrationPlanner.rebuildName(table) }

    // MARK: - Types and values

    static func type(of kind: StorageKind) -> String { dialect.columnType(kind) }
    static func typeSQL(of kind: StorageKind) -> SQL { "\(type: kind, in: dialect)" }

    /// Dates are kept as UTC ISO 8601 text with milliseconds, which sorts by time.
    static let nowExpression: SQL = "(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"
    /// Days are `YYYY-MM-DD` text; SQLite's CURRENT_DATE is the day in UTC.
    static let todayExpression: SQL = "CURRENT_DATE"
    /// A random version-4 UUID in lowercase canonical form.
    static let uuidExpression: SQL =
        "(lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))))"

    /// A default or backfill value as SQL; `now` is the day alone in a day column.
    static func expression(_ value: ColumnDefault, kind: StorageKind) -> SQL {
        value == .now && kind == .day ? todayExpression : expression(value)
    }

    static func expression(_ value: ColumnDefault) -> SQL {
        switch value {
        case .null: return "NULL"
        case .integer(let number): return SQL(verbatim: String(number))
        case .real(let number):
            let text = String(number)
            return SQL(verbatim: text.contains(".") || text.contains("e") ? text : text + ".0")
        case .text(let text): return .literal(text)
        // The schema parser admits only hex digits here.
        case .blob(let hex): return SQL(verbatim: "X'\(hex)'")
        case .now: return nowExpression
        case .uuid: return uuidExpression
        }
    }

    /// A default or backfill value as SQLite writes it.
    public static func literal(_ value: ColumnDefault, kind: StorageKind) -> String { expression(value, kind: kind).text(for: dialect) }

    public static func literal(_ value: ColumnDefault) -> String { expression(value).text(for: dialect) }

    // MARK: - Statements

    static func columnDefinition(_ column: ColumnSnapshot, inlineKey: Bool) -> SQL {
        var definition: SQL = "\(identifier: column.name) \(typeSQL(of: column.kind))"
        if inlineKey { definition += " PRIMARY KEY" }
        if !column.isNullable { definition += " NOT NULL" }
        if let value = column.defaultValue { definition += " DEFAULT \(expression(value, kind: column.kind))" }
        return definition
    }

    /// CREATE TABLE; the implicit integer key is SQLite's rowid alias.
    static func createTable(_ table: TableSnapshot, name: String? = nil) -> SQL {
        let inlineKey = table.primaryKey.count == 1 && table.column(named: table.primaryKey[0])?.isAutoIncrement == true
        var lines: [SQL] = table.columns.map { "    \(columnDefinition($0, inlineKey: inlineKey && $0.name == table.primaryKey[0]))" }
        if !inlineKey, !table.primaryKey.isEmpty {
            lines.append("    PRIMARY KEY (\(SQL.identifiers(table.primaryKey)))")
        }
        for key in table.foreignKeys {
            lines.append(
                "    FOREIGN KEY (\(SQL.identifiers(key.columns))) REFERENCES \(identifier: key.table) (\(SQL.identifiers(key.referencedColumns))) ON DELETE \(SQL(verbatim: key.onDelete.rawValue))"
            )
        }
        return "CREATE TABLE \(identifier: name ?? table.name) (\n\(SQL.list(lines, separator: ",\n"))\n) STRICT;"
    }

    static func createIndex(_ index: IndexSnapshot, on table: String) -> [SQL] {
        guard index.isFullText else {
            return ["CREATE \(SQL(verbatim: index.isUnique ? "UNIQUE " : ""))INDEX \(identifier: index.name) ON \(identifier: table) (\(SQL.identifiers(index.columns)));"]
        }
        // An external-content FTS5 table kept in step with the table by triggers.
        let fts = SQL.identifier(index.name)
        let columns = SQL.identifiers(index.columns)
        let json = Set(index.jsonColumns ?? [])
        guard json.isEmpty else { return fullTextOfStrings(index, on: table, json: json) }
        let new = SQL.list(index.columns.map { "new.\(identifier: $0)" })
        let old = SQL.list(index.columns.map { "old.\(identifier: $0)" })
        return [
            "CREATE VIRTUAL TABLE \(fts) USING fts5(\(columns), content=\(literal: table), content_rowid='rowid');",
            "CREATE TRIGGER \(identifier: index.name + "_insert") AFTER INSERT ON \(identifier: table) BEGIN INSERT INTO \(fts) (rowid, \(columns)) VALUES (new.rowid, \(new)); END;",
            "CREATE TRIGGER \(identifier: index.name + "_delete") AFTER DELETE ON \(identifier: table) BEGIN INSERT INTO \(fts) (\(fts), rowid, \(columns)) VALUES ('delete', old.rowid, \(old)); END;",
            "CREATE TRIGGER \(identifier: index.name + "_update") AFTER UPDATE ON \(identifier: table) BEGIN INSERT INTO \(fts) (\(fts), rowid, \(columns)) VALUES ('delete', old.rowid, \(old)); INSERT INTO \(fts) (rowid, \(columns)) VALUES (new.rowid, \(new)); END;",
            "INSERT INTO \(fts) (\(fts)) VALUES ('rebuild');",
        ]
    }

    /// A full-text index over a JSON array of strings (`[String]`) holds its own copy of the
    /// strings, separated by spaces, so matches and snippets are words rather than JSON. Its
    /// content cannot come from the table through a view: FTS5 reads content without virtual
    /// tables, and `json_each` is one; the triggers may use it.
    static func fullTextOfStrings(_ index: IndexSnapshot, on table: String, json: Set<String>) -> [SQL] {
        let fts = SQL.identifier(index.name)
        let columns = SQL.identifiers(index.columns)
        func values(of row: SQL) -> SQL {
            SQL.list(
                index.columns.map { column in
                    json.contains(column) ? "(SELECT group_concat(value, ' ') FROM json_each(\(row)\(identifier: column)))" : "\(row)\(identifier: column)"
                })
        }
        let insert: SQL = "INSERT INTO \(fts) (rowid, \(columns)) VALUES (new.rowid, \(values(of: "new.")));"
        let delete: SQL = "DELETE FROM \(fts) WHERE rowid = old.rowid;"
        return [
            "CREATE VIRTUAL TABLE \(fts) USING fts5(\(columns));",
            "CREATE TRIGGER \(identifier: index.name + "_insert") AFTER INSERT ON \(identifier: table) BEGIN \(insert) END;",
            "CREATE TRIGGER \(identifier: index.name + "_delete") AFTER DELETE ON \(identifier: table) BEGIN \(delete) END;",
            "CREATE TRIGGER \(identifier: index.name + "_update") AFTER UPDATE ON \(identifier: table) BEGIN \(delete) \(insert) END;",
            "INSERT INTO \(fts) (rowid, \(columns)) SELECT rowid, \(values(of: "")) FROM \(identifier: table);",
        ]
    }

    static func dropIndex(_ index: IndexSnapshot) -> [SQL] {
        guard index.isFullText else { return ["DROP INDEX IF EXISTS \(identifier: index.name);"] }
        return ["_insert", "_delete", "_update"].map { "DROP TRIGGER IF EXISTS \(identifier: index.name + $0);" }
            + ["DROP TABLE IF EXISTS \(identifier: index.name);"]
    }

    /// The SQL of one step.
    public func statements(for step: MigrationStep) -> [SQL] {
        switch step {
        case .createTable(let table):
            return [Self.createTable(table)]
        case .dropTable(let table):
            return [DDL.dropTable(table.name)]
        case .renameTable(let from, let to):
            return [DDL.renameTable(from, to: to)]
        case .addColumn(let table, let column):
            return [DDL.addColumn(Self.columnDefinition(column, inlineKey: false), to: table)]
        case .dropColumn(let table, let column):
            return [DDL.dropColumn(column.name, from: table)]
        case .renameColumn(let table, let from, let to):
            return [DDL.renameColumn(from, to: to, in: table)]
        case .createIndex(let table, let index):
            return Self.createIndex(index, on: table)
        case .dropIndex(_, let index):
            return Self.dropIndex(index)
        case .rebuildTable(let change):
            return rebuild(change)
        case .fillTable(let fill):
            return [fill.insertStatement]
        case .unfillTable(let fill):
            return [fill.updateStatement]
        case .renameConstraints, .comment, .grant:
            // SQLite keeps no names for the constraints it writes here, and no comments.
            return []
        case .alterColumn, .addForeignKey, .dropForeignKey, .dropPrimaryKey, .addPrimaryKey:
            // The planner rebuilds instead: SQLite declares no capability for these.
            return ["SELECT \(literal: "schemagen cannot express \(step.summary(for: self)) in SQLite") FROM no_such_table_stops_the_migration;"]
        }
    }

    /// sqlite.org's procedure for changes ALTER TABLE cannot make ("Making Other Kinds Of Table
    /// Schema Changes"); steps 1, 2, 10, 11 and 12 (foreign keys off, the transaction, the
    /// foreign-key check) belong to the migrator, as the file header says.
    func rebuild(_ change: TableChange) -> [SQL] {
        let temporary = Self.temporaryName(change.to.name)
        // Step 4: create the new table under a temporary name.
        var statements = [Self.createTable(change.to, name: temporary)]
        // Step 5: copy every row, converting values.
        var names: [String] = []
        var expressions: [SQL] = []
        for column in change.to.columns {
            guard let expression = copyExpression(for: column, change: change) else { continue }
            names.append(column.name)
            expressions.append(expression)
        }
        statements.append("INSERT INTO \(identifier: temporary) (\(SQL.identifiers(names))) SELECT \(SQL.list(expressions)) FROM \(identifier: change.from.name);")
        // Step 6: drop the old table. Step 7: give the new one its name.
        statements.append(DDL.dropTable(change.from.name))
        statements.append(DDL.renameTable(temporary, to: change.to.name))
        // Step 8 (indexes and triggers) follows as separate steps of the plan.
        return statements
    }

    /// The value a rebuilt column gets from the old row, or nil to let its default apply.
    func copyExpression(for column: ColumnSnapshot, change: TableChange) -> SQL? {
        guard let sourceName = change.columnSources[column.name], let source = change.from.column(named: sourceName) else {
            // A new column: its default, computed per row where it is not constant, else its
            // backfill for the rows that exist.
            return column.defaultValue.map { Self.expression($0, kind: column.kind) } ?? backfillExpression(column)
        }
        var expression = SQL.identifier(source.name)
        if source.kind != column.kind, Self.type(of: source.kind) != Self.type(of: column.kind) {
            expression = "CAST(\(expression) AS \(Self.typeSQL(of: column.kind)))"
        } else if source.kind == .date, column.kind == .day {
            // Stored dates are UTC text: the day is their first ten characters.
            expression = "substr(\(expression), 1, 10)"
        } else if source.kind == .day, column.kind == .date {
            expression = "(\(expression) || 'T00:00:00.000Z')"
        }
        if source.isNullable, !column.isNullable,
            let filler = backfillExpression(column) ?? column.defaultValue.flatMap({ $0 == .null ? nil : Self.expression($0, kind: column.kind) })
        {
            expression = "COALESCE(\(expression), \(filler))"
        }
        return expression
    }

    /// A column's backfill as SQLite SQL, evaluated against the old table's row. A SQL
    /// backfill is the schema author's own expression, taken as written.
    func backfillExpression(_ column: ColumnSnapshot) -> SQL? {
        switch column.backfill {
        case .value(let value)?: Self.expression(value, kind: column.kind)
        case .sql(let expressions)?: expressions[dialect.name].map { "(\(SQL(verbatim: $0)))" }
        case nil: nil
        }
    }
}
