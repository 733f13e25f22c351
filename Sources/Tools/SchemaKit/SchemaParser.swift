import Diagnostics
import SQLDialects
import YAMLReader

/// A mapping's entries by key, with the nodes kept for locations.
struct Keyed: Sendable {
    /// The mapping node itself (or the scalar a shorthand stood for).
    let node: YAMLNode
    /// The mapping's pairs in document order, shared with the YAML tree rather than copied.
    /// Lookups scan them: option mappings are small, the YAML reader has already refused
    /// duplicate keys, and callers only ask for allowed keys, so unknown ones never match.
    private let pairs: [YAMLPair]
    /// How many keys were allowed names.
    let knownKeyCount: Int

    init(node: YAMLNode, pairs: [YAMLPair] = [], knownKeyCount: Int = 0) {
        self.node = node
        self.pairs = pairs
        self.knownKeyCount = knownKeyCount
    }

    private func pair(_ key: String) -> YAMLPair? {
        for pair in pairs {
            if case .scalar(let text, _) = pair.key.content, text == key { return pair }
        }
        return nil
    }

    subscript(key: String) -> YAMLNode? { pair(key)?.value }
    func keyNode(_ key: String) -> YAMLNode? { pair(key)?.key }
    func has(_ key: String) -> Bool { pair(key) != nil }
}

/// A parsed schema element with the YAML it came from, so later checks can point at it.
struct Parsed<Model: Sendable>: Sendable {
    var model: Model
    /// The node of the element's name (its mapping key).
    let nameNode: YAMLNode
    let options: Keyed

    /// The node of an option's value, falling back to the element's name.
    func node(_ option: String) -> YAMLNode { options[option] ?? nameNode }
}

/// Turns a YAML tree into a `Schema`, reporting every problem it finds instead of stopping at
/// the first. Structural checks happen while reading; `SchemaParser+Validation` checks what needs
/// the whole schema (inverses, keys, names after deriving tables and columns).
struct SchemaParser: Sendable {
    let file: String
    var diagnostics = DiagnosticBag()

    // Declared type names, collected before anything else so types can be resolved in one pass.
    var enumNodes: [String: YAMLNode] = [:]
    var valueNodes: [String: YAMLNode] = [:]
    var entityNodes: [String: YAMLNode] = [:]

    var enums: [Parsed<EnumType>] = []
    var values: [Parsed<ValueType>] = []
    var entities: [Parsed<Entity>] = []
    /// Per entity name, its attributes and relationships with their nodes.
    var attributeNodes: [String: [Parsed<Attribute>]] = [:]
    var relationshipNodes: [String: [Parsed<Relationship>]] = [:]
    /// Type names some attribute or field uses, to warn about unused enums and values.
    var usedTypeNames: Set<String> = []
    /// Positions in `enums`, `values` and `entities` by name, filled once each list is parsed,
    /// so checks stay linear in the size of the schema however hostile it is.
    var enumIndexByName: [String: Int] = [:]
    var valueIndexByName: [String: Int] = [:]
    var entityIndexByName: [String: Int] = [:]
    /// Per entity, the position of each relationship (the same in `Entity.relationships` and
    /// `relationshipNodes`).
    var relationshipIndexByName: [String: [String: Int]] = [:]

    static let rootKeys = ["schema", "version", "doc", "dialects", "history", "online", "grants", "cloudKit", "sync", "enums", "values", "entities"]

    init(file: String) {
        self.file = file
    }

    // MARK: - Diagnostics helpers

    func location(_ node: YAMLNode) -> SourceLocation {
        SourceLocation(file: file, line: node.start.line, column: node.start.column, length: node.length)
    }

    mutating func error(
        _ code: SchemaDiagnosticCode, _ message: String, at node: YAMLNode, notes: [Diagnostic.Note] = []
    ) {
        diagnostics.error(code, message, at: location(node), notes: notes)
    }

    mutating func warning(
        _ code: SchemaDiagnosticCode, _ message: String, at node: YAMLNode, notes: [Diagnostic.Note] = []
    ) {
        diagnostics.warning(code, message, at: location(node), notes: notes)
    }

    func note(_ message: String, at node: YAMLNode) -> Diagnostic.Note {
        Diagnostic.Note(message, at: location(node))
    }

    // MARK: - Reading nodes

    /// Reads a mapping, reporting a node of another kind, non-scalar keys and unknown keys.
    mutating func keyed(_ node: YAMLNode, allowed: [String], what: some CustomStringConvertible) -> Keyed? {
        guard let pairs = node.pairs else {
            error(.wrongKind, "expected a mapping for \(what), found \(node.kindDescription)", at: node)
            return nil
        }
        var knownKeyCount = 0
        for pair in pairs {
            guard let key = pair.key.scalarText else {
                error(.wrongKind, "keys in \(what) must be plain names, found \(pair.key.kindDescription)", at: pair.key)
                continue
            }
            guard allowed.contains(key) else {
                error(.unknownKey, "unknown key '\(key)' in \(what)\(Suggestion.hint(for: key, in: allowed))", at: pair.key)
                continue
            }
            knownKeyCount += 1
        }
        return Keyed(node: node, pairs: pairs, knownKeyCount: knownKeyCount)
    }

    /// A member written either as its main value alone (`name: String?`) or as a mapping of
    /// options (`name: {type: String?, unique: true}`): its options and the main value's node.
    /// A main value of the wrong kind is left for the caller, which knows what it expects.
    mutating func shorthandOrOptions(_ node: YAMLNode, mainKey: String, allowed: [String], what: some CustomStringConvertible) -> (options: Keyed, main: YAMLNode?)? {
        guard node.pairs != nil else { return (Keyed(node: node), node) }
        guard let options = keyed(node, allowed: allowed, what: what) else { return nil }
        return (options, options[mainKey])
    }

    /// The named entries of a mapping in document order (entities, attributes, ...); null means none.
    mutating func namedEntries(_ node: YAMLNode?, what: some CustomStringConvertible) -> [YAMLPair] {
        guard let node, !node.isNull else { return [] }
        guard let pairs = node.pairs else {
            error(.wrongKind, "expected a mapping of \(what), found \(node.kindDescription)", at: node)
            return []
        }
        // Nearly always every name is a scalar, and the tree's array is returned as it is.
        guard pairs.contains(where: { $0.key.stringValue == nil }) else { return pairs }
        return pairs.filter { pair in
            guard pair.key.stringValue != nil else {
                error(.wrongKind, "names of \(what) must be plain scalars, found \(pair.key.kindDescription)", at: pair.key)
                return false
            }
            return true
        }
    }

    /// A boolean option; absent means false.
    mutating func flag(_ keyed: Keyed, _ key: String, what: some CustomStringConvertible) -> Bool {
        guard let node = keyed[key] else { return false }
        guard let value = node.boolValue else {
            let found = node.scalarText.map { "'\($0)'" } ?? node.kindDescription
            let hint =
                ["yes", "no", "on", "off", "y", "n"].contains(node.scalarText?.lowercased() ?? "")
                ? " (YAML 1.2 reads yes/no as text)" : ""
            error(.wrongKind, "'\(key)' in \(what) expects true or false, found \(found)\(hint)", at: node)
            return false
        }
        return value
    }

    /// A text option such as `doc`.
    mutating func text(_ keyed: Keyed, _ key: String, what: some CustomStringConvertible) -> String? {
        guard let node = keyed[key] else { return nil }
        guard let value = node.stringValue else {
            error(.wrongKind, "'\(key)' in \(what) expects text, found \(node.kindDescription)", at: node)
            return nil
        }
        return value
    }

    /// A non-empty name option such as `column` or `table`.
    mutating func name(_ keyed: Keyed, _ key: String, what: some CustomStringConvertible) -> String? {
        guard let value = text(keyed, key, what: what) else { return nil }
        if let problem = Naming.problemWithDatabaseName(value) {
            error(
                .invalidValue, "'\(key)' in \(what) \(problem); names may hold any printable characters, but no control characters, line breaks, or leading or trailing spaces",
                at: keyed[key] ?? keyed.node)
            return nil
        }
        return value
    }

    /// An identifier option such as `inverse` or `renamedFrom`.
    mutating func identifier(_ keyed: Keyed, _ key: String, what: some CustomStringConvertible) -> String? {
        guard let value = text(keyed, key, what: what) else { return nil }
        guard Naming.isIdentifier(value) else {
            error(.invalidIdentifier, "'\(key)' in \(what) must be an identifier, found '\(value)'", at: keyed[key] ?? keyed.node)
            return nil
        }
        return value
    }

    /// A non-negative integer option such as `minCount`.
    mutating func count(_ keyed: Keyed, _ key: String, what: some CustomStringConvertible) -> Int? {
        guard let node = keyed[key] else { return nil }
        guard let value = node.integerValue, value >= 0, value <= Int64(Int32.max) else {
            error(.wrongKind, "'\(key)' in \(what) expects a whole number of 0 or more, found \(node.scalarText.map { "'\($0)'" } ?? node.kindDescription)", at: node)
            return nil
        }
        return Int(value)
    }

    /// Checks a declared name: an identifier, and for types UpperCamelCase by convention.
    mutating func checkName(_ node: YAMLNode, kind: String, isType: Bool) -> String {
        let name = node.scalarText ?? ""
        guard Naming.isIdentifier(name) else {
            error(.invalidIdentifier, "'\(name)' is not a valid \(kind) name: use ASCII letters, digits and '_', not starting with a digit", at: node)
            return name
        }
        if isType, !Naming.isUpperCamelCase(name) {
            warning(.namingConvention, "\(kind) name '\(name)' should start with an uppercase letter (UpperCamelCase)", at: node)
        } else if !isType, !Naming.isLowerCamelCase(name) {
            warning(.namingConvention, "\(kind) name '\(name)' should start with a lowercase letter (lowerCamelCase)", at: node)
        }
        return name
    }

    // MARK: - Root

    mutating func parse(root: YAMLNode) -> Schema? {
        guard let keyed = keyed(root, allowed: Self.rootKeys, what: "the schema") else { return nil }
        let schemaName = parseSchemaName(keyed)
        let version = parseVersion(keyed)
        let doc = text(keyed, "doc", what: "the schema")
        let dialects = parseDialects(keyed["dialects"])
        let (recordsHistory, recordsInsertValues) = parseHistory(keyed)
        let online = keyed["online"] == nil ? nil : flag(keyed, "online", what: "the schema")
        let grants = keyed["grants"].map { parseGrants($0) }
        let cloudKit = flag(keyed, "cloudKit", what: "the schema")

        prescanTypeNames(keyed)
        parseEnums(keyed["enums"])
        parseValues(keyed["values"])
        if keyed["entities"] == nil {
            error(.missingKey, "the schema has no 'entities'; declare at least one entity", at: root)
        }
        parseEntities(keyed["entities"])
        validate()
        if cloudKit { checkCloudKitRules() }
        let sync = keyed["sync"].flatMap { parseSync($0) }
        if !recordsHistory, let historyNode = keyed["history"] {
            let preserved = entities.flatMap { entity in
                entity.model.attributes.filter(\.preservesValueOnDeletion).map { "\(entity.model.name).\($0.name)" }
            }
            if !preserved.isEmpty {
                warning(.redundant, "'history: false' records no history, so 'preserveValueOnDeletion' on \(preserved.joined(separator: ", ")) keeps nothing; remove one or the other", at: historyNode)
            }
        }

        return Schema(
            name: schemaName ?? "",
            version: version ?? 0,
            doc: doc,
            enums: enums.map(\.model),
            values: values.map(\.model),
            entities: entities.map(\.model),
            dialects: dialects,
            recordsHistory: recordsHistory,
            recordsInsertValues: recordsInsertValues,
            online: online,
            grants: grants,
            cloudKit: cloudKit,
            sync: sync,
            sourcePath: file)
    }

    /// `grants: {app: write, reporting: read}`: each key a role, each value read or write.
    private mutating func parseGrants(_ node: YAMLNode) -> [Grant] {
        guard let pairs = node.pairs else {
            error(.wrongKind, "'grants' expects roles and what each may do, such as {app: write, reporting: read}", at: node)
            return []
        }
        var grants: [Grant] = []
        for pair in pairs {
            let (key, value) = (pair.key, pair.value)
            let role = key.scalarText ?? ""
            if let problem = Naming.problemWithDatabaseName(role) {
                error(.invalidValue, "role '\(role)' in 'grants' \(problem)", at: key)
                continue
            }
            let known = Grant.Access.allCases.map(\.rawValue)
            guard let text = value.stringValue, let access = Grant.Access(rawValue: text) else {
                error(
                    .invalidValue,
                    "'\(role)' in 'grants' expects one of \(known.joined(separator: ", ")), found \(value.scalarText.map { "'\($0)'" } ?? value.kindDescription)\(Suggestion.hint(for: value.scalarText ?? "", in: known))",
                    at: value)
                continue
            }
            grants.append(Grant(role: role, access: access))
        }
        return grants.sorted { $0.role < $1.role }
    }

    /// `history: true|false`, or `history: {insertValues: false}` (recorded, inserts by key only).
    private mutating func parseHistory(_ keyed: Keyed) -> (records: Bool, insertValues: Bool) {
        guard let node = keyed["history"] else { return (true, true) }
        guard node.pairs != nil else { return (flag(keyed, "history", what: "the schema"), true) }
        guard let options = self.keyed(node, allowed: ["insertValues"], what: "'history'") else { return (true, true) }
        return (true, options["insertValues"] == nil ? true : flag(options, "insertValues", what: "'history'"))
    }

    /// `dialects: [sqlite, postgres]`: each a known engine, none twice.
    private mutating func parseDialects(_ node: YAMLNode?) -> [SQLDialectName]? {
        guard let node else { return nil }
        let items = node.items ?? (node.scalarText != nil ? [node] : nil)
        guard let items, !items.isEmpty else {
            error(.wrongKind, "'dialects' expects a list such as [sqlite, postgres]", at: node)
            return nil
        }
        var result: [SQLDialectName] = []
        for item in items {
            guard let text = item.stringValue, let dialect = SQLDialectName(rawValue: text) else {
                let known = SQLDialectName.allCases.map(\.rawValue)
                error(
                    .invalidValue,
                    "unknown dialect \(item.scalarText.map { "'\($0)'" } ?? item.kindDescription); expected one of \(known.joined(separator: ", "))\(Suggestion.hint(for: item.scalarText ?? "", in: known))",
                    at: item)
                continue
            }
            if result.contains(dialect) {
                warning(.redundant, "dialect '\(text)' is listed twice", at: item)
                continue
            }
            result.append(dialect)
        }
        return result
    }

    private mutating func parseSchemaName(_ keyed: Keyed) -> String? {
        guard let node = keyed["schema"] else {
            error(.missingKey, "the schema has no 'schema' key naming it (an UpperCamelCase identifier, e.g. 'schema: Flights')", at: keyed.node)
            return nil
        }
        guard let name = node.stringValue else {
            error(.wrongKind, "'schema' expects a name, found \(node.kindDescription)", at: node)
            return nil
        }
        guard Naming.isIdentifier(name), Naming.isUpperCamelCase(name) else {
            error(.invalidIdentifier, "schema name '\(name)' must be an UpperCamelCase identifier such as 'Flights'", at: node)
            return nil
        }
        return name
    }

    private mutating func parseVersion(_ keyed: Keyed) -> Int? {
        guard let node = keyed["version"] else {
            error(.missingKey, "the schema has no 'version'; start at 'version: 1' and bump it on every change", at: keyed.node)
            return nil
        }
        guard let value = node.integerValue, value >= 1, value <= Int64(Int32.max) else {
            error(.invalidVersion, "'version' must be a positive whole number, found \(node.scalarText.map { "'\($0)'" } ?? node.kindDescription)", at: node)
            return nil
        }
        return Int(value)
    }

    /// Collects the names of enums, values and entities so types resolve in any order.
    private mutating func prescanTypeNames(_ keyed: Keyed) {
        var seen: [String: (node: YAMLNode, kind: String)] = [:]
        func collect(_ node: YAMLNode?, kind: String, into table: inout [String: YAMLNode], parser: inout SchemaParser) {
            for pair in node?.pairs ?? [] {
                guard let name = pair.key.stringValue else { continue }
                if let builtin = ScalarType(rawValue: name) {
                    parser.error(.nameCollision, "\(kind) '\(name)' has the name of the built-in type \(builtin.rawValue); choose another name", at: pair.key)
                    continue
                }
                let folded = name.lowercased()
                if let other = seen[folded] {
                    let how = other.node.scalarText == name ? "" : " (names may not differ only in case: generated file names would collide)"
                    parser.error(
                        .nameCollision, "\(kind) '\(name)' has the same name as \(other.kind) '\(other.node.scalarText ?? "")'\(how)",
                        at: pair.key, notes: [parser.note("\(other.kind) '\(other.node.scalarText ?? "")' declared here", at: other.node)])
                    continue
                }
                seen[folded] = (pair.key, kind)
                table[name] = pair.key
            }
        }
        var enumTable: [String: YAMLNode] = [:], valueTable: [String: YAMLNode] = [:], entityTable: [String: YAMLNode] = [:]
        collect(keyed["enums"], kind: "enum", into: &enumTable, parser: &self)
        collect(keyed["values"], kind: "value type", into: &valueTable, parser: &self)
        collect(keyed["entities"], kind: "entity", into: &entityTable, parser: &self)
        (enumNodes, valueNodes, entityNodes) = (enumTable, valueTable, entityTable)
    }

    // MARK: - Enums

    static let enumKeys = ["type", "cases", "doc"]

    private mutating func parseEnums(_ node: YAMLNode?) {
        for pair in namedEntries(node, what: "enums") {
            let name = checkName(pair.key, kind: "enum", isType: true)
            let what = "enum '\(name)'"
            // Shorthand: `Status: [a, b]`.
            var casesNode: YAMLNode? = pair.value
            var keyed = Keyed(node: pair.value)
            if pair.value.items == nil {
                guard let full = self.keyed(pair.value, allowed: Self.enumKeys, what: what) else { continue }
                keyed = full
                casesNode = full["cases"]
            }
            var rawType = EnumType.RawType.string
            if let typeNode = keyed["type"] {
                switch typeNode.stringValue {
                case "String": rawType = .string
                case "Int": rawType = .int
                default:
                    error(.invalidType, "the raw type of \(what) must be String or Int, found \(typeNode.scalarText.map { "'\($0)'" } ?? typeNode.kindDescription)", at: typeNode)
                }
            }
            let doc = text(keyed, "doc", what: what)
            guard let casesNode else {
                error(.missingKey, "\(what) has no 'cases'", at: pair.key)
                continue
            }
            let cases = parseCases(casesNode, rawType: rawType, what: what)
            if cases.isEmpty, casesNode.items != nil || casesNode.pairs != nil {
                error(.invalidValue, "\(what) has no cases; an enum needs at least one", at: casesNode)
            }
            let model = EnumType(name: name, rawType: rawType, cases: cases, doc: doc, location: location(pair.key))
            enums.append(Parsed(model: model, nameNode: pair.key, options: keyed))
        }
        enumIndexByName = Self.indexByName(enums.map(\.model.name))
    }

    private mutating func parseCases(_ node: YAMLNode, rawType: EnumType.RawType, what: some CustomStringConvertible) -> [EnumType.Case] {
        var cases: [EnumType.Case] = []
        var names: [String: YAMLNode] = [:]
        var rawValues: [EnumType.RawValue: YAMLNode] = [:]
        func add(_ nameNode: YAMLNode, _ raw: EnumType.RawValue, rawNode: YAMLNode, parser: inout SchemaParser) {
            guard let name = nameNode.stringValue else {
                parser.error(.wrongKind, "cases of \(what) must be names, found \(nameNode.kindDescription)", at: nameNode)
                return
            }
            guard Naming.isIdentifier(name) else {
                parser.error(.invalidIdentifier, "'\(name)' is not a valid case name in \(what): use ASCII letters, digits and '_', not starting with a digit", at: nameNode)
                return
            }
            if let first = names[name] {
                parser.error(.nameCollision, "case '\(name)' appears twice in \(what)", at: nameNode, notes: [parser.note("first here", at: first)])
                return
            }
            if let first = rawValues[raw] {
                parser.error(.nameCollision, "case '\(name)' of \(what) has the same raw value as case '\(first.scalarText ?? "")'", at: rawNode, notes: [parser.note("first here", at: first)])
            }
            names[name] = nameNode
            rawValues[raw] = nameNode
            cases.append(EnumType.Case(name: name, rawValue: raw, location: parser.location(nameNode)))
        }
        if let items = node.items {
            for (index, item) in items.enumerated() {
                let raw: EnumType.RawValue = rawType == .int ? .int(Int64(index)) : .string(item.stringValue ?? "")
                add(item, raw, rawNode: item, parser: &self)
            }
        } else if let pairs = node.pairs {
            for pair in pairs {
                switch rawType {
                case .string:
                    guard let raw = pair.value.stringValue else {
                        error(.wrongKind, "the raw value of case '\(pair.key.scalarText ?? "")' in \(what) must be text, found \(pair.value.kindDescription)", at: pair.value)
                        continue
                    }
                    add(pair.key, .string(raw), rawNode: pair.value, parser: &self)
                case .int:
                    guard let raw = pair.value.integerValue else {
                        error(
                            .wrongKind,
                            "the raw value of case '\(pair.key.scalarText ?? "")' in \(what) must be a whole number, found \(pair.value.scalarText.map { "'\($0)'" } ?? pair.value.kindDescription)",
                            at: pair.value)
                        continue
                    }
                    add(pair.key, .int(raw), rawNode: pair.value, parser: &self)
                }
            }
        } else {
            error(.wrongKind, "'cases' of \(what) expects a list of names or a mapping of name: raw value, found \(node.kindDescription)", at: node)
        }
        return cases
    }

    // MARK: - Values

    static let valueKeys = ["fields", "doc"]
    static let fieldKeys = ["type", "optional", "default", "jsonKey", "doc"]

    private mutating func parseValues(_ node: YAMLNode?) {
        var pendingDefaults: [(value: Int, field: Int, node: YAMLNode, what: String)] = []
        for pair in namedEntries(node, what: "value types") {
            let name = checkName(pair.key, kind: "value type", isType: true)
            let what = "value type '\(name)'"
            // Long form `{fields: {...}, doc: ...}` when `fields` holds a mapping; else every key is a field.
            var keyed = Keyed(node: pair.value)
            var fieldsNode: YAMLNode? = pair.value
            if let pairs = pair.value.pairs, pairs.contains(where: { $0.key.scalarText == "fields" && $0.value.pairs != nil }) {
                guard let full = self.keyed(pair.value, allowed: Self.valueKeys, what: what) else { continue }
                keyed = full
                fieldsNode = full["fields"]
            }
            var fields: [ValueType.Field] = []
            var jsonKeys: [String: YAMLNode] = [:]
            for fieldPair in namedEntries(fieldsNode, what: "fields of \(what)") {
                let fieldName = checkName(fieldPair.key, kind: "field", isType: false)
                let fieldWhat = "field '\(fieldName)' of \(what)"
                guard let (options, typeNode) = shorthandOrOptions(fieldPair.value, mainKey: "type", allowed: Self.fieldKeys, what: fieldWhat) else { continue }
                guard let typeNode else {
                    error(.missingKey, "\(fieldWhat) has no 'type'", at: fieldPair.key)
                    continue
                }
                guard let (type, optionalFromType) = resolveType(typeNode, what: fieldWhat, allowEntities: false) else { continue }
                let isOptional = optionality(options, fromType: optionalFromType, what: fieldWhat)
                let jsonKey = self.name(options, "jsonKey", what: fieldWhat) ?? fieldName
                if let first = jsonKeys[jsonKey] {
                    error(
                        .nameCollision, "\(fieldWhat) has the JSON key '\(jsonKey)' that another field uses", at: options.keyNode("jsonKey") ?? fieldPair.key,
                        notes: [note("first used here", at: first)])
                }
                jsonKeys[jsonKey] = options.keyNode("jsonKey") ?? fieldPair.key
                if let defaultNode = options["default"] {
                    pendingDefaults.append((values.count, fields.count, defaultNode, fieldWhat))
                }
                fields.append(
                    ValueType.Field(
                        name: fieldName, type: type, isOptional: isOptional, defaultValue: nil, jsonKey: jsonKey,
                        doc: text(options, "doc", what: fieldWhat), location: location(fieldPair.key)))
            }
            if fields.isEmpty {
                error(.invalidValue, "\(what) has no fields", at: pair.key)
            }
            let model = ValueType(name: name, fields: fields, doc: text(keyed, "doc", what: what), location: location(pair.key))
            values.append(Parsed(model: model, nameNode: pair.key, options: keyed))
        }
        valueIndexByName = Self.indexByName(values.map(\.model.name))
        // Defaults may name other value types, so they are checked once all are read.
        for pending in pendingDefaults {
            let field = values[pending.value].model.fields[pending.field]
            values[pending.value].model.fields[pending.field].defaultValue =
                checkDefault(pending.node, type: field.type, isOptional: field.isOptional, what: pending.what)
        }
        checkValueCycles()
    }

    /// A Swift struct cannot contain itself except through an array: finds cycles of value
    /// types through non-array fields with one depth-first search (linear in the schema).
    private mutating func checkValueCycles() {
        enum Mark { case visiting, done }
        var marks: [Int: Mark] = [:]
        for start in values.indices where marks[start] == nil {
            // Each frame: a value type and how many of its fields were followed.
            var stack: [(value: Int, nextField: Int)] = [(start, 0)]
            marks[start] = .visiting
            while let (value, nextField) = stack.last {
                let fields = values[value].model.fields
                guard nextField < fields.count else {
                    marks[value] = .done
                    stack.removeLast()
                    continue
                }
                stack[stack.count - 1].nextField += 1
                guard case .value(let innerName) = fields[nextField].type, let inner = valueIndexByName[innerName] else { continue }
                switch marks[inner] {
                case .visiting?:
                    // The cycle is the part of the stack from `inner` on.
                    let cycleStart = stack.firstIndex { $0.value == inner } ?? 0
                    let path = stack[cycleStart...].map { values[$0.value].model.fields[$0.nextField - 1].name }
                    let name = values[inner].model.name
                    error(
                        .invalidType,
                        "value type '\(name)' contains itself through '\(path.joined(separator: "."))'; a value cannot nest itself: use an array ('[\(innerName)]') or an entity with a relationship",
                        at: values[inner].nameNode)
                case .done?:
                    continue
                case nil:
                    marks[inner] = .visiting
                    stack.append((inner, 0))
                }
            }
        }
    }

    /// Position of each name; the first wins when a name repeats (already reported).
    static func indexByName(_ names: [String]) -> [String: Int] {
        Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: - Types

    /// Resolves a type such as `String`, `Coordinate?` or `[String]`; returns the type and whether
    /// a trailing `?` made it optional.
    mutating func resolveType(_ node: YAMLNode, what: some CustomStringConvertible, allowEntities: Bool) -> (AttributeType, Bool)? {
        guard let raw = node.stringValue else {
            error(.wrongKind, "the type of \(what) must be a type name, found \(node.kindDescription)", at: node)
            return nil
        }
        // Sliced, not copied: nearly every type is a bare name such as `String?`.
        var typeText = raw.trimmingSpaces()
        var isOptional = false
        if typeText.endsWith("?") {
            isOptional = true
            typeText = typeText.droppingLastByte().trimmingSpaces()
        }
        var isArray = false
        if typeText.startsWith("[") {
            guard typeText.endsWith("]") else {
                error(.invalidType, "'\(raw)' in \(what) is not a type: an array is written '[Element]'", at: node)
                return nil
            }
            isArray = true
            typeText = typeText.droppingFirstByte().droppingLastByte().trimmingSpaces()
            if typeText.startsWith("[") {
                error(.invalidType, "nested arrays ('\(raw)') are not supported in \(what); wrap the inner array in a value type", at: node)
                return nil
            }
            if typeText.endsWith("?") {
                error(.invalidType, "array elements cannot be optional ('\(raw)' in \(what)); make the whole array optional: '[\(typeText.droppingLastByte())]?'", at: node)
                return nil
            }
        }
        let text = String(typeText)
        guard Naming.isIdentifier(text) else {
            error(.invalidType, "'\(raw)' in \(what) is not a type name", at: node)
            return nil
        }
        let element: AttributeType
        if let scalar = ScalarType.named(text) {
            element = .scalar(scalar)
        } else if enumNodes[text] != nil {
            element = .enumeration(text)
        } else if valueNodes[text] != nil {
            element = .value(text)
        } else if entityNodes[text] != nil {
            let hint =
                allowEntities
                ? "declare it under 'relationships' with 'to: \(raw)'"
                : "values cannot refer to entities; store the entity's key instead"
            error(.entityAsAttribute, "'\(text)' is an entity, not an attribute type, in \(what); \(hint)", at: node)
            return nil
        } else {
            let known = ScalarType.allCases.map(\.rawValue) + Array(enumNodes.keys) + Array(valueNodes.keys)
            error(.unknownType, "unknown type '\(text)' in \(what)\(Suggestion.hint(for: text, in: known.sorted()))", at: node)
            return (isArray ? .array(.unresolved(text)) : .unresolved(text), isOptional)
        }
        // Only enums and value types can go unused.
        if case .scalar = element {} else { usedTypeNames.insert(text) }
        return (isArray ? .array(element) : element, isOptional)
    }

    /// Combines a trailing `?` with the `optional` key, reporting a contradiction.
    mutating func optionality(_ options: Keyed, fromType: Bool, what: some CustomStringConvertible) -> Bool {
        guard let node = options["optional"] else { return fromType }
        let value = flag(options, "optional", what: what)
        if fromType, node.boolValue == false {
            error(.conflictingOptions, "\(what) has an optional type ('?') but 'optional: false'; keep one", at: node)
        }
        return value || fromType
    }
}

// Type and target spellings are taken apart by bytes: the marks they use (`?`, `[`, `]`, space)
// are ASCII, and Character-wise slicing cost more than the rest of reading an attribute.
extension StringProtocol where SubSequence == Substring {
    func trimmingSpaces() -> Substring {
        let slice = self[...]
        let bytes = slice.utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, bytes[start] == UInt8(ascii: " ") { start = bytes.index(after: start) }
        while end > start, bytes[bytes.index(before: end)] == UInt8(ascii: " ") { end = bytes.index(before: end) }
        return slice[start..<end]
    }
}

extension Substring {
    func endsWith(_ byte: Unicode.Scalar) -> Bool { utf8.last == UInt8(ascii: byte) }
    func startsWith(_ byte: Unicode.Scalar) -> Bool { utf8.first == UInt8(ascii: byte) }
    /// Without its last byte, which `endsWith` showed to be ASCII.
    func droppingLastByte() -> Substring { self[startIndex..<utf8.index(before: endIndex)] }
    /// Without its first byte, which `startsWith` showed to be ASCII.
    func droppingFirstByte() -> Substring { self[utf8.index(after: startIndex)..<endIndex] }
}

/// What a message is about, such as "attribute 'name' of entity 'Flight'": spelled out only
/// when a message needs it, because nearly every element of a schema is fine and building the
/// text for each cost more than checking it.
struct Subject: CustomStringConvertible {
    let kind: StaticString
    let name: String
    var entity: String?

    init(_ kind: StaticString, _ name: String, of entity: String? = nil) {
        self.kind = kind
        self.name = name
        self.entity = entity
    }

    var description: String {
        if let entity { return "\(kind) '\(name)' of entity '\(entity)'" }
        return "\(kind) '\(name)'"
    }
}
