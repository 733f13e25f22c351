import Foundation
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
    ///
    ///     let style = SnippetStyle(open: "<mark>", close: "</mark>", tokens: 20)
    public init(open: String = "[", close: String = "]", ellipsis: String = "…", tokens: Int = 12) {
        self.open = open
        self.close = close
        self.ellipsis = ellipsis
        self.tokens = tokens
    }
}

/// What to search for: engine-neutral words, or the engine's own query syntax when asked for
/// explicitly.
///
///     let plain = try await store.search(TodoItem.self, .words("call plumber"))
///     let raw = try await store.search(TodoItem.self, .engineSyntax("paint AND (kitchen OR hall)"))   // FTS5 on SQLite
public struct SearchQuery: Sendable, Hashable {
    /// How the query is given: as words, or in the engine's own syntax.
    public enum Form: Sendable, Hashable {
        /// Every whitespace-separated word, matched as a word; no text is a syntax error.
        case words([String])
        /// The engine's query language as written: FTS5 on SQLite, `tsquery` on PostgreSQL.
        case engineSyntax(String)
    }

    /// The words or the raw text, as `words(_:)` or `engineSyntax(_:)` made them.
    public let form: Form

    /// Rows that contain every word of `text`, each matched as a whole word. A NUL separates
    /// words like a space (it would end the bound text early).
    ///
    ///     SearchQuery.words("call  plumber")   // the words "call" and "plumber"
    public static func words(_ text: String) -> SearchQuery {
        SearchQuery(form: .words(text.split(whereSeparator: { $0.isWhitespace || $0 == "\u{0}" }).map(String.init)))
    }

    /// The engine's raw syntax (`paint AND (kitchen OR hall)`, `pain*` for FTS5;
    /// `paint & (kitchen | hall)`, `pain:*` for `tsquery`), for users who know it. A malformed
    /// query fails with `unsupportedPredicate` naming the engine's complaint.
    ///
    ///     SearchQuery.engineSyntax("paint & (kitchen | hall)")   // on PostgreSQL
    public static func engineSyntax(_ text: String) -> SearchQuery { SearchQuery(form: .engineSyntax(text)) }
}

/// A search as an engine runs it, from `FullTextSearching.fullTextSearch`: the store selects
/// the model's columns from its table joined to `found`, then `extraColumns`, orders by
/// `ordering` and pages.
public struct FullTextStatement: Sendable {
    /// A subquery of the matching rows (aliased `found` by the store).
    public var found: SQL
    /// How a row of the table meets its row of `found`.
    public var joinCondition: SQL
    /// Columns read after the model's: the rank first (lower is better), then the engine's own.
    public var extraColumns: [SQL]
    /// The order of the results, best first, ties broken so pages are stable.
    public var ordering: SQL

    /// A statement from its parts, as an engine's `fullTextSearch` builds it.
    ///
    ///     FullTextStatement(found: found, joinCondition: "todo_item.rowid = found.schemagen_rowid",
    ///                       extraColumns: ["found.schemagen_rank"], ordering: "found.schemagen_rank, found.schemagen_rowid")
    public init(found: SQL, joinCondition: SQL, extraColumns: [SQL], ordering: SQL) {
        self.found = found
        self.joinCondition = joinCondition
        self.extraColumns = extraColumns
        self.ordering = ordering
    }
}

/// Full-text search in an engine's own SQL: an adapter that can search conforms, and the store
/// looks it up once when it opens. SQLite's adapter matches FTS5 tables, PostgreSQL's
/// generated `tsvector` columns (what the migrations create for `searchable` attributes).
public protocol FullTextSearching: StoreDatabase {
    /// The engine's raw query language, for messages (`FTS5`, `tsquery`).
    var searchSyntaxName: String { get }
    /// Where that language is documented, for messages.
    var searchSyntaxReference: String { get }
    /// The statement that finds `query`'s rows of `entity` over its full-text `indexes`.
    func fullTextSearch(_ query: SearchQuery, in entity: EntityDescriptor, indexes: [IndexDescriptor], excerpts: SnippetStyle?) -> FullTextStatement
    /// Each result's excerpts by property, from the extra columns the statement read (the rank
    /// first), fetching what the engine makes apart.
    func fullTextExcerpts(
        _ query: SearchQuery, in entity: EntityDescriptor, indexes: [IndexDescriptor], style: SnippetStyle, extras: [[StoredValue]]
    ) throws(DatabaseFailure) -> [[String: String]]
}

/// Full-text search over `searchable` attributes, through what the migrations create: FTS5
/// indexes kept current by triggers on SQLite, generated `tsvector` columns with GIN indexes on
/// PostgreSQL; either way in the same transaction as every write, so upserts, deletes and
/// rollbacks keep them consistent. The SQL of each engine is its adapter's
/// (`FullTextSearching`).
extension Store {
    /// Models whose searchable attributes match `query`, best first (SQLite's bm25,
    /// PostgreSQL's `ts_rank`). `predicate` narrows the results further; `snippets` asks for
    /// highlighted excerpts of the attributes that matched.
    ///
    ///     for result in try await store.search(TodoItem.self, .words("call plumber"), snippets: SnippetStyle()) {
    ///         print(result.model.taskName, result.snippets["taskName"] ?? "")
    ///     }
    public func search<M: PersistentModel>(
        _ type: M.Type, _ query: SearchQuery, where predicate: Predicate<M>? = nil, limit: Int? = 20, snippets: SnippetStyle? = nil
    ) throws(StoreError) -> [SearchResult<M>] {
        guard let engine = abilities.fullText else {
            throw .unsupportedPredicate("this store's engine (\(database.dialect.name)) has no full-text search")
        }
        if case .words(let words) = query.form, words.isEmpty { return [] }
        let entity = M.entity
        let indexes = entity.indexes.filter { $0.kind == .fullText }
        guard !indexes.isEmpty else {
            throw .unsupportedPredicate("\(entity.name) has no searchable attribute; mark one 'searchable: true' in the schema")
        }
        let statement = engine.fullTextSearch(query, in: entity, indexes: indexes, excerpts: snippets)
        let condition = try whereClause(predicate, for: M.self)
        let table = entity.table
        let sql: SQL = """
            SELECT \(selection(M.self, alias: table)), \(SQL.list(statement.extraColumns)) \
            FROM \(identifier: table) JOIN (\(statement.found)) AS found ON \(statement.joinCondition)\(condition) \
            ORDER BY \(statement.ordering)\(page(limit: limit, offset: 0))
            """
        var extras: [[StoredValue]] = []
        let models: [M]
        var excerpts: [[String: String]] = []
        do throws(StoreError) {
            models = try rows(sql, as: M.self, extraColumns: statement.extraColumns.count, extras: &extras)
            if let snippets, !models.isEmpty {
                do throws(DatabaseFailure) {
                    excerpts = try engine.fullTextExcerpts(query, in: entity, indexes: indexes, style: snippets, extras: extras)
                } catch { throw .database(error) }
            }
        } catch .database(let error) where error.kind == .statement {
            guard case .engineSyntax(let text) = query.form else { throw .database(error) }
            throw .unsupportedPredicate(
                "the \(engine.searchSyntaxName) query '\(text)' is not valid: \(error.message); see \(engine.searchSyntaxReference), or search with .words(_:) for plain words")
        }
        return models.indices.map { position in
            var rank = 0.0
            if case .real(let value) = extras[position][0] { rank = value } else if case .integer(let value) = extras[position][0] { rank = Double(value) }
            return SearchResult(model: models[position], rank: rank, snippets: position < excerpts.count ? excerpts[position] : [:])
        }
    }

    /// Models whose searchable attributes contain every word of `text`, best first: the same
    /// as `search(type, .words(text))`.
    ///
    ///     let found = try await store.search(TodoItem.self, matching: "call plumber")
    public func search<M: PersistentModel>(
        _ type: M.Type, matching text: String, where predicate: Predicate<M>? = nil, limit: Int? = 20, snippets: SnippetStyle? = nil
    ) throws(StoreError) -> [SearchResult<M>] {
        try search(M.self, .words(text), where: predicate, limit: limit, snippets: snippets)
    }

    /// The same with raw PostgreSQL `tsquery` syntax.
    @available(*, deprecated, message: "Use search(_:_:) with .engineSyntax(query), which takes the raw syntax of whichever engine the store runs on.")
    public func search<M: PersistentModel>(
        _ type: M.Type, tsquery query: String, where predicate: Predicate<M>? = nil, limit: Int? = 20, snippets: SnippetStyle? = nil
    ) throws(StoreError) -> [SearchResult<M>] {
        try searchInSyntax("tsquery", query, M.self, where: predicate, limit: limit, snippets: snippets)
    }

    /// The same with raw FTS5 query syntax.
    @available(*, deprecated, message: "Use search(_:_:) with .engineSyntax(query), which takes the raw syntax of whichever engine the store runs on.")
    public func search<M: PersistentModel>(
        _ type: M.Type, fts5 query: String, where predicate: Predicate<M>? = nil, limit: Int? = 20, snippets: SnippetStyle? = nil
    ) throws(StoreError) -> [SearchResult<M>] {
        try searchInSyntax("FTS5", query, M.self, where: predicate, limit: limit, snippets: snippets)
    }

    /// A raw query in the syntax the caller named, refused where the store's engine speaks another.
    private func searchInSyntax<M: PersistentModel>(
        _ syntax: String, _ query: String, _ type: M.Type, where predicate: Predicate<M>?, limit: Int?, snippets: SnippetStyle?
    ) throws(StoreError) -> [SearchResult<M>] {
        guard let engine = abilities.fullText, engine.searchSyntaxName == syntax else {
            throw .unsupportedPredicate(
                "\(syntax) syntax is not this store's: it runs on \(database.dialect.name)\(abilities.fullText.map { ", whose syntax is \($0.searchSyntaxName)" } ?? ""); use search(_:_:) with .engineSyntax(_:) or .words(_:)"
            )
        }
        return try search(M.self, .engineSyntax(query), where: predicate, limit: limit, snippets: snippets)
    }
}
