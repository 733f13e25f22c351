import SQLDialects

/// One engine's settings in `Store.Configuration`, declared by that engine's adapter
/// (`SQLiteSettings` in `PersistentStoreSQLite`, `PostgresSettings` in
/// `PersistentStorePostgres`), so the core names no engine. Each adapter gives the
/// configuration a property for its own (`configuration.sqlite`, `configuration.postgres`).
///
///     var configuration = Store.Configuration()
///     configuration[engine: SQLiteSettings.self].cacheSize = 16 << 20   // the same as configuration.sqlite.cacheSize
public protocol StoreEngineSettings: Sendable {
    /// The engine these settings are for: one entry per engine in the registry.
    static var engine: SQLDialectName { get }
    /// What a configuration holds until the app sets its own.
    static var standard: Self { get }
}

extension Store.Configuration {
    /// The settings of one engine: those set, else the engine's standard ones.
    public subscript<Settings: StoreEngineSettings>(engine settings: Settings.Type) -> Settings {
        get {
            guard let stored = engineSettings[Settings.engine] else { return Settings.standard }
            // Two settings types for one engine would lose the app's values here.
            assert(stored is Settings, "\(type(of: stored)) and \(Settings.self) both claim \(Settings.engine)")
            return stored as? Settings ?? Settings.standard
        }
        set { engineSettings[Settings.engine] = newValue }
    }
}
