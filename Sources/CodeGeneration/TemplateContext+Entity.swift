import Mustache
import RelationalModel
import SchemaKit

/// An entity's context, assembled from small builders: one per piece of generated code
/// (coding keys, initializer, row codec, joined view, patch fields), each over the same
/// stored members.
extension TemplateContext {
    /// What every builder of one entity reads.
    struct EntityParts {
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

    func entityValue(_ entity: Entity, index: Int) -> MustacheValue {
        let parts = EntityParts(entity, table: table(forEntity: entity.name))
        // Each member's context once, shared by every list it appears in.
        let attributeValues = Dictionary(entity.attributes.map { ($0.name, attributeValue($0, in: parts)) }, uniquingKeysWith: { a, _ in a })
        let relationshipValues = Dictionary(entity.relationships.map { ($0.name, relationshipValue($0, in: entity)) }, uniquingKeysWith: { a, _ in a })
        func attributes(_ list: [Attribute]) -> MustacheValue { self.list(list.compactMap { attributeValues[$0.name] }) }
        func relationships(_ list: [Relationship]) -> MustacheValue { self.list(list.compactMap { relationshipValues[$0.name] }) }
        let rowCodec = rowCodec(parts)
        let patchFields = patchFields(parts)
        let joined = joinedMembers(parts)
        let codingKeys = codingKeys(parts)
        func strings(_ values: [MustacheValue], _ key: String) -> [String] { values.compactMap { $0[key]?.interpolated } }
        let patchDeclarations = patchFields.compactMap { field -> String? in
            guard let name = field["swiftName"]?.interpolated, let type = field["wrappedType"]?.interpolated else { return nil }
            return "\(name): PatchValue<\(type)> = .absent"
        }

        return [
            "name": .string(entity.name),
            "swiftName": .string(SwiftSyntax.identifier(entity.name)),
            "table": .string(entity.tableName),
            "tableLiteral": .string(SwiftSyntax.stringLiteral(entity.tableName)),
            "renamedFrom": optional(entity.renamedFrom),
            "renamedFromLiteral": .string(entity.renamedFrom.map(SwiftSyntax.stringLiteral) ?? "nil"),
            "doc": optional(entity.doc),
            "docLines": lines(entity.doc),
            "index": .number(Double(index)),
            "attributes": attributes(entity.attributes),
            "storedAttributes": attributes(parts.stored),
            "transientAttributes": attributes(entity.attributes.filter(\.isTransient)),
            "relationships": relationships(entity.relationships),
            "keyRelationships": relationships(parts.keyRelationships),
            "pathRelationships": relationships(entity.relationships.filter { $0.isToMany || $0.foreignKeyColumns.isEmpty }),
            "primaryKey": primaryKeyValue(entity),
            "codingKeys": list(codingKeys),
            "initParameters": list(initializerParameters(parts)),
            "patchFields": list(patchFields),
            "hasPatchFields": .bool(!patchFields.isEmpty),
            "isRowCodable": .bool(rowCodec.isRowCodable),
            "joinedMembers": list(joined),
            "rowValues": list(rowCodec.values),
            "columnKeyPaths": list(columnKeyPaths(parts)),
            // The same lists, wrapped to lines of 120 characters, as the default templates use them.
            "rowValuesWrapped": .string(wrapped(strings(rowCodec.values, "expression"), indent: 12)),
            "rowArgumentsWrapped": .string(wrapped(strings(rowCodec.arguments, "argument"), indent: 12)),
            "columnKeyPathsWrapped": .string(wrapped(strings(columnKeyPaths(parts), "path").map { "\\." + $0 }, indent: 12)),
            "joinedKeyPathsWrapped": .string(wrapped(strings(joined, "property").map { "\\." + $0 }, indent: 16)),
            "joinedDeclarationsWrapped": .string(wrapped(strings(joined, "declaration").enumerated().map { $0.offset == 0 ? "public let " + $0.element : $0.element }, indent: 8, continuation: 4)),
            "codingKeysWrapped": .string(wrapped(codingKeys.compactMap { key -> String? in
                guard let name = key["swiftName"]?.interpolated else { return nil }
                return key["hasCustomKey"]?.isFalsey == false ? "\(name) = \(key["jsonKeyLiteral"]?.interpolated ?? "")" : name
            }.enumerated().map { $0.offset == 0 ? "case " + $0.element : $0.element }, indent: 8, continuation: 4)),
            "patchFieldsWrapped": .string(wrapped(strings(patchFields, "entry"), indent: 12)),
            "patchDeclarationsWrapped": .string(wrapped(patchDeclarations.enumerated().map { $0.offset == 0 ? "public var " + $0.element : $0.element }, indent: 4, continuation: 4)),
            "rowArguments": list(rowCodec.arguments),
            "rowCount": .number(Double(rowCodec.count)),
            "indexes": list((parts.table?.indexes ?? []).map { index in
                ["name": .string(index.name), "columns": list(index.columns.map { .string($0) }),
                 "columnsLiteral": .string("[" + index.columns.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]"),
                 "kind": .string(index.isFullText ? "fullText" : index.isUnique ? "unique" : "plain")]
            }),
        ]
    }

    // Shapes of the objects built once per member: their keys are hashed once per run.
    static let codingKeyShape = MustacheShape()
    static let parameterShape = MustacheShape()
    static let rowValueShape = MustacheShape()
    static let rowArgumentShape = MustacheShape()
    static let keyPathShape = MustacheShape()
    static let joinedMemberShape = MustacheShape()
    static let patchFieldShape = MustacheShape()

    /// Coded properties: the implicit key, stored attributes, then the keys of to-one links.
    func codingKeys(_ parts: EntityParts) -> [MustacheValue] {
        var keys: [MustacheValue] = []
        if parts.hasImplicitKey {
            keys.append(Self.codingKeyShape.object(["swiftName": "id", "jsonKey": "id", "jsonKeyLiteral": "\"id\"", "hasCustomKey": false]))
        }
        for attribute in parts.stored {
            keys.append(Self.codingKeyShape.object([
                "swiftName": .string(SwiftSyntax.identifier(attribute.name)), "jsonKey": .string(attribute.jsonKey),
                "jsonKeyLiteral": .string(SwiftSyntax.stringLiteral(attribute.jsonKey)),
                "hasCustomKey": .bool(attribute.jsonKey != attribute.name),
            ]))
        }
        for relationship in parts.keyRelationships {
            let property = relationship.name + "ID"
            keys.append(Self.codingKeyShape.object(["swiftName": .string(SwiftSyntax.identifier(property)), "jsonKey": .string(property),
                         "jsonKeyLiteral": .string(SwiftSyntax.stringLiteral(property)), "hasCustomKey": false]))
        }
        return keys
    }

    /// Initializer parameters in declaration order, defaults where the schema gives them.
    func initializerParameters(_ parts: EntityParts) -> [MustacheValue] {
        var parameters: [(declaration: String, assignment: String)] = []
        if parts.hasImplicitKey {
            parameters.append(("id: Int64? = nil", "self.id = id"))
        }
        for attribute in parts.entity.attributes {
            let name = SwiftSyntax.identifier(attribute.name)
            parameters.append(("\(name): \(swiftType(attribute))\(initDefault(attribute))", "self.\(name) = \(name)"))
        }
        for relationship in parts.keyRelationships {
            let name = SwiftSyntax.identifier(relationship.name + "ID")
            parameters.append(("\(name): \(keyType(of: relationship))\(relationship.isOptional ? " = nil" : "")", "self.\(name) = \(name)"))
        }
        return parameters.map { Self.parameterShape.object(["declaration": .string($0.declaration), "assignment": .string($0.assignment)]) }
    }

    /// Direct row codecs (RowCodable): values in `rowColumns` order, and the initializer
    /// arguments that read them back through `StoredRowReader`, each converted to its
    /// parameter's type. Not for entities whose to-one keys span several columns.
    func rowCodec(_ parts: EntityParts) -> (values: [MustacheValue], arguments: [MustacheValue], count: Int, isRowCodable: Bool) {
        var values: [MustacheValue] = []
        var arguments: [MustacheValue] = []
        if parts.hasImplicitKey {
            values.append(Self.rowValueShape.object(["expression": "id.storedValue"]))
            arguments.append(Self.rowArgumentShape.object(["argument": "id: try row.next()"]))
        }
        for attribute in parts.stored {
            let name = SwiftSyntax.identifier(attribute.name)
            switch attribute.type {
            case .value, .array:
                values.append(Self.rowValueShape.object(["expression": .string("try StoredJSON.value(\(name))")]))
                arguments.append(Self.rowArgumentShape.object(["argument": .string("\(name): try row.\(attribute.isOptional ? "optionalJSON" : "json")()")]))
            default:
                values.append(Self.rowValueShape.object(["expression": .string("\(name).storedValue")]))
                arguments.append(Self.rowArgumentShape.object(["argument": .string("\(name): try row.next()")]))
            }
        }
        var isRowCodable = true
        for relationship in parts.keyRelationships {
            guard relationship.foreignKeyColumns.count == 1 else {
                isRowCodable = false
                continue
            }
            let name = SwiftSyntax.identifier(relationship.name + "ID")
            values.append(Self.rowValueShape.object(["expression": .string("\(name).storedValue")]))
            arguments.append(Self.rowArgumentShape.object(["argument": .string("\(name): try row.next()")]))
        }
        return (values, arguments, values.count, isRowCodable)
    }

    /// The model's key paths in `rowColumns` order, for `column(for:)`.
    func columnKeyPaths(_ parts: EntityParts) -> [MustacheValue] {
        var paths: [String] = parts.hasImplicitKey ? ["id"] : []
        paths += parts.stored.map { SwiftSyntax.identifier($0.name) }
        paths += parts.keyRelationships.filter { $0.foreignKeyColumns.count == 1 }.map { SwiftSyntax.identifier($0.name + "ID") }
        return paths.map { Self.keyPathShape.object(["path": .string($0)]) }
    }

    /// The Joined view: stored attributes, key properties, and relationships as properties.
    func joinedMembers(_ parts: EntityParts) -> [MustacheValue] {
        var members: [MustacheValue] = []
        if parts.hasImplicitKey {
            members.append(Self.joinedMemberShape.object(["declaration": "id: Int64?", "property": "id", "member": ".column(\"id\")"]))
        }
        for attribute in parts.stored {
            members.append(Self.joinedMemberShape.object(["declaration": .string("\(SwiftSyntax.identifier(attribute.name)): \(swiftType(attribute))"),
                            "property": .string(SwiftSyntax.identifier(attribute.name)),
                            "member": .string(".column(\(SwiftSyntax.stringLiteral(attribute.columnName)))")]))
        }
        for relationship in parts.keyRelationships where relationship.foreignKeyColumns.count == 1 {
            members.append(Self.joinedMemberShape.object(["declaration": .string("\(SwiftSyntax.identifier(relationship.name + "ID")): \(keyType(of: relationship))"),
                            "property": .string(SwiftSyntax.identifier(relationship.name + "ID")),
                            "member": .string(".column(\(SwiftSyntax.stringLiteral(relationship.foreignKeyColumns[0])))")]))
        }
        for relationship in parts.entity.relationships {
            let target = SwiftSyntax.identifier(relationship.target) + ".Joined"
            let type = relationship.isToMany ? "[\(target)]" : target + (relationship.isOptional ? "?" : "")
            members.append(Self.joinedMemberShape.object(["declaration": .string("\(SwiftSyntax.identifier(relationship.name)): \(type)"),
                            "property": .string(SwiftSyntax.identifier(relationship.name)),
                            "member": .string(".relationship(\(SwiftSyntax.stringLiteral(relationship.name)))")]))
        }
        return members
    }

    /// The fields of the three-state patch type: stored attributes and to-one keys.
    func patchFields(_ parts: EntityParts) -> [MustacheValue] {
        var fields: [MustacheValue] = []
        func field(name: String, jsonKey: String, wrappedType: String, isOptional: Bool) -> MustacheValue {
            let property = SwiftSyntax.identifier(name)
            let key = jsonKey == name ? "" : ", key: " + SwiftSyntax.stringLiteral(jsonKey)
            return Self.patchFieldShape.object([
                "swiftName": .string(property), "field": .string(name), "wrappedType": .string(wrappedType), "isOptional": .bool(isOptional),
                "fieldLiteral": .string(SwiftSyntax.stringLiteral(name)), "jsonKeyLiteral": .string(SwiftSyntax.stringLiteral(jsonKey)),
                "entry": .string(".\(isOptional ? "optional" : "required")(\\.\(property), \\.\(property), \(SwiftSyntax.stringLiteral(name))\(key))"),
            ])
        }
        for attribute in parts.stored {
            fields.append(field(name: attribute.name, jsonKey: attribute.jsonKey, wrappedType: SwiftSyntax.typeName(attribute.type), isOptional: attribute.isOptional))
        }
        for relationship in parts.keyRelationships {
            let property = relationship.name + "ID"
            fields.append(field(name: property, jsonKey: property, wrappedType: keyBaseType(of: relationship), isOptional: relationship.isOptional))
        }
        return fields
    }

    func primaryKeyValue(_ entity: Entity) -> MustacheValue {
        let columnsLiteral = "[" + entity.primaryKeyColumns.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]"
        switch entity.primaryKey {
        case .implicit:
            return ["isImplicit": true, "isSingle": false, "isComposite": false, "swiftType": "Int64?",
                    "columns": list([.string(Entity.implicitKeyName)]), "columnsLiteral": .string(columnsLiteral), "members": []]
        case .members(let names):
            let members: [MustacheValue] = names.map { name in
                let property = entity.attribute(named: name) != nil ? name : name + "ID"
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
            let singleProperty = isSingle ? (entity.attribute(named: names[0]) != nil ? names[0] : names[0] + "ID") : ""
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
