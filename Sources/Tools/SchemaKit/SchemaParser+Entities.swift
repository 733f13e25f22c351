import Diagnostics
import YAMLReader

#if canImport(Glibc)
import SQLDialects
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads entities with their attributes and relationships, and checks what one entity alone decides.
extension SchemaParser {
    static let entityKeys = ["attributes", "relationships", "indexes", "uniques", "primaryKey", "table", "renamedFrom", "doc", "coreData"]
    /// The schema language's one table of attribute options.
    static let attributeKeys = AttributeOption.allCases.map(\.key)
    static let relationshipKeys = RelationshipOption.allCases.map(\.key)

    /// Entities are read independently of each other, so a large schema's are read in slices on
    /// the machine's cores, each by a copy of this parser; their results join in document order.
    mutating func parseEntities(_ node: YAMLNode?) {
        let pairs = namedEntries(node, what: "entities")
        let slices = Self.slices(of: pairs.count)
        guard slices.count > 1 else {
            for pair in pairs { parseEntity(pair) }
            return
        }
        var reader = self
        reader.diagnostics = DiagnosticBag()
        reader.usedTypeNames = []
        let sliceReader = reader
        let results = slices.parallelMap { range in
            var parser = sliceReader
            for index in range { parser.parseEntity(pairs[index]) }
            return parser
        }
        for result in results {
            diagnostics.append(contentsOf: result.diagnostics.diagnostics)
            usedTypeNames.formUnion(result.usedTypeNames)
            entities += result.entities
            attributeNodes.merge(result.attributeNodes) { _, later in later }
            relationshipNodes.merge(result.relationshipNodes) { _, later in later }
        }
    }

    /// Below this many entities per slice, reading them on one core is faster than sharing out.
    static let entitiesPerSlice = 32
    static let coreCount = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    /// A few slices per core, not one: a thread that starts late or runs slower (a new thread
    /// faults in its memory first) then takes fewer of them, instead of holding up the rest.
    static var sliceLimit: Int { coreCount == 1 ? 1 : coreCount * 8 }

    /// `0..<count` cut into the slices that parallel reading and checking share out; one
    /// slice when sharing out would not pay.
    static func slices(of count: Int) -> [Range<Int>] {
        let sliceCount = max(1, min(sliceLimit, count / entitiesPerSlice))
        return (0..<sliceCount).map { slice in count * slice / sliceCount..<count * (slice + 1) / sliceCount }
    }

    private mutating func parseEntity(_ pair: YAMLPair) {
        let name = checkName(pair.key, kind: "entity", isType: true)
        let what = "entity '\(name)'"
        let keyed: Keyed
        if pair.value.isNull {
            keyed = Keyed(node: pair.value)
        } else {
            guard let full = self.keyed(pair.value, allowed: Self.entityKeys, what: what) else { return }
            keyed = full
        }
        var tableName = Naming.defaultName(of: name)
        if let table = self.name(keyed, "table", what: what) {
            tableName = table
        }
        if tableName.lowercased().hasPrefix(Naming.reservedTablePrefix) {
            error(.invalidValue, "table name '\(tableName)' of \(what) starts with 'sqlite_', which SQLite reserves for itself; choose another 'table'", at: keyed["table"] ?? pair.key)
        }

        // Sized up front: the parsed members are large, and regrowing copies them.
        let attributePairs = namedEntries(keyed["attributes"], what: "attributes of \(what)")
        var attributes: [Parsed<Attribute>] = []
        attributes.reserveCapacity(attributePairs.count)
        for attributePair in attributePairs {
            if let attribute = parseAttribute(attributePair, entity: name) { attributes.append(attribute) }
        }
        let relationshipPairs = namedEntries(keyed["relationships"], what: "relationships of \(what)")
        var relationships: [Parsed<Relationship>] = []
        relationships.reserveCapacity(relationshipPairs.count)
        for relationshipPair in relationshipPairs {
            if let relationship = parseRelationship(relationshipPair, entity: name) { relationships.append(relationship) }
        }
        // Only when nothing was written for them: a misspelt or malformed key was reported already.
        let wroteMembers = (pair.value.pairs ?? []).contains { ["attributes", "relationships"].contains($0.key.scalarText ?? "") }
        let allKeysKnown = (pair.value.pairs?.count ?? 0) == keyed.knownKeyCount
        if attributes.isEmpty, relationships.isEmpty, !wroteMembers, allKeysKnown {
            warning(.emptyEntity, "\(what) has no attributes and no relationships", at: pair.key)
        }

        var entity = Entity(
            name: name, tableName: tableName,
            renamedFrom: identifier(keyed, "renamedFrom", what: what),
            doc: text(keyed, "doc", what: what),
            attributes: attributes.map(\.model), relationships: relationships.map(\.model),
            indexes: [], uniques: [], primaryKey: .implicit, location: location(pair.key))
        entity.coreData = coreDataSettings(keyed, allowed: CoreDataSettings.entityKeys, what: what)
        if entity.renamedFrom == name {
            warning(.redundant, "\(what) is 'renamedFrom' its own name; remove 'renamedFrom'", at: keyed["renamedFrom"] ?? pair.key)
        }
        let members = Members(attributes: attributes, relationships: relationships)
        entity.primaryKey = resolvePrimaryKey(keyed, members: members, what: what)
        let primaryKeyMembers: [String] = if case .members(let list) = entity.primaryKey { list } else { [] }
        entity.uniques = memberLists(keyed["uniques"], option: "uniques", members: members, what: what)
        entity.indexes = memberLists(keyed["indexes"], option: "indexes", members: members, what: what)
        checkRedundantIndexes(entity: entity, primaryKey: primaryKeyMembers, keyed: keyed)

        attributeNodes[name] = attributes
        relationshipNodes[name] = relationships
        entities.append(Parsed(model: entity, nameNode: pair.key, options: keyed))
    }

    // MARK: - Attributes

    private mutating func parseAttribute(_ pair: YAMLPair, entity: String) -> Parsed<Attribute>? {
        let name = checkName(pair.key, kind: "attribute", isType: false)
        let what = Subject("attribute", name)
        guard let (options, typeNode) = shorthandOrOptions(pair.value, mainKey: "type", allowed: Self.attributeKeys, what: what) else { return nil }
        guard let typeNode else {
            error(.missingKey, "\(what) of entity '\(entity)' has no 'type'", at: pair.key)
            return nil
        }
        guard let (type, optionalFromType) = resolveType(typeNode, what: Subject("attribute", name, of: entity), allowEntities: true) else { return nil }
        let isOptional = optionality(options, fromType: optionalFromType, what: what)
        let encryptionMode = encryption(options, what: what)
        var attribute = Attribute(
            name: name, type: type, isOptional: isOptional, defaultValue: nil,
            isUnique: flag(options, "unique", what: what),
            isPrimaryKey: flag(options, "primaryKey", what: what),
            isTransient: flag(options, "transient", what: what),
            usesExternalStorage: flag(options, "externalStorage", what: what),
            isEncrypted: encryptionMode != nil,
            encryptsDeterministically: encryptionMode == .deterministic,
            preservesValueOnDeletion: flag(options, "preserveValueOnDeletion", what: what),
            isIndexed: flag(options, "indexed", what: what),
            isSearchable: flag(options, "searchable", what: what),
            renamedFrom: identifier(options, "renamedFrom", what: what),
            columnName: self.name(options, "column", what: what) ?? Naming.defaultName(of: name),
            jsonKey: self.name(options, "jsonKey", what: what) ?? name,
            doc: text(options, "doc", what: what),
            location: location(pair.key))
        if let defaultNode = options["default"] {
            attribute.defaultValue = checkDefault(defaultNode, type: type, isOptional: isOptional, what: what)
        }
        (attribute.precision, attribute.scale) = numericSize(options, type: type, what: what)
        attribute.isDateOnly = dateOnly(options, type: type, what: what)
        attribute.coreData = coreDataSettings(options, allowed: CoreDataSettings.attributeKeys, what: what)
        if attribute.isDateOnly, case .date(let text)? = attribute.defaultValue, !ISO8601Date.isCalendarDay(text) {
            error(
                .invalidDefault,
                "the default '\(text)' of \(what) has a time of day, but the attribute is 'dateOnly'; write the day alone, such as \(text.prefix(10)), or 'now' for the day of insertion",
                at: options["default"] ?? pair.key)
        }
        if let backfillNode = options["backfill"] { attribute.backfill = backfill(backfillNode, type: type, what: what) }
        if let text = self.text(options, "movedFrom", what: what) {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            if parts.count == 2, parts.allSatisfy(Naming.isIdentifier) {
                attribute.movedFromText = text
            } else {
                error(.invalidValue, "'movedFrom' in \(what) names the attribute its values come from as Entity.attribute (such as User.street), found '\(text)'", at: options["movedFrom"] ?? pair.key)
            }
        }
        let parsed = Parsed(model: attribute, nameNode: pair.key, options: options)
        checkAttributeOptions(parsed)
        return parsed
    }

    /// `precision` and `scale` of a Decimal: 1 to 1000 digits, of which 0 to `precision` after
    /// the point (PostgreSQL's limits for `numeric`).
    mutating func numericSize(_ options: Keyed, type: AttributeType, what: some CustomStringConvertible) -> (Int?, Int?) {
        guard options.has("precision") || options.has("scale") else { return (nil, nil) }
        guard case .scalar(.decimal) = type else {
            error(
                .conflictingOptions, "\(what) has type \(type), but 'precision' and 'scale' apply to Decimal only",
                at: options.keyNode(options.has("precision") ? "precision" : "scale") ?? options.node)
            return (nil, nil)
        }
        let precision = count(options, "precision", what: what)
        let scale = count(options, "scale", what: what)
        if let precision, !(1...1000).contains(precision) {
            error(.invalidValue, "'precision' in \(what) must be from 1 to 1000 digits, found \(precision)", at: options["precision"] ?? options.node)
            return (nil, nil)
        }
        guard let precision else {
            if options.has("scale"), !options.has("precision") {
                error(.missingKey, "\(what) has a 'scale' but no 'precision'; give both, such as precision: 12, scale: 2", at: options.keyNode("scale") ?? options.node)
            }
            return (nil, nil)
        }
        if let scale, scale > precision {
            error(.invalidValue, "'scale' in \(what) (\(scale)) cannot exceed its 'precision' (\(precision))", at: options["scale"] ?? options.node)
            return (precision, nil)
        }
        return (precision, scale)
    }

    /// `coreData: {attributeType: Transformable, userInfo: {attributeValueClassName: CheatType}}`:
    /// model attributes (those `allowed`) and user info entries, each text.
    mutating func coreDataSettings(_ keyed: Keyed, allowed: [String], what: some CustomStringConvertible) -> CoreDataSettings? {
        guard let node = keyed["coreData"] else { return nil }
        guard let pairs = node.pairs else {
            error(.wrongKind, "'coreData' in \(what) expects Core Data model attributes (\(allowed.joined(separator: ", "))) and 'userInfo', such as {versionHashModifier: v2}", at: node)
            return nil
        }
        var settings = CoreDataSettings()
        for pair in pairs {
            let key = pair.key.scalarText ?? ""
            if key == "userInfo" {
                guard let entries = pair.value.pairs else {
                    error(.wrongKind, "'userInfo' in the 'coreData' of \(what) expects keys and text values, such as {attributeValueClassName: CheatType}", at: pair.value)
                    continue
                }
                for entry in entries {
                    guard let entryKey = entry.key.scalarText, let value = entry.value.scalarText else {
                        error(.wrongKind, "a 'userInfo' entry in the 'coreData' of \(what) is a key and a text value", at: entry.value)
                        continue
                    }
                    settings.userInfo[entryKey] = value
                }
                continue
            }
            guard allowed.contains(key) else {
                error(
                    .unknownKey, "'coreData' in \(what) takes \((allowed + ["userInfo"]).joined(separator: ", ")); '\(key)' is not one\(Suggestion.hint(for: key, in: allowed + ["userInfo"]))",
                    at: pair.key)
                continue
            }
            guard let value = pair.value.scalarText else {
                error(.wrongKind, "'\(key)' in the 'coreData' of \(what) expects text, as the model file holds it", at: pair.value)
                continue
            }
            settings.attributes[key] = value
        }
        return settings.isEmpty ? nil : settings
    }

    /// `dateOnly: true`: a `Date` kept as its calendar day in UTC (PostgreSQL's `date`).
    mutating func dateOnly(_ options: Keyed, type: AttributeType, what: some CustomStringConvertible) -> Bool {
        guard flag(options, "dateOnly", what: what) else { return false }
        guard case .scalar(.date) = type else {
            error(.conflictingOptions, "\(what) has type \(type), but 'dateOnly' applies to Date only", at: options.keyNode("dateOnly") ?? options.node)
            return false
        }
        return true
    }

    /// `backfill: VALUE` (checked as a default is) or `backfill: {sqlite: EXPR, postgres: EXPR}`.
    mutating func backfill(_ node: YAMLNode, type: AttributeType, what: some CustomStringConvertible) -> Backfill? {
        guard let pairs = node.pairs else {
            guard !node.isNull else {
                error(.invalidDefault, "'backfill' of \(what) cannot be null: it fills rows that need a value", at: node)
                return nil
            }
            return checkDefault(node, type: type, isOptional: false, what: what).map(Backfill.value)
        }
        var expressions: [SQLDialectName: String] = [:]
        for pair in pairs {
            let key = pair.key.scalarText ?? ""
            guard let dialect = SQLDialectName(rawValue: key) else {
                error(.unknownKey, "'backfill' of \(what) maps dialects (\(SQLDialectName.list)) to SQL expressions; '\(key)' is not one", at: pair.key)
                continue
            }
            guard let expression = pair.value.stringValue, !expression.trimmingSpaces().isEmpty else {
                error(.wrongKind, "'backfill' of \(what) for \(key) expects an SQL expression as text", at: pair.value)
                continue
            }
            expressions[dialect] = expression
        }
        return expressions.isEmpty ? nil : .sql(expressions)
    }

    enum Encryption { case randomized, deterministic }

    /// `encrypt: true` (randomized), `encrypt: deterministic`, or nothing.
    mutating func encryption(_ keyed: Keyed, what: some CustomStringConvertible) -> Encryption? {
        guard let node = keyed["encrypt"] else { return nil }
        if node.scalarText == "deterministic" { return .deterministic }
        if node.boolValue == nil {
            let found = node.scalarText.map { "'\($0)'" } ?? node.kindDescription
            error(.wrongKind, "'encrypt' in \(what) expects true, false or deterministic, found \(found)", at: node)
            return nil
        }
        return node.boolValue == true ? .randomized : nil
    }

    /// Options that make no sense together, or on this type.
    private mutating func checkAttributeOptions(_ parsed: Parsed<Attribute>) {
        let a = parsed.model
        if a.isTransient { checkTransientOptions(parsed) }
        if a.usesExternalStorage || a.isSearchable { checkStorageOptions(parsed) }
        if a.isEncrypted || a.backfill != nil { checkComputedColumnOptions(parsed) }
        let what = Subject("attribute", a.name)
        if a.isUnique, a.isIndexed {
            warning(.redundant, "\(what) is unique, which already indexes it; remove 'indexed'", at: parsed.options.keyNode("indexed") ?? parsed.nameNode)
        }
        if a.isPrimaryKey, a.isUnique {
            warning(.redundant, "\(what) is the primary key, which is already unique; remove 'unique'", at: parsed.options.keyNode("unique") ?? parsed.nameNode)
        }
        if a.renamedFrom == a.name {
            warning(.redundant, "\(what) is 'renamedFrom' its own name; remove 'renamedFrom'", at: parsed.options["renamedFrom"] ?? parsed.nameNode)
        }
    }

    /// Reports two options an attribute cannot have both of, at the second.
    private mutating func conflict(_ parsed: Parsed<Attribute>, _ first: String, _ second: String, _ why: String) {
        error(.conflictingOptions, "\(Subject("attribute", parsed.model.name)) cannot be both \(first) and \(second): \(why)", at: parsed.options.keyNode(second) ?? parsed.nameNode)
    }

    /// A transient attribute is never stored: no storage option, column or column type, and a
    /// required one needs a default.
    private mutating func checkTransientOptions(_ parsed: Parsed<Attribute>) {
        let a = parsed.model
        let what = Subject("attribute", a.name)
        let stored: [(Bool, String)] = [
            (a.isUnique, "unique"), (a.isPrimaryKey, "primaryKey"), (a.isIndexed, "indexed"),
            (a.isSearchable, "searchable"), (a.usesExternalStorage, "externalStorage"),
            (a.isEncrypted, "encrypt"), (a.preservesValueOnDeletion, "preserveValueOnDeletion"),
        ]
        for (isSet, option) in stored where isSet {
            conflict(parsed, "transient", option, "a transient attribute is never stored")
        }
        if a.isDateOnly {
            conflict(parsed, "transient", "dateOnly", "a transient attribute is never stored, so it has no column type")
        }
        if parsed.options.has("column") {
            error(.conflictingOptions, "\(what) is transient, so it has no column; remove 'column'", at: parsed.options.keyNode("column") ?? parsed.nameNode)
        }
        if !a.isOptional, a.defaultValue == nil, !parsed.options.has("default") {
            error(
                .conflictingOptions, "\(what) is transient and required but has no default; a transient value is never stored or decoded, so give it a 'default' or make it optional",
                at: parsed.options.keyNode("transient") ?? parsed.nameNode)
        }
    }

    /// External storage and full-text search: each for text (and data) only, and neither with
    /// what needs the value in the row.
    private mutating func checkStorageOptions(_ parsed: Parsed<Attribute>) {
        let a = parsed.model
        let what = Subject("attribute", a.name)
        if a.usesExternalStorage {
            let elementIsBlob: Bool = if case .scalar(let s) = a.type { s == .data || s == .string } else { false }
            if !elementIsBlob {
                error(.conflictingOptions, "\(what) has type \(a.type), but 'externalStorage' applies to Data and String only", at: parsed.options.keyNode("externalStorage") ?? parsed.nameNode)
            }
            for (isSet, option) in [(a.isUnique, "unique"), (a.isPrimaryKey, "primaryKey"), (a.isIndexed, "indexed"), (a.isSearchable, "searchable")] where isSet {
                conflict(parsed, "externalStorage", option, "its value lives in a file outside the database")
            }
            if a.preservesValueOnDeletion {
                conflict(parsed, "externalStorage", "preserveValueOnDeletion", "its file is deleted with the row, so the history could keep only a dangling file name")
            }
        }
        if a.isSearchable {
            let isText: Bool =
                switch a.type {
                case .scalar(.string), .array(.scalar(.string)): true
                default: false
                }
            if !isText {
                error(
                    .conflictingOptions, "\(what) has type \(a.type), but 'searchable' (full-text search) applies to String and [String] only",
                    at: parsed.options.keyNode("searchable") ?? parsed.nameNode)
            }
            if a.isEncrypted {
                conflict(parsed, "encrypt", "searchable", "full-text search cannot read ciphertext")
            }
        }
    }

    /// Encryption, and a backfill SQL computes: a column that holds what the store writes (a
    /// ciphertext) cannot be indexed, keyed, kept in clear history or computed by SQL.
    private mutating func checkComputedColumnOptions(_ parsed: Parsed<Attribute>) {
        let a = parsed.model
        let what = Subject("attribute", a.name)
        if a.isEncrypted, !a.isTransient, !a.encryptsDeterministically, a.isUnique || a.isIndexed {
            error(
                .conflictingOptions,
                "\(what) is encrypted and \(a.isUnique ? "unique" : "indexed"), but every randomized ciphertext differs, so the index would never match; write 'encrypt: deterministic' (equal values give equal ciphertexts)",
                at: parsed.options.keyNode("encrypt") ?? parsed.nameNode)
        }
        if a.isEncrypted, !a.isTransient {
            if a.isPrimaryKey { conflict(parsed, "encrypt", "primaryKey", "a value is encrypted under its row's key, so the key itself cannot be") }
            if a.preservesValueOnDeletion {
                conflict(parsed, "encrypt", "preserveValueOnDeletion", "the history is not encrypted, so a tombstone would keep the value in clear")
            }
        }
        if a.backfill != nil {
            if a.isTransient || a.isEncrypted || a.usesExternalStorage {
                conflict(
                    parsed, a.isTransient ? "transient" : a.isEncrypted ? "encrypt" : "externalStorage", "backfill",
                    a.isTransient ? "a transient attribute has no column" : "its column holds what the store writes (a ciphertext, a file name), which SQL cannot compute")
            } else if a.isOptional {
                warning(
                    .redundant, "\(what) is optional, so existing rows can stay empty and 'backfill' is never used; remove it, or make the attribute required",
                    at: parsed.options.keyNode("backfill") ?? parsed.nameNode)
            }
        }
    }

    // MARK: - Relationships

    private mutating func parseRelationship(_ pair: YAMLPair, entity: String) -> Parsed<Relationship>? {
        let name = checkName(pair.key, kind: "relationship", isType: false)
        let what = Subject("relationship", name)
        guard let (options, targetNode) = shorthandOrOptions(pair.value, mainKey: "to", allowed: Self.relationshipKeys, what: what) else { return nil }
        guard let targetNode else {
            error(.missingKey, "\(what) of entity '\(entity)' has no 'to' naming its target entity", at: pair.key)
            return nil
        }
        guard let raw = targetNode.stringValue else {
            error(.wrongKind, "'to' of \(what) expects an entity ('Airport', 'Airport?' or '[Flight]'), found \(targetNode.kindDescription)", at: targetNode)
            return nil
        }
        var target = String(raw.trimmingSpaces())
        var isToMany = false
        var isOptional = false
        if target.hasPrefix("[") {
            guard target.hasSuffix("]") || target.hasSuffix("]?") else {
                error(.invalidType, "'\(raw)' is not a relationship target: a to-many one is written '[Entity]'", at: targetNode)
                return nil
            }
            if target.hasSuffix("?") {
                warning(.redundant, "a to-many relationship is never nil, only empty; write '\(target.dropLast())'", at: targetNode)
                target.removeLast()
            }
            isToMany = true
            target = String(target.dropFirst().dropLast().trimmingSpaces())
        } else if target.hasSuffix("?") {
            isOptional = true
            target = String(target.dropLast().trimmingSpaces())
        }
        if entityNodes[target] == nil {
            if enumNodes[target] != nil || valueNodes[target] != nil || ScalarType(rawValue: target) != nil {
                error(.unknownEntity, "'\(target)' is not an entity; declare \(what) under 'attributes' instead", at: targetNode)
            } else {
                error(.unknownEntity, "unknown entity '\(target)' in \(what) of entity '\(entity)'\(Suggestion.hint(for: target, in: entityNodes.keys.sorted()))", at: targetNode)
            }
            return nil
        }
        var deleteRule = Relationship.DeleteRule.nullify
        if let ruleNode = options["deleteRule"] {
            let text = ruleNode.stringValue ?? ""
            if ruleNode.stringValue == nil {
                error(.wrongKind, "'deleteRule' of \(what) expects one of \(Relationship.DeleteRule.allCases.map(\.rawValue).joined(separator: ", ")), found \(ruleNode.kindDescription)", at: ruleNode)
            } else if let rule = Relationship.DeleteRule(rawValue: text) {
                deleteRule = rule
            } else {
                let names = Relationship.DeleteRule.allCases.map(\.rawValue)
                error(.invalidValue, "unknown deleteRule '\(text)' in \(what); expected one of \(names.joined(separator: ", "))\(Suggestion.hint(for: text, in: names))", at: ruleNode)
            }
        }
        let minCount = count(options, "minCount", what: what)
        let maxCount = count(options, "maxCount", what: what)
        if !isToMany {
            for option in ["minCount", "maxCount"] where options.has(option) {
                error(
                    .conflictingOptions, "'\(option)' applies to to-many relationships, but \(what) is to-one; make it required or optional with '?' instead", at: options.keyNode(option) ?? pair.key)
            }
        }
        if let minCount, let maxCount, minCount > maxCount {
            error(.conflictingOptions, "\(what) has minCount \(minCount) greater than maxCount \(maxCount)", at: options["minCount"] ?? pair.key)
        }
        if maxCount == 0 {
            warning(.conflictingOptions, "\(what) has maxCount 0, so it can never hold anything", at: options["maxCount"] ?? pair.key)
        }
        let column = self.name(options, "column", what: what)
        if column != nil, isToMany {
            error(.conflictingOptions, "\(what) is to-many, so it has no column of its own; the other side or a join table stores the link", at: options.keyNode("column") ?? pair.key)
        }
        let relationship = Relationship(
            name: name, target: target, isToMany: isToMany, isOptional: isOptional,
            inverse: identifier(options, "inverse", what: what), deleteRule: deleteRule,
            minCount: minCount, maxCount: maxCount,
            renamedFrom: identifier(options, "renamedFrom", what: what),
            foreignKeyColumns: column.map { [$0] } ?? [], joinTableName: nil,
            doc: text(options, "doc", what: what), location: location(pair.key))
        var parsedRelationship = relationship
        parsedRelationship.coreData = coreDataSettings(options, allowed: CoreDataSettings.relationshipKeys, what: what)
        return Parsed(model: parsedRelationship, nameNode: pair.key, options: options)
    }

    // MARK: - Keys, indexes and uniques

    /// An entity's attributes and relationships by name.
    struct Members {
        let attributes: [Parsed<Attribute>]
        let relationships: [Parsed<Relationship>]
        private let attributeIndex: [String: Int]
        private let relationshipIndex: [String: Int]

        init(attributes: [Parsed<Attribute>], relationships: [Parsed<Relationship>]) {
            self.attributes = attributes
            self.relationships = relationships
            attributeIndex = SchemaParser.indexByName(attributes.map(\.model.name))
            relationshipIndex = SchemaParser.indexByName(relationships.map(\.model.name))
        }

        var names: [String] { attributes.map(\.model.name) + relationships.map(\.model.name) }
        func attribute(_ name: String) -> Parsed<Attribute>? { attributeIndex[name].map { attributes[$0] } }
        func relationship(_ name: String) -> Parsed<Relationship>? { relationshipIndex[name].map { relationships[$0] } }
    }

    private mutating func resolvePrimaryKey(_ keyed: Keyed, members: Members, what: some CustomStringConvertible) -> Entity.PrimaryKey {
        let flagged = members.attributes.filter(\.model.isPrimaryKey)
        if let node = keyed["primaryKey"] {
            guard let list = memberList(node, option: "primaryKey", members: members, what: what), !list.isEmpty else { return .implicit }
            if !flagged.isEmpty, Set(flagged.map(\.model.name)) != Set(list) {
                error(
                    .primaryKey,
                    "\(what) declares 'primaryKey: [\(list.joined(separator: ", "))]' but marks \(flagged.map { "'\($0.model.name)'" }.joined(separator: ", ")) with 'primaryKey: true'; keep one declaration",
                    at: node)
            }
            for member in list { checkKeyMember(member, members: members, what: what, at: node) }
            return .members(list)
        }
        if flagged.count > 1 {
            error(
                .primaryKey,
                "several attributes of \(what) are marked 'primaryKey: true' (\(flagged.map(\.model.name).joined(separator: ", "))); for a composite key list them in the entity's 'primaryKey'",
                at: flagged[1].options.keyNode("primaryKey") ?? flagged[1].nameNode)
        }
        if let first = flagged.first {
            checkKeyMember(first.model.name, members: members, what: what, at: first.options.keyNode("primaryKey") ?? first.nameNode)
            return .members(flagged.map(\.model.name))
        }
        let implicit = Entity.implicitKeyName
        if let clash = members.attribute(implicit) {
            error(.nameCollision, "attribute '\(implicit)' of \(what) clashes with the implicit primary key '\(implicit)'; mark it 'primaryKey: true' or rename it", at: clash.nameNode)
        } else if let clash = members.relationship(implicit) {
            error(.nameCollision, "relationship '\(implicit)' of \(what) clashes with the implicit primary key '\(implicit)'; rename it", at: clash.nameNode)
        }
        return .implicit
    }

    private mutating func checkKeyMember(_ name: String, members: Members, what: some CustomStringConvertible, at node: YAMLNode) {
        if let attribute = members.attribute(name)?.model {
            if attribute.isOptional {
                error(.primaryKey, "primary key member '\(name)' of \(what) is optional; a key must always have a value", at: node)
            }
            if attribute.isTransient || attribute.usesExternalStorage {
                error(.primaryKey, "primary key member '\(name)' of \(what) is \(attribute.isTransient ? "transient" : "in external storage"), so the database cannot key on it", at: node)
            }
            switch attribute.type {
            case .array, .value:
                error(.primaryKey, "primary key member '\(name)' of \(what) is stored as JSON (\(attribute.type)); use a scalar type", at: node)
            default: break
            }
        } else if let relationship = members.relationship(name)?.model, relationship.isOptional {
            error(.primaryKey, "primary key member '\(name)' of \(what) is an optional relationship; a key must always have a value", at: node)
        }
    }

    /// A list of lists of member names (`[[a], [b, c]]`; a bare name stands for a list of one).
    private mutating func memberLists(_ node: YAMLNode?, option: String, members: Members, what: some CustomStringConvertible) -> [[String]] {
        guard let node, !node.isNull else { return [] }
        guard let items = node.items else {
            error(.wrongKind, "'\(option)' of \(what) expects a list such as [[name], [city, name]], found \(node.kindDescription)", at: node)
            return []
        }
        return items.compactMap { memberList($0, option: option, members: members, what: what) }
    }

    /// One list of member names; a scalar is a list of one.
    private mutating func memberList(_ node: YAMLNode, option: String, members: Members, what: some CustomStringConvertible) -> [String]? {
        let nodes: [YAMLNode]
        if let items = node.items {
            nodes = items
        } else if node.stringValue != nil {
            nodes = [node]
        } else {
            error(.wrongKind, "'\(option)' of \(what) expects member names, found \(node.kindDescription)", at: node)
            return nil
        }
        if nodes.isEmpty {
            error(.invalidValue, "an entry of '\(option)' in \(what) is empty; name at least one member", at: node)
            return nil
        }
        var names: [String] = []
        var seen: Set<String> = []
        var valid = true
        for item in nodes {
            guard let name = item.stringValue else {
                error(.wrongKind, "'\(option)' of \(what) expects member names, found \(item.kindDescription)", at: item)
                valid = false
                continue
            }
            if !seen.insert(name).inserted {
                error(.invalidValue, "'\(name)' appears twice in one entry of '\(option)' in \(what)", at: item)
                valid = false
                continue
            }
            if let attribute = members.attribute(name)?.model {
                if attribute.isTransient {
                    error(.conflictingOptions, "'\(option)' of \(what) names transient attribute '\(name)', which is never stored", at: item)
                    valid = false
                } else if attribute.usesExternalStorage {
                    error(.conflictingOptions, "'\(option)' of \(what) names '\(name)', whose value is in external storage", at: item)
                    valid = false
                } else if attribute.isEncrypted, !attribute.encryptsDeterministically {
                    error(
                        .conflictingOptions,
                        "'\(option)' of \(what) names '\(name)', encrypted with a random nonce: every ciphertext differs, so the index would never match; write 'encrypt: deterministic' on it (equal values give equal ciphertexts)",
                        at: item)
                    valid = false
                }
            } else if let relationship = members.relationship(name)?.model {
                if relationship.isToMany {
                    error(.conflictingOptions, "'\(option)' of \(what) names to-many relationship '\(name)', which has no column here", at: item)
                    valid = false
                }
            } else {
                error(.unknownMember, "'\(option)' of \(what) names '\(name)', which is not one of its attributes or relationships\(Suggestion.hint(for: name, in: members.names))", at: item)
                valid = false
            }
            names.append(name)
        }
        return valid ? names : nil
    }

    private mutating func checkRedundantIndexes(entity: Entity, primaryKey: [String], keyed: Keyed) {
        var uniqueSets = Set(entity.uniques + entity.attributes.filter(\.isUnique).map { [$0.name] })
        if !primaryKey.isEmpty { uniqueSets.insert(primaryKey) }
        var seen: Set<[String]> = []
        let indexNodes = keyed["indexes"]?.items ?? []
        for (offset, index) in entity.indexes.enumerated() {
            let node = offset < indexNodes.count ? indexNodes[offset] : keyed.node
            if seen.contains(index) {
                warning(.redundant, "index [\(index.joined(separator: ", "))] of entity '\(entity.name)' is listed twice", at: node)
            } else if uniqueSets.contains(index) {
                warning(.redundant, "index [\(index.joined(separator: ", "))] of entity '\(entity.name)' repeats a unique constraint or primary key, which is already indexed", at: node)
            }
            seen.insert(index)
        }
    }
}
