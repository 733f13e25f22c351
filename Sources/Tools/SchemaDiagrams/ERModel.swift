import SchemaKit

/// A schema as an entity-relationship diagram sees it: boxes with rows, and one edge per
/// relationship (a relationship and its inverse are one edge). Every writer (Mermaid, dot,
/// the site's own SVG) draws this, so they agree on what is shown.
public struct ERModel: Sendable, Equatable {
    public struct Row: Sendable, Equatable {
        public var name: String
        /// As the schema writes it, without `?`: `String`, `[String]`, `FlightStatus`.
        public var type: String
        public var isOptional: Bool
        public var isKey: Bool
        public var isForeignKey: Bool
        public var isUnique: Bool
        public var note: String?
    }

    public struct Box: Sendable, Equatable {
        public var name: String
        public var doc: String?
        public var rows: [Row]
    }

    public struct Edge: Sendable, Equatable {
        /// The side that holds the link (the to-one side, or the owner of a many-to-many).
        public var from: String
        public var to: String
        /// How many `to` objects one `from` object relates to, and the reverse.
        public var toCardinality: Cardinality
        public var fromCardinality: Cardinality
        /// The link is part of `from`'s primary key.
        public var isIdentifying: Bool
        /// `origin / flightsFrom`: the relationship, then its inverse when there is one.
        public var label: String
    }

    public enum Cardinality: Sendable, Equatable {
        case zeroOrOne, exactlyOne, zeroOrMore, oneOrMore
    }

    /// Enums and value types, which the dot diagram draws apart.
    public struct TypeBox: Sendable, Equatable {
        public enum Kind: Sendable { case enumeration, value }
        public var name: String
        public var kind: Kind
        public var rows: [String]
        /// Entities with attributes of this type.
        public var usedBy: [String]
    }

    public var name: String
    public var boxes: [Box]
    public var edges: [Edge]
    public var types: [TypeBox]

    public init(schema: Schema) {
        name = schema.name
        boxes = schema.entities.map { Self.box(for: $0, in: schema) }
        edges = Self.edges(of: schema)
        types =
            schema.enums.map { enumType in
                TypeBox(
                    name: enumType.name, kind: .enumeration, rows: enumType.cases.map(\.name),
                    usedBy: Self.users(of: enumType.name, in: schema))
            }
            + schema.values.map { value in
                TypeBox(
                    name: value.name, kind: .value, rows: value.fields.map { "\($0.name): \($0.type)\($0.isOptional ? "?" : "")" },
                    usedBy: Self.users(of: value.name, in: schema))
            }
    }

    static func users(of type: String, in schema: Schema) -> [String] {
        func mentions(_ attributeType: AttributeType) -> Bool {
            switch attributeType {
            case .enumeration(let name), .value(let name): name == type
            case .array(let element): mentions(element)
            default: false
            }
        }
        return schema.entities.filter { $0.attributes.contains { mentions($0.type) } }.map(\.name)
    }

    static func box(for entity: Entity, in schema: Schema) -> Box {
        var rows: [Row] = []
        let keyMembers: [String]
        switch entity.primaryKey {
        case .implicit:
            keyMembers = []
            rows.append(Row(name: Entity.implicitKeyName, type: "Int64", isOptional: false, isKey: true, isForeignKey: false, isUnique: false, note: nil))
        case .members(let members):
            keyMembers = members
        }
        for attribute in entity.attributes {
            var notes: [String] = []
            if attribute.isTransient { notes.append("transient") }
            if attribute.usesExternalStorage { notes.append("external storage") }
            if attribute.isDateOnly { notes.append("day only") }
            if attribute.isEncrypted { notes.append("encrypted") }
            if attribute.isSearchable { notes.append("searchable") }
            if let doc = attribute.doc { notes.append(doc) }
            rows.append(
                Row(
                    name: attribute.name, type: attribute.type.description, isOptional: attribute.isOptional,
                    isKey: keyMembers.contains(attribute.name), isForeignKey: false,
                    isUnique: attribute.isUnique || entity.uniques.contains { $0 == [attribute.name] },
                    note: notes.isEmpty ? nil : notes.joined(separator: "; ")))
        }
        // The key a to-one relationship stores, as generated code names it.
        for relationship in entity.relationships where !relationship.isToMany && !relationship.foreignKeyColumns.isEmpty {
            rows.append(
                Row(
                    name: Naming.keyProperty(of: relationship.name), type: keyType(of: relationship.target, in: schema),
                    isOptional: relationship.isOptional, isKey: keyMembers.contains(relationship.name), isForeignKey: true,
                    isUnique: entity.uniques.contains { $0 == [relationship.name] },
                    note: "\(relationship.name) -> \(relationship.target)"))
        }
        return Box(name: entity.name, doc: entity.doc, rows: rows)
    }

    /// The type of an entity's key: `Int64` for the implicit key, the attribute's type for a
    /// one-attribute key, `Key` for a composite one.
    static func keyType(of entityName: String, in schema: Schema) -> String {
        guard let entity = schema.entity(named: entityName) else { return "Key" }
        switch entity.primaryKey {
        case .implicit: return "Int64"
        case .members(let members):
            guard members.count == 1, let attribute = entity.attribute(named: members[0]) else { return "Key" }
            return attribute.type.description
        }
    }

    static func edges(of schema: Schema) -> [Edge] {
        var edges: [Edge] = []
        var drawn: Set<String> = []
        func id(_ entity: String, _ relationship: String) -> String { "\(entity).\(relationship)" }
        for entity in schema.entities {
            let keyMembers: [String] = if case .members(let members) = entity.primaryKey { members } else { [] }
            for relationship in entity.relationships where !drawn.contains(id(entity.name, relationship.name)) {
                let inverse = relationship.inverse.flatMap { schema.entity(named: relationship.target)?.relationship(named: $0) }
                drawn.insert(id(entity.name, relationship.name))
                if let inverse { drawn.insert(id(relationship.target, inverse.name)) }
                // Draw from the side that holds the link when the other side is to-many.
                if relationship.isToMany, let inverse, !inverse.isToMany {
                    edges.append(
                        edge(
                            from: relationship.target, inverse, to: entity.name, relationship,
                            identifying: schema.entity(named: relationship.target).map { target in
                                if case .members(let members) = target.primaryKey { members.contains(inverse.name) } else { false }
                            } ?? false))
                } else {
                    edges.append(
                        edge(
                            from: entity.name, relationship, to: relationship.target, inverse,
                            identifying: keyMembers.contains(relationship.name)))
                }
            }
        }
        return edges
    }

    static func edge(from source: String, _ relationship: Relationship, to target: String, _ inverse: Relationship?, identifying: Bool) -> Edge {
        func cardinality(_ side: Relationship?) -> Cardinality {
            guard let side else { return .zeroOrMore }  // no inverse: any number may point here
            if side.isToMany { return (side.minCount ?? 0) > 0 ? .oneOrMore : .zeroOrMore }
            return side.isOptional ? .zeroOrOne : .exactlyOne
        }
        return Edge(
            from: source, to: target, toCardinality: cardinality(relationship), fromCardinality: cardinality(inverse),
            isIdentifying: identifying, label: inverse.map { "\(relationship.name) / \($0.name)" } ?? relationship.name)
    }

    /// The entities within `depth` relationships of `entity`, and only the edges between them.
    public func neighbourhood(of entity: String, depth: Int) -> ERModel {
        var reached: Set<String> = [entity]
        var frontier: Set<String> = [entity]
        for _ in 0..<max(0, depth) {
            var next: Set<String> = []
            for edge in edges {
                if frontier.contains(edge.from), !reached.contains(edge.to) { next.insert(edge.to) }
                if frontier.contains(edge.to), !reached.contains(edge.from) { next.insert(edge.from) }
            }
            reached.formUnion(next)
            frontier = next
        }
        var result = self
        result.boxes = boxes.filter { reached.contains($0.name) }
        result.edges = edges.filter { reached.contains($0.from) && reached.contains($0.to) }
        result.types = types.compactMap { type in
            let users = type.usedBy.filter(reached.contains)
            return users.isEmpty ? nil : TypeBox(name: type.name, kind: type.kind, rows: type.rows, usedBy: users)
        }
        return result
    }
}
