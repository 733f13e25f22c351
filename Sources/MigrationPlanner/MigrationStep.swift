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
            .rebuildTable(TableChange(from: change.to, to: change.from,
                                      columnSources: Dictionary(change.columnSources.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })))
        case .createIndex(let table, let index): .dropIndex(table: table, index)
        case .dropIndex(let table, let index): .createIndex(table: table, index)
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

    /// A one-line description for the migration file.
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
        }
    }
}

/// A dialect's planner and SQL writer: what it can change in place (from its declared
/// capabilities), and the SQL of each step. Everything about a dialect the planner needs goes
/// through here; nothing branches on a dialect's name.
public protocol MigrationRenderer: Sendable {
    var dialect: any SQLDialect { get }
    func canAddColumn(_ column: ColumnSnapshot, to table: TableSnapshot) -> Bool
    func canDropColumn(_ column: ColumnSnapshot, from table: TableSnapshot) -> Bool
    /// The statements of one step, each ending in `;`.
    func sql(for step: MigrationStep) -> [String]
    /// Whether the migrator must run the file with foreign keys off and check them before commit.
    func needsForeignKeysOff(_ steps: [MigrationStep]) -> Bool
    /// Whether the file must run outside a transaction (its header then says so).
    func runsOutsideTransaction(_ steps: [MigrationStep]) -> Bool
    /// The row copies of the steps' table rebuilds, for the migrator's progress.
    func rowCopies(_ steps: [MigrationStep]) -> [(from: String, to: String)]
}

/// Turns changes into ordered steps for a dialect's capabilities.
public enum MigrationPlanner {
    public static func steps(for changes: [SchemaChange], renderer: some MigrationRenderer) -> [MigrationStep] {
        var steps: [MigrationStep] = []
        for change in changes {
            switch change {
            case .createTable(let table):
                steps.append(.createTable(table))
                steps += table.indexes.map { .createIndex(table: table.name, $0) }
            case .dropTable(let table):
                steps += table.indexes.map { .dropIndex(table: table.name, $0) }
                steps.append(.dropTable(table))
            case .alterTable(let change):
                steps += alterSteps(change, renderer: renderer)
            }
        }
        return steps
    }

    static func needsRebuild(_ change: TableChange, renderer: some MigrationRenderer) -> Bool {
        let capabilities = renderer.dialect.capabilities
        if (change.keyChanged || change.foreignKeysChanged), !capabilities.alterConstraints { return true }
        if !change.changedColumns.isEmpty, !capabilities.alterColumn { return true }
        if !change.renamedColumns.isEmpty || change.isRename, !capabilities.rename { return true }
        if change.addedColumns.contains(where: { !renderer.canAddColumn($0, to: change.to) }) { return true }
        if change.droppedColumns.contains(where: { !renderer.canDropColumn($0, from: change.from) }) { return true }
        return false
    }

    static func alterSteps(_ change: TableChange, renderer: some MigrationRenderer) -> [MigrationStep] {
        if needsRebuild(change, renderer: renderer) {
            // Old indexes go with the old table; full-text ones are dropped explicitly first.
            return change.from.indexes.map { .dropIndex(table: change.from.name, $0) }
                + [.rebuildTable(change)]
                + change.to.indexes.map { .createIndex(table: change.to.name, $0) }
        }
        var steps: [MigrationStep] = change.droppedIndexes.map { .dropIndex(table: change.from.name, $0) }
        if change.isRename { steps.append(.renameTable(from: change.from.name, to: change.to.name)) }
        let table = change.to.name
        steps += change.renamedColumns.map { .renameColumn(table: table, from: $0.from, to: $0.to) }
        steps += change.droppedColumns.map { .dropColumn(table: table, $0) }
        steps += change.addedColumns.map { .addColumn(table: table, $0) }
        steps += change.addedIndexes.map { .createIndex(table: table, $0) }
        return steps
    }
}
