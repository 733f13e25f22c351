import Mustache
import RelationalModel
import SchemaKit

/// An entity's context, assembled from small builders: one per piece of generated code
/// (coding keys, initializer, row codec, joined view, key paths), each over the same
/// stored members.
extension TemplateContext {
    /// What every builder of one entity reads.
    struct EntityParts: Sendable {
        let entity: Entity
        let table: TableSnapshot?
        let stored: [Attribute]
        /// To-one relationships whose key this entity's table holds.
        let keyRelationships: [Relationship]
        var hasImplicitKey: Bool { if case .implicit = entity.primaryKey { true } else { false } }

        init(_ entity: Entity, table: TableSnapshot?) {
            self.entity = entity
            self.table = table
            self.stored = entity.attributes.filter { !$0.isTransient }
            self.keyRelationships = entity.relationships.filter { !$0.isToMany && !$0.foreignKeyColumns.isEmpty }
        }
    }

    /// An entity's context: its fields are worked out as templates read them, each once,
    /// and shared by every file rendered from it. Its members' contexts are made up front (they
    /// are lazy too) so the lists that hold the same member share one.
    func entityValue(_ entity: Entity, index: Int) -> MustacheValue {
        let parts = EntityParts(entity, table: table(forEntity: entity.name))
        let attributeValues = Dictionary(entity.attributes.map { ($0.name, attributeValue($0, in: parts)) }, uniquingKeysWith: { a, _ in a })
        let relationshipValues = Dictionary(entity.relationships.map { ($0.name, relationshipValue($0, in: entity)) }, uniquingKeysWith: { a, _ in a })
        let source = EntityFields(context: self, parts: parts, index: index, attributeValues: attributeValues, relationshipValues: relationshipValues)
        return .lazy(MustacheLazyObject(fieldNames: EntityField.names, source: source))
    }

    func entityField(_ field: EntityField, of source: EntityFields, in object: MustacheLazyObject) -> MustacheValue {
        let parts = source.parts
        let entity = parts.entity
        func attributes(_ list: [Attribute]) -> MustacheValue { self.list(list.compactMap { source.attributeValues[$0.name] }) }
        func relationships(_ list: [Relationship]) -> MustacheValue { self.list(list.compactMap { source.relationshipValues[$0.name] }) }
        switch field {
        case .name: return .string(entity.name)
        case .swiftName: return .string(SwiftSyntax.identifier(entity.name))
        case .table: return .string(entity.tableName)
        case .tableLiteral: return .string(SwiftSyntax.stringLiteral(entity.tableName))
        case .renamedFrom: return optional(entity.renamedFrom)
        case .renamedFromLiteral: return .string(entity.renamedFrom.map(SwiftSyntax.stringLiteral) ?? "nil")
        case .doc: return optional(entity.doc)
        case .docLines: return lines(entity.doc)
        case .index: return .number(Double(source.index))
        case .attributes: return attributes(entity.attributes)
        case .storedAttributes: return attributes(parts.stored)
        case .transientAttributes: return attributes(entity.attributes.filter(\.isTransient))
        case .relationships: return relationships(entity.relationships)
        case .keyRelationships: return relationships(parts.keyRelationships)
        case .pathRelationships: return relationships(entity.relationships.filter { $0.isToMany || $0.foreignKeyColumns.isEmpty })
        case .primaryKey: return primaryKeyValue(entity)
        case .codingKeys:
            return list(
                codingKeys(parts).map { key in
                    Self.codingKeyShape.object([
                        "swiftName": .string(key.swiftName), "jsonKey": .string(key.jsonKey),
                        "jsonKeyLiteral": .string(key.jsonKeyLiteral), "hasCustomKey": .bool(key.hasCustomKey),
                    ])
                })
        case .initParameters:
            return list(initializerParameters(parts).map { Self.parameterShape.object(["declaration": .string($0.declaration), "assignment": .string($0.assignment)]) })
        case .initParametersWrapped: return .string(wrapped(initializerParameters(parts).map(\.declaration), indent: 8))
        case .isRowCodable: return .bool(parts.keyRelationships.allSatisfy { $0.foreignKeyColumns.count == 1 })
        case .joinedMembers:
            return list(
                joinedMembers(parts).map {
                    Self.joinedMemberShape.object(["declaration": .string($0.declaration), "property": .string($0.property), "member": .string($0.member)])
                })
        case .rowValues: return list(rowCodec(parts).values.map { Self.rowValueShape.object(["expression": .string($0)]) })
        case .rowArguments: return list(rowCodec(parts).arguments.map { Self.rowArgumentShape.object(["argument": .string($0)]) })
        case .rowCount: return .number(Double(rowCodec(parts).values.count))
        case .columnKeyPaths: return list(columnKeyPaths(parts).map { Self.keyPathShape.object(["path": .string($0)]) })
        // The same lists, wrapped to lines of 120 characters, as the default templates use them.
        case .rowValuesWrapped: return .string(wrapped(rowCodec(parts).values, indent: 12, trailingComma: true))
        case .rowArgumentsWrapped: return .string(wrapped(rowCodec(parts).arguments, indent: 12))
        case .columnKeyPathsWrapped: return .string(wrapped(columnKeyPaths(parts).map { "\\." + $0 }, indent: 12, trailingComma: true))
        case .joinedKeyPathsWrapped: return .string(wrapped(joinedMembers(parts).map { "\\." + $0.property }, indent: 16, trailingComma: true))
        case .hasRelationships: return .bool(!parts.entity.relationships.isEmpty)
        case .hasIndexes: return .bool(!(parts.table?.indexes ?? []).isEmpty)
        case .isSynced: return .bool(schema.sync?.entity(named: entity.name) != nil)
        case .syncLiteral: return optional(syncLiteral(of: entity))
        case .joinedDeclarationsWrapped:
            return .string(wrapped(joinedMembers(parts).enumerated().map { ($0.offset == 0 ? "public let " : "") + $0.element.declaration }, indent: 8, continuation: 4))
        case .codingKeysWrapped:
            return .string(
                wrapped(
                    codingKeys(parts).enumerated().map { index, key in
                        (index == 0 ? "case " : "") + key.swiftName + (key.hasCustomKey ? " = " + key.jsonKeyLiteral : "")
                    }, indent: 8, continuation: 4))
        case .indexes:
            return list(
                (parts.table?.indexes ?? []).map { index in
                    [
                        "name": .string(index.name), "columns": list(index.columns.map { .string($0) }),
                        "columnsLiteral": .string("[" + index.columns.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]"),
                        "kind": .string(index.isFullText ? "fullText" : index.isUnique ? "unique" : "plain"),
                    ]
                })
        }
    }

    // Shapes of the objects built once per member: their keys are hashed once per run.
    static let codingKeyShape = MustacheShape()
    static let parameterShape = MustacheShape()
    static let rowValueShape = MustacheShape()
    static let rowArgumentShape = MustacheShape()
    static let keyPathShape = MustacheShape()
    static let joinedMemberShape = MustacheShape()

    struct CodingKeyParts {
        let swiftName: String, jsonKey: String, jsonKeyLiteral: String, hasCustomKey: Bool
    }

    /// Coded properties: the implicit key, stored attributes, then the keys of to-one links.
    func codingKeys(_ parts: EntityParts) -> [CodingKeyParts] {
        var keys: [CodingKeyParts] = []
        keys.reserveCapacity(parts.stored.count + parts.keyRelationships.count + 1)
        if parts.hasImplicitKey {
            keys.append(CodingKeyParts(swiftName: "id", jsonKey: "id", jsonKeyLiteral: "\"id\"", hasCustomKey: false))
        }
        for attribute in parts.stored {
            keys.append(
                CodingKeyParts(
                    swiftName: SwiftSyntax.identifier(attribute.name), jsonKey: attribute.jsonKey,
                    jsonKeyLiteral: SwiftSyntax.stringLiteral(attribute.jsonKey), hasCustomKey: attribute.jsonKey != attribute.name))
        }
        for relationship in parts.keyRelationships {
            let property = Naming.keyProperty(of: relationship.name)
            keys.append(
                CodingKeyParts(
                    swiftName: SwiftSyntax.identifier(property), jsonKey: property,
                    jsonKeyLiteral: SwiftSyntax.stringLiteral(property), hasCustomKey: false))
        }
        return keys
    }

    /// Initializer parameters in declaration order, defaults where the schema gives them.
    func initializerParameters(_ parts: EntityParts) -> [(declaration: String, assignment: String)] {
        var parameters: [(declaration: String, assignment: String)] = []
        if parts.hasImplicitKey {
            parameters.append(("id: Int64? = nil", "self.id = id"))
        }
        for attribute in parts.entity.attributes {
            let name = SwiftSyntax.identifier(attribute.name)
            parameters.append(("\(name): \(swiftType(attribute))\(initDefault(attribute))", "self.\(name) = \(name)"))
        }
        for relationship in parts.keyRelationships {
            let name = SwiftSyntax.identifier(Naming.keyProperty(of: relationship.name))
            parameters.append(("\(name): \(keyType(of: relationship))\(relationship.isOptional ? " = nil" : "")", "self.\(name) = \(name)"))
        }
        return parameters
    }

    /// Direct row codecs (RowCodable): value expressions in `rowColumns` order, and the
    /// initializer arguments that read them back through `StoredRowReader`, each converted to
    /// its parameter's type. Entities whose to-one keys span several columns have none
    /// (`isRowCodable`); their multi-column keys are left out here.
    func rowCodec(_ parts: EntityParts) -> (values: [String], arguments: [String]) {
        var values: [String] = []
        var arguments: [String] = []
        values.reserveCapacity(parts.stored.count + parts.keyRelationships.count + 1)
        arguments.reserveCapacity(values.capacity)
        if parts.hasImplicitKey {
            values.append("id.storedValue")
            arguments.append("id: row.next()")
        }
        for attribute in parts.stored {
            let name = SwiftSyntax.identifier(attribute.name)
            switch attribute.type {
            case .value, .array:
                values.append("try StoredJSON.value(\(name))")
                arguments.append("\(name): row.\(attribute.isOptional ? "optionalJSON" : "json")()")
            case .scalar(.date) where attribute.isDateOnly:
                values.append("\(name).storedDayValue")
                arguments.append("\(name): row.next()")
            default:
                values.append("\(name).storedValue")
                arguments.append("\(name): row.next()")
            }
        }
        for relationship in parts.keyRelationships where relationship.foreignKeyColumns.count == 1 {
            let name = SwiftSyntax.identifier(Naming.keyProperty(of: relationship.name))
            values.append("\(name).storedValue")
            arguments.append("\(name): row.next()")
        }
        return (values, arguments)
    }

    /// The model's coded key paths, for `PatchableModel.keyPaths`: `rowColumns` order, then
    /// the keys of to-one relationships that span several columns.
    func columnKeyPaths(_ parts: EntityParts) -> [String] {
        var paths: [String] = parts.hasImplicitKey ? ["id"] : []
        paths += parts.stored.map { SwiftSyntax.identifier($0.name) }
        paths += parts.keyRelationships.filter { $0.foreignKeyColumns.count == 1 }.map { SwiftSyntax.identifier(Naming.keyProperty(of: $0.name)) }
        paths += parts.keyRelationships.filter { $0.foreignKeyColumns.count > 1 }.map { SwiftSyntax.identifier(Naming.keyProperty(of: $0.name)) }
        return paths
    }

    /// The Joined view: stored attributes, key properties, and relationships as properties.
    func joinedMembers(_ parts: EntityParts) -> [(declaration: String, property: String, member: String)] {
        var members: [(declaration: String, property: String, member: String)] = []
        if parts.hasImplicitKey {
            members.append(("id: Int64?", "id", ".column(\"id\")"))
        }
        for attribute in parts.stored {
            let property = SwiftSyntax.identifier(attribute.name)
            members.append(("\(property): \(swiftType(attribute))", property, ".column(\(SwiftSyntax.stringLiteral(attribute.columnName)))"))
        }
        for relationship in parts.keyRelationships where relationship.foreignKeyColumns.count == 1 {
            let property = SwiftSyntax.identifier(Naming.keyProperty(of: relationship.name))
            members.append(("\(property): \(keyType(of: relationship))", property, ".column(\(SwiftSyntax.stringLiteral(relationship.foreignKeyColumns[0])))"))
        }
        for relationship in parts.entity.relationships {
            let target = SwiftSyntax.identifier(relationship.target) + ".Joined"
            let type = relationship.isToMany ? "[\(target)]" : target + (relationship.isOptional ? "?" : "")
            let property = SwiftSyntax.identifier(relationship.name)
            members.append(("\(property): \(type)", property, ".relationship(\(SwiftSyntax.stringLiteral(relationship.name)))"))
        }
        return members
    }

    func primaryKeyValue(_ entity: Entity) -> MustacheValue {
        let columnsLiteral = "[" + entity.primaryKeyColumns.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]"
        switch entity.primaryKey {
        case .implicit:
            return [
                "isImplicit": true, "isSingle": false, "isComposite": false, "swiftType": "Int64?",
                "columns": list([.string(Entity.implicitKeyName)]), "columnsLiteral": .string(columnsLiteral), "members": [],
            ]
        case .members(let names):
            let members: [MustacheValue] = names.map { name in
                let property = entity.attribute(named: name) != nil ? name : Naming.keyProperty(of: name)
                let type: String
                if let attribute = entity.attribute(named: name) {
                    type = swiftType(attribute)
                } else if let relationship = entity.relationship(named: name) {
                    type = keyType(of: relationship)
                } else {
                    type = "Never"
                }
                return ["name": .string(name), "property": .string(SwiftSyntax.identifier(property)), "swiftType": .string(type)]
            }
            let isSingle = names.count == 1
            let singleProperty = isSingle ? (entity.attribute(named: names[0]) != nil ? names[0] : Naming.keyProperty(of: names[0])) : ""
            return [
                "isImplicit": false, "isSingle": .bool(isSingle), "isComposite": .bool(!isSingle),
                // A single key named `id` is Identifiable's `id` already; others need a computed `id`.
                "needsComputedID": .bool(!(isSingle && singleProperty == "id")),
                "singleProperty": .string(SwiftSyntax.identifier(singleProperty)),
                "singleColumnLiteral": .string(entity.primaryKeyColumns.count == 1 ? SwiftSyntax.stringLiteral(entity.primaryKeyColumns[0]) : "nil"),
                "swiftType": .string(isSingle ? (members.first?["swiftType"]?.interpolated ?? "Never") : "ID"),
                "columns": list(entity.primaryKeyColumns.map { .string($0) }),
                "columnsLiteral": .string(columnsLiteral),
                "members": list(members),
            ]
        }
    }
}

/// The fields of an entity's context, as templates name them (`docs/templates.md`).
enum EntityField: Int, CaseIterable {
    case name, swiftName, table, tableLiteral, renamedFrom, renamedFromLiteral, doc, docLines, index
    case attributes, storedAttributes, transientAttributes, relationships, keyRelationships, pathRelationships
    case primaryKey, codingKeys, initParameters, isRowCodable, joinedMembers
    case rowValues, rowArguments, rowCount, columnKeyPaths
    case rowValuesWrapped, rowArgumentsWrapped, columnKeyPathsWrapped, joinedKeyPathsWrapped, joinedDeclarationsWrapped
    case codingKeysWrapped, initParametersWrapped, indexes, hasRelationships, hasIndexes, isSynced, syncLiteral

    static let names = MustacheFieldNames(allCases.map { "\($0)" })
}

struct EntityFields: MustacheFieldSource {
    let context: TemplateContext
    let parts: TemplateContext.EntityParts
    let index: Int
    let attributeValues: [String: MustacheValue]
    let relationshipValues: [String: MustacheValue]

    func value(ofField index: Int, in object: MustacheLazyObject) -> MustacheValue {
        guard let field = EntityField(rawValue: index) else { return .null }
        return context.entityField(field, of: self, in: object)
    }
}
