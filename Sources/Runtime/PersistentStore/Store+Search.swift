import Foundation
import SQLDialects
import SchemaMetadata

/// One model found by `search`, with its rank and, when asked for, highlighted snippets.
public struct SearchResult<M: PersistentModel & Sendable>: Sendable {
    /// The model that matched.
    public let model: M
    /// SQLite's bm25 score: lower is a better match. Results come best first.
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

/// Full-text search over `searchable` attributes, through the FTS5 indexes the migrations create
/// (kept current by triggers in the same transaction as every write, so upserts, deletes and
/// rollbacks keep them consistent).
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
        let query = Self.phrases(text)
        guard !query.isEmpty else { return [] }
        return try search(M.self, query: query, where: predicate, limit: limit, snippets: snippets)
    }

    /// The same with raw FTS5 query syntax (`paint AND (kitchen OR hall)`, `pain*`,
    /// `NEAR(paint kitchen, 3)`): for users who know it. A malformed query fails with
    /// `unsupportedPredicate` naming SQLite's complaint.
    public func search<M: PersistentModel>(
        _ type: M.Type, fts5 query: String, where predicate: Predicate<M>? = nil, limit: Int? = 20, snippets: SnippetStyle? = nil
    ) throws(StoreError) -> [SearchResult<M>] {
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
}
