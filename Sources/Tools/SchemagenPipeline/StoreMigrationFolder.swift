import Diagnostics
import Foundation
import MigrationFiles
import RelationalModel
import SQLDialects
import SchemaKit
import SchemaMetadata

/// The runtime store's own migrations (`StoreTableMigrations`) in a project's migrations root:
/// `generate` writes the ones missing from `Migrations/SchemagenStore/postgres/` when a schema's
/// store keeps history on PostgreSQL, and never rewrites one already there (it is released, as
/// an app's migrations are).
public enum StoreMigrationFolder {
    /// Diagnostic codes about the folder.
    public enum Code: String, DiagnosticCode {
        /// A schema takes the name the store's migrations are recorded under.
        case reservedSchemaName = "store-migrations-reserved-name"
        /// The folder holds a migration under a number the toolkit gives another.
        case foreign = "store-migrations-foreign"
    }

    /// The folder under `root`.
    ///
    ///     StoreMigrationFolder.directory(root: "Migrations").path   // Migrations/SchemagenStore/postgres
    public static func directory(root: String, files: any MigrationFileReading = DiskFiles()) -> MigrationDirectory {
        MigrationDirectory.folder(schema: StoreTableMigrations.schema, root: root, dialect: .postgres, files: files)
    }

    /// A migration's path in the folder, without its extensions.
    ///
    ///     StoreMigrationFolder.path(of: StoreTableMigrations.postgres[0], root: "Migrations")   // .../0001_create_history
    public static func path(of migration: StoreTableMigrations.Migration, root: String) -> String {
        directory(root: root).path + "/" + migration.entry.prefix
    }

    /// Whether any of these schemas keeps its history on PostgreSQL.
    ///
    ///     StoreMigrationFolder.isNeeded(schemas, dialects: configuration.dialects(of:))
    public static func isNeeded(_ schemas: [Schema], dialects: (Schema) -> [SQLDialectName]) -> Bool {
        schemas.contains { $0.recordsHistory && dialects($0).contains(.postgres) }
    }

    /// The migrations the folder lacks, and its problems: a schema of the store's reserved name,
    /// or a number of the folder that names another migration.
    ///
    ///     let (missing, problems) = StoreMigrationFolder.pending(schemas, root: "Migrations")
    public static func pending(_ schemas: [Schema], root: String, files: any MigrationFileReading = DiskFiles()) -> (
        missing: [StoreTableMigrations.Migration], problems: [Diagnostic]
    ) {
        var problems: [Diagnostic] = schemas.filter { $0.name == StoreTableMigrations.schema }.map { schema in
            Diagnostic(
                .error, code: Code.reservedSchemaName,
                message: "the schema name '\(StoreTableMigrations.schema)' is the store's own (its migrations are recorded under it): rename the schema",
                at: SourceLocation(file: schema.sourcePath, line: 1, column: 1))
        }
        let folder = directory(root: root, files: files)
        let present = Dictionary(folder.entries().map { ($0.number, $0) }, uniquingKeysWith: { first, _ in first })
        var missing: [StoreTableMigrations.Migration] = []
        for migration in StoreTableMigrations.postgres {
            guard let found = present[migration.entry.number] else {
                missing.append(migration)
                continue
            }
            if found.name != migration.entry.name {
                problems.append(
                    Diagnostic(
                        .error, code: Code.foreign,
                        message:
                            "\(folder.path)/\(found.upFile) is not the store's migration \(migration.entry.prefix): the folder is the toolkit's; move that migration to a schema of the app's",
                        at: SourceLocation(file: folder.path + "/" + found.upFile, line: 1, column: 1)))
            }
        }
        return (missing, problems)
    }

    /// Writes the migrations into the folder, each with the snapshot of the store's tables; the
    /// path of each written one (without its extensions).
    ///
    ///     let written = try StoreMigrationFolder.write(missing, root: "Migrations")
    public static func write(_ migrations: [StoreTableMigrations.Migration], root: String) throws -> [String] {
        let folder = directory(root: root)
        var written: [String] = []
        for migration in migrations {
            let snapshot = SchemaSnapshot(schema: StoreTableMigrations.schema, version: migration.entry.number, tables: tables)
            try folder.write(up: migration.upText, down: migration.downText, snapshot: snapshot.canonicalJSON(), as: migration.entry, manifest: .addWritten)
            written.append(path(of: migration, root: root))
        }
        return written
    }

    /// The store's tables as a snapshot records them (the token's default is the server's
    /// expression, which snapshots do not hold).
    static let tables: [TableSnapshot] = {
        func column(_ name: String, _ kind: StorageKind, nullable: Bool = false, key: Bool = false) -> ColumnSnapshot {
            ColumnSnapshot(name: name, property: nil, renamedFrom: nil, kind: kind, isNullable: nullable, defaultValue: nil, isAutoIncrement: key)
        }
        return [
            TableSnapshot(
                name: "schemagen_history", entity: nil, renamedFrom: nil,
                columns: [
                    column("token", .integer, key: true), column("schema", .text), column("author", .text, nullable: true), column("committed_at", .real),
                    column("entities", .text), column("changes", .text),
                ],
                primaryKey: ["token"], indexes: [], foreignKeys: []),
            TableSnapshot(
                name: "schemagen_history_pruned", entity: nil, renamedFrom: nil, columns: [column("schema", .text), column("through", .integer)], primaryKey: ["schema"],
                indexes: [], foreignKeys: []),
        ]
    }()
}
