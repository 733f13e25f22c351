import SchemaMetadata

/// A SQL statement built by construction: interpolated identifiers are quoted, interpolated
/// values become parameters bound in order, and fragments splice in with their own. No SQL
/// text is assembled by hand, so a name with a quote in it or a value with `'` in it cannot
/// change what the statement says.
///
///     let byCity: SQL = "SELECT \(identifier: "name") FROM \(identifier: table) WHERE \(identifier: "city") = \(value: .text(city))"
///     let (text, arguments) = byCity.rendered(for: SQLiteDialect())   // "... WHERE "city" = ?", [.text(city)]
///
/// Parameters are numbered when rendered, for the dialect at hand (`?` or `$1`, `$2`, ...), so
/// a fragment can be built before anyone knows where it lands.
public struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    enum Piece: Sendable, Hashable {
        case text(String)
        case identifier(String)
        /// A string constant written into the text: DDL takes no parameters.
        case literal(String)
        case parameter(StoredValue)
    }

    private(set) var pieces: [Piece]

    /// Text taken as SQL as it is: keywords, operators, punctuation.
    ///
    ///     let begin: SQL = "BEGIN IMMEDIATE;"
    public init(stringLiteral text: String) {
        pieces = text.isEmpty ? [] : [.text(text)]
    }

    /// A statement written as an interpolated literal: identifiers quoted, values bound as parameters.
    ///
    ///     let byID: SQL = "SELECT * FROM \(identifier: "job") WHERE \(identifier: "id") = \(value: .integer(7))"
    public init(stringInterpolation: Interpolation) {
        pieces = stringInterpolation.pieces
    }

    /// SQL text the program wrote (never user input): for keywords chosen at run time.
    ///
    ///     let order = SQL(verbatim: descending ? "DESC" : "ASC")
    public init(verbatim text: String) {
        pieces = text.isEmpty ? [] : [.text(text)]
    }

    /// A quoted identifier, alone.
    public static func identifier(_ name: String) -> SQL { "\(identifier: name)" }

    /// `first, second, ...`: the fragments joined by `separator`.
    public static func list(_ fragments: some Sequence<SQL>, separator: SQL = ", ") -> SQL {
        var joined = SQL(stringLiteral: "")
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { joined.append(separator) }
            joined.append(fragment)
        }
        return joined
    }

    /// `"schema"."name"`: a name qualified by its schema, both quoted.
    ///
    ///     SQL.identifier("job", in: "app_v2")   // "app_v2"."job"
    public static func identifier(_ name: String, in schema: String) -> SQL { "\(identifier: schema).\(identifier: name)" }

    /// A string constant written into the statement, quoted as the dialect quotes one, for
    /// statements that take no parameters (DDL, `COMMENT ON ... IS '...'`).
    ///
    ///     SQL.literal("it's")   // 'it''s'
    public static func literal(_ text: String) -> SQL { "\(literal: text)" }

    /// `"a", "b", ...`: quoted identifiers joined by commas.
    public static func identifiers(_ names: some Sequence<String>) -> SQL { list(names.map(identifier)) }

    /// `?, ?, ...`: one parameter per value.
    public static func parameters(_ values: some Sequence<StoredValue>) -> SQL { list(values.map { "\(value: $0)" }) }

    /// `?, ?, ...`: `count` parameters whose values are bound when the statement runs, for a
    /// statement rendered once and run many times. Rendering binds NULL to each.
    ///
    ///     let insert = "INSERT INTO \(identifier: table) VALUES (\(SQL.placeholders(3)))" as SQL
    public static func placeholders(_ count: Int) -> SQL { parameters(repeatElement(.null, count: count)) }

    /// Adds another fragment, with its parameters, to the end.
    public mutating func append(_ other: SQL) { pieces += other.pieces }

    /// Appends `rhs`, with its parameters, to `lhs`.
    public static func += (lhs: inout SQL, rhs: SQL) { lhs.append(rhs) }

    /// The two fragments one after the other, parameters in order.
    public static func + (lhs: SQL, rhs: SQL) -> SQL {
        var joined = lhs
        joined.append(rhs)
        return joined
    }

    /// The value the fragment binds when it is exactly one parameter (a value a predicate
    /// compares), so callers can fold or transform it before it lands in a statement.
    ///
    ///     ("\(value: .integer(3))" as SQL).boundValue   // .integer(3)
    public var boundValue: StoredValue? {
        if pieces.count == 1, case .parameter(let value) = pieces[0] { value } else { nil }
    }

    /// Whether the fragment says nothing.
    public var isEmpty: Bool { pieces.isEmpty }

    /// The names the fragment quotes (`\(identifier:)`), in order, each once: what a statement
    /// locks is among them.
    ///
    ///     ("ALTER TABLE \(identifier: "item") ADD \(identifier: "sku") text;" as SQL).identifierNames   // ["item", "sku"]
    public var identifierNames: [String] {
        var names: [String] = []
        for case .identifier(let name) in pieces where !names.contains(name) { names.append(name) }
        return names
    }

    /// The values bound to the fragment's parameters, in order.
    public var arguments: [StoredValue] {
        pieces.compactMap { if case .parameter(let value) = $0 { value } else { nil } }
    }

    /// The statement's text for a dialect, with its parameters numbered, and their values.
    public func rendered(for dialect: any SQLDialect) -> (text: String, arguments: [StoredValue]) {
        var text = ""
        var arguments: [StoredValue] = []
        for piece in pieces {
            switch piece {
            case .text(let sql): text += sql
            case .identifier(let name): text += dialect.quote(name)
            case .literal(let constant): text += dialect.literal(constant)
            case .parameter(let value):
                arguments.append(value)
                text += dialect.parameterMarker(arguments.count)
            }
        }
        return (text, arguments)
    }

    /// The text of a statement that binds no values, such as a migration's DDL, for a dialect.
    ///
    ///     ("DROP TABLE \(identifier: "job");" as SQL).text(for: PostgresDialect())   // DROP TABLE "job";
    public func text(for dialect: any SQLDialect) -> String { rendered(for: dialect).text }

    /// The statement rendered for a dialect, as an adapter takes it, and its values: for a
    /// statement rendered once and run many times with other values.
    ///
    ///     let (insert, _) = ("INSERT INTO \(identifier: "item") VALUES (\(SQL.placeholders(2)))" as SQL).statement(for: PostgresDialect())
    public func statement(for dialect: any SQLDialect) -> (statement: RenderedSQL, arguments: [StoredValue]) {
        let (text, arguments) = rendered(for: dialect)
        return (RenderedSQL(text: text), arguments)
    }

    /// The text as SQLite would run it (parameters as `?`), for messages and tests.
    public var description: String { rendered(for: SQLiteDialect()).text }

    /// The pieces of an interpolated `SQL` literal; each `appendInterpolation` says how one kind of value is written.
    public struct Interpolation: StringInterpolationProtocol {
        var pieces: [Piece] = []

        /// Starts an empty statement; the compiler calls this for every interpolated `SQL` literal.
        ///
        ///     var interpolation = SQL.Interpolation(literalCapacity: 0, interpolationCount: 1)
        ///     interpolation.appendInterpolation(identifier: "job")
        public init(literalCapacity: Int, interpolationCount: Int) {
            pieces.reserveCapacity(interpolationCount * 2 + 1)
        }

        /// Text taken as SQL as it is; an empty literal adds nothing.
        public mutating func appendLiteral(_ literal: String) {
            if !literal.isEmpty { pieces.append(.text(literal)) }
        }

        /// A table, column, index or schema name, quoted.
        public mutating func appendInterpolation(identifier name: String) { pieces.append(.identifier(name)) }

        /// A string constant, quoted into the text (`'...'`), for statements without parameters.
        public mutating func appendInterpolation(literal text: String) { pieces.append(.literal(text)) }

        /// A value, bound as a parameter.
        public mutating func appendInterpolation(value: StoredValue) { pieces.append(.parameter(value)) }

        /// The column type that keeps a storage kind in a dialect (`TEXT`, `timestamptz`).
        ///
        ///     let create: SQL = "CREATE TABLE t (name \(type: .text, in: dialect) NOT NULL)"
        public mutating func appendInterpolation(type kind: StorageKind, in dialect: any SQLDialect) {
            pieces.append(.text(dialect.columnType(kind)))
        }

        /// Another fragment, with its parameters.
        public mutating func appendInterpolation(_ fragment: SQL) { pieces += fragment.pieces }
    }
}

/// A statement rendered for one dialect: its text, with that dialect's parameter markers. Only
/// rendering `SQL` makes one (`SQL.statement(for:)`), so an engine adapter, which takes these
/// rather than `String`, runs only SQL that was built by construction.
///
///     let (statement, arguments) = sql.statement(for: database.dialect)
///     let rows = try database.query(statement, arguments[...])
public struct RenderedSQL: Sendable, Hashable, CustomStringConvertible {
    /// The text the engine runs.
    public let text: String

    init(text: String) { self.text = text }

    /// The text the engine runs.
    public var description: String { text }
}

extension SQLDialect {
    /// The `index`th parameter marker (1-based): `?` where parameters bind by position,
    /// `$index` where they are numbered.
    public func parameterMarker(_ index: Int) -> String {
        capabilities.numberedParameters ? "$\(index)" : "?"
    }
}
