import PersistentStoreCore
import SchemaKit
import SchemaMetadata
import TextEscaping

/// An entity's columns as the pages show them: under the schema's names (a foreign key under
/// its relationship's), in the table's order, with what each can be filtered and sorted by.
struct StudioColumns {
    let entity: EntityDescriptor
    let model: Entity?
    let entry: StudioCatalog.Entry
    /// Every column of a record, as `recordColumns` orders them.
    let shown: [ColumnDescriptor]
    /// To-many relationships: a link to the target's list of linked records.
    let toMany: [RelationshipDescriptor]
    /// Many-to-many relationships over one key column: a list can be narrowed to the records
    /// linked to one of the target's.
    let linkable: [RelationshipDescriptor]

    init(entity: EntityDescriptor, model: Entity?, entry: StudioCatalog.Entry) {
        self.entity = entity
        self.model = model
        self.entry = entry
        shown = entity.recordColumns.map { name in
            if let column = entity.columns.first(where: { $0.column == name }) { return column }
            let isKey = entity.primaryKey.contains(name)
            let relationship = entity.relationships.first { $0.foreignKeyColumns.contains(name) }
            return ColumnDescriptor(
                property: relationship?.name ?? name, column: name, storage: .integer, swiftType: "Int64", isOptional: !isKey && (relationship?.isOptional ?? false),
                isPrimaryKey: isKey)
        }
        toMany = entity.relationships.filter(\.isToMany)
        linkable = entity.relationships.filter { $0.joinTable != nil && $0.joinColumns.count == 1 && $0.joinTargetColumns.count == 1 }
    }

    func column(named name: String) -> ColumnDescriptor? { shown.first { $0.column == name } }

    /// The schema's attribute behind a column, nil for a key or foreign key column.
    func attribute(of column: ColumnDescriptor) -> Attribute? { model?.attributes.first { $0.columnName == column.column } }

    /// The name a person knows the column by.
    func label(_ column: ColumnDescriptor) -> String {
        if let relationship = entity.relationships.first(where: { $0.foreignKeyColumns == [column.column] }) { return relationship.name }
        return attribute(of: column)?.name ?? column.property
    }

    /// Encrypted in the schema (so, without the key, shown locked).
    func isEncrypted(_ column: ColumnDescriptor) -> Bool { attribute(of: column)?.isEncrypted ?? false }

    /// Columns a filter may test: not bytes, not sealed, not in files.
    var filterable: [ColumnDescriptor] {
        shown.filter { $0.storage != .blob && !isEncrypted($0) && !$0.usesExternalStorage && $0.storage != .json }
    }

    /// Columns the database can order by.
    var sortable: [ColumnDescriptor] { filterable }

    /// A record's value as a table cell; one the store could not read says why.
    func cell(of record: StoredRecord, column: ColumnDescriptor) -> String {
        if let reason = record.unreadable[column.column] {
            return "<span class=\"warn\" title=\"\(TextEscaping.html(reason))\">unreadable: \(TextEscaping.html(reason))</span>"
        }
        return cell(record[column.column] ?? .null, column: column)
    }

    /// The value as a table cell: a foreign key links to its record.
    func cell(_ value: StoredValue, column: ColumnDescriptor) -> String {
        let locked = isEncrypted(column) && entry.encryptionLocked
        let text = StudioValues.html(value, column: column, attribute: attribute(of: column), schema: entry.schema, locked: locked)
        guard value != .null, let relationship = entity.relationships.first(where: { $0.foreignKeyColumns == [column.column] }),
            let target = entry.descriptor.entity(named: relationship.target), target.primaryKey.count == 1
        else { return text }
        let link = "/r/\(StudioApp.percent(entry.schema.name))/\(StudioApp.percent(target.name))?k.\(StudioApp.percent(target.primaryKey[0]))=\(StudioApp.percent(StudioValues.plain(value)))"
        return "<a href=\"\(TextEscaping.html(link))\" title=\"\(TextEscaping.html(relationship.target))\">\(text)</a>"
    }
}
