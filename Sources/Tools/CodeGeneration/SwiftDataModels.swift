import Diagnostics
import Mustache
import SchemaKit

/// Something a schema says that SwiftData cannot: written as a comment in the generated file
/// and reported by `generate` as a warning.
public struct SwiftDataNote: Sendable, Hashable {
    /// The schema version whose file says it.
    public var version: Int
    /// `Entity.member`, or the entity alone.
    public var subject: String
    public var message: String
    /// Where the schema declares what it is about: the attribute's, relationship's or entity's
    /// line (in the schema file, or the recorded text of an older version).
    public var location: SourceLocation? = nil
    /// A stage that cannot do its work alone (a value it cannot fill, duplicates a new unique
    /// constraint refuses): `generate` fails unless told to allow it, and the work goes in the
    /// plan's hooks.
    public var isIncompleteStage = false
    /// An incomplete stage that would drop values without a word (a split or a renamed entity
    /// it cannot carry, a type with no conversion): an error unless allowed, where the other
    /// incomplete stages check at run time or fail with Core Data's own error.
    public var losesData = false
}

/// Work only the app can do that a stage needs (`fill<Entity><Attribute>(context:)`): a hooks
/// requirement whose default implementation does nothing and is deprecated, so every build
/// warns until `<Schema>+MigrationPlan+Custom.swift` implements it; the stage checks the work.
public struct SwiftDataHookRequirement: Sendable, Hashable {
    public var name: String
    public var doc: String
}

/// What earlier releases wrote differently in SwiftData models, each generated again on request
/// to recognise a released version they wrote (`ReleasedSwiftDataModels`).
public struct SwiftDataEarlierForms: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `originalName:` from each version's `renamedFrom` alone (`RenamingIdentifiers(_:)`).
    public static let declaredRenamingIdentifiers = SwiftDataEarlierForms(rawValue: 1)
    /// To-many relationships `[T] = []` in a `cloudKit: true` schema, where they are `[T]? = []` now.
    public static let requiredToManyUnderCloudKit = SwiftDataEarlierForms(rawValue: 2)
    /// A unique constraint naming a relationship left out, where `#Unique` takes to-one ones now.
    public static let uniquesOfAttributesOnly = SwiftDataEarlierForms(rawValue: 4)
}

/// Which unique lists a version's SwiftData models enforce, for telling when a later version
/// starts enforcing one its predecessor's models did not.
public enum SwiftDataUniqueness {
    /// The unique lists of more than one member, or naming a relationship, that an entity's
    /// model enforces with `#Unique` for `target` in `earlier` forms: a model without them (iOS
    /// 17, or an earlier release's form) holds duplicates that the next model refuses.
    public static func enforcedLists(_ entity: Entity, target: DeploymentTarget, earlier: SwiftDataEarlierForms) -> Set<[String]> {
        guard target.hasConstraintMacros else { return [] }
        var uniques = entity.uniques
        if case .members(let members) = entity.primaryKey, members.count > 1 { uniques.insert(members, at: 0) }
        return Set(
            // One attribute alone is `@Attribute(.unique)` at every target: its stage checks it.
            uniques.filter { members in members.count > 1 || entity.relationship(named: members[0]) != nil }.filter { members in
                members.allSatisfy { name in
                    guard let relationship = entity.relationship(named: name) else { return true }
                    return !relationship.isToMany && !earlier.contains(.uniquesOfAttributesOnly)
                }
            })
    }
}

/// One schema version as SwiftData models: the lines the `swiftdata/` templates arrange.
/// Values logic-less templates cannot work out (attribute macros, declarations, initializers,
/// `#Unique` and `#Index` lists) arrive ready-made.
struct SwiftDataVersion {
    let schema: Schema
    /// Defaults the migration into this version needs on new required attributes (their
    /// backfill), by `Entity.attribute`: the model declares them, so the lightweight step fills
    /// existing objects.
    let addedDefaults: [String: String]
    /// The oldest OS the models run on: without `#Unique` and `#Index` before iOS 18.
    let deploymentTarget: DeploymentTarget
    /// Where this version hashes as an earlier one would (`VersionHashModifiers`).
    let hashModifier: VersionHashModifiers.Modifier?
    /// 1 for the step schemagen inserts after a version whose successor changes a type
    /// (`Schema.Version(3, 1, 0)`, `FlightsSchemaV3_1`); 0 for the schema's own versions.
    let minor: Int
    /// `originalName:` of each property: the name of its first version (`RenamingIdentifiers`).
    let identifiers: RenamingIdentifiers
    /// To-many relationships declared `[T]? = []`, as CloudKit needs.
    let optionalToMany: Bool
    /// `#Unique` over attributes only, as earlier releases wrote it.
    let uniquesOfAttributesOnly: Bool
    private(set) var notes: [SwiftDataNote] = []

    init(
        schema: Schema, addedDefaults: [String: String] = [:], deploymentTarget: DeploymentTarget = .default,
        hashModifier: VersionHashModifiers.Modifier? = nil, minor: Int = 0, identifiers: RenamingIdentifiers? = nil, optionalToMany: Bool? = nil,
        uniquesOfAttributesOnly: Bool = false
    ) {
        self.minor = minor
        self.uniquesOfAttributesOnly = uniquesOfAttributesOnly
        self.optionalToMany = optionalToMany ?? schema.cloudKit
        self.identifiers = identifiers ?? RenamingIdentifiers(schema)
        self.schema = schema
        self.addedDefaults = addedDefaults
        self.deploymentTarget = deploymentTarget
        self.hashModifier = hashModifier
    }

    static func enumName(_ schema: Schema, minor: Int = 0) -> String { "\(schema.name)SchemaV\(schema.version)" + (minor == 0 ? "" : "_\(minor)") }

    var enumName: String { Self.enumName(schema, minor: minor) }

    // MARK: - Entities

    /// Which side of a relationship pair names its inverse: SwiftData wants it on one side only
    /// (naming it on both makes the macros refer to each other). The to-many side of a
    /// one-to-many pair; otherwise the side declared first.
    func namesInverse(_ relationship: Relationship, of entity: Entity) -> Bool {
        guard let inverseName = relationship.inverse, let target = schema.entity(named: relationship.target),
            let inverse = target.relationship(named: inverseName)
        else { return false }
        if relationship.isToMany != inverse.isToMany { return relationship.isToMany }
        let own = schema.entities.firstIndex { $0.name == entity.name } ?? 0
        let other = schema.entities.firstIndex { $0.name == target.name } ?? 0
        if own != other { return own < other }
        let ownPosition = entity.relationships.firstIndex { $0.name == relationship.name } ?? 0
        let otherPosition = entity.relationships.firstIndex { $0.name == inverse.name } ?? 0
        return ownPosition < otherPosition
    }

    /// The single-attribute key SwiftData can enforce as `.unique`.
    func singleKeyAttribute(of entity: Entity) -> String? {
        if case .members(let members) = entity.primaryKey, members.count == 1, entity.attribute(named: members[0]) != nil { return members[0] }
        return nil
    }

    mutating func note(_ subject: String, _ message: String, at location: SourceLocation?) {
        notes.append(SwiftDataNote(version: schema.version, subject: subject, message: message, location: location))
    }

    /// Single attributes that are unique by an entity's constraint list (`uniques: [[code]]`):
    /// `@Attribute(.unique)` where `#Unique` cannot be used.
    func uniqueByList(_ entity: Entity) -> Set<String> {
        guard !deploymentTarget.hasConstraintMacros else { return [] }
        return Set(entity.uniques.filter { $0.count == 1 && entity.attribute(named: $0[0]) != nil }.map { $0[0] })
    }

    /// The attribute's default as a Swift expression: the schema's, else a backfill this
    /// version's migration needs.
    func defaultExpression(_ attribute: Attribute, of entity: Entity) -> String? {
        if let value = attribute.defaultValue { return SwiftSyntax.expression(for: value, type: attribute.type, schema: schema) }
        return addedDefaults["\(entity.name).\(attribute.name)"]
    }

    mutating func entityValue(_ entity: Entity) -> [String: MustacheValue] {
        var macros: [String] = []
        var comments: [String] = []
        func keyPaths(_ members: [String]) -> String { "[" + members.map { "\\.\(SwiftSyntax.identifier($0))" }.joined(separator: ", ") + "]" }
        /// `#Index` takes attributes; `#Unique` also relationships that reference a single model
        /// (Apple's `Unique`), so a to-many one leaves the list out.
        func macroTakes(_ members: [String], what: String) -> Bool {
            let isUnique = what != "index"
            let relationships = members.filter { name in entity.relationship(named: name).map { !isUnique || $0.isToMany || uniquesOfAttributesOnly } ?? false }
            guard relationships.isEmpty else {
                let message =
                    isUnique && !uniquesOfAttributesOnly
                    ? "the \(what) [\(members.joined(separator: ", "))] includes the to-many relationship \(relationships.map { "'\($0)'" }.joined(separator: ", ")); SwiftData's #Unique takes attributes and relationships to one model only, so it is left out"
                    : "the \(what) [\(members.joined(separator: ", "))] includes the relationship \(relationships.map { "'\($0)'" }.joined(separator: ", ")); SwiftData's #\(isUnique ? "Unique" : "Index") takes attributes only, so it is left out"
                comments.append("// No SwiftData equivalent: \(message).")
                note(entity.name, message, at: entity.location)
                return false
            }
            return true
        }
        /// What `#Unique` or `#Index` would say, before iOS 18: a comment and a warning.
        func beforeConstraintMacros(_ lists: [[String]], macro: String, what: String) {
            for members in lists {
                let message =
                    "the \(what) [\(members.joined(separator: ", "))] needs #\(macro), which is iOS 18 and macOS 15 API; with deployment target \(deploymentTarget.rawValue) it is left out (the server's database still has it)"
                comments.append("// No SwiftData equivalent before iOS 18: \(message).")
                note(entity.name, message, at: entity.location)
            }
        }
        var uniques = entity.uniques
        if case .members(let members) = entity.primaryKey, members.count > 1 { uniques.insert(members, at: 0) }
        let uniqueLists = uniques.filter { macroTakes($0, what: "unique constraint") }
        if deploymentTarget.hasConstraintMacros {
            if !uniqueLists.isEmpty {
                macros.append("#Unique<\(SwiftSyntax.identifier(entity.name))>(\(uniqueLists.map(keyPaths).joined(separator: ", ")))  // iOS 18")
            }
        } else {
            // A list of one attribute is `@Attribute(.unique)`, which iOS 17 has.
            beforeConstraintMacros(uniqueLists.filter { $0.count > 1 || entity.relationship(named: $0[0]) != nil }, macro: "Unique", what: "unique constraint")
        }
        var indexes = entity.attributes.filter { $0.isIndexed && !$0.isUnique }.map { [$0.name] }
        indexes += entity.indexes
        let indexLists = indexes.filter { macroTakes($0, what: "index") }
        if deploymentTarget.hasConstraintMacros {
            if !indexLists.isEmpty {
                macros.append("#Index<\(SwiftSyntax.identifier(entity.name))>(\(indexLists.map(keyPaths).joined(separator: ", ")))  // iOS 18")
            }
        } else {
            beforeConstraintMacros(indexLists, macro: "Index", what: "index")
        }
        var properties: [MustacheValue] = []
        var parameters: [String] = []
        var assignments: [String] = []
        for attribute in entity.attributes {
            properties.append(.object(attributeProperty(attribute, of: entity)))
            guard !attribute.isTransient else { continue }
            let name = SwiftSyntax.identifier(attribute.name)
            let fallback = defaultExpression(attribute, of: entity) ?? (attribute.isOptional ? "nil" : nil)
            parameters.append("\(name): \(SwiftSyntax.typeName(of: attribute))" + (fallback.map { " = \($0)" } ?? ""))
            assignments.append("self.\(name) = \(name)")
        }
        for relationship in entity.relationships {
            properties.append(.object(relationshipProperty(relationship, of: entity)))
            guard !relationship.isToMany else { continue }
            let name = SwiftSyntax.identifier(relationship.name)
            let type = SwiftSyntax.identifier(relationship.target) + (relationship.isOptional ? "?" : "")
            parameters.append("\(name): \(type)" + (relationship.isOptional ? " = nil" : ""))
            assignments.append("self.\(name) = \(name)")
        }
        return [
            "swiftName": .string(SwiftSyntax.identifier(entity.name)),
            "docLines": .lines(SwiftSyntax.docLines(entity.doc)),
            "comments": .lines(comments),
            "macros": .lines(macros),
            "properties": .listed(properties),
            "initParameters": .string(parameters.joined(separator: ", ")),
            "assignments": .lines(assignments),
        ]
    }

    mutating func attributeProperty(_ attribute: Attribute, of entity: Entity) -> [String: MustacheValue] {
        let subject = "\(entity.name).\(attribute.name)"
        var comments: [String] = []
        var options: [String] = []
        if attribute.isUnique || singleKeyAttribute(of: entity) == attribute.name || uniqueByList(entity).contains(attribute.name) { options.append(".unique") }
        if attribute.usesExternalStorage { options.append(".externalStorage") }
        if attribute.isEncrypted {
            options.append(".allowsCloudEncryption")
            if schema.cloudKit {
                comments.append(
                    "// 'encrypt' becomes .allowsCloudEncryption: CloudKit keeps the value encrypted; the device's store keeps it as SwiftData keeps every value (protect it with Data Protection).")
            } else {
                let message =
                    "'encrypt' becomes .allowsCloudEncryption, which encrypts the value in CloudKit only, and the schema is not synced with CloudKit (no cloudKit: true), so it encrypts nothing; the device's store keeps it as SwiftData keeps every value (protect it with Data Protection)"
                comments.append("// \(message).")
                note(subject, message, at: attribute.location)
            }
        }
        if attribute.preservesValueOnDeletion { options.append(".preserveValueOnDeletion") }
        if attribute.isSearchable { options.append(".spotlight") }
        if attribute.precision != nil || attribute.scale != nil {
            let message = "precision and scale are not enforced: SwiftData's Decimal keeps every digit"
            comments.append("// No SwiftData equivalent: \(message).")
            note(subject, message, at: attribute.location)
        }
        if attribute.isDateOnly {
            let message = "'dateOnly' is not enforced: SwiftData's Date keeps the time of day; store the start of the day in UTC to match the server's"
            comments.append("// No SwiftData equivalent: \(message).")
            note(subject, message, at: attribute.location)
        }
        var arguments = options
        if let original = identifiers.member(attribute.name, of: entity.name) { arguments.append("originalName: \(SwiftSyntax.stringLiteral(original))") }
        if let modifier = hashModifier, modifier.entity == entity.name, modifier.attribute == attribute.name, !attribute.isTransient {
            // The version hashes as the one before it would: this tells them apart.
            arguments.append("hashModifier: \(SwiftSyntax.stringLiteral(modifier.value))")
        }
        var macro: String?
        var initializer = ""
        if attribute.isTransient {
            macro = "@Transient"
            if let value = defaultExpression(attribute, of: entity) {
                initializer = " = \(value)"
            } else if attribute.isOptional {
                initializer = " = nil"
            } else {
                let message = "a transient attribute needs a default in SwiftData (@Transient properties are not restored from the store)"
                comments.append("// \(message).")
                note(subject, message, at: attribute.location)
            }
        } else {
            if !arguments.isEmpty { macro = "@Attribute(\(arguments.joined(separator: ", ")))" }
            if let value = defaultExpression(attribute, of: entity) { initializer = " = \(value)" }
            if attribute.defaultValue == nil, addedDefaults[subject] != nil {
                comments.append("// The backfill of version \(schema.version)'s migration, as the default that fills existing objects.")
            }
        }
        return [
            "docLines": .lines(SwiftSyntax.docLines(attribute.doc)),
            "comments": .lines(comments),
            "macro": macro.map { .string($0) } ?? .null,
            "declaration": .string("var \(SwiftSyntax.identifier(attribute.name)): \(SwiftSyntax.typeName(of: attribute))\(initializer)"),
        ]
    }

    func relationshipProperty(_ relationship: Relationship, of entity: Entity) -> [String: MustacheValue] {
        var arguments: [String] = []
        if relationship.deleteRule != .nullify { arguments.append("deleteRule: .\(relationship.deleteRule.rawValue)") }
        if relationship.isToMany {
            if let minimum = relationship.minCount, minimum > 0 { arguments.append("minimumModelCount: \(minimum)") }
            if let maximum = relationship.maxCount { arguments.append("maximumModelCount: \(maximum)") }
        }
        if let original = identifiers.member(relationship.name, of: entity.name) { arguments.append("originalName: \(SwiftSyntax.stringLiteral(original))") }
        if let inverse = relationship.inverse, namesInverse(relationship, of: entity) {
            arguments.append("inverse: \\\(SwiftSyntax.identifier(relationship.target)).\(SwiftSyntax.identifier(inverse))")
        }
        let target = SwiftSyntax.identifier(relationship.target)
        // CloudKit needs every relationship optional, to-many ones included (Apple's "Creating a
        // Core Data Model for CloudKit"); elsewhere an empty array reads better than nil.
        let type = relationship.isToMany ? "[\(target)]\(optionalToMany ? "?" : "") = []" : target + (relationship.isOptional ? "?" : "")
        return [
            "docLines": .lines(SwiftSyntax.docLines(relationship.doc)),
            "comments": .lines([]),
            "macro": arguments.isEmpty ? .null : .string("@Relationship(\(arguments.joined(separator: ", ")))"),
            "declaration": .string("var \(SwiftSyntax.identifier(relationship.name)): \(type)"),
        ]
    }

    // MARK: - Enums and value types

    func enumValue(_ enumType: EnumType) -> [String: MustacheValue] {
        let cases = enumType.cases.map { item -> String in
            let name = SwiftSyntax.identifier(item.name)
            switch item.rawValue {
            case .int(let number): return "case \(name) = \(number)"
            case .string(let text): return text == item.name ? "case \(name)" : "case \(name) = \(SwiftSyntax.stringLiteral(text))"
            }
        }
        return [
            "swiftName": .string(SwiftSyntax.identifier(enumType.name)),
            "rawType": .string(enumType.rawType.rawValue),
            "docLines": .lines(SwiftSyntax.docLines(enumType.doc)),
            "cases": .lines(cases),
        ]
    }

    func valueTypeValue(_ valueType: ValueType) -> [String: MustacheValue] {
        var parameters: [String] = []
        var fields: [MustacheValue] = []
        for field in valueType.fields {
            let name = SwiftSyntax.identifier(field.name)
            let type = SwiftSyntax.typeName(field.type) + (field.isOptional ? "?" : "")
            let fallback = field.defaultValue.map { SwiftSyntax.expression(for: $0, type: field.type, schema: schema) } ?? (field.isOptional ? "nil" : nil)
            parameters.append("\(name): \(type)" + (fallback.map { " = \($0)" } ?? ""))
            fields.append(.object(["docLines": .lines(SwiftSyntax.docLines(field.doc)), "declaration": .string("var \(name): \(type)"), "assignment": .string("self.\(name) = \(name)")]))
        }
        return [
            "swiftName": .string(SwiftSyntax.identifier(valueType.name)),
            "docLines": .lines(SwiftSyntax.docLines(valueType.doc)),
            "fields": .listed(fields),
            "initParameters": .string(parameters.joined(separator: ", ")),
        ]
    }

    mutating func scope(header: String) -> [String: MustacheValue] {
        var entities: [MustacheValue] = []
        for entity in schema.entities { entities.append(.object(entityValue(entity))) }
        return [
            "header": .string(header),
            "schemaName": .string(schema.name),
            "enumName": .string(enumName),
            "version": .string(String(schema.version)),
            "minor": .string(String(minor)),
            "versionLabel": .string(minor == 0 ? String(schema.version) : "\(schema.version).\(minor)"),
            "isIntermediate": .bool(minor != 0),
            "docLines": .lines(SwiftSyntax.docLines(schema.doc)),
            "models": .string(schema.entities.map { "\(SwiftSyntax.identifier($0.name)).self" }.joined(separator: ", ")),
            "entities": .listed(entities),
            "enums": .listed(schema.enums.map { .object(enumValue($0)) }),
            "values": .listed(schema.values.map { .object(valueTypeValue($0)) }),
        ]
    }
}

extension MustacheValue {
    /// Lines for `{{#lines}}{{line}}{{/lines}}`.
    static func lines(_ lines: [String]) -> MustacheValue { .array(lines.map { .object(["line": .string($0)]) }) }

    /// A list whose object items get `first` and `last` flags, for separators in templates.
    static func listed(_ items: [MustacheValue]) -> MustacheValue {
        .array(
            items.enumerated().map { index, item in
                switch item {
                case .object, .record, .lazy: break
                default: return item
                }
                return .listItem(item, isFirst: index == 0, isLast: index == items.count - 1)
            })
    }
}
