import CSQLite
import SchemaMetadata

/// An error SQLite reported, with its result code and message.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// SQLite's extended result code (`SQLITE_CONSTRAINT_UNIQUE`, say); `primary` is its family.
    public var code: Int32
    /// SQLite's message (`sqlite3_errmsg`), e.g. `UNIQUE constraint failed: user.email`.
    public var message: String
    /// The statement that failed, when there was one.
    public var sql: String?
    /// The database file the connection had open, when there was one.
    public var database: String?

    /// An error as SQLite reported it.
    ///
    ///     SQLiteError(code: SQLiteError.ExtendedCode.constraintUnique, message: "UNIQUE constraint failed: user.email", sql: sql)
    public init(code: Int32, message: String, sql: String?, database: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
        self.database = database
    }

    /// A primary result code: what callers branch on (busy, constraint, corrupt...).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The C value, `5` for `SQLITE_BUSY`.
        public var rawValue: Int32
        /// The code with this C value.
        ///
        ///     SQLiteError.Code(rawValue: 5) == .busy   // true
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// A generic error: an SQL syntax error or a missing table, say.
        public static let error = Code(rawValue: 1)
        /// The access mode asked for a newly created database could not be provided.
        public static let permission = Code(rawValue: 3)
        /// An operation was stopped before it finished, usually at the application's request.
        public static let abort = Code(rawValue: 4)
        /// Another connection holds a lock past the busy timeout.
        public static let busy = Code(rawValue: 5)
        /// A write conflicts with this connection's own work (or a shared-cache connection's), such
        /// as dropping a table a pending statement reads.
        public static let locked = Code(rawValue: 6)
        /// SQLite could not allocate memory.
        public static let noMemory = Code(rawValue: 7)
        /// A write to a database the connection may not change (opened read-only, or a file it cannot write).
        public static let readOnly = Code(rawValue: 8)
        /// Stopped by `sqlite3_interrupt` (`SQLiteInterrupter.interrupt()`), or by a script's `shouldStop`.
        public static let interrupted = Code(rawValue: 9)
        /// The operating system reported an I/O error reading or writing the file.
        public static let ioError = Code(rawValue: 10)
        /// The database file is malformed.
        public static let corrupt = Code(rawValue: 11)
        /// A write could not complete because the disk is full.
        public static let full = Code(rawValue: 13)
        /// The file (or its journal, or a temporary file) could not be opened.
        public static let cannotOpen = Code(rawValue: 14)
        /// A string or blob is larger than SQLite's limit (`SQLITE_MAX_LENGTH`).
        public static let tooBig = Code(rawValue: 18)
        /// A UNIQUE, NOT NULL, CHECK or FOREIGN KEY constraint failed.
        public static let constraint = Code(rawValue: 19)
        /// A datatype mismatch: a value that is not an integer written to an INTEGER PRIMARY KEY, say.
        public static let mismatch = Code(rawValue: 20)
        /// The file is not a SQLite database (or is encrypted).
        public static let notADatabase = Code(rawValue: 26)

        /// SQLite's English text for the code (`sqlite3_errstr`), `database is locked` for `busy`.
        public var description: String { String(cString: sqlite3_errstr(rawValue)) }

        /// The C name, `SQLITE_BUSY` say.
        public var name: String { "SQLITE_" + (Self.names[rawValue] ?? String(rawValue)) }

        /// The code a C name (`SQLITE_BUSY`) stands for, as `name` spells it.
        ///
        ///     SQLiteError.Code(name: "SQLITE_BUSY") == .busy
        public init?(name: String) {
            guard name.hasPrefix("SQLITE_") else { return nil }
            let suffix = name.dropFirst("SQLITE_".count)
            guard let code = Self.names.first(where: { $0.value == suffix })?.key ?? Int32(suffix) else { return nil }
            self.init(rawValue: code)
        }

        static let names: [Int32: String] = [
            1: "ERROR", 2: "INTERNAL", 3: "PERM", 4: "ABORT", 5: "BUSY", 6: "LOCKED", 7: "NOMEM", 8: "READONLY", 9: "INTERRUPT",
            10: "IOERR", 11: "CORRUPT", 12: "NOTFOUND", 13: "FULL", 14: "CANTOPEN", 15: "PROTOCOL", 16: "EMPTY", 17: "SCHEMA",
            18: "TOOBIG", 19: "CONSTRAINT", 20: "MISMATCH", 21: "MISUSE", 22: "NOLFS", 23: "AUTH", 24: "FORMAT", 25: "RANGE", 26: "NOTADB",
        ]
    }

    /// The primary result code, without the extended detail.
    public var primary: Code { Code(rawValue: code & 0xFF) }

    /// Extended result codes the toolkit acts on. SQLite defines them as function-like macros,
    /// which Swift cannot import: each is its primary code plus a subcode shifted by 8.
    public enum ExtendedCode {
        /// `SQLITE_CONSTRAINT_PRIMARYKEY`: a PRIMARY KEY constraint failed.
        public static let constraintPrimaryKey = Code.constraint.rawValue | 6 << 8
        /// `SQLITE_CONSTRAINT_UNIQUE`: a UNIQUE constraint failed.
        public static let constraintUnique = Code.constraint.rawValue | 8 << 8
        /// `SQLITE_CONSTRAINT_ROWID`: a rowid is not unique.
        public static let constraintRowID = Code.constraint.rawValue | 10 << 8
    }

    /// A row's key or unique value is already taken (a UNIQUE or PRIMARY KEY constraint).
    public var isUniquenessConflict: Bool {
        [ExtendedCode.constraintUnique, ExtendedCode.constraintPrimaryKey, ExtendedCode.constraintRowID].contains(code)
    }

    /// What to do about the failures a user can fix, or nil.
    public var advice: String? {
        switch primary {
        case .notADatabase: "the file is not a SQLite database (or is encrypted); check the path"
        case .corrupt: "the file is damaged; restore it from a backup, or try `sqlite3 FILE .recover`"
        case .busy, .locked: "another connection holds the database; retry, or wait longer (a busy timeout)"
        case .readOnly, .permission: "the file or its folder cannot be written; check permissions"
        case .cannotOpen: "the file cannot be opened; check that its folder exists and is writable"
        case .full: "the disk is full"
        default: nil
        }
    }

    /// The file's name, the message, the statement (flattened, cut at 160 characters) and any `advice`.
    public var description: String {
        var text = (database.map { "\($0): " } ?? "") + message
        if let sql {
            let flat = sql.split(whereSeparator: \.isNewline).joined(separator: " ")
            text += " (in: \(flat.count > 160 ? flat.prefix(160) + "..." : flat))"
        }
        if let advice { text += "; " + advice }
        return text
    }
}

/// A value read from or bound to SQLite: SchemaMetadata's `StoredValue`, which generated
/// row codecs produce and read, so rows need no conversion.
public typealias SQLiteValue = StoredValue

/// `sqlite3_interrupt` for one connection, to be called from another thread.
public struct SQLiteInterrupter: @unchecked Sendable {
    let handle: OpaquePointer?
    init(_ handle: OpaquePointer?) { self.handle = handle }
    /// Stops the statement the connection is running; it fails with `SQLITE_INTERRUPT`.
    public func interrupt() { sqlite3_interrupt(handle) }
}

/// One connection to a database file (or `:memory:`). Not shared between threads.
public final class SQLiteConnection {
    private var handle: OpaquePointer?
    /// Keeps the progress closure alive while SQLite holds a pointer to it.
    var progressBox: ProgressBox?
    /// Keeps the insert counter alive while the update hook points at it.
    var insertCounter: InsertCounter?
    /// Keeps the row-change handler alive while the pre-update hook points at it.
    var rowChangeBox: RowChangeBox?

    var rawHandle: OpaquePointer? { handle }

    /// SQLite's way of saying "copy the bytes now"; not imported into Swift as a constant.
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// The file this connection opened, named in its errors.
    public let path: String

    /// Opens the file at `path`, creating it unless `readOnly`; `:memory:` opens a database of
    /// its own in memory. Its errors carry extended result codes.
    ///
    ///     let connection = try SQLiteConnection(path: "/tmp/app.sqlite")
    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        self.path = path
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let status = sqlite3_open_v2(path, &handle, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close(handle)
            handle = nil
            throw SQLiteError(code: status, message: message, sql: nil, database: path)
        }
        sqlite3_extended_result_codes(handle, 1)
    }

    /// Stops the statement this connection is running (it fails with `SQLITE_INTERRUPT`), from
    /// any thread: for a signal handler's thread while the connection's own waits. Valid while
    /// the connection is open.
    public var interrupter: SQLiteInterrupter { SQLiteInterrupter(handle) }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// The connection's last error, naming its file.
    func error(_ status: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)), sql: sql, database: path)
    }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        guard status == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw SQLiteError(code: status, message: text, sql: sql, database: path)
        }
    }

    /// Prepared statements by SQL text, reused by `query`: preparing costs more than running a
    /// small insert. Bounded, so generated one-off SQL cannot grow it without end.
    private var statements: [String: OpaquePointer] = [:]
    private static let statementCacheLimit = 64

    /// The statements used last, newest first: bulk writes repeat one statement or alternate
    /// between a few (an upsert, then the lookup of the row it updated), and comparing a string
    /// with itself is cheaper than hashing a long statement.
    private var recentlyPrepared: [(sql: String, statement: OpaquePointer)] = []
    private static let recentLimit = 4

    private func prepared(_ sql: String) throws(SQLiteError) -> OpaquePointer {
        for recent in recentlyPrepared where recent.sql == sql { return recent.statement }
        if let statement = statements[sql] {
            rememberRecent(sql, statement)
            return statement
        }
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw error(status, sql: sql)
        }
        if statements.count >= Self.statementCacheLimit {
            for cached in statements.values { sqlite3_finalize(cached) }
            statements.removeAll(keepingCapacity: true)
            recentlyPrepared.removeAll(keepingCapacity: true)
        }
        statements[sql] = statement
        rememberRecent(sql, statement)
        return statement
    }

    private func rememberRecent(_ sql: String, _ statement: OpaquePointer) {
        if recentlyPrepared.count == Self.recentLimit { recentlyPrepared.removeLast() }
        recentlyPrepared.insert((sql, statement), at: 0)
    }

    /// Runs one statement with bound values and returns every row.
    public func query(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
        try rows(sql, arguments)
    }

    /// The same with the values in part of a row (no copy to bind them). Concrete, not generic:
    /// a generic function across modules runs unspecialized, and binding is in every write.
    public func query(_ sql: String, values arguments: ArraySlice<SQLiteValue>) throws(SQLiteError) -> [[SQLiteValue]] {
        try rows(sql, arguments)
    }

    /// The first row's first value when it is an integer (a key looked up), else nil; no
    /// arrays built, as a write that looks up the row it updated asks once per row.
    public func firstInteger(_ sql: String, values arguments: ArraySlice<SQLiteValue>) throws(SQLiteError) -> Int64? {
        var found: Int64?
        try step(sql, arguments) { statement, count in
            if count > 0, sqlite3_column_type(statement, 0) == SQLITE_INTEGER { found = sqlite3_column_int64(statement, 0) }
            return false
        }
        return found
    }

    private func rows(_ sql: String, _ arguments: some RandomAccessCollection<SQLiteValue>) throws(SQLiteError) -> [[SQLiteValue]] {
        var rows: [[SQLiteValue]] = []
        try step(sql, arguments) { statement, count in
            var row: [SQLiteValue] = []
            row.reserveCapacity(count)
            for column in 0..<count { row.append(Self.value(statement, Int32(column))) }
            rows.append(row)
            return true
        }
        return rows
    }

    /// Runs one statement and hands each row to `body` in one reused buffer (no array per row).
    public func forEachRow(_ sql: String, _ arguments: [SQLiteValue] = [], _ body: ([SQLiteValue]) throws -> Void) throws {
        var row: [SQLiteValue] = []
        var failure: (any Error)?
        try step(sql, arguments) { statement, count in
            Self.read(statement, count, into: &row)
            do {
                try body(row)
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
    }

    /// The same, with the row handed over to change in place (no copy per row).
    ///
    /// `ownStatement`: prepare a statement for this run alone instead of taking the cached
    /// one, for bodies that run other queries (which could reuse or evict the cached one).
    public func forEachRowInPlace(_ sql: String, _ arguments: [SQLiteValue] = [], ownStatement: Bool = false, _ body: (inout [SQLiteValue]) throws -> Void) throws {
        var row: [SQLiteValue] = []
        var failure: (any Error)?
        try step(sql, arguments, ownStatement: ownStatement) { statement, count in
            Self.read(statement, count, into: &row)
            do {
                try body(&row)
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
    }

    /// `forEachRowInPlace`, handing each blob of `columns` to `open` where SQLite holds it
    /// instead of copying it; `open` sees the rest of the row (read first) and returns the
    /// column's value. Made for values that are transformed on reading anyway (decrypted).
    public func forEachRowInPlace(
        _ sql: String, _ arguments: [SQLiteValue] = [], ownStatement: Bool = false, opening columns: [Int],
        with open: (_ column: Int, _ content: BorrowedValue, _ row: [SQLiteValue]) throws -> SQLiteValue,
        _ body: (inout [SQLiteValue]) throws -> Void
    ) throws {
        var row: [SQLiteValue] = []
        var failure: (any Error)?
        var skipped: [Bool] = []
        try step(sql, arguments, ownStatement: ownStatement) { statement, count in
            if skipped.count != count {
                skipped = [Bool](repeating: false, count: count)
                for column in columns where column < count { skipped[column] = true }
            }
            Self.read(statement, count, into: &row, skipping: skipped)
            do {
                for column in columns where column < count {
                    let opened: SQLiteValue
                    if let value = sqlite3_column_value(statement, Int32(column)), sqlite3_value_type(value) == SQLITE_BLOB {
                        let bytes = sqlite3_value_blob(value)
                        opened = try open(column, .blob(UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : Int(sqlite3_value_bytes(value)))), row)
                    } else {
                        opened = try open(column, .value(Self.value(statement, Int32(column))), row)
                    }
                    row[column] = opened
                }
                try body(&row)
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
    }

    /// The one place that binds arguments, steps a cached statement and resets it: `row` sees
    /// each result row with its column count, and returns false to stop.
    private func step(_ sql: String, _ arguments: some RandomAccessCollection<SQLiteValue>, ownStatement: Bool = false, row: (OpaquePointer, Int) -> Bool) throws(SQLiteError) {
        let statement: OpaquePointer
        if ownStatement {
            var fresh: OpaquePointer?
            let status = sqlite3_prepare_v2(handle, sql, -1, &fresh, nil)
            guard status == SQLITE_OK, let fresh else {
                sqlite3_finalize(fresh)
                throw error(status, sql: sql)
            }
            statement = fresh
        } else {
            statement = try prepared(sql)
        }
        defer { if ownStatement { sqlite3_finalize(statement) } else { sqlite3_reset(statement) } }
        // Every parameter is bound on each run; earlier bindings are cleared only when this
        // run binds fewer (unbound parameters are NULL).
        if arguments.count < Int(sqlite3_bind_parameter_count(statement)) { sqlite3_clear_bindings(statement) }
        Self.bind(arguments, to: statement)
        let count = Int(sqlite3_column_count(statement))
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return }
            guard status == SQLITE_ROW else { throw error(status, sql: sql) }
            guard row(statement, count) else { return }
        }
    }

    static func bind(_ arguments: some RandomAccessCollection<SQLiteValue>, to statement: OpaquePointer) {
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            switch argument {
            case .null: sqlite3_bind_null(statement, index)
            case .integer(let value): sqlite3_bind_int64(statement, index, value)
            case .real(let value): sqlite3_bind_double(statement, index, value)
            case .text(let value):
                // By byte count, not up to a NUL: text may hold one.
                var text = value
                _ = text.withUTF8 { bytes in
                    if let base = bytes.baseAddress, !bytes.isEmpty {
                        sqlite3_bind_text(statement, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(bytes.count), transient)
                    } else {
                        sqlite3_bind_text(statement, index, "", 0, transient)
                    }
                }
            case .blob(let bytes): sqlite3_bind_blob(statement, index, bytes, Int32(bytes.count), transient)
            }
        }
    }

    /// The current row into a buffer reused from row to row.
    static func read(_ statement: OpaquePointer, _ count: Int, into row: inout [SQLiteValue]) {
        if row.count != count { row = [SQLiteValue](repeating: .null, count: count) }
        // One uniqueness check per row, not one per value.
        row.withUnsafeMutableBufferPointer { values in
            for column in 0..<count { values[column] = value(statement, Int32(column)) }
        }
    }

    /// The same, leaving the `skipped` columns NULL.
    static func read(_ statement: OpaquePointer, _ count: Int, into row: inout [SQLiteValue], skipping skipped: [Bool]) {
        if row.count != count { row = [SQLiteValue](repeating: .null, count: count) }
        row.withUnsafeMutableBufferPointer { values in
            for column in 0..<count { values[column] = skipped[column] ? .null : value(statement, Int32(column)) }
        }
    }

    /// The value of one column of the current row.
    static func value(_ statement: OpaquePointer, _ column: Int32) -> SQLiteValue {
        // One column call, then the value's own accessors: each `sqlite3_column_*` call checks
        // the statement and the malloc state again. The value is unprotected, which is safe on
        // a connection one thread uses at a time (opened NOMUTEX), and read before the next step.
        guard let value = sqlite3_column_value(statement, column) else { return .null }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            // Text first, then its length: the length is of the text as just converted.
            guard let text = sqlite3_value_text(value) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value)))))
        default: return .null
        }
    }

    /// The SQLite library version, e.g. `3.40.1`.
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}

extension SQLiteConnection {
    /// The names of the columns a query returns, without running it.
    public func columnNames(_ sql: String) throws(SQLiteError) -> [String] {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(rawHandle, sql, -1, &statement, nil)
        guard status == SQLITE_OK else { throw error(status, sql: sql) }
        defer { sqlite3_finalize(statement) }
        return (0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) }
    }
}

extension SQLiteError {
    /// The error in terms every engine shares (the migrator's and the store's).
    public func failure(database fallback: String) -> DatabaseFailure {
        let kind: DatabaseFailure.Kind? =
            switch primary {
            case .busy, .locked: .busy
            case .constraint: isUniquenessConflict ? .uniquenessConflict : .constraint
            case .error: .statement
            case .notADatabase, .corrupt: .notADatabase
            case .readOnly, .permission, .cannotOpen: .readOnly
            case .interrupted: .interrupted
            default: nil
            }
        return DatabaseFailure(database: database ?? fallback, message: description, code: primary.name, kind: kind, summary: message)
    }
}

// MARK: - Spellings of releases before the store and the migrator ran on PostgreSQL too

extension DatabaseFailure {
    /// SQLite's primary result code (`SQLiteError`'s spelling, when `StoreError.database` and
    /// `MigratorError.database` carried one); `.error` for a failure of another engine.
    ///
    ///     if failure.kind == .busy { retryLater() }   // was: failure.primary == .busy
    @available(*, deprecated, message: "use kind (DatabaseFailure.Kind), the same for every engine")
    public var primary: SQLiteError.Code { code.flatMap(SQLiteError.Code.init(name:)) ?? .error }

    /// What to do about a SQLite failure: now part of `message`.
    @available(*, deprecated, message: "the advice is part of message")
    public var advice: String? {
        guard let code = code.flatMap(SQLiteError.Code.init(name:)) else { return nil }
        return SQLiteError(code: code.rawValue, message: "", sql: nil).advice
    }
}
