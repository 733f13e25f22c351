import SchemaKit
import TextEscaping

/// Writes an imported schema as schema-language YAML: block style for the structure, a flow
/// mapping per member, the same bytes for the same input.
public enum SchemaYAMLWriter {
    /// `header` lines become comments above the schema (what made it, what was not carried over).
    public static func yaml(_ schema: ImportedSchema, header: [String] = []) -> String {
        var out = ""
        for line in header {
            for part in line.split(separator: "\n", omittingEmptySubsequences: false) {
                out += part.isEmpty ? "#\n" : "# \(commentSafe(String(part)))\n"
            }
        }
        out += "schema: \(scalar(schema.name))\n"
        out += "version: \(schema.version)\n"
        if let doc = schema.doc { out += "doc: \(quoted(doc))\n" }
        if let dialects = schema.dialects { out += "dialects: \(list(dialects))\n" }
        if let history = schema.history { out += "history: \(history)\n" }
        if let online = schema.online { out += "online: \(online)\n" }
        if schema.cloudKit { out += "cloudKit: true\n" }
        if let sync = schema.sync { out += "sync: \(sync)\n" }
        if !schema.enums.isEmpty { out += "enums:\n" + enumsYAML(schema.enums) }
        if !schema.values.isEmpty { out += "values:\n" + valuesYAML(schema.values) }
        out += "entities:\n"
        if schema.entities.isEmpty {
            out.removeLast()
            out += " {}\n"
        }
        for entity in schema.entities { out += entityYAML(entity) }
        return out
    }

    /// The `enums:` section's entries.
    static func enumsYAML(_ enums: [ImportedEnum]) -> String {
        var out = ""
        for item in enums {
            let plain = item.cases.allSatisfy { $0.name == $0.rawValue }
            if item.rawType != nil || item.doc != nil {
                out += "  \(scalar(item.name)):\n"
                if let doc = item.doc { out += "    doc: \(quoted(doc))\n" }
                if let rawType = item.rawType { out += "    type: \(scalar(rawType))\n" }
                let cases = item.cases.map { "\(scalar($0.name)): \(item.rawType == "Int" ? $0.rawValue : quotedIfNeeded($0.rawValue))" }
                out += plain && item.rawType == nil ? "    cases: \(list(item.cases.map(\.name)))\n" : "    cases: {\(cases.joined(separator: ", "))}\n"
            } else if plain {
                out += "  \(scalar(item.name)): \(list(item.cases.map(\.name)))\n"
            } else {
                out += "  \(scalar(item.name)):\n    cases: {\(item.cases.map { "\(scalar($0.name)): \(quotedIfNeeded($0.rawValue))" }.joined(separator: ", "))}\n"
            }
        }
        return out
    }

    /// The `values:` section's entries.
    static func valuesYAML(_ values: [ImportedValueType]) -> String {
        var out = ""
        for value in values {
            out += "  \(scalar(value.name)):\n"
            if let doc = value.doc { out += "    doc: \(quoted(doc))\n" }
            out += "    fields:\n"
            for field in value.fields {
                var options = ["type: \(scalar(field.type))"]
                if field.isOptional { options.append("optional: true") }
                if let jsonKey = field.jsonKey { options.append("jsonKey: \(scalar(jsonKey))") }
                if let doc = field.doc { options.append("doc: \(quoted(doc))") }
                if let value = field.defaultValue {
                    switch value {
                    case .text(let text): options.append("default: \(quotedIfNeeded(text))")
                    case .plain(let text): options.append("default: \(text)")
                    }
                }
                out += "      \(scalar(field.name)): {\(options.joined(separator: ", "))}\n"
            }
        }
        return out
    }

    /// One entry of the `entities:` section.
    static func entityYAML(_ entity: ImportedEntity) -> String {
        var out = ""
        out += "  \(scalar(entity.name)):\n"
        var options: [(String, String)] = []
        if let doc = entity.doc { options.append(("doc", quoted(doc))) }
        if let table = entity.table { options.append(("table", scalar(table))) }
        if let renamed = entity.renamedFrom { options.append(("renamedFrom", scalar(renamed))) }
        if !entity.coreData.isEmpty { options.append(("coreData", coreData(entity.coreData))) }
        for (key, value) in options { out += "    \(key): \(value)\n" }
        if !entity.attributes.isEmpty {
            out += "    attributes:\n"
            let singleKey = entity.primaryKey.count == 1 ? entity.primaryKey[0] : nil
            for attribute in entity.attributes {
                out += "      \(scalar(attribute.name)): \(attributeValue(attribute, isKey: attribute.name == singleKey))\n"
            }
        }
        if !entity.relationships.isEmpty {
            out += "    relationships:\n"
            for relationship in entity.relationships {
                out += "      \(scalar(relationship.name)): \(relationshipValue(relationship))\n"
            }
        }
        let keyIsOneAttribute = entity.primaryKey.count == 1 && entity.attributes.contains { $0.name == entity.primaryKey[0] }
        if !entity.primaryKey.isEmpty, !keyIsOneAttribute { out += "    primaryKey: \(list(entity.primaryKey))\n" }
        if !entity.indexes.isEmpty { out += "    indexes: [\(entity.indexes.map(list).joined(separator: ", "))]\n" }
        if !entity.uniques.isEmpty { out += "    uniques: [\(entity.uniques.map(list).joined(separator: ", "))]\n" }
        return out
    }

    /// The attribute's type, then each option it sets, in `AttributeOption`'s order and spelling.
    static func attributeValue(_ attribute: ImportedAttribute, isKey: Bool) -> String {
        let type = attribute.type + (attribute.isOptional ? "?" : "")
        var options: [(String, String)] = []
        for option in AttributeOption.allCases {
            switch option {
            case .primaryKey: if isKey { options.append((option.key, "true")) }
            case .coreData: if !attribute.coreData.isEmpty { options.append((option.key, coreData(attribute.coreData))) }
            default:
                // `type` and `optional` make the type; a structured value set in `options` has no other place.
                guard option.spelling != .structured, let value = attribute.options[option] else { continue }
                options.append((option.key, yaml(value, spelled: option.spelling)))
            }
        }
        guard !options.isEmpty else { return scalar(type) }
        return "{type: \(scalar(type)), " + options.map { "\($0): \($1)" }.joined(separator: ", ") + "}"
    }

    /// An option's value in YAML: as given when plain, else quoted as its spelling needs.
    static func yaml(_ value: OptionValue, spelled spelling: AttributeOption.Spelling) -> String {
        guard case .text(let text) = value else { return value.content }
        switch spelling {
        case .name: return scalar(text)
        case .prose: return quoted(text)
        case .flag, .plain, .text, .structured: return quotedIfNeeded(text)
        }
    }

    static func relationshipValue(_ relationship: ImportedRelationship) -> String {
        let target = relationship.isToMany ? "[\(relationship.target)]" : relationship.target + (relationship.isOptional ? "?" : "")
        var options: [(String, String)] = []
        for option in RelationshipOption.allCases {
            let value: String? =
                switch option {
                case .to: scalar(target)
                case .inverse: relationship.inverse.map(scalar)
                case .deleteRule: relationship.deleteRule != .nullify ? relationship.deleteRule.rawValue : nil
                case .minCount: relationship.minCount.map(String.init)
                case .maxCount: relationship.maxCount.map(String.init)
                case .column: relationship.column.map(scalar)
                case .renamedFrom: relationship.renamedFrom.map(scalar)
                case .doc: relationship.doc.map(quoted)
                case .coreData: relationship.coreData.isEmpty ? nil : coreData(relationship.coreData)
                }
            if let value { options.append((option.key, value)) }
        }
        return "{" + options.map { "\($0): \($1)" }.joined(separator: ", ") + "}"
    }

    /// `{attributeType: Transformable, userInfo: {attributeValueClassName: CheatType}}`: every
    /// value quoted where a YAML reader could take it for something else.
    static func coreData(_ settings: CoreDataSettings) -> String {
        var parts = settings.attributes.sorted { $0.key < $1.key }.map { "\($0.key): \(quotedIfNeeded($0.value))" }
        if !settings.userInfo.isEmpty {
            parts.append("userInfo: {" + settings.userInfo.sorted { $0.key < $1.key }.map { "\(scalar($0.key)): \(quotedIfNeeded($0.value))" }.joined(separator: ", ") + "}")
        }
        return "{" + parts.joined(separator: ", ") + "}"
    }

    static func list(_ names: [String]) -> String { "[" + names.map(scalar).joined(separator: ", ") + "]" }

    // MARK: - Scalars

    /// Words YAML 1.1 or 1.2 readers take as something other than text.
    private static let reserved: Set<String> = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~",
    ]

    /// Plain when every YAML reader takes it as this text: an identifier, or a type such as
    /// `String?` or `[Track]`; quoted otherwise.
    static func scalar(_ text: String) -> String {
        let plainBytes = text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte == 0x3F
        }
        let startsWell = text.utf8.first.map { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F } ?? false
        if plainBytes, startsWell, !reserved.contains(text.lowercased()) { return text }
        return quoted(text)
    }

    /// Text defaults: plain only when they are plain words.
    static func quotedIfNeeded(_ text: String) -> String {
        let plain = scalar(text)
        return plain == text && !text.hasSuffix("?") ? text : quoted(text)
    }

    static func quoted(_ text: String) -> String { TextEscaping.yaml(text) }

    /// A comment ends at a line break, so control characters become spaces.
    private static func commentSafe(_ line: String) -> String {
        String(
            String.UnicodeScalarView(
                line.unicodeScalars.map { scalar in
                    let value = scalar.value
                    return value < 0x20 || (value >= 0x7F && value <= 0x9F) || value == 0x2028 || value == 0x2029 ? " " : scalar
                }))
    }
}
