/// Hash modifiers for versions Core Data and SwiftData could not tell apart.
///
/// A model's version hash covers, per Apple's "Understanding Versions", each entity's name and
/// each property's: for an attribute its name, optionality, transience, read-only flag and type;
/// for a relationship its destination, counts, delete rule and inverse. Apple's
/// `uniquenessConstraints` page adds an entity's uniqueness constraints; they are left out of
/// `inputs` here, which only adds a modifier where one was not needed. A version that changes
/// only what lies outside (`.allowsCloudEncryption`, `.preserveValueOnDeletion`, `.spotlight`, a
/// default, a transient attribute, which SwiftData does not model at all) hashes as the version
/// before it: SwiftData refuses a plan with two equal version checksums, and Core
/// Data takes the two for one model. Such a version gets a modifier on one attribute, derived
/// from its version number, so every version's hash differs from all earlier ones'.
///
/// A version's modifier depends on it and the versions before it only, so adding a version
/// never changes an older one's.
public enum VersionHashModifiers {
    /// `@Attribute(hashModifier:)` in SwiftData, `versionHashModifier` in Core Data.
    public struct Modifier: Sendable, Hashable {
        public var entity: String
        public var attribute: String
        public var value: String
    }

    /// The modifier of each version that needs one, by version number; versions oldest first.
    ///
    ///     let modifier = VersionHashModifiers.modifiers(history.versions.map(\.schema))[4]   // v4 hashes as v3 would: "v4"
    public static func modifiers(_ versions: [Schema]) -> [Int: Modifier] {
        var seen: Set<[String]> = []
        var result: [Int: Modifier] = [:]
        for schema in versions {
            var hashed = inputs(schema, modifier: nil)
            if seen.contains(hashed), let modifier = carrier(schema) {
                result[schema.version] = modifier
                hashed = inputs(schema, modifier: modifier)
            }
            seen.insert(hashed)
        }
        return result
    }

    /// The first stored attribute of the first entity that has one: it carries the modifier.
    static func carrier(_ schema: Schema) -> Modifier? {
        for entity in schema.entities {
            if let attribute = entity.attributes.first(where: { !$0.isTransient }) {
                return Modifier(entity: entity.name, attribute: attribute.name, value: "v\(schema.version)")
            }
        }
        return nil
    }

    /// What the version hash sees of a schema, one line per entity and property, sorted. Types
    /// are Core Data's (Int8 and Int16 are both Integer 16); transient attributes are left out,
    /// as SwiftData leaves them out of its model. Seeing less than Core Data does only adds a
    /// modifier where none was needed, which costs nothing.
    public static func inputs(_ schema: Schema, modifier: Modifier?) -> [String] {
        var lines: [String] = []
        for entity in schema.entities {
            lines.append("entity \(entity.name)")
            for attribute in entity.attributes where !attribute.isTransient {
                var line = "attribute \(entity.name).\(attribute.name) optional=\(attribute.isOptional) type=\(CoreDataType.of(attribute.type, in: schema).coreData)"
                if let modifier, modifier.entity == entity.name, modifier.attribute == attribute.name { line += " modifier=\(modifier.value)" }
                lines.append(line)
            }
            for relationship in entity.relationships {
                lines.append(
                    "relationship \(entity.name).\(relationship.name) to=\(relationship.target) many=\(relationship.isToMany) optional=\(relationship.isOptional) "
                        + "min=\(relationship.minCount ?? 0) max=\(relationship.maxCount ?? 0) rule=\(relationship.deleteRule.rawValue) inverse=\(relationship.inverse ?? "-")")
            }
        }
        return lines.sorted()
    }
}
