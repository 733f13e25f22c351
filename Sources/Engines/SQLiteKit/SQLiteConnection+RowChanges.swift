import CSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SQLite's pre-update hook, found at run time: the symbols exist only in builds made with
/// `SQLITE_ENABLE_PREUPDATE_HOOK` (Debian's and Ubuntu's are; Apple's system library is not),
/// and the header declares them only under that macro.
enum PreUpdateAPI {
    typealias Callback = @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int64, Int64) -> Void
    typealias Register = @convention(c) (OpaquePointer?, Callback?, UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?
    typealias Read = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    typealias Count = @convention(c) (OpaquePointer?) -> Int32

    struct Functions: @unchecked Sendable {
        let register: Register
        let old: Read
        let new: Read
        let count: Count
    }

    static let functions: Functions? = {
        guard let process = dlopen(nil, RTLD_NOW) else { return nil }
        func symbol<T>(_ name: String, as type: T.Type) -> T? {
            dlsym(process, name).map { unsafeBitCast($0, to: type) }
        }
        guard let register = symbol("sqlite3_preupdate_hook", as: Register.self),
            let old = symbol("sqlite3_preupdate_old", as: Read.self),
            let new = symbol("sqlite3_preupdate_new", as: Read.self),
            let count = symbol("sqlite3_preupdate_count", as: Count.self)
        else { return nil }
        return Functions(register: register, old: old, new: new, count: count)
    }()
}

/// One row about to be inserted, updated or deleted, as the pre-update hook sees it. Valid only
/// inside the handler.
public struct RowChange {
    /// What the statement does to the row.
    public enum Operation: Sendable {
        /// `insert` adds the row, `update` changes its values or rowid, `delete` removes it.
        case insert, update, delete
    }

    /// Whether the row is being inserted, updated or deleted.
    public let operation: Operation
    /// The table's name as SQLite holds it: stable while the schema is, so a handler can cache
    /// by pointer (and must compare the text, since a reloaded schema may reuse the address).
    public let table: UnsafePointer<CChar>
    /// True for the `main` database (not `temp` or an attached one).
    public let isMain: Bool
    /// The rowid before an update or delete; undefined for an insert and for a WITHOUT ROWID table.
    public let oldRowID: Int64
    /// The rowid after an insert or update; undefined for a delete and for a WITHOUT ROWID table.
    public let newRowID: Int64
    let connection: OpaquePointer
    let api: PreUpdateAPI.Functions

    /// How many columns the changing row has (`sqlite3_preupdate_count`).
    public var columnCount: Int { Int(api.count(connection)) }

    /// A column's value before an update or delete.
    public func old(_ column: Int) -> SQLiteValue { read(api.old, column) }

    /// A column's value after an insert or update.
    public func new(_ column: Int) -> SQLiteValue { read(api.new, column) }

    /// Whether an update changes a column, compared without building values.
    public func changes(_ column: Int) -> Bool {
        var before: OpaquePointer?
        var after: OpaquePointer?
        guard api.old(connection, Int32(column), &before) == SQLITE_OK, api.new(connection, Int32(column), &after) == SQLITE_OK else { return true }
        let type = sqlite3_value_type(before)
        guard type == sqlite3_value_type(after) else { return true }
        switch type {
        case SQLITE_NULL: return false
        case SQLITE_INTEGER: return sqlite3_value_int64(before) != sqlite3_value_int64(after)
        case SQLITE_FLOAT: return sqlite3_value_double(before) != sqlite3_value_double(after)
        default:
            let isText = type == SQLITE_TEXT
            let first = isText ? UnsafeRawPointer(sqlite3_value_text(before)) : sqlite3_value_blob(before)
            let second = isText ? UnsafeRawPointer(sqlite3_value_text(after)) : sqlite3_value_blob(after)
            let count = sqlite3_value_bytes(before)
            guard count == sqlite3_value_bytes(after) else { return true }
            guard count > 0, let first, let second else { return false }
            return memcmp(first, second, Int(count)) != 0
        }
    }

    private func read(_ getter: PreUpdateAPI.Read, _ column: Int) -> SQLiteValue {
        var value: OpaquePointer?
        guard getter(connection, Int32(column), &value) == SQLITE_OK, let value else { return .null }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT: return .text(String(cString: sqlite3_value_text(value)))
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            return .blob(sqlite3_value_blob(value).map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? [])
        default: return .null
        }
    }
}

final class RowChangeBox {
    let handler: (RowChange) -> Void
    let api: PreUpdateAPI.Functions
    init(_ handler: @escaping (RowChange) -> Void, api: PreUpdateAPI.Functions) {
        self.handler = handler
        self.api = api
    }
}

extension SQLiteConnection {
    /// True when this SQLite library has the pre-update hook.
    public static var hasRowChangeHook: Bool { PreUpdateAPI.functions != nil }

    /// Calls `handler` before every row this connection inserts, updates or deletes, including
    /// rows changed by triggers and foreign-key actions; nil removes it. Returns false, and does
    /// nothing, when the library lacks the pre-update hook.
    @discardableResult
    public func observeRowChanges(_ handler: ((RowChange) -> Void)?) -> Bool {
        guard let api = PreUpdateAPI.functions else { return false }
        guard let handler else {
            _ = api.register(rawHandle, nil, nil)
            rowChangeBox = nil
            return true
        }
        let box = RowChangeBox(handler, api: api)
        rowChangeBox = box
        _ = api.register(
            rawHandle,
            { context, connection, operation, database, table, oldRowID, newRowID in
                guard let context, let connection, let table, let database else { return }
                let box = Unmanaged<RowChangeBox>.fromOpaque(context).takeUnretainedValue()
                let kind: RowChange.Operation
                switch operation {
                case SQLITE_INSERT: kind = .insert
                case SQLITE_DELETE: kind = .delete
                default: kind = .update
                }
                // "main" is compared by bytes: no String per row.
                let isMain = database[0] == 0x6D && database[1] == 0x61 && database[2] == 0x69 && database[3] == 0x6E && database[4] == 0
                box.handler(RowChange(operation: kind, table: table, isMain: isMain, oldRowID: oldRowID, newRowID: newRowID, connection: connection, api: box.api))
            }, Unmanaged.passUnretained(box).toOpaque())
        return true
    }

    /// SQLite's `PRAGMA data_version`: changes when another connection (in any process) commits
    /// to the file, and never for this connection's own commits.
    public func dataVersion() throws(SQLiteError) -> Int64 {
        guard case .integer(let version)? = try query("PRAGMA data_version;").first?.first else { return 0 }
        return version
    }

    /// The rowid of the last row this connection inserted.
    /// Settable, so a caller can tell whether a statement inserted: an upsert that updates
    /// leaves it as it was.
    public var lastInsertedRowID: Int64 {
        get { sqlite3_last_insert_rowid(rawHandle) }
        set { sqlite3_set_last_insert_rowid(rawHandle, newValue) }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changedRowCount: Int { Int(sqlite3_changes(rawHandle)) }
}
