import DatabaseLocation
import FieldEncryption
import Foundation
import MigratorCore
import SQLDialects
import SchemaMetadata

/// Why the store refused or failed.
public enum StoreError: Error, Sendable, CustomStringConvertible {
    /// Opening could not bring the database to the schema's version (or found it changed).
    case migration(String)
    /// The database refused: `failure.kind` tells busy (`.busy`) from a constraint, a damaged
    /// file and the rest; `failure.database` names the database.
    case database(DatabaseFailure)
    /// A file of an `externalStorage` attribute could not be read or written.
    case externalFile(String)
    /// A stored value does not fit the model's property, or a model cannot be encoded.
    case coding(String)
    /// A value given for a record's column is not one the schema allows there (the record
    /// writes of tools without compiled models): what column, and what it takes.
    case invalidValue(String)
    /// The model's entity is not in the store's schema.
    case unknownEntity(String)
    /// A delete rule `deny` blocked a delete.
    case deleteDenied(String)
    /// A predicate or sort the store cannot run as SQL (it never filters in memory instead).
    case unsupportedPredicate(String)
    /// The history after `after` was pruned (through `through`), so what changed since is lost.
    case historyPruned(after: HistoryToken, through: HistoryToken)
    /// The schema (or the configuration) turned history off.
    case historyDisabled(String)
    /// A history row that cannot be read (written by another program, or damaged).
    case badHistory(token: HistoryToken, reason: String)
    /// The schema encrypts attributes and no key was given (or it cannot be read).
    case missingKey(String)
    /// An encrypted value cannot be read: an unknown or wrong key, a moved or changed value.
    case encryption(FieldCipherError)
    /// A write inside `read`, which holds a snapshot and not the write lock.
    case writeInsideRead(String)
    /// The location names no database this build opens: a URL with an unknown scheme, or a
    /// server whose engine the app does not link. Never taken for a file name.
    case unsupportedDatabase(String)
    /// The database has migrations newer than every one this app's generated code embeds: a
    /// newer version of the app migrated it. This app needs updating.
    case databaseNewer(applied: Int, known: Int)
    /// What the store cannot do yet on this engine (the message says what to do instead).
    case notSupported(String)
    /// The `body` of `transaction { }` or `read { }` threw this error (one that is not a
    /// `StoreError`), carried unchanged; the transaction rolled back.
    ///
    ///     catch StoreError.body(let error as ValidationError) { reject(error) }
    case body(any Error)
    /// The store retried an operation the database refused for a reason that passes (a lock
    /// held past the busy timeout, a serialization failure or a deadlock on PostgreSQL) until
    /// `Configuration.busyTimeout` ran out: `attempts` tries in all, the last refused with `last`.
    /// Nothing of the operation was written.
    case retriesExhausted(attempts: Int, last: DatabaseFailure)
    /// The server was lost (a failover, a restart) and no writable primary answered within
    /// `Configuration.postgres.failoverTimeout`. `outcomeKnown`: the last transaction had not
    /// reached its COMMIT, so nothing of it was written; false: its COMMIT was sent and not
    /// answered, and no primary could be asked whether it took effect.
    case noWritablePrimary(waited: Duration, outcomeKnown: Bool, last: DatabaseFailure)

    /// What went wrong and what to do, without secrets.
    public var description: String {
        switch self {
        case .migration(let message): "cannot bring the database to the code's schema: \(message)"
        case .unsupportedDatabase(let message): message
        case .notSupported(let message): message
        case .databaseNewer(let applied, let known):
            "the database is newer than this app's models: migration \(String(format: "%04d", applied)) is applied, and this app knows migrations up to \(String(format: "%04d", known)); a newer version of the app opened it, so update this app (its generated code) to open it"
        case .database(let error): "database error: \(error)"
        case .externalFile(let message): "external storage: \(message)"
        case .coding(let message): "cannot map a model to its row: \(message)"
        case .invalidValue(let message): message
        case .unknownEntity(let name): "\(name) is not part of this store's schema"
        case .deleteDenied(let message): "delete refused: \(message)"
        case .unsupportedPredicate(let message): message
        case .historyPruned(let after, let through):
            "the history after token \(after) was pruned (through token \(through)), so what changed since is not known; refetch what you show and continue from currentHistoryToken()"
        case .historyDisabled(let schema):
            "the \(schema) schema records no history ('history: false', or Configuration.recordsHistory); turn it on to read changes"
        case .badHistory(let token, let reason):
            "schemagen_history row \(token) cannot be read: \(reason); delete it with deleteHistory(before:) if it was not written by this store"
        case .missingKey(let message): message
        case .encryption(let error): error.description
        case .writeInsideRead(let what): "\(what) inside read { }: reads hold a snapshot, not the write lock; write in transaction { } instead"
        case .body(let error): "the transaction's body threw (everything it wrote was rolled back): \(error)"
        case .retriesExhausted(let attempts, let last):
            "gave up after \(attempts) attempt\(attempts == 1 ? "" : "s") within the busy timeout, nothing written; the last one was refused: \(last)"
        case .noWritablePrimary(let waited, let outcomeKnown, let last):
            "the cluster has no writable primary: none answered within \(Int(waited.inSeconds.rounded())) s; "
                + (outcomeKnown
                    ? "the last transaction had not reached its COMMIT, so nothing of it was written"
                    : "the last transaction's COMMIT was sent and not answered, so whether it took effect is unknown")
                + " (\(last.message))"
        }
    }

    /// What kind of failure the database reported, when it refused (also when the store gave
    /// up retrying it: `.retriesExhausted`).
    ///
    ///     if error.databaseFailure == .busy { retryLater() }
    public var databaseFailure: DatabaseFailure.Kind? {
        switch self {
        case .database(let failure), .retriesExhausted(_, let failure), .noWritablePrimary(_, _, let failure): failure.kind
        default: nil
        }
    }

    /// The error a transaction's or read's `body` threw, when it was not a `StoreError`.
    ///
    ///     if let cause = error.bodyError as? ValidationError { reject(cause) }
    public var bodyError: (any Error)? {
        if case .body(let error) = self { return error }
        return nil
    }

    /// Any error as a `StoreError`: itself when it is one, else carried by `.body`.
    init(thrownByBody error: any Error) {
        self = (error as? StoreError) ?? .body(error)
    }
}

/// Persists generated models in a database (SQLite, through `PersistentStoreSQLite`). An actor: every call is safe from any task, and only
/// Sendable values cross it. Opening applies the migrations embedded in the generated code.
public actor Store {
    /// The queue the store's calls run on (`StoreExecutor`).
    private let executor = StoreExecutor(label: "schemagen.store")
    /// Where the store's calls run: a serial queue of its own, off Swift's cooperative pool, as
    /// a call waits on its database without giving its thread back. Swift asks for it; apps do
    /// not need it.
    ///
    ///     let executor = store.unownedExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The connection every statement runs on, through its engine's adapter.
    let database: any StoreDatabase
    /// What the adapter can do beyond the core protocol, looked up once.
    let abilities: StoreAbilities
    /// The implicit key the last insert gave, where the engine reports one (`InsertedRowIDs`).
    var lastInsertedRowID: Int64 { abilities.bulk.rowIDs?.lastInsertedRowID ?? 0 }
    /// Its dialect's capabilities, read once: the write path asks per row.
    let capabilities: DialectCapabilities
    /// The schema the store was opened with.
    public let schema: SchemaDescriptor
    /// Where `externalStorage` values are kept: beside the database, or a temporary folder for
    /// an in-memory store.
    public let externalFolder: URL
    /// `externalFolder`'s path, kept as text: each external value read joins names onto it.
    let externalFolderPath: String
    /// External files written, and marked for removal, in the open transaction.
    var createdFiles: [URL] = []
    var removedFiles: [URL] = []
    /// Upsert SQL by entity and column shape.
    /// Which upsert statement a write needs: one per table, key presence and column count.
    struct UpsertShape: Hashable {
        let table: String
        let hasKey: Bool
        let columnCount: Int
    }
    var upsertStatements: [UpsertShape: UpsertStatements] = [:]
    /// `directWrite`'s plans: a `DirectWrite<M>` by the model type `M`.
    var directWrites: [ObjectIdentifier: AnyObject] = [:]
    var keyLookups: [UpsertShape: [KeyLookup]] = [:]
    /// `.update(only:)`'s upserts, by row shape and the columns they set.
    struct UpdateOnlyShape: Hashable {
        let row: UpsertShape
        let only: Set<String>
    }
    var updateOnlyStatements: [UpdateOnlyShape: UpsertStatements] = [:]
    /// The stored row by one unique key, as a model: by the table and the key's columns.
    var storedModelLookups: [[String]: RenderedSQL] = [:]
    /// The table whose plain insert last hit a taken key or unique value, and the rows written
    /// to it since: while conflicts are recent, writes go straight to the upsert statement.
    var lastConflict: (table: String, rowsSince: Int)?
    /// Row-codec column order by table, computed once.
    private var rowColumnsCache: [String: [String]] = [:]

    func rowColumns(_ entity: EntityDescriptor) -> [String] {
        if let cached = rowColumnsCache[entity.table] { return cached }
        let columns = entity.rowColumns
        rowColumnsCache[entity.table] = columns
        return columns
    }

    /// How the store opens its database.
    public struct Configuration: Sendable {
        /// How long a write waits for another connection's lock before failing with
        /// `StoreError.database` whose `primary` is `.busy`.
        public var busyTimeout: Duration = .seconds(5)
        /// `busyTimeout` in seconds.
        public var busyTimeoutSeconds: Double { busyTimeout.inSeconds }
        /// Recorded with every transaction this store commits (`app`, `widget`), so readers of the
        /// history can tell writers apart.
        public var author: String?
        /// Whether to record history; nil follows the schema's `history:` key (on by default).
        public var recordsHistory: Bool?
        /// How long history is kept.
        public var historyRetention: HistoryRetention = .forever
        /// Called after a transaction's changes and history are written, just before COMMIT: a
        /// place for tests to kill the process at the worst moment.
        public var beforeCommit: (@Sendable () -> Void)?
        /// Record with temporary triggers even where the pre-update hook exists: tests run the
        /// fallback that SQLite builds without the hook use.
        package var recordsWithTriggers = false
        /// Where the keys of `encrypt` attributes come from (read only when the schema has one).
        public var keys: KeySource = .default
        /// How SQLite keeps the file (docs/runtime.md, "SQLite settings").
        public var sqlite: SQLiteSettings = .applicationStore
        /// How the store talks to PostgreSQL: directly, or through a transaction pooler.
        public var postgres: PostgresSettings = PostgresSettings()
        /// Whether opening applies pending migrations (the default) or only checks that there
        /// are none.
        public var migrations: OpeningMigrations = .apply
        /// Told of what the store does on its own that an app may want to log or count: each
        /// retry after a passing refusal, and giving up (`StoreEvent`). Called on the store's
        /// actor, synchronously: keep it quick (count, or hand the event to a logger).
        public var events: (@Sendable (StoreEvent) -> Void)?

        /// Options for opening a store; every one has a default.
        ///
        ///     let configuration = Store.Configuration(busyTimeout: .seconds(10), author: "widget", migrations: .verify)
        public init(
            busyTimeout: Duration = .seconds(5), author: String? = nil, recordsHistory: Bool? = nil,
            historyRetention: HistoryRetention = .forever, keys: KeySource = .default, sqlite: SQLiteSettings = .applicationStore,
            postgres: PostgresSettings = PostgresSettings(), migrations: OpeningMigrations = .apply, beforeCommit: (@Sendable () -> Void)? = nil,
            events: (@Sendable (StoreEvent) -> Void)? = nil
        ) {
            self.events = events
            self.busyTimeout = busyTimeout
            self.keys = keys
            self.sqlite = sqlite
            self.postgres = postgres
            self.migrations = migrations
            self.author = author
            self.recordsHistory = recordsHistory
            self.historyRetention = historyRetention
            self.beforeCommit = beforeCommit
        }
    }

    /// The file, or nil in memory.
    public let path: String?
    let configuration: Configuration
    /// How long a busy database is retried, in seconds.
    let busySeconds: Double
    /// Records changed rows for the history; nil when history is off.
    let recorder: ChangeRecorder?
    /// Subscribers of `changes()` and `observe`, and what they have seen.
    var observation = ObservationState()
    /// Retries and give-ups since the store opened (`StoreEvent`s, counted).
    ///
    ///     let retries = await store.counters.retries
    public var counters: StoreCounters {
        guard let failover = failoverRecovery?.counters else { return localCounters }
        var total = localCounters
        total.retries += failover.retries
        total.retriesExhausted += failover.retriesExhausted
        total.reconnects = failover.reconnects
        total.outcomeChecks = failover.outcomeChecks
        return total
    }
    /// The retries counted by the store itself (the failover's are counted where it waits).
    var localCounters = StoreCounters()
    /// Waits for a new primary where the adapter's server can fail over (`ServerFailover`).
    let failoverRecovery: FailoverRecovery?
    /// The open write transaction's commit id, and whether its COMMIT was sent: what a lost
    /// server leaves to look up.
    var commitState: (id: String?, sent: Bool, token: Int64?) = (nil, false, nil)
    /// Ciphers of encrypted attributes, by table and column.
    let encryption: [String: [String: FieldCipher]]
    /// The keys of encrypted attributes, when the schema has any.
    let keyRing: KeyRing?
    /// Whether `schemagen_key_check` holds the newest key (the one values are sealed with).
    var newestKeyRecorded = false
    /// Whether the open transaction sealed a value (under the newest key).
    var sealedInTransaction = false
    /// The next implicit key handed to an encrypted row, by table, for the open transaction.
    var implicitKeys: [String: Int64] = [:]
    /// `prepareRow`'s plan by table, for the column list it last saw.
    var rowPlans: [String: RowPlan] = [:]

    /// Opens a store on a database an engine adapter connected to, and brings it to the
    /// schema's version with `migrator` first. A database whose applied migrations differ from
    /// the code's, or that is newer than the code, is refused. Apps call an adapter's
    /// initializer instead: `Store(path:schema:migrations:)` (`PersistentStoreSQLite`).
    ///
    ///     let store = try Store(database: adapter, migrator: migrator, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
    public init(
        database: any StoreDatabase, migrator: Migrator, schema: SchemaDescriptor, migrations: [EmbeddedMigration], configuration: Configuration = Configuration()
    ) throws(StoreError) {
        let abilities = StoreAbilities(database)
        // A server that can fail over is waited for, outside transactions, by a wrapper.
        if let server = abilities.server.failover, configuration.postgres.failoverTimeout > .zero {
            let recovery = FailoverRecovery(server: server, timeout: configuration.postgres.failoverTimeout.inSeconds, events: configuration.events)
            failoverRecovery = recovery
            self.database = FailoverDatabase(database, recovery: recovery)
        } else {
            failoverRecovery = nil
            self.database = database
        }
        self.abilities = abilities
        self.capabilities = database.dialect.capabilities
        self.path = abilities.file?.filePath
        self.configuration = configuration
        let (ring, ciphers) = try Self.ciphers(for: schema, keys: configuration.keys)
        encryption = ciphers
        keyRing = ring
        self.busySeconds = configuration.busyTimeoutSeconds
        self.schema = schema
        self.externalFolder =
            path.map { URL(fileURLWithPath: $0 + ".external") }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString).external")
        externalFolderPath = externalFolder.path
        do {
            // Migrations newer than every one this code embeds: the app is older than its
            // database (another, newer app migrated it), which restoring files cannot fix.
            // One version newer, during an online migration's rollout (expanded, not completed),
            // is the exception: this code's version is still served.
            var rollingOut = false
            if let newest = try migrator.history().last?.version, let known = migrations.map(\.version).max(), newest > known {
                let state = try migrator.onlineState()
                guard newest == known + 1, let state, state.version == newest, state.phase == .expanded || state.phase == .expand else {
                    throw StoreError.databaseNewer(applied: newest, known: known)
                }
                rollingOut = true
            }
            let problems = try migrator.validate().filter { problem in
                if rollingOut, case .missingFile(let version, _) = problem, version == (migrations.map(\.version).max() ?? 0) + 1 { return false }
                return true
            }
            if let problem = problems.first { throw StoreError.migration(problem.description) }
            switch configuration.migrations {
            case _ where rollingOut: break
            case .apply: try migrator.up()
            case .verify:
                let pending = try migrator.pendingUp(.all)
                if !pending.isEmpty {
                    let names = pending.map(\.label).joined(separator: ", ")
                    throw StoreError.migration(
                        "\(pending.count) migration\(pending.count == 1 ? " is" : "s are") not applied (\(names)), and this store only verifies (Configuration.migrations = .verify, or a transaction pooler without postgres.directURL): apply them first with `migrate up`"
                    )
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .migration("\(error)")
        }
        do {
            try database.prepareForUse()
            try failoverRecovery?.server.prepareCommitRecords()
        } catch {
            throw .database(error)
        }
        try Self.prepareExternalValues(database, inDatabase: abilities.keepsExternalValuesInDatabase, schema: schema)
        if let ring { newestKeyRecorded = try Self.checkKeys(ring, database, schema: schema.name) }
        recorder = try Self.startHistory(
            database, abilities: abilities, schema: schema, enabled: configuration.recordsHistory ?? schema.recordsHistory,
            withTriggers: configuration.recordsWithTriggers)
    }

    func entity<M: PersistentModel>(_ type: M.Type) -> EntityDescriptor { M.entity }

    // MARK: - Writing

    /// Inserts a model, or updates the stored one that has the same primary key or the same
    /// value in a unique attribute (an upsert, as SwiftData's `.unique` does). Returns the model
    /// as stored, with its implicit `id` filled in.
    ///
    ///     let stored = try await store.insert(Airport(icao: "KSFO", name: "San Francisco International", city: "San Francisco", countryCode: "US",
    ///                                                latitude: 37.62, longitude: -122.38))
    ///     print(stored.id!)   // the key the database assigned
    @discardableResult
    public func insert<M: PersistentModel>(_ model: M) throws(StoreError) -> M {
        try write { () throws(StoreError) in try upsert(model) }
    }

    /// Inserts or updates many models in one transaction, and returns them as stored.
    ///
    /// The stored models replace the given ones in the array handed in, so an array the caller
    /// no longer uses (`insert(consume flights)`, or one built in the call) is returned in its
    /// own memory: a million rows no longer need a second array of models. An array the caller
    /// still holds is copied once, as any changed Swift array is.
    ///
    ///     let stored = try await store.insert(airports)   // one transaction; keys set in the returned models
    @discardableResult
    public func insert<M: PersistentModel>(_ models: consuming [M]) throws(StoreError) -> [M] {
        var stored = consume models
        // One access to the captured array for the whole loop, not one per model.
        try write { () throws(StoreError) in try upsertInPlace(&stored) }
        return stored
    }

    private func upsertInPlace<M: PersistentModel>(_ models: inout [M]) throws(StoreError) {
        if abilities.server.pipelining != nil, models.count > 1, try pipelineUpserts(&models) { return }
        for index in models.indices { models[index] = try upsert(models[index]) }
    }

    /// Runs `body` in one transaction: everything it writes commits, or nothing does. A write
    /// inside that fails is undone on its own (a savepoint), so `body` may catch it and go on.
    ///
    ///     try await store.transaction { store in
    ///         let airline = try store.insert(Airline(code: "UAL", name: "United Airlines", shortName: "United"))
    ///         var flight = flight
    ///         flight.airlineID = airline.id
    ///         try store.insert(flight)
    ///     }
    ///
    /// The transaction is serializable: it behaves as if no other writer ran meanwhile. On
    /// SQLite it holds the write lock throughout. On PostgreSQL, which lets writers run side by
    /// side, a transaction that conflicts with another is rolled back by the server and `body`
    /// runs again, up to the busy timeout: keep `body` free of effects outside the store.
    ///
    /// Errors are typed: a `StoreError`, with an error of `body`'s own carried by `.body`. When
    /// the conflicts outlast the busy timeout, `.retriesExhausted(attempts:last:)`; each retry is
    /// counted (`counters`) and reported to `Configuration.events`.
    public func transaction<T: Sendable>(_ body: @Sendable (isolated Store) throws -> T) throws(StoreError) -> T {
        guard !isReading else { throw .writeInsideRead("a transaction") }
        guard depth == 0 else {
            depth += 1
            defer { depth -= 1 }
            do { return try body(self) } catch { throw StoreError(thrownByBody: error) }
        }
        let deadline = Date().addingTimeInterval(busySeconds)
        var attempt = 0
        var lostServerAt: Date?
        while true {
            attempt += 1
            try beginWrite(serializable: true)
            depth += 1
            let outcome: Result<T, StoreError>
            do { outcome = .success(try body(self)) } catch { outcome = .failure(StoreError(thrownByBody: error)) }
            // Once, whatever happens next: a failed COMMIT must not count the level twice.
            depth -= 1
            do throws(StoreError) {
                let result = try outcome.get()
                try endWrite(commit: true)
                return result
            } catch {
                try? endWrite(commit: false)
                // The server was lost (a failover): wait for the new primary, then run again,
                // unless the COMMIT went out and took effect.
                if case .database(let failure) = error, failure.kind == .connectionLost, failoverRecovery != nil {
                    let start = lostServerAt ?? Date()
                    lostServerAt = start
                    let committed = try recoverWrite(after: failure, operation: "transaction", attempt: attempt, since: start)
                    if committed, case .success(let result) = outcome {
                        finishCommit()
                        return result
                    }
                    continue
                }
                // Rolled back for a conflict with another writer: nothing of it was written.
                guard case .database(let failure) = error, failure.kind == .busy else { throw error }
                try retry(after: failure, attempt: attempt, of: "transaction", deadline: deadline)
                usleep(UInt32(min(50, attempt * 2)) * 1000 + UInt32.random(in: 0..<1000))
            }
        }
    }

    /// Runs `body` against one consistent snapshot of the database without taking the write
    /// lock, so other processes keep writing meanwhile: for long reads, such as `forEach` over
    /// a large table. Writes inside it are refused (`StoreError.writeInsideRead`); inside a
    /// transaction it simply runs.
    ///
    ///     let delayed = try await store.read { store in try store.count(Flight.self, where: #Predicate { $0.status == "Delayed" }) }
    ///
    /// An error of `body`'s own comes out as `StoreError.body`.
    public func read<T: Sendable>(_ body: @Sendable (isolated Store) throws -> T) throws(StoreError) -> T {
        if depth > 0 || isReading {
            do { return try body(self) } catch { throw StoreError(thrownByBody: error) }
        }
        var attempt = 0
        var lostServerAt: Date?
        while true {
            attempt += 1
            do { try database.beginReadTransaction() } catch { throw StoreError.database(error) }
            isReading = true
            let outcome: Result<T, StoreError>
            do { outcome = .success(try body(self)) } catch { outcome = .failure(StoreError(thrownByBody: error)) }
            isReading = false
            // Nothing was written: ending the read transaction releases the snapshot.
            try? database.commitTransaction()
            // A server lost under the read (a failover): read again from the new primary.
            guard case .failure(.database(let failure)) = outcome, failure.kind == .connectionLost, failoverRecovery != nil else { return try outcome.get() }
            let start = lostServerAt ?? Date()
            lostServerAt = start
            commitState = (nil, false, nil)
            _ = try recoverWrite(after: failure, operation: "read", attempt: attempt, since: start)
        }
    }

    /// `read`, with how fresh its reads must be where the store reads from standbys
    /// (`PostgresSettings.readURL`): `.anyReplica` skips the wait for this store's own writes,
    /// `.primary` reads from the primary. Elsewhere the same as `read`.
    ///
    ///     let flights = try await store.read(from: .anyReplica) { try $0.count(Flight.self) }
    public func read<T: Sendable>(from source: ReadSource, _ body: @Sendable (isolated Store) throws -> T) throws(StoreError) -> T {
        try reading(from: source) { () throws(StoreError) in try read(body) }
    }

    /// Runs `body` with the adapter's reads as fresh as `source` says, then as they were.
    func reading<T>(from source: ReadSource, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        guard let replicas = abilities.server.replicaReading else { return try body() }
        let before = replicas.readSource
        replicas.readSource = source
        defer { replicas.readSource = before }
        return try body()
    }

    /// True inside `read`.
    private var isReading = false

    /// How many writes and transactions are open: the outermost one owns the SQL transaction,
    /// inner ones savepoints.
    private var depth = 0

    func write<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        guard !isReading else { throw .writeInsideRead("a write") }
        if depth == 0 {
            var attempt = 0
            var lostServerAt: Date?
            while true {
                attempt += 1
                try beginWrite()
                depth += 1
                let outcome: Result<T, StoreError>
                do throws(StoreError) { outcome = .success(try body()) } catch { outcome = .failure(error) }
                // Once, whatever happens next: a failed COMMIT must not count the level twice.
                depth -= 1
                do throws(StoreError) {
                    let result = try outcome.get()
                    try endWrite(commit: true)
                    return result
                } catch {
                    try? endWrite(commit: false)
                    // A lost server (a failover): wait for the new primary and write again,
                    // unless the COMMIT went out and took effect.
                    guard case .database(let failure) = error, failure.kind == .connectionLost, failoverRecovery != nil else { throw error }
                    let start = lostServerAt ?? Date()
                    lostServerAt = start
                    let committed = try recoverWrite(after: failure, operation: "write", attempt: attempt, since: start)
                    if committed, case .success(let result) = outcome {
                        finishCommit()
                        return result
                    }
                }
            }
        }
        // Inside a transaction: all of this write, or none of it.
        let marks = (recorded: recorder?.mark ?? 0, created: createdFiles.count, removed: removedFiles.count)
        do { try database.execute("SAVEPOINT store_write;") } catch { throw .database(error) }
        depth += 1
        let outcome: Result<T, StoreError>
        do throws(StoreError) { outcome = .success(try body()) } catch { outcome = .failure(error) }
        // Once, whatever happens next: a RELEASE that fails (its server lost) must not count the
        // level twice, or every later transaction's writes would each commit on their own.
        depth -= 1
        do throws(StoreError) {
            let result = try outcome.get()
            do { try database.execute("RELEASE store_write;") } catch { throw .database(error) }
            return result
        } catch {
            try? database.execute("ROLLBACK TO store_write;")
            try? database.execute("RELEASE store_write;")
            recorder?.rollback(to: marks.recorded)
            for url in createdFiles[marks.created...] { try? FileManager.default.removeItem(at: url) }
            createdFiles.removeSubrange(marks.created...)
            removedFiles.removeSubrange(marks.removed...)
            throw error
        }
    }

    /// Takes the write lock. A busy database is waited for up to the busy timeout; SQLite can
    /// report busy before that (while another connection recovers the WAL), and nothing has
    /// been done yet, so trying again is safe.
    private func beginWrite(serializable: Bool = false) throws(StoreError) {
        recorder?.discard()
        sealedInTransaction = false
        implicitKeys.removeAll()
        commitState = (failoverRecovery == nil ? nil : UUID().uuidString, false, nil)
        try retryingWhileBusy("begin") { () throws(DatabaseFailure) in try database.beginWriteTransaction(serializable: serializable) }
    }

    private func retryingWhileBusy(_ operation: String, _ body: () throws(DatabaseFailure) -> Void) throws(StoreError) {
        let deadline = Date().addingTimeInterval(busySeconds)
        var attempt = 0
        while true {
            attempt += 1
            do {
                try body()
                return
            } catch {
                guard error.kind == .busy else { throw .database(error) }
                try retry(after: error, attempt: attempt, of: operation, deadline: deadline)
                usleep(UInt32(min(50, attempt * 2)) * 1000)
            }
        }
    }

    /// Counts and reports one more try of `operation` after `failure`, or gives up with
    /// `.retriesExhausted` once `deadline` passed.
    private func retry(after failure: DatabaseFailure, attempt: Int, of operation: String, deadline: Date) throws(StoreError) {
        guard Date() < deadline else {
            localCounters.retriesExhausted += 1
            report(StoreEvent(kind: .retriesExhausted, operation: operation, attempt: attempt, failure: failure))
            throw .retriesExhausted(attempts: attempt, last: failure)
        }
        localCounters.retries += 1
        report(StoreEvent(kind: .retry, operation: operation, attempt: attempt, failure: failure))
    }

    private func endWrite(commit: Bool) throws(StoreError) {
        guard commit else {
            if database.isInTransaction { try? database.rollbackTransaction() }
            recorder?.discard()
            settleExternalFiles(committed: false)
            return
        }
        var token: Int64?
        do throws(StoreError) {
            try recordSealingKey()
            // The id a lost server leaves to look up on the new primary.
            if let recovery = failoverRecovery, let id = commitState.id {
                do { try recovery.server.recordCommit(id) } catch { throw .database(error) }
            }
            do {
                var announced = false
                if let recorder, let row = try recorder.historyRow(author: configuration.author) {
                    (token, announced) = try recorder.write(row, database, abilities)
                }
                if !announced { try abilities.history.commitWatching?.announceCommit() }
            } catch {
                throw .database(error)
            }
            if let token { try pruneHistory(newest: token) }
            configuration.beforeCommit?()
            committingToken = token
            commitState.sent = true
            // COMMIT may be busy in rollback-journal mode while readers finish; the transaction
            // is still open then, so committing again is safe. Where a failed statement ends the
            // transaction (PostgreSQL), a failed COMMIT rolled it back: it is not retried here
            // (a second COMMIT would find no transaction and succeed with nothing written).
            if capabilities.failedStatementAbortsTransaction {
                do { try database.commitTransaction() } catch { throw .database(error) }
            } else {
                try retryingWhileBusy("commit") { () throws(DatabaseFailure) in try database.commitTransaction() }
            }
        } catch {
            // A failed commit rolls back (or, past a lost server, is looked up by the caller).
            if database.isInTransaction { try? database.rollbackTransaction() }
            recorder?.discard()
            settleExternalFiles(committed: false)
            throw error
        }
        finishCommit()
    }

    /// The history token of the transaction being committed, for `finishWrite`.
    private var committingToken: Int64? {
        get { commitState.token }
        set { commitState.token = newValue }
    }

    /// What follows a commit: external files kept, the sealing key known recorded, subscribers
    /// told. Also for a COMMIT that went unanswered and was found committed on the new primary.
    func finishCommit() {
        settleExternalFiles(committed: true)
        if sealedInTransaction { newestKeyRecorded = true }
        self.committed(token: commitState.token)
    }

    /// Maps a model's Codable keys to columns: attributes through their `jsonKey`, key
    /// properties (`originID`) through their relationship, the implicit `id`.
    func columns(of entity: EntityDescriptor, row: [String: StoredValue]) -> [(column: String, value: StoredValue)] {
        var result: [(String, StoredValue)] = []
        if entity.hasImplicitKey, let id = row["id"], id != .null { result.append(("id", id)) }
        for column in entity.columns { result.append((column.column, row[column.jsonKey] ?? .null)) }
        for relationship in entity.relationships {
            guard let property = relationship.keyProperty, relationship.foreignKeyColumns.count == 1 else { continue }
            result.append((relationship.foreignKeyColumns[0], row[property] ?? .null))
        }
        return result
    }

    func upsert<M: PersistentModel>(_ model: M) throws(StoreError) -> M {
        let encoded: [StoredValue]?
        do { encoded = try model.encodeStored() } catch { throw .coding("\(error)") }
        if let encoded { return try upsertDirect(encoded, of: model) }
        let entity = M.entity
        let row: [String: StoredValue]
        do { row = try RowEncoder.encode(model) } catch { throw .coding("\(error)") }
        let pairs = columns(of: entity, row: row)
        var names = pairs.map(\.column)
        var values = pairs.map(\.value)
        try prepareRow(entity, columns: &names, values: &values)
        let hasKey = !entity.hasImplicitKey || names.contains("id")
        let statements = upsertSQL(entity, columns: names, hasKey: hasKey)
        do {
            let boundKey = names.firstIndex(of: "id").flatMap { if case .integer(let id) = values[$0] { id } else { nil } }
            guard let id = try runUpsert(statements, columns: names[...], values[...], entity, boundKey: boundKey) else { return model }
            var stored = row
            stored["id"] = .integer(id)
            return try RowDecoder.decode(M.self, from: stored)
        } catch let error as DatabaseFailure {
            throw .database(error)
        } catch {
            throw .coding("\(error)")
        }
    }

    // MARK: - Reading

    /// The model with this primary key (single-column keys), or nil.
    public func model<M: PersistentModel>(_ type: M.Type, key: some Encodable) throws(StoreError) -> M? {
        let entity = M.entity
        guard entity.primaryKey.count == 1 else { throw .coding("\(entity.name) has a composite key; fetch with a filter") }
        let value: StoredValue
        do { value = try RowEncoder.value(key, for: entity.columns.first { $0.column == entity.primaryKey[0] }) } catch { throw .coding("\(error)") }
        return try rows("SELECT \(selection(M.self)) FROM \(identifier: entity.table) WHERE \(identifier: entity.primaryKey[0]) = \(value: value) LIMIT 1", as: M.self).first
    }

    /// How many models of a type are stored:
    ///
    ///     let flights = try await store.count(Flight.self)
    public func count<M: PersistentModel>(_ type: M.Type) throws(StoreError) -> Int {
        do {
            guard case .integer(let count)? = try database.query("SELECT count(*) FROM \(identifier: M.entity.table)" as SQL).first?.first else { return 0 }
            return Int(count)
        } catch {
            throw .database(error)
        }
    }

    // MARK: - Deleting

    /// Deletes every model of a type.
    ///
    ///     try await store.deleteAll(Flight.self)
    public func deleteAll<M: PersistentModel>(_ type: M.Type) throws(StoreError) {
        try write { () throws(StoreError) in
            do throws(DatabaseFailure) { _ = try database.query("DELETE FROM \(identifier: M.entity.table)" as SQL) } catch { throw .database(error) }
        }
    }

    /// What writing rows of one model type needs, worked out on its first write: bulk writes
    /// then find it by the type, without hashing the table name. A class, so that each row
    /// holds one reference instead of copying the descriptor's arrays.
    final class DirectWrite<M: PersistentModel> {
        let entity: EntityDescriptor
        let columns: [String]
        /// No encrypted or external-storage column: the row is written as the model encodes it.
        let isPlain: Bool
        /// With the row's own key, and without it (the database assigns the implicit key).
        let withKey: UpsertStatements
        let withoutKey: UpsertStatements
        /// The written model handed back without decoding its row, when the type allows.
        let storedForm: StoredForm<M>?
        /// A sealed row's upsert when the store chose its implicit key (no conflict on the key).
        let withChosenKey: UpsertStatements

        init(
            entity: EntityDescriptor, columns: [String], isPlain: Bool, withKey: UpsertStatements, withoutKey: UpsertStatements,
            withChosenKey: UpsertStatements, storedForm: StoredForm<M>?
        ) {
            self.entity = entity
            self.columns = columns
            self.isPlain = isPlain
            self.withKey = withKey
            self.withoutKey = withoutKey
            self.withChosenKey = withChosenKey
            self.storedForm = storedForm
        }
    }

    func directWrite<M: PersistentModel>(_ sample: M) -> DirectWrite<M> {
        // Keyed by the type, so the entry is a DirectWrite<M>.
        if let known = directWrites[ObjectIdentifier(M.self)] { return unsafeDowncast(known, to: DirectWrite<M>.self) }
        let entity = M.entity
        let columns = rowColumns(entity)
        let withKey = upsertSQL(entity, columns: columns, hasKey: true)
        // Only an implicit key (the first column) is ever left for the database to assign.
        let write = DirectWrite<M>(
            entity: entity, columns: columns, isPlain: rowPlan(entity, columns: columns).isEmpty, withKey: withKey,
            withoutKey: entity.hasImplicitKey ? upsertSQL(entity, columns: columns.dropFirst(), hasKey: false) : withKey,
            withChosenKey: upsertSQL(entity, columns: columns, hasKey: false),
            storedForm: StoredForm(sample: sample))
        directWrites[ObjectIdentifier(M.self)] = write
        return write
    }

    /// The upsert of a model with a generated row codec: values by position, no Codable.
    /// `encoded` is `model`'s row, consumed: the row bound is the row returned, its key set in
    /// place.
    private func upsertDirect<M: PersistentModel>(_ encoded: consuming [StoredValue], of model: M) throws(StoreError) -> M {
        let write = directWrite(model)
        var stored = encoded
        do {
            let id: Int64?
            if write.isPlain {
                id = try runDirect(write.withKey, orWithoutKey: write.withoutKey, columns: write.columns, values: stored, write.entity)
                if let form = write.storedForm {
                    var written = model
                    form.apply(to: &written, key: id)
                    return written
                }
            } else {
                let entity = write.entity
                // A row that is likely new is inserted as one (sealed under its own key, its
                // external values stored), with no stored row looked up first: only a conflict
                // sends it down the upsert below.
                if presumesNewRows(in: entity.table) {
                    if let inserted = try insertNew(model) { return inserted }
                    lastConflict = (entity.table, 0)
                }
                // The row sealed and keyed by `prepareRow`; the model keeps its plain values.
                var columns = write.columns
                var values = stored
                let choseKey = try prepareRow(entity, columns: &columns, values: &values).choseKey
                // An implicit key (the first column) chosen for an encrypted row is the model's key too.
                if entity.hasImplicitKey, stored.first == .null, columns.count == write.columns.count, values[0] != .null {
                    stored[0] = values[0]
                }
                let statements =
                    columns.count != write.columns.count
                    ? upsertSQL(entity, columns: columns, hasKey: !choseKey)
                    : choseKey ? write.withChosenKey : write.withKey
                id = try runDirect(statements, orWithoutKey: write.withoutKey, columns: columns, values: values, entity)
                if let form = write.storedForm {
                    var written = model
                    let key: Int64? = if let id { id } else if case .integer(let chosen) = stored[0] { chosen } else { nil }
                    form.apply(to: &written, key: key)
                    return written
                }
            }
            if let id { stored[0] = .integer(id) }
            return try decodeDirect(stored, as: M.self)
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseFailure {
            throw .database(error)
        } catch {
            throw .coding("\(error)")
        }
    }

    /// Runs a row's upsert by position. Without an implicit key the database assigns one: the
    /// row is bound from its second value on, through `withoutKey`.
    private func runDirect(
        _ withKey: UpsertStatements, orWithoutKey withoutKey: @autoclosure () -> UpsertStatements,
        columns: [String], values: [StoredValue], _ entity: EntityDescriptor
    ) throws(DatabaseFailure) -> Int64? {
        if entity.hasImplicitKey, values.first == .null {
            return try runUpsert(withoutKey(), columns: columns.dropFirst(), values.dropFirst(), entity, boundKey: nil)
        }
        let boundKey: Int64? = if case .integer(let id)? = values.first { id } else { nil }
        return try runUpsert(withKey, columns: columns[...], values[...], entity, boundKey: boundKey)
    }

    func decodeDirect<M: PersistentModel>(_ values: [StoredValue], as type: M.Type) throws(StoreError) -> M {
        do {
            guard let model = try M.decodeStored(values) else { throw StoreError.coding("\(M.self) has no row codec") }
            return model
        } catch let error as StoreError {
            throw error
        } catch {
            throw .coding("\(error)")
        }
    }

    /// Runs an upsert built by `upsertSQL` and answers the row's implicit key (nil for entities
    /// whose key is their own).
    ///
    /// A plain INSERT goes first: SQLite's ON CONFLICT clause costs a third more even when
    /// nothing conflicts. Only when the key or a unique value is taken does the upsert run, and
    /// while conflicts are recent (bulk updates) it runs directly. Neither uses RETURNING, which
    /// costs SQLite a temporary table per statement (half of a small insert): the key is the
    /// bound one, or the row id the insert gave; only when a unique value turned the write into
    /// an update of a stored row is that row looked up by the value.
    private func runUpsert(_ statements: UpsertStatements, columns: ArraySlice<String>, _ values: ArraySlice<StoredValue>, _ entity: EntityDescriptor, boundKey: Int64?) throws(DatabaseFailure)
        -> Int64?
    {
        if capabilities.failedStatementAbortsTransaction {
            // A failed insert would abort the transaction: the upsert runs at once, and returns
            // the key of the row it wrote (none when it changed nothing). Where the history
            // keeps only an insert's key, the store records its own insert: the trigger leaves
            // it alone, and no image is written and read back.
            if let own = abilities.history.ownInserts, let recorder, !recorder.recordsInsertValues, entity.hasImplicitKey, own.ownInsertTables.contains(entity.table) {
                let (rows, updated) = try own.insertingOwnRow(into: entity.table) { () throws(DatabaseFailure) in try upsertOnEachTarget(statements, values) }
                guard case .integer(let id)? = rows.first?.first else { return try storedRowID(entity, columns: columns, values) ?? boundKey }
                if !updated.contains(id) { recorder.recordOwnInsert(table: entity.table, rowID: id) }
                return id
            }
            let rows = try upsertOnEachTarget(statements, values)
            guard entity.hasImplicitKey else { return nil }
            if case .integer(let id)? = rows.first?.first { return id }
            return try storedRowID(entity, columns: columns, values) ?? boundKey
        }
        if statements.canConflict, presumesNewRows(in: entity.table) {
            do {
                _ = try database.query(statements.insert, values)
                return entity.hasImplicitKey ? boundKey ?? lastInsertedRowID : nil
            } catch  where error.kind == .uniquenessConflict {
                lastConflict = (entity.table, 0)
            }
        }
        guard entity.hasImplicitKey else {
            _ = try database.query(statements.upsert, values)
            return nil
        }
        guard statements.canConflict else {
            _ = try database.query(statements.upsert, values)
            return boundKey ?? lastInsertedRowID
        }
        abilities.bulk.rowIDs?.lastInsertedRowID = 0
        _ = try database.query(statements.upsert, values)
        let inserted = lastInsertedRowID
        if inserted != 0 { return inserted }
        return try storedRowID(entity, columns: columns, values) ?? boundKey
    }

    /// The upsert, and where its one conflict target was not the one taken (the key is new,
    /// but another unique value belongs to a stored row), the upsert on each other target in
    /// turn: what SQLite's several ON CONFLICT clauses do in one statement. Each try but the
    /// last runs in a savepoint, so a conflict does not abort the transaction; the savepoint
    /// travels in the statement's round trip.
    func upsertOnEachTarget(_ statements: UpsertStatements, _ values: ArraySlice<StoredValue>) throws(DatabaseFailure) -> [[StoredValue]] {
        guard !statements.alternatives.isEmpty else { return try database.query(statements.upsert, values) }
        let tries = [statements.upsert] + statements.alternatives
        for sql in tries.dropLast() {
            do {
                if let pipelining = abilities.server.pipelining {
                    return try pipelining.pipeline([(render("SAVEPOINT store_upsert"), []), (sql, values), (render("RELEASE store_upsert"), [])])[1]
                }
                try database.execute("SAVEPOINT store_upsert")
                let rows = try database.query(sql, values)
                try database.execute("RELEASE store_upsert")
                return rows
            } catch  where error.kind == .uniquenessConflict {
                try database.execute("ROLLBACK TO store_upsert; RELEASE store_upsert")
            }
        }
        return try database.query(tries[tries.count - 1], values)
    }

    /// How many writes after a conflict skip the plain insert.
    static let upsertRunLength = 256

    /// Whether a write to `table` tries the plain insert first: no insert into it met a taken
    /// key or unique value in the last `upsertRunLength` writes. Counts the write when not.
    func presumesNewRows(in table: String) -> Bool {
        guard let conflict = lastConflict, conflict.table == table, conflict.rowsSince < Self.upsertRunLength else { return true }
        lastConflict?.rowsSince += 1
        return false
    }

    /// The implicit key of the stored row whose key or unique values `values` hold.
    func storedRowID(_ entity: EntityDescriptor, columns: ArraySlice<String>, _ values: ArraySlice<StoredValue>) throws(DatabaseFailure) -> Int64? {
        // The lookups of a row shape are worked out once: bulk upserts ask per updated row.
        let shape = UpsertShape(table: entity.table, hasKey: columns.startIndex == 0, columnCount: columns.count)
        let lookups: [KeyLookup]
        if let cached = keyLookups[shape] {
            lookups = cached
        } else {
            let targets = [entity.primaryKey] + entity.indexes.filter { $0.kind == .unique }.map(\.columns)
            lookups = targets.compactMap { target in
                let positions = target.compactMap { column in columns.firstIndex(of: column).map { $0 - columns.startIndex } }
                guard positions.count == target.count else { return nil }
                return KeyLookup(
                    positions: positions,
                    sql: render("SELECT \(identifier: "id") FROM \(identifier: entity.table) WHERE \(Self.condition(target, Array(repeating: .null, count: target.count))) LIMIT 1"))
            }
            keyLookups[shape] = lookups
        }
        for lookup in lookups {
            // A one-column key is bound from the row itself.
            let arguments =
                lookup.positions.count == 1
                ? values[(values.startIndex + lookup.positions[0])...(values.startIndex + lookup.positions[0])]
                : ArraySlice(lookup.positions.map { values[values.startIndex + $0] })
            guard !arguments.contains(.null) else { continue }
            if let id = try database.firstInteger(lookup.sql, values: arguments) { return id }
        }
        return nil
    }

    /// Finding a stored row by one of its unique keys: where the key's values are in a row,
    /// and the query.
    struct KeyLookup {
        let positions: [Int]
        let sql: RenderedSQL
    }

    /// The statements that write one row of a shape: a plain INSERT, and INSERT ... ON
    /// CONFLICT ... DO UPDATE with one conflict clause per unique key (the primary key when
    /// given, then every unique index). Without a key or unique index the two are the same.
    struct UpsertStatements {
        let insert: RenderedSQL
        let upsert: RenderedSQL
        /// False without a key or unique index to conflict on: then the two are the same.
        let canConflict: Bool
        /// The insert of a row that may be new: the plain INSERT where a conflict fails that
        /// statement alone (SQLite), else INSERT ... ON CONFLICT DO NOTHING RETURNING the key,
        /// which returns no row when the key or a unique value is taken.
        let insertIfAbsent: RenderedSQL
        /// Where a statement takes one conflict target (PostgreSQL): the upserts on the other
        /// unique keys, tried in turn when `upsert` meets a taken value of another one.
        var alternatives: [RenderedSQL] = []
    }

    /// The statements for an entity and a set of columns, built once.
    func upsertSQL(_ entity: EntityDescriptor, columns: some Collection<String>, hasKey: Bool) -> UpsertStatements {
        let cacheKey = UpsertShape(table: entity.table, hasKey: hasKey, columnCount: columns.count)
        if let cached = upsertStatements[cacheKey] { return cached }
        let insert: SQL = "INSERT INTO \(identifier: entity.table) (\(SQL.identifiers(columns))) VALUES (\(SQL.placeholders(columns.count)))"
        var upsert = insert
        var targets: [[String]] = hasKey ? [entity.primaryKey] : []
        targets += entity.indexes.filter { $0.kind == .unique }.map(\.columns)
        let dialect = database.dialect
        func conflictClause(_ target: [String]) -> SQL { Self.conflictClause(target, entity: entity, columns: columns, dialect: dialect) }
        // Without a connection that reports the key its insert gave, the statement returns it.
        let returning: SQL = entity.hasImplicitKey && !capabilities.lastInsertedKey ? dialect.returning(.identifier("id")) : ""
        var alternatives: [RenderedSQL] = []
        if capabilities.failedStatementAbortsTransaction {
            // PostgreSQL takes one conflict target per statement: the key when the row has one,
            // then each other unique key in a statement of its own.
            alternatives = targets.dropFirst().map { render(insert + conflictClause($0) + returning) }
            targets = Array(targets.prefix(1))
        }
        for target in targets { upsert += conflictClause(target) }
        let insertIfAbsent: SQL =
            capabilities.failedStatementAbortsTransaction
            ? insert + dialect.onConflict(nil, set: nil) + dialect.returning(SQL.identifiers(entity.hasImplicitKey ? ["id"] : entity.primaryKey))
            : insert + dialect.onConflict(nil, set: nil) + returning
        var statements = UpsertStatements(
            insert: render(insert + returning), upsert: render(upsert + returning), canConflict: !targets.isEmpty, insertIfAbsent: render(insertIfAbsent))
        statements.alternatives = alternatives
        upsertStatements[cacheKey] = statements
        return statements
    }

    /// ` ON CONFLICT (target) DO UPDATE SET` every written column but the key and the target's
    /// (they already hold the written values: setting them again would only make SQLite rewrite
    /// the indexes that hold them), or `DO NOTHING` when none is left.
    static func conflictClause(_ target: [String], entity: EntityDescriptor, columns: some Collection<String>, dialect: any SQLDialect) -> SQL {
        let changing = columns.filter { !entity.primaryKey.contains($0) && !target.contains($0) }
        return dialect.onConflict(target, set: changing.isEmpty ? nil : changing.map { "\(identifier: $0) = \(dialect.proposed($0))" })
    }

    /// A WHERE clause matching the stored row an upsert of `row` would replace.
    func conflictCondition(_ entity: EntityDescriptor, row: [String: StoredValue]) -> SQL {
        conflictCondition(entity, values: Dictionary(columns(of: entity, row: row).map { ($0.column, $0.value) }, uniquingKeysWith: { a, _ in a }))
    }

    /// The same from values by column name.
    func conflictCondition(_ entity: EntityDescriptor, values: [String: StoredValue]) -> SQL {
        var targets: [[String]] = [entity.primaryKey]
        targets += entity.indexes.filter { $0.kind == .unique }.map(\.columns)
        var clauses: [SQL] = []
        for target in targets {
            let targetValues = target.map { values[$0] ?? .null }
            guard !targetValues.contains(.null) else { continue }
            clauses.append("(\(Self.condition(target, targetValues)))")
        }
        return clauses.isEmpty ? "1 = 0" : .list(clauses, separator: " OR ")
    }

    /// A statement's text in the database's dialect, for statements run many times with values
    /// bound in order (built with `SQL.placeholders`).
    func render(_ sql: SQL) -> RenderedSQL { sql.statement(for: database.dialect).statement }
}

extension Duration {
    /// The duration in seconds, as timeouts and ages are compared with dates.
    var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension EntityDescriptor {
    /// True when a unique index other than the primary key can make an insert update another row.
    var hasUniqueIndex: Bool { indexes.contains { $0.kind == .unique } }
}
