import FieldEncryption
import Foundation
import SQLDialects
import SchemaMetadata

/// What a piece of a predicate translates to: SQL, or something that only some expressions
/// around it may use (an encrypted column, a followed relationship's row).
enum Translation {
    /// A value or a condition, with the values it binds.
    case sql(SQL)
    /// The `nil` literal.
    case null
    /// An encrypted column: only `==` and `!=` against a value may use it.
    case encrypted(column: SQL, cipher: FieldCipher)
    /// A followed to-one relationship: the joined row under `alias`.
    case row(alias: String, entity: String)
    /// A to-many relationship of the row under `alias`.
    case many(alias: String, entity: String, relationship: String)

    /// The value bound, when the translation is exactly one value.
    var boundValue: StoredValue? {
        if case .sql(let sql) = self { sql.boundValue } else { nil }
    }
}

/// Builds a SQL WHERE clause from a predicate's expression tree, binding values as parameters.
struct SQLBuilder {
    /// Columns of the model's key paths.
    let column: (AnyKeyPath) -> String?
    /// Closure variables bound to what they stand for (the value an optional-chaining predicate unwraps).
    var variables: [PredicateExpressions.VariableID: Translation] = [:]

    // Following relationships (`Joined` predicates): rows of joined tables by alias.
    /// Variables that stand for a row of an entity: the root, an unwrapped to-one, a to-many element.
    var rows: [PredicateExpressions.VariableID: (alias: String, entity: EntityDescriptor)] = [:]
    /// One query level: the main query, or an EXISTS subquery.
    struct JoinLevel {
        var clauses: [SQL] = []
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
    /// Whether a column of the root model (`table` nil) or of a joined table holds days (`dateOnly`).
    var isDayColumn: (_ table: String?, _ column: String) -> Bool = { _, _ in false }
    /// Day columns met so far.
    var days: Set<SQL> = []

    /// The dialect names are quoted in.
    let dialect: any SQLDialect

    init(dialect: any SQLDialect, column: @escaping (AnyKeyPath) -> String?) {
        self.dialect = dialect
        self.column = column
    }

    /// A column's SQL, noted when it holds days so that values compared with it are days too.
    mutating func column(_ name: String, of alias: String?, table: String?) -> Translation {
        let sql = quoted(name, of: alias)
        if let cipher = cipher(table, name) { return .encrypted(column: sql, cipher: cipher) }
        if isDayColumn(table, name) { days.insert(sql) }
        return .sql(sql)
    }

    /// A translation used as a value or a condition. An encrypted column or a relationship
    /// cannot be one; each says what can be done instead.
    func expression(_ translation: Translation) throws(PredicateTranslationError) -> SQL {
        switch translation {
        case .sql(let sql): return sql
        case .null: return "NULL"
        case .encrypted(_, let cipher):
            throw PredicateTranslationError(
                expression: cipher.attribute,
                message: cipher.mode == .deterministic
                    ? "\(cipher.attribute) is encrypted: a predicate can only compare it with == or != to a value"
                    : Self.randomNonceMessage(cipher))
        case .row(_, let entity):
            throw PredicateTranslationError(expression: "a related \(entity) itself (compare one of its properties, or the relationship with nil)")
        case .many(_, let entity, let relationship):
            throw PredicateTranslationError(expression: "the relationship \(entity).\(relationship) itself (count, isEmpty, contains(where:) and allSatisfy work)")
        }
    }

    static func randomNonceMessage(_ cipher: FieldCipher) -> String {
        "\(cipher.attribute) is encrypted with a random nonce, so the database cannot compare it; use 'encrypt: deterministic' to look it up by equality"
    }

    /// Operands compared with each other. A date compared with a day column is taken as its
    /// day in UTC, the same on every database (PostgreSQL would cast it to `date`; SQLite
    /// would compare text).
    func comparedOperands(_ operands: [Translation]) throws(PredicateTranslationError) -> [SQL] {
        var sql: [SQL] = []
        for operand in operands { sql.append(try expression(operand)) }
        guard sql.contains(where: days.contains) else { return sql }
        return sql.map { operand in operand.boundValue.map { "\(value: StoredDate.dayValue($0))" } ?? operand }
    }

    /// A column, qualified by a table alias when the query joins tables: the one place the
    /// translator quotes a name, in the database's dialect. Aliases are the translator's own
    /// (`t1`), never a user's name.
    func quoted(_ name: String, of alias: String? = nil) -> SQL {
        alias.map { "\(SQL(verbatim: $0)).\(identifier: name)" } ?? .identifier(name)
    }

    /// A table under an alias, for FROM and JOIN.
    func table(_ name: String, as alias: String) -> SQL { "\(identifier: name) AS \(SQL(verbatim: alias))" }

    mutating func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount)"
    }

    /// A key path of a `Joined` view on a row: a column, or a relationship to follow.
    mutating func member(_ keyPath: AnyKeyPath, of type: Any.Type, alias: String) throws(PredicateTranslationError) -> Translation {
        guard let joined = type as? any JoinedModel.Type, let member = joined.member(for: keyPath) else {
            throw PredicateTranslationError(expression: "the key path \(keyPath) (not a stored property or relationship)")
        }
        let entity = joined.entity
        switch member {
        case .column(let name):
            return column(name, of: alias, table: entity.table)
        case .relationship(let name):
            guard let relationship = entity.relationship(named: name), let target = entityNamed(relationship.target) else {
                throw PredicateTranslationError(expression: "the relationship \(entity.name).\(name)")
            }
            entitiesRead.insert(target.name)
            if relationship.isToMany { return .many(alias: alias, entity: entity.name, relationship: name) }
            let path = "\(alias).\(name)"
            if let existing = levels[levels.count - 1].aliases[path] { return .row(alias: existing, entity: target.name) }
            let joined = newAlias()
            let condition = try joinCondition(relationship, from: entity, alias: alias, to: target, joined: joined)
            levels[levels.count - 1].clauses.append("LEFT JOIN \(table(target.table, as: joined)) ON \(condition)")
            levels[levels.count - 1].aliases[path] = joined
            return .row(alias: joined, entity: target.name)
        }
    }

    /// What joins a to-one relationship's target row (under `joined`) to its owner's.
    private mutating func joinCondition(
        _ relationship: RelationshipDescriptor, from entity: EntityDescriptor, alias: String, to target: EntityDescriptor, joined: String
    ) throws(PredicateTranslationError) -> SQL {
        if relationship.foreignKeyColumns.count == 1, target.primaryKey.count == 1 {
            return "\(quoted(target.primaryKey[0], of: joined)) = \(quoted(relationship.foreignKeyColumns[0], of: alias))"
        }
        guard let inverse = relationship.inverse.flatMap(target.relationship(named:)), inverse.foreignKeyColumns.count == 1,
            entity.primaryKey.count == 1, target.primaryKey.count == 1
        else {
            throw PredicateTranslationError(expression: "the relationship \(entity.name).\(relationship.name) (composite keys cannot be followed yet)")
        }
        // The other side holds the key and nothing stops two rows pointing here: join only
        // the first, as `Store.target` reads it, so no model comes back twice.
        let candidate = newAlias(), key = target.primaryKey[0]
        return
            "\(quoted(key, of: joined)) = (SELECT \(quoted(key, of: candidate)) FROM \(table(target.table, as: candidate)) WHERE \(quoted(inverse.foreignKeyColumns[0], of: candidate)) = \(quoted(entity.primaryKey[0], of: alias)) ORDER BY \(quoted(key, of: candidate)) LIMIT 1)"
    }

    /// FROM and WHERE that correlate a to-many relationship's rows with their owner.
    mutating func toMany(alias ownerAlias: String, entity ownerName: String, relationship relationshipName: String) throws(PredicateTranslationError) -> (
        alias: String, target: EntityDescriptor, from: SQL, correlation: SQL
    ) {
        guard let owner = entityNamed(ownerName), let relationship = owner.relationship(named: relationshipName),
            let target = entityNamed(relationship.target), owner.primaryKey.count == 1
        else {
            throw PredicateTranslationError(expression: "the relationship \(ownerName).\(relationshipName)")
        }
        entitiesRead.insert(target.name)
        let alias = newAlias()
        let ownerKey = quoted(owner.primaryKey[0], of: ownerAlias)
        if let joinTable = relationship.joinTable, relationship.joinColumns.count == 1, relationship.joinTargetColumns.count == 1, target.primaryKey.count == 1 {
            let link = newAlias()
            return (
                alias, target,
                "\(table(target.table, as: alias)) JOIN \(table(joinTable, as: link)) ON \(quoted(relationship.joinTargetColumns[0], of: link)) = \(quoted(target.primaryKey[0], of: alias))",
                "\(quoted(relationship.joinColumns[0], of: link)) = \(ownerKey)"
            )
        }
        guard let inverse = relationship.inverse.flatMap(target.relationship(named:)), inverse.foreignKeyColumns.count == 1 else {
            throw PredicateTranslationError(expression: "the relationship \(ownerName).\(relationshipName) (composite keys cannot be followed yet)")
        }
        return (alias, target, table(target.table, as: alias), "\(quoted(inverse.foreignKeyColumns[0], of: alias)) = \(ownerKey)")
    }
}

/// A predicate expression the store can turn into SQL.
protocol SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation
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

func translate(_ expression: Any, _ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
    guard let translatable = expression as? any SQLTranslatable else {
        throw PredicateTranslationError(expression: String(describing: type(of: expression)))
    }
    return try translatable.sql(&builder)
}

/// An expression translated as a value or a condition.
func translateExpression(_ expression: Any, _ builder: inout SQLBuilder) throws(PredicateTranslationError) -> SQL {
    try builder.expression(translate(expression, &builder))
}

extension PredicateExpressions.Value: SQLTranslatable where Output: Encodable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        do {
            return .sql("\(value: try RowEncoder.value(value))")
        } catch {
            throw PredicateTranslationError(expression: "the value \(value)")
        }
    }
}

extension PredicateExpressions.NilLiteral: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation { .null }
}

extension PredicateExpressions.Variable: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        guard let bound = builder.variables[key] else { throw PredicateTranslationError(expression: "the model itself (compare one of its properties)") }
        return bound
    }
}

extension PredicateExpressions.KeyPath: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        // A row of a `Joined` predicate (the root, or a followed relationship).
        if let variable = root as? PredicateExpressions.Variable<Root.Output>, let row = builder.rows[variable.key] {
            return try builder.member(keyPath, of: Root.Output.self, alias: row.alias)
        }
        if !(root is PredicateExpressions.Variable<Root.Output>), Root.Output.self is any JoinedModel.Type || Root.Output.self is any Collection.Type {
            switch try translate(root, &builder) {
            case .row(let alias, _):
                return try builder.member(keyPath, of: Root.Output.self, alias: alias)
            case .many(let alias, let entity, let relationship):
                // `relationship.count` and `relationship.isEmpty`.
                let (_, _, from, correlation) = try builder.toMany(alias: alias, entity: entity, relationship: relationship)
                let array = Root.Output.self as? any ArrayKeyPaths.Type
                if array?.isCount(keyPath) == true { return .sql("(SELECT count(*) FROM \(from) WHERE \(correlation))") }
                if array?.isIsEmpty(keyPath) == true { return .sql("(NOT EXISTS (SELECT 1 FROM \(from) WHERE \(correlation)))") }
                throw PredicateTranslationError(expression: "\(keyPath) on a to-many relationship (count, isEmpty, contains(where:) and allSatisfy work)")
            default: break
            }
        }
        if root is PredicateExpressions.Variable<Root.Output> {
            guard let column = builder.column(keyPath) else {
                throw PredicateTranslationError(expression: "the key path \(keyPath) (not a stored property of the model)")
            }
            return builder.column(column, of: nil, table: nil)
        }
        // A property of a captured value (`airline.id`): evaluated once and bound.
        guard let value = try? evaluate(PredicateBindings()), let encodable = value as? any Encodable,
            let stored = try? RowEncoder.value(encodable)
        else {
            throw PredicateTranslationError(expression: "the key path \(keyPath) on \(type(of: root))")
        }
        return .sql("\(value: stored)")
    }
}

/// An encrypted column compared with a value: the value's ciphertexts under every key
/// (deterministic only).
private func encryptedEquality(_ column: SQL, _ cipher: FieldCipher, with other: Translation, negated: Bool) throws(PredicateTranslationError) -> SQL {
    let value: StoredValue
    switch other {
    case .null: value = .null
    case .sql(let sql) where sql.boundValue != nil: value = sql.boundValue ?? .null
    default:
        throw PredicateTranslationError(expression: cipher.attribute, message: "\(cipher.attribute) is encrypted: compare it with a value, not with another column")
    }
    if value == .null { return "(\(column) IS \(SQL(verbatim: negated ? "NOT " : ""))NULL)" }
    guard cipher.mode == .deterministic else {
        throw PredicateTranslationError(expression: cipher.attribute, message: SQLBuilder.randomNonceMessage(cipher))
    }
    let sealed: [StoredValue]
    do { sealed = try cipher.sealForLookup(value) } catch {
        throw PredicateTranslationError(expression: cipher.attribute, message: error.description)
    }
    let list = SQL.parameters(sealed)
    return negated ? "(\(column) IS NULL OR \(column) NOT IN (\(list)))" : "(\(column) IN (\(list)))"
}

/// `lhs = rhs`, or `IS NULL` against nil.
private func equality(_ lhs: Any, _ rhs: Any, negated: Bool, _ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
    var left = try translate(lhs, &builder), right = try translate(rhs, &builder)
    if case .encrypted(let column, let cipher) = left { return .sql(try encryptedEquality(column, cipher, with: right, negated: negated)) }
    if case .encrypted(let column, let cipher) = right { return .sql(try encryptedEquality(column, cipher, with: left, negated: negated)) }
    // A followed to-one compared with nil: whether the joined row exists.
    for side in [0, 1] {
        guard case .row(let alias, let name) = side == 0 ? left : right, let entity = builder.entityNamed(name), let key = entity.primaryKey.first else { continue }
        let column = Translation.sql(builder.quoted(key, of: alias))
        if side == 0 { left = column } else { right = column }
    }
    // Captured values on both sides (`origin == nil` in a filter built at run time): known now.
    // Folded here, so no statement holds a parameter whose type the database cannot infer.
    func constant(_ side: Translation) -> StoredValue? { if case .null = side { .null } else { side.boundValue } }
    if let leftValue = constant(left), let rightValue = constant(right) {
        return .sql((leftValue == rightValue) != negated ? "(1 = 1)" : "(1 = 0)")
    }
    let isNull: SQL = negated ? "IS NOT NULL" : "IS NULL"
    if case .null = right { return .sql("(\(try builder.expression(left)) \(isNull))") }
    if case .null = left { return .sql("(\(try builder.expression(right)) \(isNull))") }
    let operands = try builder.comparedOperands([left, right])
    return .sql(builder.dialect.nullSafeEquality(operands[0], operands[1], negated: negated))
}

extension PredicateExpressions.Equal: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation { try equality(lhs, rhs, negated: false, &builder) }
}

extension PredicateExpressions.NotEqual: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation { try equality(lhs, rhs, negated: true, &builder) }
}

extension PredicateExpressions.Comparison: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        let symbol: SQL =
            switch op {
            case .lessThan: "<"
            case .lessThanOrEqual: "<="
            case .greaterThan: ">"
            case .greaterThanOrEqual: ">="
            }
        // Translated first: translating notes the day columns the comparison reads.
        let left = try translate(lhs, &builder), right = try translate(rhs, &builder)
        let operands = try builder.comparedOperands([left, right])
        return .sql("(\(operands[0]) \(symbol) \(operands[1]))")
    }
}

extension PredicateExpressions.Conjunction: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        .sql("(\(try translateExpression(lhs, &builder)) AND \(try translateExpression(rhs, &builder)))")
    }
}

extension PredicateExpressions.Disjunction: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        .sql("(\(try translateExpression(lhs, &builder)) OR \(try translateExpression(rhs, &builder)))")
    }
}

extension PredicateExpressions.Negation: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        .sql("(NOT \(try translateExpression(wrapped, &builder)))")
    }
}

/// `string.contains(other)`: case-sensitive, as in Swift.
extension PredicateExpressions.CollectionContainsCollection: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        let text = try translateExpression(base, &builder), needle = try translateExpression(other, &builder)
        return .sql("(\(builder.dialect.position(of: needle, in: text)) > 0)")
    }
}

/// `string.starts(with: prefix)` (`hasPrefix`).
extension PredicateExpressions.SequenceStartsWith: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        let text = try translateExpression(base, &builder), needle = try translateExpression(prefix, &builder)
        return .sql("(\(builder.dialect.position(of: needle, in: text)) = 1)")
    }
}

/// `[values].contains(property)`: `IN`.
extension PredicateExpressions.SequenceContains: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        guard let constant = sequence as? any ConstantSequence else {
            throw PredicateTranslationError(expression: "contains on \(type(of: sequence)) (only a constant array)")
        }
        let element = try translate(self.element, &builder)
        let values = try constant.sqliteValues().map { Translation.sql("\(value: $0)") }
        if values.isEmpty { return .sql("(1 = 0)") }
        let operands = try builder.comparedOperands([element] + values)
        return .sql("(\(operands[0]) IN (\(SQL.list(operands.dropFirst()))))")
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
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        let unwrapped = try translate(wrapped, &builder)
        if case .row(let alias, let name) = unwrapped, let entity = builder.entityNamed(name) {
            // `origin?.icao`: the closure's variable is the joined row.
            builder.rows[variable.key] = (alias, entity)
        } else {
            builder.variables[variable.key] = unwrapped
        }
        return try translate(transform, &builder)
    }
}

/// `relationship.contains { ... }`: EXISTS over the related rows.
extension PredicateExpressions.SequenceContainsWhere: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        .sql(try existsClause(sequence: sequence, variable: variable.key, test: test, negated: false, &builder))
    }
}

/// `relationship.allSatisfy { ... }`: no related row fails the test.
extension PredicateExpressions.SequenceAllSatisfy: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        .sql(try existsClause(sequence: sequence, variable: variable.key, test: test, negated: true, &builder))
    }
}

private func existsClause(sequence: Any, variable: PredicateExpressions.VariableID, test: Any, negated: Bool, _ builder: inout SQLBuilder) throws(PredicateTranslationError) -> SQL {
    guard case .many(let owner, let entity, let relationship) = try translate(sequence, &builder) else {
        throw PredicateTranslationError(expression: "contains(where:) or allSatisfy on \(type(of: sequence)) (only a to-many relationship)")
    }
    let (alias, target, from, correlation) = try builder.toMany(alias: owner, entity: entity, relationship: relationship)
    builder.rows[variable] = (alias, target)
    builder.levels.append(SQLBuilder.JoinLevel())
    let condition = try translateExpression(test, &builder)
    let nested = SQL.list(builder.levels.removeLast().clauses, separator: " ")
    // An unknown (NULL) test fails the element, as a false one would in Swift.
    let test: SQL = negated ? "NOT coalesce(\(condition), FALSE)" : condition
    return "(\(SQL(verbatim: negated ? "NOT " : ""))EXISTS (SELECT 1 FROM \(from) \(nested) WHERE \(correlation) AND \(test)))"
}

/// `optional ?? fallback`.
extension PredicateExpressions.NilCoalesce: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        .sql("coalesce(\(try translateExpression(lhs, &builder)), \(try translateExpression(rhs, &builder)))")
    }
}

extension PredicateExpressions.ForcedUnwrap: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation { try translate(inner, &builder) }
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
        ///
        ///     let contains = PredicateExpressions.StringLocalizedStandardContains(
        ///         root: PredicateExpressions.Value("Call the plumber"), other: PredicateExpressions.Value("PLUMBER"))
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
    ///
    ///     let copy = try JSONDecoder().decode(type(of: expression), from: JSONEncoder().encode(expression))
    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        root = try container.decode(Root.self)
        other = try container.decode(Other.self)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation {
        let text = try translateExpression(root, &builder), needle = try translateExpression(other, &builder)
        return .sql("(\(builder.dialect.position(of: "lower(\(needle))", in: "lower(\(text))")) > 0)")
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
