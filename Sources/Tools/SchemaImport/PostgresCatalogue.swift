import Foundation
import PostgresKit
import SchemaMetadata

/// What a PostgreSQL database's catalogue (`pg_catalog`) says about the tables of one schema (the
/// connection's current schema), read as it is: columns with their types as `format_type` writes
/// them, constraints and indexes with the definitions `pg_get_constraintdef` and
/// `pg_get_indexdef` give, enum types, and what the schema language cannot hold (views,
/// triggers, other schemas) by name and SQL. The importer interprets it.
public struct PostgresCatalogue: Sendable {
    public struct Column: Sendable, Equatable {
        public var name: String
        /// `integer`, `numeric(10,2)`, `character varying(80)`, `text[]`, `status` (an enum).
        public var type: String
        /// `b` base, `e` enum, `d` domain, `c` composite...; for arrays, the element's.
        public var typeKind: String
        /// The element type of an array (`text` for `text[]`); nil otherwise.
        public var elementType: String?
        public var isNotNull: Bool
        /// The default as `pg_get_expr` writes it: `'abc'::text`, `0`, `now()`, `nextval(...)`.
        public var defaultSQL: String?
        /// `a` (ALWAYS) or `d` (BY DEFAULT) for identity columns, else empty.
        public var identity: String
        /// The expression of a stored generated column, else nil.
        public var generated: String?
        /// A column of a domain type: the domain's base type (as `format_type` writes it) and
        /// its CHECK constraints, since the schema language has no domains.
        public var domain: Domain? = nil
    }

    /// A domain (`CREATE DOMAIN year AS integer CHECK (...)`) a column's type is.
    public struct Domain: Sendable, Equatable {
        public var name: String
        public var baseType: String
        public var checks: [String]
        public var isNotNull: Bool
    }

    public struct Constraint: Sendable, Equatable {
        public var name: String
        /// `p` primary key, `u` unique, `f` foreign key, `c` check, `x` exclusion.
        public var kind: String
        public var definition: String
        public var columns: [String]
        public var referencedTable: String?
        public var referencedColumns: [String]
        /// `a` no action, `r` restrict, `c` cascade, `n` set null, `d` set default.
        public var onDelete: String
        public var onUpdate: String
    }

    public struct Index: Sendable, Equatable {
        public var name: String
        public var isUnique: Bool
        public var isPartial: Bool
        public var hasExpressions: Bool
        /// `btree`, `gin`, ...
        public var method: String
        public var columns: [String]
        public var definition: String
    }

    public struct Table: Sendable {
        public var name: String
        public var comment: String?
        public var columns: [Column]
        public var constraints: [Constraint]
        /// Indexes that no constraint made.
        public var indexes: [Index]
        /// A partitioned table's partition key (`RANGE (payment_date)`) and how many partitions
        /// it has; nil for a plain table.
        public var partitioning: (key: String, partitions: Int)? = nil

        public func column(named name: String) -> Column? { columns.first { $0.name == name } }
        public var primaryKey: [String] { constraints.first { $0.kind == "p" }?.columns ?? [] }
    }

    /// Something of the schema the language has no place for: a view, a trigger, a function.
    public struct Other: Sendable, Equatable {
        public var kind: String
        public var name: String
        public var table: String?
        public var sql: String
    }

    public var schema: String
    public var tables: [Table]
    /// Enum types by name, their labels in order.
    public var enums: [String: [String]]
    public var others: [Other]
    /// Other schemas holding relations, with their relation names.
    public var otherSchemas: [String: [String]]

    /// Reads the catalogue of the connection's current schema.
    public static func read(_ connection: PostgresConnection) throws(PostgresError) -> PostgresCatalogue {
        let schema = text(try connection.query("SELECT current_schema()::text").first?.first) ?? "public"
        let tables = try readTables(connection)
        var enums: [String: [String]] = [:]
        for row in try connection.query(CatalogueQuery.enums) { if let name = text(row[0]) { enums[name] = strings(row[1]) } }
        let others = try connection.query(CatalogueQuery.others).compactMap { row -> Other? in
            guard let kind = text(row[0]), let name = text(row[1]) else { return nil }
            return Other(kind: kind, name: name, table: text(row[2]), sql: text(row[3]) ?? "")
        }
        var otherSchemas: [String: [String]] = [:]
        for row in try connection.query(CatalogueQuery.schemas) { if let name = text(row[0]) { otherSchemas[name] = strings(row[1]) } }
        return PostgresCatalogue(schema: schema, tables: tables, enums: enums, others: others, otherSchemas: otherSchemas)
    }

    /// The schema's tables with their columns, constraints and indexes, by name.
    private static func readTables(_ connection: PostgresConnection) throws(PostgresError) -> [Table] {
        var tables: [Int64: Table] = [:]
        var order: [Int64] = []
        for row in try connection.query(CatalogueQuery.tables) {
            guard case .integer(let oid) = row[0], let name = text(row[1]) else { continue }
            tables[oid] = Table(name: name, comment: text(row[2]), columns: [], constraints: [], indexes: [])
            if let key = text(row[3]), case .integer(let partitions) = row[4] { tables[oid]?.partitioning = (key, Int(partitions)) }
            order.append(oid)
        }
        for row in try connection.query(CatalogueQuery.columns) {
            guard case .integer(let oid) = row[0], let column = column(row) else { continue }
            tables[oid]?.columns.append(column)
        }
        for row in try connection.query(CatalogueQuery.constraints) {
            guard case .integer(let oid) = row[0], let name = text(row[1]), let kind = text(row[2]), let definition = text(row[3]) else { continue }
            let referenced = text(row[5]).map { $0.hasPrefix("\"") ? String($0.dropFirst().dropLast()) : $0 }
            tables[oid]?.constraints.append(
                Constraint(
                    name: name, kind: kind, definition: definition, columns: strings(row[4]), referencedTable: referenced.map { $0.split(separator: ".").last.map(String.init) ?? $0 },
                    referencedColumns: strings(row[6]), onDelete: text(row[7]) ?? "a", onUpdate: text(row[8]) ?? "a"))
        }
        for row in try connection.query(CatalogueQuery.indexes) {
            guard case .integer(let oid) = row[0], let name = text(row[1]) else { continue }
            tables[oid]?.indexes.append(
                Index(
                    name: name, isUnique: row[2] == .integer(1), isPartial: row[3] == .integer(1), hasExpressions: row[4] == .integer(1), method: text(row[5]) ?? "btree",
                    columns: strings(row[6]), definition: text(row[7]) ?? ""))
        }
        return order.compactMap { tables[$0] }
    }

    /// One row of `CatalogueQuery.columns`.
    private static func column(_ row: [StoredValue]) -> Column? {
        guard let name = text(row[1]), let type = text(row[2]) else { return nil }
        let generated = text(row[6]) == "s" ? text(row[4]) : nil
        var column = Column(
            name: name, type: type, typeKind: text(row[7]) ?? "b", elementType: text(row[8]), isNotNull: row[3] == .integer(1),
            defaultSQL: generated == nil ? text(row[4]) : nil, identity: text(row[5]) ?? "", generated: generated)
        if let domain = text(row[9]), let base = text(row[10]) {
            column.domain = Domain(name: domain, baseType: base, checks: strings(row[11]), isNotNull: row[12] == .integer(1))
        }
        return column
    }

    private static func text(_ value: StoredValue?) -> String? { if case .text(let text)? = value { text } else { nil } }

    /// A JSON array of strings, as `array_to_json(...)::text` gives it.
    private static func strings(_ value: StoredValue?) -> [String] {
        guard let json = text(value), let list = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [Any] else { return [] }
        return list.compactMap { $0 as? String }
    }
}

/// The catalogue queries, on the connection's current schema.
private enum CatalogueQuery {
    static let tables = """
        SELECT c.oid::bigint, c.relname::text, obj_description(c.oid, 'pg_class'),
               CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END, (SELECT count(*) FROM pg_inherits i WHERE i.inhparent = c.oid)
        FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname
        """

    static let columns = """
        SELECT a.attrelid::bigint, a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
               a.attidentity::text, a.attgenerated::text, coalesce(e.typtype, t.typtype)::text, format_type(e.oid, a.atttypmod),
               CASE WHEN t.typtype = 'd' THEN t.typname::text END, CASE WHEN t.typtype = 'd' THEN format_type(t.typbasetype, t.typtypmod) END,
               CASE WHEN t.typtype = 'd' THEN array_to_json(ARRAY(SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k WHERE k.contypid = t.oid ORDER BY k.conname))::text END,
               t.typnotnull
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_type t ON t.oid = a.atttypid
        LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attrelid, a.attnum
        """

    static let constraints = """
        SELECT k.conrelid::bigint, k.conname::text, k.contype::text, pg_get_constraintdef(k.oid),
               array_to_json(ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY AS u(n, i) JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i))::text,
               CASE WHEN k.confrelid <> 0 THEN k.confrelid::regclass::text END,
               array_to_json(ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY AS u(n, i) JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.i))::text,
               k.confdeltype::text, k.confupdtype::text
        FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') ORDER BY k.conrelid, k.conname
        """

    static let indexes = """
        SELECT i.indrelid::bigint, x.relname::text, i.indisunique, i.indpred IS NOT NULL, i.indexprs IS NOT NULL, am.amname::text,
               array_to_json(ARRAY(SELECT a.attname::text FROM unnest(i.indkey) WITH ORDINALITY AS u(n, o) JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.n ORDER BY u.o))::text,
               pg_get_indexdef(i.indexrelid)
        FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class c ON c.oid = i.indrelid JOIN pg_am am ON am.oid = x.relam
        WHERE c.relnamespace = current_schema()::regnamespace AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid)
        ORDER BY i.indrelid, x.relname
        """

    static let enums = """
        SELECT t.typname::text, array_to_json(array_agg(e.enumlabel::text ORDER BY e.enumsortorder))::text FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid
        WHERE t.typnamespace = current_schema()::regnamespace GROUP BY t.typname
        """

    static let others = """
        SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' END, c.relname::text, NULL::text,
               pg_get_viewdef(c.oid, true)
        FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('v', 'm', 'f')
        UNION ALL
        SELECT 'trigger', t.tgname::text, c.relname::text, pg_get_triggerdef(t.oid, true)
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
        UNION ALL
        SELECT 'function', p.proname::text, NULL::text, pg_get_functiondef(p.oid)
        FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND p.prokind IN ('f', 'p')
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
        ORDER BY 1, 2
        """

    static let schemas = """
        SELECT n.nspname::text, array_to_json(array_agg(c.relname::text ORDER BY c.relname))::text FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid
        WHERE n.nspname <> current_schema() AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'pg_temp%' AND n.nspname NOT LIKE 'pg_toast_temp%'
          AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
        GROUP BY n.nspname ORDER BY n.nspname
        """
}
