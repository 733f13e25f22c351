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
