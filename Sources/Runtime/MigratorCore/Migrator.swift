import Foundation
import MigrationFiles
import SQLDialects
import SchemaMetadata

/// Brings a database to a schema's current version, and back: the library behind `migrate`,
/// for applications to call at start-up. It never prints; progress arrives as events. The
/// same history semantics on every engine (`MigrationDatabase`): one history per schema, each
/// migration committed with its history row. It imports no engine: the database comes from an
/// adapter (`SQLiteMigrationDatabase` in MigratorSQLite, `PostgresMigrationDatabase` in
/// MigratorPostgres), whose abilities it looks up once, here.
public final class Migrator {
    /// The database migrations are applied to.
    public let database: any MigrationDatabase
    /// The schema whose history this migrator keeps: one history per schema in a database.
    public let schema: String
    /// The schema's migrations, oldest first.
    public let scripts: [MigrationScript]

    /// The history table; several schemas share it, one row per applied migration.
    public static let historyTable = "schemagen_migrations"
    /// Migrations started and not finished: a row is written before a migration runs and
    /// removed when it is committed, so the next run can say that one was interrupted.
    public static let attemptsTable = "schemagen_migration_attempts"

    /// `historySchema` is the PostgreSQL schema the history tables live in (default `public`,
    /// whatever the search path says); SQLite has one namespace and ignores it. `cancellation`
    /// lets another thread stop the work (share one among migrators of one database).
    ///
    ///     let migrator = Migrator(database: SQLiteMigrationDatabase(try SQLiteConnection(path: "app.sqlite")),
    ///                             schema: "Flights", scripts: try MigrationScriptLoader.load(directory: "Migrations/Flights"))
    public init(
        database: any MigrationDatabase, schema: String, scripts: [MigrationScript], lockTimeoutSeconds: Double = 30,
        historySchema: String = Migrator.defaultHistorySchema, cancellation: MigrationCancellation? = nil
    ) {
        self.database = database
        self.schema = schema
        self.scripts = scripts.sorted { $0.version < $1.version }
        self.lockTimeout = lockTimeoutSeconds
        self.historySchema = historySchema
        self.cancellation = cancellation ?? MigrationCancellation(database: database)
        locker = database as? any MigrationLocking
        namespaces = database as? any MigrationNamespaces
        foreignKeys = database as? any ForeignKeySwitching
        rowCopies = database as? any RowCopyProgress
        carrying = database as? any RebuildCarrying
        warnings = database as? any ServerWarnings
        online = database as? any OnlineMigrating
        replication = database as? any ReplicationMonitoring
        retyping = database as? any ColumnRetyping
    }

    // The database's abilities, looked up once.
    let locker: (any MigrationLocking)?
    let namespaces: (any MigrationNamespaces)?
    let foreignKeys: (any ForeignKeySwitching)?
    let rowCopies: (any RowCopyProgress)?
    let carrying: (any RebuildCarrying)?
    let warnings: (any ServerWarnings)?
    /// Online migrations' lock timeouts, search path and backfill flag (PostgreSQL).
    let online: (any OnlineMigrating)?
    /// The primary's WAL position and its standbys' replay (PostgreSQL).
    let replication: (any ReplicationMonitoring)?
    /// A column's declared type read and changed (PostgreSQL).
    let retyping: (any ColumnRetyping)?

    /// Where PostgreSQL keeps the history tables unless told otherwise.
    public static let defaultHistorySchema = "public"

    let lockTimeout: Double
    /// The PostgreSQL schema the history tables live in (ignored on SQLite).
    public let historySchema: String
    /// Stops this migrator's work from another thread: `cancellation.cancel()`.
    public let cancellation: MigrationCancellation
    var dialect: any SQLDialect { database.dialect }
    // The tables as SQL fragments (their names quoted by the adapter, with the history's schema).
    var historyTableSQL: SQL { database.qualifiedName(Self.historyTable, schema: historySchema) }
    var attemptsTableSQL: SQL { database.qualifiedName(Self.attemptsTable, schema: historySchema) }

    // MARK: - History

    /// A migration recorded in the history table.
    public struct AppliedRecord: Sendable, Hashable {
        /// The migration's number.
        public var version: Int
        /// The migration's name.
        public var name: String
        /// The SHA-256 of its up file when it was applied.
        public var checksum: String
        /// When it was applied: ISO 8601 UTC.
        public var appliedAt: String
        /// How long it took.
        public var durationMilliseconds: Int
        /// Who applied it (the database role, or the system user on SQLite); nil in rows written
        /// before the history recorded it.
        public var appliedBy: String?
    }

    var createHistory: SQL {
        let strict: SQL = dialect.capabilities.strictTables ? " STRICT" : ""
        return """
            CREATE TABLE IF NOT EXISTS \(historyTableSQL) (
                "schema" \(type: .text, in: dialect) NOT NULL,
                "version" \(type: .integer, in: dialect) NOT NULL,
                "name" \(type: .text, in: dialect) NOT NULL,
                "checksum" \(type: .text, in: dialect) NOT NULL,
                "applied_at" \(type: .date, in: dialect) NOT NULL,
                "duration_ms" \(type: .integer, in: dialect) NOT NULL,
                "applied_by" \(type: .text, in: dialect),
                PRIMARY KEY ("schema", "version")
            )\(strict);
            """
    }

    /// Creates the history table, or brings one written by an earlier release up to date (it
    /// gains `applied_by`; PostgreSQL's `applied_at` becomes `timestamptz`). Inside the
    /// migration's transaction, under the migrator lock.
    func ensureHistory() throws(MigratorError) {
        knownHistoryColumns = nil
        try namespaces?.createSchemaIfMissing(historySchema)
        try database.execute(createHistory)
        let columns = try historyColumns()
        if !columns.contains("applied_by") {
            try database.execute("ALTER TABLE \(historyTableSQL) ADD COLUMN \"applied_by\" \(type: .text, in: dialect);")
            knownHistoryColumns = nil
        }
        // Timestamps that have a type of their own were text in an earlier release.
        let (timestampType, textType) = (dialect.columnType(.date), dialect.columnType(.text))
        if timestampType != textType, let retyping,
            try retyping.declaredType(of: "applied_at", in: Self.historyTable, schema: historySchema) == textType
        {
            try retyping.retype("applied_at", of: Self.historyTable, schema: historySchema, to: timestampType)
        }
    }

    /// The history table's columns (cached; nil until read).
    var knownHistoryColumns: Set<String>?
    func historyColumns() throws(MigratorError) -> Set<String> {
        if let knownHistoryColumns { return knownHistoryColumns }
        let columns = try database.columns(of: Self.historyTable, schema: historySchema) ?? []
        knownHistoryColumns = columns
        return columns
    }

    var createAttempts: SQL {
        """
        CREATE TABLE IF NOT EXISTS \(attemptsTableSQL) (
            "token" \(type: .text, in: dialect) NOT NULL PRIMARY KEY,
            "schema" \(type: .text, in: dialect) NOT NULL,
            "version" \(type: .integer, in: dialect) NOT NULL,
            "direction" \(type: .text, in: dialect) NOT NULL,
            "started_at" \(type: .text, in: dialect) NOT NULL
        );
        """
    }

    /// The applied migrations of this schema, oldest first.
    public func history() throws(MigratorError) -> [AppliedRecord] {
        guard try database.tableExists(Self.historyTable, schema: historySchema) else { return [] }
        let appliedBy: SQL = try historyColumns().contains("applied_by") ? "applied_by" : "NULL"
        return try database.query(
            "SELECT version, name, checksum, \(database.timestampText("applied_at")), duration_ms, \(appliedBy) FROM \(historyTableSQL) WHERE schema = \(value: .text(schema)) ORDER BY version"
        )
        .compactMap { row in
            guard case .integer(let version) = row[0], case .text(let name) = row[1], case .text(let checksum) = row[2],
                case .text(let appliedAt) = row[3], case .integer(let duration) = row[4]
            else { return nil }
            let by: String? = if case .text(let who) = row[5] { who } else { nil }
            return AppliedRecord(version: Int(version), name: name, checksum: checksum, appliedAt: appliedAt, durationMilliseconds: Int(duration), appliedBy: by)
        }
    }

    /// A migration started and never finished, as the attempts table remembers it (PostgreSQL).
    public struct Attempt: Sendable, Hashable {
        /// The migration's number.
        public var version: Int
        /// Whether it was being applied or reverted.
        public var direction: Direction
        /// When it started: ISO 8601 UTC.
        public var startedAt: String
        /// The server process still running it, when the migrator lock is held right now;
        /// nil when its process or connection was lost (rolled back, to be run again).
        public var runningInBackend: Int?
    }

    /// Attempts of this schema that have not finished: running now, or interrupted.
    public func attempts() throws(MigratorError) -> [Attempt] {
        guard let locker, try database.tableExists(Self.attemptsTable, schema: historySchema) else { return [] }
        let holder = try locker.lockHolder(schema: schema)
        return try database.query("SELECT version, direction, started_at FROM \(attemptsTableSQL) WHERE schema = \(value: .text(schema)) ORDER BY started_at")
            .compactMap { row in
                guard case .integer(let version) = row[0], case .text(let direction) = row[1], case .text(let startedAt) = row[2] else { return nil }
                return Attempt(version: Int(version), direction: Direction(rawValue: direction) ?? .up, startedAt: startedAt, runningInBackend: holder)
            }
    }

    static func now() -> String { StoredDate.text(Date()) }

    // MARK: - Status

    /// One migration as `status` lists it.
    public struct Status: Sendable, Hashable {
        /// Whether it is applied, and how.
        public enum State: Sendable, Hashable {
            /// Applied at a time (ISO 8601 UTC), taking so long, by someone; `checksumMatches`
            /// is false when its file changed since.
            case applied(at: String, milliseconds: Int, checksumMatches: Bool, by: String?)
            /// Not applied yet.
            case pending
            /// Applied, but no file has this version.
            case fileMissing(at: String)
        }
        /// The migration's number.
        public var version: Int
        /// The migration's name.
        public var name: String
        /// Applied (when, how long, whether its file still matches), pending, or missing its file.
        public var state: State
    }

    /// Every migration of the schema, applied or not, with the applied ones whose files are gone:
    ///
    ///     for migration in try migrator.status() where migration.state == .pending { print(migration.name) }
    public func status() throws(MigratorError) -> [Status] {
        let applied = Dictionary(try history().map { ($0.version, $0) }, uniquingKeysWith: { a, _ in a })
        var result: [Status] = scripts.map { script in
            guard let record = applied[script.version] else { return Status(version: script.version, name: script.name, state: .pending) }
            return Status(
                version: script.version, name: script.name,
                state: .applied(at: record.appliedAt, milliseconds: record.durationMilliseconds, checksumMatches: record.checksum == script.checksum, by: record.appliedBy))
        }
        let known = Set(scripts.map(\.version))
        for record in applied.values where !known.contains(record.version) {
            result.append(Status(version: record.version, name: record.name, state: .fileMissing(at: record.appliedAt)))
        }
        return result.sorted { $0.version < $1.version }
    }

    /// Problems between the database's history and the files, without changing anything.
    ///
    ///     for problem in try migrator.validate() { print(problem) }
    public func validate() throws(MigratorError) -> [MigratorError] {
        let applied = try history()
        let byVersion = Dictionary(scripts.map { ($0.version, $0) }, uniquingKeysWith: { a, _ in a })
        var problems: [MigratorError] = []
        for record in applied {
            guard let script = byVersion[record.version] else {
                problems.append(.missingFile(version: record.version, name: record.name))
                continue
            }
            if script.checksum != record.checksum { problems.append(.changedAfterApply(version: record.version, file: script.upFile)) }
        }
        if let newest = applied.last?.version {
            let appliedVersions = Set(applied.map(\.version))
            for script in scripts where script.version < newest && !appliedVersions.contains(script.version) {
                problems.append(.outOfOrder(file: script.upFile, newestApplied: newest))
            }
        }
        return problems
    }

    // MARK: - Progress

    /// Progress, reported through `up` and `down`'s callback.
    public enum Event: Sendable {
        /// A migration of this schema started earlier never finished (its process or connection
        /// died); it was rolled back and will run again.
        case interrupted(version: Int, direction: Direction, startedAt: String)
        /// A migration started, with its number of statements.
        case started(MigrationScript, direction: Direction, statements: Int)
        /// A statement of the migration in progress is about to run.
        case statement(index: Int, of: Int)
        /// A table rebuild's row copy under way: rows written so far, of the rows the old table holds.
        case copyingRows(table: String, copied: Int, of: Int)
        /// SQLite is busy inside one long statement that is not a row copy.
        case working
        /// A migration committed, with its history row, after so many milliseconds.
        case finished(MigrationScript, direction: Direction, milliseconds: Int)
        /// Another migrator applied it while this one waited for the lock.
        case skipped(MigrationScript)
        /// A section of an online migration's phase is about to run.
        case onlineSection(MigrationScript, phase: MigrationHeader.OnlinePhaseKind, index: Int, of: Int)
        /// A backfill's rows so far (counted by batch).
        case backfilled(table: String, rows: Int)
        /// A section could not get its locks within the lock timeout; it runs again after a pause.
        /// `holders` describes the sessions holding locks on its tables when it gave up.
        case lockRetry(section: Int, attempt: Int, pauseMilliseconds: Int, holders: [String])
        /// An index build (`CONCURRENTLY`) is about to wait for these sessions' open transactions
        /// to end, without a time limit: it cannot finish before they do.
        case indexBuildWaits(section: Int, sessions: [String])
        /// A backfill passed by rows that apps hold locked; it tries them again after a pause.
        case rowsHeld(table: String, keys: [String], holders: [String], attempt: Int)
        /// An online migration's phase finished.
        case onlineFinished(MigrationScript, phase: MigrationHeader.OnlinePhaseKind, milliseconds: Int)
        /// A backfill waits before its next batch for a standby over the lag bound; sent about
        /// once a second while it waits.
        case waitingForStandby(ReplicaLagWait)
        /// A standby stopped streaming (it left `pg_stat_replication`): no longer waited for.
        case standbyGone(String)
        /// The role cannot see these standbys' replay positions (it needs `pg_monitor`): they
        /// are not waited for.
        case standbyPositionsHidden([String])
        /// A backfill batch or an index build waits this long for the WAL budget.
        case pacingWAL(seconds: Double)
        /// Objects made outside the schema, carried across a table rebuild: made again on the
        /// rebuilt table ("index audit_idx on orders", "view report").
        case carriedAcrossRebuild([String])
        /// What an online migration's copy of a table will carry across (`check` section), each
        /// with how: "index audit_idx on orders: built on the copy before its rows".
        case carrying([String])
        /// What cannot be carried and is dropped, as `dropUncarried` allows, each with why.
        case droppingUncarried([String])
        /// A warning the database server raised while a section ran (a key left NOT VALID, an
        /// object dropped as `dropUncarried` allows).
        case serverWarning(String)
    }

    /// Applying (`up`) or reverting (`down`).
    public enum Direction: String, Sendable {
        /// Applying.
        case up
        /// Reverting.
        case down
    }

    /// Which migrations to run.
    public enum Target: Sendable, Hashable {
        /// Every pending migration (up), or every applied one (down).
        case all
        /// This many migrations.
        case count(Int)
        /// Up: up to and including this version. Down: down to this version (0 = everything).
        case version(Int)
    }

    /// What `up` and `down` may do beyond the safe default.
    public struct Options: Sendable {
        /// Apply a pending migration numbered below the newest applied one (from a merged branch).
        public var allowOutOfOrder = false
        /// Revert a migration whose down file loses data it cannot restore.
        public var allowDestructive = false
        /// Online migrations: contract each one right after its expand (a database without traffic).
        public var complete = false
        /// Online migrations: how long each DDL statement may wait for a lock before it gives
        /// up and is retried (so app queries never queue behind it for longer).
        public var lockTimeoutMilliseconds = 500
        /// Online migrations: how many times a section that could not get its locks is retried.
        public var lockRetries = 20
        /// Backfills on a primary with standbys (PostgreSQL): before each batch, wait while a
        /// standby's replay lag is over this many milliseconds. 0 never waits.
        public var maxReplicaLagMilliseconds = 1000
        /// How long, in seconds, a backfill waits for a lagging standby before it gives up with
        /// `replicaLagTimeout` (its progress kept); nil waits as long as it takes.
        public var replicaLagTimeout: Double? = nil
        /// Backfills on PostgreSQL: pause so that the server's WAL grows by at most this many
        /// megabytes a second over the run (the app's writes count too); nil does not pace.
        public var maxWALMegabytesPerSecond: Double? = nil
        /// Backfills: size each batch so that it takes about this many milliseconds, starting
        /// from the file's batch; 0 keeps the file's batch.
        public var batchTargetMilliseconds = 200
        /// Online migrations that rebuild a table by copying it: drop, each with a warning,
        /// what was made on the table outside the schema and cannot be made again on the
        /// rebuilt one (an index on a column the version drops, say), instead of stopping.
        public var dropUncarried = false
        /// `complete`: how recently a sync device must have synced through a version the
        /// contract drops for the contract to be refused (those devices would be stranded).
        public var deviceRetention: TimeInterval = 30 * 24 * 3_600
        /// `complete`: contract even when devices synced through the version it drops within
        /// `deviceRetention`: they cannot sync again until their app is updated.
        public var strandDevices = false
        /// Options; off by default, locks waited for 500 ms, 20 retries; backfills wait for
        /// standbys more than 1 s behind and aim at 200 ms batches.
        ///
        ///     let options = Migrator.Options(allowDestructive: true, lockTimeoutMilliseconds: 2_000)
        public init(
            allowOutOfOrder: Bool = false, allowDestructive: Bool = false, complete: Bool = false, lockTimeoutMilliseconds: Int = 500, lockRetries: Int = 20,
            maxReplicaLagMilliseconds: Int = 1000, replicaLagTimeout: Double? = nil, maxWALMegabytesPerSecond: Double? = nil, batchTargetMilliseconds: Int = 200,
            dropUncarried: Bool = false
        ) {
            self.dropUncarried = dropUncarried
            self.allowOutOfOrder = allowOutOfOrder
            self.allowDestructive = allowDestructive
            self.complete = complete
            self.lockTimeoutMilliseconds = lockTimeoutMilliseconds
            self.lockRetries = lockRetries
            self.maxReplicaLagMilliseconds = maxReplicaLagMilliseconds
            self.replicaLagTimeout = replicaLagTimeout
            self.maxWALMegabytesPerSecond = maxWALMegabytesPerSecond
            self.batchTargetMilliseconds = batchTargetMilliseconds
        }
    }

    // MARK: - Up and down

    /// The migrations `up` would apply, in order, after checking applied ones against their files.
    public func pendingUp(_ target: Target, options: Options = Options()) throws(MigratorError) -> [MigrationScript] {
        if let problem = try validate().first(where: { if case .outOfOrder = $0 { return false } else { return true } }) { throw problem }
        let applied = Set(try history().map(\.version))
        let newest = applied.max() ?? 0
        var pending = scripts.filter { !applied.contains($0.version) }
        if !options.allowOutOfOrder, let early = pending.first(where: { $0.version < newest }) {
            throw .outOfOrder(file: early.upFile, newestApplied: newest)
        }
        switch target {
        case .all: break
        case .count(let count): pending = Array(pending.prefix(max(0, count)))
        case .version(let version):
            guard version == 0 || scripts.contains(where: { $0.version == version }) else { throw .unknownVersion(version) }
            pending = pending.filter { $0.version <= version }
        }
        return pending
    }

    /// Whether any of the schema's migrations is planned online.
    func hasOnlineScripts() throws(MigratorError) -> Bool {
        for script in scripts where try isOnline(script) { return true }
        return false
    }

    /// The migrations `down` would revert, newest first.
    public func pendingDown(_ target: Target, options: Options = Options()) throws(MigratorError) -> [MigrationScript] {
        if let problem = try validate().first(where: { if case .outOfOrder = $0 { return false } else { return true } }) { throw problem }
        let applied = try history().map(\.version).sorted(by: >)
        let byVersion = Dictionary(scripts.map { ($0.version, $0) }, uniquingKeysWith: { a, _ in a })
        var selected: [Int]
        switch target {
        case .all: selected = applied
        case .count(let count): selected = Array(applied.prefix(max(0, count)))
        case .version(let version):
            guard version == 0 || byVersion[version] != nil else { throw .unknownVersion(version) }
            selected = applied.filter { $0 > version }
        }
        let result = selected.compactMap { byVersion[$0] }
        if !options.allowDestructive {
            for script in result where try script.header(.down).losesData { throw .destructiveDown(file: script.downFile) }
        }
        return result
    }

    /// Applies pending migrations, each in its own transaction with its history row.
    ///
    ///     let applied = try migrator.up { event in
    ///         if case .finished(let migration, _, let milliseconds) = event { log("\(migration.label) in \(milliseconds) ms") }
    ///     }
    @discardableResult
    public func up(_ target: Target = .all, options: Options = Options(), progress: @escaping (Event) -> Void = { _ in }) throws(MigratorError) -> [MigrationScript] {
        if online != nil, try hasOnlineScripts() {
            return try upOnline(target, options: options, progress: progress)
        }
        let pending = try pendingUp(target, options: options)
        var applied: [MigrationScript] = []
        for script in pending where try run(script, direction: .up, progress: progress) {
            applied.append(script)
        }
        return applied
    }

    /// Reverts applied migrations, newest first (one by default).
    ///
    ///     try migrator.down(.version(2), options: .init(allowDestructive: true))
    @discardableResult
    public func down(_ target: Target = .count(1), options: Options = Options(), progress: @escaping (Event) -> Void = { _ in }) throws(MigratorError) -> [MigrationScript] {
        let selected = try pendingDown(target, options: options)
        for script in selected where try isOnline(script) {
            let state = try onlineState()
            throw .onlineState(
                state?.version == script.version
                    ? "migration \(script.label) is an online migration in progress: undo it with `rollback`, not `down`"
                    : "migration \(script.label) was applied online and completed: its previous version's columns are gone, so it cannot be reverted; plan a new migration that undoes it")
        }
        var reverted: [MigrationScript] = []
        for script in selected where try run(script, direction: .down, progress: progress) {
            reverted.append(script)
        }
        return reverted
    }

    /// The migrations `baseline` would record as applied, after checking that the database has
    /// every table and column of `version` (from its snapshot): recording a version the database
    /// is not at would make the next `up` skip what it lacks. Writes nothing.
    public func pendingBaseline(_ version: Int) throws(MigratorError) -> [MigrationScript] {
        guard let target = scripts.first(where: { $0.version == version }) else { throw .unknownVersion(version) }
        guard let objects = target.objects else { throw .baselineUnchecked(version: version) }
        let missing = try missingObjects(objects)
        guard missing.isEmpty else { throw .baselineMismatch(version: version, missing: missing) }
        let applied = Set(try history().map(\.version))
        return scripts.filter { $0.version <= version && !applied.contains($0.version) }
    }

    /// Records migrations up to `version` as applied without running them: adopting a database
    /// that already has this schema. Refused when the database lacks a table or column of that
    /// version.
    ///
    ///     try migrator.baseline(3)   // the database was built by hand at version 3
    @discardableResult
    public func baseline(_ version: Int) throws(MigratorError) -> [MigrationScript] {
        _ = try pendingBaseline(version)
        try locker?.lock(schema: schema, timeout: lockTimeout, cancelled: { cancellation.isRequested })
        defer { locker?.unlock(schema: schema) }
        var recorded: [MigrationScript] = []
        try transaction { () throws(MigratorError) in
            // Checked again under the lock: another migrator may have changed the database.
            recorded = try pendingBaseline(version)
            for script in recorded { try record(script, milliseconds: 0) }
        }
        return recorded
    }

    /// `table` or `table.column` for each of `objects` the database does not have.
    func missingObjects(_ objects: [String: [String]]) throws(MigratorError) -> [String] {
        var missing: [String] = []
        for (table, columns) in objects.sorted(by: { $0.key < $1.key }) {
            guard let present = try database.columns(of: table, schema: nil) else {
                missing.append("table \(table)")
                continue
            }
            missing += columns.filter { !present.contains($0) }.map { "column \(table).\($0)" }
        }
        return missing
    }

    // MARK: - Repair

    /// What `repair` would change in the history, each with why.
    public enum RepairAction: Sendable, Hashable, CustomStringConvertible {
        /// A recorded migration whose tables or columns are not in the database (a baseline at the
        /// wrong version, or objects dropped by hand): its row goes, so `up` runs it.
        case forget(AppliedRecord, missing: [String])
        /// An applied migration's file was edited and reviewed: its checksum is recorded anew.
        case recordChecksum(AppliedRecord, file: String, checksum: String)
        /// A note of an attempt whose process or connection was lost (PostgreSQL).
        case clearAttempt(Attempt)

        /// What the repair does and why, for a reviewer.
        public var description: String {
            switch self {
            case .forget(let record, let missing):
                "forget \(MigrationFileName(number: record.version, name: record.name).prefix) (recorded \(record.appliedAt)\(record.appliedBy.map { " by \($0)" } ?? "")): the database lacks \(missing.prefix(5).joined(separator: ", "))\(missing.count > 5 ? " and \(missing.count - 5) more" : ""); `up` will run it"
            case .recordChecksum(let record, let file, let checksum):
                "record the checksum of \(file) anew (\(record.checksum.prefix(12))… -> \(checksum.prefix(12))…): the file changed after \(String(format: "%04d", record.version)) was applied"
            case .clearAttempt(let attempt):
                "clear the note of migration \(String(format: "%04d", attempt.version)) (\(attempt.direction.rawValue)) started \(attempt.startedAt) and never finished"
            }
        }
    }

    /// The repairs the history needs, as Flyway's `repair` makes them: rows of migrations whose
    /// objects are absent (failed or baselined ones), checksums of files edited after review,
    /// and notes of lost attempts. Reads only.
    ///
    /// A recorded migration counts as absent when the database lacks a table or column of its
    /// snapshot and of every newer recorded one: the rows above the newest version the database
    /// does have go. Migrations that only drop things cannot be told apart this way.
    public func repairPlan() throws(MigratorError) -> [RepairAction] {
        let applied = try history()
        let byVersion = Dictionary(scripts.map { ($0.version, $0) }, uniquingKeysWith: { a, _ in a })
        var actions: [RepairAction] = []
        var missingByVersion: [Int: [String]] = [:]
        for record in applied {
            guard let objects = byVersion[record.version]?.objects else { continue }
            missingByVersion[record.version] = try missingObjects(objects)
        }
        let newestPresent = applied.last { missingByVersion[$0.version]?.isEmpty == true }?.version ?? 0
        for record in applied where record.version > newestPresent {
            if let missing = missingByVersion[record.version], !missing.isEmpty { actions.append(.forget(record, missing: missing)) }
        }
        let forgotten = Set(actions.compactMap { if case .forget(let record, _) = $0 { record.version } else { nil } })
        for record in applied where !forgotten.contains(record.version) {
            if let script = byVersion[record.version], script.checksum != record.checksum {
                actions.append(.recordChecksum(record, file: script.upFile, checksum: script.checksum))
            }
        }
        actions += try attempts().filter { $0.runningInBackend == nil }.map(RepairAction.clearAttempt)
        return actions
    }

    /// Makes the repairs of `repairPlan()`, under the migrator lock, in one transaction; the plan
    /// is computed again there, so what is changed is what the database needs now.
    ///
    ///     for action in try migrator.repairPlan() { print(action) }   // review first
    ///     try migrator.repair()
    @discardableResult
    public func repair() throws(MigratorError) -> [RepairAction] {
        try locker?.lock(schema: schema, timeout: lockTimeout, cancelled: { cancellation.isRequested })
        defer { locker?.unlock(schema: schema) }
        var made: [RepairAction] = []
        try transaction { () throws(MigratorError) in
            made = try repairPlan()
            for action in made {
                switch action {
                case .forget(let record, _):
                    _ = try database.query("DELETE FROM \(historyTableSQL) WHERE schema = \(value: .text(schema)) AND version = \(value: .integer(Int64(record.version)))")
                case .recordChecksum(let record, _, let checksum):
                    _ = try database.query(
                        "UPDATE \(historyTableSQL) SET checksum = \(value: .text(checksum)) WHERE schema = \(value: .text(schema)) AND version = \(value: .integer(Int64(record.version)))")
                case .clearAttempt(let attempt):
                    _ = try database.query(
                        "DELETE FROM \(attemptsTableSQL) WHERE schema = \(value: .text(schema)) AND version = \(value: .integer(Int64(attempt.version))) AND started_at = \(value: .text(attempt.startedAt))"
                    )
                }
            }
        }
        return made
    }

    // MARK: - One migration

    /// Runs one migration; false when another migrator did it first. The file's header says
    /// how: foreign keys off around it, outside a transaction, which row copies to report.
    func run(_ script: MigrationScript, direction: Direction, progress: @escaping (Event) -> Void) throws(MigratorError) -> Bool {
        if cancellation.isRequested { throw .interrupted(during: "\(direction == .up ? "applying" : "reverting") \(script.label), before it started,") }
        do {
            return try runUnlessCancelled(script, direction: direction, progress: progress)
        } catch {
            // A cancel that reached another statement (the history row, say) is still an interrupt.
            if cancellation.isRequested, case .interrupted = error { throw error }
            if cancellation.isRequested { throw .interrupted(during: "\(direction == .up ? "applying" : "reverting") \(script.label)") }
            throw error
        }
    }

    /// Refuses migrations planned for another engine before anything reads or writes the
    /// database: a folder of another dialect's files given by mistake (`--dir`) would otherwise
    /// be compared with this database's history, or half run.
    ///
    ///     try migrator.checkDialect()   // MigratorError.wrongDialect names the first such file
    public func checkDialect() throws(MigratorError) {
        for script in scripts {
            let header = try script.header(.up)
            if let planned = header.dialect, planned != database.dialect.name {
                throw .wrongDialect(file: script.upFile, planned: planned, database: database.dialect.name)
            }
        }
    }

    func runUnlessCancelled(_ script: MigrationScript, direction: Direction, progress: @escaping (Event) -> Void) throws(MigratorError) -> Bool {
        let sql = direction == .up ? script.up : script.down
        let file = direction == .up ? script.upFile : script.downFile
        let header = try script.header(direction)
        if let planned = header.dialect, planned != database.dialect.name {
            throw .wrongDialect(file: file, planned: planned, database: database.dialect.name)
        }
        try locker?.lock(schema: schema, timeout: lockTimeout, cancelled: { cancellation.isRequested })
        defer { locker?.unlock(schema: schema) }
        let token = try beginAttempt(script, direction: direction)
        // Switched outside the transaction: SQLite's PRAGMA foreign_keys does nothing inside one.
        let switchesForeignKeys = header.foreignKeysOff ? foreignKeys : nil
        let foreignKeysWereOn = switchesForeignKeys?.foreignKeysEnabled() ?? false
        try switchesForeignKeys?.setForeignKeys(false)
        defer {
            if foreignKeysWereOn { try? switchesForeignKeys?.setForeignKeys(true) }
        }
        guard header.runsInTransaction else {
            return try runOutsideTransaction(script, sql: sql, file: file, direction: direction, header: header, token: token, progress: progress)
        }
        let started = Date()
        var ran = false
        do {
            try transaction { () throws(MigratorError) in
                try reportInterrupted(except: token, progress: progress)
                // Another migrator may have run it while this one waited for the lock.
                let applied = Set(try history().map(\.version))
                if (direction == .up) == applied.contains(script.version) {
                    progress(.skipped(script))
                    try endAttempt(token)
                    return
                }
                try execute(sql, file: file, script: script, direction: direction, header: header, progress: progress)
                if let switchesForeignKeys {
                    let violations = try switchesForeignKeys.foreignKeyViolations()
                    if !violations.isEmpty {
                        throw .foreignKeyViolations(file: file, violations: Array(violations.prefix(20)) + (violations.count > 20 ? ["... and \(violations.count - 20) more"] : []))
                    }
                }
                let milliseconds = Int(Date().timeIntervalSince(started) * 1000)
                try recordOrForget(script, direction: direction, milliseconds: milliseconds)
                try endAttempt(token)
                ran = true
                progress(.finished(script, direction: direction, milliseconds: milliseconds))
            }
        } catch {
            // Rolled back: this attempt ended, it was not interrupted.
            try? endAttempt(token)
            throw error
        }
        return ran
    }

    /// A migration whose header says `transaction: no` (one statement, such as PostgreSQL's
    /// `CREATE INDEX CONCURRENTLY`): it runs under the migrator lock alone, then its history
    /// row commits in a transaction of its own. A failure leaves it unrecorded.
    func runOutsideTransaction(
        _ script: MigrationScript, sql: String, file: String, direction: Direction, header: MigrationHeader,
        token: String?, progress: @escaping (Event) -> Void
    ) throws(MigratorError) -> Bool {
        let count = database.statementCount(MigrationScriptText(sql))
        guard count == 1 else {
            throw .badHeader(file: file, MigrationHeader.ParseError(line: 1, message: "a migration with 'transaction: no' must hold exactly one statement; this one holds \(count): split it"))
        }
        try reportInterrupted(except: token, progress: progress)
        let applied = Set(try history().map(\.version))
        if (direction == .up) == applied.contains(script.version) {
            progress(.skipped(script))
            try? endAttempt(token)
            return false
        }
        let started = Date()
        do {
            try execute(sql, file: file, script: script, direction: direction, header: header, progress: progress)
        } catch {
            try? endAttempt(token)
            let failure: (file: String, statement: Int, line: Int, message: String)
            switch error {
            case .statementFailed(let file, let statement, let line, let message), .tableLockTimeout(let file, let statement, let line, let message),
                .statementTimeout(let file, let statement, let line, let message):
                failure = (file, statement, line, message)
            default: throw error
            }
            let (file, statement, line, message) = failure
            throw .failedOutsideTransaction(file: file, statement: statement, line: line, message: message)
        }
        let milliseconds = Int(Date().timeIntervalSince(started) * 1000)
        try database.beginTransaction(timeout: lockTimeout)
        do {
            try ensureHistory()
            try recordOrForget(script, direction: direction, milliseconds: milliseconds)
            try endAttempt(token)
            try database.commit()
        } catch {
            database.rollback()
            throw error
        }
        progress(.finished(script, direction: direction, milliseconds: milliseconds))
        return true
    }

    /// Runs the statements of a file, reporting each, and the rows of the header's row copies.
    func execute(
        _ sql: String, file: String, script: MigrationScript, direction: Direction, header: MigrationHeader,
        progress: @escaping (Event) -> Void
    ) throws(MigratorError) {
        let total = database.statementCount(MigrationScriptText(sql))
        progress(.started(script, direction: direction, statements: total))
        // Counting the old tables first costs little next to copying them.
        var copies: [String: (table: String, rows: Int)] = [:]
        for copy in header.rowCopies {
            if case .integer(let rows)? = (try? database.query("SELECT count(*) FROM \(identifier: copy.from)"))?.first?.first {
                copies[copy.to] = (copy.from, Int(rows))
            }
        }
        rowCopies?.observeProgress { table, copied in
            if let table, let copy = copies[table] {
                progress(.copyingRows(table: copy.table, copied: copied, of: copy.rows))
            } else {
                progress(.working)
            }
        }
        defer { rowCopies?.stopObservingProgress() }
        let run = { () throws(MigratorError) in
            do throws(StatementFailure) {
                try self.database.runScript(MigrationScriptText(sql), shouldStop: { self.cancellation.isRequested }) { index, _ in
                    self.rowCopies?.resetRowCount()
                    progress(.statement(index: index, of: total))
                }
            } catch {
                if self.cancellation.isRequested {
                    throw .interrupted(during: "statement \(error.index) of \(total) of \((file as NSString).lastPathComponent) (line \(error.line))")
                }
                switch error.reason {
                case .lockTimeout, .deadlock: throw .tableLockTimeout(file: file, statement: error.index, line: error.line, message: error.message)
                case .statementTimeout: throw .statementTimeout(file: file, statement: error.index, line: error.line, message: error.message)
                case .connectionLost:
                    throw .statementFailed(file: file, statement: error.index, line: error.line, message: error.message + " (the connection to \(self.database.label) was lost)")
                case nil: throw .statementFailed(file: file, statement: error.index, line: error.line, message: error.message)
                }
            }
        }
        let counted = { () throws(MigratorError) in
            if let rowCopies = self.rowCopies { try rowCopies.countingRows(run) } else { try run() }
        }
        guard let carrying, !header.rowCopies.isEmpty else { return try counted() }
        let carried = try carrying.carryingObjects(around: header.rowCopies.map { ($0.from, $0.to) }, file: file, counted)
        if !carried.isEmpty { progress(.carriedAcrossRebuild(carried)) }
    }

    func recordOrForget(_ script: MigrationScript, direction: Direction, milliseconds: Int) throws(MigratorError) {
        if direction == .up {
            try record(script, milliseconds: milliseconds)
        } else {
            _ = try database.query("DELETE FROM \(historyTableSQL) WHERE schema = \(value: .text(schema)) AND version = \(value: .integer(Int64(script.version)))")
        }
    }

    func record(_ script: MigrationScript, milliseconds: Int) throws(MigratorError) {
        let values: [StoredValue] = [
            .text(schema), .integer(Int64(script.version)), .text(script.name), .text(script.checksum), .text(Self.now()), .integer(Int64(milliseconds)),
            .text(appliedBy),
        ]
        _ = try database.query("INSERT INTO \(historyTableSQL) (schema, version, name, checksum, applied_at, duration_ms, applied_by) VALUES (\(SQL.parameters(values)))")
    }

    /// Who applies migrations through this migrator, asked once.
    lazy var appliedBy: String = database.currentUser()

    // MARK: - Interrupted runs

    /// Notes, outside any transaction, that a migration is starting, where the engine holds a
    /// lock beyond transactions (PostgreSQL): a row that outlives a lost connection. SQLite's
    /// killed transactions leave nothing to report, so it keeps no such row.
    func beginAttempt(_ script: MigrationScript, direction: Direction) throws(MigratorError) -> String? {
        guard locker != nil else { return nil }
        try namespaces?.createSchemaIfMissing(historySchema)
        try database.execute(createAttempts)
        let token = UUID().uuidString
        let values: [StoredValue] = [.text(token), .text(schema), .integer(Int64(script.version)), .text(direction.rawValue), .text(Self.now())]
        _ = try database.query("INSERT INTO \(attemptsTableSQL) (token, schema, version, direction, started_at) VALUES (\(SQL.parameters(values)))")
        return token
    }

    func endAttempt(_ token: String?) throws(MigratorError) {
        guard let token else { return }
        _ = try database.query("DELETE FROM \(attemptsTableSQL) WHERE token = \(value: .text(token))")
    }

    /// Under the migrator lock, any other attempt of this schema still recorded died before it
    /// finished: report it and clear it.
    func reportInterrupted(except token: String?, progress: (Event) -> Void) throws(MigratorError) {
        guard let token else { return }
        let leftovers = try database.query(
            "SELECT token, version, direction, started_at FROM \(attemptsTableSQL) WHERE schema = \(value: .text(schema)) AND token <> \(value: .text(token)) ORDER BY started_at")
        for row in leftovers {
            guard case .text(let old) = row[0], case .integer(let version) = row[1], case .text(let direction) = row[2], case .text(let startedAt) = row[3] else { continue }
            progress(.interrupted(version: Int(version), direction: Direction(rawValue: direction) ?? .up, startedAt: startedAt))
            _ = try database.query("DELETE FROM \(attemptsTableSQL) WHERE token = \(value: .text(old))")
        }
    }

    // MARK: - Transactions

    /// Begins a transaction (on SQLite, waiting up to the lock timeout for the write lock), so two
    /// migrators never interleave; anything thrown rolls everything back. The caller holds the
    /// migrator lock where the engine has one.
    func transaction(_ body: () throws(MigratorError) -> Void) throws(MigratorError) {
        try database.beginTransaction(timeout: lockTimeout)
        do {
            try ensureHistory()
            try body()
            try database.commit()
        } catch {
            database.rollback()
            throw error
        }
    }
}

/// A request to stop a migrator's work, from any thread (a signal handler's): the statement in
/// progress is cancelled, its migration rolls back, and the migrator throws `.interrupted`
/// before starting anything else. One may be shared by migrators of one database.
public final class MigrationCancellation: @unchecked Sendable {
    private let lock = NSLock()
    private var requested = false
    private let stopStatement: @Sendable () -> Void

    /// A cancellation that stops `database`'s statements.
    ///
    ///     let cancellation = MigrationCancellation(database: database)
    ///     let migrator = Migrator(database: database, schema: "Flights", scripts: scripts, cancellation: cancellation)
    public init(database: any MigrationDatabase) {
        stopStatement = database.canceller
    }

    /// Cancels the statement in progress (again on each call: a request that reached the
    /// server between two statements finds nothing to cancel).
    public func cancel() {
        lock.withLock { requested = true }
        stopStatement()
    }

    /// Whether `cancel()` was called.
    public var isRequested: Bool { lock.withLock { requested } }
}
