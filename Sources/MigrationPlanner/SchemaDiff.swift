import RelationalModel

/// What changed between two snapshots: a closed set of values, no SQL and no I/O.
public enum SchemaChange: Sendable, Hashable {
    case createTable(TableSnapshot)
    case dropTable(TableSnapshot)
    /// A table kept under the same identity (same entity, or renamed from it) whose definition
    /// differs; `from` and `to` are the whole definitions, `columnSources` maps each new column
    /// to the old column its values come from.
    case alterTable(TableChange)
}

public struct TableChange: Sendable, Hashable {
    public var from: TableSnapshot
    public var to: TableSnapshot
    /// New column name -> old column name, for columns that keep their values (renamed or not).
    public var columnSources: [String: String]

    public var isRename: Bool { from.name != to.name }
    public var addedColumns: [ColumnSnapshot] { to.columns.filter { columnSources[$0.name] == nil } }
    public var droppedColumns: [ColumnSnapshot] {
        let kept = Set(columnSources.values)
        return from.columns.filter { !kept.contains($0.name) }
    }
    public var renamedColumns: [(from: String, to: String)] {
        to.columns.compactMap { column in
            guard let source = columnSources[column.name], source != column.name else { return nil }
            return (source, column.name)
        }
    }
    /// Kept columns whose kind, width, nullability, default or enum values changed; each
    /// renderer decides which of these its database has to act on.
    public var changedColumns: [(from: ColumnSnapshot, to: ColumnSnapshot)] {
        to.columns.compactMap { column in
            guard let source = columnSources[column.name], let old = from.column(named: source) else { return nil }
            let same = old.kind == column.kind && old.isNullable == column.isNullable && old.defaultValue == column.defaultValue
                && old.isAutoIncrement == column.isAutoIncrement && old.bits == column.bits && old.enumValues == column.enumValues
            return same ? nil : (old, column)
        }
    }
    public var addedIndexes: [IndexSnapshot] { to.indexes.filter { !from.indexes.contains($0) } }
    public var droppedIndexes: [IndexSnapshot] { from.indexes.filter { !to.indexes.contains($0) } }
    /// The primary key names other columns, or the same columns in another order.
    public var keyChanged: Bool { to.primaryKey.map { columnSources[$0] ?? "" } != from.primaryKey }
    public var foreignKeysChanged: Bool {
        let renamed = to.foreignKeys.map { key in
            ForeignKeySnapshot(columns: key.columns.map { columnSources[$0] ?? "" }, table: key.table, referencedColumns: key.referencedColumns, onDelete: key.onDelete)
        }
        return Set(renamed) != Set(from.foreignKeys)
    }
}

/// Compares two snapshots. Tables match by entity (or the entity they were renamed from),
/// columns by name (or the property they were renamed from); join tables by name.
public enum SchemaDiffer {
    public static func diff(from old: SchemaSnapshot?, to new: SchemaSnapshot) -> [SchemaChange] {
        let oldTables = old?.tables ?? []
        var matchedOld: Set<String> = []
        var changes: [SchemaChange] = []
        var creates: [SchemaChange] = []
        for table in new.tables {
            guard let previous = match(table, in: oldTables, excluding: matchedOld) else {
                creates.append(.createTable(table))
                continue
            }
            matchedOld.insert(previous.name)
            let sources = columnSources(from: previous, to: table)
            let change = TableChange(from: previous, to: table, columnSources: sources)
            if previous != table || change.isRename { changes.append(.alterTable(change)) }
        }
        // Drops first (they may free names), then alterations, then new tables.
        let drops = oldTables.filter { !matchedOld.contains($0.name) }.map { SchemaChange.dropTable($0) }
        return drops + changes.filter(\.isMeaningful) + creates
    }

    static func match(_ table: TableSnapshot, in old: [TableSnapshot], excluding taken: Set<String>) -> TableSnapshot? {
        let candidates = old.filter { !taken.contains($0.name) }
        if let entity = table.entity {
            if let same = candidates.first(where: { $0.entity == entity }) { return same }
            if let renamed = table.renamedFrom, let previous = candidates.first(where: { $0.entity == renamed }) { return previous }
            return nil
        }
        return candidates.first { $0.entity == nil && $0.name == table.name }
    }

    /// New column -> old column: same name, or the column of the property it was renamed from.
    static func columnSources(from old: TableSnapshot, to new: TableSnapshot) -> [String: String] {
        var sources: [String: String] = [:]
        var used: Set<String> = []
        for column in new.columns {
            if let same = old.column(named: column.name), !used.contains(same.name),
               same.property == column.property || same.property == nil || column.property == nil {
                sources[column.name] = same.name
                used.insert(same.name)
            }
        }
        for column in new.columns where sources[column.name] == nil {
            // A renamed property: its column in the old table, matched by property name.
            let previousProperty = column.renamedFrom
            if let previousProperty,
               let old = old.columns.first(where: { $0.property == previousProperty && !used.contains($0.name) }) {
                sources[column.name] = old.name
                used.insert(old.name)
            } else if let property = column.property,
                      let old = old.columns.first(where: { $0.property == property && !used.contains($0.name) }) {
                // Same property, new column name (a `column:` change).
                sources[column.name] = old.name
                used.insert(old.name)
            }
        }
        return sources
    }
}

extension SchemaChange {
    var isMeaningful: Bool {
        if case .alterTable(let change) = self { return change.from != change.to }
        return true
    }
}
