import Foundation

/// One numbered migration: its SQL both ways and where it came from. The one record of a
/// migration everywhere: read from a migration folder by the migrator, compiled into generated
/// code (`FlightsSchema.migrations`) so an application needs no Migrations folder, and handed to
/// templates by the generator.
public struct MigrationScript: Sendable, Hashable {
    /// Its number, from 1: the schema version it brings the database to.
    public var version: Int
    /// Its name after the number: `add_airports_elevation`.
    public var name: String
    /// The SQL that applies it.
    public var up: String
    /// The SQL that reverts it.
    public var down: String
    /// Where it came from, for messages (`Migrations/Flights/0002_add_x.up.sql`).
    public var upFile: String
    /// Where the down SQL came from, for messages.
    public var downFile: String
    /// The contract phase, for an online PostgreSQL migration (`up` is then its expand phase and
    /// `down` the expand's rollback); nil for migrations applied whole.
    public var contract: String? = nil
    /// Where the contract SQL came from, for messages.
    public var contractFile: String? = nil
    /// The tables after this migration, each with its column names, from the migration's
    /// snapshot: what `migrate baseline` and `repair` look for in a database. Nil where no
    /// snapshot travels with the migration (the copies compiled into generated code).
    public var objects: [String: [String]]?
    /// The same migration in the other dialects whose folders hold it (`postgres`), by dialect
    /// name: generated code embeds them all, so one `<Schema>Schema.migrations` serves every
    /// engine the store opens.
    public var dialects: [String: DialectSQL]

    /// A migration's SQL in one dialect.
    public struct DialectSQL: Sendable, Hashable {
        /// The SQL that applies it.
        public var up: String
        /// The SQL that reverts it.
        public var down: String
        /// The contract phase of an online migration (`up` expands, `down` rolls back); nil
        /// for a migration applied whole.
        public var contract: String?

        /// Both directions of a migration in a dialect.
        ///
        ///     MigrationScript.DialectSQL(up: "ALTER TABLE ...;", down: "ALTER TABLE ...;")
        public init(up: String, down: String, contract: String? = nil) {
            self.up = up
            self.down = down
            self.contract = contract
        }
    }

    /// A migration; the file names default to `NNNN_name.up.sql` and `.down.sql`.
    ///
    ///     let script = MigrationScript(version: 2, name: "add_airports_elevation", up: "ALTER TABLE ...;", down: "ALTER TABLE ...;")
    ///     script.upFile   // "0002_add_airports_elevation.up.sql"
    public init(
        version: Int, name: String, up: String, down: String, upFile: String? = nil, downFile: String? = nil,
        objects: [String: [String]]? = nil, dialects: [String: DialectSQL] = [:]
    ) {
        self.objects = objects
        self.dialects = dialects
        self.version = version
        self.name = name
        self.up = up
        self.down = down
        let fileName = MigrationFileName(number: version, name: name)
        self.upFile = upFile ?? fileName.upFile
        self.downFile = downFile ?? fileName.downFile
    }

    /// Its number and name, and the files they name in a migration folder.
    public var fileName: MigrationFileName { MigrationFileName(number: version, name: name) }

    /// `0002_add_airports_elevation`.
    public var label: String { fileName.prefix }

    /// This migration as written for `dialect` (`postgres`), with its files named in that
    /// dialect's subfolder; nil when that dialect's folder does not hold it.
    ///
    ///     let postgres = FlightsSchema.migrations.compactMap { $0.variant(for: "postgres") }
    public func variant(for dialect: String) -> MigrationScript? {
        guard let sql = dialects[dialect] else { return nil }
        var script = MigrationScript(
            version: version, name: name, up: sql.up, down: sql.down, upFile: dialect + "/" + fileName.upFile,
            downFile: dialect + "/" + fileName.downFile, objects: objects)
        script.contract = sql.contract
        script.contractFile = sql.contract == nil ? nil : dialect + "/" + fileName.contractFile
        return script
    }
}

/// A migration's place in its folder: its number and name, and the names of its files
/// (`0002_add_x.up.sql`, `.down.sql`, `.schema.json`). The one place that naming is written:
/// migration folders list these, and a `MigrationScript` read from one carries its own.
public struct MigrationFileName: Sendable, Hashable {
    /// The number, from 1.
    public var number: Int
    /// The name after the number.
    public var name: String

    /// A migration's name in a folder.
    ///
    ///     MigrationFileName(number: 2, name: "add_x").upFile   // "0002_add_x.up.sql"
    public init(number: Int, name: String) {
        self.number = number
        self.name = name
    }

    /// `0002_add_x`.
    public var prefix: String { String(format: "%04d_%@", number, name) }
    /// `0002_add_x.up.sql`.
    public var upFile: String { prefix + ".up.sql" }
    /// `0002_add_x.down.sql`.
    public var downFile: String { prefix + ".down.sql" }
    /// `0002_add_x.contract.sql`: the contract phase of an online PostgreSQL migration (whose
    /// `up.sql` expands and `down.sql` rolls the expand back).
    public var contractFile: String { prefix + ".contract.sql" }
    /// `0002_add_x.schema.json`: the relational model after the migration.
    public var snapshotFile: String { prefix + ".schema.json" }
    /// `0002_add_x.schema.yaml`: the schema file as it was written at this version, from which
    /// the version's models are generated for targets that keep every version (SwiftData's
    /// `VersionedSchema` chain, Core Data's model bundle).
    public var sourceFile: String { prefix + ".schema.yaml" }
    /// `0002_add_x.swiftdata.sum`: the digests of the SwiftData models this version brought, as
    /// `generate --target swiftdata` first wrote them, so a later run cannot change a released
    /// version unnoticed.
    public var releasedModelsFile: String { prefix + ".swiftdata.sum" }
    /// Every file of the migration, as `migrations.sum` lists them.
    public var files: [String] { [downFile, snapshotFile, upFile] }
    /// Files a migration may have: `migrations.sum` lists them when present.
    public var optionalFiles: [String] { [contractFile, sourceFile, releasedModelsFile] }
}

/// The name generated code uses for its embedded migrations (`[EmbeddedMigration]`): the same type.
public typealias EmbeddedMigration = MigrationScript

/// One version of a schema as generated code declares it: its descriptor, and the migrations
/// that bring a database to it. Generated code lists a synced schema's earlier versions so that a
/// sync server can open a store of each (`<Schema>Schema.earlierVersions`).
public struct SchemaVersionMetadata: Sendable {
    /// The schema at that version.
    public let descriptor: SchemaDescriptor
    /// The migrations up to that version, oldest first.
    public let migrations: [EmbeddedMigration]

    /// A version's metadata.
    ///
    ///     let v2 = SchemaVersionMetadata(descriptor: TodoSchema.V2.descriptor, migrations: Array(TodoSchema.migrations.prefix(2)))
    public init(descriptor: SchemaDescriptor, migrations: [EmbeddedMigration]) {
        self.descriptor = descriptor
        self.migrations = migrations
    }
}
