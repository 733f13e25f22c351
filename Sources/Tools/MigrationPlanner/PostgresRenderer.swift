import Foundation
import MigrationFiles
import RelationalModel
import SQLDialects
import SchemaMetadata

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
    public static let dialect = PostgresDialect()

    public func typeName(_ column: ColumnSnapshot) -> String { Self.type(of: column) }

    public func onlinePlan(from: SchemaSnapshot?, to: SchemaSnapshot, changes: [SchemaChange], steps: [MigrationStep]) -> OnlinePlan? {
        OnlinePlan(from: from, to: to, changes: changes, steps: steps)
    }

    /// Enum values are a CHECK constraint of their own.
    public func needsChange(from: ColumnSnapshot, to: ColumnSnapshot) -> Bool {
        Self.type(of: from) != Self.type(of: to) || from.isNullable != to.isNullable || from.defaultValue != to.defaultValue
            || from.enumValues != to.enumValues || from.isAutoIncrement != to.isAutoIncrement
    }

    // MARK: - Names

    /// A derived name PostgreSQL keeps whole (`SQLIdentifiers.fitted` to its limit).
    public static func identifier(_ name: String) -> String {
        SQLIdentifiers.fitted(name, to: dialect.capabilities.maximumIdentifierBytes)
    }

    static func primaryKeyName(_ table: String) -> String { identifier("\(table)_pkey") }
    static func foreignKeyName(_ table: String, _ key: ForeignKeySnapshot) -> String { identifier("\(table)_\(key.columns.joined(separator: "_"))_fkey") }
    static func checkName(_ table: String, _ column: String) -> String { identifier("\(table)_\(column)_check") }
    static func indexName(_ index: IndexSnapshot) -> String { identifier(index.name) }
    /// A full-text index is a generated column of this name and a GIN index named after it.
    public static func searchColumn(_ index: IndexSnapshot) -> String { identifier(index.name) }
    static func searchIndex(_ index: IndexSnapshot) -> String { identifier(index.name + "_gin") }

    // MARK: - Types and values

    static func type(of column: ColumnSnapshot) -> String {
        if column.kind == .decimal, let precision = column.precision {
            return "numeric(\(precision)" + (column.scale.map { ",\($0)" } ?? "") + ")"
        }
        return dialect.columnType(column.kind, bits: column.bits)
    }

    /// The column's type as SQL: a type name the dialect's table (or the schema's numeric
    /// precision) gives, never user text.
    static func typeSQL(of column: ColumnSnapshot) -> SQL { SQL(verbatim: type(of: column)) }

    /// A default or backfill value as SQL.
    static func expression(_ value: ColumnDefault, kind: StorageKind) -> SQL {
        switch value {
        case .null: return "NULL"
        case .integer(let number): return kind == .boolean ? (number != 0 ? "true" : "false") : SQL(verbatim: String(number))
        case .real(let number):
            let text = String(number)
            return SQL(verbatim: text.contains(".") || text.contains("e") || text.contains("n") ? text : text + ".0")
        case .text(let text): return .literal(text)
        case .blob(let hex): return .literal("\\x" + hex)
        case .now where kind == .date: return "now()"
        // The day in the session's time zone, as PostgreSQL users write it (the store's
        // sessions are in UTC).
        case .now where kind == .day: return "CURRENT_DATE"
        case .now: return "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        case .uuid: return kind == .uuid ? "gen_random_uuid()" : "gen_random_uuid()::text"
        }
    }

    /// A default or backfill value as PostgreSQL writes it.
    public static func literal(_ value: ColumnDefault, kind: StorageKind) -> String { expression(value, kind: kind).text(for: dialect) }

    /// A column's backfill as PostgreSQL SQL, evaluated for each existing row. A SQL backfill is
    /// the schema author's own expression, taken as written.
    static func backfillExpression(_ column: ColumnSnapshot) -> SQL? {
        switch column.backfill {
        case .value(let value)?: expression(value, kind: column.kind)
        case .sql(let expressions)?: expressions[dialect.name].map { "(\(SQL(verbatim: $0)))" }
        case nil: nil
        }
    }

    /// The value that fills a column's NULLs when it becomes required: its backfill, else its
    /// default.
    static func filler(_ column: ColumnSnapshot) -> SQL? {
        backfillExpression(column) ?? column.defaultValue.flatMap { $0 == .null ? nil : expression($0, kind: column.kind) }
    }

    static func check(_ table: String, _ column: ColumnSnapshot) -> SQL? {
        guard let values = column.enumValues, !values.isEmpty else { return nil }
        // Integer enum values are checked as numbers by the schema parser.
        let list = SQL.list(values.map { column.kind == .integer ? SQL(verbatim: $0) : .literal($0) })
        return "CONSTRAINT \(identifier: checkName(table, column.name)) CHECK (\(identifier: column.name) IN (\(list)))"
    }

    static func columnDefinition(_ column: ColumnSnapshot) -> SQL {
        var definition: SQL = "\(identifier: column.name) \(typeSQL(of: column))"
        if column.isAutoIncrement { return definition + " GENERATED BY DEFAULT AS IDENTITY" }
        if !column.isNullable { definition += " NOT NULL" }
        if let value = column.defaultValue { definition += " DEFAULT \(expression(value, kind: column.kind))" }
        return definition
    }

    static func foreignKey(_ table: String, _ key: ForeignKeySnapshot) -> SQL {
        "CONSTRAINT \(identifier: foreignKeyName(table, key)) \(references(key))"
    }

    /// `FOREIGN KEY (...) REFERENCES "table" (...) ON DELETE rule`.
    static func references(_ key: ForeignKeySnapshot) -> SQL {
        "FOREIGN KEY (\(SQL.identifiers(key.columns))) REFERENCES \(identifier: key.table) (\(SQL.identifiers(key.referencedColumns))) ON DELETE \(SQL(verbatim: key.onDelete.rawValue))"
    }

    // MARK: - Statements

    public func statements(for step: MigrationStep) -> [SQL] {
        switch step {
        case .createTable(let table):
            var lines: [SQL] = table.columns.map { "    \(Self.columnDefinition($0))" }
            if !table.primaryKey.isEmpty {
                lines.append("    CONSTRAINT \(identifier: Self.primaryKeyName(table.name)) PRIMARY KEY (\(SQL.identifiers(table.primaryKey)))")
            }
            lines += table.columns.compactMap { Self.check(table.name, $0).map { "    \($0)" } }
            lines += table.foreignKeys.map { "    \(Self.foreignKey(table.name, $0))" }
            return ["CREATE TABLE \(identifier: table.name) (\n\(SQL.list(lines, separator: ",\n"))\n);"]
        case .dropTable(let table):
            return [DDL.dropTable(table.name)]
        case .renameTable(let from, let to):
            return [DDL.renameTable(from, to: to)]
        case .addColumn(let table, let column) where !column.isNullable && column.defaultValue == nil && !column.isAutoIncrement:
            // Added without a value for existing rows: nullable first, the rows backfilled, then required.
            var nullable = column
            nullable.isNullable = true
            var statements = [DDL.addColumn(Self.columnDefinition(nullable), to: table)]
            if let filler = Self.backfillExpression(column) { statements.append("UPDATE \(identifier: table) SET \(identifier: column.name) = \(filler);") }
            statements.append(DDL.alterTable(table, "ALTER COLUMN \(identifier: column.name) SET NOT NULL;"))
            if let check = Self.check(table, column) { statements.append(DDL.alterTable(table, "ADD \(check);")) }
            return statements
        case .addColumn(let table, let column):
            var statements = [DDL.addColumn(Self.columnDefinition(column), to: table)]
            if let check = Self.check(table, column) { statements.append(DDL.alterTable(table, "ADD \(check);")) }
            return statements
        case .dropColumn(let table, let column):
            return [DDL.dropColumn(column.name, from: table)]
        case .renameColumn(let table, let from, let to):
            return [DDL.renameColumn(from, to: to, in: table)]
        case .createIndex(let table, let index):
            return Self.createIndex(index, on: table)
        case .dropIndex(let table, let index):
            // Migrations planned before unique values were constraints made bare unique indexes:
            // the constraint goes if there is one, else the index.
            let name = SQL.identifier(Self.indexName(index))
            if index.isUnique, !index.isFullText {
                return [DDL.dropConstraint(Self.indexName(index), from: table), "DROP INDEX IF EXISTS \(name);"]
            }
            guard index.isFullText else { return ["DROP INDEX IF EXISTS \(name);"] }
            return [
                "DROP INDEX IF EXISTS \(identifier: Self.searchIndex(index));", DDL.alterTable(table, "DROP COLUMN IF EXISTS \(identifier: Self.searchColumn(index));"),
            ]
        case .alterColumn(let table, let from, let to):
            return alterColumn(table, from, to)
        case .addForeignKey(let table, let key):
            return [DDL.alterTable(table, "ADD \(Self.foreignKey(table, key));")]
        case .dropForeignKey(let table, let key):
            return [DDL.alterTable(table, "DROP CONSTRAINT \(identifier: Self.foreignKeyName(table, key));")]
        case .dropPrimaryKey(let table, _):
            // IF EXISTS: dropping a key column in the same migration drops the key with it.
            return [DDL.dropConstraint(Self.primaryKeyName(table), from: table)]
        case .addPrimaryKey(let table, let columns):
            return [DDL.alterTable(table, "ADD CONSTRAINT \(identifier: Self.primaryKeyName(table)) PRIMARY KEY (\(SQL.identifiers(columns)));")]
        case .renameConstraints(let table, let from, let to, let sources):
            return renameConstraints(table, from, to, sources)
        case .fillTable(let fill):
            return [fill.insertStatement]
        case .unfillTable(let fill):
            return [fill.updateStatement]
        case .comment(let table, let column, _, let text):
            let target: SQL = column.map { "COLUMN \(SQL.identifier($0, in: table))" } ?? "TABLE \(identifier: table)"
            return ["COMMENT ON \(target) IS \(text.map(SQL.literal) ?? "NULL");"]
        case .grant(nil, let role, nil, .some):
            return [Self.createGroupRole(role)]
        case .grant(nil, _, _, _):
            return []
        case .grant(let table?, let role, let from, let to):
            return Self.grantChange(on: .identifier(table), role: role, from: from, to: to)
        case .rebuildTable(let change):
            // Never planned for PostgreSQL, which alters in place; kept exact should it be.
            return ["CREATE TABLE \(identifier: change.to.name + "_rebuild_unsupported") ();"]
        }
    }

    /// A group role (no login, no password) created where missing, so the migration runs on
    /// every database; apps' login roles are made its members (GRANT role TO login). Going back
    /// leaves it: roles belong to the whole server. Another database of the server may create
    /// it at the same moment: that is no error.
    static func createGroupRole(_ role: String) -> SQL {
        "DO $schemagen$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = \(literal: role)) THEN CREATE ROLE \(identifier: role) NOLOGIN; END IF; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $schemagen$;"
    }

    /// Unique values are a UNIQUE constraint, not a bare unique index: information_schema lists
    /// it, and ON CONFLICT ON CONSTRAINT can name it. A full-text index is a generated
    /// `tsvector` column and a GIN index on it.
    static func createIndex(_ index: IndexSnapshot, on table: String) -> [SQL] {
        if index.isUnique, !index.isFullText {
            return [DDL.alterTable(table, "ADD CONSTRAINT \(identifier: indexName(index)) UNIQUE (\(SQL.identifiers(index.columns)));")]
        }
        guard index.isFullText else {
            return ["CREATE INDEX \(identifier: indexName(index)) ON \(identifier: table) (\(SQL.identifiers(index.columns)));"]
        }
        let column = SQL.identifier(searchColumn(index))
        return [addSearchColumn(index, to: table), "CREATE INDEX \(identifier: searchIndex(index)) ON \(identifier: table) USING GIN (\(column));"]
    }

    /// A full-text index's document: a generated `tsvector` column.
    static func addSearchColumn(_ index: IndexSnapshot, to table: String) -> SQL {
        // Text columns make one document; a JSON array of strings adds its strings.
        let json = Set(index.jsonColumns ?? [])
        let texts = index.columns.filter { !json.contains($0) }
        var parts: [SQL] = texts.isEmpty ? [] : ["to_tsvector('simple', \(SQL.list(texts.map { "coalesce(\(identifier: $0), '')" }, separator: " || ' ' || ")))"]
        parts += index.columns.filter(json.contains).map { "jsonb_to_tsvector('simple', coalesce(\(identifier: $0), '[]'::jsonb), '[\"string\"]')" }
        return DDL.alterTable(table, "ADD COLUMN \(identifier: searchColumn(index)) tsvector GENERATED ALWAYS AS (\(SQL.list(parts, separator: " || "))) STORED;")
    }

    /// The GRANT or REVOKE that takes `role` from `from`'s table privileges to `to`'s, on a
    /// table or view.
    ///
    ///     PostgresRenderer.grantChange(on: .identifier("job"), role: "app", from: .read, to: .write)   // GRANT INSERT, UPDATE, DELETE ON "job" TO "app";
    public static func grantChange(on relation: SQL, role: String, from: GrantSnapshot.Access?, to: GrantSnapshot.Access?) -> [SQL] {
        let before = Set(from?.privileges ?? []), after = to?.privileges ?? []
        let added = after.filter { !before.contains($0) }, removed = (from?.privileges ?? []).filter { !after.contains($0) }
        // Privileges are keywords from `GrantSnapshot.Access`, never user text.
        var statements: [SQL] = []
        if !added.isEmpty { statements.append("GRANT \(SQL(verbatim: added.joined(separator: ", "))) ON \(relation) TO \(identifier: role);") }
        if !removed.isEmpty { statements.append("REVOKE \(SQL(verbatim: removed.joined(separator: ", "))) ON \(relation) FROM \(identifier: role);") }
        return statements
    }

    /// The GRANT or REVOKE on a relation named as SQL text.
    @available(*, deprecated, message: "Name the relation as SQL: grantChange(on: .identifier(table), ...) or SQL.identifier(view, in: schema).")
    public static func grantChange(on relation: String, role: String, from: GrantSnapshot.Access?, to: GrantSnapshot.Access?) -> [String] {
        grantChange(on: SQL(verbatim: relation), role: role, from: from, to: to).map { $0.text(for: dialect) }
    }

    /// Type first (with a USING conversion), then the default, nullability (existing nulls
    /// filled from the new default first) and allowed values.
    func alterColumn(_ table: String, _ from: ColumnSnapshot, _ to: ColumnSnapshot) -> [SQL] {
        func alter(_ action: SQL) -> SQL { DDL.alterTable(table, "ALTER COLUMN \(identifier: to.name) \(action);") }
        var statements: [SQL] = []
        if from.enumValues != nil, from.enumValues != to.enumValues {
            statements.append(DDL.dropConstraint(Self.checkName(table, to.name), from: table))
        }
        let typeChanges = Self.type(of: from) != Self.type(of: to)
        if typeChanges || from.defaultValue != to.defaultValue, from.defaultValue != nil {
            statements.append(alter("DROP DEFAULT"))
        }
        if typeChanges {
            statements.append(alter("TYPE \(Self.typeSQL(of: to)) USING \(Self.conversion(.identifier(to.name), from: from, to: to))"))
        }
        if let value = to.defaultValue, typeChanges || from.defaultValue != to.defaultValue {
            statements.append(alter("SET DEFAULT \(Self.expression(value, kind: to.kind))"))
        }
        if from.isNullable != to.isNullable {
            if !to.isNullable, let filler = Self.filler(to) {
                statements.append("UPDATE \(identifier: table) SET \(identifier: to.name) = \(filler) WHERE \(identifier: to.name) IS NULL;")
            }
            statements.append(alter(to.isNullable ? "DROP NOT NULL" : "SET NOT NULL"))
        }
        if to.enumValues != from.enumValues, let check = Self.check(table, to) {
            statements.append(DDL.alterTable(table, "ADD \(check);"))
        }
        return statements
    }

    /// How old values become the new type.
    static func conversion(_ column: SQL, from: ColumnSnapshot, to: ColumnSnapshot) -> SQL {
        let target = typeSQL(of: to)
        switch (from.kind, to.kind) {
        case (.boolean, .integer): return "\(column)::integer::\(target)"
        case (.integer, .boolean): return "(\(column) <> 0)"
        case (.boolean, .real): return "\(column)::integer::\(target)"
        case (.real, .integer): return "round(\(column))::\(target)"
        // The day and the moment are both UTC's, whatever the session's time zone.
        case (.date, .day): return "(\(column) AT TIME ZONE 'UTC')::date"
        case (.day, .date): return "(\(column)::timestamp AT TIME ZONE 'UTC')"
        case (_, .text): return "\(column)::text"
        default: return "\(column)::\(target)"
        }
    }

    /// The constraints kept through the renames, from their old names to their new ones.
    func renameConstraints(_ table: String, _ from: TableSnapshot, _ to: TableSnapshot, _ sources: [String: String]) -> [SQL] {
        var renames: [(String, String)] = [(Self.primaryKeyName(from.name), Self.primaryKeyName(to.name))]
        let back = sources
        for key in to.foreignKeys {
            let oldColumns = key.columns.map { back[$0] ?? $0 }
            guard
                let old = from.foreignKeys.first(where: {
                    $0.columns == oldColumns && $0.table == key.table && $0.referencedColumns == key.referencedColumns && $0.onDelete == key.onDelete
                })
            else { continue }
            renames.append((Self.foreignKeyName(from.name, old), Self.foreignKeyName(to.name, key)))
        }
        for column in to.columns where column.enumValues != nil {
            guard let source = back[column.name], from.column(named: source)?.enumValues != nil else { continue }
            renames.append((Self.checkName(from.name, source), Self.checkName(to.name, column.name)))
        }
        return renames.filter { $0.0 != $0.1 }.map { DDL.alterTable(table, "RENAME CONSTRAINT \(identifier: $0.0) TO \(identifier: $0.1);") }
    }
}
