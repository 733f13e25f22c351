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

    /// What the chain reads of one version: its number, and each entity's and member's name,
    /// `renamedFrom` and place. Importers that hold no `Schema` describe their versions so.
    public struct VersionShape: Sendable {
        public struct Element: Sendable {
            public var name: String
            public var renamedFrom: String?
            /// An identifier given as it is (`coreData: {elementID: …}`, what an imported model
            /// said): it wins over the derived one, and later versions carry it on.
            public var given: String?
            public var location: SourceLocation?
            public init(name: String, renamedFrom: String?, given: String? = nil, location: SourceLocation? = nil) {
                self.name = name
                self.renamedFrom = renamedFrom
                self.given = given
                self.location = location
            }
        }
        public struct EntityShape: Sendable {
            public var entity: Element
            public var attributes: [Element]
            public var relationships: [Element]
            public init(entity: Element, attributes: [Element], relationships: [Element]) {
                self.entity = entity
                self.attributes = attributes
                self.relationships = relationships
            }
        }
        public var version: Int
        public var entities: [EntityShape]
        public init(version: Int, entities: [EntityShape]) {
            self.version = version
            self.entities = entities
        }

        public init(_ schema: Schema) {
            self.version = schema.version
            self.entities = schema.entities.map { entity in
                EntityShape(
                    entity: Element(name: entity.name, renamedFrom: entity.renamedFrom, given: entity.coreData?.attributes["elementID"], location: entity.location),
                    attributes: entity.attributes.map {
                        Element(name: $0.name, renamedFrom: $0.renamedFrom, given: $0.coreData?.attributes["elementID"], location: $0.location)
                    },
                    relationships: entity.relationships.map {
                        Element(name: $0.name, renamedFrom: $0.renamedFrom, given: $0.coreData?.attributes["elementID"], location: $0.location)
                    })
            }
        }

        func entity(named name: String) -> EntityShape? { entities.first { $0.entity.name == name } }
    }

    /// Each version's identifiers, oldest first, each element keeping its predecessor's. The
    /// predecessor is the element its `renamedFrom` names in the version before, else the one
    /// of the same name there. Clashes are listed, newest version last.
    ///
    ///     let (identifiers, clashes) = RenamingIdentifiers.chain(history.versions.map(\.schema))
    public static func chain(_ versions: [Schema]) -> (identifiers: [RenamingIdentifiers], clashes: [Clash]) {
        chain(shapes: versions.map(VersionShape.init))
    }

    /// The chain over versions described by their shapes.
    public static func chain(shapes versions: [VersionShape]) -> (identifiers: [RenamingIdentifiers], clashes: [Clash]) {
        var result: [RenamingIdentifiers] = []
        var clashes: [Clash] = []
        var previous: (shape: VersionShape, identifiers: RenamingIdentifiers)?
        for shape in versions {
            var identifiers = RenamingIdentifiers()
            var entityOwners: [String: String] = [:]
            for entity in shape.entities {
                let name = entity.entity.name
                let before = previous.flatMap { previous in
                    entity.entity.renamedFrom.flatMap(previous.shape.entity(named:)) ?? previous.shape.entity(named: name)
                }
                let entityIdentifier =
                    entity.entity.given ?? before.map { previous!.identifiers.entities[$0.entity.name] ?? $0.entity.name } ?? entity.entity.renamedFrom ?? name
                if entityIdentifier != name { identifiers.entities[name] = entityIdentifier }
                if let owner = entityOwners.updateValue(name, forKey: entityIdentifier) {
                    clashes.append(Clash(version: shape.version, first: owner, second: name, identifier: entityIdentifier, location: entity.entity.location))
                }
                var memberOwners: [String: String] = [:]
                func carry(_ member: VersionShape.Element, existedBefore: (String) -> Bool) {
                    var identifier = member.renamedFrom ?? member.name
                    if let given = member.given {
                        identifier = given
                    } else if let before, let previous {
                        let predecessor = member.renamedFrom.flatMap { existedBefore($0) ? $0 : nil } ?? (existedBefore(member.name) ? member.name : nil)
                        if let predecessor { identifier = previous.identifiers.members[before.entity.name + "." + predecessor] ?? predecessor }
                    }
                    if identifier != member.name { identifiers.members[name + "." + member.name] = identifier }
                    if let owner = memberOwners.updateValue(member.name, forKey: identifier) {
                        clashes.append(Clash(version: shape.version, first: "\(name).\(owner)", second: "\(name).\(member.name)", identifier: identifier, location: member.location))
                    }
                }
                for attribute in entity.attributes {
                    carry(attribute, existedBefore: { candidate in before?.attributes.contains { $0.name == candidate } ?? false })
                }
                for relationship in entity.relationships {
                    carry(relationship, existedBefore: { candidate in before?.relationships.contains { $0.name == candidate } ?? false })
                }
            }
            result.append(identifiers)
            previous = (shape, identifiers)
        }
        return (result, clashes)
    }
}
