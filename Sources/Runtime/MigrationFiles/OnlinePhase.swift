import Foundation

/// One phase of an online (expand/contract) PostgreSQL migration as its file holds it: the
/// sections after the header, each opened by a `-- section: KIND` line. The migrator runs them in
/// order and records each one it finishes, so a killed run resumes at the section it was in.
///
/// ```
/// -- section: transaction {"relations":["item","schemagen_2_quantity"]}
/// ALTER TABLE "item" ADD COLUMN "schemagen_2_quantity" bigint;
///
/// -- section: statement {"concurrently":true,"relations":["item_name_index","item","name"]}
/// DROP INDEX CONCURRENTLY IF EXISTS "item_name_index";
/// CREATE INDEX CONCURRENTLY "item_name_index" ON "item" ("name");
///
/// -- section: backfill {"batch":1000,"bounds":"inclusive","key":"id","pending":"SELECT \"id\" FROM ...","table":"item","type":"bigint"}
/// UPDATE "item" SET "schemagen_2_quantity" = "quantity" WHERE "id" IN (SELECT "id" FROM "item" WHERE "id" >= $1::bigint AND "id" <= $2::bigint AND ("schemagen_2_quantity" IS DISTINCT FROM "quantity") FOR UPDATE SKIP LOCKED);
/// ```
///
/// What the migrator needs to know of a section is written on its `-- section:` line as JSON
/// (`SectionFacts`, and a backfill's `pending` query and `copies`), so it never reads the SQL to
/// find out. Files written before the facts were (no JSON after `transaction` or `statement`)
/// get them from `SectionFacts.ofEarlierFile(_:)` when read.
///
/// - `transaction`: the statements run in one transaction (a short lock timeout, retried with
///   backoff when a lock is not granted in time).
/// - `statement`: statements run outside a transaction, one by one (`CREATE INDEX
///   CONCURRENTLY`, `VALIDATE CONSTRAINT`); a resumed section runs whole again, so together they
///   must be safe to run again (an index build drops an invalid leftover of itself first).
/// - `check`: a query listing what a table rebuilt by copying carries across (rows of what,
///   `carry` or `stop`, why); run first, it stops the phase on any `stop` unless the run drops
///   such objects (`--drop-uncarried`). `status` and `--dry-run` run it to list them.
/// - `backfill`: one UPDATE run over key ranges of `batch` rows, each batch committed with its
///   progress. With `"bounds":"inclusive"` (what schemagen writes), `$1` and `$2` are the range's
///   first and last keys, and the rows are taken `FOR UPDATE SKIP LOCKED`: a row an app holds is
///   passed by and revisited at the end. Without it (files of earlier releases), `$1` is the
///   range's exclusive lower bound (NULL for the first) and `$2` its inclusive upper bound.
public struct OnlinePhase: Sendable, Hashable {
    /// One section of a phase.
    public enum Section: Sendable, Hashable {
        /// Statements run in one transaction.
        case transaction(String, SectionFacts)
        /// Statements run outside a transaction, one by one; the section, run again whole, is safe.
        case statement(String, SectionFacts)
        /// An UPDATE (or a copy's INSERT) run over key ranges (`$1`, `$2`).
        case backfill(Backfill, update: String)
        /// A query of what a table rebuilt by copying carries across, run before anything else:
        /// one row per object (what it is, `carry` or `stop`, and why). The migrator reports
        /// them, and stops the phase on any `stop` unless told to drop those objects.
        case check(String)
    }

    /// What the migrator needs to know of a `transaction` or `statement` section, written by
    /// the planner that made its statements.
    public struct SectionFacts: Codable, Sendable, Hashable {
        /// Every name the statements quote (tables, views, indexes, columns): when a lock wait
        /// runs out, the sessions holding locks on these are named.
        public var relations: [String]
        /// Whether a statement builds or drops an index concurrently: it runs with no lock
        /// timeout (which would abandon it midway), waits for every open transaction, and starts
        /// only within the replication lag and WAL budgets.
        public var concurrently: Bool

        /// Facts of a section's statements.
        ///
        ///     OnlinePhase.SectionFacts(relations: ["item", "item_name_index"], concurrently: true)
        public init(relations: [String], concurrently: Bool = false) {
            self.relations = relations
            self.concurrently = concurrently
        }

        enum CodingKeys: String, CodingKey { case relations, concurrently }

        /// Facts from a section line's JSON; a name list or flag left out is empty or false.
        ///
        ///     let facts = try JSONDecoder().decode(OnlinePhase.SectionFacts.self, from: Data(#"{"relations":["item"]}"#.utf8))
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            relations = try container.decodeIfPresent([String].self, forKey: .relations) ?? []
            concurrently = try container.decodeIfPresent(Bool.self, forKey: .concurrently) ?? false
        }

        /// The section line's JSON: `concurrently` only when true.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            if concurrently { try container.encode(true, forKey: .concurrently) }
            try container.encode(relations, forKey: .relations)
        }

        /// The facts of a section of a file written before sections carried them, read from its
        /// SQL as the migrator of those releases read it: every double-quoted name, and an index
        /// built or dropped `CONCURRENTLY` (a `VALIDATE CONSTRAINT` is not).
        ///
        ///     OnlinePhase.SectionFacts.ofEarlierFile(#"CREATE INDEX CONCURRENTLY "i" ON "t" ("c");"#).concurrently   // true
        public static func ofEarlierFile(_ sql: String) -> SectionFacts {
            var names: [String] = []
            for match in sql.matches(of: /"((?:[^"]|"")+)"/) {
                let name = String(match.1).replacingOccurrences(of: "\"\"", with: "\"")
                if !names.contains(name) { names.append(name) }
            }
            return SectionFacts(relations: names, concurrently: sql.contains(" CONCURRENTLY ") && !sql.contains("VALIDATE CONSTRAINT"))
        }
    }

    /// What a `check` section's query answers, row by row.
    public enum CheckAction: String, Sendable {
        /// The object is made again on the rebuilt table.
        case carry
        /// The object cannot be made again (it uses a column the version renames or drops, say).
        case stop
    }

    /// A batched UPDATE's table and key, as its directive names them.
    public struct Backfill: Codable, Sendable, Hashable {
        /// The table the UPDATE writes.
        public var table: String
        /// The single-column key batches are ranges of.
        public var key: String
        /// The key's type as PostgreSQL names it, for the range parameters' casts.
        public var type: String
        /// Rows per batch.
        public var batch: Int
        /// `inclusive`: the UPDATE takes each range's first and last keys and skips locked rows;
        /// nil for the exclusive lower bound of files written before.
        public var bounds: String?
        /// The query of the keys a range (`$1`, `$2`) still has to write, without row locks: the
        /// rows passed by because an app held them are looked for with it at the end. Nil when
        /// the statement takes no row locks.
        public var pending: String?
        /// Whether the statement copies rows into another table (`INSERT ... SELECT`), counted
        /// as it goes, rather than updating them in place.
        public var copies: Bool?

        /// Whether the UPDATE takes inclusive bounds (and skips locked rows).
        public var inclusive: Bool { bounds == "inclusive" }

        /// A backfill of `table` by `key` (of PostgreSQL type `type`), `batch` rows at a time.
        ///
        ///     OnlinePhase.Backfill(table: "item", key: "id", type: "bigint", batch: 1000, bounds: "inclusive", pending: pendingQuery)
        public init(table: String, key: String, type: String, batch: Int, bounds: String? = nil, pending: String? = nil, copies: Bool? = nil) {
            self.table = table
            self.key = key
            self.type = type
            self.batch = batch
            self.bounds = bounds
            self.pending = pending
            self.copies = copies
        }

        /// This backfill with the facts a file written before them leaves out, read from its
        /// statement as the migrator of those releases read it.
        func withFactsOfEarlierFile(_ statement: String) -> Backfill {
            guard pending == nil, copies == nil else { return self }
            var known = self
            let copying = copyPendingQuery(statement)
            known.pending = copying ?? pendingQuery(in: statement)
            known.copies = copying != nil
            return known
        }

        /// For files written before backfills carried `pending`: the query of the rows an
        /// inclusive backfill's UPDATE still has to write in a range (`$1`, `$2`), its subquery
        /// without the row locks. Nil for an UPDATE not shaped as schemagen wrote it (`... WHERE
        /// "key" IN (SELECT ... FOR UPDATE SKIP LOCKED);`).
        ///
        ///     backfill.pendingQuery(in: update)   // SELECT "id" FROM "item" WHERE "id" >= $1 ... AND (...)
        public func pendingQuery(in update: String) -> String? {
            let trimmed = update.trimmingCharacters(in: .whitespacesAndNewlines)
            if let copied = copyPendingQuery(trimmed) { return copied }
            let suffix = " FOR UPDATE SKIP LOCKED);"
            guard let open = trimmed.range(of: " IN (SELECT "), trimmed.hasSuffix(suffix) else { return nil }
            return String(trimmed[trimmed.index(open.lowerBound, offsetBy: 5)..<trimmed.index(trimmed.endIndex, offsetBy: -suffix.count)])
        }

        /// For files written before backfills carried `pending`: the query of the rows a copying
        /// backfill (`INSERT INTO copy ... SELECT ... FROM table
        /// AS schemagen_source WHERE ... FOR SHARE OF schemagen_source SKIP LOCKED;`) still has to
        /// copy in a range (`$1`, `$2`); nil for any other statement.
        ///
        ///     backfill.copyPendingQuery(copy)   // SELECT schemagen_source."id" AS "id" FROM "item" AS schemagen_source WHERE ...
        public func copyPendingQuery(_ statement: String) -> String? {
            let statement = statement.trimmingCharacters(in: .whitespacesAndNewlines)
            let suffix = " FOR SHARE OF schemagen_source SKIP LOCKED;"
            guard statement.hasPrefix("INSERT INTO "), statement.hasSuffix(suffix), let source = statement.range(of: " AS schemagen_source WHERE "),
                let from = statement[..<source.lowerBound].range(of: " FROM ", options: .backwards)
            else { return nil }
            let key = "\"" + key.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            return "SELECT schemagen_source.\(key) AS \(key)" + statement[from.lowerBound..<statement.index(statement.endIndex, offsetBy: -suffix.count)]
        }
    }

    /// The sections, in the order they run.
    public var sections: [Section]
    /// The line of the file each section's SQL starts on (read files only), for messages.
    public var lines: [Int] = []

    /// A phase of these sections (`lines` only for phases read from a file).
    ///
    ///     OnlinePhase(sections: [.transaction("ALTER TABLE \"item\" ADD COLUMN \"sku\" text;")])
    public init(sections: [Section], lines: [Int] = []) {
        self.sections = sections
        self.lines = lines
    }

    static let marker = "-- section: "

    /// The sections as file text (without the header).
    public var text: String {
        sections.map { section in
            switch section {
            case .transaction(let sql, let facts): Self.marker + "transaction " + Self.json(facts) + "\n" + sql
            case .statement(let sql, let facts): Self.marker + "statement " + Self.json(facts) + "\n" + sql
            case .backfill(let backfill, let update):
                Self.marker + "backfill " + Self.json(backfill) + "\n" + update
            case .check(let query): Self.marker + "check\n" + query
            }
        }.joined(separator: "\n\n") + (sections.isEmpty ? "" : "\n")
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// A section line's facts: the JSON after its kind, or, in a file written before sections
    /// carried them, what its SQL says.
    static func facts(_ argument: Substring, sql: String, line: Int) throws(ParseError) -> SectionFacts {
        guard !argument.allSatisfy(\.isWhitespace) else { return .ofEarlierFile(sql) }
        guard let facts = try? JSONDecoder().decode(SectionFacts.self, from: Data(argument.utf8)) else {
            throw ParseError(line: line, message: "the facts after the section's kind are not {\"relations\": [...], \"concurrently\": true|false}")
        }
        return facts
    }

    /// A section line the migrator cannot accept.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The line of the file, from 1.
        public var line: Int
        /// What is wrong with it.
        public var message: String
        /// `line N: message`.
        public var description: String { "line \(line): \(message)" }
    }

    /// The sections of a phase file; text before the first section (the header, comments) is
    /// not SQL the phase runs, and must hold none.
    public static func parse(_ sql: String) throws(ParseError) -> OnlinePhase {
        var sections: [Section] = []
        var lines: [Int] = []
        var kind: (name: Substring, argument: Substring, line: Int)?
        var body: [Substring] = []
        func close() throws(ParseError) {
            guard let current = kind else { return }
            // The SQL's first line: blank lines after the marker are trimmed away.
            lines.append(current.line + 1 + body.prefix { $0.allSatisfy(\.isWhitespace) }.count)
            let text = body.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
            switch current.name {
            case "transaction": sections.append(.transaction(text, try facts(current.argument, sql: text, line: current.line)))
            case "statement": sections.append(.statement(text, try facts(current.argument, sql: text, line: current.line)))
            case "check": sections.append(.check(text))
            case "backfill":
                guard let backfill = try? JSONDecoder().decode(Backfill.self, from: Data(current.argument.utf8)), backfill.batch > 0 else {
                    throw ParseError(line: current.line, message: "a backfill section needs {\"table\", \"key\", \"type\", \"batch\"} after 'backfill'")
                }
                sections.append(.backfill(backfill.withFactsOfEarlierFile(text), update: text))
            default:
                throw ParseError(line: current.line, message: "unknown section '\(current.name)'; expected transaction, statement, backfill or check")
            }
        }
        for (offset, line) in sql.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix(marker) {
                try close()
                let rest = line.dropFirst(marker.count)
                let name = rest.prefix { $0 != " " }
                kind = (name, rest.dropFirst(name.count).drop { $0 == " " }, offset + 1)
                body = []
            } else if kind != nil {
                body.append(line)
            } else if !line.hasPrefix("--"), !line.allSatisfy(\.isWhitespace) {
                throw ParseError(line: offset + 1, message: "SQL before the first section; every statement of a phase belongs to a section (after a `-- section:` line)")
            }
        }
        try close()
        return OnlinePhase(sections: sections, lines: lines)
    }
}

/// The PostgreSQL schema that serves one version of a schema to applications during and after
/// online migrations: `shop_v2` for Shop version 2, holding one view per table under that
/// version's names. An app picks its version with `search_path`.
public enum VersionSchema {
    /// The schema serving `version` of `schema`.
    ///
    ///     VersionSchema.name(schema: "Shop", version: 2)   // "shop_v2"
    public static func name(schema: String, version: Int) -> String {
        snakeCase(schema) + "_v\(version)"
    }

    /// The online migration whose views serve the newest of `migrations` (their up files'
    /// headers, oldest first, each with its number): the newest one planned online, looked for
    /// past hand-written migrations after it (their header's versions are equal: no table
    /// changed, so its views still serve). Nil when a migration applied whole came after it.
    ///
    ///     VersionSchema.servingMigration([(1, h1), (2, h2), (3, handWritten)])?.number   // 2
    public static func servingMigration(_ migrations: [(number: Int, header: MigrationHeader?)]) -> (number: Int, header: MigrationHeader)? {
        for (number, header) in migrations.reversed() {
            guard let header else { return nil }
            if header.online == .expand { return (number, header) }
            guard header.online == nil, let from = header.fromVersion, from == header.toVersion else { return nil }
        }
        return nil
    }

    /// The schema versions an online migration serves: once expanded, the version it comes from
    /// and its own (both from its header, so a hand-written migration numbered in between shifts
    /// nothing); while expanding or once contracted, its own.
    ///
    ///     VersionSchema.versions(servedBy: header, expanded: true)   // [4, 5]
    public static func versions(servedBy header: MigrationHeader, number: Int, expanded: Bool) -> [Int] {
        let to = header.toVersion ?? number
        guard expanded, let from = header.fromVersion, from > 0, from != to else { return [to] }
        return [from, to]
    }

    /// `FlightsArchive` -> `flights_archive` (the schema language's table naming).
    static func snakeCase(_ name: String) -> String {
        let characters = Array(name)
        var out = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower), previous != "_" { out.append("_") }
            }
            out += character.lowercased()
        }
        return out
    }
}

/// What a version's view reads while an online migration is expanded, when that differs from
/// its own names: the table (by its name until contract) and, per view column, the table's
/// column. Written as the view's comment (`schemagen-view: {...}`) by the planner and read by
/// the store, which records changes from the table's rows and reads them back under the view's
/// names. Contract clears it.
public struct ViewMapping: Codable, Sendable, Hashable {
    /// The table the view reads, by its name until contract.
    public var table: String
    /// View column -> table column, for the columns whose names differ.
    public var columns: [String: String]

    /// A view reading `table`, with `columns` (view column -> table column) where they differ.
    ///
    ///     ViewMapping(table: "item", columns: ["title": "name"]).comment
    public init(table: String, columns: [String: String]) {
        self.table = table
        self.columns = columns
    }

    static let prefix = "schemagen-view: "

    /// The view's comment: `schemagen-view: {"columns":{...},"table":"..."}`.
    public var comment: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Self.prefix + ((try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}")
    }

    /// The mapping a view's comment holds; nil for any other comment.
    ///
    ///     let mapping = ViewMapping(comment: #"schemagen-view: {"columns":{"title":"name"},"table":"item"}"#)
    public init?(comment: String) {
        guard comment.hasPrefix(Self.prefix), let mapping = try? JSONDecoder().decode(ViewMapping.self, from: Data(comment.dropFirst(Self.prefix.count).utf8)) else { return nil }
        self = mapping
    }
}
