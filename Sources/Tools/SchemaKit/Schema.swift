import Diagnostics
import SQLDialects

/// A validated schema: one YAML file's entities, enums and value types, with every name,
/// type, table, column and inverse resolved.
public struct Schema: Sendable, Hashable {
    public var name: String
    /// Positive, bumped on every change.
    public var version: Int
    public var doc: String?
    public var enums: [EnumType]
    public var values: [ValueType]
    public var entities: [Entity]
    /// The SQL dialects migrations are planned for (`dialects:`); nil when the schema does not
    /// say, so configuration decides (`sqlite` by default).
    public var dialects: [SQLDialectName]? = nil
    /// Whether the runtime store records a history of committed changes (`history:`, default
    /// true).
    public var recordsHistory: Bool = true
    /// Whether an insert's history entry carries the inserted values (`history: {insertValues:
    /// false}` lists inserts by key only, for schemas loaded in bulk).
    public var recordsInsertValues: Bool = true
    /// Whether PostgreSQL migrations are planned online, in expand and contract phases
    /// (`online:`); nil when the schema does not say, so configuration decides (off by default).
    public var online: Bool? = nil
    /// Database roles and what they may do with every table of the schema (`grants:`); nil
    /// when the schema does not say, so configuration decides (none by default). PostgreSQL
    /// only: SQLite has no roles.
    public var grants: [Grant]? = nil
    /// Synced with CloudKit on Apple devices (`cloudKit: true`): the schema keeps CloudKit's
    /// rules, which the loader checks.
    public var cloudKit: Bool = false
    /// The entities that sync between devices and a server, with each one's scope and
    /// conflict policy (`sync:`); nil when the schema does not sync.
    public var sync: SyncDeclaration? = nil
    /// The file it was loaded from, as shown in diagnostics.
    public var sourcePath: String

    public func entity(named name: String) -> Entity? { entities.first { $0.name == name } }
    public func enumType(named name: String) -> EnumType? { enums.first { $0.name == name } }
    public func valueType(named name: String) -> ValueType? { values.first { $0.name == name } }
}

/// A database role's access to a schema's tables: `grants: {app: write, reporting: read}`.
public struct Grant: Sendable, Hashable, Codable {
    /// What a role may do.
    public enum Access: String, Sendable, Hashable, Codable, CaseIterable {
        /// SELECT.
        case read
        /// SELECT, INSERT, UPDATE and DELETE.
        case write
    }

    /// The role's name, as the database spells it.
    public var role: String
    public var access: Access

    public init(role: String, access: Access) {
        self.role = role
        self.access = access
    }
}

// MARK: - Types

/// The scalar types an attribute may have.
public enum ScalarType: String, Sendable, Hashable, CaseIterable {
    case string = "String"
    case int = "Int"
    case int8 = "Int8"
    case int16 = "Int16"
    case int32 = "Int32"
    case int64 = "Int64"
    case double = "Double"
    case float = "Float"
    case bool = "Bool"
    case date = "Date"
    case data = "Data"
    case uuid = "UUID"
    case url = "URL"
    case decimal = "Decimal"

    /// The type a schema names, by a table lookup (the synthesized `init(rawValue:)` compares
    /// the name with each case in turn, and every attribute's type is looked up).
    public static func named(_ name: String) -> ScalarType? { byName[name] }

    private static let byName = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })

    /// The range of an integer type, or nil for other types.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .int, .int64: Int64.min...Int64.max
        case .int8: Int64(Int8.min)...Int64(Int8.max)
        case .int16: Int64(Int16.min)...Int64(Int16.max)
        case .int32: Int64(Int32.min)...Int64(Int32.max)
        default: nil
        }
    }
}

/// What an attribute or value field holds.
public indirect enum AttributeType: Sendable, Hashable, CustomStringConvertible {
    case scalar(ScalarType)
    case enumeration(String)
    case value(String)
    /// Stored as JSON.
    case array(AttributeType)
    /// A name that did not resolve; only present in schemas that failed validation.
    case unresolved(String)

    /// The type as written in a schema (and in Swift): `String`, `[Coordinate]`.
    public var description: String {
        switch self {
        case .scalar(let scalar): scalar.rawValue
        case .enumeration(let name), .value(let name), .unresolved(let name): name
        case .array(let element): "[\(element)]"
        }
    }
}

/// A literal default value, already checked against its attribute's type.
public indirect enum DefaultValue: Sendable, Hashable {
    case null
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    /// Decimal text, kept exact.
    case decimal(String)
    /// An ISO 8601 date or date-time, as written.
    case date(String)
    /// `now`: the time of insertion.
    case now
    case uuid(String)
    /// `uuid`: a new random UUID per insertion.
    case generatedUUID
    case url(String)
    /// Base64 text.
    case data(String)
    case enumCase(String)
    case array([DefaultValue])
    /// A value type's fields in declaration order.
    case value([Field])

    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: DefaultValue
    }
}

// MARK: - Enums and values

public struct EnumType: Sendable, Hashable {
    public enum RawType: String, Sendable, Hashable {
        case string = "String"
        case int = "Int"
    }

    public enum RawValue: Sendable, Hashable {
        case string(String)
        case int(Int64)
    }

    public struct Case: Sendable, Hashable {
        public var name: String
        public var rawValue: RawValue
        public var location: SourceLocation?
    }

    public var name: String
    public var rawType: RawType
    public var cases: [Case]
    public var doc: String?
    public var location: SourceLocation?
}

/// A Codable value type stored as JSON, such as a coordinate.
public struct ValueType: Sendable, Hashable {
    public struct Field: Sendable, Hashable {
        public var name: String
        public var type: AttributeType
        public var isOptional: Bool
        public var defaultValue: DefaultValue?
        public var jsonKey: String
        public var doc: String?
        public var location: SourceLocation?
    }

    public var name: String
    public var fields: [Field]
    public var doc: String?
    public var location: SourceLocation?
}

// MARK: - Entities

public struct Entity: Sendable, Hashable {
    /// How rows are identified.
    public enum PrimaryKey: Sendable, Hashable {
        /// No key declared: an integer `id` column assigned by the database.
        case implicit
        /// One or more attributes or to-one relationships, in order.
        case members([String])
    }

    public var name: String
    /// The SQL table; `table` from the schema or the snake_case entity name.
    public var tableName: String
    public var renamedFrom: String?
    public var doc: String?
    public var attributes: [Attribute]
    public var relationships: [Relationship]
    /// Non-unique indexes, each a list of member names.
    public var indexes: [[String]]
    /// Unique constraints over several members (single ones are `Attribute.isUnique`).
    public var uniques: [[String]]
    public var primaryKey: PrimaryKey
    public var location: SourceLocation?
    /// What an exported Core Data model writes as given (`coreData:`): imported from a real
    /// model, what the schema language has no word for.
    public var coreData: CoreDataSettings? = nil

    /// The implicit primary key's name and column.
    public static let implicitKeyName = "id"

    public func attribute(named name: String) -> Attribute? { attributes.first { $0.name == name } }
    public func relationship(named name: String) -> Relationship? { relationships.first { $0.name == name } }

    /// The primary key's column names, in order.
    public var primaryKeyColumns: [String] {
        switch primaryKey {
        case .implicit: return [Self.implicitKeyName]
        case .members(let members):
            return members.flatMap { member -> [String] in
                if let attribute = attribute(named: member) { return [attribute.columnName] }
                return relationship(named: member)?.foreignKeyColumns ?? []
            }
        }
    }
}

public struct Attribute: Sendable, Hashable {
    public var name: String
    public var type: AttributeType
    public var isOptional: Bool
    public var defaultValue: DefaultValue?
    public var isUnique: Bool
    public var isPrimaryKey: Bool
    /// Kept in memory only, never stored.
    public var isTransient: Bool
    /// Stored as a file beside the database rather than in the row.
    public var usesExternalStorage: Bool
    public var isEncrypted: Bool
    /// `encrypt: deterministic`: equal values give equal ciphertexts, for unique constraints
    /// and equality lookups.
    public var encryptsDeterministically: Bool = false
    /// Kept in the change history after its row is deleted.
    public var preservesValueOnDeletion: Bool
    public var isIndexed: Bool
    /// Full-text indexed.
    public var isSearchable: Bool
    public var renamedFrom: String?
    public var columnName: String
    public var jsonKey: String
    public var doc: String?
    public var location: SourceLocation?
    /// For `Decimal`: the total digits and those after the point a database keeps
    /// (PostgreSQL's `numeric(precision, scale)`); nil for any number of digits.
    public var precision: Int? = nil
    public var scale: Int? = nil
    /// For `Date`: kept as a calendar day (`dateOnly: true`), the day in UTC; PostgreSQL's
    /// `date`, `YYYY-MM-DD` text on SQLite.
    public var isDateOnly: Bool = false
    /// `Entity.attribute` of the previous version whose values this attribute takes (a table
    /// split): the migration fills this entity's new table from that one's rows, linked by this
    /// entity's to-one relationship to it, before the old column is dropped.
    public var movedFrom: (entity: String, attribute: String)? {
        get { movedFromText.flatMap { text in text.firstIndex(of: ".").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) } } }
        set { movedFromText = newValue.map { "\($0.entity).\($0.attribute)" } }
    }
    /// `movedFrom` as written: `Entity.attribute`.
    public var movedFromText: String? = nil
    /// What fills the existing rows when the column is added or becomes required, without
    /// becoming a default for new rows (`backfill:`).
    public var backfill: Backfill? = nil
    /// What an exported Core Data model writes as given (`coreData:`).
    public var coreData: CoreDataSettings? = nil
}

/// `coreData:` on an entity, attribute or relationship: Core Data model attributes written as
/// given over what export derives (`attributeType: Transformable`, `deletionRule: Nullify`,
/// `versionHashModifier`, a Core Data `name`), and user info entries. `import coredata` fills
/// it with what a real model says that the schema language cannot, so export writes it back.
///
///     attribute.coreData = CoreDataSettings(attributes: ["attributeType": "Transformable"], userInfo: ["attributeValueClassName": "CheatType"])
public struct CoreDataSettings: Sendable, Hashable {
    /// Model attributes by name.
    public var attributes: [String: String]
    /// User info entries by key.
    public var userInfo: [String: String]

    public init(attributes: [String: String] = [:], userInfo: [String: String] = [:]) {
        self.attributes = attributes
        self.userInfo = userInfo
    }

    public var isEmpty: Bool { attributes.isEmpty && userInfo.isEmpty }

    /// The model attributes each element may carry.
    /// `codeGenerationType` empty: Xcode generates no class (Manual/None), as apps that write
    /// their own `NSManagedObject` subclasses set it.
    /// `elementID`: a renaming identifier given as it is, which later versions carry on
    /// (`RenamingIdentifiers`), as `import coredata` keeps one no rename in the bundle explains.
    public static let entityKeys = ["representedClassName", "versionHashModifier", "codeGenerationType", "elementID"]
    public static let attributeKeys = ["name", "attributeType", "valueTransformerName", "customClassName", "versionHashModifier", "elementID"]
    public static let relationshipKeys = ["optional", "deletionRule", "ordered", "versionHashModifier", "elementID"]
}

/// The value a migration writes into existing rows (`backfill:`): a literal checked against the
/// attribute's type, or an SQL expression per dialect.
public enum Backfill: Sendable, Hashable {
    case value(DefaultValue)
    /// Dialect name -> an SQL expression, evaluated for each existing row.
    case sql([SQLDialectName: String])
}

public struct Relationship: Sendable, Hashable {
    /// What happens to the related objects when the object owning this relationship is deleted
    /// (Core Data and SwiftData semantics).
    public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
        /// Clear the related objects' references back to the deleted one.
        case nullify
        /// Delete the related objects too.
        case cascade
        /// Refuse the delete while related objects exist.
        case deny
        /// Do nothing; references to the deleted object are left as they are.
        case noAction
    }

    public var name: String
    /// The related entity's name.
    public var target: String
    public var isToMany: Bool
    /// For to-one relationships: whether the reference may be empty. To-many ones may always be empty
    /// unless `minCount` says otherwise.
    public var isOptional: Bool
    /// The relationship on the target that points back, declared on either side or both.
    public var inverse: String?
    public var deleteRule: DeleteRule
    public var minCount: Int?
    public var maxCount: Int?
    public var renamedFrom: String?
    /// Columns in this entity's table that hold the target's key; empty when the other side
    /// (or a join table) stores the link.
    public var foreignKeyColumns: [String]
    /// For many-to-many relationships, the join table that stores the links (on both sides).
    public var joinTableName: String?
    /// The join table's columns holding this side's key, and the target's.
    public var joinColumns: [String] = []
    public var joinTargetColumns: [String] = []
    public var doc: String?
    public var location: SourceLocation?
    /// What an exported Core Data model writes as given (`coreData:`).
    public var coreData: CoreDataSettings? = nil

    public var isManyToMany: Bool { joinTableName != nil }
}
