/// Static descriptions of a schema that generated code carries, so the runtime store and the
/// migrator never read YAML at run time.
public struct SchemaDescriptor: Sendable, Hashable {
    public let name: String
    public let version: Int
    public let entities: [EntityDescriptor]
    /// Whether the store records a history of committed changes (the schema's `history:` key).
    public let recordsHistory: Bool
    /// Whether an insert's history entry carries the inserted values (else its key only).
    public let recordsInsertValues: Bool

    public init(name: String, version: Int, recordsHistory: Bool = true, recordsInsertValues: Bool = true, entities: [EntityDescriptor]) {
        self.name = name
        self.version = version
        self.recordsHistory = recordsHistory
        self.recordsInsertValues = recordsInsertValues
        self.entities = entities
    }

    public func entity(named name: String) -> EntityDescriptor? { entities.first { $0.name == name } }
}

public struct EntityDescriptor: Sendable, Hashable {
    public let name: String
    public let table: String
    public let renamedFrom: String?
    /// Primary key columns, in order.
    public let primaryKey: [String]
    /// True when the key is the implicit integer `id` the database assigns.
    public let hasImplicitKey: Bool
    /// Stored attributes in declaration order (transient ones are not here).
    public let columns: [ColumnDescriptor]
    public let relationships: [RelationshipDescriptor]
    public let indexes: [IndexDescriptor]

    public init(
        name: String, table: String, renamedFrom: String? = nil, primaryKey: [String], hasImplicitKey: Bool,
        columns: [ColumnDescriptor], relationships: [RelationshipDescriptor], indexes: [IndexDescriptor]
    ) {
        self.name = name
        self.table = table
        self.renamedFrom = renamedFrom
        self.primaryKey = primaryKey
        self.hasImplicitKey = hasImplicitKey
        self.columns = columns
        self.relationships = relationships
        self.indexes = indexes
    }

    public func column(forProperty property: String) -> ColumnDescriptor? { columns.first { $0.property == property } }
    public func relationship(named name: String) -> RelationshipDescriptor? { relationships.first { $0.name == name } }
}

/// How a value is kept in a column; dialects choose the SQL type.
public enum StorageKind: String, Sendable, Hashable, CaseIterable, Codable {
    case text, integer, real, boolean, date, blob, uuid, url, decimal
    /// Arrays and value types, as JSON text.
    case json
}

public struct ColumnDescriptor: Sendable, Hashable {
    /// The Swift property.
    public let property: String
    public let column: String
    public let storage: StorageKind
    /// The Swift type without optionality, e.g. `String`, `[String]`, `Coordinate`.
    public let swiftType: String
    public let isOptional: Bool
    public let isPrimaryKey: Bool
    public let isUnique: Bool
    public let isIndexed: Bool
    public let isSearchable: Bool
    public let usesExternalStorage: Bool
    public let isEncrypted: Bool
    /// `encrypt: deterministic`: equal values give equal ciphertexts.
    public let encryptsDeterministically: Bool
    public let preservesValueOnDeletion: Bool
    public let renamedFrom: String?
    public let defaultValue: DefaultValueDescriptor?
    /// The key the model's Codable conformance uses for this property.
    public let jsonKey: String

    public init(
        property: String, column: String, jsonKey: String? = nil, storage: StorageKind, swiftType: String, isOptional: Bool,
        isPrimaryKey: Bool = false, isUnique: Bool = false, isIndexed: Bool = false, isSearchable: Bool = false,
        usesExternalStorage: Bool = false, isEncrypted: Bool = false, encryptsDeterministically: Bool = false, preservesValueOnDeletion: Bool = false,
        renamedFrom: String? = nil, defaultValue: DefaultValueDescriptor? = nil
    ) {
        self.property = property
        self.column = column
        self.storage = storage
        self.swiftType = swiftType
        self.isOptional = isOptional
        self.isPrimaryKey = isPrimaryKey
        self.isUnique = isUnique
        self.isIndexed = isIndexed
        self.isSearchable = isSearchable
        self.usesExternalStorage = usesExternalStorage
        self.isEncrypted = isEncrypted
        self.encryptsDeterministically = encryptsDeterministically
        self.preservesValueOnDeletion = preservesValueOnDeletion
        self.renamedFrom = renamedFrom
        self.defaultValue = defaultValue
        self.jsonKey = jsonKey ?? property
    }
}

extension ColumnDescriptor {
    /// What an attribute is, beyond its name, storage and type, for the compact form.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let optional = Flags(rawValue: 1 << 0)
        public static let primaryKey = Flags(rawValue: 1 << 1)
        public static let unique = Flags(rawValue: 1 << 2)
        public static let indexed = Flags(rawValue: 1 << 3)
        public static let searchable = Flags(rawValue: 1 << 4)
        public static let externalStorage = Flags(rawValue: 1 << 5)
        public static let encrypted = Flags(rawValue: 1 << 6)
        /// `encrypt: deterministic` (implies `encrypted`).
        public static let deterministic = Flags(rawValue: 1 << 7)
        public static let preservesValueOnDeletion = Flags(rawValue: 1 << 8)
    }

    /// The compact form generated metadata uses: only what differs from the usual is written;
    /// the column and the JSON key default to the property's name.
    public static func attribute(
        _ property: String, _ storage: StorageKind, _ swiftType: String, column: String? = nil, jsonKey: String? = nil,
        _ flags: Flags = [], renamedFrom: String? = nil, default defaultValue: DefaultValueDescriptor? = nil
    ) -> ColumnDescriptor {
        ColumnDescriptor(
            property: property, column: column ?? property, jsonKey: jsonKey, storage: storage, swiftType: swiftType,
            isOptional: flags.contains(.optional), isPrimaryKey: flags.contains(.primaryKey), isUnique: flags.contains(.unique),
            isIndexed: flags.contains(.indexed), isSearchable: flags.contains(.searchable), usesExternalStorage: flags.contains(.externalStorage),
            isEncrypted: flags.contains(.encrypted) || flags.contains(.deterministic), encryptsDeterministically: flags.contains(.deterministic),
            preservesValueOnDeletion: flags.contains(.preservesValueOnDeletion), renamedFrom: renamedFrom, defaultValue: defaultValue)
    }
}

/// A column default as the database sees it.
public enum DefaultValueDescriptor: Sendable, Hashable {
    case null
    /// A literal in its canonical text form: `0`, `1.5`, `true`, `UTC`, an ISO 8601 date, JSON.
    case literal(String)
    /// The time of insertion.
    case now
    /// A new random UUID per row.
    case generatedUUID
}

public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
    case nullify, cascade, deny, noAction
}

public struct RelationshipDescriptor: Sendable, Hashable {
    public let name: String
    public let target: String
    public let isToMany: Bool
    public let isOptional: Bool
    public let inverse: String?
    public let deleteRule: DeleteRule
    public let minCount: Int?
    public let maxCount: Int?
    /// Columns of this entity's table holding the target's key; empty when the other side or a
    /// join table stores the link.
    public let foreignKeyColumns: [String]
    public let joinTable: String?
    public let renamedFrom: String?
    /// The model property (and Codable key) holding the target's key, for to-one relationships
    /// that store it: `originID`.
    public let keyProperty: String?
    /// In the join table, the columns holding this side's key and the target's.
    public let joinColumns: [String]
    public let joinTargetColumns: [String]

    public init(
        name: String, target: String, isToMany: Bool = false, isOptional: Bool = false, inverse: String? = nil, deleteRule: DeleteRule = .nullify,
        minCount: Int? = nil, maxCount: Int? = nil, foreignKeyColumns: [String] = [], joinTable: String? = nil,
        renamedFrom: String? = nil, keyProperty: String? = nil, joinColumns: [String] = [], joinTargetColumns: [String] = []
    ) {
        self.name = name
        self.target = target
        self.isToMany = isToMany
        self.isOptional = isOptional
        self.inverse = inverse
        self.deleteRule = deleteRule
        self.minCount = minCount
        self.maxCount = maxCount
        self.foreignKeyColumns = foreignKeyColumns
        self.joinTable = joinTable
        self.renamedFrom = renamedFrom
        self.keyProperty = keyProperty
        self.joinColumns = joinColumns
        self.joinTargetColumns = joinTargetColumns
    }
}

public struct IndexDescriptor: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case plain, unique
        /// Full-text search over text columns.
        case fullText
    }

    public let name: String
    public let columns: [String]
    public let kind: Kind

    public init(name: String, columns: [String], kind: Kind) {
        self.name = name
        self.columns = columns
        self.kind = kind
    }

    // Short spellings for generated metadata, which lists every index of every entity.
    public static func plain(_ name: String, _ columns: [String]) -> IndexDescriptor { IndexDescriptor(name: name, columns: columns, kind: .plain) }
    public static func unique(_ name: String, _ columns: [String]) -> IndexDescriptor { IndexDescriptor(name: name, columns: columns, kind: .unique) }
    public static func fullText(_ name: String, _ columns: [String]) -> IndexDescriptor { IndexDescriptor(name: name, columns: columns, kind: .fullText) }
}
