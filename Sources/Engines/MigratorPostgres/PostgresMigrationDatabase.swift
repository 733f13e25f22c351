import Foundation
import MigrationFiles
import MigratorCore
import PostgresKit
import SQLDialects
import SchemaMetadata

/// A PostgreSQL database: DDL is transactional, and concurrent migrators are kept apart by a
/// session advisory lock whose key is derived from the schema's name (`advisoryKey`). The
/// history may live in a schema of its own.
public final class PostgresMigrationDatabase: MigrationDatabase, MigrationLocking, MigrationNamespaces, OnlineMigrating, ColumnRetyping, ReplicationMonitoring, ServerWarnings {
    /// The connection migrations run on (and hold the advisory lock with).
    public let connection: PostgresConnection
    /// PostgreSQL's dialect.
    public let dialect: any SQLDialect = PostgresDialect()

    /// A migration database on an open connection; `DatabaseOpener` sets its session up.
    ///
    ///     let database = PostgresMigrationDatabase(try PostgresConnection("postgres://app@db.internal/app"))
    public init(_ connection: PostgresConnection) {
        self.connection = connection
    }

    /// The server's URL, its password masked.
    public var label: String { connection.label }

    private func wrap<T>(_ body: () throws(PostgresError) -> T) throws(MigratorError) -> T {
        do {
            return try body()
        } catch {
            throw .database(Self.failure(error, database: connection.label))
        }
    }

    /// PostgreSQL's error in the migrator's terms.
    public static func failure(_ error: PostgresError, database: String) -> DatabaseFailure {
        error.failure(database: database)
    }

    /// Runs SQL (several statements allowed).
    public func execute(_ sql: String) throws(MigratorError) { try wrap { () throws(PostgresError) in try connection.execute(sql) } }

    /// Runs a query with `$1`-style parameters.
    public func query(_ sql: String, _ arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]] {
        try wrap { () throws(PostgresError) in try connection.query(sql, arguments) }
    }

    /// A statement built by construction, rendered with `$1`-style parameters.
    public func query(_ statement: SQL) throws(MigratorError) -> [[StoredValue]] {
        let (text, arguments) = statement.rendered(for: dialect)
        return try query(text, arguments)
    }

    /// SQL without parameters.
    public func execute(_ sql: SQL) throws(MigratorError) { try execute(sql.rendered(for: dialect).text) }

    /// A migration file's statement with its own parameters.
    public func query(_ statement: MigrationScriptText, arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]] {
        try query(statement.text, arguments)
    }

    /// The statements of a script, split as PostgreSQL splits them (dollar quotes whole).
    public func statementCount(_ sql: String) -> Int { PostgresScript.statements(in: sql).count }

    /// The statements of a migration file's script.
    public func statementCount(_ script: MigrationScriptText) -> Int { statementCount(script.text) }

    /// Runs a migration file's script statement by statement.
    public func runScript(_ script: MigrationScriptText, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        try runScript(script.text, shouldStop: shouldStop, willRun: willRun)
    }

    /// Runs a script statement by statement, telling lock and statement timeouts and a lost
    /// connection apart.
    public func runScript(_ sql: String, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        do {
            try connection.executeScript(sql, shouldStop: shouldStop) { position in willRun(position.index, position.line) }
        } catch {
            let reason: StatementFailure.Reason? =
                if error.error.connectionLost { .connectionLost } else if error.error.sqlState == SQLState.lockNotAvailable {
                    .lockTimeout
                } else if error.error.sqlState == SQLState.deadlockDetected {
                    .deadlock
                } else if error.error.sqlState == SQLState.queryCanceled, !shouldStop() { .statementTimeout } else { nil }
            throw StatementFailure(index: error.position.index, line: error.position.line, message: error.error.description, reason: reason)
        }
    }

    /// `BEGIN`: the advisory lock, taken before, keeps other migrators out.
    public func beginTransaction(timeout: Double) throws(MigratorError) { try execute("BEGIN;") }

    /// Commits.
    public func commit() throws(MigratorError) { try execute("COMMIT;") }
    /// Rolls back.
    public func rollback() { try? connection.execute("ROLLBACK;") }

    /// `"schema"."table"`, or the bare quoted name for the search path.
    public func qualifiedName(_ table: String, schema: String?) -> SQL {
        schema.map { "\(identifier: $0).\(identifier: table)" } ?? .identifier(table)
    }

    /// The qualified name as `to_regclass` reads it.
    private func regclassName(_ table: String, schema: String?) -> StoredValue { .text(qualifiedName(table, schema: schema).rendered(for: dialect).text) }

    /// `to_regclass` of the qualified name.
    public func tableExists(_ name: String, schema: String?) throws(MigratorError) -> Bool {
        try query("SELECT to_regclass($1) IS NOT NULL", [regclassName(name, schema: schema)]) == [[.integer(1)]]
    }

    /// The table's live columns from `pg_attribute`.
    public func columns(of table: String, schema: String?) throws(MigratorError) -> Set<String>? {
        guard try tableExists(table, schema: schema) else { return nil }
        let rows = try query(
            "SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
            [regclassName(table, schema: schema)])
        return Set(rows.compactMap { if case .text(let name) = $0.first { name } else { nil } })
    }

    /// `to_char` of the timestamp in UTC, ISO 8601 with milliseconds.
    public func timestampText(_ column: String) -> SQL {
        // The cast also reads a history table of an earlier release, whose timestamps were text.
        "to_char(\(identifier: column)::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    }

    /// The session's role.
    public func currentUser() -> String {
        if case .text(let name)? = (try? query("SELECT current_user::text", []))?.first?.first { return name }
        return "unknown"
    }

    /// libpq's cancel request, sent on a connection of its own.
    public var canceller: @Sendable () -> Void {
        let canceller = connection.canceller
        return { canceller?.send() }
    }

    // MARK: MigrationLocking

    /// The advisory lock key of a schema: the first 8 bytes of SHA-256("schemagen:" + schema),
    /// as a signed 64-bit integer. Documented in docs/postgres.md.
    public static func advisoryKey(schema: String) -> Int64 {
        let hex = SHA256.hex("schemagen:" + schema)
        return Int64(bitPattern: UInt64(hex.prefix(16), radix: 16) ?? 0)
    }

    /// Tries the schema's advisory lock every 50 ms until `timeout`.
    public func lock(schema: String, timeout: Double, cancelled: () -> Bool) throws(MigratorError) {
        let key = Self.advisoryKey(schema: schema)
        let deadline = Date().addingTimeInterval(timeout)
        // Tried, not waited for, so the wait is bounded, a dead connection is noticed and an
        // interrupt leaves no backend queued for the lock.
        while try query("SELECT pg_try_advisory_lock($1)", [.integer(key)]) != [[.integer(1)]] {
            if cancelled() { throw .interrupted(during: "the wait for the migrator lock of \(schema) (another migrator held it)") }
            guard Date() < deadline else { throw .locked(seconds: timeout) }
            usleep(50_000)
        }
    }

    /// Releases the schema's advisory lock.
    public func unlock(schema: String) {
        _ = try? query("SELECT pg_advisory_unlock($1)", [.integer(Self.advisoryKey(schema: schema))])
    }

    /// The backend holding the session advisory lock of `schema`: bigint keys are kept as two
    /// 32-bit halves in `pg_locks` (classid the high half, objid the low one, objsubid 1).
    /// `pg_locks` shows the whole server, and advisory locks belong to a database: a migrator of
    /// the same schema in another database holds a lock with the same key.
    public func lockHolder(schema: String) throws(MigratorError) -> Int? {
        let key = UInt64(bitPattern: Self.advisoryKey(schema: schema))
        let rows = try query(
            """
            SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND classid::bigint = $1 AND objid::bigint = $2 \
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND pid <> pg_backend_pid()
            """,
            [.integer(Int64(key >> 32)), .integer(Int64(key & 0xFFFF_FFFF))])
        if case .integer(let pid)? = rows.first?.first { return Int(pid) }
        return nil
    }

    // MARK: MigrationNamespaces

    /// `CREATE SCHEMA IF NOT EXISTS`, asked only when the schema is missing (no privilege needed
    /// otherwise).
    public func createSchemaIfMissing(_ schema: String) throws(MigratorError) {
        guard try query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [.text(schema)]).isEmpty else { return }
        try execute("CREATE SCHEMA IF NOT EXISTS \(dialect.quote(schema));")
    }

    // MARK: ColumnRetyping

    /// The column's `data_type` in `information_schema.columns`.
    public func declaredType(of column: String, in table: String, schema: String) throws(MigratorError) -> String? {
        let rows = try query(
            "SELECT data_type::text FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = $3",
            [.text(schema), .text(table), .text(column)])
        if case .text(let type)? = rows.first?.first { return type }
        return nil
    }

    /// `ALTER COLUMN ... TYPE ... USING`, each value cast to the new type.
    public func retype(_ column: String, of table: String, schema: String, to type: String) throws(MigratorError) {
        // The type is the dialect's own word for a storage kind.
        let type = SQL(verbatim: type)
        try execute("ALTER TABLE \(qualifiedName(table, schema: schema)) ALTER COLUMN \(identifier: column) TYPE \(type) USING \(identifier: column)::\(type);" as SQL)
    }

    // MARK: OnlineMigrating

    /// `SET [LOCAL] lock_timeout`.
    /// 0 turns the timeout off.
    public func setLockTimeout(milliseconds: Int, local: Bool) throws(MigratorError) {
        try execute("SET \(local ? "LOCAL " : "")lock_timeout = '\(max(0, milliseconds))ms';")
    }

    /// `SET search_path`.
    public func setSearchPath(_ schema: String) throws(MigratorError) {
        try execute("SET search_path TO \(dialect.quote(schema));")
    }

    /// `SET LOCAL schemagen.backfill = 'on'`, read by the generated sync triggers.
    public func markBackfill() throws(MigratorError) {
        try execute("SET LOCAL schemagen.backfill = 'on';")
    }

    /// `schemagen.drop_uncarried`, for the session: what the copy of a table cannot carry is
    /// dropped with a warning instead of stopping the section.
    public func dropUncarried(_ allowed: Bool) throws(MigratorError) {
        try execute("SET schemagen.drop_uncarried = '\(allowed ? "on" : "off")';")
    }

    /// The server's warnings since the last call.
    public func takeWarnings() -> [String] { connection.takeWarnings() }
    /// How a session is described: `pid 4242 ('psql', idle in transaction, transaction open 12.3 s)`.
    static let sessionDescription = """
        'pid ' || a.pid::text || ' (' || quote_literal(coalesce(nullif(a.application_name, ''), 'no application_name')) || ', ' \
        || coalesce(a.state, 'unknown state') || coalesce(', transaction open ' || round(extract(epoch FROM now() - a.xact_start)::numeric, 1)::text || ' s', '') || ')'
        """

    /// Sessions with a granted lock on the named tables or views, from `pg_locks`.
    public func sessionsHoldingLocks(on relations: [String]) -> [String] {
        guard !relations.isEmpty else { return [] }
        let names = relations.map(dialect.literal).joined(separator: ", ")
        return described(
            """
            SELECT \(Self.sessionDescription), min(a.xact_start) FROM pg_locks l
            JOIN pg_class c ON c.oid = l.relation JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.granted AND l.pid <> pg_backend_pid() AND c.relname IN (\(names))
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            GROUP BY 1 ORDER BY 2 NULLS LAST LIMIT 5
            """, [])
    }

    /// Sessions of this database in a transaction, oldest first.
    public func sessionsInTransactions() -> [String] {
        described(
            """
            SELECT \(Self.sessionDescription) FROM pg_stat_activity a
            WHERE a.pid <> pg_backend_pid() AND a.datname = current_database() AND a.xact_start IS NOT NULL
                AND a.backend_type = 'client backend' ORDER BY a.xact_start LIMIT 5
            """, [])
    }

    /// The sessions whose transactions locked these rows: a locked row's `xmax` is the locker's
    /// transaction id (a multixact, for several lockers, names none).
    public func sessionsHoldingRows(of table: String, key: String, type: String, keys: [String]) -> [String] {
        guard !keys.isEmpty else { return [] }
        let list = keys.map { "\(dialect.literal($0))::\(type)" }.joined(separator: ", ")
        return described(
            """
            SELECT DISTINCT \(Self.sessionDescription) FROM \(dialect.quote(table)) t
            JOIN pg_stat_activity a ON a.backend_xid = t.xmax
            WHERE t.\(dialect.quote(key)) IN (\(list)) LIMIT 5
            """, [])
    }

    /// The planner's estimate (`pg_class.reltuples`); a table never analyzed has none (-1), and is
    /// counted when it is small enough (under 256 MB) for a count to be quick.
    public func estimatedRowCount(of table: String) -> Int? {
        let rows = try? query(
            "SELECT reltuples::bigint, pg_relation_size(oid) < 268435456 FROM pg_class WHERE oid = to_regclass($1)", [.text(dialect.quote(table))])
        guard let row = rows?.first, row.count == 2, case .integer(let estimate) = row[0] else { return nil }
        if estimate >= 0 { return Int(estimate) }
        guard row[1] == .integer(1), case .integer(let count)? = (try? query("SELECT count(*) FROM \(dialect.quote(table))", []))?.first?.first else { return nil }
        return Int(count)
    }

    /// The first column of each row, as text; nothing when the query fails (these only feed messages).
    private func described(_ sql: String, _ arguments: [StoredValue]) -> [String] {
        ((try? query(sql, arguments)) ?? []).compactMap { if case .text(let text)? = $0.first { text } else { nil } }
    }

    // MARK: ReplicationMonitoring

    /// The server the connection reached, `host:port`.
    public var server: String { connection.server }

    /// The primary's WAL position and its physical standbys (`pg_stat_replication` rows whose
    /// sender serves no database: logical subscribers are not standbys), positions in bytes.
    public func replicationSnapshot() throws(MigratorError) -> ReplicationSnapshot {
        let rows = try query(
            """
            SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, coalesce(nullif(r.application_name, ''), host(r.client_addr), r.pid::text), \
            r.state, pg_wal_lsn_diff(r.replay_lsn, '0/0')::bigint, extract(epoch FROM r.replay_lag)::float8 \
            FROM (SELECT 1) one LEFT JOIN pg_stat_replication r ON r.pid IN (SELECT pid FROM pg_stat_activity WHERE datname IS NULL) ORDER BY 2
            """, [])
        guard case .integer(let position)? = rows.first?.first else { return ReplicationSnapshot(position: 0, standbys: []) }
        let standbys = rows.compactMap { row -> ReplicationSnapshot.Standby? in
            guard row.count == 5, case .text(let name) = row[1] else { return nil }
            let state = if case .text(let state) = row[2] { state } else { "unknown" }
            let replayed: Int64? = if case .integer(let value) = row[3] { value } else { nil }
            let lag: Double? =
                switch row[4] {
                case .real(let value): value
                case .integer(let value): Double(value)
                default: nil
                }
            return ReplicationSnapshot.Standby(name: name, state: state, replayed: replayed, serverLag: lag)
        }
        return ReplicationSnapshot(position: position, standbys: standbys)
    }
}
