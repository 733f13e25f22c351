import DatabaseLocation
import FieldEncryption
import Foundation
import MigratorCore
import SQLDialects
import SchemaMetadata

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
    var files = ExternalFileChanges()
    /// Statements and write plans by shape, built once and reused by every write.
    var statements = StatementCache()
    func rowColumns(_ entity: EntityDescriptor) -> [String] {
        if let cached = self.statements.rowColumns[entity.table] { return cached }
        let columns = entity.rowColumns
        self.statements.rowColumns[entity.table] = columns
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
        /// Each engine's settings, set through its adapter's property (`sqlite`, `postgres`) or
        /// `self[engine:]`; an engine without an entry uses its standard settings.
        var engineSettings: [SQLDialectName: any StoreEngineSettings] = [:]
        /// Whether opening applies pending migrations (the default) or only checks that there
        /// are none.
        public var migrations: OpeningMigrations = .apply
        /// Told of what the store does on its own that an app may want to log or count: each
        /// retry after a passing refusal, and giving up (`StoreEvent`). Called on the store's
        /// actor, synchronously: keep it quick (count, or hand the event to a logger).
        public var events: (@Sendable (StoreEvent) -> Void)?

        /// Options for opening a store; every one has a default. Each engine's adapter adds the
        /// same initializer with its settings (`sqlite:`, `postgres:`).
        ///
        ///     let configuration = Store.Configuration(busyTimeout: .seconds(10), author: "widget", migrations: .verify)
        public init(
            busyTimeout: Duration = .seconds(5), author: String? = nil, recordsHistory: Bool? = nil,
            historyRetention: HistoryRetention = .forever, keys: KeySource = .default, migrations: OpeningMigrations = .apply,
            beforeCommit: (@Sendable () -> Void)? = nil, events: (@Sendable (StoreEvent) -> Void)? = nil
        ) {
            self.events = events
            self.busyTimeout = busyTimeout
            self.keys = keys
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
    /// The open write transaction's way to its COMMIT: what a lost server leaves to look up.
    var commit = CommitTracker()
    /// Ciphers of encrypted attributes, by table and column.
    let encryption: [String: [String: FieldCipher]]
    /// The keys of encrypted attributes, when the schema has any.
    let keyRing: KeyRing?
    /// Which key encrypted values are sealed with, and the implicit keys handed out.
    var sealing = SealingState()
    /// True inside `read`.
    var isReading = false
    /// How many writes and transactions are open: the outermost one owns the SQL transaction,
    /// inner ones savepoints.
    var depth = 0
    /// The author the open transaction's history row names instead of the configured one
    /// (`transaction(author:_:)`: a sync client's pulled changes).
    var transactionAuthor: String?

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
        if let server = abilities.server.failover, server.failoverTimeout > .zero {
            let recovery = FailoverRecovery(server: server, timeout: server.failoverTimeout.inSeconds, events: configuration.events)
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
        if let ring { sealing.newestKeyRecorded = try Self.checkKeys(ring, database, schema: schema.name) }
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
