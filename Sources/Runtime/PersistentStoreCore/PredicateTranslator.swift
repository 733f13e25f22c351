import FieldEncryption
import Foundation
import SQLDialects
import SchemaMetadata

/// Builds a SQL WHERE clause from a predicate's expression tree, binding values as parameters.
struct SQLBuilder {
    var arguments: [StoredValue] = []
    /// Columns of the model's key paths.
    let column: (AnyKeyPath) -> String?
    /// Closure variables bound to SQL (the value an optional-chaining predicate unwraps).
    var variables: [PredicateExpressions.VariableID: String] = [:]

    // Following relationships (`Joined` predicates): rows of joined tables by alias.
    /// Variables that stand for a row of an entity: the root, an unwrapped to-one, a to-many element.
    var rows: [PredicateExpressions.VariableID: (alias: String, entity: EntityDescriptor)] = [:]
    /// One query level: the main query, or an EXISTS subquery.
    struct JoinLevel {
        var clauses: [String] = []
        /// The alias each followed to-one already has (`t0.origin` -> `t1`), so
        /// `$0.origin?.icao == a || $0.origin?.city == b` joins the airports once.
        var aliases: [String: String] = [:]
    }
    /// LEFT JOINs by query level, innermost last.
    var levels: [JoinLevel] = [JoinLevel()]
    var aliasCount = 0
    var entityNamed: (String) -> EntityDescriptor? = { _ in nil }
    /// Every entity the query reads besides the root, so an observer knows which commits matter.
    var entitiesRead: Set<String> = []
    /// The cipher of an encrypted column: of the root model (`table` nil) or of a joined table.
    var cipher: (_ table: String?, _ column: String) -> FieldCipher? = { _, _ in nil }
    /// Encrypted columns met so far, by the marker that stands for them until an equality uses it.
    var encrypted: [String: (sql: String, cipher: FieldCipher)] = [:]
    /// Whether a column of the root model (`table` nil) or of a joined table holds days (`dateOnly`).
    var isDayColumn: (_ table: String?, _ column: String) -> Bool = { _, _ in false }
    /// Day columns met so far, as their SQL.
    var days: Set<String> = []

    /// A column's SQL, noted when it holds days so that values compared with it are days too.
    mutating func column(_ name: String, of alias: String?, table: String?) -> String {
        let sql = quoted(name, of: alias)
        if isDayColumn(table, name) { days.insert(sql) }
        return sql
    }

    /// A date compared with a day column is taken as its day in UTC, the same on every
    /// database (PostgreSQL would cast it to `date`; SQLite would compare text).
    mutating func compareAsDays(_ operands: [String]) {
        guard operands.contains(where: days.contains) else { return }
        for operand in operands where Self.isParameter(operand) {
            guard let index = Int(operand.dropFirst(Self.parameterMarker.count).dropLast()), arguments.indices.contains(index) else { continue }
            arguments[index] = StoredDate.dayValue(arguments[index])
        }
    }

    /// A marker for an encrypted column: only `==` and `!=` against a value may use it.
    mutating func encryptedColumn(_ sql: String, _ cipher: FieldCipher) -> String {
        let marker = "\u{1}enc\u{1}\(encrypted.count)\u{1}"
        encrypted[marker] = (sql, cipher)
        return marker
    }

    /// Fails when an encrypted column is used other than by an equality with a value.
    func checkEncryptedUse(_ sql: String) throws(PredicateTranslationError) {
        for (marker, column) in encrypted where sql.contains(marker) {
            throw PredicateTranslationError(
                expression: column.cipher.attribute,
                message: column.cipher.mode == .deterministic
                    ? "\(column.cipher.attribute) is encrypted: a predicate can only compare it with == or != to a value"
                    : "\(column.cipher.attribute) is encrypted with a random nonce, so the database cannot compare it; use 'encrypt: deterministic' to look it up by equality")
        }
    }

    /// The dialect names are quoted in.
    let dialect: any SQLDialect

    init(dialect: any SQLDialect, column: @escaping (AnyKeyPath) -> String?) {
        self.dialect = dialect
        self.column = column
    }

    /// Marks a bound value in the translated text (`\u{1}param3\u{1}` for `arguments[3]`) until
    /// `fragment` turns the text into SQL. Numbered, so a dialect may spell a function with its
    /// operands in another order than they were translated.
    static let parameterMarker = "\u{1}param"

    mutating func bind(_ value: StoredValue) -> String {
        arguments.append(value)
        return "\(Self.parameterMarker)\(arguments.count - 1)\u{1}"
    }

    /// Whether translated text is exactly one bound value.
    static func isParameter(_ text: String) -> Bool {
        text.hasPrefix(parameterMarker) && text.hasSuffix("\u{1}") && text.dropFirst(parameterMarker.count).dropLast().allSatisfy(\.isNumber)
    }

    /// The value translated text binds, when it is exactly one bound value.
    func boundValue(_ text: String) -> StoredValue? {
        guard Self.isParameter(text), let index = Int(text.dropFirst(Self.parameterMarker.count).dropLast()), arguments.indices.contains(index) else { return nil }
        return arguments[index]
    }

    /// Translated text as a SQL fragment: each parameter marker bound to its value.
    func fragment(_ text: String) -> SQL {
        var sql = SQL(verbatim: "")
        var rest = Substring(text)
        while let start = rest.range(of: Self.parameterMarker) {
            sql += SQL(verbatim: String(rest[..<start.lowerBound]))
            let digits = rest[start.upperBound...].prefix(while: \.isNumber)
            let index = Int(digits) ?? -1
            sql += "\(value: arguments.indices.contains(index) ? arguments[index] : .null)"
            // The digits and the closing mark.
            rest = rest[digits.endIndex...].dropFirst()
        }
        sql += SQL(verbatim: String(rest))
        return sql
    }

    /// A column, qualified by a table alias when the query joins tables: the one place the
    /// translator quotes a name, in the database's dialect.
    func quoted(_ name: String, of alias: String? = nil) -> String {
        alias.map { "\($0).\(dialect.quote(name))" } ?? dialect.quote(name)
    }

    /// A table under an alias, for FROM and JOIN.
    func table(_ name: String, as alias: String) -> String { "\(dialect.quote(name)) AS \(alias)" }

    mutating func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount)"
    }

    /// A key path of a `Joined` view on a row: a column, or a relationship to follow.
    mutating func member(_ keyPath: AnyKeyPath, of type: Any.Type, alias: String) throws(PredicateTranslationError) -> String {
        guard let joined = type as? any JoinedModel.Type, let member = joined.member(for: keyPath) else {
            throw PredicateTranslationError(expression: "the key path \(keyPath) (not a stored property or relationship)")
        }
        let entity = joined.entity
        switch member {
        case .column(let name):
            if let cipher = cipher(entity.table, name) { return encryptedColumn(quoted(name, of: alias), cipher) }
            return column(name, of: alias, table: entity.table)
        case .relationship(let name):
            guard let relationship = entity.relationship(named: name), let target = entityNamed(relationship.target) else {
                throw PredicateTranslationError(expression: "the relationship \(entity.name).\(name)")
            }
            entitiesRead.insert(target.name)
            if relationship.isToMany { return Marker.many(alias: alias, entity: entity.name, relationship: name) }
            let path = "\(alias).\(name)"
            if let existing = levels[levels.count - 1].aliases[path] { return Marker.row(alias: existing, entity: target.name) }
            let joined = newAlias()
            let condition: String
            if relationship.foreignKeyColumns.count == 1, target.primaryKey.count == 1 {
                condition = "\(quoted(target.primaryKey[0], of: joined)) = \(quoted(relationship.foreignKeyColumns[0], of: alias))"
            } else if let inverse = relationship.inverse.flatMap(target.relationship(named:)), inverse.foreignKeyColumns.count == 1,
                entity.primaryKey.count == 1, target.primaryKey.count == 1
            {
                // The other side holds the key and nothing stops two rows pointing here: join only
                // the first, as `Store.target` reads it, so no model comes back twice.
                let candidate = newAlias(), key = target.primaryKey[0]
                condition =
                    "\(quoted(key, of: joined)) = (SELECT \(quoted(key, of: candidate)) FROM \(table(target.table, as: candidate)) WHERE \(quoted(inverse.foreignKeyColumns[0], of: candidate)) = \(quoted(entity.primaryKey[0], of: alias)) ORDER BY \(quoted(key, of: candidate)) LIMIT 1)"
            } else {
                throw PredicateTranslationError(expression: "the relationship \(entity.name).\(name) (composite keys cannot be followed yet)")
            }
            levels[levels.count - 1].clauses.append("LEFT JOIN \(table(target.table, as: joined)) ON \(condition)")
            levels[levels.count - 1].aliases[path] = joined
            return Marker.row(alias: joined, entity: target.name)
        }
    }

    /// FROM and WHERE that correlate a to-many relationship's rows with their owner.
    mutating func toMany(_ marker: (alias: String, entity: String, relationship: String)) throws(PredicateTranslationError) -> (
        alias: String, target: EntityDescriptor, from: String, correlation: String
    ) {
        guard let owner = entityNamed(marker.entity), let relationship = owner.relationship(named: marker.relationship),
            let target = entityNamed(relationship.target), owner.primaryKey.count == 1
        else {
            throw PredicateTranslationError(expression: "the relationship \(marker.entity).\(marker.relationship)")
        }
        entitiesRead.insert(target.name)
        let alias = newAlias()
        let ownerKey = quoted(owner.primaryKey[0], of: marker.alias)
        if let joinTable = relationship.joinTable, relationship.joinColumns.count == 1, relationship.joinTargetColumns.count == 1, target.primaryKey.count == 1 {
            let link = newAlias()
            return (
                alias, target,
                "\(table(target.table, as: alias)) JOIN \(table(joinTable, as: link)) ON \(quoted(relationship.joinTargetColumns[0], of: link)) = \(quoted(target.primaryKey[0], of: alias))",
                "\(quoted(relationship.joinColumns[0], of: link)) = \(ownerKey)"
            )
        }
        guard let inverse = relationship.inverse.flatMap(target.relationship(named:)), inverse.foreignKeyColumns.count == 1 else {
            throw PredicateTranslationError(expression: "the relationship \(marker.entity).\(marker.relationship) (composite keys cannot be followed yet)")
        }
        return (alias, target, "\(table(target.table, as: alias))", "\(quoted(inverse.foreignKeyColumns[0], of: alias)) = \(ownerKey)")
    }
}

/// Translations that stand for rows rather than values: a joined row, or a to-many relationship.
enum Marker {
    static func row(alias: String, entity: String) -> String { "\u{1}row\u{1}\(alias)\u{1}\(entity)" }
    static func many(alias: String, entity: String, relationship: String) -> String { "\u{1}many\u{1}\(alias)\u{1}\(entity)\u{1}\(relationship)" }

    static func parseRow(_ text: String) -> (alias: String, entity: String)? {
        let parts = text.split(separator: "\u{1}", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[0] == "row" else { return nil }
        return (String(parts[1]), String(parts[2]))
    }

    static func parseMany(_ text: String) -> (alias: String, entity: String, relationship: String)? {
        let parts = text.split(separator: "\u{1}", omittingEmptySubsequences: true)
        guard parts.count == 4, parts[0] == "many" else { return nil }
        return (String(parts[1]), String(parts[2]), String(parts[3]))
    }
}

/// A predicate expression the store can turn into SQL.
protocol SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String
}

/// A predicate that cannot be run as SQL; it is never filtered in memory instead.
struct PredicateTranslationError: Error, CustomStringConvertible {
    var expression: String
    /// Said instead of the general advice, when there is something more precise to say.
    var message: String? = nil
    var description: String {
        message ?? "cannot translate \(expression) to SQL; use comparisons, &&, ||, !, nil checks, contains, starts(with:), localizedStandardContains or an array's contains"
    }
}

func translate(_ expression: Any, _ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
    guard let translatable = expression as? any SQLTranslatable else {
        throw PredicateTranslationError(expression: String(describing: type(of: expression)))
    }
    return try translatable.sql(&builder)
}

extension PredicateExpressions.Value: SQLTranslatable where Output: Encodable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        do {
            return builder.bind(try RowEncoder.value(value))
        } catch {
            throw PredicateTranslationError(expression: "the value \(value)")
        }
    }
}

extension PredicateExpressions.NilLiteral: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String { "NULL" }
}

extension PredicateExpressions.Variable: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        guard let bound = builder.variables[key] else { throw PredicateTranslationError(expression: "the model itself (compare one of its properties)") }
        return bound
    }
}

extension PredicateExpressions.KeyPath: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        // A row of a `Joined` predicate (the root, or a followed relationship).
        if let variable = root as? PredicateExpressions.Variable<Root.Output>, let row = builder.rows[variable.key] {
            return try builder.member(keyPath, of: Root.Output.self, alias: row.alias)
        }
        if !(root is PredicateExpressions.Variable<Root.Output>), Root.Output.self is any JoinedModel.Type || Root.Output.self is any Collection.Type {
            let rootSQL = try translate(root, &builder)
            if let row = Marker.parseRow(rootSQL) {
                return try builder.member(keyPath, of: Root.Output.self, alias: row.alias)
            }
            if let many = Marker.parseMany(rootSQL) {
                // `relationship.count` and `relationship.isEmpty`.
                let (_, _, from, correlation) = try builder.toMany(many)
                let array = Root.Output.self as? any ArrayKeyPaths.Type
                if array?.isCount(keyPath) == true { return "(SELECT count(*) FROM \(from) WHERE \(correlation))" }
                if array?.isIsEmpty(keyPath) == true { return "(NOT EXISTS (SELECT 1 FROM \(from) WHERE \(correlation)))" }
                throw PredicateTranslationError(expression: "\(keyPath) on a to-many relationship (count, isEmpty, contains(where:) and allSatisfy work)")
            }
        }
        if root is PredicateExpressions.Variable<Root.Output> {
            guard let column = builder.column(keyPath) else {
                throw PredicateTranslationError(expression: "the key path \(keyPath) (not a stored property of the model)")
            }
            if let cipher = builder.cipher(nil, column) { return builder.encryptedColumn(builder.quoted(column), cipher) }
            return builder.column(column, of: nil, table: nil)
        }
        // A property of a captured value (`airline.id`): evaluated once and bound.
        guard let value = try? evaluate(PredicateBindings()), let encodable = value as? any Encodable,
            let stored = try? RowEncoder.value(encodable)
        else {
            throw PredicateTranslationError(expression: "the key path \(keyPath) on \(type(of: root))")
        }
        return builder.bind(stored)
    }
}

/// `lhs = rhs`, or `IS NULL` against nil.
private func equality(_ lhs: Any, _ rhs: Any, negated: Bool, _ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
    var left = try translate(lhs, &builder), right = try translate(rhs, &builder)
    // An encrypted column against a value: the value's ciphertexts under every key (deterministic only).
    for (column, other) in [(left, right), (right, left)] {
        guard let encrypted = builder.encrypted[column] else { continue }
        var value: StoredValue = .null
        if SQLBuilder.isParameter(other), let bound = builder.arguments.popLast() {
            value = bound
        } else if other != "NULL" {
            throw PredicateTranslationError(expression: encrypted.cipher.attribute, message: "\(encrypted.cipher.attribute) is encrypted: compare it with a value, not with another column")
        }
        if value == .null { return "(\(encrypted.sql) IS \(negated ? "NOT " : "")NULL)" }
        guard encrypted.cipher.mode == .deterministic else {
            throw PredicateTranslationError(
                expression: encrypted.cipher.attribute,
                message: "\(encrypted.cipher.attribute) is encrypted with a random nonce, so the database cannot compare it; use 'encrypt: deterministic' to look it up by equality")
        }
        let sealed: [StoredValue]
        do { sealed = try encrypted.cipher.sealForLookup(value) } catch {
            throw PredicateTranslationError(expression: encrypted.cipher.attribute, message: error.description)
        }
        let list = sealed.map { builder.bind($0) }.joined(separator: ", ")
        return negated ? "(\(encrypted.sql) IS NULL OR \(encrypted.sql) NOT IN (\(list)))" : "(\(encrypted.sql) IN (\(list)))"
    }
    // A followed to-one compared with nil: whether the joined row exists.
    for side in [0, 1] {
        let text = side == 0 ? left : right
        guard let row = Marker.parseRow(text), let entity = builder.entityNamed(row.entity), let key = entity.primaryKey.first else { continue }
        let column = builder.quoted(key, of: row.alias)
        if side == 0 { left = column } else { right = column }
    }
    // Captured values on both sides (`origin == nil` in a filter built at run time): known now.
    // Folded here, so no statement holds a parameter whose type the database cannot infer.
    let leftValue = left == "NULL" ? .null : builder.boundValue(left), rightValue = right == "NULL" ? .null : builder.boundValue(right)
    if let leftValue, let rightValue {
        return (leftValue == rightValue) != negated ? "(1 = 1)" : "(1 = 0)"
    }
    if right == "NULL" { return "(\(left) IS \(negated ? "NOT " : "")NULL)" }
    if left == "NULL" { return "(\(right) IS \(negated ? "NOT " : "")NULL)" }
    builder.compareAsDays([left, right])
    return builder.dialect.nullSafeEquality(left, right, negated: negated)
}

extension PredicateExpressions.Equal: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String { try equality(lhs, rhs, negated: false, &builder) }
}

extension PredicateExpressions.NotEqual: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String { try equality(lhs, rhs, negated: true, &builder) }
}

extension PredicateExpressions.Comparison: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        let symbol =
            switch op {
            case .lessThan: "<"
            case .lessThanOrEqual: "<="
            case .greaterThan: ">"
            case .greaterThanOrEqual: ">="
            }
        let left = try translate(lhs, &builder), right = try translate(rhs, &builder)
        builder.compareAsDays([left, right])
        return "(\(left) \(symbol) \(right))"
    }
}

extension PredicateExpressions.Conjunction: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        "(\(try translate(lhs, &builder)) AND \(try translate(rhs, &builder)))"
    }
}

extension PredicateExpressions.Disjunction: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        "(\(try translate(lhs, &builder)) OR \(try translate(rhs, &builder)))"
    }
}

extension PredicateExpressions.Negation: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        "(NOT \(try translate(wrapped, &builder)))"
    }
}

/// `string.contains(other)`: case-sensitive, as in Swift.
extension PredicateExpressions.CollectionContainsCollection: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        // Translated in the order they appear in the text, so their parameters bind in order.
        let text = try translate(base, &builder), needle = try translate(other, &builder)
        return "(\(builder.dialect.position(of: needle, in: text)) > 0)"
    }
}

/// `string.starts(with: prefix)` (`hasPrefix`).
extension PredicateExpressions.SequenceStartsWith: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        // Each operand appears once: a bound value is one placeholder.
        let text = try translate(base, &builder), needle = try translate(prefix, &builder)
        return "(\(builder.dialect.position(of: needle, in: text)) = 1)"
    }
}

/// `[values].contains(property)`: `IN`.
extension PredicateExpressions.SequenceContains: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        guard let constant = sequence as? any ConstantSequence else {
            throw PredicateTranslationError(expression: "contains on \(type(of: sequence)) (only a constant array)")
        }
        let element = try translate(self.element, &builder)
        var placeholders: [String] = []
        for value in try constant.sqliteValues() { placeholders.append(builder.bind(value)) }
        builder.compareAsDays([element] + placeholders)
        return placeholders.isEmpty ? "(1 = 0)" : "(\(element) IN (\(placeholders.joined(separator: ", "))))"
    }
}

protocol ConstantSequence {
    func sqliteValues() throws(PredicateTranslationError) -> [StoredValue]
}

extension PredicateExpressions.Value: ConstantSequence where Output: Sequence, Output.Element: Encodable {
    func sqliteValues() throws(PredicateTranslationError) -> [StoredValue] {
        var values: [StoredValue] = []
        for element in value {
            do { values.append(try RowEncoder.value(element)) } catch { throw PredicateTranslationError(expression: "the value \(element)") }
        }
        return values
    }
}

/// `optional?.property ...`: the transform runs on the unwrapped value; NULL propagates.
extension PredicateExpressions.OptionalFlatMap: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        let unwrapped = try translate(wrapped, &builder)
        if let row = Marker.parseRow(unwrapped), let entity = builder.entityNamed(row.entity) {
            // `origin?.icao`: the closure's variable is the joined row.
            builder.rows[variable.key] = (row.alias, entity)
        } else {
            builder.variables[variable.key] = unwrapped
        }
        return try translate(transform, &builder)
    }
}

/// `relationship.contains { ... }`: EXISTS over the related rows.
extension PredicateExpressions.SequenceContainsWhere: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        try existsClause(sequence: sequence, variable: variable.key, test: test, negated: false, &builder)
    }
}

/// `relationship.allSatisfy { ... }`: no related row fails the test.
extension PredicateExpressions.SequenceAllSatisfy: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        try existsClause(sequence: sequence, variable: variable.key, test: test, negated: true, &builder)
    }
}

private func existsClause(sequence: Any, variable: PredicateExpressions.VariableID, test: Any, negated: Bool, _ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
    guard let many = Marker.parseMany(try translate(sequence, &builder)) else {
        throw PredicateTranslationError(expression: "contains(where:) or allSatisfy on \(type(of: sequence)) (only a to-many relationship)")
    }
    let (alias, target, from, correlation) = try builder.toMany(many)
    builder.rows[variable] = (alias, target)
    builder.levels.append(SQLBuilder.JoinLevel())
    let condition = try translate(test, &builder)
    let nested = builder.levels.removeLast().clauses.joined(separator: " ")
    // An unknown (NULL) test fails the element, as a false one would in Swift.
    let test = negated ? "NOT coalesce(\(condition), FALSE)" : condition
    return "(\(negated ? "NOT " : "")EXISTS (SELECT 1 FROM \(from) \(nested) WHERE \(correlation) AND \(test)))"
}

/// `optional ?? fallback`.
extension PredicateExpressions.NilCoalesce: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        "coalesce(\(try translate(lhs, &builder)), \(try translate(rhs, &builder)))"
    }
}

extension PredicateExpressions.ForcedUnwrap: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String { try translate(inner, &builder) }
}

// MARK: - Case-insensitive contains

extension PredicateExpressions {
    /// `string.localizedStandardContains(other)`: case-insensitive contains. Foundation on
    /// Linux has no predicate builder for it, so the toolkit provides one; in SQL it compares
    /// `lower()` of both sides (ASCII letters).
    public struct StringLocalizedStandardContains<Root: PredicateExpression, Other: PredicateExpression>: PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        /// Whether the text contains the other.
        public typealias Output = Bool
        /// The text searched.
        public let root: Root
        /// The text looked for.
        public let other: Other

        /// The expression `root.localizedStandardContains(other)`.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        /// Evaluated in Swift: case- and diacritic-insensitive.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            let text = String(try root.evaluate(bindings)), needle = String(try other.evaluate(bindings))
            return text.range(of: needle, options: [.caseInsensitive, .diacriticInsensitive]) != nil
        }
    }

    /// What `#Predicate` calls for `localizedStandardContains` on Linux.
    public static func build_localizedStandardContains<Root, Other>(_ root: Root, _ other: Other) -> StringLocalizedStandardContains<Root, Other> {
        StringLocalizedStandardContains(root: root, other: other)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: StandardPredicateExpression where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}
extension PredicateExpressions.StringLocalizedStandardContains: Sendable where Root: Sendable, Other: Sendable {}
extension PredicateExpressions.StringLocalizedStandardContains: Codable where Root: Codable, Other: Codable {
    /// Both operands, in order.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(root)
        try container.encode(other)
    }

    /// Both operands, in order.
    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        root = try container.decode(Root.self)
        other = try container.decode(Other.self)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        let text = try translate(root, &builder), needle = try translate(other, &builder)
        return "(\(builder.dialect.position(of: "lower(\(needle))", in: "lower(\(text))")) > 0)"
    }
}

/// Recognises `\.count` and `\.isEmpty` of a to-many relationship's array: key paths to
/// computed properties have no readable name on Linux, so they are compared instead.
private protocol ArrayKeyPaths {
    static func isCount(_ keyPath: AnyKeyPath) -> Bool
    static func isIsEmpty(_ keyPath: AnyKeyPath) -> Bool
}

extension Array: ArrayKeyPaths {
    static func isCount(_ keyPath: AnyKeyPath) -> Bool { keyPath == \[Element].count }
    static func isIsEmpty(_ keyPath: AnyKeyPath) -> Bool { keyPath == \[Element].isEmpty }
}
