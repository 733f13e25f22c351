import Diagnostics
import YAMLReader

/// `sync:`: reads each synced entity's scope and conflict policy, and checks what sync needs,
/// as the CloudKit checks do for CloudKit: a key a device can make offline, a scope for every
/// entity, and no relationship to an entity the device does not have. Unique values stay
/// allowed: the server decides them.
extension SchemaParser {
    static let syncEntityKeys = ["scope", "conflicts", "counters"]

    mutating func parseSync(_ node: YAMLNode) -> SyncDeclaration? {
        guard !node.isNull else { return SyncDeclaration(entities: []) }
        var synced: [(entity: SyncedEntity, nameNode: YAMLNode)] = []
        // Every entity the block names, read or not: a broken entry is reported once, not again
        // as a relationship to an entity that does not sync.
        var listed: Set<String> = []
        for pair in namedEntries(node, what: "sync") {
            let name = pair.key.scalarText ?? ""
            let what = "the sync of entity '\(name)'"
            guard let entity = entities.first(where: { $0.model.name == name }) else {
                let known = entities.map(\.model.name)
                error(.unknownEntity, "'sync' names entity '\(name)', which the schema does not declare\(Suggestion.hint(for: name, in: known))", at: pair.key)
                continue
            }
            listed.insert(name)
            guard let options = keyed(pair.value, allowed: Self.syncEntityKeys, what: what) else { continue }
            var scope: SyncScope?
            if let scopeNode = options["scope"] {
                scope = syncScope(scopeNode, of: entity.model, what: what)
            } else {
                error(.missingKey, "\(what) has no 'scope': say which rows a user gets, such as {scope: owner == $user}, or {scope: all} for every row", at: pair.key)
            }
            var conflicts = SyncedEntity.ConflictPolicy.lastWriterWins
            if let text = text(options, "conflicts", what: what) {
                let known = SyncedEntity.ConflictPolicy.allCases.map(\.rawValue)
                if let policy = SyncedEntity.ConflictPolicy(rawValue: text) {
                    conflicts = policy
                } else {
                    error(
                        .invalidValue, "'conflicts' in \(what) is one of \(known.joined(separator: ", ")), found '\(text)'\(Suggestion.hint(for: text, in: known))",
                        at: options["conflicts"] ?? pair.key)
                }
            }
            let counters = syncCounters(options, of: entity.model, what: what)
            guard let scope else { continue }
            synced.append((SyncedEntity(entity: name, scope: scope, conflicts: conflicts, counters: counters), pair.key))
        }
        for (entity, nameNode) in synced { checkSyncRules(entity, syncing: listed, at: nameNode) }
        return SyncDeclaration(entities: synced.map(\.entity))
    }

    /// `all`, or `path == $user`: to-one relationships of the entity, then an attribute holding
    /// the user's id (text or a UUID).
    private mutating func syncScope(_ node: YAMLNode, of entity: Entity, what: String) -> SyncScope? {
        let example = "such as owner == $user, list.owner == $user, or all"
        guard let text = node.stringValue else {
            error(.wrongKind, "'scope' in \(what) expects a condition, \(example); found \(node.kindDescription)", at: node)
            return nil
        }
        if text == "all" { return .all }
        let sides = text.split(separator: "==", omittingEmptySubsequences: false).map { $0.trimmingSpaces() }
        guard sides.count == 2, sides[1] == "$user", !sides[0].isEmpty else {
            error(.invalidValue, "'scope' in \(what) compares a path with $user, \(example); found '\(text)'", at: node)
            return nil
        }
        let path = sides[0].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var current = entity
        for (index, step) in path.enumerated() {
            let isLast = index == path.count - 1
            if isLast, let attribute = current.attribute(named: step) {
                guard case .scalar(let type) = attribute.type, type == .string || type == .uuid else {
                    error(.invalidValue, "'scope' in \(what) compares '\(step)' of '\(current.name)' with $user, a user id, but it is \(attribute.type); use a String or UUID attribute", at: node)
                    return nil
                }
                return .user(path: path)
            }
            guard let relationship = current.relationship(named: step) else {
                let members = current.attributes.map(\.name) + current.relationships.map(\.name)
                error(.unknownMember, "'scope' in \(what) names '\(step)', which '\(current.name)' does not have\(Suggestion.hint(for: step, in: members))", at: node)
                return nil
            }
            guard !isLast else {
                error(.invalidValue, "'scope' in \(what) ends at relationship '\(step)'; end it at an attribute holding the user's id, such as \(step).owner", at: node)
                return nil
            }
            guard !relationship.isToMany, let target = entities.first(where: { $0.model.name == relationship.target })?.model else {
                error(.invalidValue, "'scope' in \(what) goes through '\(step)', which is to-many; a scope follows to-one relationships", at: node)
                return nil
            }
            current = target
        }
        return nil
    }

    /// `counters: [likes]`: integer attributes of the entity, not in its key.
    private mutating func syncCounters(_ options: Keyed, of entity: Entity, what: String) -> [String] {
        guard let node = options["counters"] else { return [] }
        guard let items = node.items else {
            error(.wrongKind, "'counters' in \(what) expects a list of integer attributes, such as [likes], found \(node.kindDescription)", at: node)
            return []
        }
        var counters: [String] = []
        for item in items {
            let name = item.stringValue ?? ""
            guard let attribute = entity.attribute(named: name) else {
                error(.unknownMember, "'counters' in \(what) names '\(name)', which '\(entity.name)' does not have\(Suggestion.hint(for: name, in: entity.attributes.map(\.name)))", at: item)
                continue
            }
            guard case .scalar(let type) = attribute.type, type.integerRange != nil else {
                error(.invalidValue, "'counters' in \(what) names '\(name)', which is \(attribute.type); a counter adds up changes, so it must be an integer", at: item)
                continue
            }
            if case .members(let key) = entity.primaryKey, key.contains(name) {
                error(.invalidValue, "'counters' in \(what) names '\(name)', which is in the key; a key does not change", at: item)
                continue
            }
            counters.append(name)
        }
        return counters
    }

    /// A key a device can make offline, and no relationship to an entity it does not have.
    private mutating func checkSyncRules(_ synced: SyncedEntity, syncing listed: Set<String>, at nameNode: YAMLNode) {
        guard let entity = entities.first(where: { $0.model.name == synced.entity })?.model else { return }
        let what = "entity '\(entity.name)'"
        switch entity.primaryKey {
        case .implicit:
            error(
                .sync,
                "\(what) syncs, but its key is the integer the database assigns, which a device offline cannot; declare a UUID key, such as id: {type: UUID, primaryKey: true, default: uuid}",
                at: nameNode)
        case .members(let members):
            for member in members {
                if let attribute = entity.attribute(named: member), attribute.type != .scalar(.uuid) {
                    error(.sync, "\(what) syncs, but its key '\(member)' is \(attribute.type): two devices offline could make the same one; make the key a UUID", at: nameNode)
                }
            }
        }
        for relationship in entity.relationships {
            let node = relationshipNodes[entity.name]?.first { $0.model.name == relationship.name }?.nameNode ?? nameNode
            if !listed.contains(relationship.target) {
                error(
                    .sync,
                    "\(what) syncs, but its relationship '\(relationship.name)' leads to '\(relationship.target)', which does not: a device would hold links to records it never gets; sync '\(relationship.target)' too, or remove the relationship",
                    at: node)
            } else if let kind = joinTableKind(of: relationship, in: entity) {
                error(
                    .sync,
                    "\(what) syncs, but its relationship '\(relationship.name)' is \(kind), kept in a join table that sync does not carry: its links would stay on the device that made them; "
                        + "make each link an entity of its own (a UUID key and a to-one relationship to each side) and sync it",
                    at: node)
            }
        }
    }

    /// "many-to-many" or "to-many without an inverse" where the relationship's links live in a
    /// join table; nil where a foreign key holds them.
    private func joinTableKind(of relationship: Relationship, in entity: Entity) -> String? {
        guard relationship.isToMany else { return nil }
        let target = entities.first { $0.model.name == relationship.target }?.model
        let inverse =
            relationship.inverse.flatMap { name in target?.relationships.first { $0.name == name } }
            ?? target?.relationships.first { $0.target == entity.name && $0.inverse == relationship.name }
        guard let inverse else { return "to-many without an inverse" }
        return inverse.isToMany ? "many-to-many" : nil
    }
}
