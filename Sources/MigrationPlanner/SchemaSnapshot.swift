/// The resolved schema as the database sees it: tables, columns, keys, indexes and foreign
/// keys. Written beside each migration as canonical JSON, so the next diff needs files only.
public struct SchemaSnapshot: Codable, Sendable, Hashable {
    public var schema: String
    public var version: Int
    public var tables: [TableSnapshot]

    public init(schema: String, version: Int, tables: [TableSnapshot]) {
        self.schema = schema
        self.version = version
        self.tables = tables
    }

    public func table(named name: String) -> TableSnapshot? { tables.first { $0.name == name } }
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

    public func column(named name: String) -> ColumnSnapshot? { columns.first { $0.name == name } }
}

/// How a value is kept; each dialect maps it to a column type.
public enum ColumnKind: String, Codable, Sendable, Hashable {
    case text, integer, real, boolean, date, blob, uuid, url, decimal, json
}

public struct ColumnSnapshot: Codable, Sendable, Hashable {
    public var name: String
    /// The attribute or relationship the column stores.
    public var property: String?
    /// The property's previous name, when the schema says `renamedFrom`.
    public var renamedFrom: String?
    public var kind: ColumnKind
    public var isNullable: Bool
    public var defaultValue: ColumnDefault?
    /// The implicit integer key the database assigns.
    public var isAutoIncrement: Bool
    /// For enum columns, the raw values the column may hold, in case order.
    public var enumValues: [String]? = nil
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
}

public struct ForeignKeySnapshot: Codable, Sendable, Hashable {
    public enum Action: String, Codable, Sendable, Hashable {
        case cascade = "CASCADE", setNull = "SET NULL", restrict = "RESTRICT", noAction = "NO ACTION"
    }

    public var columns: [String]
    public var table: String
    public var referencedColumns: [String]
    public var onDelete: Action
}
