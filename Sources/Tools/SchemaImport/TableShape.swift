import Foundation
import MigrationPlanner
import RelationalModel

/// A PostgreSQL table as two databases are compared on it: its columns (type as `format_type`
/// writes it, NOT NULL, default, generated), primary key, foreign keys with their actions,
/// unique column sets, other indexes and checks, and partitioning. Read from a live catalogue, or
/// predicted from a relational model as schemagen's first PostgreSQL migration builds it, so
/// that an import can say how a database built from the schema it wrote differs from the one it
/// read, and `migrate baseline` can say how a live database differs from the version it records.
public struct TableShape: Sendable, Equatable {
    public struct Column: Sendable, Equatable {
        public var name: String
        public var type: String
        public var isNotNull: Bool
        /// The default with its casts taken off (`'G'`, `now()`, `4.99`); `identity` for an
        /// identity column, `sequence` for a serial one.
        public var defaultValue: String?
        public var isGenerated: Bool
    }

    public var name: String
    public var columns: [Column]
    public var primaryKey: [String]
    /// `(actor_id) -> actor (actor_id) ON DELETE RESTRICT ON UPDATE CASCADE`.
    public var foreignKeys: [String]
    public var uniques: [[String]]
    /// `btree (title)`, `gin (search)`, or a partial or expression index's definition.
    public var indexes: [String]
    /// `allowed values of rating: 'G', 'PG'`, or the check's definition.
    public var checks: [String]
    /// `RANGE (payment_date), 55 partitions`, for a partitioned table.
    public var partitioning: String?

    public func column(named name: String) -> Column? { columns.first { $0.name == name } }
}

/// One way two databases differ, on one table.
public struct ShapeDifference: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var table: String
    /// What differs: `column release_year`, `index btree (film_id)`, `table`.
    public var subject: String
    /// How: `type year in the database, integer built from the schema`.
    public var detail: String

    public var description: String { "\(table): \(subject): \(detail)" }
}

extension TableShape {
    /// Where `built` differs from `live`, table by table, in a stable order. `liveName` and
    /// `builtName` say what each side is in the details ("the database", "the schema").
    ///
    ///     let live = try PostgresCatalogue.read(connection).tables.map(TableShape.init)
    ///     for difference in TableShape.differences(live: live, built: snapshot.tables.map(TableShape.init)) { print(difference) }
    public static func differences(live: [TableShape], built: [TableShape], liveName: String = "the database", builtName: String = "the schema")
        -> [ShapeDifference]
    {
        var differences: [ShapeDifference] = []
        let builtTables = Dictionary(built.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for table in live {
            guard let other = builtTables[table.name] else {
                differences.append(ShapeDifference(table: table.name, subject: "table", detail: "in \(liveName), not in \(builtName)"))
                continue
            }
            differences += compare(table, other, liveName: liveName, builtName: builtName)
        }
        let liveTables = Set(live.map(\.name))
        for table in built where !liveTables.contains(table.name) {
            differences.append(ShapeDifference(table: table.name, subject: "table", detail: "in \(builtName), not in \(liveName)"))
        }
        return differences
    }

    static func compare(_ live: TableShape, _ built: TableShape, liveName: String, builtName: String) -> [ShapeDifference] {
        var differences: [ShapeDifference] = []
        func add(_ subject: String, _ detail: String) { differences.append(ShapeDifference(table: live.name, subject: subject, detail: detail)) }
        func both(_ what: String, _ a: String, _ b: String) -> String { "\(what) \(a) in \(liveName), \(b) in \(builtName)" }
        for column in live.columns {
            guard let other = built.column(named: column.name) else {
                add("column \(column.name)", "in \(liveName) (\(column.type)), not in \(builtName)")
                continue
            }
            if column.type != other.type { add("column \(column.name)", both("type", column.type, other.type)) }
            if column.isNotNull != other.isNotNull {
                add("column \(column.name)", both("", column.isNotNull ? "NOT NULL" : "nullable", other.isNotNull ? "NOT NULL" : "nullable").trimmingCharacters(in: .whitespaces))
            }
            if column.defaultValue != other.defaultValue {
                add("column \(column.name)", both("default", column.defaultValue ?? "none", other.defaultValue ?? "none"))
            }
            if column.isGenerated != other.isGenerated {
                add("column \(column.name)", both("", column.isGenerated ? "generated" : "stored", other.isGenerated ? "generated" : "stored").trimmingCharacters(in: .whitespaces))
            }
        }
        for column in built.columns where live.column(named: column.name) == nil {
            add("column \(column.name)", "in \(builtName) (\(column.type)), not in \(liveName)")
        }
        if live.primaryKey != built.primaryKey {
            add("primary key", both("", list(live.primaryKey), list(built.primaryKey)).trimmingCharacters(in: .whitespaces))
        }
        func sets(_ what: String, _ a: [String], _ b: [String]) {
            for item in a where !b.contains(item) { add("\(what) \(item)", "in \(liveName), not in \(builtName)") }
            for item in b where !a.contains(item) { add("\(what) \(item)", "in \(builtName), not in \(liveName)") }
        }
        // A key on the same columns to the same table differs in its actions only.
        func split(_ key: String) -> (key: String, actions: String) {
            guard let range = key.range(of: " ON DELETE ") else { return (key, "") }
            return (String(key[..<range.lowerBound]), String(key[range.lowerBound...].dropFirst()))
        }
        let liveKeys = Dictionary(live.foreignKeys.map(split), uniquingKeysWith: { a, _ in a })
        let builtKeys = Dictionary(built.foreignKeys.map(split), uniquingKeysWith: { a, _ in a })
        for (key, actions) in liveKeys.sorted(by: { $0.key < $1.key }) {
            guard let other = builtKeys[key] else {
                add("foreign key \(key)", "in \(liveName) (\(actions)), not in \(builtName)")
                continue
            }
            if other != actions { add("foreign key \(key)", both("", actions, other).trimmingCharacters(in: .whitespaces)) }
        }
        for (key, actions) in builtKeys.sorted(by: { $0.key < $1.key }) where liveKeys[key] == nil {
            add("foreign key \(key)", "in \(builtName) (\(actions)), not in \(liveName)")
        }
        sets("unique", live.uniques.map(list), built.uniques.map(list))
        sets("index", live.indexes, built.indexes)
        sets("check", live.checks, built.checks)
        if live.partitioning != built.partitioning {
            add("partitioning", both("", live.partitioning ?? "none", built.partitioning ?? "none").trimmingCharacters(in: .whitespaces))
        }
        return differences
    }

    static func list(_ columns: [String]) -> String { "(" + columns.joined(separator: ", ") + ")" }

    // MARK: - From a live catalogue

    /// The shape of a table as the catalogue describes it.
    public init(_ table: PostgresCatalogue.Table) {
        name = table.name
        columns = table.columns.map { column in
            let value: String? =
                if !column.identity.isEmpty { "identity" } else if column.defaultSQL?.hasPrefix("nextval(") == true { "sequence" } else {
                    column.defaultSQL.map(Self.withoutCasts)
                }
            return Column(name: column.name, type: column.type, isNotNull: column.isNotNull, defaultValue: value, isGenerated: column.generated != nil)
        }
        primaryKey = table.primaryKey
        let actions = ["a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"]
        foreignKeys = table.constraints.filter { $0.kind == "f" }.map { key in
            Self.foreignKey(key.columns, key.referencedTable ?? "?", key.referencedColumns, onDelete: actions[key.onDelete] ?? key.onDelete, onUpdate: actions[key.onUpdate] ?? key.onUpdate)
        }.sorted()
        var uniques = table.constraints.filter { $0.kind == "u" }.map(\.columns)
        var indexes: [String] = []
        for index in table.indexes {
            if index.isPartial || index.hasExpressions {
                // The definition after its name: `USING btree (lower(title)) WHERE ...`.
                indexes.append(index.definition.range(of: " USING ").map { "USING " + index.definition[$0.upperBound...] } ?? index.definition)
            } else if index.isUnique {
                uniques.append(index.columns)
            } else {
                indexes.append("\(index.method) \(Self.list(index.columns))")
            }
        }
        self.uniques = uniques.sorted { Self.list($0) < Self.list($1) }
        self.indexes = indexes.sorted()
        checks = table.constraints.filter { $0.kind == "c" }.map { Self.check($0.definition) }.sorted()
        partitioning = table.partitioning.map { "\($0.key), \($0.partitions) partitions" }
    }

    static func foreignKey(_ columns: [String], _ table: String, _ referenced: [String], onDelete: String, onUpdate: String) -> String {
        "\(list(columns)) -> \(table) \(list(referenced)) ON DELETE \(onDelete) ON UPDATE \(onUpdate)"
    }

    /// `allowed values of status: 'a', 'b'` for a list check (as PostgreSQL keeps `IN (...)`),
    /// else the definition as the catalogue gives it.
    static func check(_ definition: String) -> String {
        guard let allowed = PostgresImporter.Builder.allowedValues(definition) else { return definition }
        return "allowed values of \(allowed.column): " + allowed.values.map { PostgresRenderer.dialect.literal($0) }.joined(separator: ", ")
    }

    /// `'G'::mpaa_rating` -> `'G'`, `(-1)` -> `-1`, `'{}'::text[]` -> `'{}'`: casts and the
    /// parentheses `pg_get_expr` adds, so two spellings of one value compare equal.
    static func withoutCasts(_ sql: String) -> String {
        var text = sql.trimmingCharacters(in: .whitespaces)
        text = text.replacingOccurrences(of: #"::[A-Za-z_][A-Za-z0-9_ ."]*(\(\d+(,\d+)?\))?(\[\])?"#, with: "", options: .regularExpression)
        while text.hasPrefix("("), text.hasSuffix(")"), balanced(text.dropFirst().dropLast()) { text = String(text.dropFirst().dropLast()) }
        // A number written as text ('4.99' into a numeric column) is kept as the number.
        if text.count > 2, text.hasPrefix("'"), text.hasSuffix("'"), Double(text.dropFirst().dropLast()) != nil { text = String(text.dropFirst().dropLast()) }
        return text
    }

    static func balanced(_ text: Substring) -> Bool {
        var depth = 0
        for character in text {
            if character == "(" { depth += 1 }
            if character == ")" { depth -= 1 }
            if depth < 0 { return false }
        }
        return depth == 0
    }

    // MARK: - Predicted from a relational model

    /// The table schemagen's first PostgreSQL migration builds for `table`.
    public init(_ table: TableSnapshot) {
        name = table.name
        var columns = table.columns.map { column in
            Column(
                name: column.name, type: Self.formatted(PostgresRenderer().typeName(column)), isNotNull: !column.isNullable || column.isAutoIncrement,
                defaultValue: column.isAutoIncrement ? "identity" : column.defaultValue.map { Self.withoutCasts(PostgresRenderer.literal($0, kind: column.kind)) },
                isGenerated: false)
        }
        var indexes: [String] = []
        var uniques: [[String]] = []
        for index in table.indexes {
            if index.isFullText {
                let column = PostgresRenderer.searchColumn(index)
                columns.append(Column(name: column, type: "tsvector", isNotNull: false, defaultValue: nil, isGenerated: true))
                indexes.append("gin (\(column))")
            } else if index.isUnique {
                uniques.append(index.columns)
            } else {
                indexes.append("btree \(Self.list(index.columns))")
            }
        }
        self.columns = columns
        primaryKey = table.primaryKey
        foreignKeys = table.foreignKeys.map { key in
            Self.foreignKey(key.columns, key.table, key.referencedColumns, onDelete: key.onDelete.rawValue, onUpdate: "NO ACTION")
        }.sorted()
        self.uniques = uniques.sorted { Self.list($0) < Self.list($1) }
        self.indexes = indexes.sorted()
        checks = table.columns.compactMap { column in
            guard let values = column.enumValues, !values.isEmpty else { return nil }
            return "allowed values of \(column.name): " + values.map { column.kind == .integer ? $0 : PostgresRenderer.dialect.literal($0) }.joined(separator: ", ")
        }.sorted()
        partitioning = nil
    }

    /// `timestamptz` as `format_type` writes it, so both sides use one spelling.
    static func formatted(_ type: String) -> String {
        switch type {
        case "timestamptz": "timestamp with time zone"
        default: type
        }
    }
}
