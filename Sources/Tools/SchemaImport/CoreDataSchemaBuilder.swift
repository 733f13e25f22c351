import Foundation
import SchemaKit

extension CoreDataImporter {
    /// Turns one parsed model version into a schema: types, options, relationships, keys and
    /// indexes; entity inheritance flattened where it is unambiguous; renames against the
    /// previous version from renaming identifiers.
    struct SchemaBuilder {
        let model: ParsedModel
        let previous: ParsedModel?
        var findings: [ImportFinding] = []

        /// Entities that some entity names as its parent.
        let parents: Set<String>

        /// The mapping models beside the bundle (`Delta3ToDelta4.xcmappingmodel`), for the
        /// warnings of steps Core Data migrated with one.
        var mappingModels: [String] = []
        /// This version's and the previous version's names (`Delta 4`, `Delta 3`).
        var versionNames: (current: String, previous: String?) = ("", nil)

        init(model: ParsedModel, previous: ParsedModel?) {
            self.model = model
            self.previous = previous
            findings = model.findings
            parents = Set(model.entities.compactMap(\.parent))
        }

        func at(_ element: XMLTree.Element) -> String { "\(model.place):\(element.line):\(element.column)" }
        mutating func warn(_ element: XMLTree.Element, _ message: String) { findings.append(ImportFinding(.warning, at: at(element), message)) }
        mutating func note(_ element: XMLTree.Element, _ message: String) { findings.append(ImportFinding(.note, at: at(element), message)) }

        static let knownEntityAttributes: Set<String> = [
            "name", "representedClassName", "parentEntity", "isAbstract", "syncable", "codeGenerationType", "elementID", "renamingIdentifier", "versionHashModifier", "customClassName", "className",
        ]
        static let knownAttributeAttributes: Set<String> = [
            "name", "optional", "attributeType", "composite", "defaultValueString", "defaultDateTimeInterval", "usesScalarValueType", "transient", "allowsExternalBinaryDataStorage",
            "preservesValueInHistoryOnDeletion", "indexed", "spotlightIndexingEnabled", "renamingIdentifier", "elementID", "syncable", "valueTransformerName", "customClassName", "versionHashModifier",
            "attributeValueClassName", "minValueString", "maxValueString", "regularExpressionString", "derived", "derivationExpression", "storedInTruthFile", "allowsCloudEncryption",
        ]
        static let knownRelationshipAttributes: Set<String> = [
            "name", "optional", "toMany", "minCount", "maxCount", "deletionRule", "destinationEntity", "inverseName", "inverseEntity", "ordered", "syncable", "renamingIdentifier", "elementID",
            "transient", "versionHashModifier", "indexed",
        ]

        mutating func reportUnknownAttributes(_ element: XMLTree.Element, known: Set<String>, what: String) {
            for key in element.attributes.keys.sorted() where !known.contains(key) {
                warn(element, "unknown XML attribute '\(key)' on \(what) not imported")
            }
        }

        // MARK: - Inheritance

        /// The entity and its ancestors, root first; nil on a cycle or a missing parent (reported).
        mutating func lineage(of entity: ParsedEntity) -> [ParsedEntity]? {
            var chain = [entity]
            var seen: Set<String> = [entity.name]
            while let parent = chain[0].parent {
                guard let found = model.entity(named: parent) else {
                    warn(entity.element, "entity '\(entity.name)' names parent entity '\(parent)', which the model does not have; not imported")
                    return nil
                }
                guard seen.insert(parent).inserted else {
                    warn(entity.element, "entity '\(entity.name)' inherits from itself through '\(parent)'; not imported")
                    return nil
                }
                chain.insert(found, at: 0)
            }
            return chain
        }

        /// Concrete entities that descend from `name` (itself included when concrete).
        func concreteDescendants(of name: String) -> [String] {
            model.entities.filter { candidate in
                guard !candidate.isAbstract else { return false }
                var current: String? = candidate.name
                var steps = 0
                while let step = current, steps < 64 {
                    if step == name { return true }
                    current = model.entity(named: step)?.parent
                    steps += 1
                }
                return false
            }.map(\.name)
        }

        func hasSubentities(_ name: String) -> Bool { parents.contains(name) }

        /// Where a relationship to `name` can point once inheritance is flattened: the entity
        /// itself, or its only concrete descendant when it is abstract; nil when ambiguous.
        func flattenedTarget(_ name: String) -> String? {
            guard let entity = model.entity(named: name) else { return nil }
            if !entity.isAbstract { return name }
            let concrete = concreteDescendants(of: name)
            return concrete.count == 1 ? concrete[0] : nil
        }

        // MARK: - Building

        /// Composite types by name, as value types: their fields are attributes of the same
        /// kinds (a composite may nest another).
        mutating func valueTypes() -> [ImportedValueType] {
            model.composites.compactMap { composite in
                guard let name = composite["name"], Naming.isIdentifier(name) else {
                    warn(composite, "a composite type without an identifier name; not imported")
                    return nil
                }
                let fields = composite.children(named: "attribute").compactMap { element -> ImportedAttribute? in
                    guard var field = attribute(element, entity: name) else { return nil }
                    // Fields hold values only: what the schema language cannot say of a field is dropped, with a word.
                    if field.isUnique || field.isIndexed || field.isSearchable || field.isTransient || field.usesExternalStorage || field.preservesValueOnDeletion {
                        warn(element, "field '\(name).\(field.name)' of a composite type keeps only its type, optionality and default")
                    }
                    field.isUnique = false
                    field.isIndexed = false
                    field.isSearchable = false
                    field.isTransient = false
                    field.usesExternalStorage = false
                    field.preservesValueOnDeletion = false
                    return field
                }
                return ImportedValueType(name: name, fields: fields)
            }
        }

        mutating func build(name: String, version: Int) -> ImportedSchema {
            var schema = ImportedSchema(name: name, version: version)
            schema.values = valueTypes()
            // Whichever entity carries the schema's settings: Xcode re-sorts entities on save.
            let carrier = (model.entities.first { $0.userInfo[CoreDataUserInfo.schemaVersion] != nil } ?? model.entities.first)?.userInfo ?? [:]
            applySchemaInfo(carrier, to: &schema)
            if !schema.values.isEmpty {
                findings.append(
                    ImportFinding(
                        .note, at: model.place,
                        "composite attributes become value types (\(schema.values.map(\.name).joined(separator: ", "))), which the store keeps as JSON in one column; Core Data kept a column per field"
                    ))
            }
            for entity in model.entities {
                if let imported = entityTable(entity, version: version) { schema.entities.append(imported) }
            }
            if let order = carrier[CoreDataUserInfo.schemaEntities].map(Self.names) { schema.entities = Self.ordered(schema.entities, by: order, name: \.name) }
            if let order = carrier[CoreDataUserInfo.schemaValues].map(Self.names) { schema.values = Self.ordered(schema.values, by: order, name: \.name) }
            if let order = carrier[CoreDataUserInfo.schemaEnums].map(Self.names) { schema.enums = Self.ordered(schema.enums, by: order, name: \.name) }
            settleDeleteRules(&schema)
            return schema
        }

        /// A concrete entity as the schema's entity, its ancestors' members copied into it; nil
        /// for an abstract one (noted), which has no table of its own.
        mutating func entityTable(_ entity: ParsedEntity, version: Int) -> ImportedEntity? {
            reportUnknownAttributes(entity.element, known: Self.knownEntityAttributes, what: "entity '\(entity.name)'")
            if entity.isAbstract {
                let concrete = concreteDescendants(of: entity.name)
                note(
                    entity.element,
                    "abstract entity '\(entity.name)' has no table of its own; its members are copied into \(concrete.isEmpty ? "no entity (it has no concrete sub-entities)" : concrete.map { "'\($0)'" }.joined(separator: ", "))"
                )
                return nil
            }
            guard let chain = lineage(of: entity) else { return nil }
            if chain.count > 1 {
                note(
                    entity.element,
                    "entity '\(entity.name)' inherits from '\(chain[chain.count - 2].name)'; the schema has no inheritance, so its inherited members are copied into it and it gets a table of its own"
                )
            }
            if hasSubentities(entity.name) {
                warn(
                    entity.element,
                    "entity '\(entity.name)' has sub-entities; Core Data keeps them in one table, the schema gives each its own, so a relationship to '\(entity.name)' reaches only '\(entity.name)' objects"
                )
            }
            var imported = ImportedEntity(name: entity.name)
            for ancestor in chain { copyMembers(of: ancestor, into: &imported) }
            applyEntityInfo(entity.userInfo, to: &imported)
            imported.coreData = Self.carried(entity.element, info: entity.userInfo, keys: [])
            if let className = entity.element["representedClassName"], className != entity.name { imported.coreData.attributes["representedClassName"] = className }
            // No code generation (Manual/None): the app has its own classes, so export adds none.
            if entity.element["codeGenerationType"] == nil { imported.coreData.attributes["codeGenerationType"] = "" }
            if let order = entity.userInfo[CoreDataUserInfo.order].map(Self.names) {
                imported.attributes = Self.ordered(imported.attributes, by: order, name: \.name)
                imported.relationships = Self.ordered(imported.relationships, by: order, name: \.name)
            }
            resolveIdentifierAttribute(&imported, element: entity.element)
            resolveKeyPropertyNames(&imported, element: entity.element)
            Self.foldSingleColumnConstraints(&imported)
            renames(&imported, entity: entity)
            backfills(&imported, entity: entity, version: version)
            return imported
        }

        /// An entity's (or an ancestor's) attributes, relationships, uniqueness constraints and
        /// indexes, copied into the imported entity.
        mutating func copyMembers(of ancestor: ParsedEntity, into imported: inout ImportedEntity) {
            for element in ancestor.attributes {
                if let attribute = attribute(element, entity: imported.name) { imported.attributes.append(attribute) }
            }
            for element in ancestor.relationships {
                // A relationship declared on an ancestor moves down only from an abstract
                // ancestor with this one concrete descendant.
                if ancestor.name != imported.name, !(ancestor.isAbstract && concreteDescendants(of: ancestor.name) == [imported.name]) {
                    warn(
                        element,
                        "relationship '\(ancestor.name).\(element["name"] ?? "")' is inherited by several entities; the schema has no inheritance, so it is not imported for '\(imported.name)': declare it on each entity by hand"
                    )
                    continue
                }
                if let relationship = relationship(element, entity: imported.name) { imported.relationships.append(relationship) }
            }
            for unique in ancestor.uniques where !unique.members.isEmpty {
                imported.uniques.append(unique.members)
            }
            for index in ancestor.indexes where !imported.indexes.contains(index.members) {
                imported.indexes.append(index.members)
            }
        }

        /// A uniqueness constraint or index of one attribute becomes that attribute's `unique:`
        /// or `indexed:`; the primary key's own constraint goes.
        static func foldSingleColumnConstraints(_ imported: inout ImportedEntity) {
            imported.uniques = imported.uniques.filter { members in
                guard members != imported.primaryKey else { return false }
                if members.count == 1, let position = imported.attributes.firstIndex(where: { $0.name == members[0] }) {
                    imported.attributes[position].isUnique = true
                    return false
                }
                return true
            }
            imported.indexes = imported.indexes.filter { members in
                if members.count == 1, let position = imported.attributes.firstIndex(where: { $0.name == members[0] }) {
                    if !imported.attributes[position].isUnique { imported.attributes[position].isIndexed = true }
                    return false
                }
                return true
            }
        }

        /// What a model element says that the schema language cannot, for `coreData:`: the given
        /// XML attributes where present, a version hash modifier of the model's own (not one export
        /// derived), and user info entries that are not schemagen's.
        static func carried(_ element: XMLTree.Element, info: [String: String], keys: [String]) -> CoreDataSettings {
            var settings = CoreDataSettings()
            for key in keys { if let value = element[key] { settings.attributes[key] = value } }
            if let modifier = element["versionHashModifier"], info[CoreDataUserInfo.derivedHashModifier] == nil { settings.attributes["versionHashModifier"] = modifier }
            for (key, value) in info where !key.hasPrefix("schemagen.") { settings.userInfo[key] = value }
            return settings
        }

        /// `a, b, c` as names.
        static func names(_ list: String) -> [String] {
            list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }

        /// Items in the order a list names them; those it does not name after, as they were.
        static func ordered<T>(_ items: [T], by order: [String], name: (T) -> String) -> [T] {
            let rank = Dictionary(order.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
            return items.enumerated().sorted { a, b in
                let (left, right) = (rank[name(a.element)] ?? order.count + a.offset, rank[name(b.element)] ?? order.count + b.offset)
                return left != right ? left < right : a.offset < b.offset
            }.map(\.element)
        }

        /// An attribute named `id` would clash with the implicit key. A required one with a
        /// uniqueness constraint of its own becomes the key; any other is renamed.
        mutating func resolveIdentifierAttribute(_ entity: inout ImportedEntity, element: XMLTree.Element) {
            guard let position = entity.attributes.firstIndex(where: { $0.name == "id" }), !entity.primaryKey.contains("id") else { return }
            let attribute = entity.attributes[position]
            let keyable =
                !attribute.isOptional && !attribute.isTransient && !attribute.usesExternalStorage
                && ["String", "UUID", "Int", "Int16", "Int32", "Int64"].contains(attribute.type)
            if keyable, entity.uniques.contains(["id"]) {
                entity.primaryKey = ["id"]
                entity.uniques.removeAll { $0 == ["id"] }
                note(element, "'\(entity.name).id' is required and unique, so it becomes the primary key")
                return
            }
            let renamed = SwiftNames.unique("identifier", among: Set(entity.memberNames))
            entity.attributes[position].name = renamed
            entity.attributes[position].coreData.attributes["name"] = "id"
            entity.attributes[position].column = "id_value"
            entity.uniques = entity.uniques.map { $0.map { $0 == "id" ? renamed : $0 } }
            entity.indexes = entity.indexes.map { $0.map { $0 == "id" ? renamed : $0 } }
            warn(element, "'\(entity.name).id' is renamed '\(renamed)' (column id_value): every entity has the implicit key `id`; a required, unique `id` would become the key instead")
        }

        /// Generated code names a to-one relationship's key `<relationship>ID`; an attribute of
        /// that name (a legacy stored id, say) is renamed so both can exist.
        mutating func resolveKeyPropertyNames(_ entity: inout ImportedEntity, element: XMLTree.Element) {
            for relationship in entity.relationships where !relationship.isToMany {
                let keyName = Naming.keyProperty(of: relationship.name)
                guard let position = entity.attributes.firstIndex(where: { $0.name == keyName }) else { continue }
                let renamed = SwiftNames.unique(keyName + "Value", among: Set(entity.memberNames))
                entity.attributes[position].name = renamed
                entity.attributes[position].coreData.attributes["name"] = keyName
                entity.uniques = entity.uniques.map { $0.map { $0 == keyName ? renamed : $0 } }
                entity.indexes = entity.indexes.map { $0.map { $0 == keyName ? renamed : $0 } }
                warn(element, "'\(entity.name).\(keyName)' is renamed '\(renamed)': generated code names the key of relationship '\(relationship.name)' `\(keyName)`")
            }
        }

        // MARK: - What schemagen exported in user info

        /// The schema's own settings and enums, which `export coredata` puts on the schema's
        /// first entity (wherever Xcode's sorting puts it in the file).
        mutating func applySchemaInfo(_ info: [String: String], to schema: inout ImportedSchema) {
            if let version = info[CoreDataUserInfo.schemaVersion].flatMap({ Int($0) }), version > 0 { schema.version = version }
            schema.doc = info[CoreDataUserInfo.schemaDoc]
            schema.dialects = info[CoreDataUserInfo.schemaDialects].map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            schema.history = info[CoreDataUserInfo.schemaHistory]
            schema.online = info[CoreDataUserInfo.schemaOnline].map { $0 == "true" }
            schema.cloudKit = info[CoreDataUserInfo.schemaCloudKit] == "true"
            schema.sync = info[CoreDataUserInfo.schemaSync]
            for (key, text) in info.sorted(by: { $0.key < $1.key }) {
                if key.hasPrefix(CoreDataUserInfo.enumPrefix) {
                    let name = String(key.dropFirst(CoreDataUserInfo.enumPrefix.count))
                    guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
                        let cases = object["cases"] as? [[String]], cases.allSatisfy({ $0.count == 2 })
                    else {
                        findings.append(ImportFinding(.warning, at: model.place, "the enum '\(name)' in user info is not the JSON schemagen writes; not imported"))
                        continue
                    }
                    var imported = ImportedEnum(name: name, cases: cases.map { ($0[0], $0[1]) })
                    imported.rawType = object["type"] as? String == "Int" ? "Int" : nil
                    imported.doc = object["doc"] as? String
                    schema.enums.append(imported)
                } else if key.hasPrefix(CoreDataUserInfo.valueDocPrefix) {
                    let name = String(key.dropFirst(CoreDataUserInfo.valueDocPrefix.count))
                    if let index = schema.values.firstIndex(where: { $0.name == name }) { schema.values[index].doc = text }
                }
            }
        }

        /// An entity's table, doc, key, and constraints and indexes over relationships.
        func applyEntityInfo(_ info: [String: String], to entity: inout ImportedEntity) {
            func lists(_ text: String) -> [[String]] {
                text.split(separator: ";").map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            }
            entity.table = info[CoreDataUserInfo.table]
            entity.doc = info[CoreDataUserInfo.doc]
            if let key = info[CoreDataUserInfo.primaryKey] { entity.primaryKey = lists(key).first ?? [] }
            if let uniques = info[CoreDataUserInfo.uniques] { entity.uniques += lists(uniques) }
            if let indexes = info[CoreDataUserInfo.indexes] { entity.indexes += lists(indexes) }
        }

        // MARK: - Attributes

        /// A member's name and how findings name it (`attribute 'Book.title'`), after reporting
        /// XML attributes nobody knows; nil, reported, when the name is not an identifier.
        mutating func member(_ element: XMLTree.Element, kind: String, entity: String, known: Set<String>) -> (name: String, what: String)? {
            let name = element["name"] ?? ""
            let what = "\(kind) '\(entity).\(name)'"
            reportUnknownAttributes(element, known: known, what: what)
            guard Naming.isIdentifier(name) else {
                warn(element, "\(what) has a name that is not an identifier; not imported")
                return nil
            }
            return (name, what)
        }

        static func schemaType(_ coreDataType: String) -> String? {
            switch coreDataType {
            case "Integer 16": "Int16"
            case "Integer 32": "Int32"
            case "Integer 64": "Int64"
            case "Double": "Double"
            case "Float": "Float"
            case "Decimal": "Decimal"
            case "String": "String"
            case "Boolean": "Bool"
            case "Date": "Date"
            case "Binary": "Data"
            case "UUID": "UUID"
            case "URI": "URL"
            case "Transformable": "Data"
            default: nil
            }
        }

        mutating func attribute(_ element: XMLTree.Element, entity: String) -> ImportedAttribute? {
            guard let (name, what) = member(element, kind: "attribute", entity: entity, known: Self.knownAttributeAttributes) else { return nil }
            let coreDataType = element["attributeType"] ?? "Undefined"
            let composite = coreDataType == "Composite" ? element["composite"].flatMap { name in model.composites.contains { $0["name"] == name } ? name : nil } : nil
            let info = CoreDataImporter.userInfo(of: element)
            // The exact type schemagen exported (an enum, an array, Int) over what Core Data stores.
            guard let type = info[CoreDataUserInfo.type] ?? composite ?? Self.schemaType(coreDataType) else {
                warn(element, "\(what) of type '\(coreDataType)' not imported: the schema language has no such type")
                return nil
            }
            if coreDataType == "Transformable", info[CoreDataUserInfo.type] == nil {
                let transformer = element["valueTransformerName"].map { " through \($0)" } ?? ""
                let custom = element["customClassName"].map { " (\($0))" } ?? ""
                warn(element, "\(what) is Transformable\(custom), stored\(transformer) as archived bytes; imported as Data, so decode it yourself")
            }
            var attribute = ImportedAttribute(name: name, type: type, isOptional: element.flag("optional"))
            readFlags(element, into: &attribute, info: info, what: what)
            // What export carried in user info, as the schema wrote it: the parser checks it
            // when the written schema is read.
            for option in AttributeOption.coreDataUserInfoOrder {
                guard let key = option.coreDataUserInfoKey, let text = info[key] else { continue }
                attribute.options[option] = option.documentValue(fromCoreDataUserInfo: text)
            }
            if attribute.defaultValue == nil { attribute.defaultValue = defaultValue(element, type: type, coreDataType: coreDataType, what: what) }
            attribute.coreData = Self.carried(
                element, info: info, keys: coreDataType == "Transformable" && info[CoreDataUserInfo.type] == nil ? ["attributeType", "valueTransformerName", "customClassName"] : [])
            if let schemaName = info[CoreDataUserInfo.schemaName], Naming.isIdentifier(schemaName) {
                // Exported under a Core Data name of its own (`coreData: {name: id}`).
                attribute.coreData.attributes["name"] = attribute.name
                attribute.name = schemaName
            }
            settleFlags(element, &attribute, what: what)
            return attribute
        }

        /// The attribute's Core Data flags, with a warning for each the schema cannot say.
        mutating func readFlags(_ element: XMLTree.Element, into attribute: inout ImportedAttribute, info: [String: String], what: String) {
            let type = attribute.type
            attribute.isTransient = element.flag("transient")
            if element.flag("allowsExternalBinaryDataStorage") {
                if type == "Data" || type == "String" {
                    attribute.usesExternalStorage = true
                } else {
                    warn(element, "\(what) allows external storage, which the schema language has for Data and String only; not carried over")
                }
            }
            attribute.preservesValueOnDeletion = element.flag("preservesValueInHistoryOnDeletion")
            attribute.isIndexed = element.flag("indexed")
            if element.flag("spotlightIndexingEnabled") {
                if type == "String" || info[CoreDataUserInfo.type] != nil {
                    attribute.isSearchable = true
                } else {
                    warn(element, "\(what) is indexed in Spotlight, which the schema has as `searchable` for String only; not carried over")
                }
            }
            if element.flag("derived") {
                warn(element, "\(what) is derived (\(element["derivationExpression"] ?? "an expression")); imported as an ordinary attribute, so compute its value yourself")
            }
            for (key, label) in [("minValueString", "minimum"), ("maxValueString", "maximum"), ("regularExpressionString", "pattern")] {
                if let value = element[key] { warn(element, "\(what) has a validation \(label) (\(value)), which the schema language does not express") }
            }
            if info[CoreDataUserInfo.encrypt] == nil, element.flag("allowsCloudEncryption") {
                note(element, "\(what) is encrypted in CloudKit; the schema's `encrypt` option encrypts at rest in the store, which is not set for you")
            }
            if element.flag("storedInTruthFile") {
                warn(element, "\(what) is stored in Core Data's truth file; imported as an ordinary attribute")
            }
        }

        /// Flags that contradict each other, dropped with a warning: a transient value is never
        /// stored, and an externally stored one is neither indexed nor kept in history.
        mutating func settleFlags(_ element: XMLTree.Element, _ attribute: inout ImportedAttribute, what: String) {
            if attribute.isTransient {
                // Flags that make no sense for a value never stored are errors in the schema.
                for flag in ["indexed", "allowsExternalBinaryDataStorage", "preservesValueInHistoryOnDeletion"] where element.flag(flag) {
                    warn(element, "\(what) is transient, so '\(flag)' has no effect; dropped")
                }
                attribute.isIndexed = false
                attribute.usesExternalStorage = false
                attribute.preservesValueOnDeletion = false
                if !attribute.isOptional, attribute.defaultValue == nil {
                    note(element, "\(what) is transient and required without a default; imported as optional, since a fresh model has no value for it")
                    attribute.isOptional = true
                }
            }
            if attribute.usesExternalStorage, attribute.preservesValueOnDeletion {
                warn(element, "\(what) keeps its value in history on deletion, but an externally stored value's file goes with the row; preserveValueOnDeletion dropped")
                attribute.preservesValueOnDeletion = false
            }
            if attribute.usesExternalStorage, attribute.isIndexed {
                warn(element, "\(what) is stored externally, so it cannot be indexed; indexed dropped")
                attribute.isIndexed = false
            }
        }

        mutating func defaultValue(_ element: XMLTree.Element, type: String, coreDataType: String, what: String) -> ImportedDefault? {
            if type == "Date", let interval = element["defaultDateTimeInterval"] {
                guard let seconds = Double(interval), seconds.isFinite else {
                    warn(element, "\(what) has a default date interval '\(interval)' that is not a number; not imported")
                    return nil
                }
                // Core Data counts from 2001-01-01T00:00:00Z, Foundation's reference date.
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = seconds.rounded() == seconds ? [.withInternetDateTime] : [.withInternetDateTime, .withFractionalSeconds]
                return .text(formatter.string(from: Date(timeIntervalSinceReferenceDate: seconds)))
            }
            guard let text = element["defaultValueString"] else { return nil }
            func unsupported(_ why: String) -> ImportedDefault? {
                warn(element, "\(what) has the default '\(text)', \(why); not imported")
                return nil
            }
            switch type {
            case "Int16", "Int32", "Int64":
                // Older models sometimes spell whole defaults as `0.0`.
                guard let number = Int64(text) ?? Double(text).flatMap({ $0.rounded() == $0 ? Int64(exactly: $0) : nil }) else {
                    return unsupported("which is not a whole number")
                }
                return .plain(String(number))
            case "Double", "Float":
                guard let number = Double(text), number.isFinite else { return unsupported("which is not a number") }
                return .plain(text.contains(".") || text.lowercased().contains("e") ? text : text + ".0")
            case "Decimal":
                guard Double(text) != nil, Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) != nil else { return unsupported("which is not a decimal number") }
                return .plain(text)
            case "Bool":
                switch text.uppercased() {
                case "YES", "TRUE", "1": return .plain("true")
                case "NO", "FALSE", "0": return .plain("false")
                default: return unsupported("which is not YES or NO")
                }
            case "String":
                return .text(text)
            case "UUID":
                guard UUID(uuidString: text) != nil else { return unsupported("which is not a UUID") }
                return .text(text.lowercased())
            case "URL":
                guard let url = URL(string: text), url.scheme != nil else { return unsupported("which is not an absolute URL") }
                return .text(text)
            case "Date":
                return unsupported("but dates take defaultDateTimeInterval")
            default:
                return unsupported("but \(coreDataType) attributes take no default in the schema language")
            }
        }

        // MARK: - Relationships

        mutating func relationship(_ element: XMLTree.Element, entity: String) -> ImportedRelationship? {
            guard let (name, what) = member(element, kind: "relationship", entity: entity, known: Self.knownRelationshipAttributes) else { return nil }
            guard let destination = element["destinationEntity"], model.entity(named: destination) != nil else {
                warn(element, "\(what) points at '\(element["destinationEntity"] ?? "nothing")', which is not an entity of the model; not imported")
                return nil
            }
            guard let target = flattenedTarget(destination) else {
                warn(
                    element,
                    "\(what) points at abstract entity '\(destination)', whose objects are of several entities (\(concreteDescendants(of: destination).joined(separator: ", "))); the schema has no inheritance, so it is not imported: declare one relationship per entity by hand"
                )
                return nil
            }
            if element.flag("transient") {
                warn(element, "\(what) is transient; the schema's relationships are stored, so it is not imported")
                return nil
            }
            let toMany = element.flag("toMany")
            var relationship = ImportedRelationship(name: name, target: target, isToMany: toMany, isOptional: toMany || element.flag("optional"))
            if let inverse = element["inverseName"] {
                // The inverse must survive flattening too: declared on the target (or an ancestor
                // it moved down from) and pointing back here.
                let inverseEntity = element["inverseEntity"] ?? destination
                if flattenedTarget(inverseEntity) == target, declares(target, relationship: inverse) {
                    relationship.inverse = inverse
                } else {
                    warn(element, "\(what): its inverse '\(inverseEntity).\(inverse)' is not imported, so it is imported without an inverse")
                }
            }
            if toMany {
                if let min = element["minCount"].flatMap(Int.init), min > 0 { relationship.minCount = min }
                if let max = element["maxCount"].flatMap(Int.init), max > 0 { relationship.maxCount = max }
                if element.flag("ordered") {
                    warn(element, "\(what) is ordered; the schema's to-many relationships keep no order, so add an attribute for the position")
                }
            }
            switch element["deletionRule"] ?? "Nullify" {
            case "Cascade": relationship.deleteRule = .cascade
            case "Deny": relationship.deleteRule = .deny
            case "No Action": relationship.deleteRule = .noAction
            case "Nullify": relationship.deleteRule = .nullify
            case let other:
                warn(element, "\(what) has the deletion rule '\(other)', which is not Nullify, Cascade, Deny or No Action; imported as nullify")
            }
            if target != destination {
                note(element, "\(what) points at abstract entity '\(destination)'; it now points at '\(target)', its only concrete sub-entity")
            }
            if let renamed = renamedMember(element, entity: entity, isRelationship: true) { relationship.renamedFrom = renamed }
            let info = CoreDataImporter.userInfo(of: element)
            relationship.column = info[CoreDataUserInfo.column]
            relationship.doc = info[CoreDataUserInfo.doc]
            relationship.coreData = Self.carried(element, info: info, keys: ["ordered"])
            // A required to-many (no `optional`): the schema's to-many relationships are never nil.
            if toMany, !element.flag("optional") { relationship.coreData.attributes["optional"] = "NO" }
            return relationship
        }

        /// Whether `entity` (or an abstract ancestor that moves down to it) declares the relationship.
        func declares(_ entity: String, relationship: String) -> Bool {
            var current: String? = entity
            var steps = 0
            while let name = current, let found = model.entity(named: name), steps < 64 {
                if found.relationships.contains(where: { $0["name"] == relationship }) {
                    return name == entity || (found.isAbstract && concreteDescendants(of: name) == [entity])
                }
                current = found.parent
                steps += 1
            }
            return false
        }

        /// Nullify towards a required to-one would leave it empty, which Core Data refuses at save:
        /// the delete cannot go through unless the objects go too, which is what deny says.
        mutating func settleDeleteRules(_ schema: inout ImportedSchema) {
            let byName = Dictionary(schema.entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            for entityIndex in schema.entities.indices {
                for relationshipIndex in schema.entities[entityIndex].relationships.indices {
                    let relationship = schema.entities[entityIndex].relationships[relationshipIndex]
                    guard relationship.deleteRule == .nullify, let inverseName = relationship.inverse,
                        let inverse = byName[relationship.target]?.relationships.first(where: { $0.name == inverseName }),
                        !inverse.isToMany, !inverse.isOptional
                    else { continue }
                    schema.entities[entityIndex].relationships[relationshipIndex].deleteRule = .deny
                    // The exported model keeps Core Data's rule, which its version hash covers.
                    schema.entities[entityIndex].relationships[relationshipIndex].coreData.attributes["deletionRule"] = "Nullify"
                    let element = model.entity(named: schema.entities[entityIndex].name)?.element
                    findings.append(
                        ImportFinding(
                            .note, at: element.map(at) ?? model.place,
                            "'\(schema.entities[entityIndex].name).\(relationship.name)' nullifies '\(relationship.target).\(inverseName)', which is required, so Core Data refuses the save; imported as deny, which says so at the delete"
                        ))
                }
            }
        }

        // MARK: - Renames

        /// The renaming identifier, or the element ID Xcode writes in newer models.
        static func renamingIdentifier(_ element: XMLTree.Element) -> String? {
            element["renamingIdentifier"] ?? element["elementID"]
        }

        /// The entity in the previous version this one was, when it was named differently.
        func previousEntity(of entity: ParsedEntity) -> ParsedEntity? {
            guard let previous else { return nil }
            if let same = previous.entity(named: entity.name) { return same }
            guard let identifier = Self.renamingIdentifier(entity.element) else { return nil }
            return previous.entities.first { $0.name == identifier || Self.renamingIdentifier($0.element) == identifier }
        }

        func renamedMember(_ element: XMLTree.Element, entity: String, isRelationship: Bool) -> String? {
            guard let current = model.entity(named: entity), let before = previousEntity(of: current),
                let identifier = Self.renamingIdentifier(element), let name = element["name"]
            else { return nil }
            let members = isRelationship ? before.relationships : before.attributes
            guard !members.contains(where: { $0["name"] == name }),
                let old = members.first(where: { $0["name"] == identifier || Self.renamingIdentifier($0) == identifier })?["name"],
                old != name
            else { return nil }
            return old
        }

        /// An attribute this version makes required without a default, where the previous
        /// version had rows without a value for it (new, or optional before): Core Data needed a
        /// mapping model for that step. The schema gets a `backfill` of the type's zero value,
        /// which fills the existing rows without becoming a default, and a warning says so.
        mutating func backfills(_ imported: inout ImportedEntity, entity: ParsedEntity, version: Int) {
            guard previous != nil, let before = previousEntity(of: entity) else { return }
            for position in imported.attributes.indices {
                let attribute = imported.attributes[position]
                // One the bundle carries (`schemagen.backfill`, from `export coredata`) is the schema's own.
                guard !attribute.isOptional, !attribute.isTransient, attribute.defaultValue == nil, attribute.backfill == nil,
                    let element = entity.attributes.first(where: { $0["name"] == attribute.name })
                else { continue }
                let oldName = attribute.renamedFrom ?? attribute.name
                let old = before.attributes.first { $0["name"] == oldName }
                guard old == nil || old?.flag("optional") == true else { continue }
                guard let zero = Self.zeroValue(attribute.type) else {
                    warn(
                        element,
                        "version \(version) (\(versionNames.current)) makes '\(entity.name).\(attribute.name)' required without a default, and no backfill can be chosen for \(attribute.type); add 'backfill:' to it by hand\(mappingModelHint)"
                    )
                    continue
                }
                imported.attributes[position].backfill = zero
                let shown: String =
                    switch zero {
                    case .text(let text): "\"\(text)\""
                    case .plain(let text): text
                    }
                warn(
                    element,
                    "version \(version) (\(versionNames.current)) makes '\(entity.name).\(attribute.name)' required without a default, so the rows of version \(version - 1) need a value; imported with 'backfill: \(shown)', which fills them (and is no default for new ones)\(mappingModelHint); review it"
                )
            }
        }

        /// Names the mapping models that may say how Core Data filled such a step.
        var mappingModelHint: String {
            let squash = { (name: String) in name.replacingOccurrences(of: " ", with: "").lowercased() }
            let current = squash(versionNames.current), previous = versionNames.previous.map(squash)
            let matching = mappingModels.filter { name in
                let lower = squash(name)
                return lower.contains(current) && (previous.map(lower.contains) ?? true)
            }
            if !matching.isEmpty { return "; Core Data used the mapping model \(matching.joined(separator: ", ")) beside the bundle: take its value expression for this attribute" }
            if !mappingModels.isEmpty { return "; mapping models beside the bundle (\(mappingModels.joined(separator: ", "))) may say how Core Data filled it" }
            return "; no mapping model was found beside the bundle"
        }

        /// The value a required attribute of a type takes when nothing better is known.
        static func zeroValue(_ type: String) -> ImportedDefault? {
            switch type {
            case "String": .text("")
            case "Int", "Int8", "Int16", "Int32", "Int64", "Double", "Float", "Decimal": .plain("0")
            case "Bool": .plain("false")
            case "Date": .text("1970-01-01T00:00:00Z")
            case "UUID": .text("00000000-0000-0000-0000-000000000000")
            case "Data": .text("")
            default: nil
            }
        }

        mutating func renames(_ imported: inout ImportedEntity, entity: ParsedEntity) {
            guard previous != nil else { return }
            if let before = previousEntity(of: entity), before.name != entity.name {
                imported.renamedFrom = before.name
                note(entity.element, "entity '\(entity.name)' was '\(before.name)' in the previous version (renaming identifier); the migration renames its table")
            }
            for element in entity.attributes {
                guard let name = element["name"], let old = renamedMember(element, entity: entity.name, isRelationship: false),
                    let position = imported.attributes.firstIndex(where: { $0.name == name })
                else { continue }
                imported.attributes[position].renamedFrom = old
            }
        }
    }
}
