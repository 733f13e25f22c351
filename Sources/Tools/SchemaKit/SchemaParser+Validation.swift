import Diagnostics
import YAMLReader

/// Checks that need the whole schema: inverses, delete rules, where links are stored, and
/// names that collide once tables and columns are derived.
extension SchemaParser {
    mutating func validate() {
        entityIndexByName = Self.indexByName(entities.map(\.model.name))
        for (name, relationships) in relationshipNodes {
            relationshipIndexByName[name] = Self.indexByName(relationships.map(\.model.name))
        }
        resolveInverses()
        placeLinks()
        checkEntitiesInSlices { parser, range in
            parser.checkDeleteRules(of: range)
            parser.checkMemberNames(of: range)
        }
        checkTableNames()
        checkUnusedTypes()
        checkMovedAttributes()
    }

    // MARK: - Moved attributes (table splits)

    /// `movedFrom: Entity.attribute` needs another entity of that name, and a to-one
    /// relationship from this entity to it whose key this entity's table holds: the migration
    /// fills the new rows from the old ones through that key.
    private mutating func checkMovedAttributes() {
        for (entityName, attributes) in attributeNodes {
            for parsed in attributes {
                guard let (source, _) = parsed.model.movedFrom else { continue }
                let node = parsed.options["movedFrom"] ?? parsed.nameNode
                let what = "attribute '\(parsed.model.name)' of entity '\(entityName)'"
                guard source != entityName else {
                    error(.invalidValue, "\(what) is 'movedFrom' its own entity; within one entity write 'renamedFrom'", at: node)
                    continue
                }
                guard let sourceIndex = entityIndex(source) else {
                    error(.unknownEntity, "\(what) is 'movedFrom' \(source), which is not an entity of this schema; the entity it leaves keeps existing", at: node)
                    continue
                }
                _ = sourceIndex
                let link = entityIndex(entityName).flatMap { index in
                    entities[index].model.relationships.first { $0.target == source && !$0.isToMany && !$0.foreignKeyColumns.isEmpty }
                }
                if link == nil {
                    error(
                        .invalidValue,
                        "\(what) is 'movedFrom' \(source), but '\(entityName)' has no to-one relationship to \(source) holding its key; add one (such as `\(Naming.lowerFirst(source)): \(source)`), so the migration can link each new row to the one its values come from",
                        at: node)
                }
            }
        }
    }

    private func entityIndex(_ name: String) -> Int? { entityIndexByName[name] }

    private func parsedRelationship(_ entity: String, _ name: String) -> Parsed<Relationship>? {
        guard let position = relationshipIndexByName[entity]?[name] else { return nil }
        return relationshipNodes[entity]?[position]
    }

    /// Updates a relationship in the entity and in its parsed copy, which share positions.
    private mutating func setRelationship(_ entity: String, _ name: String, _ update: (inout Relationship) -> Void) {
        guard let e = entityIndex(entity), let position = relationshipIndexByName[entity]?[name] else { return }
        update(&entities[e].model.relationships[position])
        update(&relationshipNodes[entity]![position].model)
    }

    // MARK: - Inverses

    private mutating func resolveInverses() {
        /// "Entity.relationship" of the side that claimed each relationship as its inverse.
        var claimedBy: [String: (entity: String, relationship: String, inverseNode: YAMLNode)] = [:]
        claimedBy.reserveCapacity(entities.count * 2)
        for entityIndex in entities.indices {
            let entityName = entities[entityIndex].model.name
            // By position: `setRelationship` writes to the array, which a live copy would duplicate.
            for position in (relationshipNodes[entityName] ?? []).indices {
                let relationship = relationshipNodes[entityName]![position]
                guard let inverseName = relationship.model.inverse else { continue }
                let inverseNode = relationship.node("inverse")
                // Described only in messages: most inverses check out.
                var source: String { "\(entityName).\(relationship.model.name)" }
                guard let inverse = parsedRelationship(relationship.model.target, inverseName) else {
                    let candidates = (relationshipNodes[relationship.model.target] ?? []).map(\.model.name)
                    error(
                        .unknownMember,
                        "the inverse of '\(source)' names '\(inverseName)', but entity '\(relationship.model.target)' has no such relationship\(Suggestion.hint(for: inverseName, in: candidates))",
                        at: inverseNode)
                    setRelationship(entityName, relationship.model.name) { $0.inverse = nil }
                    continue
                }
                var target: String { "\(relationship.model.target).\(inverseName)" }
                guard inverse.model.target == entityName else {
                    error(
                        .inverseMismatch, "'\(target)', the inverse of '\(source)', points to '\(inverse.model.target)', not back to '\(entityName)'", at: inverseNode,
                        notes: [note("'\(target)' declared here", at: inverse.nameNode)])
                    setRelationship(entityName, relationship.model.name) { $0.inverse = nil }
                    continue
                }
                if let back = inverse.model.inverse, back != relationship.model.name {
                    error(
                        .inverseMismatch, "inverses declared inconsistently: '\(source)' names '\(inverseName)' as its inverse, but '\(target)' names '\(back)'", at: inverseNode,
                        notes: [note("'\(target)' declares its inverse here", at: inverse.node("inverse"))])
                    setRelationship(entityName, relationship.model.name) { $0.inverse = nil }
                    continue
                }
                let claimKey = target
                if let other = claimedBy[claimKey], other.relationship != relationship.model.name || other.entity != entityName {
                    error(
                        .inverseMismatch, "'\(target)' is already the inverse of '\(other.entity).\(other.relationship)'; a relationship has one inverse", at: inverseNode,
                        notes: [note("claimed here", at: other.inverseNode)])
                    setRelationship(entityName, relationship.model.name) { $0.inverse = nil }
                    continue
                }
                claimedBy[claimKey] = (entityName, relationship.model.name, inverseNode)
                // Declaring the inverse on one side is enough: fill in the other.
                setRelationship(relationship.model.target, inverseName) { $0.inverse = relationship.model.name }
            }
        }
        for entityIndex in entities.indices {
            let entityName = entities[entityIndex].model.name
            for relationship in relationshipNodes[entityName] ?? [] where relationship.model.isToMany && relationship.model.inverse == nil {
                let declaredInverse = relationship.options.has("inverse")
                if !declaredInverse {
                    warning(
                        .missingInverse,
                        "to-many relationship '\(entityName).\(relationship.model.name)' has no inverse; declare one (e.g. a to-one '\(Naming.lowerFirst(entityName))' on '\(relationship.model.target)') so both sides stay consistent",
                        at: relationship.nameNode)
                }
            }
        }
    }

    // MARK: - Delete rules

    private mutating func checkDeleteRules(of range: Range<Int>) {
        for entity in entities[range] {
            for relationship in relationshipNodes[entity.model.name] ?? [] {
                let r = relationship.model
                guard let inverseName = r.inverse, let inverse = parsedRelationship(r.target, inverseName)?.model else { continue }
                // Described only in messages: nearly every rule checks out.
                var source: String { "\(entity.model.name).\(r.name)" }
                var inverseText: String { "\(r.target).\(inverseName)" }
                let explicit = relationship.options.has("deleteRule")
                switch r.deleteRule {
                case .nullify where !inverse.isToMany && !inverse.isOptional:
                    let rule = explicit ? "deleteRule nullify" : "the default deleteRule nullify"
                    error(
                        .deleteRule,
                        "with \(rule) on '\(source)', deleting a '\(entity.model.name)' would set '\(inverseText)' to nil, but it is not optional; set 'deleteRule: cascade' or 'deny' on '\(r.name)', or make '\(inverseName)' optional",
                        at: relationship.node("deleteRule"))
                case .cascade where !r.isToMany && inverse.isToMany:
                    warning(
                        .deleteRule, "deleting a '\(entity.model.name)' cascades to its '\(r.target)', which other '\(entity.model.name)' objects share; cascade usually belongs on '\(inverseText)'",
                        at: relationship.node("deleteRule"))
                case .noAction:
                    warning(
                        .deleteRule, "with deleteRule noAction on '\(source)', deleting a '\(entity.model.name)' leaves '\(inverseText)' pointing at a deleted object",
                        at: relationship.node("deleteRule"))
                default:
                    break
                }
            }
        }
    }

    // MARK: - Where links are stored

    /// Decides which side of each relationship stores the link (a foreign key, or a join table)
    /// and derives the column and table names.
    private mutating func placeLinks() {
        var keyColumnsCache: [String: [String]] = [:]
        var visiting: Set<String> = []
        // By position, not by iterating copies: `setRelationship` writes to the arrays read
        // here, and a live copy would make each write copy the whole array.
        for entityIndex in entities.indices {
            let entityName = entities[entityIndex].model.name
            let tableName = entities[entityIndex].model.tableName
            for position in (relationshipNodes[entityName] ?? []).indices {
                let relationship = relationshipNodes[entityName]![position]
                let r = relationship.model
                let inverse = r.inverse.flatMap { parsedRelationship(r.target, $0) }
                if r.isToMany {
                    // A to-many side stores nothing unless the link needs a join table.
                    guard inverse == nil || inverse?.model.isToMany == true else { continue }
                    guard ownsJoinTable(entityName, r, inverse: inverse) else { continue }
                    let table = Naming.joinTable(ownerTable: tableName, relationship: r.name)
                    // Columns named after each entity (`car_id`, `mechanic_id`), or `source_` and
                    // `target_` when an entity links to itself.
                    let selfLink = entityName == r.target
                    let ownKey = keyColumns(of: entityName, cache: &keyColumnsCache, visiting: &visiting)
                    let targetKey = keyColumns(of: r.target, cache: &keyColumnsCache, visiting: &visiting)
                    let ownColumns = Naming.joinColumns(of: entityName, key: ownKey, selfLink: selfLink, isTarget: false)
                    let targetColumns = Naming.joinColumns(of: r.target, key: targetKey, selfLink: selfLink, isTarget: true)
                    setRelationship(entityName, r.name) {
                        $0.joinTableName = table
                        $0.joinColumns = ownColumns
                        $0.joinTargetColumns = targetColumns
                    }
                    if let inverse {
                        setRelationship(r.target, inverse.model.name) {
                            $0.joinTableName = table
                            $0.joinColumns = targetColumns
                            $0.joinTargetColumns = ownColumns
                        }
                    }
                    continue
                }
                if let inverse, !inverse.model.isToMany, !storesOneToOneLink(entityName, relationship, inverse: inverse) {
                    setRelationship(entityName, r.name) { $0.foreignKeyColumns = [] }
                    continue
                }
                let targetKey = keyColumns(of: r.target, cache: &keyColumnsCache, visiting: &visiting)
                if let column = relationship.options["column"].flatMap(\.stringValue) {
                    if targetKey.count != 1 {
                        error(
                            .conflictingOptions, "'column' names one column, but '\(r.target)' has a composite key (\(targetKey.joined(separator: ", "))); remove 'column'",
                            at: relationship.node("column"))
                    }
                    setRelationship(entityName, r.name) { $0.foreignKeyColumns = [column] }
                } else {
                    setRelationship(entityName, r.name) { $0.foreignKeyColumns = Naming.foreignKeyColumns(of: r.name, targetKey: targetKey) }
                }
            }
        }
    }

    /// One-to-one: the side with an explicit `column` stores the link, else the required side,
    /// else the side whose entity and relationship names sort first.
    private func storesOneToOneLink(_ entity: String, _ relationship: Parsed<Relationship>, inverse: Parsed<Relationship>) -> Bool {
        if entity == relationship.model.target, relationship.model.name == inverse.model.name { return true }
        let mine = relationship.options.has("column"), theirs = inverse.options.has("column")
        if mine != theirs { return mine }
        if relationship.model.isOptional != inverse.model.isOptional { return !relationship.model.isOptional }
        return (entity, relationship.model.name) < (relationship.model.target, inverse.model.name)
    }

    /// A many-to-many link's join table belongs to the side whose entity and relationship names sort first.
    private func ownsJoinTable(_ entity: String, _ relationship: Relationship, inverse: Parsed<Relationship>?) -> Bool {
        guard let inverse else { return true }
        return (entity, relationship.name) <= (relationship.target, inverse.model.name)
    }

    /// The column names of an entity's primary key, following relationships in composite keys.
    private mutating func keyColumns(of entityName: String, cache: inout [String: [String]], visiting: inout Set<String>) -> [String] {
        if let cached = cache[entityName] { return cached }
        guard let index = entityIndex(entityName) else { return [] }
        let entity = entities[index]
        guard case .members(let members) = entity.model.primaryKey else { return [Entity.implicitKeyName] }
        guard visiting.insert(entityName).inserted else {
            error(.primaryKey, "the primary key of entity '\(entityName)' depends on itself through relationships", at: entity.node("primaryKey"))
            return []
        }
        defer { visiting.remove(entityName) }
        var columns: [String] = []
        for member in members {
            if let attribute = entity.model.attribute(named: member) {
                columns.append(attribute.columnName)
            } else if let relationship = entity.model.relationship(named: member) {
                if let column = relationship.foreignKeyColumns.first, parsedRelationship(entityName, member)?.options.has("column") == true {
                    columns.append(column)
                } else {
                    let targetKey = keyColumns(of: relationship.target, cache: &cache, visiting: &visiting)
                    columns += Naming.foreignKeyColumns(of: member, targetKey: targetKey)
                }
            }
        }
        cache[entityName] = columns
        return columns
    }

    // MARK: - Names inside an entity

    /// Runs a check that reads the parsed schema and only reports, over slices of the entities on
    /// the machine's cores, each slice with a copy of this parser; diagnostics join in order.
    private mutating func checkEntitiesInSlices(_ check: @escaping @Sendable (inout SchemaParser, Range<Int>) -> Void) {
        let slices = Self.slices(of: entities.count)
        guard slices.count > 1 else {
            check(&self, entities.indices)
            return
        }
        var reader = self
        reader.diagnostics = DiagnosticBag()
        let sliceReader = reader
        let found = slices.parallelMap { range in
            var parser = sliceReader
            check(&parser, range)
            return parser.diagnostics.diagnostics
        }
        for diagnostics in found { self.diagnostics.append(contentsOf: diagnostics) }
    }

    /// Names claimed in one entity, with the node and member that claimed each first.
    typealias Claims = [String: (node: YAMLNode, claimant: Claimant)]

    private mutating func checkMemberNames(of range: Range<Int>) {
        // Emptied, not reallocated, for each entity: most entities are alike in size.
        var properties: Claims = [:], columns: Claims = [:], jsonKeys: Claims = [:]
        var screen = NameScreen()
        for entityIndex in range {
            // Nearly every entity is fine: a cheap screen passes those without the claims below.
            if screen.passes(entities[entityIndex].model) { continue }
            properties.removeAll(keepingCapacity: true)
            columns.removeAll(keepingCapacity: true)
            jsonKeys.removeAll(keepingCapacity: true)
            claimProperties(of: entityIndex, in: &properties)
            claimColumns(of: entityIndex, properties: properties, in: &columns)
            claimJSONKeys(of: entityIndex, in: &jsonKeys)
        }
    }

    /// Swift properties: attributes, relationships and the generated key property of each
    /// to-one. Who claimed a name is described only when another claims it too.
    private mutating func claimProperties(of entityIndex: Int, in properties: inout Claims) {
        let name = entities[entityIndex].model.name
        func claimProperty(_ property: String, _ node: YAMLNode, _ claimant: Claimant, _ parser: inout SchemaParser) {
            if let first = properties[property] {
                parser.error(
                    .nameCollision, "\(claimant) of entity '\(name)' collides with \(first.claimant) (both are Swift property '\(property)')", at: node,
                    notes: [parser.note("\(first.claimant) declared here", at: first.node)])
                return
            }
            properties[property] = (node, claimant)
        }
        for attribute in attributeNodes[name] ?? [] {
            claimProperty(attribute.model.name, attribute.nameNode, .attribute(attribute.model.name), &self)
        }
        // The resolved relationships (links placed) with their parsed nodes.
        for (relationship, parsed) in zip(entities[entityIndex].model.relationships, relationshipNodes[name] ?? []) {
            claimProperty(relationship.name, parsed.nameNode, .relationship(relationship.name), &self)
            if !relationship.isToMany {
                claimProperty(Naming.keyProperty(of: relationship.name), parsed.nameNode, .keyProperty(of: relationship.name), &self)
            }
        }
    }

    /// Columns, compared case-insensitively as SQL does.
    private mutating func claimColumns(of entityIndex: Int, properties: Claims, in columns: inout Claims) {
        let name = entities[entityIndex].model.name
        func claimColumn(_ column: String, _ node: YAMLNode, _ claimant: Claimant, _ parser: inout SchemaParser) {
            let folded = Naming.foldedForComparison(column)
            if let first = columns[folded] {
                parser.error(
                    .nameCollision, "\(claimant) of entity '\(name)' uses column '\(column)', as does \(first.claimant)\(column == first.node.scalarText ? "" : "; set 'column' on one of them")",
                    at: node,
                    notes: [parser.note("\(first.claimant) declared here", at: first.node)])
                return
            }
            columns[folded] = (node, claimant)
            if column.utf8.count > Naming.portableIdentifierLength {
                parser.warning(.longIdentifier, "column '\(column)' of entity '\(name)' is longer than \(Naming.portableIdentifierLength) bytes; PostgreSQL would truncate it", at: node)
            }
        }
        // A member named `id` beside the implicit key was reported when the key was resolved.
        let memberNamedID =
            properties[Entity.implicitKeyName].map { claim in
                if case .keyProperty = claim.claimant { false } else { true }
            } ?? false
        if case .implicit = entities[entityIndex].model.primaryKey, !memberNamedID {
            columns[Entity.implicitKeyName] = (entities[entityIndex].nameNode, .implicitKey)
        }
        for attribute in attributeNodes[name] ?? [] where !attribute.model.isTransient {
            let node = attribute.options.keyNode("column") ?? attribute.nameNode
            claimColumn(attribute.model.columnName, node, .attribute(attribute.model.name), &self)
        }
        for (relationship, parsed) in zip(entities[entityIndex].model.relationships, relationshipNodes[name] ?? []) {
            for column in relationship.foreignKeyColumns {
                claimColumn(column, parsed.options.keyNode("column") ?? parsed.nameNode, .relationship(relationship.name), &self)
            }
        }
    }

    /// JSON keys of the generated Codable conformance.
    private mutating func claimJSONKeys(of entityIndex: Int, in jsonKeys: inout Claims) {
        let name = entities[entityIndex].model.name
        for attribute in attributeNodes[name] ?? [] {
            let key = attribute.model.jsonKey
            let node = attribute.options.keyNode("jsonKey") ?? attribute.nameNode
            if let first = jsonKeys[key] {
                error(
                    .nameCollision, "attribute '\(attribute.model.name)' of entity '\(name)' has JSON key '\(key)', as does \(first.claimant)", at: node,
                    notes: [note("\(first.claimant) declared here", at: first.node)])
            } else {
                jsonKeys[key] = (node, .attribute(attribute.model.name))
            }
        }
    }

    /// Screens an entity for what `checkMemberNames` reports: two members with the same Swift
    /// property, column (case-insensitively) or JSON key, or a column too long for PostgreSQL.
    /// It compares hashes of the names' bytes, far cheaper than the seeded hashing of the
    /// claims dictionaries; equal hashes and names outside ASCII fail the screen, so the full
    /// check decides whenever in doubt.
    struct NameScreen {
        private var hashes: [UInt64] = []

        // Members are read in place, by position: copying an attribute to read one name would
        // retain and release every string it holds.
        mutating func passes(_ entity: borrowing Entity) -> Bool {
            let attributes = entity.attributes.indices, relationships = entity.relationships.indices
            // Swift properties: attributes, relationships and each to-one's key property.
            hashes.removeAll(keepingCapacity: true)
            for index in attributes {
                guard add(entity.attributes[index].name) else { return false }
            }
            for index in relationships {
                guard add(entity.relationships[index].name),
                    entity.relationships[index].isToMany || add(entity.relationships[index].name, keySuffix: true)
                else { return false }
            }
            guard distinct() else { return false }

            hashes.removeAll(keepingCapacity: true)
            if case .implicit = entity.primaryKey, !add(Entity.implicitKeyName) { return false }
            for index in attributes where !entity.attributes[index].isTransient {
                guard addColumn(entity.attributes[index].columnName) else { return false }
            }
            for index in relationships {
                for column in entity.relationships[index].foreignKeyColumns {
                    guard addColumn(column) else { return false }
                }
            }
            guard distinct() else { return false }

            hashes.removeAll(keepingCapacity: true)
            for index in attributes {
                guard add(entity.attributes[index].jsonKey) else { return false }
            }
            return distinct()
        }

        /// A column, compared case-insensitively; false when too long for PostgreSQL.
        private mutating func addColumn(_ column: String) -> Bool {
            column.utf8.count <= Naming.portableIdentifierLength && add(column, foldingCase: true)
        }

        /// Adds the FNV-1a hash of `name` (then `ID`, for a key property); false for a name
        /// outside ASCII.
        private mutating func add(_ name: String, keySuffix: Bool = false, foldingCase: Bool = false) -> Bool {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in name.utf8 {
                guard byte < 0x80 else { return false }
                let folded = foldingCase && byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                hash = (hash ^ UInt64(folded)) &* 0x100_0000_01b3
            }
            if keySuffix {
                hash = (hash ^ UInt64(UInt8(ascii: "I"))) &* 0x100_0000_01b3
                hash = (hash ^ UInt64(UInt8(ascii: "D"))) &* 0x100_0000_01b3
            }
            hashes.append(hash)
            return true
        }

        private mutating func distinct() -> Bool {
            hashes.sort()
            for index in hashes.indices.dropFirst() where hashes[index] == hashes[index - 1] { return false }
            return true
        }
    }

    /// Who claimed a name, for messages; described only when needed.
    enum Claimant: CustomStringConvertible {
        case attribute(String)
        case relationship(String)
        case keyProperty(of: String)
        case implicitKey

        var description: String {
            switch self {
            case .attribute(let name): "attribute '\(name)'"
            case .relationship(let name): "relationship '\(name)'"
            case .keyProperty(let relationship): "the key property '\(relationship)ID' of relationship '\(relationship)'"
            case .implicitKey: "the implicit primary key 'id'"
            }
        }
    }

    // MARK: - Table names

    private mutating func checkTableNames() {
        var tables: [String: (node: YAMLNode, what: String)] = [:]
        func claim(_ table: String, _ node: YAMLNode, _ what: String, _ parser: inout SchemaParser) {
            let folded = table.lowercased()
            if let first = tables[folded] {
                parser.error(
                    .nameCollision, "\(what) uses table '\(table)', as does \(first.what); set 'table' on one of them", at: node,
                    notes: [parser.note("\(first.what) declared here", at: first.node)])
                return
            }
            tables[folded] = (node, what)
            if table.utf8.count > Naming.portableIdentifierLength {
                parser.warning(.longIdentifier, "table name '\(table)' is longer than \(Naming.portableIdentifierLength) bytes; PostgreSQL would truncate it", at: node)
            }
        }
        for entity in entities {
            claim(entity.model.tableName, entity.options["table"] ?? entity.nameNode, "entity '\(entity.model.name)'", &self)
        }
        for entity in entities {
            for relationship in entity.model.relationships {
                guard let joinTable = relationship.joinTableName,
                    joinTable == Naming.joinTable(ownerTable: entity.model.tableName, relationship: relationship.name),
                    let parsed = parsedRelationship(entity.model.name, relationship.name)
                else { continue }
                claim(joinTable, parsed.nameNode, "the join table of '\(entity.model.name).\(relationship.name)'", &self)
            }
        }
    }

    // MARK: - Unused types

    private mutating func checkUnusedTypes() {
        // A use that failed to resolve (a typo) would make a used type look unused.
        guard !diagnostics.diagnostics.contains(where: { $0.has(SchemaDiagnosticCode.unknownType) }) else { return }
        for enumType in enums where !usedTypeNames.contains(enumType.model.name) {
            warning(.unused, "enum '\(enumType.model.name)' is declared but no attribute uses it", at: enumType.nameNode)
        }
        for valueType in values where !usedTypeNames.contains(valueType.model.name) {
            warning(.unused, "value type '\(valueType.model.name)' is declared but no attribute uses it", at: valueType.nameNode)
        }
    }
}

extension Naming {
    /// `TaskList` -> `taskList`.
    static func lowerFirst(_ name: String) -> String {
        guard let first = name.first else { return name }
        return first.lowercased() + name.dropFirst()
    }
}
