import Foundation
import SchemaKit

/// `schemagen export coredata`: a Core Data model bundle (`.xcdatamodeld`) from a schema's
/// versions, one `.xcdatamodel` each, with `.xccurrentversion` naming the newest.
///
/// What Core Data models says itself (types, optionality, defaults, external storage, history
/// on deletion, Spotlight, uniqueness constraints, fetch indexes, relationships with inverses,
/// delete rules and counts, renaming identifiers) is written as Xcode writes it. What it cannot
/// say travels in the elements' `userInfo` under `schemagen.*` keys (`CoreDataUserInfo`), which
/// `schemagen import coredata` reads back: table and column names, the exact type (enums,
/// arrays, `Int`, `Int8`), defaults Core Data has no spelling for, `encrypt`, precision and
/// scale, JSON keys, docs, keys and constraints over relationships, and the schema's own
/// settings (version, dialects, history, online), which ride on the first entity.
public enum CoreDataExporter {
    /// The files of a bundle, by path inside it: `Shop 2.xcdatamodel/contents`, `.xccurrentversion`.
    ///
    ///     for file in CoreDataExporter.bundle(history.versions.map(\.schema), name: "Shop") { write(file.contents, to: "Shop.xcdatamodeld/" + file.path) }
    public static func bundle(_ versions: [Schema], name: String) -> [(path: String, contents: String)] {
        var files: [(String, String)] = []
        for schema in versions {
            files.append(("\(versionName(schema, bundle: name)).xcdatamodel/contents", model(schema)))
        }
        if let current = versions.last {
            files.append((".xccurrentversion", currentVersionPlist("\(versionName(current, bundle: name)).xcdatamodel")))
        }
        return files
    }

    /// `Shop 3`: Xcode orders versions by name, numbers compared as numbers.
    public static func versionName(_ schema: Schema, bundle: String) -> String { "\(bundle) \(schema.version)" }

    static func currentVersionPlist(_ folder: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \t<key>_XCCurrentVersionName</key>
        \t<string>\(xmlEscaped(folder))</string>
        </dict>
        </plist>

        """
    }

    // MARK: - One version

    /// One version's `contents`, in the XML Xcode writes.
    public static func model(_ schema: Schema) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
        out +=
            element(
                "model",
                [
                    ("type", "com.apple.IDECoreDataModeler.DataModel"), ("documentVersion", "1.0"), ("minimumToolsVersion", "Automatic"), ("sourceLanguage", "Swift"),
                    ("userDefinedModelVersionIdentifier", String(schema.version)),
                ], close: false) + "\n"
        for (index, entity) in schema.entities.enumerated() {
            out += self.entity(entity, in: schema, carriesSchema: index == 0)
        }
        for valueType in schema.values {
            out += "    <composite name=\"\(xmlEscaped(valueType.name))\">\n"
            for field in valueType.fields {
                out += self.attribute(ExportedAttribute(field), in: schema, indent: "        ")
            }
            out += "    </composite>\n"
        }
        out += "</model>\n"
        return out
    }

    static func entity(_ entity: Entity, in schema: Schema, carriesSchema: Bool) -> String {
        var attributes: [(String, String)] = [("name", entity.name), ("representedClassName", entity.name), ("syncable", "YES")]
        if let renamed = entity.renamedFrom { attributes.append(("renamingIdentifier", renamed)) }
        var out = "    " + element("entity", attributes, close: false) + "\n"
        for attribute in entity.attributes { out += self.attribute(ExportedAttribute(attribute), in: schema, indent: "        ") }
        for relationship in entity.relationships { out += self.relationship(relationship, of: entity, in: schema) }
        var info: [(String, String)] = []
        if entity.tableName != Naming.defaultName(of: entity.name) { info.append((CoreDataUserInfo.table, entity.tableName)) }
        if let doc = entity.doc { info.append((CoreDataUserInfo.doc, doc)) }
        if case .members(let members) = entity.primaryKey { info.append((CoreDataUserInfo.primaryKey, members.joined(separator: ", "))) }
        // Core Data constrains and indexes attributes; lists that name a relationship travel as text.
        func namesRelationship(_ members: [String]) -> Bool { members.contains { entity.relationship(named: $0) != nil } }
        var uniques = entity.attributes.filter { $0.isUnique || ($0.isPrimaryKey && entity.primaryKeyColumns.count == 1) }.map { [$0.name] }
        uniques += entity.uniques.filter { !namesRelationship($0) }
        let relationshipUniques = entity.uniques.filter(namesRelationship)
        if !relationshipUniques.isEmpty { info.append((CoreDataUserInfo.uniques, relationshipUniques.map { $0.joined(separator: ", ") }.joined(separator: "; "))) }
        let relationshipIndexes = entity.indexes.filter(namesRelationship)
        if !relationshipIndexes.isEmpty { info.append((CoreDataUserInfo.indexes, relationshipIndexes.map { $0.joined(separator: ", ") }.joined(separator: "; "))) }
        if carriesSchema { info += schemaInfo(schema) }
        if !uniques.isEmpty {
            out += "        <uniquenessConstraints>\n"
            for members in uniques {
                out += "            <uniquenessConstraint>\n"
                for member in members { out += "                <constraint value=\"\(xmlEscaped(member))\"/>\n" }
                out += "            </uniquenessConstraint>\n"
            }
            out += "        </uniquenessConstraints>\n"
        }
        for members in entity.indexes where !namesRelationship(members) {
            out += "        <fetchIndex name=\"\(xmlEscaped("by" + members.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + "Index"))\">\n"
            for member in members { out += "            <fetchIndexElement property=\"\(xmlEscaped(member))\" type=\"Binary\" order=\"ascending\"/>\n" }
            out += "        </fetchIndex>\n"
        }
        out += userInfo(info, indent: "        ")
        out += "    </entity>\n"
        return out
    }

    /// The schema's own settings, and its enums (Core Data has neither), as JSON or text.
    static func schemaInfo(_ schema: Schema) -> [(String, String)] {
        var info: [(String, String)] = [(CoreDataUserInfo.schemaVersion, String(schema.version))]
        if let doc = schema.doc { info.append((CoreDataUserInfo.schemaDoc, doc)) }
        if let dialects = schema.dialects { info.append((CoreDataUserInfo.schemaDialects, dialects.map(\.rawValue).joined(separator: ", "))) }
        if !schema.recordsHistory {
            info.append((CoreDataUserInfo.schemaHistory, "false"))
        } else if !schema.recordsInsertValues {
            info.append((CoreDataUserInfo.schemaHistory, "{insertValues: false}"))
        }
        if let online = schema.online { info.append((CoreDataUserInfo.schemaOnline, online ? "true" : "false")) }
        for enumType in schema.enums {
            var object: [String: Any] = [
                "type": enumType.rawType.rawValue,
                "cases": enumType.cases.map { item -> [String] in
                    switch item.rawValue {
                    case .int(let number): [item.name, String(number)]
                    case .string(let text): [item.name, text]
                    }
                },
            ]
            if let doc = enumType.doc { object["doc"] = doc }
            info.append((CoreDataUserInfo.enumPrefix + enumType.name, json(object)))
        }
        for valueType in schema.values where valueType.doc != nil {
            info.append((CoreDataUserInfo.valueDocPrefix + valueType.name, valueType.doc ?? ""))
        }
        return info
    }

    // MARK: - Attributes

    /// The Core Data type a schema type is stored as, and the schema type Core Data's reads
    /// back as (when they differ, the exact one travels in `schemagen.type`).
    static func coreDataType(_ type: AttributeType, in schema: Schema) -> (coreData: String, readsBackAs: String?, composite: String?) {
        switch type {
        case .scalar(let scalar):
            switch scalar {
            case .string: return ("String", "String", nil)
            case .int: return ("Integer 64", "Int64", nil)
            case .int8: return ("Integer 16", "Int16", nil)
            case .int16: return ("Integer 16", "Int16", nil)
            case .int32: return ("Integer 32", "Int32", nil)
            case .int64: return ("Integer 64", "Int64", nil)
            case .double: return ("Double", "Double", nil)
            case .float: return ("Float", "Float", nil)
            case .bool: return ("Boolean", "Bool", nil)
            case .date: return ("Date", "Date", nil)
            case .data: return ("Binary", "Data", nil)
            case .uuid: return ("UUID", "UUID", nil)
            case .url: return ("URI", "URL", nil)
            case .decimal: return ("Decimal", "Decimal", nil)
            }
        case .enumeration(let name):
            let raw = schema.enumType(named: name)?.rawType == .int ? ("Integer 64", "Int64") : ("String", "String")
            return (raw.0, raw.1, nil)
        case .value(let name): return ("Composite", name, name)
        case .array, .unresolved: return ("Transformable", "Data", nil)
        }
    }

    static func attribute(_ attribute: ExportedAttribute, in schema: Schema, indent: String) -> String {
        let type = coreDataType(attribute.type, in: schema)
        var attributes: [(String, String)] = [("name", attribute.name)]
        if attribute.isOptional { attributes.append(("optional", "YES")) }
        if attribute.isTransient { attributes.append(("transient", "YES")) }
        attributes.append(("attributeType", type.coreData))
        if let composite = type.composite { attributes.append(("composite", composite)) }
        if type.coreData == "Transformable" {
            // Xcode's code generation types the property by the class name.
            attributes.append(("valueTransformerName", "NSSecureUnarchiveFromDataTransformer"))
            attributes.append(("customClassName", attribute.type.description))
        }
        if let value = attribute.defaultValue, let coreData = coreDataDefault(value, type: attribute.type, in: schema) { attributes.append(coreData) }
        if ["Integer 16", "Integer 32", "Integer 64", "Double", "Float", "Boolean"].contains(type.coreData) { attributes.append(("usesScalarValueType", "YES")) }
        if attribute.usesExternalStorage { attributes.append(("allowsExternalBinaryDataStorage", "YES")) }
        if attribute.preservesValueOnDeletion { attributes.append(("preservesValueInHistoryOnDeletion", "YES")) }
        if attribute.isIndexed && !attribute.isUnique { attributes.append(("indexed", "YES")) }
        if attribute.isSearchable { attributes.append(("spotlightIndexingEnabled", "YES")) }
        if attribute.isEncrypted { attributes.append(("allowsCloudEncryption", "YES")) }
        if let renamed = attribute.renamedFrom { attributes.append(("renamingIdentifier", renamed)) }
        var info: [(String, String)] = []
        if type.readsBackAs != attribute.type.description { info.append((CoreDataUserInfo.type, attribute.type.description)) }
        if attribute.columnName != Naming.defaultName(of: attribute.name) { info.append((CoreDataUserInfo.column, attribute.columnName)) }
        if let value = attribute.defaultValue { info.append((CoreDataUserInfo.defaultValue, yaml(value))) }
        if attribute.isEncrypted { info.append((CoreDataUserInfo.encrypt, attribute.encryptsDeterministically ? "deterministic" : "true")) }
        if let precision = attribute.precision { info.append((CoreDataUserInfo.precision, String(precision))) }
        if let scale = attribute.scale { info.append((CoreDataUserInfo.scale, String(scale))) }
        if attribute.isDateOnly { info.append((CoreDataUserInfo.dateOnly, "YES")) }
        if attribute.jsonKey != attribute.name { info.append((CoreDataUserInfo.jsonKey, attribute.jsonKey)) }
        if let backfill = attribute.backfill { info.append((CoreDataUserInfo.backfill, yaml(backfill))) }
        if let movedFrom = attribute.movedFromText { info.append((CoreDataUserInfo.movedFrom, movedFrom)) }
        if let doc = attribute.doc { info.append((CoreDataUserInfo.doc, doc)) }
        guard !info.isEmpty else { return indent + element("attribute", attributes) + "\n" }
        return indent + element("attribute", attributes, close: false) + "\n" + userInfo(info, indent: indent + "    ") + indent + "</attribute>\n"
    }

    /// A default as Core Data spells it, where it can: numbers, text, flags, UUIDs, URLs,
    /// decimals, enum raw values (`defaultValueString`) and fixed dates (`defaultDateTimeInterval`,
    /// seconds from 2001-01-01).
    static func coreDataDefault(_ value: DefaultValue, type: AttributeType, in schema: Schema) -> (String, String)? {
        switch value {
        case .string(let text), .uuid(let text), .url(let text), .decimal(let text): return ("defaultValueString", text)
        case .integer(let number): return ("defaultValueString", String(number))
        case .double(let number): return ("defaultValueString", String(number))
        case .bool(let flag): return ("defaultValueString", flag ? "YES" : "NO")
        case .date(let text):
            guard let date = ISO8601Date.parse(text) else { return nil }
            return ("defaultDateTimeInterval", String(date.timeIntervalSinceReferenceDate))
        case .enumCase(let name):
            guard case .enumeration(let enumName) = type, let found = schema.enumType(named: enumName)?.cases.first(where: { $0.name == name }) else { return nil }
            switch found.rawValue {
            case .int(let number): return ("defaultValueString", String(number))
            case .string(let text): return ("defaultValueString", text)
            }
        case .null, .now, .generatedUUID, .data, .array, .value: return nil
        }
    }

    // MARK: - Relationships

    static func relationship(_ relationship: Relationship, of entity: Entity, in schema: Schema) -> String {
        var attributes: [(String, String)] = [("name", relationship.name)]
        if relationship.isOptional || relationship.isToMany { attributes.append(("optional", "YES")) }
        if relationship.isToMany {
            attributes.append(("toMany", "YES"))
            if let minimum = relationship.minCount, minimum > 0 { attributes.append(("minCount", String(minimum))) }
            if let maximum = relationship.maxCount { attributes.append(("maxCount", String(maximum))) }
        } else {
            attributes.append(("maxCount", "1"))
        }
        let rule: String =
            switch relationship.deleteRule {
            case .nullify: "Nullify"
            case .cascade: "Cascade"
            case .deny: "Deny"
            case .noAction: "No Action"
            }
        attributes.append(("deletionRule", rule))
        attributes.append(("destinationEntity", relationship.target))
        if let inverse = relationship.inverse {
            attributes.append(("inverseName", inverse))
            attributes.append(("inverseEntity", relationship.target))
        }
        if let renamed = relationship.renamedFrom { attributes.append(("renamingIdentifier", renamed)) }
        var info: [(String, String)] = []
        if relationship.foreignKeyColumns.count == 1, let target = schema.entity(named: relationship.target),
            relationship.foreignKeyColumns != Naming.foreignKeyColumns(of: relationship.name, targetKey: target.primaryKeyColumns)
        {
            info.append((CoreDataUserInfo.column, relationship.foreignKeyColumns[0]))
        }
        if let doc = relationship.doc { info.append((CoreDataUserInfo.doc, doc)) }
        let indent = "        "
        guard !info.isEmpty else { return indent + element("relationship", attributes) + "\n" }
        return indent + element("relationship", attributes, close: false) + "\n" + userInfo(info, indent: indent + "    ") + indent + "</relationship>\n"
    }

    // MARK: - Text

    static func element(_ name: String, _ attributes: [(String, String)], close: Bool = true) -> String {
        "<\(name)" + attributes.map { " \($0)=\"\(xmlEscaped($1))\"" }.joined() + (close ? "/>" : ">")
    }

    static func userInfo(_ entries: [(String, String)], indent: String) -> String {
        guard !entries.isEmpty else { return "" }
        var out = indent + "<userInfo>\n"
        for (key, value) in entries { out += indent + "    " + element("entry", [("key", key), ("value", value)]) + "\n" }
        return out + indent + "</userInfo>\n"
    }

    static func xmlEscaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "\n": out += "&#10;"
            case "\r": out += "&#13;"
            case "\t": out += "&#9;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func json(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// A default as the schema language writes it, for `schemagen.default`.
    /// A backfill as the schema writes it: the literal, or a flow mapping of dialects to SQL.
    static func yaml(_ backfill: Backfill) -> String {
        switch backfill {
        case .value(let value): return yaml(value)
        case .sql(let expressions):
            let pairs = expressions.map { "\($0.key.rawValue): \(YAMLText.quoted($0.value))" }.sorted()
            return "{" + pairs.joined(separator: ", ") + "}"
        }
    }

    static func yaml(_ value: DefaultValue) -> String {
        switch value {
        case .null: return "null"
        case .string(let text), .date(let text), .uuid(let text), .url(let text), .data(let text): return YAMLText.quoted(text)
        case .integer(let number): return String(number)
        case .double(let number): return String(number)
        case .bool(let flag): return flag ? "true" : "false"
        case .decimal(let text): return text
        case .now: return "now"
        case .generatedUUID: return "uuid"
        case .enumCase(let name): return name
        case .array(let items): return "[" + items.map(yaml).joined(separator: ", ") + "]"
        case .value(let fields): return "{" + fields.map { "\($0.name): \(yaml($0.value))" }.joined(separator: ", ") + "}"
        }
    }
}

/// What the exporter writes of an entity's attribute or a value type's field.
struct ExportedAttribute {
    var name: String
    var type: AttributeType
    var isOptional: Bool
    var defaultValue: DefaultValue?
    var isUnique = false
    var isTransient = false
    var usesExternalStorage = false
    var preservesValueOnDeletion = false
    var isIndexed = false
    var isSearchable = false
    var isEncrypted = false
    var encryptsDeterministically = false
    var renamedFrom: String?
    var columnName: String
    var jsonKey: String
    var doc: String?
    var precision: Int?
    var scale: Int?
    var isDateOnly = false
    var backfill: Backfill?
    var movedFromText: String?

    init(_ attribute: Attribute) {
        name = attribute.name
        type = attribute.type
        isOptional = attribute.isOptional
        defaultValue = attribute.defaultValue
        isUnique = attribute.isUnique
        isTransient = attribute.isTransient
        usesExternalStorage = attribute.usesExternalStorage
        preservesValueOnDeletion = attribute.preservesValueOnDeletion
        isIndexed = attribute.isIndexed
        isSearchable = attribute.isSearchable
        isEncrypted = attribute.isEncrypted
        encryptsDeterministically = attribute.encryptsDeterministically
        renamedFrom = attribute.renamedFrom
        columnName = attribute.columnName
        jsonKey = attribute.jsonKey
        doc = attribute.doc
        precision = attribute.precision
        scale = attribute.scale
        isDateOnly = attribute.isDateOnly
        backfill = attribute.backfill
        movedFromText = attribute.movedFromText
    }

    init(_ field: ValueType.Field) {
        name = field.name
        type = field.type
        isOptional = field.isOptional
        defaultValue = field.defaultValue
        columnName = Naming.defaultName(of: field.name)
        jsonKey = field.jsonKey
        doc = field.doc
    }
}
