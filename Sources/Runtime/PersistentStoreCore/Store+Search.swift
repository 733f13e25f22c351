import Foundation
import MigrationFiles
import SQLDialects
import SchemaMetadata

/// One model found by `search`, with its rank and, when asked for, highlighted snippets.
public struct SearchResult<M: PersistentModel & Sendable>: Sendable {
    /// The model that matched.
    public let model: M
    /// The engine's score, lower for a better match: SQLite's bm25, PostgreSQL's `ts_rank`
    /// negated. Results come best first.
    public let rank: Double
    /// By searchable attribute: a short excerpt around the matches, with each match between
    /// the style's markers. Only attributes that matched appear.
    public let snippets: [String: String]
}

/// How snippets mark matches.
public struct SnippetStyle: Sendable, Hashable {
    /// Put before each match.
    public var open: String
    /// Put after each match.
    public var close: String
    /// Put where an excerpt cuts the text.
    public var ellipsis: String
    /// Roughly how many tokens an excerpt holds (1 to 64).
    public var tokens: Int

    /// A style; the defaults mark matches `[like this]`.
    public init(open: String = "[", close: String = "]", ellipsis: String = "…", tokens: Int = 12) {
        self.open = open
        self.close = close
        self.ellipsis = ellipsis
        self.tokens = tokens
    }
}

/// Full-text search over `searchable` attributes, through what the migrations create: FTS5
/// indexes kept current by triggers on SQLite, generated `tsvector` columns with GIN indexes on
/// PostgreSQL; either way in the same transaction as every write, so upserts, deletes and
/// rollbacks keep them consistent.
extension Store {
    /// Models whose searchable attributes contain every word of `text`, best first (bm25). The
    /// words are matched as words (each quoted as an FTS5 phrase, so no input is ever a syntax
    /// error); a prefix of a word does not match it. `predicate` narrows the results further.
    ///
    ///     for result in try await store.search(TodoItem.self, matching: "call plumber", snippets: SnippetStyle()) {
    ///         print(result.model.taskName, result.snippets["taskName"] ?? "")
    ///     }
    public func search<M: PersistentModel>(
        _ type: M.Type, matching text: String, where predicate: Predicate<M>? = nil, limit: Int? = 20, snippets: SnippetStyle? = nil
    ) throws(StoreError) -> [SearchResult<M>] {
        let words = text.split(whereSeparator: { $0.isWhitespace || $0 == "\u{0}" })
        guard !words.isEmpty else { return [] }
        switch capabilities.fullText {
        case .fts5: return try search(M.self, query: Self.phrases(text), where: predicate, limit: limit, snippets: snippets)
        // Every word, as words: plainto_tsquery reads no operator, so no text is a syntax error.
        case .tsvector: return try searchTsvector(M.self, query: "plainto_tsquery('simple', \(value: .text(words.joined(separator: " "))))", where: predicate, limit: limit, snippets: snippets)
        }
    }

    /// The same with raw PostgreSQL `tsquery` syntax (`paint & (kitchen | hall)`, `pain:*`): for
    /// users who know it. A malformed query fails with `unsupportedPredicate` naming PostgreSQL's
    /// complaint. On SQLite, use `search(_:fts5:)`.
    ///
    ///     let painted = try await store.search(TaskItem.self, tsquery: "paint & (kitchen | hall)")
    public func search<M: PersistentModel>(
        _ type: M.Type, tsquery query: String, where predicate: Predicate<M>? = nil, limit: Int? = 20, snippets: SnippetStyle? = nil
    ) throws(StoreError) -> [SearchResult<M>] {
        guard capabilities.fullText == .tsvector else {
            throw .unsupportedPredicate("tsquery syntax is PostgreSQL's; this store runs on \(database.dialect.name): use search(_:fts5:) or search(_:matching:)")
        }
        do {
            return try searchTsvector(M.self, query: "to_tsquery('simple', \(value: .text(query)))", where: predicate, limit: limit, snippets: snippets)
        } catch .database(let error) where error.kind == .statement {
            throw .unsupportedPredicate(
                "the tsquery '\(query)' is not valid: \(error.message); see https://www.postgresql.org/docs/current/datatype-textsearch.html, or search(matching:) for plain words")
        }
    }

    /// The same with raw FTS5 query syntax (`paint AND (kitchen OR hall)`, `pain*`,
    /// `NEAR(paint kitchen, 3)`): for users who know it. A malformed query fails with
    /// `unsupportedPredicate` naming SQLite's complaint.
    public func search<M: PersistentModel>(
        _ type: M.Type, fts5 query: String, where predicate: Predicate<M>? = nil, limit: Int? = 20, snippets: SnippetStyle? = nil
    ) throws(StoreError) -> [SearchResult<M>] {
        guard capabilities.fullText == .fts5 else {
            throw .unsupportedPredicate("FTS5 syntax is SQLite's; this store runs on \(database.dialect.name): use search(_:tsquery:) or search(_:matching:)")
        }
        do {
            return try search(M.self, query: query, where: predicate, limit: limit, snippets: snippets)
        } catch .database(let error) where error.kind == .statement {
            throw .unsupportedPredicate("the FTS5 query '\(query)' is not valid: \(error.message); see https://sqlite.org/fts5.html#full_text_query_syntax, or search(matching:) for plain words")
        }
    }

    /// Each whitespace-separated word as an FTS5 phrase: `"it""s" "paint"`. A NUL would end
    /// the bound text early (and leave a phrase open), so it separates words like a space.
    static func phrases(_ text: String) -> String {
        text.split(whereSeparator: { $0.isWhitespace || $0 == "\u{0}" })
            .map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
            .joined(separator: " ")
    }

    private func search<M: PersistentModel>(
        _ type: M.Type, query: String, where predicate: Predicate<M>?, limit: Int?, snippets style: SnippetStyle?
    ) throws(StoreError) -> [SearchResult<M>] {
        let entity = M.entity
        let indexes = entity.indexes.filter { $0.kind == .fullText }
        guard !indexes.isEmpty else {
            throw .unsupportedPredicate("\(entity.name) has no searchable attribute; mark one 'searchable: true' in the schema")
        }
        // Every index that matches, with the best rank of a row over them.
        // FTS5's hidden `rank` column is bm25 (a bm25() call cannot live in a subquery).
        let matches = indexes.map { index -> SQL in
            "SELECT rowid AS matched_rowid, rank AS matched_rank FROM \(identifier: index.name) WHERE \(identifier: index.name) MATCH \(value: .text(query))"
        }
        let ranked: SQL =
            indexes.count == 1
            ? "SELECT matched_rowid AS schemagen_rowid, matched_rank AS schemagen_rank FROM (\(matches[0]))"
            : "SELECT matched_rowid AS schemagen_rowid, min(matched_rank) AS schemagen_rank FROM (\(SQL.list(matches, separator: " UNION ALL "))) GROUP BY matched_rowid"
        let condition = try whereClause(predicate, for: M.self)
        let table = entity.table
        let sql: SQL = """
            SELECT \(selection(M.self, alias: table)), found.schemagen_rowid, found.schemagen_rank \
            FROM \(identifier: table) JOIN (\(ranked)) AS found ON \(identifier: table).rowid = found.schemagen_rowid\(condition) \
            ORDER BY found.schemagen_rank, found.schemagen_rowid\(page(limit: limit, offset: 0))
            """
        var extras: [[StoredValue]] = []
        let models = try rows(sql, as: M.self, extraColumns: 2, extras: &extras)
        var excerpts: [Int64: [String: String]] = [:]
        if let style, !models.isEmpty {
            let rowids = extras.compactMap { row -> Int64? in if case .integer(let id) = row[0] { return id } else { return nil } }
            for index in indexes {
                guard let property = entity.columns.first(where: { $0.column == index.columns.first })?.property else { continue }
                let marks = SQL.parameters([.text(style.open), .text(style.close), .text(style.ellipsis), .integer(Int64(min(64, max(1, style.tokens))))])
                let snippetSQL: SQL = """
                    SELECT rowid, snippet(\(identifier: index.name), 0, \(marks)) FROM \(identifier: index.name) \
                    WHERE \(identifier: index.name) MATCH \(value: .text(query)) AND rowid IN (\(SQL.parameters(rowids.map(StoredValue.integer))))
                    """
                for row in try self.query(snippetSQL) {
                    guard case .integer(let rowid) = row[0], case .text(let excerpt) = row[1] else { continue }
                    excerpts[rowid, default: [:]][property] = excerpt
                }
            }
        }
        return zip(models, extras).map { model, extra in
            var rank = 0.0
            if case .real(let value) = extra[1] { rank = value } else if case .integer(let value) = extra[1] { rank = Double(value) }
            var rowid: Int64 = 0
            if case .integer(let value) = extra[0] { rowid = value }
            return SearchResult(model: model, rank: rank, snippets: excerpts[rowid] ?? [:])
        }
    }

    /// PostgreSQL: the rows whose `tsvector` columns (one per full-text index, named as the
    /// index) match `query` (an SQL `tsquery` expression), ranked by `ts_rank` (negated, so
    /// lower is better as with bm25), with `ts_headline` excerpts of the text attributes.
    private func searchTsvector<M: PersistentModel>(
        _ type: M.Type, query: SQL, where predicate: Predicate<M>?, limit: Int?, snippets style: SnippetStyle?
    ) throws(StoreError) -> [SearchResult<M>] {
        let entity = M.entity
        let indexes = entity.indexes.filter { $0.kind == .fullText }
        guard !indexes.isEmpty else {
            throw .unsupportedPredicate("\(entity.name) has no searchable attribute; mark one 'searchable: true' in the schema")
        }
        let table = entity.table
        let limitBytes = database.dialect.capabilities.maximumIdentifierBytes
        let vectors = indexes.map { index -> SQL in "found_row.\(identifier: SQLIdentifiers.fitted(index.name, to: limitBytes))" }
        let keys = entity.primaryKey.enumerated().map { position, column -> (column: String, alias: String) in (column, "schemagen_key\(position)") }
        // Excerpts of the text attributes the indexes cover, between markers that become the
        // style's (ts_headline's options cannot hold arbitrary text).
        let excerpted =
            style == nil
            ? []
            : indexes.compactMap { index -> ColumnDescriptor? in
                entity.columns.first { $0.column == index.columns.first && $0.storage != .json }
            }
        let tokens = max(2, min(64, style?.tokens ?? 12))
        let options = "StartSel=\u{1}, StopSel=\u{2}, MaxWords=\(tokens), MinWords=\(max(1, tokens / 2))"
        var found: [SQL] = keys.map { "found_row.\(identifier: $0.column) AS \(identifier: $0.alias)" }
        found.append("-(\(SQL.list(vectors.map { "ts_rank(\($0), found_query)" }, separator: " + "))) AS schemagen_rank")
        for (position, column) in excerpted.enumerated() {
            found.append("ts_headline('simple', coalesce(found_row.\(identifier: column.column)::text, ''), found_query, \(value: .text(options))) AS \(identifier: "schemagen_excerpt\(position)")")
        }
        let matching = SQL.list(vectors.map { "\($0) @@ found_query" }, separator: " OR ")
        let joinOn = SQL.list(keys.map { "\(identifier: table).\(identifier: $0.column) = found.\(identifier: $0.alias)" }, separator: " AND ")
        let condition = try whereClause(predicate, for: M.self)
        let extras = 1 + excerpted.count
        let extraColumns = SQL.list(["found.schemagen_rank"] + excerpted.indices.map { "found.\(identifier: "schemagen_excerpt\($0)")" })
        let sql: SQL = """
            SELECT \(selection(M.self, alias: table)), \(extraColumns) \
            FROM \(identifier: table) JOIN (SELECT \(SQL.list(found)) FROM \(identifier: table) AS found_row, \(query) AS found_query WHERE \(matching)) AS found \
            ON \(joinOn)\(condition) \
            ORDER BY found.schemagen_rank, \(SQL.list(keys.map { "found.\(identifier: $0.alias)" }))\(page(limit: limit, offset: 0))
            """
        var extraValues: [[StoredValue]] = []
        let models = try rows(sql, as: M.self, extraColumns: extras, extras: &extraValues)
        return zip(models, extraValues).map { model, extra in
            var rank = 0.0
            if case .real(let value) = extra[0] { rank = value } else if case .integer(let value) = extra[0] { rank = Double(value) }
            var excerpts: [String: String] = [:]
            if let style {
                for (position, column) in excerpted.enumerated() {
                    // ts_headline returns text whether or not this attribute matched: only
                    // excerpts that mark a match count, as SQLite lists only matched attributes.
                    guard case .text(let excerpt) = extra[1 + position], excerpt.contains("\u{1}") else { continue }
                    excerpts[column.property] = excerpt.replacingOccurrences(of: "\u{1}", with: style.open).replacingOccurrences(of: "\u{2}", with: style.close)
                }
            }
            return SearchResult(model: model, rank: rank, snippets: excerpts)
        }
    }
}
