import SQLDialects
import SchemaMetadata

extension StoreDatabase {
    /// Runs a statement built as a fragment, rendered for this engine's dialect.
    func query(_ sql: SQL) throws(DatabaseFailure) -> [[StoredValue]] {
        let (text, arguments) = sql.rendered(for: dialect)
        return try query(text, arguments[...])
    }

    /// Runs a statement already rendered for this engine's dialect.
    func query(_ text: String, _ arguments: [StoredValue] = []) throws(DatabaseFailure) -> [[StoredValue]] {
        try query(text, arguments[...])
    }
}
