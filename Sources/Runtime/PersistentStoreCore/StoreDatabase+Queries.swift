import SQLDialects
import SchemaMetadata

extension StoreDatabase {
    /// Runs a statement built as a fragment, rendered for this engine's dialect.
    func query(_ sql: SQL) throws(DatabaseFailure) -> [[StoredValue]] {
        let (statement, arguments) = sql.statement(for: dialect)
        return try query(statement, arguments[...])
    }

    /// Runs a statement already rendered for this engine's dialect.
    func query(_ statement: RenderedSQL, _ arguments: [StoredValue] = []) throws(DatabaseFailure) -> [[StoredValue]] {
        try query(statement, arguments[...])
    }
}
