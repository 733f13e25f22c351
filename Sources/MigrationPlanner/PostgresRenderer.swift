import Foundation
import MigrationFiles
import RelationalModel
import SchemaMetadata
import SQLDialects

/// PostgreSQL's SQL for every step, in place: `ALTER COLUMN ... TYPE ... USING`, `SET/DROP NOT
/// NULL`, `SET/DROP DEFAULT`, renames, and named constraints added and dropped. Nothing is
/// rebuilt. Enums are text (or integer) columns with a CHECK constraint rather than native
/// enum types: adding a value to a native enum (`ALTER TYPE ... ADD VALUE`) cannot be used in the
/// transaction that adds it, and removing one is not possible at all. `searchable` is a
/// generated `tsvector` column with a GIN index. Constraint and index names longer than 63
/// bytes are shortened deterministically (a prefix and a hash), never left to truncation.
public struct PostgresRenderer: MigrationRenderer {
    public init() {}

    public var dialect: any SQLDialect { Self.dialect }
    static let dialect = PostgresDialect()

    public var namesConstraints: Bool { true }

    public func canAddColumn(_ column: ColumnSnapshot, to table: TableSnapshot) -> Bool { true }
    public func canDropColumn(_ column: ColumnSnapshot, from table: TableSnapshot) -> Bool { true }

    public func needsChange(from: ColumnSnapshot, to: ColumnSnapshot) -> Bool {
        Self.type(of: from) != Self.type(of: to) || from.isNullable != to.isNullable || from.defaultValue != to.defaultValue
            || from.enumValues != to.enumValues || from.isAutoIncrement != to.isAutoIncrement
    }

    public func typeName(_ column: ColumnSnapshot) -> String { Self.type(of: column) }

    public func needsForeignKeysOff(_ steps: [MigrationStep]) -> Bool { false }
    public func runsOutsideTransaction(_ steps: [MigrationStep]) -> Bool { false }
    public func rowCopies(_ steps: [MigrationStep]) -> [(from: String, to: String)] { [] }

    // MARK: - Names

    static func quote(_ identifier: String) -> String { dialect.quote(identifier) }

    /// A derived name PostgreSQL keeps whole: over 63 bytes, its first 54 bytes (whole
    /// characters) and 8 hex digits of its SHA-256.
    public static func identifier(_ name: String) -> String {
        guard name.utf8.count > 63 else { return name }
        var prefix = ""
        for character in name {
            guard prefix.utf8.count + String(character).utf8.count <= 54 else { break }
            prefix.append(character)
        }
        return prefix + "_" + String(SHA256.hex(name).prefix(8))
    }

    static func primaryKeyName(_ table: String) -> String { identifier("\(table)_pkey") }
    static func foreignKeyName(_ table: String, _ key: ForeignKeySnapshot) -> String { identifier("\(table)_\(key.columns.joined(separator: "_"))_fkey") }
    static func checkName(_ table: String, _ column: String) -> String { identifier("\(table)_\(column)_check") }
    static func indexName(_ index: IndexSnapshot) -> String { identifier(index.name) }
    /// A full-text index is a generated column of this name and a GIN index named after it.
    static func searchColumn(_ index: IndexSnapshot) -> String { identifier(index.name) }
    static func searchIndex(_ index: IndexSnapshot) -> String { identifier(index.name + "_gin") }

    // MARK: - Types and literals

    static func type(of column: ColumnSnapshot) -> String {
        if column.kind == .decimal, let precision = column.precision {
            return "numeric(\(precision)" + (column.scale.map { ",\($0)" } ?? "") + ")"
        }
        return dialect.columnType(column.kind, bits: column.bits)
    }

    static func literal(_ value: ColumnDefault, kind: StorageKind) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let number): return kind == .boolean ? (number != 0 ? "true" : "false") : String(number)
        case .real(let number):
            let text = String(number)
            return text.contains(".") || text.contains("e") || text.contains("n") ? text : text + ".0"
        case .text(let text): return dialect.literal(text)
        case .blob(let hex): return dialect.literal("\\x" + hex)
        case .now: return kind == .date ? "now()" : "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        case .uuid: return kind == .uuid ? "gen_random_uuid()" : "gen_random_uuid()::text"
        }
    }

    /// A column's backfill as PostgreSQL SQL, evaluated for each existing row.
    static func backfillExpression(_ column: ColumnSnapshot) -> String? {
        switch column.backfill {
        case .value(let value)?: literal(value, kind: column.kind)
        case .sql(let expressions)?: expressions[dialect.name].map { "(\($0))" }
        case nil: nil
        }
    }

    static func check(_ table: String, _ column: ColumnSnapshot) -> String? {
        guard let values = column.enumValues, !values.isEmpty else { return nil }
        let list = values.map { column.kind == .integer ? $0 : dialect.literal($0) }.joined(separator: ", ")
        return "CONSTRAINT \(quote(checkName(table, column.name))) CHECK (\(quote(column.name)) IN (\(list)))"
    }

    static func columnDefinition(_ column: ColumnSnapshot) -> String {
        var text = "\(quote(column.name)) \(type(of: column))"
        if column.isAutoIncrement { return text + " GENERATED BY DEFAULT AS IDENTITY" }
        if !column.isNullable { text += " NOT NULL" }
        if let value = column.defaultValue { text += " DEFAULT \(literal(value, kind: column.kind))" }
        return text
    }

    static func foreignKey(_ table: String, _ key: ForeignKeySnapshot) -> String {
        "CONSTRAINT \(quote(foreignKeyName(table, key))) FOREIGN KEY (\(key.columns.map(quote).joined(separator: ", "))) REFERENCES \(quote(key.table)) (\(key.referencedColumns.map(quote).joined(separator: ", "))) ON DELETE \(key.onDelete.rawValue)"
    }

    // MARK: - Statements

    public func sql(for step: MigrationStep) -> [String] {
        let q = Self.quote
        switch step {
        case .createTable(let table):
            var lines = table.columns.map { "    " + Self.columnDefinition($0) }
            if !table.primaryKey.isEmpty {
                lines.append("    CONSTRAINT \(q(Self.primaryKeyName(table.name))) PRIMARY KEY (\(table.primaryKey.map(q).joined(separator: ", ")))")
            }
            lines += table.columns.compactMap { Self.check(table.name, $0).map { "    " + $0 } }
            lines += table.foreignKeys.map { "    " + Self.foreignKey(table.name, $0) }
            return ["CREATE TABLE \(q(table.name)) (\n\(lines.joined(separator: ",\n"))\n);"]
        case .dropTable(let table):
            return ["DROP TABLE \(q(table.name));"]
        case .renameTable(let from, let to):
            return ["ALTER TABLE \(q(from)) RENAME TO \(q(to));"]
        case .addColumn(let table, let column) where !column.isNullable && column.defaultValue == nil && !column.isAutoIncrement:
            // Added without a value for existing rows: nullable first, the rows backfilled, then required.
            var nullable = column
            nullable.isNullable = true
            var statements = ["ALTER TABLE \(q(table)) ADD COLUMN \(Self.columnDefinition(nullable));"]
            if let filler = Self.backfillExpression(column) { statements.append("UPDATE \(q(table)) SET \(q(column.name)) = \(filler);") }
            statements.append("ALTER TABLE \(q(table)) ALTER COLUMN \(q(column.name)) SET NOT NULL;")
            if let check = Self.check(table, column) { statements.append("ALTER TABLE \(q(table)) ADD \(check);") }
            return statements
        case .addColumn(let table, let column):
            var statements = ["ALTER TABLE \(q(table)) ADD COLUMN \(Self.columnDefinition(column));"]
            if let check = Self.check(table, column) { statements.append("ALTER TABLE \(q(table)) ADD \(check);") }
            return statements
        case .dropColumn(let table, let column):
            return ["ALTER TABLE \(q(table)) DROP COLUMN \(q(column.name));"]
        case .renameColumn(let table, let from, let to):
            return ["ALTER TABLE \(q(table)) RENAME COLUMN \(q(from)) TO \(q(to));"]
        case .createIndex(let table, let index):
            // Unique values are a UNIQUE constraint, not a bare unique index: information_schema
            // lists it, and ON CONFLICT ON CONSTRAINT can name it.
            if index.isUnique, !index.isFullText {
                return ["ALTER TABLE \(q(table)) ADD CONSTRAINT \(q(Self.indexName(index))) UNIQUE (\(index.columns.map(q).joined(separator: ", ")));"]
            }
            guard index.isFullText else {
                return ["CREATE INDEX \(q(Self.indexName(index))) ON \(q(table)) (\(index.columns.map(q).joined(separator: ", ")));"]
            }
            // Text columns make one document; a JSON array of strings adds its strings.
            let json = Set(index.jsonColumns ?? [])
            let texts = index.columns.filter { !json.contains($0) }
            var parts = texts.isEmpty ? [] : ["to_tsvector('simple', \(texts.map { "coalesce(\(q($0)), '')" }.joined(separator: " || ' ' || ")))"]
            parts += index.columns.filter(json.contains).map { "jsonb_to_tsvector('simple', coalesce(\(q($0)), '[]'::jsonb), '[\"string\"]')" }
            let document = parts.joined(separator: " || ")
            return [
                "ALTER TABLE \(q(table)) ADD COLUMN \(q(Self.searchColumn(index))) tsvector GENERATED ALWAYS AS (\(document)) STORED;",
                "CREATE INDEX \(q(Self.searchIndex(index))) ON \(q(table)) USING GIN (\(q(Self.searchColumn(index))));",
            ]
        case .dropIndex(let table, let index):
            // Migrations planned before unique values were constraints made bare unique indexes:
            // the constraint goes if there is one, else the index.
            if index.isUnique, !index.isFullText {
                return ["ALTER TABLE \(q(table)) DROP CONSTRAINT IF EXISTS \(q(Self.indexName(index)));", "DROP INDEX IF EXISTS \(q(Self.indexName(index)));"]
            }
            guard index.isFullText else { return ["DROP INDEX IF EXISTS \(q(Self.indexName(index)));"] }
            return ["DROP INDEX IF EXISTS \(q(Self.searchIndex(index)));", "ALTER TABLE \(q(table)) DROP COLUMN IF EXISTS \(q(Self.searchColumn(index)));"]
        case .alterColumn(let table, let from, let to):
            return alterColumn(table, from, to)
        case .addForeignKey(let table, let key):
            return ["ALTER TABLE \(q(table)) ADD \(Self.foreignKey(table, key));"]
        case .dropForeignKey(let table, let key):
            return ["ALTER TABLE \(q(table)) DROP CONSTRAINT \(q(Self.foreignKeyName(table, key)));"]
        case .dropPrimaryKey(let table, _):
            // IF EXISTS: dropping a key column in the same migration drops the key with it.
            return ["ALTER TABLE \(q(table)) DROP CONSTRAINT IF EXISTS \(q(Self.primaryKeyName(table)));"]
        case .addPrimaryKey(let table, let columns):
            return ["ALTER TABLE \(q(table)) ADD CONSTRAINT \(q(Self.primaryKeyName(table))) PRIMARY KEY (\(columns.map(q).joined(separator: ", ")));"]
        case .renameConstraints(let table, let from, let to, let sources):
            return renameConstraints(table, from, to, sources)
        case .fillTable(let fill):
            return [fill.insertSQL(q)]
        case .unfillTable(let fill):
            return [fill.updateSQL(q)]
        case .comment(let table, let column, _, let text):
            let target = column.map { "COLUMN \(q(table)).\(q($0))" } ?? "TABLE \(q(table))"
            return ["COMMENT ON \(target) IS \(text.map(Self.dialect.literal) ?? "NULL");"]
        case .rebuildTable(let change):
            // Never planned for PostgreSQL, which alters in place; kept exact should it be.
            return ["CREATE TABLE \(q(change.to.name + "_rebuild_unsupported")) ();"]
        }
    }

    /// Type first (with a USING conversion), then the default, nullability (existing nulls
    /// filled from the new default first) and allowed values.
    func alterColumn(_ table: String, _ from: ColumnSnapshot, _ to: ColumnSnapshot) -> [String] {
        let q = Self.quote
        let alter = "ALTER TABLE \(q(table)) ALTER COLUMN \(q(to.name))"
        var statements: [String] = []
        if from.enumValues != nil, from.enumValues != to.enumValues {
            statements.append("ALTER TABLE \(q(table)) DROP CONSTRAINT IF EXISTS \(q(Self.checkName(table, to.name)));")
        }
        let typeChanges = Self.type(of: from) != Self.type(of: to)
        if typeChanges || from.defaultValue != to.defaultValue, from.defaultValue != nil {
            statements.append("\(alter) DROP DEFAULT;")
        }
        if typeChanges {
            statements.append("\(alter) TYPE \(Self.type(of: to)) USING \(Self.conversion(q(to.name), from: from, to: to));")
        }
        if let value = to.defaultValue, typeChanges || from.defaultValue != to.defaultValue {
            statements.append("\(alter) SET DEFAULT \(Self.literal(value, kind: to.kind));")
        }
        if from.isNullable != to.isNullable {
            if !to.isNullable, let filler = Self.backfillExpression(to) ?? to.defaultValue.flatMap({ $0 == .null ? nil : Self.literal($0, kind: to.kind) }) {
                statements.append("UPDATE \(q(table)) SET \(q(to.name)) = \(filler) WHERE \(q(to.name)) IS NULL;")
            }
            statements.append("\(alter) \(to.isNullable ? "DROP" : "SET") NOT NULL;")
        }
        if to.enumValues != from.enumValues, let check = Self.check(table, to) {
            statements.append("ALTER TABLE \(q(table)) ADD \(check);")
        }
        return statements
    }

    /// How old values become the new type.
    static func conversion(_ column: String, from: ColumnSnapshot, to: ColumnSnapshot) -> String {
        let target = type(of: to)
        switch (from.kind, to.kind) {
        case (.boolean, .integer): return "\(column)::integer::\(target)"
        case (.integer, .boolean): return "(\(column) <> 0)"
        case (.boolean, .real): return "\(column)::integer::\(target)"
        case (.real, .integer): return "round(\(column))::\(target)"
        case (_, .text): return "\(column)::text"
        default: return "\(column)::\(target)"
        }
    }

    /// The constraints kept through the renames, from their old names to their new ones.
    func renameConstraints(_ table: String, _ from: TableSnapshot, _ to: TableSnapshot, _ sources: [String: String]) -> [String] {
        let q = Self.quote
        var renames: [(String, String)] = [(Self.primaryKeyName(from.name), Self.primaryKeyName(to.name))]
        let back = sources
        for key in to.foreignKeys {
            let oldColumns = key.columns.map { back[$0] ?? $0 }
            guard let old = from.foreignKeys.first(where: {
                $0.columns == oldColumns && $0.table == key.table && $0.referencedColumns == key.referencedColumns && $0.onDelete == key.onDelete
            }) else { continue }
            renames.append((Self.foreignKeyName(from.name, old), Self.foreignKeyName(to.name, key)))
        }
        for column in to.columns where column.enumValues != nil {
            guard let source = back[column.name], from.column(named: source)?.enumValues != nil else { continue }
            renames.append((Self.checkName(from.name, source), Self.checkName(to.name, column.name)))
        }
        return renames.filter { $0.0 != $0.1 }.map { "ALTER TABLE \(q(table)) RENAME CONSTRAINT \(q($0.0)) TO \(q($0.1));" }
    }
}
