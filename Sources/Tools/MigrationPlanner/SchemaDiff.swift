import RelationalModel
import SQLDialects

/// What changed between two snapshots: a closed set of values, no SQL and no I/O.
public enum SchemaChange: Sendable, Hashable {
    case createTable(TableSnapshot)
    case dropTable(TableSnapshot)
    /// A table kept under the same identity (same entity, or renamed from it) whose definition
    /// differs; `from` and `to` are the whole definitions, `columnSources` maps each new column
    /// to the old column its values come from.
    case alterTable(TableChange)
    /// A table split: a new table's rows filled from an existing table's columns (attributes
    /// declared `movedFrom`), after the new table is created and before those columns go.
    case fillTable(TableFill)
    /// A role's access to a table changes (`from` nil: none before; `to` nil: none after). A
    /// table's grants follow it through renames; the table is named as it is when the change
    /// runs. With no table, the role itself: first granted here (it must exist).
    case grant(table: String?, role: String, from: GrantSnapshot.Access?, to: GrantSnapshot.Access?)
}

/// Rows of a new table filled from columns of an old one, linked by the new table's foreign
/// key to the old one: `INSERT INTO target (key, columns) SELECT key, columns FROM source`. Its
/// reverse writes the values back (`UPDATE source ... FROM target`).
public struct TableFill: Sendable, Hashable {
    /// The old table, by the name it has while the fill (or its reverse) runs.
    public var source: String
    public var target: String
    /// The target's foreign-key columns, and the source columns they refer to.
    public var targetKey: [String]
    public var sourceKey: [String]
    /// The target's moved columns, and the source columns their values come from.
    public var targetColumns: [String]
    public var sourceColumns: [String]

    public init(source: String, target: String, targetKey: [String], sourceKey: [String], targetColumns: [String], sourceColumns: [String]) {
        self.source = source
        self.target = target
        self.targetKey = targetKey
        self.sourceKey = sourceKey
        self.targetColumns = targetColumns
        self.sourceColumns = sourceColumns
    }

    /// The up direction: one new row per old row holding any of the moved values (the old
    /// row's key, where the new entity is keyed by it, is no value of its own).
    public var insertStatement: SQL {
        let values = sourceColumns.filter { !sourceKey.contains($0) }
        let filter = SQL.list((values.isEmpty ? sourceColumns : values).map { "\(identifier: $0) IS NOT NULL" }, separator: " OR ")
        return "INSERT INTO \(identifier: target) (\(SQL.identifiers(targetKey + targetColumns))) "
            + "SELECT \(SQL.identifiers(sourceKey + sourceColumns)) FROM \(identifier: source) WHERE \(filter);"
    }

    /// The down direction: each old row's columns back from the new row that points at it
    /// (`UPDATE ... FROM`, PostgreSQL and SQLite 3.33+).
    public var updateStatement: SQL {
        let assignments = SQL.list(zip(sourceColumns, targetColumns).map { "\(identifier: $0) = \(SQL.identifier($1, in: target))" })
        let link = SQL.list(zip(targetKey, sourceKey).map { "\(SQL.identifier($0, in: target)) = \(SQL.identifier($1, in: source))" }, separator: " AND ")
        return "UPDATE \(identifier: source) SET \(assignments) FROM \(identifier: target) WHERE \(link);"
    }

    @available(*, deprecated, renamed: "insertStatement", message: "Build it as SQL; both dialects quote names with double quotes, which the quote function no longer changes.")
    public func insertSQL(_ quote: (String) -> String) -> String { insertStatement.text(for: SQLiteDialect()) }

    @available(*, deprecated, renamed: "updateStatement", message: "Build it as SQL; both dialects quote names with double quotes, which the quote function no longer changes.")
    public func updateSQL(_ quote: (String) -> String) -> String { updateStatement.text(for: SQLiteDialect()) }
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
            let same =
                old.kind == column.kind && old.isNullable == column.isNullable && old.defaultValue == column.defaultValue
                && old.isAutoIncrement == column.isAutoIncrement && old.bits == column.bits && old.enumValues == column.enumValues
                && old.precision == column.precision && old.scale == column.scale
            return same ? nil : (old, column)
        }
    }
    /// Comments (docs) that differ, on the table (column nil) or its kept columns, as (column, old, new).
    public var changedComments: [(column: String?, from: String?, to: String?)] {
        var result: [(column: String?, from: String?, to: String?)] = []
        if from.doc != to.doc { result.append((nil, from.doc, to.doc)) }
        for column in to.columns {
            guard let source = columnSources[column.name], let old = from.column(named: source), old.doc != column.doc else { continue }
            result.append((column.name, old.doc, column.doc))
        }
        return result
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
        let lookup = TableLookup(oldTables)
        var matchedOld: Set<String> = []
        var changes: [SchemaChange] = []
        var creates: [SchemaChange] = []
        for table in new.tables {
            guard let previous = lookup.match(table, excluding: matchedOld) else {
                creates.append(.createTable(table))
                continue
            }
            matchedOld.insert(previous.name)
            let sources = columnSources(from: previous, to: table)
            let change = TableChange(from: previous, to: table, columnSources: sources)
            if previous != table || change.isRename { changes.append(.alterTable(change)) }
        }
        // Drops first (they may free names), then the tables a split fills and their fills
        // (before the old columns go), then alterations, then the other new tables.
        let drops = oldTables.filter { !matchedOld.contains($0.name) }.map { SchemaChange.dropTable($0) }
        var fills: [SchemaChange] = []
        var filled: Set<String> = []
        for case .createTable(let table) in creates {
            let found = self.fills(into: table, old: oldTables, new: new)
            if !found.isEmpty { filled.insert(table.name) }
            fills += found.map(SchemaChange.fillTable)
        }
        let (splitTargets, others) = creates.reduce(into: ([SchemaChange](), [SchemaChange]())) { result, change in
            if case .createTable(let table) = change, filled.contains(table.name) { result.0.append(change) } else { result.1.append(change) }
        }
        // A dropped table's grants are revoked before it goes, so that going back, which
        // creates it again, grants them again; the others' changes come once their tables exist.
        var revokes: [SchemaChange] = [], grants: [SchemaChange] = []
        let roles = Set((old?.grants ?? []).map(\.role) + (new.grants ?? []).map(\.role)).sorted()
        for table in oldTables where !matchedOld.contains(table.name) {
            for role in roles { if let access = old?.access(of: role) { revokes.append(.grant(table: table.name, role: role, from: access, to: nil)) } }
        }
        for role in roles where old?.access(of: role) == nil && new.access(of: role) != nil {
            grants.append(.grant(table: nil, role: role, from: nil, to: new.access(of: role)))
        }
        for table in new.tables {
            let existed = lookup.match(table, excluding: []) != nil
            for role in roles {
                let before = existed ? old?.access(of: role) : nil, after = new.access(of: role)
                if before != after { grants.append(.grant(table: table.name, role: role, from: before, to: after)) }
            }
        }
        return revokes + drops + splitTargets + fills + changes.filter(\.isMeaningful) + others + grants
    }

    /// The fills of a new table from each old table its `movedFrom` columns name: the old
    /// table of the entity, its columns of those properties, linked through the new table's
    /// foreign key to that entity's table.
    static func fills(into table: TableSnapshot, old oldTables: [TableSnapshot], new: SchemaSnapshot) -> [TableFill] {
        let moved = table.columns.compactMap { column -> (column: String, entity: String, property: String)? in
            guard let text = column.movedFrom, let dot = text.firstIndex(of: ".") else { return nil }
            return (column.name, String(text[..<dot]), String(text[text.index(after: dot)...]))
        }
        var fills: [TableFill] = []
        for entity in moved.map(\.entity).reduce(into: [String](), { if !$0.contains($1) { $0.append($1) } }) {
            guard let current = new.table(forEntity: entity),
                let previous = oldTables.first(where: { $0.entity == entity }) ?? current.renamedFrom.flatMap({ name in oldTables.first { $0.entity == name } }),
                let key = table.foreignKeys.first(where: { $0.table == current.name })
            else { continue }
            // The key the new rows point at, in the old table's column names (keys rarely change).
            let sources = columnSources(from: previous, to: current)
            let sourceKey = key.referencedColumns.map { sources[$0] ?? $0 }
            guard sourceKey.allSatisfy({ previous.column(named: $0) != nil }) else { continue }
            var targetColumns: [String] = [], sourceColumns: [String] = []
            for entry in moved where entry.entity == entity {
                guard let column = previous.columns.first(where: { $0.property == entry.property }) else { continue }
                targetColumns.append(entry.column)
                sourceColumns.append(column.name)
            }
            guard !targetColumns.isEmpty else { continue }
            fills.append(
                TableFill(
                    source: previous.name, target: table.name, targetKey: key.columns, sourceKey: sourceKey,
                    targetColumns: targetColumns, sourceColumns: sourceColumns))
        }
        return fills
    }

    /// The old tables by entity and join tables by name, looked up once per new table: a
    /// 1,000-entity schema would otherwise scan (and copy) every old table for each new one.
    struct TableLookup {
        let tables: [TableSnapshot]
        private var byEntity: [String: [Int]] = [:]
        private var joinTablesByName: [String: [Int]] = [:]

        init(_ tables: [TableSnapshot]) {
            self.tables = tables
            for (index, table) in tables.enumerated() {
                if let entity = table.entity { byEntity[entity, default: []].append(index) } else { joinTablesByName[table.name, default: []].append(index) }
            }
        }

        /// The old table of `table`: its entity's, or the one it was renamed from (a join table:
        /// the one of its name), unless already `taken`.
        func match(_ table: TableSnapshot, excluding taken: Set<String>) -> TableSnapshot? {
            func first(_ indices: [Int]?) -> TableSnapshot? { indices?.lazy.map { tables[$0] }.first { !taken.contains($0.name) } }
            if let entity = table.entity {
                return first(byEntity[entity]) ?? table.renamedFrom.flatMap { first(byEntity[$0]) }
            }
            return first(joinTablesByName[table.name])
        }
    }

    /// New column -> old column: same name, or the column of the property it was renamed from.
    static func columnSources(from old: TableSnapshot, to new: TableSnapshot) -> [String: String] {
        var sources: [String: String] = [:]
        var used: Set<String> = []
        for column in new.columns {
            if let same = old.column(named: column.name), !used.contains(same.name),
                same.property == column.property || same.property == nil || column.property == nil
            {
                sources[column.name] = same.name
                used.insert(same.name)
            }
        }
        for column in new.columns where sources[column.name] == nil {
            // A renamed property: its column in the old table, matched by property name.
            let previousProperty = column.renamedFrom
            if let previousProperty,
                let old = old.columns.first(where: { $0.property == previousProperty && !used.contains($0.name) })
            {
                sources[column.name] = old.name
                used.insert(old.name)
            } else if let property = column.property,
                let old = old.columns.first(where: { $0.property == property && !used.contains($0.name) })
            {
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
