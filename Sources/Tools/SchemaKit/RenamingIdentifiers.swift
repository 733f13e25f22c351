import Diagnostics

/// The renaming identifiers of one version's entities and members, as Apple's models need them
/// across a chain of versions (Core Data's `elementID`, SwiftData's `originalName:`).
///
/// Core Data maps a source element to the destination element that has the same renaming
/// identifier, and an element without one is identified by its name. It migrates a store
/// straight from the store's version to the current one, so an element keeps the identifier
/// of the element it was in the version before: after `a` → `b` → `c`, both `b` and `c` say
/// `a`, and `c` still does once the schema drops its `renamedFrom`. A device that skipped
/// versions then keeps its values.
public struct RenamingIdentifiers: Sendable, Hashable {
    /// Entity names to identifiers, where they differ.
    var entities: [String: String] = [:]
    /// `Entity.member` to identifiers, where they differ from the member's name.
    var members: [String: String] = [:]

    /// Two elements of one entity (or two entities) that share an identifier: Core Data could map
    /// one's stored values to the other. Each names the version, the two elements and the
    /// identifier.
    public struct Clash: Sendable, Hashable {
        public var version: Int
        public var first: String
        public var second: String
        public var identifier: String
        public var location: SourceLocation?
    }

    /// The entity's identifier, or nil where it is the entity's name.
    public func entity(_ name: String) -> String? { entities[name] }

    /// The attribute's or relationship's identifier, or nil where it is the member's name.
    public func member(_ name: String, of entity: String) -> String? { members[entity + "." + name] }

    /// The identifiers one version says alone, from its `renamedFrom`: for a single model.
    public init(_ schema: Schema) {
        for entity in schema.entities {
            if let renamed = entity.renamedFrom { entities[entity.name] = renamed }
            for attribute in entity.attributes { if let renamed = attribute.renamedFrom { members[entity.name + "." + attribute.name] = renamed } }
            for relationship in entity.relationships { if let renamed = relationship.renamedFrom { members[entity.name + "." + relationship.name] = renamed } }
        }
    }

    init() {}

    /// Each version's identifiers, oldest first, each element keeping its predecessor's. The
    /// predecessor is the element its `renamedFrom` names in the version before, else the one
    /// of the same name there. Clashes are listed, newest version last.
    ///
    ///     let (identifiers, clashes) = RenamingIdentifiers.chain(history.versions.map(\.schema))
    public static func chain(_ versions: [Schema]) -> (identifiers: [RenamingIdentifiers], clashes: [Clash]) {
        var result: [RenamingIdentifiers] = []
        var clashes: [Clash] = []
        var previous: (schema: Schema, identifiers: RenamingIdentifiers)?
        for schema in versions {
            var identifiers = RenamingIdentifiers()
            var entityOwners: [String: String] = [:]
            for entity in schema.entities {
                let before = previous.flatMap { previous in
                    entity.renamedFrom.flatMap(previous.schema.entity(named:)) ?? previous.schema.entity(named: entity.name)
                }
                let entityIdentifier = before.map { previous!.identifiers.entities[$0.name] ?? $0.name } ?? entity.renamedFrom ?? entity.name
                if entityIdentifier != entity.name { identifiers.entities[entity.name] = entityIdentifier }
                if let owner = entityOwners.updateValue(entity.name, forKey: entityIdentifier) {
                    clashes.append(Clash(version: schema.version, first: owner, second: entity.name, identifier: entityIdentifier, location: entity.location))
                }
                var memberOwners: [String: String] = [:]
                func carry(_ name: String, renamedFrom: String?, existedBefore: (String) -> Bool, location: SourceLocation?) {
                    var identifier = renamedFrom ?? name
                    if let before, let previous {
                        let predecessor = renamedFrom.flatMap { existedBefore($0) ? $0 : nil } ?? (existedBefore(name) ? name : nil)
                        if let predecessor { identifier = previous.identifiers.members[before.name + "." + predecessor] ?? predecessor }
                    }
                    if identifier != name { identifiers.members[entity.name + "." + name] = identifier }
                    if let owner = memberOwners.updateValue(name, forKey: identifier) {
                        clashes.append(Clash(version: schema.version, first: "\(entity.name).\(owner)", second: "\(entity.name).\(name)", identifier: identifier, location: location))
                    }
                }
                for attribute in entity.attributes {
                    carry(attribute.name, renamedFrom: attribute.renamedFrom, existedBefore: { before?.attribute(named: $0) != nil }, location: attribute.location)
                }
                for relationship in entity.relationships {
                    carry(relationship.name, renamedFrom: relationship.renamedFrom, existedBefore: { before?.relationship(named: $0) != nil }, location: relationship.location)
                }
            }
            result.append(identifiers)
            previous = (schema, identifiers)
        }
        return (result, clashes)
    }
}
