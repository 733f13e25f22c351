import PersistentStoreCore
import SQLDialects
import SchemaMetadata

/// Full-text search in SQLite's words: each `searchable` index is an FTS5 table keyed by the
/// table's rowid, ranked by its hidden `rank` column (bm25), with `snippet()` excerpts fetched
/// for the page of results only.
extension SQLiteStoreDatabase: FullTextSearching {
    var searchSyntaxName: String { "FTS5" }
    var searchSyntaxReference: String { "https://sqlite.org/fts5.html#full_text_query_syntax" }

    /// FTS5's own query text: each word quoted as a phrase, so no word is an operator.
    ///
    ///     SQLiteStoreDatabase.matchText(.words("it's paint"))   // "it's" "paint"
    static func matchText(_ query: SearchQuery) -> String {
        switch query.form {
        case .words(let words): words.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }.joined(separator: " ")
        case .engineSyntax(let text): text
        }
    }

    func fullTextSearch(_ query: SearchQuery, in entity: EntityDescriptor, indexes: [IndexDescriptor], excerpts: SnippetStyle?) -> FullTextStatement {
        let text = Self.matchText(query)
        // Every index that matches, with the best rank of a row over them. FTS5's hidden `rank`
        // column is bm25 (a bm25() call cannot live in a subquery).
        let matches = indexes.map { index -> SQL in
            "SELECT rowid AS matched_rowid, rank AS matched_rank FROM \(identifier: index.name) WHERE \(identifier: index.name) MATCH \(value: .text(text))"
        }
        let found: SQL =
            indexes.count == 1
            ? "SELECT matched_rowid AS schemagen_rowid, matched_rank AS schemagen_rank FROM (\(matches[0]))"
            : "SELECT matched_rowid AS schemagen_rowid, min(matched_rank) AS schemagen_rank FROM (\(SQL.list(matches, separator: " UNION ALL "))) GROUP BY matched_rowid"
        return FullTextStatement(
            found: found, joinCondition: "\(identifier: entity.table).rowid = found.schemagen_rowid", extraColumns: ["found.schemagen_rank", "found.schemagen_rowid"],
            ordering: "found.schemagen_rank, found.schemagen_rowid")
    }

    func fullTextExcerpts(
        _ query: SearchQuery, in entity: EntityDescriptor, indexes: [IndexDescriptor], style: SnippetStyle, extras: [[StoredValue]]
    ) throws(DatabaseFailure) -> [[String: String]] {
        let text = Self.matchText(query)
        let rowids = extras.map { row -> Int64 in if case .integer(let id) = row[1] { id } else { 0 } }
        var excerpts: [Int64: [String: String]] = [:]
        for index in indexes {
            guard let property = entity.columns.first(where: { $0.column == index.columns.first })?.property else { continue }
            let marks = SQL.parameters([.text(style.open), .text(style.close), .text(style.ellipsis), .integer(Int64(min(64, max(1, style.tokens))))])
            let snippets: SQL = """
                SELECT rowid, snippet(\(identifier: index.name), 0, \(marks)) FROM \(identifier: index.name) \
                WHERE \(identifier: index.name) MATCH \(value: .text(text)) AND rowid IN (\(SQL.parameters(rowids.map(StoredValue.integer))))
                """
            let (statement, arguments) = snippets.statement(for: dialect)
            for row in try self.query(statement, arguments[...]) {
                guard case .integer(let rowid) = row[0], case .text(let excerpt) = row[1] else { continue }
                excerpts[rowid, default: [:]][property] = excerpt
            }
        }
        return rowids.map { excerpts[$0] ?? [:] }
    }
}
