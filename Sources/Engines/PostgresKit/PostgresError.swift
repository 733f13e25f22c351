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

    /// The session cannot go on against this server, which may have failed over: the connection
    /// is gone (`08...`), the server shut down or crashed (`57P01`, `57P02`) or is starting
    /// (`57P03`), or it refuses writes (`25006`: a standby, or a primary since demoted). A new
    /// connection through the same URL may reach the new primary.
    public var meansServerUnavailable: Bool {
        if connectionLost { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08")
            || [SQLState.readOnlyTransaction, SQLState.adminShutdown, SQLState.crashShutdown, SQLState.cannotConnectNow].contains(sqlState)
    }
}
