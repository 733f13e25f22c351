import SQLDialects
import SchemaMetadata

/// What the store asks of a database database. The store's core imports no engine: each
/// engine adapts to this protocol in a target of its own (SQLite in `PersistentStoreSQLite`,
/// beside libsqlite3), so an app links only the engines it opens.
///
/// Statements arrive as text in the adapter's `dialect` with their arguments; the store builds
/// them as `SQL` fragments and renders them once for that dialect. An adapter hands its
/// connection to the store's initializer, with a migrator for the same database:
///
///     let store = try Store(database: adapter, migrator: migrator, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations)
public protocol StoreDatabase: AnyObject {
    /// The engine's dialect: quoting, parameter markers and capabilities.
    var dialect: any SQLDialect { get }
    /// The database as messages name it: a file path, or a URL without its password.
    var label: String { get }
    /// The file beside which `externalStorage` values are kept; nil in memory or on a server.
    var filePath: String? { get }
    /// Whether `externalStorage` values are kept in the database (a side table) rather than in
    /// files beside it: true on a server, whose other clients see no local file.
    var keepsExternalValuesInDatabase: Bool { get }

    /// Runs statements without parameters or rows (several, separated by `;`).
    func execute(_ script: String) throws(DatabaseFailure)
    /// Runs one statement with its arguments and returns its rows.
    func query(_ text: String, _ arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> [[StoredValue]]
    /// Whether `pipeline` spares round trips (a server): bulk writes then send their rows'
    /// statements in batches. SQLite runs statements in-process; there is nothing to spare.
    var pipelinesStatements: Bool { get }
    /// Runs statements and returns each one's rows, in order, as `query` would one by one; a
    /// server adapter sends them all before reading any result. The first failure is thrown.
    func pipeline(_ statements: [(text: String, arguments: ArraySlice<StoredValue>)]) throws(DatabaseFailure) -> [[[StoredValue]]]
    /// Whether `stageRows` loads rows in bulk (a server's COPY): large bulk writes then go
    /// through a staging table, one statement for thousands of rows.
    var stagesRows: Bool { get }
    /// Loads rows into an empty staging table shaped as `columns` of `table`, private to this
    /// transaction and gone when it ends, and returns its name.
    func stageRows(_ rows: [ArraySlice<StoredValue>], columns: [String], like table: String) throws(DatabaseFailure) -> String
    /// Whether rows are read one at a time as the engine steps through them (SQLite), rather
    /// than arriving whole (a server's result).
    var stepsThroughRows: Bool { get }
    /// The first column of the first row, when it is an integer (a key lookup).
    func firstInteger(_ text: String, values arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> Int64?
    /// Hands each row of a query to `body`, to change in place (no copy per row).
    ///
    /// `ownStatement`: the statement serves this run alone, for bodies that run other queries.
    func forEachRow(_ text: String, _ arguments: [StoredValue], ownStatement: Bool, _ body: (inout [StoredValue]) throws -> Void) throws
    /// The same, handing each value of `columns` to `open` where the engine holds it; `open`
    /// sees the rest of the row (read first) and returns the column's value. For values that
    /// are transformed on reading anyway (decrypted), so their bytes are not copied first.
    func forEachRow(
        _ text: String, _ arguments: [StoredValue], ownStatement: Bool, opening columns: [Int],
        with open: (_ column: Int, _ content: BorrowedValue, _ row: [StoredValue]) throws -> StoredValue,
        _ body: (inout [StoredValue]) throws -> Void
    ) throws

    /// Starts the transaction a write needs: one that holds the write lock from its start, so
    /// two writers queue instead of failing halfway. `serializable`: the transaction reads what
    /// it then writes (a `transaction { }` body) and must behave as if it ran alone. An engine
    /// without one write lock (a server) may then fail it with `.busy` where it conflicts with
    /// another, and the store runs the body again.
    func beginWriteTransaction(serializable: Bool) throws(DatabaseFailure)
    /// Starts a read-only transaction on one consistent snapshot.
    func beginReadTransaction() throws(DatabaseFailure)
    /// Commits the open transaction.
    func commitTransaction() throws(DatabaseFailure)
    /// Rolls the open transaction back (where the connection was lost, the server did).
    func rollbackTransaction() throws(DatabaseFailure)
    /// Whether a transaction is open.
    var isInTransaction: Bool { get }
    /// The implicit key the last insert on this connection was given (0: none since reset).
    var lastInsertedRowID: Int64 { get set }
    /// How many rows the last INSERT, UPDATE or DELETE changed.
    var changedRowCount: Int { get }

    /// The highest implicit key the engine's key generator handed out for `table` (SQLite's
    /// AUTOINCREMENT sequence), even for rows since deleted; 0 when none.
    func highestGeneratedKey(of table: String) throws(DatabaseFailure) -> Int64
    /// A key for a new row of `table` reserved from the engine's key generator (PostgreSQL's
    /// sequence), for rows that need their key before they are written (encrypted ones); nil
    /// where the engine reserves none, and the store counts on from `highestGeneratedKey`.
    func reserveGeneratedKey(of table: String) throws(DatabaseFailure) -> Int64?
    /// Whether a table exists.
    func tableExists(_ table: String) throws(DatabaseFailure) -> Bool
    /// A table's columns in their order, with their declared types.
    func columns(of table: String) throws(DatabaseFailure) -> [(name: String, type: String)]

    /// Settings for everyday use, applied once the migrations ran (which run best with the
    /// engine's defaults).
    func prepareForUse() throws(DatabaseFailure)

    /// Hands `sink` every row a statement inserts, updates or deletes, as it happens (cascades
    /// included); nil stops. False when the engine cannot, and the store records with triggers.
    func observeRowChanges(into sink: (any RowChangeSink)?) -> Bool
    /// Installs triggers that write an image of every row this connection's statements change in
    /// `tables` (each with its columns, in order), in the same transaction, so rollbacks and
    /// savepoints undo them too; writes of other connections are not recorded. False when the
    /// engine has none.
    func installChangeTriggers(_ tables: [(table: String, columns: [String])]) throws(DatabaseFailure) -> Bool
    /// Hands the images written since the last call to `body`, oldest first, then clears them.
    func drainChangedRows(_ body: (_ table: String, _ row: RowImage) -> Void) throws(DatabaseFailure)
    /// Clears the images written in the open transaction (a rewrite that changes no value).
    func discardChangedRows() throws(DatabaseFailure)
    /// Makes history tokens follow commit order: called just before a transaction writes its
    /// history row, holding what it takes until the commit (PostgreSQL assigns a sequence
    /// value when asked, not when committing). A no-op where writers are serialized already.
    func orderHistoryWrites() throws(DatabaseFailure)
    /// A number that changes when another connection commits; nil when the engine has none.
    func commitCounter() -> Int64?
    /// Tells other connections' watchers that the open transaction is committing (PostgreSQL:
    /// a NOTIFY, delivered at COMMIT); a no-op where watchers see commits otherwise (SQLite's
    /// file).
    func announceCommit() throws(DatabaseFailure)
    /// Starts watching for other connections' commits, calling `onCommit` (from any thread)
    /// when one may have happened; nil when nothing else can write (a database in memory).
    func watchCommits(_ onCommit: @escaping @Sendable () -> Void) -> (any CommitWatch)?
}

/// A watch on other connections' commits, started by `StoreDatabase.watchCommits`:
///
///     let watch = database.watchCommits { Task { await store.scheduleDelivery() } }
public protocol CommitWatch: AnyObject, Sendable {
    /// Called as the store starts reading: later commits wake it again.
    func rearm()
    /// Stops watching.
    func stop()
}

/// Whether a row was inserted, updated or deleted.
public enum RowChangeOperation: Sendable {
    case insert, update, delete
}

/// One row about to change, as an engine's row-change hook reports it. Valid only inside the
/// handler it is passed to.
public protocol ChangedRow {
    var operation: RowChangeOperation { get }
    var oldRowID: Int64 { get }
    var newRowID: Int64 { get }
    /// A column's value before an update or delete.
    func old(_ column: Int) -> StoredValue
    /// A column's value after an insert or update.
    func new(_ column: Int) -> StoredValue
    /// Whether an update changed the column.
    func changes(_ column: Int) -> Bool
}

/// Receives the rows an engine's row-change hook reports (the store's history recorder).
/// Generic over the row, so an engine hands its own row type over without boxing it:
///
///     sink.record(SQLiteChangedRow(change: change), table: change.table)
public protocol RowChangeSink: AnyObject {
    /// One row of `table` about to change. `table` is the engine's own copy of the name, stable
    /// while the schema is, so a sink can cache by address (and compare the text to be sure).
    func record<Row: ChangedRow>(_ row: Row, table: UnsafePointer<CChar>)
}
