import PersistentStoreCore
import SQLDialects

/// How the store has SQLite keep its file: the settings an application store wants, each
/// overridable at open. docs/runtime.md ("SQLite settings") gives each one's trade-off. The
/// PRAGMAs that apply them are SQLite's adapter's (`pragmas(inMemory:)`, in `PersistentStoreSQLite`).
public struct SQLiteSettings: Sendable, Hashable {
    /// When SQLite waits for the disk (`PRAGMA synchronous`).
    public enum Synchronous: String, Sendable, Hashable {
        /// No fsync at all: a power loss or OS crash can corrupt the file.
        case off = "OFF"
        /// In WAL mode, fsync at checkpoints only: a power loss can undo the last
        /// transactions committed before it, never corrupt the file.
        case normal = "NORMAL"
        /// fsync at every commit: a committed transaction survives a power loss.
        case full = "FULL"
        /// As `full`, and the directory is synced after a rollback journal is deleted.
        case extra = "EXTRA"
    }

    /// `PRAGMA synchronous`.
    public var synchronous: Synchronous
    /// The page cache, in bytes (`PRAGMA cache_size`). SQLite's default is 2 MiB.
    public var cacheSize: Int
    /// Temporary tables and indexes (sorting, big queries) in memory rather than in files.
    public var temporaryStorageInMemory: Bool
    /// Bytes of the file read through memory mapping (`PRAGMA mmap_size`); 0 turns it off.
    public var memoryMapSize: Int

    /// Settings of your own; start from `.applicationStore` and change one.
    ///
    ///     let settings = SQLiteSettings(synchronous: .full, cacheSize: 16 << 20, temporaryStorageInMemory: true, memoryMapSize: 0)
    public init(synchronous: Synchronous, cacheSize: Int, temporaryStorageInMemory: Bool, memoryMapSize: Int) {
        self.synchronous = synchronous
        self.cacheSize = cacheSize
        self.temporaryStorageInMemory = temporaryStorageInMemory
        self.memoryMapSize = memoryMapSize
    }

    /// The store's default: WAL (always), synchronous NORMAL, a 64 MiB cache, temporary data in
    /// memory, and 256 MiB memory-mapped.
    public static let applicationStore = SQLiteSettings(synchronous: .normal, cacheSize: 64 << 20, temporaryStorageInMemory: true, memoryMapSize: 256 << 20)

    /// SQLite's own defaults as Debian builds it (WAL aside): FULL, 2 MiB, files, no mapping.
    public static let sqliteDefaults = SQLiteSettings(synchronous: .full, cacheSize: 2 << 20, temporaryStorageInMemory: false, memoryMapSize: 0)
}

extension SQLiteSettings: StoreEngineSettings {
    /// SQLite files.
    public static var engine: SQLDialectName { .sqlite }
    /// The application store's settings (`applicationStore`).
    public static var standard: SQLiteSettings { .applicationStore }
}

extension Store.Configuration {
    /// How SQLite keeps the file (docs/runtime.md, "SQLite settings"): `SQLiteSettings.applicationStore` unless set.
    public var sqlite: SQLiteSettings {
        get { self[engine: SQLiteSettings.self] }
        set { self[engine: SQLiteSettings.self] = newValue }
    }

    /// Options for opening a store, with SQLite's settings; every other one has a default.
    ///
    ///     let configuration = Store.Configuration(author: "app", sqlite: .sqliteDefaults)
    public init(
        busyTimeout: Duration = .seconds(5), author: String? = nil, recordsHistory: Bool? = nil,
        historyRetention: HistoryRetention = .forever, keys: KeySource = .default, sqlite: SQLiteSettings, migrations: OpeningMigrations = .apply,
        beforeCommit: (@Sendable () -> Void)? = nil, events: (@Sendable (StoreEvent) -> Void)? = nil
    ) {
        self.init(
            busyTimeout: busyTimeout, author: author, recordsHistory: recordsHistory, historyRetention: historyRetention, keys: keys, migrations: migrations,
            beforeCommit: beforeCommit, events: events)
        self.sqlite = sqlite
    }

    /// Options with SQLite's settings and another engine's (`postgres: PostgresSettings(...)`),
    /// for an app that opens either engine, as the one initializer of earlier releases took them.
    ///
    ///     let configuration = Store.Configuration(author: "app", sqlite: .applicationStore, postgres: PostgresSettings(failoverTimeout: .seconds(30)))
    public init<Other: StoreEngineSettings>(
        busyTimeout: Duration = .seconds(5), author: String? = nil, recordsHistory: Bool? = nil,
        historyRetention: HistoryRetention = .forever, keys: KeySource = .default, sqlite: SQLiteSettings, postgres: Other,
        migrations: OpeningMigrations = .apply, beforeCommit: (@Sendable () -> Void)? = nil, events: (@Sendable (StoreEvent) -> Void)? = nil
    ) {
        self.init(
            busyTimeout: busyTimeout, author: author, recordsHistory: recordsHistory, historyRetention: historyRetention, keys: keys, sqlite: sqlite,
            migrations: migrations, beforeCommit: beforeCommit, events: events)
        self[engine: Other.self] = postgres
    }
}
