// `import Migrator` is what apps wrote before the migrator was split into an engine-neutral
// core and one adapter per engine: it still gives the migrator with both engines' adapters
// (`Migrator(connection:schema:embedded:)`, `PostgresMigrationDatabase`) and `DatabaseOpener`,
// so code written from those docs compiles unchanged. An app that links one engine only names
// it instead: `MigratorSQLite` or `MigratorPostgres` (with `MigratorCore`).
@_exported import MigratorCore
@_exported import MigratorPostgres
@_exported import MigratorSQLite
