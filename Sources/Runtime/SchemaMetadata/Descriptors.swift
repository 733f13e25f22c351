/// Static descriptions of a schema that generated code carries, so the runtime store and the
/// migrator never read YAML at run time.
public struct SchemaDescriptor: Sendable, Hashable {
    /// The schema's name, as the YAML's `schema:` gives it: `Flights`.
    public let name: String
    /// The schema's version: the newest migration's number.
    public let version: Int
    /// Every entity, in the schema's order.
    public let entities: [EntityDescriptor]
    /// Whether the store records a history of committed changes (the schema's `history:` key).
    public let recordsHistory: Bool
    /// Whether an insert's history entry carries the inserted values (else its key only).
    public let recordsInsertValues: Bool

    /// A schema as generated metadata writes it:
    ///
    ///     public static let descriptor = SchemaDescriptor(name: "Flights", version: 4, entities: [entity0, entity1])
    public init(name: String, version: Int, recordsHistory: Bool = true, recordsInsertValues: Bool = true, entities: [EntityDescriptor]) {
        self.name = name
        self.version = version
        self.recordsHistory = recordsHistory
        self.recordsInsertValues = recordsInsertValues
        self.entities = entities
    }

    /// The entity with this name, or nil.
    public func entity(named name: String) -> EntityDescriptor? { entities.first { $0.name == name } }
    /// The entity stored in this table, or nil.
    ///
    ///     GarageSchema.descriptor.entity(forTable: "people")?.name   // "Person"
    public func entity(forTable table: String) -> EntityDescriptor? { entities.first { $0.table == table } }
}

/// One entity: its table, key, stored columns, relationships and indexes.
public struct EntityDescriptor: Sendable, Hashable {
    /// The entity's (and its model type's) name: `Flight`.
    public let name: String
    /// The table that stores it: `flights`.
    public let table: String
    /// The entity's earlier name, when the schema renamed it.
    public let renamedFrom: String?
    /// Primary key columns, in order.
    public let primaryKey: [String]
    /// True when the key is the implicit integer `id` the database assigns.
    public let hasImplicitKey: Bool
    /// Stored attributes in declaration order (transient ones are not here).
    public let columns: [ColumnDescriptor]
    /// Relationships in declaration order.
    public let relationships: [RelationshipDescriptor]
    /// Indexes of its table: plain, unique and full-text.
    public let indexes: [IndexDescriptor]
    /// How it syncs between devices and a server (the schema's `sync:`); nil when it does not.
    public let sync: SyncDescriptor?

    /// An entity as generated metadata writes it (one `static let` per entity).
    ///
    ///     let airline = EntityDescriptor(name: "Airline", table: "airlines", primaryKey: ["id"], hasImplicitKey: true,
    ///                                    columns: [.attribute("code", .text, "String", [.unique])], relationships: [], indexes: [])
    public init(
        name: String, table: String, renamedFrom: String? = nil, primaryKey: [String], hasImplicitKey: Bool,
        columns: [ColumnDescriptor], relationships: [RelationshipDescriptor], indexes: [IndexDescriptor], sync: SyncDescriptor? = nil
    ) {
        self.name = name
        self.table = table
        self.renamedFrom = renamedFrom
        self.primaryKey = primaryKey
        self.hasImplicitKey = hasImplicitKey
        self.columns = columns
        self.relationships = relationships
        self.indexes = indexes
        self.sync = sync
    }

    /// The column of a Swift property, or nil (transient properties have none).
    public func column(forProperty property: String) -> ColumnDescriptor? { columns.first { $0.property == property } }
    /// The relationship with this name, or nil.
    public func relationship(named name: String) -> RelationshipDescriptor? { relationships.first { $0.name == name } }
}

/// How a value is kept in a column; dialects choose the SQL type.
public enum StorageKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// Text.
    case text
    /// A 64-bit integer.
    case integer
    /// A double.
    case real
    /// 0 or 1 (a `boolean` column where the database has one).
    case boolean
    /// A moment in time (ISO 8601 text in UTC on SQLite, `timestamptz` on PostgreSQL).
    case date
    /// A calendar day, the day in UTC (`YYYY-MM-DD` text on SQLite, `date` on PostgreSQL): a
    /// `Date` attribute declared `dateOnly: true`. Added last so stored raw values keep their
    /// meaning.
    case day
    /// Bytes.
    case blob
    /// A UUID (lowercase text on SQLite).
    case uuid
    /// A URL's text.
    case url
    /// A decimal kept exactly (text on SQLite, `numeric` on PostgreSQL).
    case decimal
    /// Arrays and value types, as JSON text.
    case json
}

/// One stored attribute: its column, how its values are kept, and its options.
public struct ColumnDescriptor: Sendable, Hashable {
    /// The Swift property.
    public let property: String
    /// The column's name in the table: `scheduled_off`.
    public let column: String
    /// How its values are kept; each dialect picks the SQL type.
    public let storage: StorageKind
    /// The Swift type without optionality, e.g. `String`, `[String]`, `Coordinate`.
    public let swiftType: String
    /// Whether it may be nil (the column is nullable).
    public let isOptional: Bool
    /// Whether it is (part of) the primary key.
    public let isPrimaryKey: Bool
    /// `unique: true`: no two rows hold the same value (an upsert matches on it).
    public let isUnique: Bool
    /// `index: true`: a plain index keeps lookups by it fast.
    public let isIndexed: Bool
    /// `searchable: true`: full-text search covers it.
    public let isSearchable: Bool
    /// `externalStorage: true`: large values live in files beside the database.
    public let usesExternalStorage: Bool
    /// `encrypt:`: values are sealed with AES-256-GCM before they are stored.
    public let isEncrypted: Bool
    /// `encrypt: deterministic`: equal values give equal ciphertexts.
    public let encryptsDeterministically: Bool
    /// `preserveValueOnDeletion: true`: a deleted row's history entry keeps this value.
    public let preservesValueOnDeletion: Bool
    /// The attribute's earlier name, when the schema renamed it.
    public let renamedFrom: String?
    /// Where a table split took the attribute from in the earlier version (`movedFrom:`), as
    /// `Entity.attribute`: a device's sync state carries that attribute's across the split.
    ///
    ///     schema.entity(named: "Blurb")?.columns.first { $0.property == "text" }?.movedFrom   // "Book.blurb"
    public let movedFrom: String?
    /// The column default, when the schema gives one.
    public let defaultValue: DefaultValueDescriptor?
    /// The key the model's Codable conformance uses for this property.
    public let jsonKey: String

    /// A column with every option spelled out; generated metadata uses the compact
    /// `attribute(_:_:_:column:jsonKey:_:renamedFrom:default:)`.
    ///
    ///     let column = ColumnDescriptor(property: "countryCode", column: "country_code", storage: .text, swiftType: "String", isOptional: true)
    public init(
        property: String, column: String, jsonKey: String? = nil, storage: StorageKind, swiftType: String, isOptional: Bool,
        isPrimaryKey: Bool = false, isUnique: Bool = false, isIndexed: Bool = false, isSearchable: Bool = false,
        usesExternalStorage: Bool = false, isEncrypted: Bool = false, encryptsDeterministically: Bool = false, preservesValueOnDeletion: Bool = false,
        renamedFrom: String? = nil, movedFrom: String? = nil, defaultValue: DefaultValueDescriptor? = nil
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
        self.movedFrom = movedFrom
        self.defaultValue = defaultValue
        self.jsonKey = jsonKey ?? property
    }
}

extension ColumnDescriptor {
    /// What an attribute is, beyond its name, storage and type, for the compact form.
    public struct Flags: OptionSet, Sendable, Hashable {
        /// The flags as bits.
        public let rawValue: UInt16
        /// Flags from their bits.
        ///
        ///     let flags = ColumnDescriptor.Flags(rawValue: 0b101)   // [.optional, .unique]
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// The value may be nil.
        public static let optional = Flags(rawValue: 1 << 0)
        /// Part of the primary key.
        public static let primaryKey = Flags(rawValue: 1 << 1)
        /// Unique values.
        public static let unique = Flags(rawValue: 1 << 2)
        /// A plain index.
        public static let indexed = Flags(rawValue: 1 << 3)
        /// Covered by full-text search.
        public static let searchable = Flags(rawValue: 1 << 4)
        /// Kept in files beside the database.
        public static let externalStorage = Flags(rawValue: 1 << 5)
        /// Encrypted with a random nonce per value.
        public static let encrypted = Flags(rawValue: 1 << 6)
        /// `encrypt: deterministic` (implies `encrypted`).
        public static let deterministic = Flags(rawValue: 1 << 7)
        /// Kept in the history of a deleted row.
        public static let preservesValueOnDeletion = Flags(rawValue: 1 << 8)
    }

    /// The compact form generated metadata uses: only what differs from the usual is written;
    /// the column and the JSON key default to the property's name.
    public static func attribute(
        _ property: String, _ storage: StorageKind, _ swiftType: String, column: String? = nil, jsonKey: String? = nil,
        _ flags: Flags = [], renamedFrom: String? = nil, movedFrom: String? = nil, default defaultValue: DefaultValueDescriptor? = nil
    ) -> ColumnDescriptor {
        ColumnDescriptor(
            property: property, column: column ?? property, jsonKey: jsonKey, storage: storage, swiftType: swiftType,
            isOptional: flags.contains(.optional), isPrimaryKey: flags.contains(.primaryKey), isUnique: flags.contains(.unique),
            isIndexed: flags.contains(.indexed), isSearchable: flags.contains(.searchable), usesExternalStorage: flags.contains(.externalStorage),
            isEncrypted: flags.contains(.encrypted) || flags.contains(.deterministic), encryptsDeterministically: flags.contains(.deterministic),
            preservesValueOnDeletion: flags.contains(.preservesValueOnDeletion), renamedFrom: renamedFrom, movedFrom: movedFrom, defaultValue: defaultValue)
    }
}

/// A column default as the database sees it.
public enum DefaultValueDescriptor: Sendable, Hashable {
    /// NULL.
    case null
    /// A literal in its canonical text form: `0`, `1.5`, `true`, `UTC`, an ISO 8601 date, JSON.
    case literal(String)
    /// The time of insertion.
    case now
    /// A new random UUID per row.
    case generatedUUID
}

/// What deleting a model does to the models a relationship links it to.
public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
    /// The linked models' keys to this one are cleared.
    case nullify
    /// The linked models are deleted too.
    case cascade
    /// The delete is refused while any model is linked.
    case deny
    /// Nothing is done; the database's own foreign keys decide.
    case noAction
}

/// One relationship: its target, cardinality, inverse, delete rule, and where the link is
/// stored (a foreign key in this table or the target's, or a join table).
public struct RelationshipDescriptor: Sendable, Hashable {
    /// The relationship's name: `origin`.
    public let name: String
    /// The target entity's name: `Airport`.
    public let target: String
    /// Whether it links to many models.
    public let isToMany: Bool
    /// Whether a to-one link may be missing.
    public let isOptional: Bool
    /// The target's relationship that links back, when declared.
    public let inverse: String?
    /// What deleting this side does to the linked models.
    public let deleteRule: DeleteRule
    /// The fewest models a to-many relationship may hold, when the schema says.
    public let minCount: Int?
    /// The most models a to-many relationship may hold, when the schema says.
    public let maxCount: Int?
    /// Columns of this entity's table holding the target's key; empty when the other side or a
    /// join table stores the link.
    public let foreignKeyColumns: [String]
    /// The join table of a many-to-many relationship.
    public let joinTable: String?
    /// The relationship's earlier name, when the schema renamed it.
    public let renamedFrom: String?
    /// The model property (and Codable key) holding the target's key, for to-one relationships
    /// that store it: `originID`.
    public let keyProperty: String?
    /// In the join table, the columns holding this side's key and the target's.
    public let joinColumns: [String]
    /// In the join table, the columns holding the target's key.
    public let joinTargetColumns: [String]

    /// A relationship; generated metadata writes only what differs from the defaults.
    ///
    ///     let flightsFrom = RelationshipDescriptor(name: "flightsFrom", target: "Flight", isToMany: true, inverse: "origin")
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

/// One index of an entity's table.
public struct IndexDescriptor: Sendable, Hashable {
    /// What the index does.
    public enum Kind: String, Sendable, Hashable {
        /// Lookups by its columns are fast.
        case plain
        /// No two rows hold the same values in its columns.
        case unique
        /// Full-text search over text columns.
        case fullText
    }

    /// The index's name: `flights_ident_key`.
    public let name: String
    /// Its columns, in order.
    public let columns: [String]
    /// Plain, unique or full-text.
    public let kind: Kind

    /// An index of any kind.
    ///
    ///     let index = IndexDescriptor(name: "airports_city_name_idx", columns: ["city", "name"], kind: .plain)
    public init(name: String, columns: [String], kind: Kind) {
        self.name = name
        self.columns = columns
        self.kind = kind
    }

    // Short spellings for generated metadata, which lists every index of every entity.
    /// A plain index.
    public static func plain(_ name: String, _ columns: [String]) -> IndexDescriptor { IndexDescriptor(name: name, columns: columns, kind: .plain) }
    /// A unique index.
    public static func unique(_ name: String, _ columns: [String]) -> IndexDescriptor { IndexDescriptor(name: name, columns: columns, kind: .unique) }
    /// A full-text index.
    public static func fullText(_ name: String, _ columns: [String]) -> IndexDescriptor { IndexDescriptor(name: name, columns: columns, kind: .fullText) }
}
