import SQLDialects
import SchemaMetadata

/// What the store asks of a database database. The store's core imports no engine: each
/// engine adapts to this protocol in a target of its own (SQLite in `PersistentStoreSQLite`,
/// beside libsqlite3), so an app links only the engines it opens.
///
/// Statements arrive as `SQL`, or rendered once for the adapter's `dialect` (`RenderedSQL`) with
/// their arguments apart, for a statement run many times; never as text built by hand. An adapter hands its
/// connection to the store's initializer, with a migrator for the same database:
///
///     let store = try Store(database: adapter, migrator: migrator, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations)
public protocol StoreDatabase: AnyObject {
    /// The engine's dialect: quoting, parameter markers and capabilities.
    var dialect: any SQLDialect { get }
    /// The database as messages name it: a file path, or a URL without its password.
    var label: String { get }

    /// Runs statements without parameters or rows (several, separated by `;`).
    func execute(_ script: SQL) throws(DatabaseFailure)
    /// Runs one statement with its arguments and returns its rows.
    func query(_ statement: RenderedSQL, _ arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> [[StoredValue]]
    /// The first column of the first row, when it is an integer (a key lookup).
    func firstInteger(_ statement: RenderedSQL, values arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> Int64?
    /// Hands each row of a query to `body`, to change in place (no copy per row).
    ///
    /// `ownStatement`: the statement serves this run alone, for bodies that run other queries.
    func forEachRow(_ statement: RenderedSQL, _ arguments: [StoredValue], ownStatement: Bool, _ body: (inout [StoredValue]) throws -> Void) throws

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
    /// How many rows the last INSERT, UPDATE or DELETE changed.
    var changedRowCount: Int { get }

    /// The highest implicit key the engine's key generator handed out for `table` (SQLite's
    /// AUTOINCREMENT sequence, PostgreSQL's identity sequence), even for rows since deleted; 0
    /// when none.
    func highestGeneratedKey(of table: String) throws(DatabaseFailure) -> Int64
    /// Whether a table exists.
    func tableExists(_ table: String) throws(DatabaseFailure) -> Bool
    /// A table's columns in their order, with their declared types.
    func columns(of table: String) throws(DatabaseFailure) -> [(name: String, type: String)]

    /// Settings for everyday use, applied once the migrations ran (which run best with the
    /// engine's defaults).
    func prepareForUse() throws(DatabaseFailure)
}

// MARK: - Abilities
//
// What only some engines can do, each a protocol of its own that the store looks for once, when
// it opens (`StoreAbilities`), as the migrator looks for `MigrationLocking`. An adapter that
// lacks one still works: the store takes the plain path.

/// A database in a file of its own (SQLite): `externalStorage` values are kept in files beside
/// it. A database without this ability (a server, whose other clients see no local file) keeps
/// them in a side table.
public protocol FileDatabase: StoreDatabase {
    /// The file; nil in memory, where external values go to a temporary folder.
    var filePath: String? { get }
}

/// Values read where the engine holds them (SQLite's column buffers), for values transformed on
/// reading anyway (decrypted), so their bytes are not copied first. Without it, the store reads
/// the row and transforms its copies.
public protocol BorrowedColumns: StoreDatabase {
    /// `forEachRow`, handing each value of `columns` to `open` where the engine holds it; `open`
    /// sees the rest of the row (read first) and returns the column's value.
    func forEachRow(
        _ statement: RenderedSQL, _ arguments: [StoredValue], ownStatement: Bool, opening columns: [Int],
        with open: (_ column: Int, _ content: BorrowedValue, _ row: [StoredValue]) throws -> StoredValue,
        _ body: (inout [StoredValue]) throws -> Void
    ) throws
}

/// Rows read one at a time as the engine steps through them (SQLite), rather than arriving
/// whole (a server's result): a whole-table fetch counts the rows first to reserve its array.
public protocol SteppedRows: StoreDatabase {}

/// The implicit key the last insert on this connection was given (SQLite's rowid), so inserts
/// need no `RETURNING`.
public protocol InsertedRowIDs: StoreDatabase {
    /// The key; 0 when none since it was reset.
    var lastInsertedRowID: Int64 { get set }
}

/// Statements sent together, before any result is read (a server's pipeline): bulk writes go
/// out in batches, a round trip per batch. An engine that runs statements in-process (SQLite)
/// has nothing to spare.
public protocol StatementPipelining: StoreDatabase {
    /// Runs statements and returns each one's rows, in order, as `query` would one by one. The
    /// first failure is thrown.
    func pipeline(_ statements: [(statement: RenderedSQL, arguments: ArraySlice<StoredValue>)]) throws(DatabaseFailure) -> [[[StoredValue]]]
}

/// Rows loaded in bulk (a server's COPY): large bulk writes go through a staging table, one
/// statement for thousands of rows.
public protocol BulkRowStaging: StoreDatabase {
    /// Loads rows into an empty staging table shaped as `columns` of `table`, private to this
    /// transaction and gone when it ends, and returns its name.
    func stageRows(_ rows: [ArraySlice<StoredValue>], columns: [String], like table: String) throws(DatabaseFailure) -> String
}

/// Keys for new rows reserved from the engine's key generator before the rows are written
/// (PostgreSQL's sequence), for rows that need their key first (encrypted ones). Without it the
/// store counts on from `highestGeneratedKey`, under the write lock.
public protocol GeneratedKeyReservation: StoreDatabase {
    /// A fresh key for a row of `table`.
    func reserveGeneratedKey(of table: String) throws(DatabaseFailure) -> Int64?
}

/// An engine hook that reports every row a statement inserts, updates or deletes (SQLite's
/// pre-update hook), which the history recorder prefers to triggers.
public protocol RowChangeHook: StoreDatabase {
    /// Hands `sink` every row a statement changes, as it happens (cascades included); nil
    /// stops. False when this build of the engine has no hook, and the store records with
    /// triggers.
    func observeRowChanges(into sink: (any RowChangeSink)?) -> Bool
}

/// Triggers that write an image of every row this connection's statements change, read back
/// by the history recorder.
public protocol ChangeTriggers: StoreDatabase {
    /// Installs them on `tables` (each with its columns, in order), writing in the same
    /// transaction, so rollbacks and savepoints undo them too; writes of other connections are
    /// not recorded. False when they cannot be installed here.
    func installChangeTriggers(_ tables: [(table: String, columns: [String])]) throws(DatabaseFailure) -> Bool
    /// Hands the images written since the last call to `body`, oldest first, then clears them.
    func drainChangedRows(_ body: (_ table: String, _ row: RowImage) -> Void) throws(DatabaseFailure)
    /// Clears the images written in the open transaction (a rewrite that changes no value).
    func discardChangedRows() throws(DatabaseFailure)
}

/// Change triggers that leave the row of one of the store's own inserts to the store, which
/// knows it (PostgreSQL: the insert trigger's `WHEN` reads a setting of the statement's
/// transaction), so an insert costs no image written and read back. Cascades, other tables'
/// rows and other triggers' writes are still captured.
public protocol OwnInsertRecording: ChangeTriggers {
    /// The tables whose insert trigger leaves the store's own rows to it.
    var ownInsertTables: Set<String> { get }
    /// Runs `body`, one statement inserting into `table` (or, on a conflict, updating), with
    /// its row left to the store. Returns what `body` returned, and the implicit keys of the
    /// rows of `table` it updated instead (their images were read as usual).
    ///
    ///     let (rows, updated) = try adapter.insertingOwnRow(into: "flights") { try adapter.query(upsert, values) }
    func insertingOwnRow<T>(into table: String, _ body: () throws(DatabaseFailure) -> T) throws(DatabaseFailure) -> (result: T, updatedRowIDs: Set<Int64>)
}

/// Change triggers whose images are read back in the round trip of the statement that wrote
/// them and handed over at once, as a row-change hook would (PostgreSQL pipelines a read of
/// them behind each write): at commit there is nothing left to wait for.
public protocol ChangeImageStreaming: ChangeTriggers {
    /// Hands the images each statement writes to `sink` from now on, oldest first; nil stops.
    /// What a statement could not hand over waits for `drainChangedRows`.
    ///
    ///     adapter.streamChangedRows { table, image in recorder.record(image, tableNamed: table) }
    func streamChangedRows(into sink: ((_ table: String, _ row: RowImage) -> Void)?)
}

/// History tokens a reader can follow without skipping a transaction that commits late, where
/// writers run side by side (PostgreSQL). Engines whose writers are serialized need nothing.
///
/// Either the writers are ordered (`orderHistoryWrites` holds a lock until the commit, as
/// earlier releases did), or the tokens are: each transaction's token is taken from its
/// transaction id, and readers read only below `settledHistoryBound`, past which some
/// transaction may still be running.
public protocol HistoryOrdering: StoreDatabase {
    /// Called just before a transaction writes its history row, holding what it takes until
    /// the commit; nothing where the tokens are ordered instead.
    func orderHistoryWrites() throws(DatabaseFailure)
    /// An SQL expression below which every history token's transaction is over: readers read
    /// only below it. Nil where the writers are ordered.
    var settledHistoryBound: SQL? { get }
    /// Makes the history table give tokens in that order (once, when the store opens).
    func prepareHistoryOrdering() throws(DatabaseFailure)
}

extension HistoryOrdering {
    /// Writers ordered by `orderHistoryWrites`: every token is settled once visible.
    public var settledHistoryBound: SQL? { nil }
    /// Nothing to prepare.
    public func prepareHistoryOrdering() throws(DatabaseFailure) {}
}

/// A session that reads and writes through a schema of views (an online migration's version
/// schema, on PostgreSQL), the store's own tables in the tables' schema behind it. A table the
/// store creates once the session reads through views (a sync server's state) goes there, not
/// among the views, which a contract drops.
public protocol VersionedSearchPath: StoreDatabase {
    /// Runs `script` with the tables' schema alone on the search path, then puts the path back.
    ///
    ///     try adapter.executeInTableSchema("CREATE TABLE IF NOT EXISTS schemagen_sync_records (...)")
    func executeInTableSchema(_ script: SQL) throws(DatabaseFailure)
}

/// Other connections' commits heard as they happen: SQLite's file watcher and `data_version`,
/// PostgreSQL's LISTEN/NOTIFY. Without it, `changes()` and `observe` see this store's own
/// commits only.
public protocol CommitWatching: StoreDatabase {
    /// Starts watching for other connections' commits, calling `onCommit` (from any thread)
    /// when one may have happened; nil when nothing else can write (a database in memory).
    func watchCommits(_ onCommit: @escaping @Sendable () -> Void) -> (any CommitWatch)?
    /// A number that changes when another connection commits; nil when the engine has none.
    func commitCounter() -> Int64?
    /// Tells other connections' watchers that the open transaction is committing (PostgreSQL:
    /// a NOTIFY, delivered at COMMIT); where they see commits otherwise (SQLite's file), nothing.
    func announceCommit() throws(DatabaseFailure)
}

extension CommitWatching {
    /// No counter: watchers are woken by `watchCommits` alone.
    public func commitCounter() -> Int64? { nil }
    /// Watchers see commits without being told.
    public func announceCommit() throws(DatabaseFailure) {}
}

/// Commit announcements that carry the transaction's history row (PostgreSQL): a write with
/// history then waits on no more round trips for it than the announcement's own.
public protocol HistoryAnnouncing: CommitWatching {
    /// `announceCommit`, running `insert` (the history row's INSERT, without RETURNING, its
    /// parameters numbered from 1) in the same statement; returns the row's token.
    ///
    ///     let token = try adapter.announceCommit(insertingHistory: insert, [.text("Flights"), .null, .real(now), .text(entities), .text(changes)])
    func announceCommit(insertingHistory insert: RenderedSQL, _ arguments: [StoredValue]) throws(DatabaseFailure) -> Int64?
}

/// Reads from standbys (PostgreSQL's `PostgresSettings.readURL`): reads outside write
/// transactions go to a standby, once it has replayed this store's own writes (read-your-writes),
/// or to the primary when it has not within the wait. The store says how fresh each call's
/// reads must be.
public protocol ReplicaReading: StoreDatabase {
    /// How fresh the next reads must be; the store sets it around a call and back after.
    var readSource: ReadSource { get set }
}

/// How fresh a read must be, where the store reads from standbys (`PostgresSettings.readURL`).
///
///     let count = try await store.read(from: .anyReplica) { try $0.count(Flight.self) }
public enum ReadSource: Sendable, Hashable {
    /// A standby that has replayed this store's own last write, else the primary (the default).
    case ownWrites
    /// Any standby, however far behind: for what may be stale (a dashboard's counts).
    case anyReplica
    /// The primary.
    case primary
}

/// The abilities of one adapter, looked up once when the store opens, in groups by what they
/// serve: the store asks these, never the adapter's type.
struct StoreAbilities {
    /// How the history is captured and ordered, and how other connections' commits are heard.
    struct History {
        let rowChangeHook: (any RowChangeHook)?
        let changeTriggers: (any ChangeTriggers)?
        let changeImages: (any ChangeImageStreaming)?
        let ownInserts: (any OwnInsertRecording)?
        let ordering: (any HistoryOrdering)?
        let commitWatching: (any CommitWatching)?
        let announcing: (any HistoryAnnouncing)?
    }

    /// A server's: failing over, reading from standbys, pipelining statements.
    struct Server {
        let failover: (any ServerFailover)?
        let replicaReading: (any ReplicaReading)?
        let pipelining: (any StatementPipelining)?
    }

    /// Many rows at once: staged copies, reserved keys, the last insert's key, rows stepped
    /// through, values read where the engine holds them.
    struct Bulk {
        let staging: (any BulkRowStaging)?
        let keyReservation: (any GeneratedKeyReservation)?
        let rowIDs: (any InsertedRowIDs)?
        let steppedRows: Bool
        let borrowedColumns: (any BorrowedColumns)?
    }

    let file: (any FileDatabase)?
    let fullText: (any FullTextSearching)?
    let history: History
    let server: Server
    let bulk: Bulk

    init(_ database: any StoreDatabase) {
        file = database as? any FileDatabase
        fullText = database as? any FullTextSearching
        history = History(
            rowChangeHook: database as? any RowChangeHook, changeTriggers: database as? any ChangeTriggers, changeImages: database as? any ChangeImageStreaming,
            ownInserts: database as? any OwnInsertRecording, ordering: database as? any HistoryOrdering, commitWatching: database as? any CommitWatching,
            announcing: database as? any HistoryAnnouncing)
        server = Server(failover: database as? any ServerFailover, replicaReading: database as? any ReplicaReading, pipelining: database as? any StatementPipelining)
        bulk = Bulk(
            staging: database as? any BulkRowStaging, keyReservation: database as? any GeneratedKeyReservation, rowIDs: database as? any InsertedRowIDs,
            steppedRows: database is any SteppedRows, borrowedColumns: database as? any BorrowedColumns)
    }

    /// Whether `externalStorage` values live in a side table of the database rather than in
    /// files beside it.
    var keepsExternalValuesInDatabase: Bool { file == nil }
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
    /// `insert` adds the row, `update` changes its values or key, `delete` removes it.
    case insert, update, delete
}

/// One row about to change, as an engine's row-change hook reports it. Valid only inside the
/// handler it is passed to.
public protocol ChangedRow {
    /// Whether the row is inserted, updated or deleted.
    var operation: RowChangeOperation { get }
    /// The row's implicit key (SQLite's rowid, PostgreSQL's `id`) before an update or delete; the
    /// recorder reads it only for tables keyed by it.
    var oldRowID: Int64 { get }
    /// The row's implicit key after an insert or update; read only for tables keyed by it.
    var newRowID: Int64 { get }
    /// A column's value before an update or delete.
    func old(_ column: Int) -> StoredValue
    /// A column's value after an insert or update.
    func new(_ column: Int) -> StoredValue
    /// Whether an update changed the column.
    func changes(_ column: Int) -> Bool
    /// Whether an update changed columns this store does not read (another schema version's,
    /// written through its views or carried by an online migration's triggers).
    var changesColumnsNotShown: Bool { get }
}

extension ChangedRow {
    /// A hook that sees every column: none is hidden.
    public var changesColumnsNotShown: Bool { false }
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
