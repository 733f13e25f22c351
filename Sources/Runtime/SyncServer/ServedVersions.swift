import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

extension SyncServer {
    /// One schema version a server serves: the store opened with that version's generated code
    /// (on PostgreSQL it reads and writes through the version's views), and its schema.
    public struct Version: Sendable {
        /// The store of this version.
        public let store: Store
        /// The schema as this version declares it.
        public let schema: SchemaDescriptor

        /// A version to serve.
        ///
        ///     let v1 = SyncServer.Version(store: v1Store, schema: TodoSchemaV1.descriptor)
        public init(store: Store, schema: SchemaDescriptor) {
            self.store = store
            self.schema = schema
        }
    }
}

/// A version as the server serves it: its synced entities, and where a record without a state
/// in this version finds the clocks the other version kept.
struct ServedVersion: Sendable {
    let store: Store
    let schema: SchemaDescriptor
    let entities: [String: SyncedEntity]
    /// The synced entities in the schema's order: the order of an initial sync.
    let ordered: [SyncedEntity]
    let seeds: VersionSeeds?

    /// This version's entity for each name a change may be recorded under in the history: its
    /// own names, and the other version's for the entities it links (a renamed entity's writes
    /// through the other version are recorded under the other name).
    var historyNames: [String: String] {
        var names = Dictionary(uniqueKeysWithValues: ordered.map { ($0.name, $0.name) })
        for (mine, link) in seeds?.links ?? [:] where names[link.entity] == nil { names[link.entity] = mine }
        return names
    }

    /// Each entity's names for the first step of its scope's path, as the history may record a
    /// change of it: this version's, and the other version's where it was renamed between them.
    var scopeFieldNames: [String: Set<String>] {
        var names: [String: Set<String>] = [:]
        for entity in ordered {
            guard let field = ScopeDepartures.scopeField(of: entity) else { continue }
            var known: Set<String> = [field]
            // `fields`: each of this version's fields, by name, to the other version's name for it.
            if let theirs = seeds?.links[entity.name]?.fields[field] { known.insert(theirs) }
            names[entity.name] = known
        }
        return names
    }

    /// Every version given, each seeded from the version next to it (an online migration
    /// serves two versions at once: the one before it and its own).
    static func all(_ versions: [SyncServer.Version], clock: NodeClock) -> [Int: ServedVersion] {
        let synced = versions.map { $0.schema.entities.compactMap(SyncedEntity.init) }
        var served: [Int: ServedVersion] = [:]
        for (index, version) in versions.enumerated() {
            let neighbour = index + 1 < versions.count ? index + 1 : index - 1
            let seeds = neighbour >= 0 && neighbour != index ? VersionSeeds(this: version.schema, other: versions[neighbour].schema, clock: clock) : nil
            served[version.schema.version] = ServedVersion(
                store: version.store, schema: version.schema, entities: Dictionary(synced[index].map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }),
                ordered: synced[index], seeds: seeds)
        }
        return served
    }
}

/// The states another version keeps, read in this version's names: entities and attributes
/// matched by the newer version's `renamedFrom` (or by name), so that a record first read in
/// this version keeps the clocks its changes had there.
struct VersionSeeds: SyncStateSeeds {
    /// The other version's number, under which its states are kept.
    let version: Int
    /// The other version's synced entities, by name.
    let entities: [String: SyncedEntity]
    /// For each of this version's entities: the other's entity, and the other's name for each of
    /// this version's fields.
    let links: [String: (entity: String, fields: [String: String])]
    /// For each of this version's entities, the other's that a table split moved fields
    /// between, keyed alike: the other's entity, and the other's name for each moved field.
    /// A part's state takes those fields' clocks and counter totals from its source's, and the
    /// source's from its parts', as a renamed entity's do.
    let parts: [String: [(entity: String, fields: [String: String])]]
    let clock: NodeClock

    init?(this: SchemaDescriptor, other: SchemaDescriptor, clock: NodeClock) {
        let mine = this.entities.compactMap(SyncedEntity.init), theirs = other.entities.compactMap(SyncedEntity.init)
        let thisIsNewer = this.version > other.version
        var links: [String: (entity: String, fields: [String: String])] = [:]
        let newerEntities = thisIsNewer ? mine : theirs
        for entity in mine {
            let match = theirs.first { candidate in
                let (newer, older) = thisIsNewer ? (entity, candidate) : (candidate, entity)
                return SyncedEntity.earlierName(of: newer.name, renamedFrom: newer.descriptor.renamedFrom, among: newerEntities.map(\.descriptor.renamedFrom)) == older.name
            }
            guard let match else { continue }
            let (newer, older) = thisIsNewer ? (entity, match) : (match, entity)
            var olderByNewer: [String: String] = [:]
            for field in newer.columns.keys {
                if let earlier = newer.earlierName(of: field), older.columns[earlier] != nil { olderByNewer[field] = earlier }
            }
            let fields = thisIsNewer ? olderByNewer : Dictionary(olderByNewer.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
            links[entity.name] = (match.name, fields)
        }
        var parts: [String: [(entity: String, fields: [String: String])]] = [:]
        let (newer, older) = thisIsNewer ? (mine, theirs) : (theirs, mine)
        let newerByName = Dictionary(newer.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let olderByName = Dictionary(older.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for part in newer {
            guard let source = part.splitSource(in: newerByName, earlier: olderByName) else { continue }
            if thisIsNewer {
                parts[part.name, default: []].append((source.entity, source.fields))
            } else {
                parts[source.entity, default: []].append((part.name, Dictionary(source.fields.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })))
            }
        }
        guard !links.isEmpty || !parts.isEmpty else { return nil }
        version = other.version
        entities = Dictionary(theirs.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.links = links
        self.parts = parts
        self.clock = clock
    }

    func seedsOnlyParts(of entity: SyncedEntity) -> Bool { links[entity.name] == nil && parts[entity.name] != nil }

    func states(of entity: SyncedEntity, keys: [String], in store: isolated Store) throws(SyncStateError) -> [String: SyncRecord] {
        var states: [String: SyncRecord] = [:]
        let primary = links[entity.name]
        // The record itself first (its tombstone is its own), then the fields a split moved.
        for (index, link) in ([primary].compactMap { $0 } + (parts[entity.name] ?? [])).enumerated() {
            guard let other = entities[link.entity] else { continue }
            let texts: [String: String]
            do { texts = try store.syncStates(entity: other.name, keys: keys, version: version) } catch { throw .store(error) }
            let reader = SyncStateRecords(clock: clock)
            for (key, text) in texts {
                let kept = try reader.decode(text, of: other, key: key, in: store)
                let before = states[key]
                var values = before?.values ?? [:], clocks = before?.clocks ?? [:], counters = before?.counterTotals ?? [:]
                for (field, theirs) in link.fields {
                    if let clock = kept.clocks[theirs] {
                        clocks[field] = clock
                        values[field] = kept.values[theirs] ?? .null
                    }
                    if let totals = kept.counterTotals[theirs] { counters[field] = totals }
                }
                // A split's source gives its tombstone only where it is deleted: its clocks here
                // are the moved fields' alone, which an edit of another field does not raise.
                let tombstone = index == 0 && (primary != nil || kept.isDeleted) ? kept.deleted : before?.deleted
                states[key] = SyncRecord(values: values, clocks: clocks, counterTotals: counters, deleted: tombstone)
            }
        }
        return states
    }
}
