import PersistentStoreCore
import SQLDialects

/// How the store talks to a PostgreSQL server: directly (the default), or through a
/// transaction-pooling pgbouncer. docs/runtime.md ("Connections") explains each setting.
///
///     let configuration = Store.Configuration(postgres: PostgresSettings(transactionPooler: true, directURL: "postgres://app@db.internal/app"))
public struct PostgresSettings: Sendable, Hashable {
    /// The store's URL leads to a pooler that hands each transaction to whichever server
    /// connection is free (pgbouncer's `pool_mode = transaction`). The store then keeps no state
    /// in its session: statements are sent unnamed instead of prepared once, and nothing is
    /// `SET`. LISTEN and the migrator's session lock need a session of their own: they use
    /// `directURL`, and without one opening only verifies the migrations.
    public var transactionPooler: Bool
    /// A direct connection to the server, not through the pooler: where the listener that hears
    /// other connections' commits connects and where opening applies migrations. Nil: the
    /// store's URL.
    public var directURL: String?
    /// How long a call waits for a writable primary after the store lost its server (a
    /// failover, a restart) before it fails with `StoreError.noWritablePrimary`. Meanwhile the
    /// store connects again through its URL (all of a multi-host URL's hosts), runs again what
    /// had not reached COMMIT, and looks up whether a COMMIT that went unanswered took effect.
    /// Zero: a lost server fails the call in progress, as before this setting.
    public var failoverTimeout: Duration = .seconds(60)
    /// Standbys to read from (`postgres://app@db2,db3/shop?target_session_attrs=prefer-standby`):
    /// reads outside write transactions (fetch, count, forEach, search, `read { }`) go there
    /// once the standby has replayed this store's own writes, or to the primary when it has not
    /// within `replicaWait`. Writes, transactions and the history that `changes()` and
    /// `observe` read always go to the primary. Nil: every read goes to the primary.
    public var readURL: String?
    /// How long a read waits for a standby to replay this store's last write before it reads
    /// from the primary instead.
    public var replicaWait: Duration = .milliseconds(200)

    /// Direct by default; `transactionPooler` with the server's own URL behind a pgbouncer.
    ///
    ///     let settings = PostgresSettings(transactionPooler: true, directURL: "postgres://app@db.internal:5432/app")
    public init(transactionPooler: Bool = false, directURL: String? = nil) {
        self.transactionPooler = transactionPooler
        self.directURL = directURL
    }

    /// The same, with how long a lost server is waited for.
    ///
    ///     let settings = PostgresSettings(failoverTimeout: .seconds(30))
    public init(transactionPooler: Bool = false, directURL: String? = nil, failoverTimeout: Duration) {
        self.init(transactionPooler: transactionPooler, directURL: directURL)
        self.failoverTimeout = failoverTimeout
    }

    /// The same, reading from standbys.
    ///
    ///     let settings = PostgresSettings(readURL: "postgres://app@db2,db3/shop?target_session_attrs=prefer-standby")
    public init(
        transactionPooler: Bool = false, directURL: String? = nil, failoverTimeout: Duration = .seconds(60), readURL: String?, replicaWait: Duration = .milliseconds(200)
    ) {
        self.init(transactionPooler: transactionPooler, directURL: directURL, failoverTimeout: failoverTimeout)
        self.readURL = readURL
        self.replicaWait = replicaWait
    }
}

extension PostgresSettings: StoreEngineSettings {
    /// PostgreSQL servers.
    public static var engine: SQLDialectName { .postgres }
    /// A direct connection, a 60-second failover wait, every read on the primary.
    public static var standard: PostgresSettings { PostgresSettings() }
}

extension Store.Configuration {
    /// How the store talks to PostgreSQL: directly, or through a transaction pooler; `PostgresSettings()` unless set.
    public var postgres: PostgresSettings {
        get { self[engine: PostgresSettings.self] }
        set { self[engine: PostgresSettings.self] = newValue }
    }

    /// Options for opening a store, with PostgreSQL's settings; every other one has a default.
    ///
    ///     let configuration = Store.Configuration(author: "api", postgres: PostgresSettings(failoverTimeout: .seconds(30)))
    public init(
        busyTimeout: Duration = .seconds(5), author: String? = nil, recordsHistory: Bool? = nil,
        historyRetention: HistoryRetention = .forever, keys: KeySource = .default, postgres: PostgresSettings, migrations: OpeningMigrations = .apply,
        beforeCommit: (@Sendable () -> Void)? = nil, events: (@Sendable (StoreEvent) -> Void)? = nil
    ) {
        self.init(
            busyTimeout: busyTimeout, author: author, recordsHistory: recordsHistory, historyRetention: historyRetention, keys: keys, migrations: migrations,
            beforeCommit: beforeCommit, events: events)
        self.postgres = postgres
    }
}
