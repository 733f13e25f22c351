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
        let parts = EntityParts(entity, table: model.table(forEntity: entity.name))
        // Each member's context once, shared by every list it appears in.
        let attributeValues = Dictionary(entity.attributes.map { ($0.name, attributeValue($0, in: parts)) }, uniquingKeysWith: { a, _ in a })
        let relationshipValues = Dictionary(entity.relationships.map { ($0.name, relationshipValue($0, in: entity)) }, uniquingKeysWith: { a, _ in a })
        func attributes(_ list: [Attribute]) -> MustacheValue { self.list(list.compactMap { attributeValues[$0.name] }) }
        func relationships(_ list: [Relationship]) -> MustacheValue { self.list(list.compactMap { relationshipValues[$0.name] }) }
        let rowCodec = rowCodec(parts)
        let patchFields = patchFields(parts)

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
            "codingKeys": list(codingKeys(parts)),
            "initParameters": list(initializerParameters(parts)),
            "patchFields": list(patchFields),
            "hasPatchFields": .bool(!patchFields.isEmpty),
            "isRowCodable": .bool(rowCodec.isRowCodable),
            "joinedMembers": list(joinedMembers(parts)),
            "rowValues": list(rowCodec.values),
            "rowArguments": list(rowCodec.arguments),
            "rowCount": .number(Double(rowCodec.count)),
            "indexes": list((parts.table?.indexes ?? []).map { index in
                ["name": .string(index.name), "columns": list(index.columns.map { .string($0) }),
                 "columnsLiteral": .string("[" + index.columns.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]"),
                 "kind": .string(index.isFullText ? "fullText" : index.isUnique ? "unique" : "plain")]
            }),
        ]
    }

    /// Coded properties: the implicit key, stored attributes, then the keys of to-one links.
    func codingKeys(_ parts: EntityParts) -> [MustacheValue] {
        var keys: [MustacheValue] = []
        if parts.hasImplicitKey {
            keys.append(["swiftName": "id", "jsonKey": "id", "jsonKeyLiteral": "\"id\"", "hasCustomKey": false])
        }
        for attribute in parts.stored {
            keys.append([
                "swiftName": .string(SwiftSyntax.identifier(attribute.name)), "jsonKey": .string(attribute.jsonKey),
                "jsonKeyLiteral": .string(SwiftSyntax.stringLiteral(attribute.jsonKey)),
                "hasCustomKey": .bool(attribute.jsonKey != attribute.name),
            ])
        }
        for relationship in parts.keyRelationships {
            let property = relationship.name + "ID"
            keys.append(["swiftName": .string(SwiftSyntax.identifier(property)), "jsonKey": .string(property),
                         "jsonKeyLiteral": .string(SwiftSyntax.stringLiteral(property)), "hasCustomKey": false])
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
        return parameters.map { ["declaration": .string($0.declaration), "assignment": .string($0.assignment)] }
    }

    /// Direct row codecs (RowCodable): values in `rowColumns` order, and the initializer call
    /// that reads them back. Not for entities whose to-one keys span several columns.
    func rowCodec(_ parts: EntityParts) -> (values: [MustacheValue], arguments: [MustacheValue], count: Int, isRowCodable: Bool) {
        var values: [MustacheValue] = []
        var arguments: [MustacheValue] = []
        func readExpression(_ type: AttributeType, optional: Bool, position: Int) -> String {
            let swiftType = SwiftSyntax.typeName(type)
            switch type {
            case .value, .array:
                return "try StoredJSON.decode(\(swiftType)\(optional ? "?" : "").self, from: row[\(position)])"
            default:
                return optional ? "try Optional<\(swiftType)>(storedValue: row[\(position)])" : "try \(swiftType)(storedValue: row[\(position)])"
            }
        }
        var position = 0
        if parts.hasImplicitKey {
            values.append(["expression": "id.storedValue"])
            arguments.append(["argument": "id: try Optional<Int64>(storedValue: row[0])"])
            position = 1
        }
        for attribute in parts.stored {
            let name = SwiftSyntax.identifier(attribute.name)
            switch attribute.type {
            case .value, .array: values.append(["expression": .string("try StoredJSON.value(self.\(name))")])
            default: values.append(["expression": .string("self.\(name).storedValue")])
            }
            arguments.append(["argument": .string("\(name): " + readExpression(attribute.type, optional: attribute.isOptional, position: position))])
            position += 1
        }
        var isRowCodable = true
        for relationship in parts.keyRelationships {
            guard relationship.foreignKeyColumns.count == 1 else {
                isRowCodable = false
                continue
            }
            let name = SwiftSyntax.identifier(relationship.name + "ID")
            let base = keyBaseType(of: relationship)
            values.append(["expression": .string("self.\(name).storedValue")])
            arguments.append(["argument": .string("\(name): " + (relationship.isOptional ? "try Optional<\(base)>(storedValue: row[\(position)])" : "try \(base)(storedValue: row[\(position)])"))])
            position += 1
        }
        return (values, arguments, position, isRowCodable)
    }

    /// The Joined view: stored attributes, key properties, and relationships as properties.
    func joinedMembers(_ parts: EntityParts) -> [MustacheValue] {
        var members: [MustacheValue] = []
        if parts.hasImplicitKey {
            members.append(["declaration": "id: Int64?", "property": "id", "member": ".column(\"id\")"])
        }
        for attribute in parts.stored {
            members.append(["declaration": .string("\(SwiftSyntax.identifier(attribute.name)): \(swiftType(attribute))"),
                            "property": .string(SwiftSyntax.identifier(attribute.name)),
                            "member": .string(".column(\(SwiftSyntax.stringLiteral(attribute.columnName)))")])
        }
        for relationship in parts.keyRelationships where relationship.foreignKeyColumns.count == 1 {
            members.append(["declaration": .string("\(SwiftSyntax.identifier(relationship.name + "ID")): \(keyType(of: relationship))"),
                            "property": .string(SwiftSyntax.identifier(relationship.name + "ID")),
                            "member": .string(".column(\(SwiftSyntax.stringLiteral(relationship.foreignKeyColumns[0])))")])
        }
        for relationship in parts.entity.relationships {
            let target = SwiftSyntax.identifier(relationship.target) + ".Joined"
            let type = relationship.isToMany ? "[\(target)]" : target + (relationship.isOptional ? "?" : "")
            members.append(["declaration": .string("\(SwiftSyntax.identifier(relationship.name)): \(type)"),
                            "property": .string(SwiftSyntax.identifier(relationship.name)),
                            "member": .string(".relationship(\(SwiftSyntax.stringLiteral(relationship.name)))")])
        }
        return members
    }

    /// The fields of the three-state patch type: stored attributes and to-one keys.
    func patchFields(_ parts: EntityParts) -> [MustacheValue] {
        var fields: [MustacheValue] = []
        for attribute in parts.stored {
            fields.append([
                "swiftName": .string(SwiftSyntax.identifier(attribute.name)), "field": .string(attribute.name),
                "wrappedType": .string(SwiftSyntax.typeName(attribute.type)), "isOptional": .bool(attribute.isOptional),
                "fieldLiteral": .string(SwiftSyntax.stringLiteral(attribute.name)),
            ])
        }
        for relationship in parts.keyRelationships {
            let property = relationship.name + "ID"
            fields.append([
                "swiftName": .string(SwiftSyntax.identifier(property)), "field": .string(property),
                "wrappedType": .string(keyBaseType(of: relationship)), "isOptional": .bool(relationship.isOptional),
                "fieldLiteral": .string(SwiftSyntax.stringLiteral(property)),
            ])
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
