/// How an entity syncs between devices and a server, as the schema's `sync:` block declares it:
/// the rows each user gets, and how concurrent changes are settled. Generated metadata carries
/// it on the entity (`EntityDescriptor.sync`); nil for an entity that does not sync.
///
///     EntityDescriptor(..., sync: SyncDescriptor(scope: .user(path: ["list", "owner"]), counters: ["likes"]))
public struct SyncDescriptor: Sendable, Hashable {
    /// The rows of the entity a user gets.
    public enum Scope: Sendable, Hashable {
        /// Every row, for every user (shared reference data).
        case all
        /// The rows whose value at `path` is the user's id: to-one relationships, then an
        /// attribute (`list.owner == $user` is `["list", "owner"]`).
        case user(path: [String])
    }

    /// Who wins when two nodes changed the same attribute of a record apart.
    public enum Conflicts: String, Sendable, Hashable, CaseIterable {
        /// The later change wins, attribute by attribute, by its hybrid logical clock.
        case lastWriterWins
        /// The server's value stands: a device's change applies only over the value it had seen.
        case serverWins
    }

    /// The rows each user gets.
    public let scope: Scope
    /// How conflicts are settled, for every attribute but the counters.
    public let conflicts: Conflicts
    /// Integer attributes whose changes add up instead of replacing each other.
    public let counters: [String]

    /// A declaration as generated metadata writes it.
    ///
    ///     let sync = SyncDescriptor(scope: .user(path: ["owner"]), conflicts: .serverWins)
    public init(scope: Scope, conflicts: Conflicts = .lastWriterWins, counters: [String] = []) {
        self.scope = scope
        self.conflicts = conflicts
        self.counters = counters
    }
}
