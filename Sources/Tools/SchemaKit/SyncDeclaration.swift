import TextEscaping

/// `sync:`: the entities that sync between devices and a server, each with the rows a user gets
/// (its scope) and how concurrent changes to one record are settled. The loader checks what
/// sync needs of the schema (`SchemaParser+Sync`).
///
///     sync:
///       TodoList: {scope: owner == $user}
///       TodoItem: {scope: list.owner == $user, counters: [likes]}
public struct SyncDeclaration: Sendable, Hashable {
    /// The entities that sync, in the order the schema lists them.
    public var entities: [SyncedEntity]

    public init(entities: [SyncedEntity]) { self.entities = entities }

    /// The declaration of an entity, nil when it does not sync.
    public func entity(named name: String) -> SyncedEntity? { entities.first { $0.entity == name } }

    /// The block as a schema file writes it, on one line: `{TodoList: {scope: "owner == $user"}}`.
    public var yamlText: String {
        let entries = entities.map { synced in
            var options = ["scope: \(TextEscaping.yaml(synced.scope.description))"]
            if synced.conflicts != .lastWriterWins { options.append("conflicts: \(synced.conflicts.rawValue)") }
            if !synced.counters.isEmpty { options.append("counters: [\(synced.counters.joined(separator: ", "))]") }
            return "\(synced.entity): {\(options.joined(separator: ", "))}"
        }
        return "{" + entries.joined(separator: ", ") + "}"
    }
}

/// One entity that syncs.
public struct SyncedEntity: Sendable, Hashable {
    /// How two changes to the same attribute of a record, made apart, are settled.
    public enum ConflictPolicy: String, Sendable, Hashable, CaseIterable {
        /// The later change wins, attribute by attribute, by a hybrid logical clock (the default).
        case lastWriterWins
        /// The server's value stands; a device's change to it is refused and the server's sent back.
        case serverWins
    }

    /// The entity's name.
    public var entity: String
    /// The rows each user gets.
    public var scope: SyncScope
    /// How conflicts are settled, for every attribute but the counters.
    public var conflicts: ConflictPolicy
    /// Integer attributes whose changes add up (`likes`: +1 on two devices is +2), instead of one
    /// replacing the other.
    public var counters: [String]

    public init(entity: String, scope: SyncScope, conflicts: ConflictPolicy = .lastWriterWins, counters: [String] = []) {
        self.entity = entity
        self.scope = scope
        self.conflicts = conflicts
        self.counters = counters
    }
}

/// The rows of an entity a user gets.
public enum SyncScope: Sendable, Hashable, CustomStringConvertible {
    /// Every row, for every user (shared reference data): `scope: all`.
    case all
    /// The rows whose value at `path` is the user's id: to-one relationships, then an
    /// attribute (`list.owner == $user` is `["list", "owner"]`).
    case user(path: [String])

    /// The scope as the schema writes it.
    public var description: String {
        switch self {
        case .all: "all"
        case .user(let path): path.joined(separator: ".") + " == $user"
        }
    }
}

extension SyncDeclaration {
    /// The declaration as the version before `newer` reads it (`older`, whose schema did not
    /// declare sync itself): each entity, scope path and counter under its earlier name
    /// (`renamedFrom`). A server serving devices of the earlier version settles and scopes their
    /// records as this version declares. An entity the earlier version lacks, or whose scope
    /// follows a relationship or attribute it lacks, does not sync there, and is listed in
    /// `left` with why.
    ///
    ///     let (earlier, left) = schema.sync!.carried(from: schema, to: previousVersion)
    public func carried(from newer: Schema, to older: Schema) -> (declaration: SyncDeclaration, left: [String]) {
        var carried: [SyncedEntity] = [], left: [String] = []
        for synced in entities {
            guard let entity = newer.entity(named: synced.entity) else { continue }
            let earlierName = entity.renamedFrom ?? entity.name
            guard older.entity(named: earlierName) != nil else {
                left.append("\(synced.entity): version \(older.version) has no entity \(earlierName)")
                continue
            }
            var scope = synced.scope
            if case .user(let path) = synced.scope {
                guard let earlierPath = Self.earlierPath(path, from: entity, newer: newer, older: older) else {
                    left.append("\(synced.entity): version \(older.version) lacks a step of its scope \(synced.scope)")
                    continue
                }
                scope = .user(path: earlierPath)
            }
            let counters = synced.counters.compactMap { counter in
                let earlier = entity.attribute(named: counter)?.renamedFrom ?? counter
                return older.entity(named: earlierName)?.attribute(named: earlier) == nil ? nil : earlier
            }
            carried.append(SyncedEntity(entity: earlierName, scope: scope, conflicts: synced.conflicts, counters: counters))
        }
        return (SyncDeclaration(entities: carried), left)
    }

    /// A scope's path (to-one relationships, then an attribute) under the earlier version's
    /// names; nil when a step is missing there.
    static func earlierPath(_ path: [String], from entity: Entity, newer: Schema, older: Schema) -> [String]? {
        var current = entity
        var earlier: [String] = []
        for (index, step) in path.enumerated() {
            let olderEntity = older.entity(named: current.renamedFrom ?? current.name)
            if index == path.count - 1 {
                let name = current.attribute(named: step)?.renamedFrom ?? step
                guard olderEntity?.attribute(named: name) != nil else { return nil }
                earlier.append(name)
            } else {
                guard let relationship = current.relationship(named: step), let target = newer.entity(named: relationship.target) else { return nil }
                let name = relationship.renamedFrom ?? step
                guard olderEntity?.relationship(named: name) != nil else { return nil }
                earlier.append(name)
                current = target
            }
        }
        return earlier
    }
}
