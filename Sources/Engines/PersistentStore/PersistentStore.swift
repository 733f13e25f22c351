// `import PersistentStore` is what apps wrote before the store was split into an engine-neutral
// core and one adapter per engine: it still gives the whole store on SQLite (`Store(path:)`),
// so code written from those docs compiles unchanged. New code names the engine it links:
// `PersistentStoreSQLite`, or `PersistentStorePostgres` (which includes SQLite's adapter).
@_exported import PersistentStoreCore
@_exported import PersistentStoreSQLite
