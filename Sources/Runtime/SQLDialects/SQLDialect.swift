import SchemaMetadata

/// What one SQL engine needs from everything that writes SQL for it: how names and literals are
/// quoted, what a storage kind is called, and what the engine can change in place. The planner's
/// renderers, the migrator and the runtime store all quote through the dialect, so no SQL text
/// is built with a hand-written quote.
public protocol SQLDialect: Sendable {
    /// The dialect's entry in the registry (`SQLDialectName`).
    var registryName: SQLDialectName { get }
    /// What the engine can do in place, which the planner and the migrator branch on.
    var capabilities: DialectCapabilities { get }
    /// An identifier in double quotes, every quote inside doubled.
    func quote(_ identifier: String) -> String
    /// A string literal in single quotes, every quote inside doubled.
    func literal(_ text: String) -> String
    /// The column type that keeps values of a storage kind.
    func columnType(_ kind: StorageKind) -> String
    /// `a` equal to `b` where NULL equals NULL (`negated`: differs), as Swift's `==` compares
    /// optionals.
    func nullSafeEquality(_ a: SQL, _ b: SQL, negated: Bool) -> SQL
    /// The 1-based position of `needle` in `text`, 0 when absent.
    func position(of needle: SQL, in text: SQL) -> SQL
    /// The larger of two values.
    func greatest(_ a: SQL, _ b: SQL) -> SQL
    /// A column definition for a key the database generates, increasing, never reused.
    func generatedKeyColumn(_ name: String) -> String
    /// What an INSERT ends with for a row whose key or unique value (`target`; any, when nil)
    /// is already taken: skip the row (`assignments` nil), or update the stored row with them
    /// (`proposed(_:)` names the value the insert brought).
    func onConflict(_ target: [String]?, set assignments: [SQL]?) -> SQL
    /// In `onConflict`'s assignments, the value the insert proposed for `column`.
    func proposed(_ column: String) -> SQL
    /// What an INSERT, UPDATE or DELETE ends with to give back `columns` of the rows it wrote.
    func returning(_ columns: SQL) -> SQL
    /// How history tokens follow commit order where transactions write side by side; nil
    /// where writers take turns, so a plain increasing key is already in commit order.
    var historyTokenOrdering: HistoryTokenOrdering? { get }
}

extension SQLDialect {
    /// Writers take turns: the history's generated key is in commit order.
    public var historyTokenOrdering: HistoryTokenOrdering? { nil }
}

/// How a dialect whose transactions write side by side gives history rows tokens in commit
/// order: a column default from the writing transaction, the check that the column has it, and
/// the statement that sets it. The history tables' migrations and the store's opening both use
/// these, so both skip the change alike.
public struct HistoryTokenOrdering: Sendable, Hashable {
    /// Ordered tokens start here, above every token the history's key gave before.
    public let base: Int64
    /// The token column's default: the base plus the writing transaction's id.
    public let columnDefault: String
    /// An SQL condition, true where the token column already has that default.
    public let isInPlace: String
    /// The statement that gives the token column that default; run again, it changes nothing.
    public let setInPlace: String

    /// The ordering these statements make.
    ///
    ///     let ordering = HistoryTokenOrdering(base: 1 << 62, columnDefault: "(... + txid_current())", isInPlace: "...", setInPlace: "ALTER TABLE ...")
    public init(base: Int64, columnDefault: String, isInPlace: String, setInPlace: String) {
        self.base = base
        self.columnDefault = columnDefault
        self.isInPlace = isInPlace
        self.setInPlace = setInPlace
    }
}

/// The upsert and `RETURNING` clauses SQLite (3.35 and later) and PostgreSQL spell alike: each
/// dialect says it spells them so, and a dialect that does not spells its own.
public enum SharedClauses {
    /// ` ON CONFLICT ("key") DO UPDATE SET ...`, ` ON CONFLICT ("key") DO NOTHING`, or ` ON CONFLICT DO NOTHING`.
    ///
    ///     SharedClauses.onConflict(["id"], set: nil)   // ON CONFLICT ("id") DO NOTHING
    public static func onConflict(_ target: [String]?, set assignments: [SQL]?) -> SQL {
        let on: SQL = target.map { " ON CONFLICT (\(SQL.identifiers($0)))" } ?? " ON CONFLICT"
        guard let assignments, !assignments.isEmpty else { return on + " DO NOTHING" }
        return on + " DO UPDATE SET \(SQL.list(assignments))"
    }

    /// `excluded."column"`.
    public static func proposed(_ column: String) -> SQL { "excluded.\(identifier: column)" }

    /// ` RETURNING columns`.
    public static func returning(_ columns: SQL) -> SQL { " RETURNING \(columns)" }
}

extension SQLDialect {
    /// `sqlite`, `postgres`: the name of a dialect's migration folder and of the header's `dialect`.
    public var name: String { registryName.rawValue }

    /// The same, for operands given as SQL text; build them as `SQL` instead.
    @available(*, deprecated, message: "build the operands as SQL: nullSafeEquality(_: SQL, _: SQL, negated:)")
    public func nullSafeEquality(_ a: String, _ b: String, negated: Bool) -> String {
        nullSafeEquality(SQL(verbatim: a), SQL(verbatim: b), negated: negated).rendered(for: self).text
    }

    /// The same, for operands given as SQL text; build them as `SQL` instead.
    @available(*, deprecated, message: "build the operands as SQL: position(of: SQL, in: SQL)")
    public func position(of needle: String, in text: String) -> String {
        position(of: SQL(verbatim: needle), in: SQL(verbatim: text)).rendered(for: self).text
    }

    /// The same, for operands given as SQL text; build them as `SQL` instead.
    @available(*, deprecated, message: "build the operands as SQL: greatest(_: SQL, _: SQL)")
    public func greatest(_ a: String, _ b: String) -> String { greatest(SQL(verbatim: a), SQL(verbatim: b)).rendered(for: self).text }
}

/// The dialect registry: every dialect the toolkit plans and applies migrations for, and what
/// each name maps to (its `SQLDialect`: capabilities, identifier limit and type table; its
/// migration folder). Nothing else spells a dialect's name or lists the dialects; the planner
/// maps each name to its renderer (`MigrationRenderers`), exhaustively.
public enum SQLDialectName: String, Sendable, Hashable, CaseIterable, Codable {
    /// SQLite 3.35 or later (`SQLiteDialect`) and PostgreSQL 12 or later (`PostgresDialect`).
    case sqlite, postgres

    /// The dialect this name stands for.
    public var dialect: any SQLDialect {
        switch self {
        case .sqlite: SQLiteDialect()
        case .postgres: PostgresDialect()
        }
    }

    /// The dialect whose migrations sit in a schema's folder itself (the first folders were
    /// SQLite's), and the one a schema plans for unless it says otherwise.
    public static let `default`: SQLDialectName = .sqlite

    /// The subfolder of a schema's migration folder that holds this dialect's migrations; nil
    /// for the default dialect, whose migrations are in the schema's folder itself.
    public var migrationSubfolder: String? { self == .default ? nil : rawValue }

    /// The longest identifier every dialect keeps whole, in bytes: what a name must fit to be
    /// portable.
    public static var portableIdentifierBytes: Int {
        allCases.compactMap { $0.dialect.capabilities.maximumIdentifierBytes }.min() ?? Int.max
    }

    /// The names, for messages: "sqlite, postgres".
    public static var list: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// What a dialect can do, declared once: the planner and the migrator branch on these, never on
/// the dialect's name (as Atlas's drivers do).
public struct DialectCapabilities: Sendable, Hashable {
    /// `ALTER TABLE ... ALTER COLUMN` changes a column's type, nullability or default in place;
    /// without it such changes rebuild the table.
    public var alterColumn: Bool
    /// `ALTER TABLE ... DROP COLUMN` (for columns no key or index needs).
    public var dropColumn: Bool
    /// `ALTER TABLE ... RENAME COLUMN` and `RENAME TO`.
    public var rename: Bool
    /// `ALTER TABLE ... ADD COLUMN` of a column without a constant default (a per-row default
    /// such as the current time).
    public var addColumnWithExpressionDefault: Bool
    /// Foreign keys and primary keys can be added to an existing table by name.
    public var alterConstraints: Bool
    /// The longest identifier the engine keeps whole, in bytes (nil: no limit that matters).
    public var maximumIdentifierBytes: Int?
    /// DDL takes locks that block other sessions' reads and writes while it runs (so lint
    /// reports them with safer recipes); SQLite's readers carry on in WAL mode.
    public var lockingDDL: Bool = false
    /// Tables and columns carry comments (`COMMENT ON`), written from the schema's docs.
    public var comments: Bool = false
    /// Roles are granted privileges on tables (`GRANT`), from the schema's `grants:`.
    public var grants: Bool = false
    /// Tables are declared STRICT, so each column holds values of its declared type only.
    public var strictTables: Bool = false
    /// Constraints carry names derived from their table and columns, which renames must follow
    /// (SQLite's are written without names).
    public var namedConstraints: Bool = false
    /// Parameters are numbered (`$1`) rather than positional (`?`).
    public var numberedParameters: Bool = false
    /// A failed statement aborts the whole transaction (PostgreSQL), so a write may not try a
    /// plain INSERT first and fall back to an upsert on a conflict: it upserts at once.
    public var failedStatementAbortsTransaction: Bool = false
    /// The connection reports the key its last insert gave (SQLite's rowid); without it an
    /// insert names the key it wants back with `RETURNING`.
    public var lastInsertedKey: Bool = false
    /// An OFFSET needs a LIMIT before it (SQLite's `LIMIT -1` reads to the end).
    public var offsetNeedsLimit: Bool = false
    /// NULL sorts after every value going up (PostgreSQL). SQLite, like Swift's optionals, puts
    /// it first; a sort that must agree says `NULLS FIRST` (`NULLS LAST` going down).
    public var nullsSortLast: Bool = false
    /// Writers run side by side and lock rows (PostgreSQL): a claim picks its rows with
    /// `FOR UPDATE SKIP LOCKED`, so concurrent claims pass each other's rows by instead of
    /// waiting or conflicting. SQLite has one writer at a time: its write lock is the claim.
    public var skipsLockedRows: Bool = false
    /// `WITH changed AS (UPDATE ... RETURNING ...) SELECT ... ORDER BY`: an update's returned
    /// rows read back sorted in the same statement (SQLite allows no UPDATE inside WITH).
    public var updatesInsideWith: Bool = false
    /// How searchable attributes are indexed: FTS5 tables (SQLite) or a generated `tsvector`
    /// column per index with a GIN index (PostgreSQL).
    public var fullText: FullText = .fts5

    /// The full-text machinery a dialect's migrations create.
    public enum FullText: Sendable, Hashable {
        /// FTS5 virtual tables (SQLite), or a generated `tsvector` column with a GIN index (PostgreSQL).
        case fts5, tsvector
    }

    /// Declares the capabilities every dialect must state; the others start false (full text as FTS5) and are set afterwards.
    ///
    ///     var capabilities = DialectCapabilities(alterColumn: true, dropColumn: true, rename: true, addColumnWithExpressionDefault: true,
    ///                                            alterConstraints: true, maximumIdentifierBytes: 63)
    public init(alterColumn: Bool, dropColumn: Bool, rename: Bool, addColumnWithExpressionDefault: Bool, alterConstraints: Bool, maximumIdentifierBytes: Int?) {
        self.alterColumn = alterColumn
        self.dropColumn = dropColumn
        self.rename = rename
        self.addColumnWithExpressionDefault = addColumnWithExpressionDefault
        self.alterConstraints = alterConstraints
        self.maximumIdentifierBytes = maximumIdentifierBytes
    }
}

/// Quoting shared by the dialects that follow standard SQL.
public enum SQLQuoting {
    /// The text between two `mark`s with every `mark` inside doubled, scalar by scalar:
    /// Foundation's `replacingOccurrences` compares characters, so it misses a quote followed by
    /// a combining mark (`"` + U+0301 is one character), which would end the quotes early.
    public static func enclose(_ text: String, in mark: Unicode.Scalar) -> String {
        var out = String.UnicodeScalarView()
        out.append(mark)
        for scalar in text.unicodeScalars {
            out.append(scalar)
            if scalar == mark { out.append(mark) }
        }
        out.append(mark)
        return String(out)
    }
}

/// SQLite 3.35 or later: ALTER TABLE renames and drops columns, everything else about a column
/// rebuilds its table; DDL is transactional; full text is FTS5.
public struct SQLiteDialect: SQLDialect {
    /// The SQLite dialect; it has no settings.
    ///
    ///     let text = ("DROP TABLE \(identifier: "job");" as SQL).text(for: SQLiteDialect())   // DROP TABLE "job";
    public init() {}

    /// The registry's `.sqlite` entry.
    public var registryName: SQLDialectName { .sqlite }

    /// Columns are renamed and dropped in place, other changes rebuild the table; tables are STRICT, inserts report their rowid.
    public var capabilities: DialectCapabilities {
        var capabilities = DialectCapabilities(
            alterColumn: false, dropColumn: true, rename: true, addColumnWithExpressionDefault: false,
            alterConstraints: false, maximumIdentifierBytes: nil)
        capabilities.strictTables = true
        capabilities.lastInsertedKey = true
        capabilities.offsetNeedsLimit = true
        return capabilities
    }

    /// The identifier in double quotes, every `"` inside doubled.
    public func quote(_ identifier: String) -> String { SQLQuoting.enclose(identifier, in: "\"") }
    /// The text in single quotes, every `'` inside doubled.
    public func literal(_ text: String) -> String { SQLQuoting.enclose(text, in: "'") }
    /// `(a IS b)`, or `(a IS NOT b)` when negated.
    public func nullSafeEquality(_ a: SQL, _ b: SQL, negated: Bool) -> SQL { "(\(a) \(SQL(verbatim: negated ? "IS NOT" : "IS")) \(b))" }
    /// `instr(text, needle)`.
    public func position(of needle: SQL, in text: SQL) -> SQL { "instr(\(text), \(needle))" }
    /// `max(a, b)`, SQLite's scalar maximum, which is NULL when either value is NULL.
    public func greatest(_ a: SQL, _ b: SQL) -> SQL { "max(\(a), \(b))" }
    /// `"name" INTEGER PRIMARY KEY AUTOINCREMENT`: an alias of the rowid that never reuses a deleted row's key.
    public func generatedKeyColumn(_ name: String) -> String { "\(quote(name)) INTEGER PRIMARY KEY AUTOINCREMENT" }
    /// `ON CONFLICT ... DO UPDATE SET` / `DO NOTHING`, as `SharedClauses` spells it.
    public func onConflict(_ target: [String]?, set assignments: [SQL]?) -> SQL { SharedClauses.onConflict(target, set: assignments) }
    /// `excluded."column"`.
    public func proposed(_ column: String) -> SQL { SharedClauses.proposed(column) }
    /// ` RETURNING columns`.
    public func returning(_ columns: SQL) -> SQL { SharedClauses.returning(columns) }

    /// STRICT tables allow INTEGER, REAL, TEXT, BLOB and ANY: dates, days, UUIDs, URLs and
    /// decimals are kept as text (decimals exactly), booleans as 0 and 1.
    public func columnType(_ kind: StorageKind) -> String {
        switch kind {
        case .integer, .boolean: "INTEGER"
        case .real: "REAL"
        case .blob: "BLOB"
        case .text, .date, .day, .uuid, .url, .decimal, .json: "TEXT"
        }
    }
}

/// PostgreSQL 12 or later (CockroachDB and YugabyteDB speak enough of it): DDL is
/// transactional and alters columns, constraints and names in place, so nothing is rebuilt;
/// full text is a generated `tsvector` column with a GIN index; names over 63 bytes are cut.
public struct PostgresDialect: SQLDialect {
    /// The PostgreSQL dialect; it has no settings.
    ///
    ///     let type = PostgresDialect().columnType(.date)   // "timestamptz"
    public init() {}

    /// The registry's `.postgres` entry.
    public var registryName: SQLDialectName { .postgres }

    /// Everything alters in place, names over 63 bytes are cut, DDL locks, parameters are numbered (`$1`) and full text is `tsvector`.
    public var capabilities: DialectCapabilities {
        var capabilities = DialectCapabilities(
            alterColumn: true, dropColumn: true, rename: true, addColumnWithExpressionDefault: true,
            alterConstraints: true, maximumIdentifierBytes: 63)
        capabilities.lockingDDL = true
        capabilities.comments = true
        capabilities.grants = true
        capabilities.namedConstraints = true
        capabilities.numberedParameters = true
        capabilities.failedStatementAbortsTransaction = true
        capabilities.fullText = .tsvector
        capabilities.nullsSortLast = true
        capabilities.skipsLockedRows = true
        capabilities.updatesInsideWith = true
        return capabilities
    }

    /// The identifier in double quotes, every `"` inside doubled.
    public func quote(_ identifier: String) -> String { SQLQuoting.enclose(identifier, in: "\"") }
    /// Standard strings (`standard_conforming_strings` is on since 9.1): backslashes are literal.
    public func literal(_ text: String) -> String { SQLQuoting.enclose(text, in: "'") }
    /// `(a IS NOT DISTINCT FROM b)`, or `(a IS DISTINCT FROM b)` when negated.
    public func nullSafeEquality(_ a: SQL, _ b: SQL, negated: Bool) -> SQL { "(\(a) IS \(SQL(verbatim: negated ? "" : "NOT "))DISTINCT FROM \(b))" }
    /// `strpos(text, needle)`.
    public func position(of needle: SQL, in text: SQL) -> SQL { "strpos(\(text), \(needle))" }
    /// `greatest(a, b)`, which ignores a NULL value and is NULL only when both are.
    public func greatest(_ a: SQL, _ b: SQL) -> SQL { "greatest(\(a), \(b))" }
    /// `"name" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY`: an identity column the database fills, increasing.
    public func generatedKeyColumn(_ name: String) -> String { "\(quote(name)) bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY" }
    /// `ON CONFLICT ... DO UPDATE SET` / `DO NOTHING`, as `SharedClauses` spells it.
    public func onConflict(_ target: [String]?, set assignments: [SQL]?) -> SQL { SharedClauses.onConflict(target, set: assignments) }
    /// `excluded."column"`.
    public func proposed(_ column: String) -> SQL { SharedClauses.proposed(column) }
    /// ` RETURNING columns`.
    public func returning(_ columns: SQL) -> SQL { SharedClauses.returning(columns) }

    /// Tokens are 2^62 plus the writing transaction's id (`txid_current()`, 64 bits with its
    /// epoch), above every token of the identity column earlier releases used.
    public var historyTokenOrdering: HistoryTokenOrdering? {
        let base: Int64 = 1 << 62
        let columnDefault = "(\(base) + txid_current())"
        return HistoryTokenOrdering(
            base: base, columnDefault: columnDefault,
            isInPlace: "EXISTS (SELECT 1 FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum "
                + "WHERE d.adrelid = to_regclass('schemagen_history') AND a.attname = 'token' AND pg_get_expr(d.adbin, d.adrelid) LIKE '%txid_current()%')",
            setInPlace: "ALTER TABLE schemagen_history ALTER COLUMN token DROP IDENTITY IF EXISTS, ALTER COLUMN token SET DEFAULT \(columnDefault);")
    }

    /// The column type at full width: `bigint` for integers, `double precision` for reals.
    public func columnType(_ kind: StorageKind) -> String { columnType(kind, bits: nil) }

    /// `bits` narrows integers (8 and 16: smallint, 32: integer) and reals (32: real).
    public func columnType(_ kind: StorageKind, bits: Int?) -> String {
        switch kind {
        case .integer: bits.map { $0 <= 16 ? "smallint" : $0 <= 32 ? "integer" : "bigint" } ?? "bigint"
        case .real: bits == 32 ? "real" : "double precision"
        case .boolean: "boolean"
        case .date: "timestamptz"
        case .day: "date"
        case .blob: "bytea"
        case .uuid: "uuid"
        case .decimal: "numeric"
        case .json: "jsonb"
        case .text, .url: "text"
        }
    }
}
