import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore

/// What the server knows of one synced entity: the names a sync record uses for its values
/// (attributes, and to-one relationships by the key they hold), the columns behind them, its
/// rules and its scope.
package struct SyncedEntity: Sendable {
    package let descriptor: EntityDescriptor
    package let rules: SyncRules
    package let scope: SyncDescriptor.Scope
    /// The key's column: synced entities have one key, a UUID the device makes.
    package let keyColumn: String
    /// Each field's column, by the field's name in sync records.
    package let columns: [String: String]
    /// Each column's field name.
    package let fields: [String: String]
    /// The fields whose columns are encrypted: their values stay sealed in a kept state.
    package let encryptedFields: Set<String>

    package var name: String { descriptor.name }

    package init?(_ descriptor: EntityDescriptor) {
        guard let sync = descriptor.sync, descriptor.primaryKey.count == 1 else { return nil }
        self.descriptor = descriptor
        rules = SyncRules(sync)
        scope = sync.scope
        keyColumn = descriptor.primaryKey[0]
        var columns: [String: String] = [:]
        for column in descriptor.columns where !column.isPrimaryKey { columns[column.property] = column.column }
        for relationship in descriptor.relationships where !relationship.isToMany && relationship.foreignKeyColumns.count == 1 {
            columns[relationship.name] = relationship.foreignKeyColumns[0]
        }
        self.columns = columns
        encryptedFields = Set(descriptor.columns.filter { $0.isEncrypted && !$0.isPrimaryKey }.map(\.property))
        fields = Dictionary(columns.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Where this entity is a table split's part keyed as the record it came from: its key
    /// `movedFrom` the key of an entity of its own version (`newer`, by name, which is how
    /// `movedFrom` names it). Answers that entity's name in the earlier version, and the fields
    /// moved from it, each by this entity's name to its name there. The earlier name is the same
    /// name, else the one it was renamed from, as the migration planner matches them; with
    /// `earlier` (the earlier version's entities, where known: the server), the one that exists
    /// there, each moved field one of its own. Without, `formerly` is the name to try after.
    package func splitSource(
        in newer: [String: SyncedEntity], earlier: [String: SyncedEntity]? = nil
    ) -> (entity: String, fields: [String: String], formerly: String?)? {
        guard let key = descriptor.columns.first(where: { $0.column == keyColumn }), let (name, keyField) = Self.movedFrom(key),
            let current = newer[name], current.descriptor.columns.first(where: { $0.column == current.keyColumn })?.property == keyField
        else { return nil }
        let formerly = current.descriptor.renamedFrom
        var earlierName = name
        var source: SyncedEntity?
        if let earlier {
            guard let found = [name, formerly].compactMap({ $0 }).first(where: { earlier[$0] != nil }) else { return nil }
            earlierName = found
            source = earlier[found]
        }
        var fields: [String: String] = [:]
        for column in descriptor.columns where !column.isPrimaryKey && columns[column.property] != nil {
            guard let (from, field) = Self.movedFrom(column), from == name, source.map({ $0.columns[field] != nil }) ?? true else { continue }
            fields[column.property] = field
        }
        return fields.isEmpty ? nil : (earlierName, fields, earlier == nil ? formerly : nil)
    }

    /// A column's `movedFrom`, split: the earlier entity and attribute.
    static func movedFrom(_ column: ColumnDescriptor) -> (entity: String, field: String)? {
        guard let moved = column.movedFrom, let dot = moved.firstIndex(of: ".") else { return nil }
        return (String(moved[..<dot]), String(moved[moved.index(after: dot)...]))
    }

    /// A record's values by field name, from its stored columns.
    package func fieldValues(of record: StoredRecord) -> [String: StoredValue] {
        // Sized up front: grown one field at a time, the maps were rehashed for every record.
        var values = [String: StoredValue](minimumCapacity: record.columns.count)
        for (column, value) in zip(record.columns, record.values) {
            if let field = fields[column] { values[field] = value }
        }
        return values
    }

    /// The key's stored value, from its text on the wire: a UUID, spelled as the store spells
    /// it (lowercase), so that one record has one key.
    package static func storedKey(_ text: String) -> StoredValue? {
        isLowercaseUUID(text) ? .text(text) : nil
    }

    /// Whether `text` is a UUID as the store spells it: 36 characters, lowercase hexadecimal in
    /// groups of 8-4-4-4-12. Checked by hand: Foundation's parser (`sscanf`) and its spelling
    /// back (`snprintf`) took a twentieth of a first sync, once for every record.
    static func isLowercaseUUID(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == 36 else { return false }
        for (index, byte) in utf8.enumerated() {
            switch index {
            case 8, 13, 18, 23: if byte != UInt8(ascii: "-") { return false }
            default: if !((UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)) { return false }
            }
        }
        return true
    }

    /// The key's text on the wire.
    package static func keyText(_ value: StoredValue) -> String? {
        switch value {
        case .text(let text): text.lowercased()
        default: nil
        }
    }

    /// The record's values as its row holds them: counters as their sums.
    package func rowValues(of record: SyncRecord) -> [String: StoredValue] {
        var values = record.values
        for counter in rules.counters where record.counterTotals[counter] != nil { values[counter] = .integer(record.counter(counter)) }
        return values
    }

    /// A new row's column values from a record: its key, and each field's column.
    package func rowColumns(of record: SyncRecord, key: StoredValue) -> [String: StoredValue] {
        let values = rowValues(of: record)
        var row = [String: StoredValue](minimumCapacity: values.count + 1)
        row[keyColumn] = key
        for (field, value) in values {
            if let column = columns[field] { row[column] = value }
        }
        return row
    }

    /// Makes the row what the record says, through the store (its types, unique values, delete
    /// rules and history apply): deleted, inserted, or the columns whose values differ updated.
    package func write(_ record: SyncRecord, key: StoredValue, over row: StoredRecord?, in store: isolated Store) throws(StoreError) {
        if record.isDeleted {
            if row != nil { try store.deleteRecord(of: descriptor, key: [key]) }
            return
        }
        var changed: [String: StoredValue] = [:]
        let stored = row.map(fieldValues) ?? [:]
        for (field, value) in rowValues(of: record) where row == nil || stored[field] != value {
            if let column = columns[field] { changed[column] = value }
        }
        guard row != nil else {
            changed[keyColumn] = key
            _ = try store.insertRecord(of: descriptor, values: changed)
            return
        }
        guard !changed.isEmpty else { return }
        _ = try store.updateRecord(of: descriptor, key: [key], set: changed)
    }

    /// The entities ordered so that each comes after those its to-one relationships point to
    /// (a list before its items); a cycle keeps the schema's order for what it leaves.
    package static func parentsFirst(_ entities: [SyncedEntity]) -> [SyncedEntity] {
        var placed: [SyncedEntity] = []
        var left = entities.sorted { $0.name < $1.name }
        while !left.isEmpty {
            let ready = left.firstIndex { entity in
                entity.descriptor.relationships.allSatisfy { relationship in
                    // Only a relationship whose key this entity's row holds makes a parent (a
                    // one-to-one's other side holds none).
                    relationship.foreignKeyColumns.isEmpty || relationship.target == entity.name || !left.contains { $0.name == relationship.target }
                }
            }
            placed.append(left.remove(at: ready ?? 0))
        }
        return placed
    }
}

extension SyncedEntity {
    /// A field's name in the version before this one (`earlierName(of:renamedFrom:among:)`).
    package func earlierName(of field: String) -> String? {
        Self.earlierName(of: field, renamedFrom: descriptor.columns.first { $0.property == field }?.renamedFrom, among: descriptor.columns.map(\.renamedFrom))
    }

    /// A name in the version before: the one it was renamed from, else its own, unless another
    /// was renamed from that one (`renamedFroms`: the newer version's): then it is new (nil).
    package static func earlierName(of name: String, renamedFrom: String?, among renamedFroms: [String?]) -> String? {
        if let renamedFrom { return renamedFrom }
        return renamedFroms.contains(name) ? nil : name
    }
}
