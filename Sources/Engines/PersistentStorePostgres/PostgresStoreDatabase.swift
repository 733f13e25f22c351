import MigrationFiles
import PersistentStoreCore
import PostgresKit
import SQLDialects
import SchemaMetadata

/// The store's PostgreSQL adapter: a `StoreDatabase` over one libpq connection.
///
/// Rows arrive whole from the server (libpq's default) and are handed over one by one. History
/// is recorded with triggers (`PostgresChangeTriggers`); other connections' commits arrive by
/// LISTEN/NOTIFY on a listener connection of its own.
///
/// Statements are prepared once per connection, except behind a transaction pooler.
///
/// A lost server (a dropped connection, a shutdown or crash, or a primary demoted to a standby
/// that turns writes away) fails the call in progress as `.connectionLost`. Inside a
/// transaction, every later statement of it fails too, until the store ends it (the server
/// rolled it back, or, past its COMMIT, the store looks the outcome up); the store then
/// connects again through the URL (`ServerFailover`), to whichever server is primary now.
final class PostgresStoreDatabase: StoreDatabase, StatementPipelining, BulkRowStaging, GeneratedKeyReservation, CommitWatching, HistoryAnnouncing, ServerFailover, ReplicaReading, OwnInsertRecording,
    VersionedSearchPath
{
    private(set) var connection: PostgresConnection
    /// The URL connected to, for reconnecting (never shown: `label` is its redacted form).
    private let url: String
    /// A transaction is open, as the store sees it.
    var inTransaction = false
    /// The open transaction is a write transaction (on the primary).
    private var writing = false
    /// The open transaction is a read on a standby (`ReplicaReading`).
    var readingOnReplica = false
    /// The standbys reads go to, when `PostgresSettings.readURL` names them.
    let replicas: ReplicaReads?
    /// How fresh the next reads must be (the store sets it around a call).
    var readSource: ReadSource = .ownWrites
    /// Reads go to the standbys only once the store is open: opening reads what its
    /// migrations just wrote.
    var replicaReadsEnabled = false
    /// The connection was lost; the next statement outside a transaction connects again.
    private var lost = false
    let dialect: any SQLDialect = PostgresDialect()
    /// Each table the change triggers record, with its columns and their types, as they were
    /// installed; and the statement that reads the transaction's images back.
    var recordedColumns: [String: [(name: String, type: String)]] = [:]
    var drainStatement: String?
    /// Where each statement's images go once read (the history recorder), while recording.
    var imageSink: ((String, RowImage) -> Void)?
    /// Whether a statement since the images were last read may have written some.
    var undrainedImages = false
    /// The tables whose insert trigger leaves the store's own rows to it (`OwnInsertRecording`).
    var ownInserts: Set<String> = []
    var ownInsertTables: Set<String> { ownInserts }
    /// The table the statements sent now insert the store's own row into, and the implicit
    /// keys of the rows of it they updated instead (their images read).
    private var ownInsert: (table: String, updated: Set<Int64>)?
    /// Whether history tokens are ordered by transaction id (`prepareHistoryOrdering`), so
    /// writers need no lock.
    var historyTokensOrdered = false

    /// Where the listener connects (`PostgresSettings.directURL`, else the store's URL).
    let listenURL: String
    /// Behind a transaction pooler: no session state (statements unnamed, nothing `SET`).
    let transactionPooler: Bool

    /// Connects, with the session in UTC so dates come back as `...Z` (behind a pooler, the
    /// server's own time zone: `StoredDate` reads any offset).
    init(url: String, settings: PostgresSettings = PostgresSettings()) throws(DatabaseFailure) {
        let url = ConnectionURL.requiringPrimary(url)
        self.listenURL = ConnectionURL.requiringPrimary(settings.directURL ?? url)
        self.url = url
        let wait = settings.replicaWait.components
        replicas = settings.readURL.map { ReplicaReads(url: $0, wait: Double(wait.seconds) + Double(wait.attoseconds) / 1e18) }
        transactionPooler = settings.transactionPooler
        failoverTimeout = settings.failoverTimeout
        connection = try Self.connect(url, sessionSettings: !settings.transactionPooler)
    }

    /// A link that stops answering fails the call in progress after about this long, instead
    /// of the system's TCP timeout (a quarter of an hour): long enough for a slow network, short
    /// enough that an app notices a partition.
    static let networkTimeout: Double = 10

    private static func connect(_ url: String, sessionSettings: Bool) throws(DatabaseFailure) -> PostgresConnection {
        do {
            let connection = try PostgresConnection(url, applicationName: "schemagen store", networkTimeout: networkTimeout)
            if sessionSettings { try connection.execute("SET TIME ZONE 'UTC'") }
            return connection
        } catch {
            throw error.failure(database: ConnectionURL.redacted(url))
        }
    }

    /// A new session in place of a lost one, with what the old one set up (the change
    /// triggers' session table).
    func reconnect() throws(DatabaseFailure) {
        connection = try Self.connect(url, sessionSettings: !transactionPooler)
        connection.preparesStatements = !transactionPooler
        lost = false
        if let searchPath { try wrap { () throws(PostgresError) in try connection.execute(searchPath) } }
    }

    // MARK: Version schemas (online migrations)

    /// The schema of views that serves this code's version (`todo_v4`), when its migrations are
    /// online: set by `Store(url:)` before opening, used once migrations ran.
    var versionSchema: String?
    /// The schema the tables are in (the session's current schema before the switch).
    private(set) var tableSchema: String?
    /// Per table (as the code names it), the view's mapping onto the table while a migration is
    /// expanded and renames: the table's name and the columns named otherwise.
    private(set) var viewMappings: [String: ViewMapping] = [:]
    /// The `SET search_path` this session runs, again after a reconnect (and on the standby's).
    private(set) var searchPath: String?

    /// Reads the version schema's view mappings (the tables its views read, under which names),
    /// so the change triggers go on the tables. No-op when the schema is not served.
    func readViewMappings() throws(DatabaseFailure) {
        guard let versionSchema else { return }
        guard case .text(let current)? = try rows("SELECT current_schema()::text", []).first?.first else { return }
        tableSchema = current
        let rows = try rows(
            "SELECT c.relname::text, obj_description(c.oid, 'pg_class') FROM pg_class c WHERE c.relnamespace = to_regnamespace($1) AND c.relkind = 'v'",
            [.text(dialect.quote(versionSchema))])
        guard !rows.isEmpty else {
            self.versionSchema = nil
            return
        }
        for row in rows {
            guard case .text(let view) = row[0], case .text(let comment) = row[1], let mapping = ViewMapping(comment: comment) else { continue }
            viewMappings[view] = mapping
        }
    }

    /// Reads and writes through the version's views from now on (`search_path`), the tables'
    /// schema second, for the store's own tables.
    func switchToVersionSchema() throws(DatabaseFailure) {
        guard let versionSchema, let tableSchema, !transactionPooler else { return }
        // A search path skips a schema that does not exist: the code would read the tables
        // under their current names, silently.
        let found = try rows("SELECT to_regnamespace($1) IS NOT NULL", [.text(dialect.quote(versionSchema))])
        guard found.first?.first == .integer(1) else {
            throw DatabaseFailure(
                database: label,
                message:
                    "the schema \(versionSchema), through which this code's version reads and writes, does not exist: the migration that serves it has not been expanded here (run `migrate up`), or it was rolled back",
                code: nil, kind: .statement)
        }
        let statement = "SET search_path TO \(dialect.quote(versionSchema)), \(dialect.quote(tableSchema))"
        try run(statement)
        searchPath = statement
    }

    /// Runs `script` with the tables' schema alone on the search path (a table created now
    /// belongs there, not among the views), then sets the version's path again.
    func executeInTableSchema(_ script: SQL) throws(DatabaseFailure) {
        guard let searchPath, let tableSchema else { return try execute(script) }
        try run("SET search_path TO \(dialect.quote(tableSchema))")
        do {
            try execute(script)
        } catch {
            try? run(searchPath)
            throw error
        }
        try run(searchPath)
    }

    /// A relation by name, for `to_regclass`: in the version's schema of views first (once
    /// read; before the session switches to it), then where the search path finds it.
    func relation(_ table: String) -> [StoredValue] {
        let name = dialect.quote(table)
        return [.text(versionSchema.map { dialect.quote($0) + "." + name } ?? name), .text(name)]
    }

    /// The table a change trigger fires on for a table the code names (the same name unless an
    /// expanded migration renames it), qualified once the session reads through views.
    func physicalTable(_ table: String) -> String {
        let name = viewMappings[table]?.table ?? table
        return tableSchema.map { dialect.quote($0) + "." + dialect.quote(name) } ?? dialect.quote(name)
    }

    /// The code's table for a table a change trigger names (`TG_TABLE_NAME`): the view that
    /// reads it, or the same name.
    func codeTable(forPhysical table: String) -> String {
        viewMappings.first { $0.value.table == table }?.key ?? table
    }

    /// A recorded row image as the code's columns name them: each renamed column read from the
    /// table's column, or (after contract renamed the table's column) its own.
    func mappedImage(_ image: String, table: String) -> String {
        guard let mapping = viewMappings[table], !mapping.columns.isEmpty else { return image }
        let pairs = mapping.columns.sorted { $0.key < $1.key }.map { view, column in
            "\(dialect.literal(view)), coalesce(\(image) -> \(dialect.literal(column)), \(image) -> \(dialect.literal(view)))"
        }
        return "(\(image) || jsonb_build_object(\(pairs.joined(separator: ", "))))"
    }

    // A server has no file beside which to keep values (no `FileDatabase`: they go in a side
    // table), and a result arrives whole in libpq's default mode (no `SteppedRows`).

    /// The URL without its password; for a multi-host URL, also the server it reached.
    var label: String {
        let server = connection.server
        return url.contains(",") && !server.isEmpty ? "\(server) (of \(connection.label))" : connection.label
    }

    // MARK: Failover

    var connectedServer: String { connection.server.isEmpty ? connection.label : connection.server }
    /// `PostgresSettings.failoverTimeout`.
    let failoverTimeout: Duration

    /// The table of commit ids a lost server leaves to look up (logged, so it survives a
    /// failover with the transactions that wrote it).
    static let commitsTable = "schemagen_commits"
    /// Commit ids are kept this long, far past any failover; older ones go now and then.
    static let commitIdsKept = "1 hour"
    private var commitsRecorded = 0
    /// The open transaction's commit id, not written yet.
    private var pendingCommitID: String?

    func prepareCommitRecords() throws(DatabaseFailure) {
        // Created once, under the lock the change triggers take, so two stores opening at once
        // do not both create it.
        try run("BEGIN")
        do throws(DatabaseFailure) {
            _ = try rows("SELECT pg_advisory_xact_lock($1)", [.integer(Self.triggerLock)])
            try run("CREATE TABLE IF NOT EXISTS \(dialect.quote(Self.commitsTable)) (id text PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT now())")
            try run("COMMIT")
        } catch {
            try? run("ROLLBACK")
            throw error
        }
    }

    /// Kept until the commit notification goes out, which writes it in the same round trip
    /// (`announceCommit`); written before COMMIT if it has not.
    func recordCommit(_ id: String) throws(DatabaseFailure) {
        pendingCommitID = id
        commitsRecorded += 1
        if commitsRecorded % 1000 == 0 {
            _ = try rows("DELETE FROM \(dialect.quote(Self.commitsTable)) WHERE committed_at < now() - interval '\(Self.commitIdsKept)'", [])
        }
    }

    /// Writes the pending commit id, if the notification did not.
    private func writePendingCommitID() throws(DatabaseFailure) {
        guard let id = pendingCommitID else { return }
        pendingCommitID = nil
        _ = try rows("INSERT INTO \(dialect.quote(Self.commitsTable)) (id) VALUES ($1)", [.text(id)])
    }

    func wasCommitted(_ id: String) throws(DatabaseFailure) -> Bool {
        try integer("SELECT count(*) FROM \(dialect.quote(Self.commitsTable)) WHERE id = $1", values: [.text(id)]) == 1
    }

    private func wrap<T>(_ body: () throws(PostgresError) -> T) throws(DatabaseFailure) -> T {
        if lost {
            guard !inTransaction else {
                throw DatabaseFailure(
                    database: label, message: "the connection to \(label) was lost: the server rolled the transaction back, and nothing of it was written",
                    code: nil, kind: .connectionLost)
            }
            try reconnect()
        }
        do {
            return try body()
        } catch {
            // A server that cannot go on (gone, shutting down, or demoted and turning writes
            // away): this session is done, and the store waits for the new primary.
            guard error.meansServerUnavailable else { throw error.failure(database: label) }
            lost = true
            var failure = error.failure(database: label)
            failure.kind = .connectionLost
            throw failure
        }
    }

    // The store hands over `SQL` or statements rendered from it; the adapter's own statements,
    // in PostgreSQL's words, go to the connection as they are (`run`, `rows`, `integer`).

    func execute(_ script: SQL) throws(DatabaseFailure) {
        let text = script.rendered(for: dialect).text
        // A savepoint's own commands write nothing; rolling back to one may bring back images
        // read inside it.
        if !text.hasPrefix("SAVEPOINT"), !text.hasPrefix("RELEASE") { undrainedImages = true }
        try run(text)
    }

    func query(_ statement: RenderedSQL, _ arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> [[StoredValue]] {
        guard streamsImages else { return try rows(statement.text, arguments) }
        return try withImagesRead([(statement.text, arguments)]).first ?? []
    }

    func run(_ script: String) throws(DatabaseFailure) {
        try wrap { () throws(PostgresError) in try connection.execute(script) }
    }

    func rows(_ text: String, _ arguments: ArraySlice<StoredValue> = []) throws(DatabaseFailure) -> [[StoredValue]] {
        if let replica = try replicaForRead() {
            return try onReplica(replica) { () throws(PostgresError) in try replica.query(text, Array(arguments)) }
        }
        return try wrap { () throws(PostgresError) in try connection.query(text, Array(arguments)) }
    }

    func integer(_ text: String, values arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> Int64? {
        if case .integer(let value)? = try rows(text, arguments).first?.first { return value }
        return nil
    }

    /// COPY is the server's fastest way in: a temporary table (`ON COMMIT DROP`: it lives in this
    /// transaction alone, so it works through a transaction pooler too) filled by COPY.
    func stageRows(_ rows: [ArraySlice<StoredValue>], columns: [String], like table: String) throws(DatabaseFailure) -> String {
        let stage = SQLIdentifiers.fitted("schemagen_stage_\(table)", to: dialect.capabilities.maximumIdentifierBytes)
        try execute(
            "CREATE TEMP TABLE IF NOT EXISTS \(identifier: stage) ON COMMIT DROP AS SELECT \(SQL.identifiers(columns)) FROM \(identifier: table) WITH NO DATA; TRUNCATE \(identifier: stage)")
        _ = try wrap { () throws(PostgresError) in try connection.copy(into: stage, columns: columns, rows: rows) }
        return stage
    }

    /// A round trip per statement is what bulk writes would wait on: they pipeline.
    func pipeline(_ statements: [(statement: RenderedSQL, arguments: ArraySlice<StoredValue>)]) throws(DatabaseFailure) -> [[[StoredValue]]] {
        if streamsImages { return try withImagesRead(statements.map { ($0.statement.text, $0.arguments) }) }
        return try wrap { () throws(PostgresError) in try connection.pipeline(statements.map { ($0.statement.text, $0.arguments) }) }
    }

    func firstInteger(_ statement: RenderedSQL, values arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> Int64? {
        if case .integer(let value)? = try query(statement, arguments).first?.first { return value }
        return nil
    }

    /// Whether the store's statements read their images back as they go (`streamChangedRows`).
    private var streamsImages: Bool { imageSink != nil && drainStatement != nil && inTransaction && writing }

    /// `statements`, with the read of the images they write sent behind them in the same round
    /// trip; the images go to the sink, the statements' rows are returned.
    private func withImagesRead(_ statements: [(String, ArraySlice<StoredValue>)]) throws(DatabaseFailure) -> [[[StoredValue]]] {
        guard let drainStatement, let imageSink else { return [] }
        undrainedImages = true
        if let own = ownInsert { return try withOwnInsert(statements, into: own.table, drainStatement: drainStatement, imageSink: imageSink) }
        let sent: [(sql: String, arguments: ArraySlice<StoredValue>)] = statements + [(drainStatement, ArraySlice<StoredValue>())]
        var results = try wrap { () throws(PostgresError) in try connection.pipeline(sent, rowCountOf: statements.count - 1) }
        guard results.count == statements.count + 1 else { return results }
        try handImages(results.removeLast(), to: imageSink)
        undrainedImages = false
        return results
    }

    /// The store's own insert: `table`'s insert trigger passes its row by for these statements
    /// alone, and behind them, in the same round trip, the setting is put back and the flag
    /// the trigger sets when it writes an image is read. The images are read (a second round
    /// trip) only where one was written: a conflict that updated instead, a cascade, another
    /// trigger's write. Reading them costs a statement whose projection types every column of
    /// every table; the flag, almost nothing.
    private func withOwnInsert(
        _ statements: [(String, ArraySlice<StoredValue>)], into table: String, drainStatement: String, imageSink: (String, RowImage) -> Void
    ) throws(DatabaseFailure) -> [[[StoredValue]]] {
        var sent: [(sql: String, arguments: ArraySlice<StoredValue>)] = [("SET LOCAL \(Self.ownInsertSetting) = \(dialect.literal(table))", [])]
        sent += statements.map { (sql: $0.0, arguments: $0.1) }
        sent.append(("SELECT set_config(\(dialect.literal(Self.ownInsertSetting)), '', true), current_setting(\(dialect.literal(Self.imagesSetting)), true)", []))
        var results = try wrap { () throws(PostgresError) in try connection.pipeline(sent, rowCountOf: statements.count) }
        guard results.count == sent.count else { return results }
        let flag = results.removeLast().first
        if flag?.count == 2, flag?[1] == .text("on") {
            // Read, then unflagged: the next own insert reads only what comes after.
            let drained = try wrap { () throws(PostgresError) in
                try connection.pipeline([(drainStatement, []), ("SELECT set_config(\(dialect.literal(Self.imagesSetting)), '', true)", [])])
            }
            try handImages(drained.first ?? []) { recorded, image in
                if recorded == table, image.operation == .update { ownInsert?.updated.insert(image.newRowID) }
                imageSink(recorded, image)
            }
        }
        undrainedImages = false
        return Array(results.dropFirst())
    }

    /// `OwnInsertRecording`: `body`'s statements run with `table`'s row left to the store.
    func insertingOwnRow<T>(into table: String, _ body: () throws(DatabaseFailure) -> T) throws(DatabaseFailure) -> (result: T, updatedRowIDs: Set<Int64>) {
        guard streamsImages, ownInserts.contains(table) else { return (try body(), []) }
        ownInsert = (table, [])
        defer { ownInsert = nil }
        let result = try body()
        return (result, ownInsert?.updated ?? [])
    }

    /// A result read whole, or, for `forEach` (`ownStatement`), through a cursor a batch at a
    /// time, so memory stays flat however many rows match.
    func forEachRow(_ statement: RenderedSQL, _ arguments: [StoredValue], ownStatement: Bool, _ body: (inout [StoredValue]) throws -> Void) throws {
        if ownStatement { return try streamThroughCursor(statement, arguments, body) }
        for var row in try query(statement, arguments[...]) { try body(&row) }
    }

    /// Rows a cursor hands over per round trip.
    static let cursorBatch = 1_000
    /// Cursors open now: a `forEach` inside another's body needs a name of its own.
    private var openCursors = 0

    /// `DECLARE ... CURSOR`, then `FETCH` a batch at a time. A cursor lives in a transaction:
    /// outside one, a read-only one is opened for it (as `read { }` would).
    private func streamThroughCursor(_ statement: RenderedSQL, _ arguments: [StoredValue], _ body: (inout [StoredValue]) throws -> Void) throws {
        let ownTransaction = !inTransaction
        if ownTransaction { try beginReadTransaction() }
        // Names by depth: the same statements each time, so they are prepared once.
        let cursor = "schemagen_cursor_\(openCursors)"
        openCursors += 1
        defer { openCursors -= 1 }
        do {
            _ = try rows("DECLARE \(cursor) NO SCROLL CURSOR FOR \(statement.text)", arguments[...])
            while true {
                let batch = try rows("FETCH \(Self.cursorBatch) FROM \(cursor)")
                for var row in batch { try body(&row) }
                if batch.count < Self.cursorBatch { break }
            }
            try run("CLOSE \(cursor)")
        } catch {
            // Where a failed statement aborted the transaction, CLOSE fails too; the store then
            // rolls the transaction back.
            if ownTransaction { try? rollbackTransaction() } else { _ = try? run("CLOSE \(cursor)") }
            throw error
        }
        if ownTransaction { try commitTransaction() }
    }

    /// Single writes run at READ COMMITTED: each statement is atomic on its own (an upsert is
    /// one statement). A `transaction { }` body, which may read what it writes, runs
    /// SERIALIZABLE: as if alone, or failed with a serialization failure (`.busy`) that the
    /// store retries. With history recorded, the transaction asks the change triggers for its
    /// rows, in the same round trip (a setting of this transaction only: no session state).
    func beginWriteTransaction(serializable: Bool) throws(DatabaseFailure) {
        let begin = serializable ? "BEGIN ISOLATION LEVEL SERIALIZABLE" : "BEGIN"
        // SET LOCAL, not set_config(): a command is not planned, a SELECT is, every time.
        try run(recordedColumns.isEmpty ? begin : "\(begin); SET LOCAL \(Self.recordingSetting) = on")
        undrainedImages = false
        inTransaction = true
        writing = true
    }

    func beginReadTransaction() throws(DatabaseFailure) {
        if let replica = try replicaForRead() {
            try onReplica(replica) { () throws(PostgresError) in try replica.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") }
            inTransaction = true
            readingOnReplica = true
            return
        }
        try run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        inTransaction = true
    }

    /// A COMMIT with no transaction open would succeed (with a warning) and write nothing: the
    /// store is told instead. A COMMIT that fails leaves no transaction open behind it.
    func commitTransaction() throws(DatabaseFailure) {
        guard inTransaction else {
            throw DatabaseFailure(database: label, message: "no transaction is open to commit: it was rolled back", code: nil, kind: .statement)
        }
        if readingOnReplica { return try endReplicaTransaction("COMMIT") }
        try writePendingCommitID()
        let wrote = writing
        defer {
            inTransaction = false
            writing = false
        }
        do {
            try run("COMMIT")
        } catch {
            if !lost, connection.isInTransaction { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
        // A COMMIT of a failed transaction answers ROLLBACK, without an error.
        if connection.lastCommandTag == "ROLLBACK" {
            throw DatabaseFailure(database: label, message: "the transaction had failed, so COMMIT rolled it back: nothing of it was written", code: nil, kind: .statement)
        }
        if wrote { noteCommit() }
    }

    func rollbackTransaction() throws(DatabaseFailure) {
        if readingOnReplica { return try endReplicaTransaction("ROLLBACK") }
        pendingCommitID = nil
        defer {
            inTransaction = false
            writing = false
        }
        // A lost connection's transaction was rolled back by the server.
        if lost { return }
        try run("ROLLBACK")
    }

    var isInTransaction: Bool { inTransaction }

    var changedRowCount: Int { connection.changedRowCount }

    func reserveGeneratedKey(of table: String) throws(DatabaseFailure) -> Int64? {
        try integer("SELECT nextval(pg_get_serial_sequence(format('%I', $1::text), 'id'))", values: [.text(table)])
    }

    func highestGeneratedKey(of table: String) throws(DatabaseFailure) -> Int64 {
        let sql = """
            SELECT coalesce(max(last_value), 0) FROM pg_sequences \
            WHERE format('%I.%I', schemaname, sequencename) = pg_get_serial_sequence(format('%I', $1::text), 'id')
            """
        return try integer(sql, values: [.text(table)]) ?? 0
    }

    func tableExists(_ table: String) throws(DatabaseFailure) -> Bool {
        // As the search path finds it: a version's view (online migrations) counts, as does the
        // store's own table in the tables' schema behind it.
        try integer("SELECT count(*) FROM pg_class WHERE oid = coalesce(to_regclass($1), to_regclass($2)) AND relkind IN ('r', 'p', 'v')", values: relation(table)[...]) == 1
    }

    func columns(of table: String) throws(DatabaseFailure) -> [(name: String, type: String)] {
        // The relation the search path finds first: a version's view before the table behind it.
        let sql = """
            SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 AND table_schema = \
            (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = coalesce(to_regclass($2), to_regclass($3))) ORDER BY ordinal_position
            """
        return try rows(sql, [.text(table)] + relation(table)).map { row in
            guard case .text(let name) = row[0] else { return ("", "") }
            if case .text(let type) = row[1] { return (name, type) }
            return (name, "")
        }
    }

    /// Migrations ran unprepared (each runs once); the store's statements run many times.
    func prepareForUse() throws(DatabaseFailure) {
        connection.preparesStatements = !transactionPooler
        try readViewMappings()
    }

    /// The channel every store of the database notifies at commit and listens on.
    static let commitChannel = "schemagen_commits"

    /// Inside the transaction: the notification is delivered when it commits, and not at all
    /// if it rolls back. (Sending BEGIN with the first statement and the notification with
    /// COMMIT, two round trips fewer per write, measured 4% more single-row writes for one
    /// client and none for eight: a commit's flush to disk is what they wait on, so it was
    /// not kept.)
    func announceCommit() throws(DatabaseFailure) {
        guard let id = pendingCommitID else {
            _ = try rows("SELECT pg_notify($1, '')", [.text(Self.commitChannel)])
            return
        }
        // The commit id in the same round trip: a write of failover safety costs no wait.
        pendingCommitID = nil
        _ = try rows(
            "WITH recorded AS (INSERT INTO \(dialect.quote(Self.commitsTable)) (id) VALUES ($2)) SELECT pg_notify($1, '')", [.text(Self.commitChannel), .text(id)])
    }

    /// The history row, the commit id and the notification in one statement: a write with
    /// history waits on one round trip for them, as one without waits on one for the last two.
    func announceCommit(insertingHistory insert: RenderedSQL, _ arguments: [StoredValue]) throws(DatabaseFailure) -> Int64? {
        var values = arguments
        values.append(.text(Self.commitChannel))
        var statement = "WITH history AS (\(insert.text) RETURNING token)"
        if let id = pendingCommitID {
            pendingCommitID = nil
            values.append(.text(id))
            statement += ", recorded AS (INSERT INTO \(dialect.quote(Self.commitsTable)) (id) VALUES ($\(values.count)))"
        }
        statement += " SELECT (SELECT token FROM history), pg_notify($\(arguments.count + 1), '')"
        guard case .integer(let token)? = try rows(statement, values[...]).first?.first else { return nil }
        return token
    }

    /// A listener of its own, on its own connection and thread, reconnecting when lost.
    func watchCommits(_ onCommit: @escaping @Sendable () -> Void) -> (any CommitWatch)? {
        PostgresCommitWatch(PostgresListener(target: listenURL, channel: Self.commitChannel, onNotify: onCommit))
    }
}

/// The store's watch over its listener.
final class PostgresCommitWatch: CommitWatch {
    let listener: PostgresListener

    init(_ listener: PostgresListener) { self.listener = listener }

    /// Notifications wake the store each time; nothing to rearm.
    func rearm() {}
    func stop() { listener.stop() }
}
