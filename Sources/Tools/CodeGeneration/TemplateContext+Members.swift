import Mustache
import RelationalModel
import SchemaKit
import SchemaMetadata

extension TemplateContext {
    // MARK: - Attributes

    func swiftType(_ attribute: Attribute) -> String { SwiftSyntax.typeName(of: attribute) }

    /// ` = default` for the initializer and transient properties; optional ones default to nil.
    func initDefault(_ attribute: Attribute) -> String {
        if let value = attribute.defaultValue {
            return " = " + SwiftSyntax.expression(for: value, type: attribute.type, schema: schema)
        }
        return attribute.isOptional ? " = nil" : ""
    }

    static let relationshipShape = MustacheShape()

    /// An attribute's context: its fields are worked out as templates read them.
    func attributeValue(_ attribute: Attribute, in parts: EntityParts) -> MustacheValue {
        .lazy(MustacheLazyObject(fieldNames: AttributeField.names, source: AttributeFields(context: self, attribute: attribute, parts: parts)))
    }

    func attributeField(_ field: AttributeField, _ attribute: Attribute, in parts: EntityParts) -> MustacheValue {
        // The column as the relational model has it (transient attributes have none).
        var column: ColumnSnapshot? { attribute.isTransient ? nil : parts.table?.column(named: attribute.columnName) }
        switch field {
        case .name: return .string(attribute.name)
        case .swiftName: return .string(SwiftSyntax.identifier(attribute.name))
        case .nameLiteral: return .string(SwiftSyntax.stringLiteral(attribute.name))
        case .swiftType: return .string(swiftType(attribute))
        case .swiftBaseType: return .string(SwiftSyntax.typeName(attribute.type))
        case .column: return .string(attribute.columnName)
        case .columnLiteral: return .string(SwiftSyntax.stringLiteral(attribute.columnName))
        case .jsonKey: return .string(attribute.jsonKey)
        case .jsonKeyLiteral: return .string(SwiftSyntax.stringLiteral(attribute.jsonKey))
        case .hasCustomJSONKey: return .bool(attribute.jsonKey != attribute.name)
        case .isOptional: return .bool(attribute.isOptional)
        case .isUnique: return .bool(attribute.isUnique)
        case .isPrimaryKey: return .bool(isKeyMember(attribute.name, of: parts.entity))
        case .isTransient: return .bool(attribute.isTransient)
        case .isStored: return .bool(!attribute.isTransient)
        case .usesExternalStorage: return .bool(attribute.usesExternalStorage)
        case .isEncrypted: return .bool(attribute.isEncrypted)
        case .encryptsDeterministically: return .bool(attribute.encryptsDeterministically)
        case .preservesValueOnDeletion: return .bool(attribute.preservesValueOnDeletion)
        case .isIndexed: return .bool(attribute.isIndexed)
        case .isSearchable: return .bool(attribute.isSearchable)
        case .isDateOnly: return .bool(attribute.isDateOnly)
        case .options:
            // Every option the attribute sets, by its schema key, from the options table: a new
            // option reaches templates without a field of its own.
            var options: [String: MustacheValue] = [:]
            for option in AttributeOption.allCases {
                guard let value = option.value(of: attribute) else { continue }
                options[option.key] = option.isYesOrNo ? .bool(true) : .string(value)
            }
            return .object(options)
        case .renamedFrom: return optional(attribute.renamedFrom)
        case .renamedFromLiteral: return .string(attribute.renamedFrom.map(SwiftSyntax.stringLiteral) ?? "nil")
        case .doc: return optional(attribute.doc)
        case .docLines: return lines(attribute.doc)
        case .hasDefault: return .bool(attribute.defaultValue != nil)
        case .defaultValue: return optional(attribute.defaultValue.map { SwiftSyntax.expression(for: $0, type: attribute.type, schema: schema) })
        case .initDefault: return .string(initDefault(attribute))
        case .storage: return .string((column?.kind ?? SnapshotBuilder.kind(of: attribute, in: schema)).rawValue)
        case .metadataDefault: return .string(column.map(metadataDefault) ?? "nil")
        case .metadataColumn: return .string(metadataColumn(attribute, in: parts, column: column))
        }
    }

    /// The attribute's `ColumnDescriptor.attribute(...)` expression, printed from the value
    /// `schemaDescriptor` holds: only what differs from the defaults is written, so metadata
    /// stays a line per attribute.
    func metadataColumn(_ attribute: Attribute, in parts: EntityParts, column: ColumnSnapshot?) -> String {
        let metadata = columnMetadata(attribute, in: parts, column: column)
        var arguments = [SwiftSyntax.stringLiteral(metadata.property), "." + metadata.storage.rawValue, SwiftSyntax.stringLiteral(metadata.swiftType)]
        if let column = metadata.column { arguments.append("column: " + SwiftSyntax.stringLiteral(column)) }
        if let jsonKey = metadata.jsonKey { arguments.append("jsonKey: " + SwiftSyntax.stringLiteral(jsonKey)) }
        let names: [(ColumnDescriptor.Flags, String)] = [
            (.optional, ".optional"), (.primaryKey, ".primaryKey"), (.unique, ".unique"), (.indexed, ".indexed"), (.searchable, ".searchable"),
            (.externalStorage, ".externalStorage"), (.encrypted, ".encrypted"), (.deterministic, ".deterministic"), (.preservesValueOnDeletion, ".preservesValueOnDeletion"),
        ]
        let set = names.filter { metadata.flags.contains($0.0) }.map(\.1)
        if !set.isEmpty { arguments.append("[" + set.joined(separator: ", ") + "]") }
        if let renamed = metadata.renamedFrom { arguments.append("renamedFrom: " + SwiftSyntax.stringLiteral(renamed)) }
        if let moved = metadata.movedFrom { arguments.append("movedFrom: " + SwiftSyntax.stringLiteral(moved)) }
        if let value = metadata.defaultValue { arguments.append("default: " + Self.literal(value)) }
        return call(".attribute", arguments, indent: 12)
    }

    /// A default as Swift source.
    static func literal(_ value: DefaultValueDescriptor) -> String {
        switch value {
        case .null: ".null"
        case .now: ".now"
        case .generatedUUID: ".generatedUUID"
        case .literal(let text): ".literal(\(SwiftSyntax.stringLiteral(text)))"
        }
    }

    func isKeyMember(_ name: String, of entity: Entity) -> Bool {
        if case .members(let members) = entity.primaryKey { return members.contains(name) }
        return false
    }

    /// A Swift expression of `DefaultValueDescriptor?` for the metadata file, from the relational
    /// model's column default.
    func metadataDefault(_ column: ColumnSnapshot) -> String {
        defaultDescriptor(column).map(Self.literal) ?? "nil"
    }

    // MARK: - Relationships

    /// The Swift type of a to-one relationship's key property, optional when the link is.
    func keyType(of relationship: Relationship) -> String {
        keyBaseType(of: relationship) + (relationship.isOptional ? "?" : "")
    }

    func keyBaseType(of relationship: Relationship) -> String {
        guard let target = entity(named: relationship.target) else { return "Int64" }
        switch target.primaryKey {
        case .implicit: return "Int64"
        case .members(let members) where members.count == 1:
            if let attribute = target.attribute(named: members[0]) { return SwiftSyntax.typeName(attribute.type) }
            if let inner = target.relationship(named: members[0]), inner.target != target.name { return keyBaseType(of: inner) }
            return "Int64"
        case .members:
            return SwiftSyntax.identifier(target.name) + ".ID"
        }
    }

    func relationshipValue(_ relationship: Relationship, in entity: Entity) -> MustacheValue {
        let storesKey = !relationship.isToMany && !relationship.foreignKeyColumns.isEmpty
        return Self.relationshipShape.object([
            "name": .string(relationship.name),
            "swiftName": .string(SwiftSyntax.identifier(relationship.name)),
            "nameLiteral": .string(SwiftSyntax.stringLiteral(relationship.name)),
            "target": .string(relationship.target),
            "targetSwiftName": .string(SwiftSyntax.identifier(relationship.target)),
            "isToOne": .bool(!relationship.isToMany),
            "isToMany": .bool(relationship.isToMany),
            "isOptional": .bool(relationship.isOptional),
            "isManyToMany": .bool(relationship.isManyToMany && relationship.inverse != nil),
            "inverse": optional(relationship.inverse),
            "inverseLiteral": .string(relationship.inverse.map(SwiftSyntax.stringLiteral) ?? "nil"),
            "hasInverse": .bool(relationship.inverse != nil),
            "deleteRule": .string(relationship.deleteRule.rawValue),
            "minCount": relationship.minCount.map { .number(Double($0)) } ?? .null,
            "maxCount": relationship.maxCount.map { .number(Double($0)) } ?? .null,
            "minCountLiteral": .string(relationship.minCount.map(String.init) ?? "nil"),
            "maxCountLiteral": .string(relationship.maxCount.map(String.init) ?? "nil"),
            "storesForeignKey": .bool(storesKey),
            "foreignKeyColumns": list(relationship.foreignKeyColumns.map { .string($0) }),
            "foreignKeyColumnsLiteral": .string("[" + relationship.foreignKeyColumns.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]"),
            "joinTable": optional(relationship.joinTableName),
            "joinTableLiteral": .string(relationship.joinTableName.map(SwiftSyntax.stringLiteral) ?? "nil"),
            "joinColumnsLiteral": .string("[" + relationship.joinColumns.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]"),
            "joinTargetColumnsLiteral": .string("[" + relationship.joinTargetColumns.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]"),
            "keyProperty": .string(SwiftSyntax.identifier(Naming.keyProperty(of: relationship.name))),
            "keyPropertyLiteral": .string(storesKey ? SwiftSyntax.stringLiteral(Naming.keyProperty(of: relationship.name)) : "nil"),
            "singleForeignKeyColumnLiteral": relationship.foreignKeyColumns.count == 1 ? .string(SwiftSyntax.stringLiteral(relationship.foreignKeyColumns[0])) : .null,
            "keySwiftType": .string(keyType(of: relationship)),
            "renamedFrom": optional(relationship.renamedFrom),
            "renamedFromLiteral": .string(relationship.renamedFrom.map(SwiftSyntax.stringLiteral) ?? "nil"),
            "doc": optional(relationship.doc),
            "docLines": lines(relationship.doc),
            "metadataRelationship": .string(metadataRelationship(relationship, storesKey: storesKey)),
        ])
    }

    /// The relationship's `RelationshipDescriptor(...)` expression, printed from the value
    /// `schemaDescriptor` holds, defaults left out.
    func metadataRelationship(_ relationship: Relationship, storesKey: Bool) -> String {
        let value = relationshipDescriptor(relationship, storesKey: storesKey)
        func literals(_ names: [String]) -> String { "[" + names.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]" }
        var arguments = ["name: " + SwiftSyntax.stringLiteral(value.name), "target: " + SwiftSyntax.stringLiteral(value.target)]
        if value.isToMany { arguments.append("isToMany: true") }
        if value.isOptional { arguments.append("isOptional: true") }
        if let inverse = value.inverse { arguments.append("inverse: " + SwiftSyntax.stringLiteral(inverse)) }
        if value.deleteRule != .nullify { arguments.append("deleteRule: .\(value.deleteRule.rawValue)") }
        if let minimum = value.minCount { arguments.append("minCount: \(minimum)") }
        if let maximum = value.maxCount { arguments.append("maxCount: \(maximum)") }
        if !value.foreignKeyColumns.isEmpty { arguments.append("foreignKeyColumns: " + literals(value.foreignKeyColumns)) }
        if let joinTable = value.joinTable { arguments.append("joinTable: " + SwiftSyntax.stringLiteral(joinTable)) }
        if let renamed = value.renamedFrom { arguments.append("renamedFrom: " + SwiftSyntax.stringLiteral(renamed)) }
        if let keyProperty = value.keyProperty { arguments.append("keyProperty: " + SwiftSyntax.stringLiteral(keyProperty)) }
        if value.joinTable != nil {
            arguments.append("joinColumns: " + literals(value.joinColumns))
            arguments.append("joinTargetColumns: " + literals(value.joinTargetColumns))
        }
        return call("RelationshipDescriptor", arguments, indent: 12)
    }
}

/// The fields of an attribute's context, as templates name them (`docs/templates.md`).
enum AttributeField: Int, CaseIterable {
    case name, swiftName, nameLiteral, swiftType, swiftBaseType, column, columnLiteral, jsonKey, jsonKeyLiteral
    case hasCustomJSONKey, isOptional, isUnique, isPrimaryKey, isTransient, isStored, usesExternalStorage, isEncrypted
    case encryptsDeterministically, preservesValueOnDeletion, isIndexed, isSearchable, isDateOnly, options, renamedFrom, renamedFromLiteral
    case doc, docLines, hasDefault, defaultValue, initDefault, storage, metadataDefault, metadataColumn

    static let names = MustacheFieldNames(allCases.map { "\($0)" })
}

struct AttributeFields: MustacheFieldSource {
    let context: TemplateContext
    let attribute: Attribute
    let parts: TemplateContext.EntityParts

    func value(ofField index: Int, in object: MustacheLazyObject) -> MustacheValue {
        guard let field = AttributeField(rawValue: index) else { return .null }
        return context.attributeField(field, attribute, in: parts)
    }
}
