import MigrationFiles
import PersistentStoreCore
import SQLDialects
import SchemaMetadata

/// Full-text search in PostgreSQL's words: each `searchable` index is a generated `tsvector`
/// column named as the index, matched with `@@`, ranked by `ts_rank` (negated, so lower is
/// better as with SQLite's bm25), with `ts_headline` excerpts read in the same statement.
extension PostgresStoreDatabase: FullTextSearching {
    var searchSyntaxName: String { "tsquery" }
    var searchSyntaxReference: String { "https://www.postgresql.org/docs/current/datatype-textsearch.html" }

    /// The `tsquery` of a search. Words go through `plainto_tsquery`, which reads no operator,
    /// so no text is a syntax error.
    static func tsquery(_ query: SearchQuery) -> SQL {
        switch query.form {
        case .words(let words): "plainto_tsquery('simple', \(value: .text(words.joined(separator: " "))))"
        case .engineSyntax(let text): "to_tsquery('simple', \(value: .text(text)))"
        }
    }

    /// The text attributes the indexes cover, whose excerpts the statement reads.
    static func excerpted(_ entity: EntityDescriptor, _ indexes: [IndexDescriptor]) -> [ColumnDescriptor] {
        indexes.compactMap { index in entity.columns.first { $0.column == index.columns.first && $0.storage != .json } }
    }

    func fullTextSearch(_ query: SearchQuery, in entity: EntityDescriptor, indexes: [IndexDescriptor], excerpts style: SnippetStyle?) -> FullTextStatement {
        let table = entity.table
        let limitBytes = dialect.capabilities.maximumIdentifierBytes
        let vectors = indexes.map { index -> SQL in "found_row.\(identifier: SQLIdentifiers.fitted(index.name, to: limitBytes))" }
        let keys = entity.primaryKey.enumerated().map { position, column -> (column: String, alias: String) in (column, "schemagen_key\(position)") }
        // Excerpts between markers that become the style's (ts_headline's options cannot hold
        // arbitrary text).
        let excerpted = style == nil ? [] : Self.excerpted(entity, indexes)
        let tokens = max(2, min(64, style?.tokens ?? 12))
        let options = "StartSel=\u{1}, StopSel=\u{2}, MaxWords=\(tokens), MinWords=\(max(1, tokens / 2))"
        var found: [SQL] = keys.map { "found_row.\(identifier: $0.column) AS \(identifier: $0.alias)" }
        found.append("-(\(SQL.list(vectors.map { "ts_rank(\($0), found_query)" }, separator: " + "))) AS schemagen_rank")
        for (position, column) in excerpted.enumerated() {
            found.append("ts_headline('simple', coalesce(found_row.\(identifier: column.column)::text, ''), found_query, \(value: .text(options))) AS \(identifier: "schemagen_excerpt\(position)")")
        }
        let matching = SQL.list(vectors.map { "\($0) @@ found_query" }, separator: " OR ")
        return FullTextStatement(
            found: "SELECT \(SQL.list(found)) FROM \(identifier: table) AS found_row, \(Self.tsquery(query)) AS found_query WHERE \(matching)",
            joinCondition: SQL.list(keys.map { "\(identifier: table).\(identifier: $0.column) = found.\(identifier: $0.alias)" }, separator: " AND "),
            extraColumns: ["found.schemagen_rank"] + excerpted.indices.map { "found.\(identifier: "schemagen_excerpt\($0)")" },
            ordering: "found.schemagen_rank, \(SQL.list(keys.map { "found.\(identifier: $0.alias)" }))")
    }

    /// ts_headline returns text whether or not this attribute matched: only excerpts that mark
    /// a match count, as SQLite lists only matched attributes.
    func fullTextExcerpts(
        _ query: SearchQuery, in entity: EntityDescriptor, indexes: [IndexDescriptor], style: SnippetStyle, extras: [[StoredValue]]
    ) throws(DatabaseFailure) -> [[String: String]] {
        let excerpted = Self.excerpted(entity, indexes)
        return extras.map { row in
            var excerpts: [String: String] = [:]
            for (position, column) in excerpted.enumerated() where 1 + position < row.count {
                guard case .text(let excerpt) = row[1 + position], excerpt.contains("\u{1}") else { continue }
                excerpts[column.property] = excerpt.replacingOccurrences(of: "\u{1}", with: style.open).replacingOccurrences(of: "\u{2}", with: style.close)
            }
            return excerpts
        }
    }
}
