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

    static func attributeValue(_ attribute: ImportedAttribute, isKey: Bool) -> String {
        let type = attribute.type + (attribute.isOptional ? "?" : "")
        var options: [(String, String)] = []
        if isKey { options.append(("primaryKey", "true")) }
        if attribute.isUnique { options.append(("unique", "true")) }
        if attribute.isIndexed { options.append(("indexed", "true")) }
        if attribute.isSearchable { options.append(("searchable", "true")) }
        if let value = attribute.defaultValue {
            switch value {
            case .text(let text): options.append(("default", quotedIfNeeded(text)))
            case .plain(let text): options.append(("default", text))
            }
        }
        if let value = attribute.backfill {
            switch value {
            case .text(let text): options.append(("backfill", quotedIfNeeded(text)))
            case .plain(let text): options.append(("backfill", text))
            }
        }
        if let precision = attribute.precision { options.append(("precision", String(precision))) }
        if let scale = attribute.scale { options.append(("scale", String(scale))) }
        if attribute.isDateOnly { options.append(("dateOnly", "true")) }
        if attribute.isTransient { options.append(("transient", "true")) }
        if attribute.usesExternalStorage { options.append(("externalStorage", "true")) }
        if attribute.preservesValueOnDeletion { options.append(("preserveValueOnDeletion", "true")) }
        if let encrypt = attribute.encrypt { options.append(("encrypt", encrypt)) }
        if let column = attribute.column { options.append(("column", scalar(column))) }
        if let jsonKey = attribute.jsonKey { options.append(("jsonKey", scalar(jsonKey))) }
        if let renamed = attribute.renamedFrom { options.append(("renamedFrom", scalar(renamed))) }
        if let movedFrom = attribute.movedFrom { options.append(("movedFrom", scalar(movedFrom))) }
        if let doc = attribute.doc { options.append(("doc", quoted(doc))) }
        if !attribute.coreData.isEmpty { options.append(("coreData", coreData(attribute.coreData))) }
        guard !options.isEmpty else { return scalar(type) }
        return "{type: \(scalar(type)), " + options.map { "\($0): \($1)" }.joined(separator: ", ") + "}"
    }

    static func relationshipValue(_ relationship: ImportedRelationship) -> String {
        let target = relationship.isToMany ? "[\(relationship.target)]" : relationship.target + (relationship.isOptional ? "?" : "")
        var options: [(String, String)] = [("to", scalar(target))]
        if let inverse = relationship.inverse { options.append(("inverse", scalar(inverse))) }
        if relationship.deleteRule != .nullify { options.append(("deleteRule", relationship.deleteRule.rawValue)) }
        if let minCount = relationship.minCount { options.append(("minCount", String(minCount))) }
        if let maxCount = relationship.maxCount { options.append(("maxCount", String(maxCount))) }
        if let column = relationship.column { options.append(("column", scalar(column))) }
        if let renamed = relationship.renamedFrom { options.append(("renamedFrom", scalar(renamed))) }
        if let doc = relationship.doc { options.append(("doc", quoted(doc))) }
        if !relationship.coreData.isEmpty { options.append(("coreData", coreData(relationship.coreData))) }
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
