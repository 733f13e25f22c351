/// What an engine said when a statement or a connection failed, in terms every engine shares,
/// so the migrator's and the store's errors carry no engine's own types.
public struct DatabaseFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What callers branch on, the same for every engine.
    public enum Kind: Sendable, Equatable {
        /// Another connection holds a lock longer than the wait allowed (SQLite's busy timeout,
        /// PostgreSQL's `lock_timeout`): trying again later may succeed.
        case busy
        /// A row's key or unique value is already taken.
        case uniquenessConflict
        /// Another constraint refused the row: NOT NULL, CHECK or a foreign key.
        case constraint
        /// The statement itself was refused: its syntax, or a table or column that is missing.
        case statement
        /// The file is not a database of this engine, or it is damaged.
        case notADatabase
        /// The database or its folder cannot be written.
        case readOnly
        /// The statement was cancelled (an interrupt, or a timeout).
        case interrupted
        /// The connection to the server was lost: whatever was in progress was rolled back.
        case connectionLost
    }

    /// The database as messages name it (a path, or a URL without its password).
    public var database: String
    /// The engine's own description: its code, message, detail, hint and advice.
    public var message: String
    /// The engine's code for the failure (a SQLSTATE such as `55P03`, or SQLite's result code
    /// name such as `SQLITE_BUSY`); nil when no statement reached the database.
    public var code: String?
    /// The failure's kind, when it is one callers act on.
    public var kind: Kind?
    /// The engine's message alone, without the database's name or the statement, where the
    /// adapter keeps them apart: what a page shows a person. Nil: `message` is all there is.
    public var summary: String?

    /// The connection to a server was lost: whatever was in progress was rolled back.
    public var connectionLost: Bool { kind == .connectionLost }

    /// A failure an adapter translated from its engine's error.
    ///
    ///     DatabaseFailure(database: "app.sqlite", message: "database is locked", code: "SQLITE_BUSY", kind: .busy)
    public init(database: String, message: String, code: String?, kind: Kind? = nil, summary: String? = nil) {
        self.database = database
        self.message = message
        self.code = code
        self.kind = kind
        self.summary = summary
    }

    /// The message, after the database's name.
    public var description: String { message.hasPrefix(database) ? message : "\(database): \(message)" }
}

/// A column's value as an engine holds it while a row is read. A blob's bytes are borrowed:
/// valid only inside the call that receives them, so a reader that transforms them (decrypts)
/// copies nothing.
public enum BorrowedValue {
    /// A blob's bytes in the engine's buffer, valid only during the call.
    case blob(UnsafeRawBufferPointer)
    /// A value copied out of the row (a blob too, when the engine gives one only as a copy).
    case value(StoredValue)
}

// MARK: - Spellings of releases before the store and the migrator ran on PostgreSQL too

extension DatabaseFailure {
    /// True when a row's key or unique value is already taken (`SQLiteError`'s spelling).
    ///
    ///     if failure.kind == .uniquenessConflict { reportDuplicate() }   // was: failure.isUniquenessConflict
    @available(*, deprecated, message: "use kind == .uniquenessConflict")
    public var isUniquenessConflict: Bool { kind == .uniquenessConflict }

    /// The statement that failed: now part of `message`.
    @available(*, deprecated, message: "the statement is part of message")
    public var sql: String? { nil }
}
