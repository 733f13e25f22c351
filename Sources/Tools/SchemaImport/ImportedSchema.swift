import SchemaKit

/// A schema as an importer found it, in the schema language's own terms, before it is written
/// as YAML. Importers fill it; `SchemaYAMLWriter` writes it; nothing else reads it.
public struct ImportedSchema: Sendable, Equatable {
    public var name: String
    public var version: Int
    public var doc: String?
    /// The databases migrations are planned for (`dialects:`); nil leaves it to configuration.
    public var dialects: [String]? = nil
    /// `history:` as written (`false`, `{insertValues: false}`); nil for the default.
    public var history: String? = nil
    /// `online:`; nil leaves it to configuration.
    public var online: Bool? = nil
    /// `cloudKit: true` (from an exported bundle).
    public var cloudKit = false
    /// `sync:` as written, on one line (from an exported bundle); nil when it does not sync.
    public var sync: String? = nil
    /// Enumerations: PostgreSQL's enum types and CHECK (column IN (...)) lists.
    public var enums: [ImportedEnum] = []
    /// Value types (stored as JSON): Core Data's composite attributes.
    public var values: [ImportedValueType] = []
    public var entities: [ImportedEntity]

    public init(name: String, version: Int = 1, doc: String? = nil, entities: [ImportedEntity] = []) {
        self.name = name
        self.version = version
        self.doc = doc
        self.entities = entities
    }

    public func entity(named name: String) -> ImportedEntity? { entities.first { $0.name == name } }
}

/// An enumeration with String raw values: case names and the raw values they stand for.
public struct ImportedEnum: Sendable, Equatable {
    public var name: String
    public var cases: [(name: String, rawValue: String)]
    /// `Int` for integer raw values; nil for String.
    public var rawType: String? = nil
    public var doc: String? = nil

    public init(name: String, cases: [(name: String, rawValue: String)]) {
        self.name = name
        self.cases = cases
    }

    public static func == (lhs: ImportedEnum, rhs: ImportedEnum) -> Bool {
        lhs.name == rhs.name && lhs.cases.map(\.name) == rhs.cases.map(\.name) && lhs.cases.map(\.rawValue) == rhs.cases.map(\.rawValue) && lhs.rawType == rhs.rawType
            && lhs.doc == rhs.doc
    }
}

public struct ImportedValueType: Sendable, Equatable {
    public var name: String
    public var fields: [ImportedAttribute]
    public var doc: String? = nil

    public init(name: String, fields: [ImportedAttribute]) {
        self.name = name
        self.fields = fields
    }
}

public struct ImportedEntity: Sendable, Equatable {
    public var name: String
    /// The table, when it differs from the entity name in snake_case.
    public var table: String?
    public var renamedFrom: String?
    public var doc: String?
    /// `coreData:`: what a real model says of it that the language cannot.
    public var coreData = CoreDataSettings()
    public var attributes: [ImportedAttribute] = []
    public var relationships: [ImportedRelationship] = []
    /// Member names; empty for the implicit key. A single attribute key is written as
    /// `primaryKey: true` on the attribute.
    public var primaryKey: [String] = []
    public var indexes: [[String]] = []
    public var uniques: [[String]] = []

    public init(name: String) { self.name = name }

    public var memberNames: [String] { attributes.map(\.name) + relationships.map(\.name) }
}

/// An attribute as an importer found it: its options as the schema file will write them
/// (`AttributeOption`, the schema language's one table of them), read and checked by the parser
/// when the written schema is loaded. The named properties read and set the same options.
public struct ImportedAttribute: Sendable, Equatable {
    public var name: String
    /// The type as the schema language writes it, without `?`: `String`, `Decimal`.
    public var type: String
    public var isOptional: Bool
    /// Every option that is set, by the table's key: written in the table's order.
    public var options: [AttributeOption: OptionValue] = [:]
    /// `coreData:`: what a real model says of it that the language cannot (a Transformable, a
    /// Core Data name, user info).
    public var coreData = CoreDataSettings()

    public init(name: String, type: String, isOptional: Bool) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
    }

    /// A yes-or-no option.
    public subscript(flag option: AttributeOption) -> Bool {
        get { options[option]?.content == "true" }
        set { options[option] = newValue ? .plain("true") : nil }
    }

    /// A name or text option, as given.
    public subscript(text option: AttributeOption) -> String? {
        get { options[option]?.content }
        set { options[option] = newValue.map(OptionValue.text) }
    }

    public var isUnique: Bool {
        get { self[flag: .unique] }
        set { self[flag: .unique] = newValue }
    }
    public var isIndexed: Bool {
        get { self[flag: .indexed] }
        set { self[flag: .indexed] = newValue }
    }
    /// Full-text indexed (Core Data's "Index in Spotlight").
    public var isSearchable: Bool {
        get { self[flag: .searchable] }
        set { self[flag: .searchable] = newValue }
    }
    public var isTransient: Bool {
        get { self[flag: .transient] }
        set { self[flag: .transient] = newValue }
    }
    public var usesExternalStorage: Bool {
        get { self[flag: .externalStorage] }
        set { self[flag: .externalStorage] = newValue }
    }
    public var preservesValueOnDeletion: Bool {
        get { self[flag: .preserveValueOnDeletion] }
        set { self[flag: .preserveValueOnDeletion] = newValue }
    }
    /// For dates: kept as the calendar day (`dateOnly: true`, a `date` column).
    public var isDateOnly: Bool {
        get { self[flag: .dateOnly] }
        set { self[flag: .dateOnly] = newValue }
    }
    public var defaultValue: ImportedDefault? {
        get { options[.default] }
        set { options[.default] = newValue }
    }
    /// What fills existing rows where a version makes the attribute required without a default:
    /// a literal, or (from an exported bundle) the schema's own spelling, SQL per dialect too.
    public var backfill: ImportedDefault? {
        get { options[.backfill] }
        set { options[.backfill] = newValue }
    }
    /// For decimals: `numeric(precision, scale)`.
    public var precision: Int? {
        get { options[.precision].flatMap { Int($0.content) } }
        set { options[.precision] = newValue.map { .plain(String($0)) } }
    }
    public var scale: Int? {
        get { options[.scale].flatMap { Int($0.content) } }
        set { options[.scale] = newValue.map { .plain(String($0)) } }
    }
    /// `encrypt:` as written (`true`, `deterministic`); nil when not encrypted.
    public var encrypt: String? {
        get { options[.encrypt]?.content }
        set { options[.encrypt] = newValue.map(OptionValue.plain) }
    }
    /// The column, when it differs from the name in snake_case.
    public var column: String? {
        get { self[text: .column] }
        set { self[text: .column] = newValue }
    }
    /// The JSON key, when it differs from the name.
    public var jsonKey: String? {
        get { self[text: .jsonKey] }
        set { self[text: .jsonKey] = newValue }
    }
    public var renamedFrom: String? {
        get { self[text: .renamedFrom] }
        set { self[text: .renamedFrom] = newValue }
    }
    /// `Entity.attribute` whose values a table split moved here (from an exported bundle).
    public var movedFrom: String? {
        get { self[text: .movedFrom] }
        set { self[text: .movedFrom] = newValue }
    }
    public var doc: String? {
        get { self[text: .doc] }
        set { self[text: .doc] = newValue }
    }
}

/// A default as YAML should spell it: text is quoted when it could be read as something else,
/// a number, boolean or keyword (`now`, `uuid`) written plain.
public typealias ImportedDefault = OptionValue

public struct ImportedRelationship: Sendable, Equatable {
    public enum DeleteRule: String, Sendable {
        case nullify, cascade, deny, noAction
    }

    /// `coreData:`: what a real model says of it that the language cannot.
    public var coreData = CoreDataSettings()

    public var name: String
    public var target: String
    public var isToMany: Bool
    public var isOptional: Bool
    public var inverse: String?
    public var deleteRule: DeleteRule = .nullify
    public var minCount: Int?
    public var maxCount: Int?
    /// The foreign-key column, when it differs from the derived `<relationship>_<key column>`.
    public var column: String?
    public var renamedFrom: String?
    public var doc: String?

    public init(name: String, target: String, isToMany: Bool, isOptional: Bool) {
        self.name = name
        self.target = target
        self.isToMany = isToMany
        self.isOptional = isOptional
    }
}

/// Something an importer could not carry over exactly, or chose for the user. Never silent:
/// each is printed, and written as a comment at the top of the schema.
public struct ImportFinding: Sendable, Equatable, CustomStringConvertible {
    public enum Severity: String, Sendable { case warning, note }

    public var severity: Severity
    /// Where in the input: `chinook.db: table "Invoice"`, or `Model.xcdatamodel/contents:12:5`.
    public var place: String
    public var message: String
    /// The input's own text for what was not carried over (a CREATE statement, an XML element).
    public var source: String?

    public init(_ severity: Severity, at place: String, _ message: String, source: String? = nil) {
        self.severity = severity
        self.place = place
        self.message = message
        self.source = source
    }

    public var description: String {
        var text = "\(place): \(severity.rawValue): \(message)"
        if let source { text += "\n    " + source.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n    ") }
        return text
    }
}

/// An importer's result: the schema and what it could not carry over.
public struct ImportResult: Sendable {
    public var schema: ImportedSchema
    public var findings: [ImportFinding]

    public init(schema: ImportedSchema, findings: [ImportFinding]) {
        self.schema = schema
        self.findings = findings
    }
}

/// Input an importer cannot read at all: not a database, not a model, a truncated file.
public struct ImportError: Error, Sendable, Equatable, CustomStringConvertible {
    public var place: String
    public var message: String

    public init(at place: String, _ message: String) {
        self.place = place
        self.message = message
    }

    public var description: String { "\(place): error: \(message)" }
}
