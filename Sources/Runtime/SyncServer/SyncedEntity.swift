import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore

/// What the server knows of one synced entity: the names a sync record uses for its values
/// (attributes, and to-one relationships by the key they hold), the columns behind them, its
/// rules and its scope.
struct SyncedEntity: Sendable {
    let descriptor: EntityDescriptor
    let rules: SyncRules
    let scope: SyncDescriptor.Scope
    /// The key's column: synced entities have one key, a UUID the device makes.
    let keyColumn: String
    /// Each field's column, by the field's name in sync records.
    let columns: [String: String]
    /// Each column's field name.
    let fields: [String: String]

    var name: String { descriptor.name }

    init?(_ descriptor: EntityDescriptor) {
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
        fields = Dictionary(columns.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// A record's values by field name, from its stored columns.
    func fieldValues(of record: StoredRecord) -> [String: StoredValue] {
        var values: [String: StoredValue] = [:]
        for (column, value) in zip(record.columns, record.values) {
            if let field = fields[column] { values[field] = value }
        }
        return values
    }

    /// The key's stored value, from its text on the wire: a UUID, spelled as the store spells
    /// it (lowercase), so that one record has one key.
    static func storedKey(_ text: String) -> StoredValue? {
        guard let uuid = UUID(uuidString: text), uuid.uuidString.lowercased() == text else { return nil }
        return .text(text)
    }

    /// The key's text on the wire.
    static func keyText(_ value: StoredValue) -> String? {
        switch value {
        case .text(let text): text.lowercased()
        default: nil
        }
    }
}

/// A user id compared with a scope's attribute: text as it is, a UUID in its stored spelling.
func sameUser(_ value: StoredValue?, _ user: String) -> Bool {
    guard case .text(let text)? = value else { return false }
    return text == user || text == user.lowercased() && UUID(uuidString: user) != nil
}
