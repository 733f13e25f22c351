import Foundation
import SchemaMetadata
import SQLiteKit

/// Builds a SQL WHERE clause from a predicate's expression tree, binding values as parameters.
struct SQLBuilder {
    var arguments: [SQLiteValue] = []
    /// Columns of the model's key paths.
    let column: (AnyKeyPath) -> String?
    /// Closure variables bound to SQL (the value an optional-chaining predicate unwraps).
    var variables: [PredicateExpressions.VariableID: String] = [:]

    mutating func bind(_ value: SQLiteValue) -> String {
        arguments.append(value)
        return "?"
    }
}

/// A predicate expression the store can turn into SQL.
protocol SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String
}

/// A predicate that cannot be run as SQL; it is never filtered in memory instead.
struct PredicateTranslationError: Error, CustomStringConvertible {
    var expression: String
    var description: String {
        "cannot translate \(expression) to SQL; use comparisons, &&, ||, !, nil checks, contains, starts(with:), localizedStandardContains or an array's contains"
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
        if root is PredicateExpressions.Variable<Root.Output> {
            guard let column = builder.column(keyPath) else {
                throw PredicateTranslationError(expression: "the key path \(keyPath) (not a stored property of the model)")
            }
            return Store.quote(column)
        }
        // A property of a captured value (`airline.id`): evaluated once and bound.
        guard let value = try? evaluate(PredicateBindings()), let encodable = value as? any Encodable,
              let stored = try? RowEncoder.value(encodable) else {
            throw PredicateTranslationError(expression: "the key path \(keyPath) on \(type(of: root))")
        }
        return builder.bind(stored)
    }
}

/// `lhs = rhs`, or `IS NULL` against nil.
private func equality(_ lhs: Any, _ rhs: Any, negated: Bool, _ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
    let left = try translate(lhs, &builder), right = try translate(rhs, &builder)
    if right == "NULL" { return "(\(left) IS \(negated ? "NOT " : "")NULL)" }
    if left == "NULL" { return "(\(right) IS \(negated ? "NOT " : "")NULL)" }
    return "(\(left) \(negated ? "IS NOT" : "IS") \(right))"
}

extension PredicateExpressions.Equal: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String { try equality(lhs, rhs, negated: false, &builder) }
}

extension PredicateExpressions.NotEqual: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String { try equality(lhs, rhs, negated: true, &builder) }
}

extension PredicateExpressions.Comparison: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        let symbol = switch op {
        case .lessThan: "<"
        case .lessThanOrEqual: "<="
        case .greaterThan: ">"
        case .greaterThanOrEqual: ">="
        }
        return "(\(try translate(lhs, &builder)) \(symbol) \(try translate(rhs, &builder)))"
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
        "(instr(\(try translate(base, &builder)), \(try translate(other, &builder))) > 0)"
    }
}

/// `string.starts(with: prefix)` (`hasPrefix`).
extension PredicateExpressions.SequenceStartsWith: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        // Each operand appears once: a bound value is one placeholder.
        "(instr(\(try translate(base, &builder)), \(try translate(prefix, &builder))) = 1)"
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
        return placeholders.isEmpty ? "0" : "(\(element) IN (\(placeholders.joined(separator: ", "))))"
    }
}

protocol ConstantSequence {
    func sqliteValues() throws(PredicateTranslationError) -> [SQLiteValue]
}

extension PredicateExpressions.Value: ConstantSequence where Output: Sequence, Output.Element: Encodable {
    func sqliteValues() throws(PredicateTranslationError) -> [SQLiteValue] {
        var values: [SQLiteValue] = []
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
        builder.variables[variable.key] = unwrapped
        return try translate(transform, &builder)
    }
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
        public typealias Output = Bool
        public let root: Root
        public let other: Other

        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            let text = String(try root.evaluate(bindings)), needle = String(try other.evaluate(bindings))
            return text.range(of: needle, options: [.caseInsensitive, .diacriticInsensitive]) != nil
        }
    }

    public static func build_localizedStandardContains<Root, Other>(_ root: Root, _ other: Other) -> StringLocalizedStandardContains<Root, Other> {
        StringLocalizedStandardContains(root: root, other: other)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: StandardPredicateExpression where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}
extension PredicateExpressions.StringLocalizedStandardContains: Sendable where Root: Sendable, Other: Sendable {}
extension PredicateExpressions.StringLocalizedStandardContains: Codable where Root: Codable, Other: Codable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(root)
        try container.encode(other)
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        root = try container.decode(Root.self)
        other = try container.decode(Other.self)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: SQLTranslatable {
    func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> String {
        "(instr(lower(\(try translate(root, &builder))), lower(\(try translate(other, &builder)))) > 0)"
    }
}
