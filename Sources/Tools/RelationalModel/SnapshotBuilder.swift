import Foundation
import SchemaKit
import SchemaMetadata
import TextEscaping

/// Derives the relational model of a validated schema: the one place where tables, columns,
/// storage kinds, defaults, keys, indexes, foreign keys, join tables and full-text indexes are
/// decided.
public enum SnapshotBuilder {
    public static func snapshot(of schema: Schema) -> SchemaSnapshot {
        var tables = schema.entities.map { table(for: $0, in: schema) }
        tables += joinTables(of: schema)
        var snapshot = SchemaSnapshot(schema: schema.name, version: schema.version, tables: tables)
        if let grants = schema.grants, !grants.isEmpty {
            snapshot.grants = grants.map { GrantSnapshot(role: $0.role, access: $0.access == .write ? .write : .read) }
        }
        return snapshot
    }

    static func table(for entity: Entity, in schema: Schema) -> TableSnapshot {
        var columns: [ColumnSnapshot] = []
        if case .implicit = entity.primaryKey {
            columns.append(
                ColumnSnapshot(
                    name: Entity.implicitKeyName, property: nil, renamedFrom: nil, kind: .integer,
                    isNullable: false, defaultValue: nil, isAutoIncrement: true))
        }
        for attribute in entity.attributes where !attribute.isTransient {
            columns.append(
                ColumnSnapshot(
                    name: attribute.columnName, property: attribute.name, renamedFrom: attribute.renamedFrom,
                    // An external value's column holds its file name; an encrypted value is an
                    // envelope of bytes, with no default or enum check in clear.
                    kind: attribute.usesExternalStorage ? .text : attribute.isEncrypted ? .blob : kind(of: attribute, in: schema),
                    isNullable: attribute.isOptional,
                    defaultValue: attribute.isEncrypted ? nil : attribute.defaultValue.map { columnDefault($0, of: attribute, in: schema) },
                    isAutoIncrement: false, enumValues: attribute.isEncrypted ? nil : enumValues(of: attribute.type, in: schema),
                    bits: attribute.usesExternalStorage || attribute.isEncrypted ? nil : bits(of: attribute.type)))
            if !attribute.isEncrypted, !attribute.usesExternalStorage {
                columns[columns.count - 1].precision = attribute.precision
                columns[columns.count - 1].scale = attribute.scale
            }
            columns[columns.count - 1].doc = attribute.doc
            columns[columns.count - 1].movedFrom = attribute.movedFromText
            switch attribute.backfill {
            case .value(let value)?: columns[columns.count - 1].backfill = .value(columnDefault(value, of: attribute, in: schema))
            case .sql(let expressions)?: columns[columns.count - 1].backfill = .sql(Dictionary(uniqueKeysWithValues: expressions.map { ($0.key.rawValue, $0.value) }))
            case nil: break
            }
        }
        var foreignKeys: [ForeignKeySnapshot] = []
        for relationship in entity.relationships where !relationship.isToMany && !relationship.foreignKeyColumns.isEmpty {
            guard let target = schema.entity(named: relationship.target) else { continue }
            let targetKey = keyColumns(of: target, in: schema)
            for (column, targetColumn) in zip(relationship.foreignKeyColumns, targetKey) {
                columns.append(
                    ColumnSnapshot(
                        name: column, property: relationship.name, renamedFrom: relationship.renamedFrom,
                        kind: targetColumn.kind, isNullable: relationship.isOptional, defaultValue: nil, isAutoIncrement: false))
                // A key column holds what the key holds: an Int32 key is referred to by integers.
                columns[columns.count - 1].bits = targetColumn.bits
                columns[columns.count - 1].doc = relationship.doc
            }
            foreignKeys.append(
                ForeignKeySnapshot(
                    columns: relationship.foreignKeyColumns, table: target.tableName,
                    referencedColumns: targetKey.map(\.name), onDelete: onDelete(for: relationship, in: schema)))
        }
        return TableSnapshot(
            name: entity.tableName, entity: entity.name, renamedFrom: entity.renamedFrom,
            columns: columns, primaryKey: entity.primaryKeyColumns, indexes: indexes(of: entity, in: schema),
            foreignKeys: foreignKeys, doc: entity.doc)
    }

    /// The target's key columns with their kinds, following relationships in composite keys.
    static func keyColumns(of entity: Entity, in schema: Schema, depth: Int = 0) -> [(name: String, kind: StorageKind, bits: Int?)] {
        guard case .members(let members) = entity.primaryKey, depth < 16 else { return [(Entity.implicitKeyName, .integer, nil)] }
        return members.flatMap { member -> [(name: String, kind: StorageKind, bits: Int?)] in
            if let attribute = entity.attribute(named: member) { return [(attribute.columnName, kind(of: attribute, in: schema), bits(of: attribute.type))] }
            guard let relationship = entity.relationship(named: member), let target = schema.entity(named: relationship.target) else { return [] }
            let targetKey = keyColumns(of: target, in: schema, depth: depth + 1)
            return zip(relationship.foreignKeyColumns, targetKey).map { ($0, $1.kind, $1.bits) }
        }
    }

    /// What deleting the referenced row does, from the delete rule of the side that points
    /// back (the to-many side's rule decides what happens to the rows holding the key).
    static func onDelete(for relationship: Relationship, in schema: Schema) -> ForeignKeySnapshot.Action {
        let rule = relationship.inverse.flatMap { schema.entity(named: relationship.target)?.relationship(named: $0)?.deleteRule }
        switch rule {
        case .cascade?: return .cascade
        case .deny?: return .restrict
        case .noAction?: return .noAction
        case .nullify?, nil: return relationship.isOptional ? .setNull : .restrict
        }
    }

    static func joinTables(of schema: Schema) -> [TableSnapshot] {
        var tables: [TableSnapshot] = []
        for entity in schema.entities {
            for relationship in entity.relationships where relationship.isToMany {
                guard let name = relationship.joinTableName, let target = schema.entity(named: relationship.target) else { continue }
                // The owning side lists the table first; the other side would repeat it.
                guard !tables.contains(where: { $0.name == name }) else { continue }
                let sourceKey = keyColumns(of: entity, in: schema)
                let targetKey = keyColumns(of: target, in: schema)
                func column(_ name: String, _ key: (name: String, kind: StorageKind, bits: Int?)) -> ColumnSnapshot {
                    var column = ColumnSnapshot(name: name, property: nil, renamedFrom: nil, kind: key.kind, isNullable: false, defaultValue: nil, isAutoIncrement: false)
                    column.bits = key.bits
                    return column
                }
                let sourceColumns = zip(relationship.joinColumns, sourceKey).map(column)
                let targetColumns = zip(relationship.joinTargetColumns, targetKey).map(column)
                let all = sourceColumns + targetColumns
                tables.append(
                    TableSnapshot(
                        name: name, entity: nil, renamedFrom: nil, columns: all, primaryKey: all.map(\.name),
                        indexes: [IndexSnapshot(name: "\(name)_\(targetColumns.map(\.name).joined(separator: "_"))_idx", columns: targetColumns.map(\.name), isUnique: false, isFullText: false)],
                        foreignKeys: [
                            ForeignKeySnapshot(columns: sourceColumns.map(\.name), table: entity.tableName, referencedColumns: sourceKey.map(\.name), onDelete: .cascade),
                            ForeignKeySnapshot(columns: targetColumns.map(\.name), table: target.tableName, referencedColumns: targetKey.map(\.name), onDelete: .cascade),
                        ]))
            }
        }
        return tables
    }

    /// Indexes named `<table>_<columns>_idx`, `_key` (unique) and `_fts` (full text).
    static func indexes(of entity: Entity, in schema: Schema) -> [IndexSnapshot] {
        func columns(_ members: [String]) -> [String] {
            members.flatMap { member -> [String] in
                if let attribute = entity.attribute(named: member) { return [attribute.columnName] }
                return entity.relationship(named: member)?.foreignKeyColumns ?? []
            }
        }
        let keyMembers: [String] = if case .members(let members) = entity.primaryKey { members } else { [] }
        var result: [IndexSnapshot] = []
        func add(_ columns: [String], unique: Bool, fullText: Bool = false) {
            guard !columns.isEmpty, !result.contains(where: { $0.columns == columns && $0.isUnique == unique && $0.isFullText == fullText }) else { return }
            let suffix = fullText ? "fts" : unique ? "key" : "idx"
            result.append(IndexSnapshot(name: "\(entity.tableName)_\(columns.joined(separator: "_"))_\(suffix)", columns: columns, isUnique: unique, isFullText: fullText))
        }
        for attribute in entity.attributes where !attribute.isTransient {
            if attribute.isUnique, keyMembers != [attribute.name] { add([attribute.columnName], unique: true) }
            if attribute.isIndexed, !attribute.isUnique { add([attribute.columnName], unique: false) }
        }
        for unique in entity.uniques { add(columns(unique), unique: true) }
        for index in entity.indexes { add(columns(index), unique: false) }
        // Foreign keys are indexed so deletes of the referenced row do not scan the table; the
        // key of a one-to-one relationship (its inverse is to-one too) is unique, so the database
        // holds it to one.
        for relationship in entity.relationships where !relationship.isToMany && !relationship.foreignKeyColumns.isEmpty {
            let inverseIsToOne = relationship.inverse.flatMap { schema.entity(named: relationship.target)?.relationship(named: $0) }.map { !$0.isToMany } ?? false
            if inverseIsToOne, !keyMembers.contains(relationship.name) {
                if !result.contains(where: { $0.isUnique && $0.columns == relationship.foreignKeyColumns }) { add(relationship.foreignKeyColumns, unique: true) }
                continue
            }
            let covered = result.contains { $0.columns.starts(with: relationship.foreignKeyColumns) }
            if !covered, !keyMembers.contains(relationship.name) { add(relationship.foreignKeyColumns, unique: false) }
        }
        for attribute in entity.attributes where attribute.isSearchable && !attribute.isTransient {
            add([attribute.columnName], unique: false, fullText: true)
            if case .array = attribute.type { result[result.count - 1].jsonColumns = [attribute.columnName] }
        }
        return result
    }

    /// The raw values of an enum attribute, or nil for other types.
    static func enumValues(of type: AttributeType, in schema: Schema) -> [String]? {
        guard case .enumeration(let name) = type, let enumType = schema.enumType(named: name) else { return nil }
        return enumType.cases.map { enumCase in
            switch enumCase.rawValue {
            case .string(let raw): raw
            case .int(let raw): String(raw)
            }
        }
    }

    /// The width of narrower integers and of Float, nil for 64 bits.
    public static func bits(of type: AttributeType) -> Int? {
        guard case .scalar(let scalar) = type else { return nil }
        switch scalar {
        case .int8: return 8
        case .int16: return 16
        case .int32, .float: return 32
        default: return nil
        }
    }

    /// How values of a type are kept.
    public static func kind(of type: AttributeType, in schema: Schema) -> StorageKind {
        switch type {
        case .scalar(let scalar):
            switch scalar {
            case .string: .text
            case .int, .int8, .int16, .int32, .int64: .integer
            case .double, .float: .real
            case .bool: .boolean
            case .date: .date
            case .data: .blob
            case .uuid: .uuid
            case .url: .url
            case .decimal: .decimal
            }
        case .enumeration(let name): schema.enumType(named: name)?.rawType == .int ? .integer : .text
        case .value, .array, .unresolved: .json
        }
    }

    /// How an attribute's values are kept: its type's kind, or a calendar day (`dateOnly`).
    public static func kind(of attribute: Attribute, in schema: Schema) -> StorageKind {
        attribute.isDateOnly ? .day : kind(of: attribute.type, in: schema)
    }

    /// An attribute's checked default (or backfill value) as its column stores it; a day
    /// column's date is the day alone.
    static func columnDefault(_ value: DefaultValue, of attribute: Attribute, in schema: Schema) -> ColumnDefault {
        if attribute.isDateOnly, case .date(let text) = value { return .text(String(normalizedDate(text).prefix(10))) }
        return columnDefault(value, type: attribute.type, in: schema)
    }

    /// A checked default as the database stores it: enum cases as raw values, dates as UTC
    /// ISO 8601 text with milliseconds, booleans as 0 and 1, JSON as text.
    static func columnDefault(_ value: DefaultValue, type: AttributeType, in schema: Schema) -> ColumnDefault {
        switch value {
        case .null: return .null
        case .string(let text), .url(let text), .decimal(let text): return .text(text)
        case .integer(let number): return kind(of: type, in: schema) == .real ? .real(Double(number)) : .integer(number)
        case .double(let number): return .real(number)
        case .bool(let flag): return .integer(flag ? 1 : 0)
        case .now: return .now
        case .generatedUUID: return .uuid
        case .uuid(let text): return .text(text.lowercased())
        case .date(let text): return .text(normalizedDate(text))
        case .data(let base64):
            let bytes = Data(base64Encoded: base64).map(Array.init) ?? []
            return .blob(bytes.map { String(format: "%02x", $0) }.joined())
        case .enumCase(let name):
            guard case .enumeration(let enumName) = type, let found = schema.enumType(named: enumName)?.cases.first(where: { $0.name == name }) else { return .text(name) }
            switch found.rawValue {
            case .string(let raw): return .text(raw)
            case .int(let raw): return .integer(raw)
            }
        case .array, .value: return .text(JSONDefault.text(value, type: type, schema: schema))
        }
    }

    /// `2024-01-31` or `2024-01-31T10:00+02:00` as `2024-01-31T08:00:00.000Z`.
    static func normalizedDate(_ text: String) -> String {
        ISO8601Date.parse(text).map(ISO8601Date.canonical) ?? text
    }
}

/// Array and value-type defaults as JSON text, with value fields under their JSON keys.
enum JSONDefault {
    static func text(_ value: DefaultValue, type: AttributeType, schema: Schema) -> String {
        switch value {
        case .array(let items):
            let element: AttributeType = if case .array(let inner) = type { inner } else { type }
            return "[" + items.map { text($0, type: element, schema: schema) }.joined(separator: ",") + "]"
        case .value(let fields):
            guard case .value(let name) = type, let valueType = schema.valueType(named: name) else { return "{}" }
            return "{"
                + zip(fields, valueType.fields).map { field, declared in
                    quoted(declared.jsonKey) + ":" + text(field.value, type: declared.type, schema: schema)
                }.joined(separator: ",") + "}"
        case .null: return "null"
        case .integer(let number): return String(number)
        case .double(let number): return String(number)
        case .bool(let flag): return flag ? "true" : "false"
        case .decimal(let text): return text
        case .enumCase(let name):
            guard case .enumeration(let enumName) = type, let found = schema.enumType(named: enumName)?.cases.first(where: { $0.name == name }) else { return quoted(name) }
            switch found.rawValue {
            case .string(let raw): return quoted(raw)
            case .int(let raw): return String(raw)
            }
        case .string(let text), .url(let text), .uuid(let text), .date(let text), .data(let text): return quoted(text)
        case .now, .generatedUUID: return "null"
        }
    }

    static func quoted(_ text: String) -> String { TextEscaping.json(text) }
}
