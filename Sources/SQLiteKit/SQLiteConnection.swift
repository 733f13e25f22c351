import CSQLite
import SchemaMetadata

/// An error SQLite reported, with its result code and message.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int32
    public var message: String
    /// The statement that failed, when there was one.
    public var sql: String?

    public init(code: Int32, message: String, sql: String?) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    public var description: String {
        sql.map { "\(message) (in: \($0))" } ?? message
    }
}

/// A value read from or bound to SQLite: SchemaMetadata's `StoredValue`, which generated
/// row codecs produce and read, so rows need no conversion.
public typealias SQLiteValue = StoredValue

/// One connection to a database file (or `:memory:`). Not shared between threads.
public final class SQLiteConnection {
    private var handle: OpaquePointer?
    /// Keeps the progress closure alive while SQLite holds a pointer to it.
    var progressBox: ProgressBox?

    var rawHandle: OpaquePointer? { handle }

    /// SQLite's way of saying "copy the bytes now"; not imported into Swift as a constant.
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let status = sqlite3_open_v2(path, &handle, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close(handle)
            handle = nil
            throw SQLiteError(code: status, message: message, sql: nil)
        }
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    private func error(_ status: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        guard status == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw SQLiteError(code: status, message: text, sql: sql)
        }
    }

    /// Prepared statements by SQL text, reused by `query`: preparing costs more than running a
    /// small insert. Bounded, so generated one-off SQL cannot grow it without end.
    private var statements: [String: OpaquePointer] = [:]
    private static let statementCacheLimit = 64

    /// The statement used last: bulk writes repeat one statement, and comparing the same
    /// string with itself is cheaper than hashing it.
    private var lastPrepared: (sql: String, statement: OpaquePointer)?

    private func prepared(_ sql: String) throws(SQLiteError) -> OpaquePointer {
        if let last = lastPrepared, last.sql == sql { return last.statement }
        if let statement = statements[sql] {
            lastPrepared = (sql, statement)
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
        }
        statements[sql] = statement
        lastPrepared = (sql, statement)
        return statement
    }

    /// Runs one statement with bound values and returns every row.
    public func query(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            switch argument {
            case .null: sqlite3_bind_null(statement, index)
            case .integer(let value): sqlite3_bind_int64(statement, index, value)
            case .real(let value): sqlite3_bind_double(statement, index, value)
            case .text(let value): sqlite3_bind_text(statement, index, value, -1, Self.transient)
            case .blob(let bytes): sqlite3_bind_blob(statement, index, bytes, Int32(bytes.count), Self.transient)
            }
        }
        var rows: [[SQLiteValue]] = []
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw error(status, sql: sql) }
            let count = sqlite3_column_count(statement)
            var row: [SQLiteValue] = []
            row.reserveCapacity(Int(count))
            for column in 0..<count {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let length = Int(sqlite3_column_bytes(statement, column))
                    if let pointer = sqlite3_column_blob(statement, column) {
                        row.append(.blob(Array(UnsafeRawBufferPointer(start: pointer, count: length))))
                    } else {
                        row.append(.blob([]))
                    }
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// Runs one statement and hands each row to `body` in one reused buffer (no array per row).
    public func forEachRow(_ sql: String, _ arguments: [SQLiteValue] = [], _ body: ([SQLiteValue]) throws -> Void) throws {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            switch argument {
            case .null: sqlite3_bind_null(statement, index)
            case .integer(let value): sqlite3_bind_int64(statement, index, value)
            case .real(let value): sqlite3_bind_double(statement, index, value)
            case .text(let value): sqlite3_bind_text(statement, index, value, -1, Self.transient)
            case .blob(let bytes): sqlite3_bind_blob(statement, index, bytes, Int32(bytes.count), Self.transient)
            }
        }
        let count = Int(sqlite3_column_count(statement))
        var row = [SQLiteValue](repeating: .null, count: count)
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw error(status, sql: sql) }
            for column in 0..<count {
                let index = Int32(column)
                switch sqlite3_column_type(statement, index) {
                case SQLITE_INTEGER: row[column] = .integer(sqlite3_column_int64(statement, index))
                case SQLITE_FLOAT: row[column] = .real(sqlite3_column_double(statement, index))
                case SQLITE_TEXT: row[column] = .text(String(cString: sqlite3_column_text(statement, index)))
                case SQLITE_BLOB:
                    let length = Int(sqlite3_column_bytes(statement, index))
                    row[column] = .blob(sqlite3_column_blob(statement, index).map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? [])
                default: row[column] = .null
                }
            }
            try body(row)
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
        guard status == SQLITE_OK else {
            throw SQLiteError(code: status, message: String(cString: sqlite3_errmsg(rawHandle)), sql: sql)
        }
        defer { sqlite3_finalize(statement) }
        return (0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) }
    }
}
