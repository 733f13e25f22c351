import RelationalModel
import SQLDialects

/// One dialect-independent step of a migration, with its exact reverse.
public enum MigrationStep: Sendable, Hashable {
    case createTable(TableSnapshot)
    case dropTable(TableSnapshot)
    case renameTable(from: String, to: String)
    case addColumn(table: String, ColumnSnapshot)
    case dropColumn(table: String, ColumnSnapshot)
    case renameColumn(table: String, from: String, to: String)
    /// Recreate the table with a new definition, copying every row (for changes ALTER TABLE
    /// cannot make).
    case rebuildTable(TableChange)
    case createIndex(table: String, IndexSnapshot)
    case dropIndex(table: String, IndexSnapshot)
    /// Change a column in place: its type, nullability, default or allowed values (dialects that
    /// alter columns; the others rebuild).
    case alterColumn(table: String, from: ColumnSnapshot, to: ColumnSnapshot)
    case addForeignKey(table: String, ForeignKeySnapshot)
    case dropForeignKey(table: String, ForeignKeySnapshot)
    /// Drop and add the primary key (a key change is a drop before columns change and an add after).
    case dropPrimaryKey(table: String, columns: [String])
    case addPrimaryKey(table: String, columns: [String])
    /// Give a table's named constraints the names its new table and column names call for,
    /// after renames (dialects that name constraints; nothing elsewhere). `table` is what the
    /// table is called when the step runs, in either direction: the renamed name.
    case renameConstraints(table: String, from: TableSnapshot, to: TableSnapshot, columnSources: [String: String])
    /// Set (or clear, with nil) the comment of a table (column nil) or a column, from the
    /// schema's docs (dialects with comments).
    case comment(table: String, column: String?, from: String?, to: String?)
    /// A table split: the new table's rows from the old table's columns (before they go)...
    case fillTable(TableFill)
    /// ...and, going back, the old table's columns from the new table's rows.
    case unfillTable(TableFill)
    /// Change a role's access to a table: grant what `to` adds, revoke what it drops (dialects
    /// with roles).
    /// With no table, the role: created where missing when first granted.
    case grant(table: String?, role: String, from: GrantSnapshot.Access?, to: GrantSnapshot.Access?)

    /// The step that undoes this one.
    public var reversed: MigrationStep {
        switch self {
        case .createTable(let table): .dropTable(table)
        case .dropTable(let table): .createTable(table)
        case .renameTable(let from, let to): .renameTable(from: to, to: from)
        case .addColumn(let table, let column): .dropColumn(table: table, column)
        case .dropColumn(let table, let column): .addColumn(table: table, column)
        case .renameColumn(let table, let from, let to): .renameColumn(table: table, from: to, to: from)
        case .rebuildTable(let change):
            .rebuildTable(
                TableChange(
                    from: change.to, to: change.from,
                    columnSources: Dictionary(change.columnSources.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })))
        case .createIndex(let table, let index): .dropIndex(table: table, index)
        case .dropIndex(let table, let index): .createIndex(table: table, index)
        case .alterColumn(let table, let from, let to): .alterColumn(table: table, from: to, to: from)
        case .addForeignKey(let table, let key): .dropForeignKey(table: table, key)
        case .dropForeignKey(let table, let key): .addForeignKey(table: table, key)
        case .dropPrimaryKey(let table, let columns): .addPrimaryKey(table: table, columns: columns)
        case .addPrimaryKey(let table, let columns): .dropPrimaryKey(table: table, columns: columns)
        case .renameConstraints(let table, let from, let to, let sources):
            .renameConstraints(table: table, from: to, to: from, columnSources: Dictionary(sources.map { ($1, $0) }, uniquingKeysWith: { a, _ in a }))
        case .comment(let table, let column, let from, let to): .comment(table: table, column: column, from: to, to: from)
        case .grant(let table, let role, let from, let to): .grant(table: table, role: role, from: to, to: from)
        case .fillTable(let fill): .unfillTable(fill)
        case .unfillTable(let fill): .fillTable(fill)
        }
    }

    /// Whether undoing it cannot bring data back (the reverse recreates structure, not rows).
    public var losesData: Bool {
        switch self {
        case .dropTable, .dropColumn: true
        case .rebuildTable(let change): !change.droppedColumns.isEmpty
        default: false
        }
    }

    /// A one-line description, with column types as the renderer's database names them
    /// (`integer -> bigint`, `bigint -> double precision` on PostgreSQL).
    public func summary(for renderer: some MigrationRenderer) -> String {
        if case .alterColumn(let table, let from, let to) = self {
            return "alter column \(table).\(to.name)" + Self.alterations(from, to, typeName: renderer.typeName)
        }
        return summary
    }

    /// A one-line description in the dialect-neutral storage kinds.
    public var summary: String {
        switch self {
        case .createTable(let table): "create table \(table.name)"
        case .dropTable(let table): "drop table \(table.name)"
        case .renameTable(let from, let to): "rename table \(from) to \(to)"
        case .addColumn(let table, let column): "add column \(table).\(column.name)"
        case .dropColumn(let table, let column): "drop column \(table).\(column.name)"
        case .renameColumn(let table, let from, let to): "rename column \(table).\(from) to \(to)"
        case .rebuildTable(let change): "rebuild table \(change.to.name)" + (change.isRename ? " (was \(change.from.name))" : "")
        case .createIndex(let table, let index): "create \(index.isFullText ? "full-text index" : index.isUnique ? "unique index" : "index") \(index.name) on \(table)"
        case .dropIndex(let table, let index): "drop \(index.isFullText ? "full-text index" : "index") \(index.name) on \(table)"
        case .alterColumn(let table, let from, let to): "alter column \(table).\(to.name)" + Self.alterations(from, to)
        case .addForeignKey(let table, let key): "add foreign key \(table) (\(key.columns.joined(separator: ", "))) -> \(key.table)"
        case .dropForeignKey(let table, let key): "drop foreign key \(table) (\(key.columns.joined(separator: ", "))) -> \(key.table)"
        case .dropPrimaryKey(let table, let columns): "drop the primary key (\(columns.joined(separator: ", "))) of \(table)"
        case .addPrimaryKey(let table, let columns): "add the primary key (\(columns.joined(separator: ", "))) to \(table)"
        case .renameConstraints(let table, _, _, _): "rename the constraints of \(table)"
        case .comment(let table, let column, _, let to): "\(to == nil ? "clear" : "set") the comment on \(column.map { "column \(table).\($0)" } ?? "table \(table)")"
        case .fillTable(let fill): "fill \(fill.target) (\(fill.targetColumns.joined(separator: ", "))) from \(fill.source)"
        case .unfillTable(let fill): "copy \(fill.target) (\(fill.targetColumns.joined(separator: ", "))) back into \(fill.source)"
        case .grant(nil, let role, _, let to): to == nil ? "leave role \(role)" : "create role \(role) where missing"
        case .grant(let table?, let role, let from, let to):
            to == nil ? "revoke \(role)'s \(from?.rawValue ?? "") access to \(table)" : "grant \(role) \(to?.rawValue ?? "") access to \(table)" + (from.map { " (was \($0.rawValue))" } ?? "")
        }
    }

    /// `: type text -> integer, not null, default 0`.
    static func alterations(_ from: ColumnSnapshot, _ to: ColumnSnapshot, typeName: (ColumnSnapshot) -> String = { $0.kind.rawValue }) -> String {
        var parts: [String] = []
        if typeName(from) != typeName(to) {
            parts.append("type \(typeName(from)) -> \(typeName(to))")
        } else if from.kind != to.kind {
            parts.append("type \(from.kind.rawValue) -> \(to.kind.rawValue)")
        }
        if from.isNullable != to.isNullable { parts.append(to.isNullable ? "nullable" : "not null") }
        if from.defaultValue != to.defaultValue { parts.append(to.defaultValue == nil ? "no default" : "new default") }
        if from.enumValues != to.enumValues { parts.append("allowed values") }
        return parts.isEmpty ? "" : ": " + parts.joined(separator: ", ")
    }
}

/// A dialect's planner and SQL writer: what it can change in place (from its declared
/// capabilities), and the SQL of each step. Everything about a dialect the planner needs goes
/// through here; nothing branches on a dialect's name.
/// Writes one dialect's SQL for planned steps. What the plan may ask of a dialect (whether a
/// column can be added or dropped in place, whether constraints carry names) is decided by the
/// planner from the dialect's declared capabilities, not asked of the renderer.
public protocol MigrationRenderer: Sendable {
    var dialect: any SQLDialect { get }
    /// The statements of one step, each ending in `;`, built as `SQL` (`sql(for:)` renders
    /// them as this dialect's text).
    func statements(for step: MigrationStep) -> [SQL]
    /// The column's type as this database names it (from the dialect's type table, with the
    /// widths it keeps), for SQL, messages and comments.
    func typeName(_ column: ColumnSnapshot) -> String
    /// Whether the database must act on a kept column's change: what its DDL writes of the
    /// column changed (SQLite's column types hold neither widths nor enum values).
    func needsChange(from: ColumnSnapshot, to: ColumnSnapshot) -> Bool
    /// The migration's expand and contract phases, for databases that plan them (PostgreSQL),
    /// from the migration's changes (diffed once) and steps; nil where a migration is always
    /// applied whole.
    func onlinePlan(from: SchemaSnapshot?, to: SchemaSnapshot, changes: [SchemaChange], steps: [MigrationStep]) -> OnlinePlan?
}

extension MigrationRenderer {
    /// The statements of one step as this dialect's text.
    ///
    ///     SQLiteRenderer().sql(for: step)   // ["ALTER TABLE \"item\" ADD COLUMN \"sku\" TEXT;"]
    public func sql(for step: MigrationStep) -> [String] { statements(for: step).map { $0.text(for: dialect) } }

    public func onlinePlan(from: SchemaSnapshot?, to: SchemaSnapshot, changes: [SchemaChange], steps: [MigrationStep]) -> OnlinePlan? { nil }
}

/// Turns changes into ordered steps for a dialect's capabilities.
public enum MigrationPlanner {
    public static func steps(for changes: [SchemaChange], renderer: some MigrationRenderer) -> [MigrationStep] {
        // Where constraints can be added later, tables are created without their foreign keys
        // and the keys added once every table exists (tables may refer to each other), and
        // keys are dropped before any table: the reverse of a plan is then as sound as the plan.
        let separateKeys = renderer.dialect.capabilities.alterConstraints
        let comments = renderer.dialect.capabilities.comments
        var steps: [MigrationStep] = []
        for change in changes {
            switch change {
            case .createTable(let table):
                var bare = table
                if separateKeys { bare.foreignKeys = [] }
                steps.append(.createTable(bare))
                if separateKeys { steps += table.foreignKeys.map { .addForeignKey(table: table.name, $0) } }
                steps += table.indexes.map { .createIndex(table: table.name, $0) }
                if comments {
                    if let doc = table.doc { steps.append(.comment(table: table.name, column: nil, from: nil, to: doc)) }
                    steps += table.columns.compactMap { column in column.doc.map { .comment(table: table.name, column: column.name, from: nil, to: $0) } }
                }
            case .dropTable(let table):
                var bare = table
                if separateKeys {
                    bare.foreignKeys = []
                    steps += table.foreignKeys.map { .dropForeignKey(table: table.name, $0) }
                }
                steps += table.indexes.map { .dropIndex(table: table.name, $0) }
                steps.append(.dropTable(bare))
            case .fillTable(let fill):
                steps.append(.fillTable(fill))
            case .grant(let table, let role, let from, let to):
                if renderer.dialect.capabilities.grants { steps.append(.grant(table: table, role: role, from: from, to: to)) }
            case .alterTable(let change):
                steps += alterSteps(change, renderer: renderer)
                if comments {
                    steps += change.changedComments.map { .comment(table: change.to.name, column: $0.column, from: $0.from, to: $0.to) }
                    steps += change.addedColumns.compactMap { column in column.doc.map { .comment(table: change.to.name, column: column.name, from: nil, to: $0) } }
                }
            }
        }
        guard separateKeys else { return steps }
        func isDrop(_ step: MigrationStep) -> Bool { if case .dropForeignKey = step { true } else { false } }
        func isAdd(_ step: MigrationStep) -> Bool { if case .addForeignKey = step { true } else { false } }
        return steps.filter(isDrop) + steps.filter { !isDrop($0) && !isAdd($0) } + steps.filter(isAdd)
    }

    static func needsRebuild(_ change: TableChange, renderer: some MigrationRenderer) -> Bool {
        let capabilities = renderer.dialect.capabilities
        if change.keyChanged || change.foreignKeysChanged, !capabilities.alterConstraints { return true }
        if change.changedColumns.contains(where: { renderer.needsChange(from: $0.from, to: $0.to) }), !capabilities.alterColumn { return true }
        if !change.renamedColumns.isEmpty || change.isRename, !capabilities.rename { return true }
        if change.addedColumns.contains(where: { !canAddColumn($0, to: change.to, capabilities) }) { return true }
        if change.droppedColumns.contains(where: { !canDropColumn($0, from: change.from, capabilities) }) { return true }
        return false
    }

    static func isKeyColumn(_ column: ColumnSnapshot, of table: TableSnapshot) -> Bool {
        column.isAutoIncrement || table.primaryKey.contains(column.name) || table.foreignKeys.contains { $0.columns.contains(column.name) }
    }

    /// `ALTER TABLE ... ADD COLUMN` can add it: key and foreign-key columns need constraints
    /// added by name, a per-row default needs the engine to evaluate it for existing rows, and
    /// a required column without a default needs it altered to NOT NULL after a backfill.
    static func canAddColumn(_ column: ColumnSnapshot, to table: TableSnapshot, _ capabilities: DialectCapabilities) -> Bool {
        if isKeyColumn(column, of: table), !capabilities.alterConstraints { return false }
        if let value = column.defaultValue, !value.isConstant, !capabilities.addColumnWithExpressionDefault { return false }
        if !column.isNullable, column.defaultValue == nil || column.defaultValue == .null { return capabilities.alterColumn }
        return true
    }

    /// `ALTER TABLE ... DROP COLUMN` can drop it: a key or foreign-key column only where its
    /// constraints can be dropped by name.
    static func canDropColumn(_ column: ColumnSnapshot, from table: TableSnapshot, _ capabilities: DialectCapabilities) -> Bool {
        capabilities.dropColumn && (capabilities.alterConstraints || !isKeyColumn(column, of: table))
    }

    /// Whether the migrator must run a file with foreign keys off and check them before commit:
    /// when it rebuilds a table (foreign-key enforcement would see the old table vanish).
    public static func needsForeignKeysOff(_ steps: [MigrationStep]) -> Bool {
        steps.contains { if case .rebuildTable = $0 { true } else { false } }
    }

    /// The row copies of the steps' table rebuilds, for the migrator's progress.
    public static func rowCopies(_ steps: [MigrationStep]) -> [(from: String, to: String)] {
        steps.compactMap { step in
            guard case .rebuildTable(let change) = step else { return nil }
            return (change.from.name, rebuildName(change.to.name))
        }
    }

    /// The new table a rebuild fills before it replaces the old one.
    static func rebuildName(_ table: String) -> String { "schemagen_new_" + table }

    /// In-place steps, in an order each can run in: drop what goes (indexes, foreign keys),
    /// rename, drop and add columns, alter columns and the key, then add foreign keys and indexes.
    static func alterSteps(_ change: TableChange, renderer: some MigrationRenderer) -> [MigrationStep] {
        if needsRebuild(change, renderer: renderer) {
            // Old indexes go with the old table; full-text ones are dropped explicitly first.
            return change.from.indexes.map { .dropIndex(table: change.from.name, $0) }
                + [.rebuildTable(change)]
                + change.to.indexes.map { .createIndex(table: change.to.name, $0) }
        }
        let table = change.to.name
        // Foreign keys compared in the new table's column names.
        let renamedOldKeys = change.from.foreignKeys.map { key -> (old: ForeignKeySnapshot, mapped: [String]) in
            let back = Dictionary(change.columnSources.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
            return (key, key.columns.map { back[$0] ?? "" })
        }
        let keptKeys = change.to.foreignKeys.filter { key in
            renamedOldKeys.contains { $0.mapped == key.columns && $0.old.table == key.table && $0.old.referencedColumns == key.referencedColumns && $0.old.onDelete == key.onDelete }
        }
        let droppedKeys = renamedOldKeys.filter { old in !keptKeys.contains { $0.columns == old.mapped && $0.table == old.old.table } }.map(\.old)
        let addedKeys = change.to.foreignKeys.filter { !keptKeys.contains($0) }

        var steps: [MigrationStep] = change.droppedIndexes.map { .dropIndex(table: change.from.name, $0) }
        steps += droppedKeys.map { .dropForeignKey(table: change.from.name, $0) }
        if change.isRename { steps.append(.renameTable(from: change.from.name, to: table)) }
        steps += change.renamedColumns.map { .renameColumn(table: table, from: $0.from, to: $0.to) }
        if renderer.dialect.capabilities.namedConstraints, change.isRename || !change.renamedColumns.isEmpty {
            steps.append(.renameConstraints(table: table, from: change.from, to: change.to, columnSources: change.columnSources))
        }
        if change.keyChanged {
            steps.append(.dropPrimaryKey(table: table, columns: change.from.primaryKey.map { old in change.columnSources.first { $0.value == old }?.key ?? old }))
        }
        steps += change.droppedColumns.map { .dropColumn(table: table, $0) }
        steps += change.addedColumns.map { .addColumn(table: table, $0) }
        steps += change.changedColumns.filter { renderer.needsChange(from: $0.from, to: $0.to) }.map { .alterColumn(table: table, from: $0.from, to: $0.to) }
        if change.keyChanged { steps.append(.addPrimaryKey(table: table, columns: change.to.primaryKey)) }
        steps += addedKeys.map { .addForeignKey(table: table, $0) }
        steps += change.addedIndexes.map { .createIndex(table: table, $0) }
        return steps
    }
}
