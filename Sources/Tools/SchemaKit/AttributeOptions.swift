import TextEscaping

/// The options an attribute takes in the schema language: the one table that the parser's key
/// list, the importers' document (`ImportedAttribute.options`), `schemagen import`'s YAML writer
/// and the Core Data export and import read. Cases are in the order the YAML writer writes them.
///
/// A new option is a case here (with its spelling, and its Core Data user info entry when Core
/// Data has no attribute of its own for it), a property of `Attribute`, and its reading in
/// `SchemaParser+Entities`; the writer, the importers' document and the Core Data round trip
/// follow from this table.
///
///     AttributeOption.allCases.map(\.key)   // ["type", "optional", "primaryKey", "unique", ...]
public enum AttributeOption: String, CaseIterable, Sendable, Hashable {
    case type, optional, primaryKey, unique, indexed, searchable
    case `default`, backfill, precision, scale, dateOnly, transient, externalStorage, preserveValueOnDeletion
    case encrypt, column, jsonKey, renamedFrom, movedFrom, doc, coreData

    /// The key a schema file writes it under.
    public var key: String { rawValue }

    /// How a value of the option is written in YAML.
    public enum Spelling: Sendable, Hashable {
        /// `true`, written only when set.
        case flag
        /// Written as given: a number, a literal the schema language reads as typed, a map.
        case plain
        /// A name: plain when it is an identifier, quoted otherwise.
        case name
        /// Text: plain when every YAML reader takes it as this text, quoted otherwise.
        case text
        /// Prose (a doc): always quoted.
        case prose
        /// Written by the writer itself: `type` and `optional` make the type (`String?`),
        /// `primaryKey` comes from the entity's key, `coreData` is a map of its own.
        case structured
    }

    /// How the YAML writer spells its value.
    public var spelling: Spelling {
        switch self {
        case .type, .optional, .primaryKey, .coreData: .structured
        case .unique, .indexed, .searchable, .dateOnly, .transient, .externalStorage, .preserveValueOnDeletion: .flag
        case .default, .backfill: .text
        case .precision, .scale, .encrypt: .plain
        case .column, .jsonKey, .renamedFrom, .movedFrom: .name
        case .doc: .prose
        }
    }

    /// Whether its value is yes or no: the flags, and `optional` and `primaryKey` (which the
    /// writer folds into the type and the entity's key).
    public var isYesOrNo: Bool { spelling == .flag || self == .optional || self == .primaryKey }

    /// The options an exported Core Data model carries in `userInfo`, in the order export writes
    /// them: those Core Data has no attribute of its own for (it has `transient`,
    /// `allowsExternalBinaryDataStorage`, `indexed`, ...). Import reads them back.
    public static let coreDataUserInfoOrder: [AttributeOption] = [.column, .default, .encrypt, .precision, .scale, .dateOnly, .jsonKey, .backfill, .movedFrom, .doc]

    /// Its `userInfo` key in an exported Core Data model (`schemagen.dateOnly`), nil for an
    /// option not carried there.
    public var coreDataUserInfoKey: String? { Self.coreDataUserInfoOrder.contains(self) ? "schemagen." + rawValue : nil }

    /// Its value for an attribute, as the schema file writes it (a flag as `true`, a default as
    /// its literal, a doc as its text); nil where the attribute has the option's default. The
    /// one place each option is read from an `Attribute`: Core Data export and the templates'
    /// `options` read it here.
    public func value(of attribute: Attribute) -> String? {
        func flag(_ isSet: Bool) -> String? { isSet ? "true" : nil }
        return switch self {
        case .type: attribute.type.description
        case .optional: flag(attribute.isOptional)
        case .primaryKey: flag(attribute.isPrimaryKey)
        case .unique: flag(attribute.isUnique)
        case .indexed: flag(attribute.isIndexed)
        case .searchable: flag(attribute.isSearchable)
        case .default: attribute.defaultValue?.yamlText
        case .backfill: attribute.backfill?.yamlText
        case .precision: attribute.precision.map(String.init)
        case .scale: attribute.scale.map(String.init)
        case .dateOnly: flag(attribute.isDateOnly)
        case .transient: flag(attribute.isTransient)
        case .externalStorage: flag(attribute.usesExternalStorage)
        case .preserveValueOnDeletion: flag(attribute.preservesValueOnDeletion)
        case .encrypt: attribute.isEncrypted ? (attribute.encryptsDeterministically ? "deterministic" : "true") : nil
        case .column: attribute.columnName != Naming.defaultName(of: attribute.name) ? attribute.columnName : nil
        case .jsonKey: attribute.jsonKey != attribute.name ? attribute.jsonKey : nil
        case .renamedFrom: attribute.renamedFrom
        case .movedFrom: attribute.movedFromText
        case .doc: attribute.doc
        case .coreData: nil
        }
    }

    /// Its user info text for an attribute (`value(of:)`, a flag as `YES`, as Core Data writes
    /// its own); nil where the option is not carried in user info or has its default.
    public func coreDataUserInfo(of attribute: Attribute) -> String? {
        guard coreDataUserInfoKey != nil, let value = value(of: attribute) else { return nil }
        return spelling == .flag ? "YES" : value
    }

    /// The value an import reads back from that user info text, as the schema file writes it:
    /// a flag's `YES` is `true`; anything else is the text as written, which the parser checks
    /// when the written schema is read.
    public func documentValue(fromCoreDataUserInfo text: String) -> OptionValue? {
        switch spelling {
        case .flag: text == "YES" ? .plain("true") : nil
        case .name, .prose: .text(text)
        case .plain, .text, .structured: .plain(text)
        }
    }
}

/// An option's value as an importer found it, before the parser reads and checks it: written
/// as given (`.plain`: `true`, `12`, `now`, `{sqlite: ..., postgres: ...}`), or text that the
/// writer quotes as the option's spelling needs (`.text`).
public enum OptionValue: Sendable, Hashable {
    case plain(String)
    case text(String)

    /// The value without its kind.
    public var content: String {
        switch self {
        case .plain(let text), .text(let text): text
        }
    }
}

extension Attribute {
    /// An attribute of this name and type with every option at its default: stored, in a
    /// column named after it, under its own JSON key.
    ///
    ///     let title = Attribute(name: "title", type: .scalar(.string), isOptional: false)
    public init(name: String, type: AttributeType, isOptional: Bool) {
        self.init(
            name: name, type: type, isOptional: isOptional, defaultValue: nil, isUnique: false, isPrimaryKey: false, isTransient: false, usesExternalStorage: false,
            isEncrypted: false, preservesValueOnDeletion: false, isIndexed: false, isSearchable: false, renamedFrom: nil, columnName: Naming.defaultName(of: name),
            jsonKey: name, doc: nil, location: nil)
    }
}

extension DefaultValue {
    /// The value as a schema file writes it: `now`, `12`, `"text"`, `[a, b]`.
    public var yamlText: String {
        switch self {
        case .null: "null"
        case .string(let text), .date(let text), .uuid(let text), .url(let text), .data(let text): TextEscaping.yaml(text)
        case .integer(let number): String(number)
        case .double(let number): String(number)
        case .bool(let flag): flag ? "true" : "false"
        case .decimal(let text): text
        case .now: "now"
        case .generatedUUID: "uuid"
        case .enumCase(let name): name
        case .array(let items): "[" + items.map(\.yamlText).joined(separator: ", ") + "]"
        case .value(let fields): "{" + fields.map { "\($0.name): \($0.value.yamlText)" }.joined(separator: ", ") + "}"
        }
    }
}

extension Backfill {
    /// The backfill as a schema file writes it: a literal, or `{postgres: EXPR, sqlite: EXPR}`.
    public var yamlText: String {
        switch self {
        case .value(let value): value.yamlText
        case .sql(let expressions): "{" + expressions.map { "\($0.key.rawValue): \(TextEscaping.yaml($0.value))" }.sorted().joined(separator: ", ") + "}"
        }
    }
}

/// The options a relationship takes in the schema language, in the order `schemagen import`'s
/// writer writes them: the parser's key list, and an exhaustive `switch` in the writer, so a new
/// one is written wherever the compiler asks.
///
///     RelationshipOption.allCases.map(\.key)   // ["to", "inverse", "deleteRule", ...]
public enum RelationshipOption: String, CaseIterable, Sendable, Hashable {
    case to, inverse, deleteRule, minCount, maxCount, column, renamedFrom, doc, coreData

    /// The key a schema file writes it under.
    public var key: String { rawValue }
}
