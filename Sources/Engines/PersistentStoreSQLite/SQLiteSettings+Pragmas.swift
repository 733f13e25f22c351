import PersistentStoreCore

extension SQLiteSettings {
    /// The PRAGMAs that apply these settings, as SQLite's adapter runs them when the store opens
    /// (`mmap_size` only for a file).
    ///
    ///     SQLiteSettings.sqliteDefaults.pragmas(inMemory: false)   // PRAGMA synchronous = FULL; PRAGMA cache_size = -2048; ...
    public func pragmas(inMemory: Bool) -> String {
        var statements = [
            "PRAGMA synchronous = \(synchronous.rawValue);",
            // A negative cache size counts KiB.
            "PRAGMA cache_size = -\(max(64, cacheSize / 1024));",
            "PRAGMA temp_store = \(temporaryStorageInMemory ? "MEMORY" : "DEFAULT");",
        ]
        if !inMemory { statements.append("PRAGMA mmap_size = \(max(0, memoryMapSize));") }
        return statements.joined(separator: " ")
    }
}
