import Foundation
import PersistentStoreCore
import SQLDialects
import SQLiteKit
import SchemaMetadata

/// The store's SQLite adapter: a `StoreDatabase` over one `SQLiteConnection`.
final class SQLiteStoreDatabase: StoreDatabase, FileDatabase, SteppedRows, InsertedRowIDs, BorrowedColumns, RowChangeHook, CommitWatching {
    let connection: SQLiteConnection
    let filePath: String?
    let settings: SQLiteSettings
    let dialect: any SQLDialect = SQLiteDialect()

    /// Opens (creating) the file, or a database in memory when `path` is nil, in WAL mode with
    /// foreign keys enforced; a lock is waited for up to `busyTimeout` seconds.
    init(path: String?, busyTimeout seconds: Double, settings: SQLiteSettings) throws(DatabaseFailure) {
        filePath = path
        self.settings = settings
        do {
            connection = try SQLiteConnection(path: path ?? ":memory:")
            // Before the first statement: even switching to WAL waits for another process's lock.
            connection.setBusyTimeout(milliseconds: Int32(min(seconds * 1000, Double(Int32.max))))
            if path != nil { _ = try connection.query("PRAGMA journal_mode = WAL;") }
            try connection.execute("PRAGMA foreign_keys = ON;")
        } catch {
            throw error.failure(database: path ?? ":memory:")
        }
    }

    // Statements run in-process: no pipelining or bulk staging to gain from, so the adapter has
    // neither ability. External values are files beside the database (`FileDatabase`; a
    // temporary folder for one in memory).

    var label: String { filePath ?? ":memory:" }

    private func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(DatabaseFailure) -> T {
        do { return try body() } catch { throw error.failure(database: label) }
    }

    // The store hands over `SQL` or statements rendered from it; the adapter's own statements,
    // in SQLite's words, go to the connection as they are (`run`, `rows`, `integer`).

    func execute(_ script: SQL) throws(DatabaseFailure) { try run(script.rendered(for: dialect).text) }

    func query(_ statement: RenderedSQL, _ arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> [[StoredValue]] {
        try rows(statement.text, arguments)
    }

    func firstInteger(_ statement: RenderedSQL, values arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> Int64? {
        try integer(statement.text, values: arguments)
    }

    func run(_ script: String) throws(DatabaseFailure) {
        try wrap { () throws(SQLiteError) in try connection.execute(script) }
    }

    func rows(_ text: String, _ arguments: ArraySlice<StoredValue> = []) throws(DatabaseFailure) -> [[StoredValue]] {
        try wrap { () throws(SQLiteError) in try connection.query(text, values: arguments) }
    }

    func integer(_ text: String, values arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> Int64? {
        try wrap { () throws(SQLiteError) in try connection.firstInteger(text, values: arguments) }
    }

    func forEachRow(_ statement: RenderedSQL, _ arguments: [StoredValue], ownStatement: Bool, _ body: (inout [StoredValue]) throws -> Void) throws {
        do {
            try connection.forEachRowInPlace(statement.text, arguments, ownStatement: ownStatement, body)
        } catch let error as SQLiteError {
            throw error.failure(database: label)
        }
    }

    func forEachRow(
        _ statement: RenderedSQL, _ arguments: [StoredValue], ownStatement: Bool, opening columns: [Int],
        with open: (Int, BorrowedValue, [StoredValue]) throws -> StoredValue, _ body: (inout [StoredValue]) throws -> Void
    ) throws {
        do {
            try connection.forEachRowInPlace(statement.text, arguments, ownStatement: ownStatement, opening: columns, with: open, body)
        } catch let error as SQLiteError {
            throw error.failure(database: label)
        }
    }

    /// SQLite's write lock, taken at BEGIN, makes every write transaction serializable.
    func beginWriteTransaction(serializable: Bool) throws(DatabaseFailure) { try run("BEGIN IMMEDIATE;") }
    func beginReadTransaction() throws(DatabaseFailure) { try run("BEGIN DEFERRED;") }
    func commitTransaction() throws(DatabaseFailure) { try run("COMMIT;") }
    func rollbackTransaction() throws(DatabaseFailure) { try run("ROLLBACK;") }
    var isInTransaction: Bool { connection.isInTransaction }

    var lastInsertedRowID: Int64 {
        get { connection.lastInsertedRowID }
        set { connection.lastInsertedRowID = newValue }
    }

    var changedRowCount: Int { connection.changedRowCount }

    func highestGeneratedKey(of table: String) throws(DatabaseFailure) -> Int64 {
        guard try tableExists("sqlite_sequence") else { return 0 }
        return try integer("SELECT seq FROM sqlite_sequence WHERE name = ?", values: [.text(table)]) ?? 0
    }

    func tableExists(_ table: String) throws(DatabaseFailure) -> Bool {
        try !rows("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(table)]).isEmpty
    }

    func columns(of table: String) throws(DatabaseFailure) -> [(name: String, type: String)] {
        try rows("SELECT name, type FROM pragma_table_info(?) ORDER BY cid", [.text(table)]).map { row in
            guard case .text(let name) = row[0] else { return ("", "") }
            if case .text(let type) = row[1] { return (name, type) }
            return (name, "")
        }
    }

    func prepareForUse() throws(DatabaseFailure) { try run(settings.pragmas(inMemory: filePath == nil)) }

    func observeRowChanges(into sink: (any RowChangeSink)?) -> Bool {
        guard let sink else { return connection.observeRowChanges(nil) }
        return connection.observeRowChanges { change in
            guard change.isMain else { return }
            sink.record(SQLiteChangedRow(change: change), table: change.table)
        }
    }

    func commitCounter() -> Int64? { try? connection.dataVersion() }
    /// Watchers see commits in the file.
    func announceCommit() throws(DatabaseFailure) {}

    func watchCommits(_ onCommit: @escaping @Sendable () -> Void) -> (any CommitWatch)? {
        filePath.map { DatabaseWatcher(path: $0, onChange: onCommit) }
    }
}

/// SQLite's pre-update hook row, as the store's recorder reads rows.
struct SQLiteChangedRow: ChangedRow {
    let change: RowChange

    var operation: RowChangeOperation {
        switch change.operation {
        case .insert: .insert
        case .update: .update
        case .delete: .delete
        }
    }

    var oldRowID: Int64 { change.oldRowID }
    var newRowID: Int64 { change.newRowID }
    func old(_ column: Int) -> StoredValue { change.old(column) }
    func new(_ column: Int) -> StoredValue { change.new(column) }
    func changes(_ column: Int) -> Bool { change.changes(column) }
}

extension DatabaseWatcher: CommitWatch {}
