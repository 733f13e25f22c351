import PersistentStoreCore
import SchemaKit
import SchemaMetadata

/// What the studio serves, worked out once when it starts: per schema, the version the
/// database is at, that version's schema and metadata, the migration state, and the open store.
public struct StudioCatalog: Sendable {
    /// One schema of the database.
    public struct Entry: Sendable {
        /// The schema as its version recorded it (the text beside its migration).
        public var schema: Schema
        /// The metadata the store reads it with (encrypted columns locked without a key).
        public var descriptor: SchemaDescriptor
        /// The newest version the schema file says; the database may be behind it.
        public var newestVersion: Int
        public var migrations: MigrationState
        public var store: Store
        /// Encrypted attributes are shown locked: no key was given.
        public var encryptionLocked: Bool

        public init(schema: Schema, descriptor: SchemaDescriptor, newestVersion: Int, migrations: MigrationState, store: Store, encryptionLocked: Bool) {
            self.schema = schema
            self.descriptor = descriptor
            self.newestVersion = newestVersion
            self.migrations = migrations
            self.store = store
            self.encryptionLocked = encryptionLocked
        }
    }

    /// The schema's migrations as the database's history has them.
    public struct MigrationState: Sendable, Hashable {
        public var applied: [Int]
        public var pending: [Int]
        /// Versions whose online migration is expanded and not completed: both are served.
        public var servedVersions: [Int]

        public init(applied: [Int], pending: [Int], servedVersions: [Int] = []) {
            self.applied = applied
            self.pending = pending
            self.servedVersions = servedVersions
        }
    }

    public var entries: [Entry]
    /// Where the database is, for the page title: a path, or a URL without its password.
    public var databaseLabel: String
    /// Edits are refused (`--read-only`, a PostgreSQL URL without `--allow-writes`, a locked key,
    /// or a database behind its schema).
    public var readOnly: Bool
    /// Why, when it is read-only as a whole.
    public var readOnlyReason: String?
    /// The schema site (`schemagen docs`) by path, served under `/site/`: each entity's
    /// diagram and docs, linked from its pages.
    public var site: [String: String]

    public init(entries: [Entry], databaseLabel: String, readOnly: Bool, readOnlyReason: String? = nil, site: [String: String] = [:]) {
        self.entries = entries
        self.databaseLabel = databaseLabel
        self.readOnly = readOnly
        self.readOnlyReason = readOnlyReason
        self.site = site
    }

    func entry(named name: String) -> Entry? { entries.first { $0.schema.name == name } }
}

extension SchemaDescriptor {
    /// The same metadata with encrypted columns read as they are stored (sealed bytes), for a
    /// store opened without the key: the studio shows them locked.
    public func lockingEncryptedColumns() -> SchemaDescriptor {
        SchemaDescriptor(
            name: name, version: version, recordsHistory: recordsHistory, recordsInsertValues: recordsInsertValues,
            entities: entities.map { entity in
                EntityDescriptor(
                    name: entity.name, table: entity.table, renamedFrom: entity.renamedFrom, primaryKey: entity.primaryKey, hasImplicitKey: entity.hasImplicitKey,
                    columns: entity.columns.map { column in
                        guard column.isEncrypted else { return column }
                        return ColumnDescriptor(
                            property: column.property, column: column.column, jsonKey: column.jsonKey, storage: .blob, swiftType: column.swiftType, isOptional: column.isOptional,
                            isPrimaryKey: column.isPrimaryKey, isUnique: column.isUnique, isIndexed: column.isIndexed, isSearchable: false,
                            usesExternalStorage: column.usesExternalStorage, preservesValueOnDeletion: column.preservesValueOnDeletion, renamedFrom: column.renamedFrom)
                    }, relationships: entity.relationships, indexes: entity.indexes, sync: entity.sync)
            })
    }

    /// Whether any column is encrypted.
    public var hasEncryptedColumns: Bool { entities.contains { $0.columns.contains(where: \.isEncrypted) } }
}
