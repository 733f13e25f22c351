import Foundation
import SchemaKit
import TextEscaping

/// `schemagen export coredata`: a Core Data model bundle (`.xcdatamodeld`) from a schema's
/// versions, one `.xcdatamodel` each, with `.xccurrentversion` naming the newest.
///
/// What Core Data models says itself (types, optionality, defaults, external storage, history
/// on deletion, Spotlight, uniqueness constraints, fetch indexes, relationships with inverses,
/// delete rules and counts, renaming identifiers as `elementID`) is written as Xcode writes it,
/// entities and their properties sorted as Xcode sorts them on save. What it cannot
/// say travels in the elements' `userInfo` under `schemagen.*` keys (`CoreDataUserInfo`), which
/// `schemagen import coredata` reads back: table and column names, the exact type (enums,
/// arrays, `Int`, `Int8`), defaults Core Data has no spelling for, `encrypt`, precision and
/// scale, JSON keys, docs, keys and constraints over relationships, and the schema's own
/// settings (version, dialects, history, online), which ride on the schema's first entity, and
/// the schema's order of entities and members, which Xcode's sorting would lose.
public enum CoreDataExporter {
    /// The files of a bundle, by path inside it: `Shop 2.xcdatamodel/contents`, `.xccurrentversion`.
    ///
    ///     for file in CoreDataExporter.bundle(history.versions.map(\.schema), name: "Shop") { write(file.contents, to: "Shop.xcdatamodeld/" + file.path) }
    ///
    /// `folderNames`: the folders a bundle being written over already gives versions
    /// (`existingFolderNames`), kept so the Xcode project's references to them hold.
    /// `keptUniqueness`: the uniqueness constraints that bundle's versions declare, by version
    /// and entity (`CoreDataImporter.uniquenessConstraints(inBundle:)`); they are in the version
    /// hash, so a version the bundle has keeps them (`keyConstraint`).
    public static func bundle(
        _ versions: [Schema], name: String, folderNames: [Int: String] = [:], keptUniqueness: [Int: [String: [[String]]]] = [:]
    ) -> [(path: String, contents: String)] {
        let folderNames = usableFolderNames(folderNames, versions: versions, bundle: name)
        var files: [(String, String)] = []
        let modifiers = VersionHashModifiers.modifiers(versions)
        let identifiers = RenamingIdentifiers.chain(versions).identifiers
        for (schema, identifiers) in zip(versions, identifiers) {
            files.append(
                (
                    "\(versionName(schema, bundle: name, folderNames: folderNames)).xcdatamodel/contents",
                    model(schema, hashModifier: modifiers[schema.version], identifiers: identifiers, keptUniqueness: keptUniqueness[schema.version])
                ))
        }
        if let current = versions.last {
            files.append((".xccurrentversion", currentVersionPlist("\(versionName(current, bundle: name, folderNames: folderNames)).xcdatamodel")))
        }
        return files
    }

    /// As Xcode names versions: `Shop` for version 1, the model a bundle starts with, then
    /// `Shop 2`, `Shop 3` (ordered by name, numbers compared as numbers); a name in
    /// `folderNames` where the bundle already has one.
    public static func versionName(_ schema: Schema, bundle: String, folderNames: [Int: String] = [:]) -> String {
        folderNames[schema.version] ?? (schema.version == 1 ? bundle : "\(bundle) \(schema.version)")
    }

    /// The version each model folder of an existing bundle holds (its
    /// `userDefinedModelVersionIdentifier`), by version: empty when there is no bundle. Xcode's
    /// "Add Model Version" copies the identifier, so a version two folders claim is left out.
    public static func existingFolderNames(of bundle: String) -> [Int: String] {
        var claims: [Int: [String]] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: bundle)) ?? [] where entry.hasSuffix(".xcdatamodel") {
            guard let text = FileManager.default.contents(atPath: bundle + "/" + entry + "/contents").flatMap({ String(data: $0, encoding: .utf8) }),
                let start = text.range(of: "userDefinedModelVersionIdentifier=\""),
                let version = Int(text[start.upperBound...].prefix { $0 != "\"" })
            else { continue }
            claims[version, default: []].append(String(entry.dropLast(".xcdatamodel".count)))
        }
        return claims.compactMapValues { $0.count == 1 ? $0[0] : nil }
    }

    /// `folderNames` where every version still gets a folder of its own; none of them otherwise
    /// (a folder that holds another version than its name says), so no version overwrites another.
    public static func usableFolderNames(_ folderNames: [Int: String], versions: [Schema], bundle: String) -> [Int: String] {
        let names = versions.map { versionName($0, bundle: bundle, folderNames: folderNames) }
        return Set(names).count == names.count ? folderNames : [:]
    }

    static func currentVersionPlist(_ folder: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \t<key>_XCCurrentVersionName</key>
        \t<string>\(TextEscaping.xml(folder))</string>
        </dict>
        </plist>

        """
    }

    // MARK: - One version

    /// One version's `contents`, in the XML Xcode writes; `hashModifier` tells it apart from an
    /// earlier version that hashes the same (`VersionHashModifiers`, which `bundle` applies), and
    /// `identifiers` are the renaming identifiers the versions before it give it
    /// (`RenamingIdentifiers.chain`, which `bundle` applies; by default the schema's `renamedFrom`).
    /// `keptUniqueness`: the constraints the version already has in the bundle written over, by
    /// entity, nil for a version it does not have (`keyConstraint`).
    public static func model(
        _ schema: Schema, hashModifier: VersionHashModifiers.Modifier? = nil, identifiers: RenamingIdentifiers? = nil, keptUniqueness: [String: [[String]]]? = nil
    ) -> String {
        let identifiers = identifiers ?? RenamingIdentifiers(schema)
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
        out +=
            element(
                "model",
                [
                    ("type", "com.apple.IDECoreDataModeler.DataModel"), ("documentVersion", "1.0"), ("minimumToolsVersion", "Automatic"), ("sourceLanguage", "Swift"),
                    ("userDefinedModelVersionIdentifier", String(schema.version)),
                ], close: false) + "\n"
        let carrier = schema.entities.first?.name
        for entity in xcodeOrder(schema.entities, by: \.name) {
            out += self.entity(
                entity, in: schema, carriesSchema: entity.name == carrier, hashModifier: hashModifier?.entity == entity.name ? hashModifier : nil, identifiers: identifiers,
                constrainsKey: keyConstraint(entity, kept: keptUniqueness))
        }
        for valueType in xcodeOrder(schema.values, by: \.name) {
            out += "    <composite name=\"\(TextEscaping.xml(valueType.name))\">\n"
            for field in valueType.fields {
                out += self.attribute(ExportedAttribute(field), in: schema, indent: "        ")
            }
            out += "    </composite>\n"
        }
        out += "</model>\n"
        return out
    }

    /// Xcode saves entities, composites and each kind of property sorted by name, ignoring case
    /// (`following` before `followRequested`).
    static func xcodeOrder<T>(_ items: [T], by name: (T) -> String) -> [T] {
        items.sorted { a, b in
            let (left, right) = (name(a), name(b))
            let (foldedLeft, foldedRight) = (left.lowercased(), right.lowercased())
            return foldedLeft != foldedRight ? foldedLeft < foldedRight : left < right
        }
    }

    /// Whether an entity's one-attribute primary key is a uniqueness constraint in the model, as
    /// `@Attribute(.unique)` makes it in SwiftData: in a version the bundle written over does not
    /// have yet, always; in one it has, only where it already is, since the constraints are in the
    /// version hash and a changed hash would stop stores of that version from opening (exports
    /// before this one did not write it). False for keys of several members, which stay user info.
    public static func keyConstraint(_ entity: Entity, kept: [String: [[String]]]?) -> Bool {
        guard case .members(let members) = entity.primaryKey, members.count == 1, let key = entity.attribute(named: members[0]) else { return false }
        guard let kept else { return true }
        return kept[entity.name]?.contains([key.coreData?.attributes["name"] ?? key.name]) ?? false
    }

    /// The uniqueness constraints an entity's model declares, in the schema's member names:
    /// unique attributes, the key where `constrainsKey`, and unique lists of attributes.
    public static func uniquenessConstraints(_ entity: Entity, constrainsKey: Bool) -> [[String]] {
        var uniques = entity.attributes.filter { $0.isUnique || ($0.isPrimaryKey && entity.primaryKeyColumns.count == 1) }.map { [$0.name] }
        if constrainsKey, case .members(let members) = entity.primaryKey, !uniques.contains(members) { uniques.append(members) }
        // Uniqueness constraints are part of the entity's version hash (Apple's
        // `uniquenessConstraints`): a declared key of several members is user info only, as
        // earlier exports wrote it; lists that name a relationship travel as text.
        return uniques + entity.uniques.filter { members in !members.contains { entity.relationship(named: $0) != nil } }
    }

    static func entity(
        _ entity: Entity, in schema: Schema, carriesSchema: Bool, hashModifier: VersionHashModifiers.Modifier?, identifiers: RenamingIdentifiers, constrainsKey: Bool
    ) -> String {
        // Classes are generated by Xcode ("Class Definition"), as for a new entity; SwiftData
        // models come from `schemagen generate --target swiftdata` instead.
        var attributes: [(String, String)] = [("name", entity.name), ("representedClassName", entity.name)]
        if let identifier = identifiers.entity(entity.name) { attributes.append(("elementID", identifier)) }
        attributes += [("syncable", "YES"), ("codeGenerationType", "class")]
        applying(entity.coreData, to: &attributes)
        var out = "    " + element("entity", attributes, close: false) + "\n"
        // Members under the names the model gives them (`coreData: {name: id}`).
        func modelName(_ member: String) -> String { entity.attribute(named: member)?.coreData?.attributes["name"] ?? member }
        // Sorted as Xcode sorts them: by the names the model gives them.
        let attributeOrder = xcodeOrder(entity.attributes) { $0.coreData?.attributes["name"] ?? $0.name }
        let relationshipOrder = xcodeOrder(entity.relationships) { $0.coreData?.attributes["name"] ?? $0.name }
        for attribute in attributeOrder {
            var exported = ExportedAttribute(attribute)
            exported.renamingIdentifier = identifiers.member(attribute.name, of: entity.name)
            if hashModifier?.attribute == attribute.name { exported.versionHashModifier = hashModifier?.value }
            out += self.attribute(exported, in: schema, indent: "        ")
        }
        for relationship in relationshipOrder {
            out += self.relationship(relationship, of: entity, in: schema, identifier: identifiers.member(relationship.name, of: entity.name))
        }
        var info: [(String, String)] = []
        let members = entity.attributes.map(\.name) + entity.relationships.map(\.name)
        let saved = attributeOrder.map(\.name) + relationshipOrder.map(\.name)
        if members != saved { info.append((CoreDataUserInfo.order, members.joined(separator: ", "))) }
        if entity.tableName != Naming.defaultName(of: entity.name) { info.append((CoreDataUserInfo.table, entity.tableName)) }
        if let doc = entity.doc { info.append((CoreDataUserInfo.doc, doc)) }
        if case .members(let members) = entity.primaryKey { info.append((CoreDataUserInfo.primaryKey, members.joined(separator: ", "))) }
        // Core Data constrains and indexes attributes; lists that name a relationship travel as text.
        func namesRelationship(_ members: [String]) -> Bool { members.contains { entity.relationship(named: $0) != nil } }
        let uniques = uniquenessConstraints(entity, constrainsKey: constrainsKey)
        let relationshipUniques = entity.uniques.filter(namesRelationship)
        if !relationshipUniques.isEmpty { info.append((CoreDataUserInfo.uniques, relationshipUniques.map { $0.joined(separator: ", ") }.joined(separator: "; "))) }
        let relationshipIndexes = entity.indexes.filter(namesRelationship)
        if !relationshipIndexes.isEmpty { info.append((CoreDataUserInfo.indexes, relationshipIndexes.map { $0.joined(separator: ", ") }.joined(separator: "; "))) }
        if carriesSchema { info += schemaInfo(schema) }
        if !uniques.isEmpty {
            out += "        <uniquenessConstraints>\n"
            for members in uniques {
                out += "            <uniquenessConstraint>\n"
                for member in members { out += "                <constraint value=\"\(TextEscaping.xml(modelName(member)))\"/>\n" }
                out += "            </uniquenessConstraint>\n"
            }
            out += "        </uniquenessConstraints>\n"
        }
        for members in entity.indexes where !namesRelationship(members) {
            out += "        <fetchIndex name=\"\(TextEscaping.xml("by" + members.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + "Index"))\">\n"
            for member in members { out += "            <fetchIndexElement property=\"\(TextEscaping.xml(modelName(member)))\" type=\"Binary\" order=\"ascending\"/>\n" }
            out += "        </fetchIndex>\n"
        }
        out += userInfo(info + userInfoEntries(entity.coreData), indent: "        ")
        out += "    </entity>\n"
        return out
    }

    /// The schema's own settings, and its enums (Core Data has neither), as JSON or text.
    static func schemaInfo(_ schema: Schema) -> [(String, String)] {
        var info: [(String, String)] = [(CoreDataUserInfo.schemaVersion, String(schema.version))]
        let entities = schema.entities.map(\.name), values = schema.values.map(\.name)
        if entities != xcodeOrder(entities, by: { $0 }) { info.append((CoreDataUserInfo.schemaEntities, entities.joined(separator: ", "))) }
        if values != xcodeOrder(values, by: { $0 }) { info.append((CoreDataUserInfo.schemaValues, values.joined(separator: ", "))) }
        // Enums travel as user info entries, which are read back sorted by key.
        let enums = schema.enums.map(\.name)
        if enums != enums.sorted() { info.append((CoreDataUserInfo.schemaEnums, enums.joined(separator: ", "))) }
        if let doc = schema.doc { info.append((CoreDataUserInfo.schemaDoc, doc)) }
        if let dialects = schema.dialects { info.append((CoreDataUserInfo.schemaDialects, dialects.map(\.rawValue).joined(separator: ", "))) }
        if !schema.recordsHistory {
            info.append((CoreDataUserInfo.schemaHistory, "false"))
        } else if !schema.recordsInsertValues {
            info.append((CoreDataUserInfo.schemaHistory, "{insertValues: false}"))
        }
        if let online = schema.online { info.append((CoreDataUserInfo.schemaOnline, online ? "true" : "false")) }
        if schema.cloudKit { info.append((CoreDataUserInfo.schemaCloudKit, "true")) }
        if let sync = schema.sync { info.append((CoreDataUserInfo.schemaSync, sync.yamlText)) }
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

    static func attribute(_ attribute: ExportedAttribute, in schema: Schema, indent: String) -> String {
        let type = CoreDataType.of(attribute.type, in: schema)
        var attributes: [(String, String)] = [("name", attribute.name)]
        if attribute.isOptional { attributes.append(("optional", "YES")) }
        if attribute.isTransient { attributes.append(("transient", "YES")) }
        attributes.append(("attributeType", type.coreData))
        if let composite = type.composite { attributes.append(("composite", composite)) }
        if type.coreData == "Transformable" {
            // Xcode's code generation types the property by the class name.
            attributes.append(("valueTransformerName", "NSSecureUnarchiveFromData"))
            attributes.append(("customClassName", attribute.type.description))
        }
        if let value = attribute.defaultValue, let coreData = coreDataDefault(value, type: attribute.type, in: schema) {
            attributes.append(coreData)
        } else if let placeholder = cloudKitPlaceholder(attribute, in: schema) {
            attributes.append(placeholder)
        }
        if ["Integer 16", "Integer 32", "Integer 64", "Double", "Float", "Boolean"].contains(type.coreData) { attributes.append(("usesScalarValueType", "YES")) }
        if attribute.usesExternalStorage { attributes.append(("allowsExternalBinaryDataStorage", "YES")) }
        if attribute.preservesValueOnDeletion { attributes.append(("preservesValueInHistoryOnDeletion", "YES")) }
        if attribute.isIndexed && !attribute.isUnique { attributes.append(("indexed", "YES")) }
        if attribute.isSearchable { attributes.append(("spotlightIndexingEnabled", "YES")) }
        if attribute.isEncrypted { attributes.append(("allowsCloudEncryption", "YES")) }
        if let identifier = attribute.renamingIdentifier { attributes.append(("elementID", identifier)) }
        var info: [(String, String)] = []
        if let modifier = attribute.versionHashModifier {
            attributes.append(("versionHashModifier", modifier))
            info.append((CoreDataUserInfo.derivedHashModifier, "YES"))
        }
        if type.readsBackAs != attribute.type.description { info.append((CoreDataUserInfo.type, attribute.type.description)) }
        // What Core Data cannot say of the attribute, as the schema's options table spells it.
        for option in AttributeOption.coreDataUserInfoOrder {
            if let key = option.coreDataUserInfoKey, let text = option.coreDataUserInfo(of: attribute.attribute) { info.append((key, text)) }
        }
        if let settings = attribute.coreData {
            // A Core Data name of its own: the schema's travels in user info.
            if let name = settings.attributes["name"], name != attribute.name { info.append((CoreDataUserInfo.schemaName, attribute.name)) }
            applying(settings, to: &attributes)
            info += userInfoEntries(settings)
        }
        guard !info.isEmpty else { return indent + element("attribute", attributes) + "\n" }
        return indent + element("attribute", attributes, close: false) + "\n" + userInfo(info, indent: indent + "    ") + indent + "</attribute>\n"
    }

    /// CloudKit refuses a model whose required attribute has no default, and a default computed
    /// when an object is made (`now`, `uuid`) has no Core Data spelling: a `cloudKit: true`
    /// schema's model holds a fixed one instead, as SwiftData's own model holds the value its
    /// initializer gave once (`= .now`). The app sets the real value when it makes an object
    /// (export warns: `CoreDataLightweightCheck`).
    static func cloudKitPlaceholder(_ attribute: ExportedAttribute, in schema: Schema) -> (String, String)? {
        guard schema.cloudKit, !attribute.isOptional, !attribute.isTransient else { return nil }
        switch attribute.defaultValue {
        case .now: return ("defaultDateTimeInterval", "0")
        case .generatedUUID: return ("defaultValueString", "00000000-0000-0000-0000-000000000000")
        default: return nil
        }
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

    static func relationship(_ relationship: Relationship, of entity: Entity, in schema: Schema, identifier: String?) -> String {
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
        if let identifier { attributes.append(("elementID", identifier)) }
        var info: [(String, String)] = []
        if relationship.foreignKeyColumns.count == 1, let target = schema.entity(named: relationship.target),
            relationship.foreignKeyColumns != Naming.foreignKeyColumns(of: relationship.name, targetKey: target.primaryKeyColumns)
        {
            info.append((CoreDataUserInfo.column, relationship.foreignKeyColumns[0]))
        }
        if let doc = relationship.doc { info.append((CoreDataUserInfo.doc, doc)) }
        applying(relationship.coreData, to: &attributes)
        info += userInfoEntries(relationship.coreData)
        let indent = "        "
        guard !info.isEmpty else { return indent + element("relationship", attributes) + "\n" }
        return indent + element("relationship", attributes, close: false) + "\n" + userInfo(info, indent: indent + "    ") + indent + "</relationship>\n"
    }

    // MARK: - Written as given (`coreData:`)

    /// Model attributes from `coreData:` over the derived ones: a derived one keeps its place
    /// with the given value, others follow.
    static func applying(_ settings: CoreDataSettings?, to attributes: inout [(String, String)]) {
        guard let settings else { return }
        for (key, value) in settings.attributes.sorted(by: { $0.key < $1.key }) {
            if let at = attributes.firstIndex(where: { $0.0 == key }) {
                attributes[at].1 = value
            } else if key == "versionHashModifier", let syncable = attributes.firstIndex(where: { $0.0 == "syncable" }) {
                // Where Xcode writes it on an entity: before `syncable`.
                attributes.insert((key, value), at: syncable)
            } else {
                attributes.append((key, value))
            }
        }
        // An empty code generation type is Manual/None: Xcode writes no attribute. Nor does it
        // write `optional="NO"`, the default (a required to-many relationship).
        attributes.removeAll { ($0.0 == "codeGenerationType" && $0.1.isEmpty) || ($0.0 == "optional" && $0.1 == "NO") }
        // A given Transformable keeps only the transformer and class the model gave, none derived.
        if settings.attributes["attributeType"] == "Transformable" {
            attributes.removeAll { ["customClassName", "valueTransformerName"].contains($0.0) && settings.attributes[$0.0] == nil }
        }
    }

    static func userInfoEntries(_ settings: CoreDataSettings?) -> [(String, String)] {
        (settings?.userInfo ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    // MARK: - Text

    static func element(_ name: String, _ attributes: [(String, String)], close: Bool = true) -> String {
        "<\(name)" + attributes.map { " \($0)=\"\(TextEscaping.xml($1))\"" }.joined() + (close ? "/>" : ">")
    }

    static func userInfo(_ entries: [(String, String)], indent: String) -> String {
        guard !entries.isEmpty else { return "" }
        var out = indent + "<userInfo>\n"
        for (key, value) in entries { out += indent + "    " + element("entry", [("key", key), ("value", value)]) + "\n" }
        return out + indent + "</userInfo>\n"
    }

    static func json(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// What the exporter writes of an entity's attribute or a value type's field: the attribute,
/// with what only the export knows of it.
@dynamicMemberLookup
struct ExportedAttribute {
    var attribute: Attribute
    /// `elementID`: the name of this attribute's first version (`RenamingIdentifiers`).
    var renamingIdentifier: String?
    var versionHashModifier: String?

    init(_ attribute: Attribute) {
        self.attribute = attribute
        renamingIdentifier = attribute.renamedFrom
    }

    /// A value type's field, as an attribute with no options but its own.
    init(_ field: ValueType.Field) {
        var attribute = Attribute(name: field.name, type: field.type, isOptional: field.isOptional)
        attribute.defaultValue = field.defaultValue
        attribute.jsonKey = field.jsonKey
        attribute.doc = field.doc
        self.init(attribute)
        renamingIdentifier = nil
    }

    subscript<Value>(dynamicMember path: KeyPath<Attribute, Value>) -> Value { attribute[keyPath: path] }
}
