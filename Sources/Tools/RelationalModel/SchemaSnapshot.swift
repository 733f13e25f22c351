import Foundation
import MigrationFiles
import SchemaMetadata

/// A role's access to every table of a schema (PostgreSQL's GRANT).
public struct GrantSnapshot: Codable, Sendable, Hashable {
    public enum Access: String, Codable, Sendable, Hashable {
        case read, write

        /// The table privileges it stands for.
        public var privileges: [String] { self == .read ? ["SELECT"] : ["SELECT", "INSERT", "UPDATE", "DELETE"] }
    }

    public var role: String
    public var access: Access

    public init(role: String, access: Access) {
        self.role = role
        self.access = access
    }
}

/// The relational model: a validated schema as the database sees it, derived once (by
/// `SnapshotBuilder`) and read by everything downstream: templates and the runtime metadata
/// they generate, the differ, lint, and the SQL renderers. Tables, columns with storage kinds,
/// defaults, keys, indexes, foreign keys with their actions, join tables and full-text indexes.
/// Written beside each migration as canonical JSON (a snapshot), so the next diff needs files only.
public struct SchemaSnapshot: Codable, Sendable, Hashable {
    /// What the snapshot records: nil for snapshots written before docs, one-to-one keys and
    /// the JSON columns of full-text indexes were (they match a schema whatever its docs, with
    /// its one-to-one relationships and searchable arrays indexed as they were then);
    /// `currentFormat` since.
    public var format: Int?
    public var schema: String
    public var version: Int
    public var tables: [TableSnapshot]
    /// Roles and their access to every table, by role; nil (not written) when the schema grants
    /// nothing, so snapshots of schemas without grants stay as they were.
    public var grants: [GrantSnapshot]? = nil

    public static let currentFormat = 2

    public init(schema: String, version: Int, tables: [TableSnapshot], format: Int? = SchemaSnapshot.currentFormat) {
        self.schema = schema
        self.version = version
        self.tables = tables
        self.format = format
    }

    public func table(named name: String) -> TableSnapshot? { tables.first { $0.name == name } }

    /// The table of an entity.
    public func table(forEntity entity: String) -> TableSnapshot? { tables.first { $0.entity == entity } }

    /// Whether `newer` describes the same database. What this snapshot did not record yet is
    /// not a difference: widths (no `bits`) match any width; a snapshot of the first format
    /// matches any docs, and a one-to-one relationship's unique index where it had a plain one.
    public func matches(_ newer: SchemaSnapshot) -> Bool {
        // A backfill only guides the migration that needs it; it changes no table.
        func withoutBackfills(_ tables: [TableSnapshot]) -> [TableSnapshot] {
            tables.map { table in
                var table = table
                for index in table.columns.indices { table.columns[index].backfill = nil }
                return table
            }
        }
        return withoutBackfills(adjusted(newer).tables) == withoutBackfills(tables) && (newer.grants ?? []) == (grants ?? [])
    }

    /// The access `role` has to the tables, if any.
    public func access(of role: String) -> GrantSnapshot.Access? { grants?.first { $0.role == role }?.access }

    /// `newer` without the facts this snapshot was written too early to record.
    public func adjusted(_ newer: SchemaSnapshot) -> SchemaSnapshot {
        var adjusted = newer
        for (tableIndex, table) in adjusted.tables.enumerated() {
            let old = self.table(named: table.name)
            for (columnIndex, column) in table.columns.enumerated() where old?.column(named: column.name)?.bits == nil && old != nil {
                adjusted.tables[tableIndex].columns[columnIndex].bits = nil
            }
            guard format == nil else { continue }
            adjusted.tables[tableIndex].doc = nil
            for columnIndex in table.columns.indices { adjusted.tables[tableIndex].columns[columnIndex].doc = nil }
            for indexIndex in table.indexes.indices { adjusted.tables[tableIndex].indexes[indexIndex].jsonColumns = nil }
            guard let old else { continue }
            for (indexIndex, index) in table.indexes.enumerated() where index.isUnique && table.foreignKeys.contains(where: { $0.columns == index.columns }) {
                if let plain = old.indexes.first(where: { !$0.isUnique && $0.columns == index.columns }),
                    !old.indexes.contains(where: { $0.isUnique && $0.columns == index.columns })
                {
                    adjusted.tables[tableIndex].indexes[indexIndex] = plain
                }
            }
        }
        return adjusted
    }

    /// `model` as the database its migrations built holds it, when this is the newest
    /// migration's snapshot: one of the first format that matches keeps its indexes (a
    /// one-to-one key it indexed plainly), so generated code never names a unique constraint
    /// the database lacks. Otherwise `model` itself.
    public func databaseModel(of model: SchemaSnapshot) -> SchemaSnapshot {
        guard format == nil, matches(model) else { return model }
        var kept = model
        let old = adjusted(model)
        for index in kept.tables.indices { kept.tables[index].indexes = old.tables[index].indexes }
        return kept
    }

}

extension MigrationDirectory {
    /// The snapshot after the newest migration, or nil when there is none.
    public func latestSnapshot() throws -> SchemaSnapshot? {
        guard let last = entries().last else { return nil }
        return try snapshot(of: last)
    }

    /// The snapshot a migration wrote: the tables after it.
    public func snapshot(of entry: Entry) throws -> SchemaSnapshot {
        guard let bytes = bytes(of: entry.snapshotFile) else { throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path + "/" + entry.snapshotFile]) }
        return try SchemaSnapshot.decode(Data(bytes))
    }
}

public struct TableSnapshot: Codable, Sendable, Hashable {
    public var name: String
    /// The entity the table stores; nil for join tables.
    public var entity: String?
    /// The entity's previous name (not its table's), when the schema says `renamedFrom`.
    public var renamedFrom: String?
    public var columns: [ColumnSnapshot]
    public var primaryKey: [String]
    public var indexes: [IndexSnapshot]
    public var foreignKeys: [ForeignKeySnapshot]
    /// The entity's `doc`, for the database's own comment on the table.
    public var doc: String? = nil

    public init(
        name: String, entity: String?, renamedFrom: String?, columns: [ColumnSnapshot], primaryKey: [String],
        indexes: [IndexSnapshot], foreignKeys: [ForeignKeySnapshot], doc: String? = nil
    ) {
        self.doc = doc
        self.name = name
        self.entity = entity
        self.renamedFrom = renamedFrom
        self.columns = columns
        self.primaryKey = primaryKey
        self.indexes = indexes
        self.foreignKeys = foreignKeys
    }

    public func column(named name: String) -> ColumnSnapshot? { columns.first { $0.name == name } }
}

public struct ColumnSnapshot: Codable, Sendable, Hashable {
    public var name: String
    /// The attribute or relationship the column stores.
    public var property: String?
    /// The property's previous name, when the schema says `renamedFrom`.
    public var renamedFrom: String?
    public var kind: StorageKind
    public var isNullable: Bool
    public var defaultValue: ColumnDefault?
    /// The implicit integer key the database assigns.
    public var isAutoIncrement: Bool
    /// For enum columns, the raw values the column may hold, in case order.
    public var enumValues: [String]? = nil
    /// The width of a narrower number: 8, 16 or 32 for `Int8`, `Int16`, `Int32`, 32 for
    /// `Float`; nil for 64 bits. Dialects with sized types (PostgreSQL) read it.
    public var bits: Int? = nil
    /// For decimals: the digits kept in all and after the point (`numeric(precision, scale)`).
    public var precision: Int? = nil
    public var scale: Int? = nil
    /// The attribute's or relationship's `doc`, for the database's comment on the column.
    public var doc: String? = nil
    /// `Entity.property` whose values this column takes from another table (a table split).
    public var movedFrom: String? = nil
    /// What fills existing rows when the column is added or becomes required (not a default).
    public var backfill: ColumnBackfill? = nil

    public init(
        name: String, property: String?, renamedFrom: String?, kind: StorageKind, isNullable: Bool,
        defaultValue: ColumnDefault?, isAutoIncrement: Bool, enumValues: [String]? = nil, bits: Int? = nil
    ) {
        self.bits = bits
        self.name = name
        self.property = property
        self.renamedFrom = renamedFrom
        self.kind = kind
        self.isNullable = isNullable
        self.defaultValue = defaultValue
        self.isAutoIncrement = isAutoIncrement
        self.enumValues = enumValues
    }
}

/// The value a migration writes into existing rows: a literal, or an SQL expression per dialect
/// (keyed by the dialect's name).
public enum ColumnBackfill: Codable, Sendable, Hashable {
    case value(ColumnDefault)
    case sql([String: String])
}

/// A column default, independent of the dialect that spells it.
public enum ColumnDefault: Codable, Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    /// Hexadecimal bytes.
    case blob(String)
    /// The time of insertion.
    case now
    /// A new random UUID per row.
    case uuid

    /// The default as dialect-neutral text for the runtime metadata: numbers as written (whole
    /// reals without a fraction), booleans as `true`/`false`, text as is, bytes as base64.
    public func canonicalText(kind: StorageKind) -> String {
        switch self {
        case .null: "null"
        case .integer(let number): kind == .boolean ? (number != 0 ? "true" : "false") : String(number)
        case .real(let number): number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .text(let text): text
        case .blob(let hex):
            Data(
                stride(from: 0, to: hex.count - 1, by: 2).compactMap { offset -> UInt8? in
                    let start = hex.index(hex.startIndex, offsetBy: offset)
                    return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)
                }
            ).base64EncodedString()
        case .now: "now"
        case .uuid: "uuid"
        }
    }

    /// Whether the value is the same for every row (SQLite's ALTER TABLE ADD COLUMN needs that).
    public var isConstant: Bool {
        switch self {
        case .now, .uuid: false
        default: true
        }
    }
}

public struct IndexSnapshot: Codable, Sendable, Hashable {
    public var name: String
    public var columns: [String]
    public var isUnique: Bool
    /// A full-text index over text columns.
    public var isFullText: Bool
    /// Of a full-text index's columns, those holding a JSON array of strings (`[String]`): they
    /// are indexed, and shown in snippets, as their strings separated by spaces.
    public var jsonColumns: [String]? = nil

    public init(name: String, columns: [String], isUnique: Bool, isFullText: Bool, jsonColumns: [String]? = nil) {
        self.jsonColumns = jsonColumns
        self.name = name
        self.columns = columns
        self.isUnique = isUnique
        self.isFullText = isFullText
    }
}

public struct ForeignKeySnapshot: Codable, Sendable, Hashable {
    public enum Action: String, Codable, Sendable, Hashable {
        case cascade = "CASCADE", setNull = "SET NULL", restrict = "RESTRICT", noAction = "NO ACTION"
    }

    public var columns: [String]
    public var table: String
    public var referencedColumns: [String]
    public var onDelete: Action

    public init(columns: [String], table: String, referencedColumns: [String], onDelete: Action) {
        self.columns = columns
        self.table = table
        self.referencedColumns = referencedColumns
        self.onDelete = onDelete
    }
}
