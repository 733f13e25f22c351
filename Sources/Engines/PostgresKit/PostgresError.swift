import SchemaMetadata

extension PostgresError {
    /// The error in terms every engine shares (the migrator's and the store's).
    public func failure(database: String) -> DatabaseFailure {
        let kind: DatabaseFailure.Kind? =
            if connectionLost {
                .connectionLost
            } else {
                switch sqlState {
                case SQLState.uniqueViolation: .uniquenessConflict
                case SQLState.lockNotAvailable, SQLState.deadlockDetected, SQLState.serializationFailure: .busy
                case SQLState.queryCanceled: .interrupted
                case SQLState.readOnlyTransaction: .readOnly
                case let state? where state.hasPrefix("23"): .constraint
                // The statement's text or an argument it cannot read: syntax, a missing table or
                // column, a malformed full-text query.
                case SQLState.invalidParameterValue: .statement
                case let state? where state.hasPrefix("42"): .statement
                default: nil
                }
            }
        return DatabaseFailure(database: database, message: description, code: sqlState, kind: kind)
    }
}
