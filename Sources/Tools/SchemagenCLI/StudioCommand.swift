import CodeGeneration
import CommandLineKit
import DatabaseLocation
import Dispatch
import Foundation
import HTTPServer
import MigrationFiles
import Migrator
import MigratorCore
import PersistentStoreCore
import PersistentStorePostgres
import PersistentStoreSQLite
import ProjectConfig
import SQLDialects
import SchemaKit
import SchemaMetadata
import SchemaSite
import SchemagenPipeline
import Studio

#if canImport(Glibc)
import Glibc
#endif

/// `schemagen studio`: a local web app over a database, showing its data as the schema names it.
public enum StudioCommand: Command {
    public static let spec = CommandSpec(
        name: "studio",
        abstract: "Browse a database's data as its schemas describe it, in the browser.",
        discussion: """
            schemagen studio [--database PATH|URL] [--schema PATH]... [--port N] [--host ADDRESS] [--key-file FILE] [--read-only] [--allow-writes] [--open]

            Starts a web app on this machine (127.0.0.1, a free port unless --port) and prints its
            address with a random access token; every request needs that token, which the first
            visit keeps in a cookie. Each schema is read at the version the database's migration
            history says it is at, with that version's recorded schema, through the runtime store.
            A database with none of a schema's migrations is left out with the command that adopts
            it (migrate baseline); with none at all, the studio does not start. Encrypted attributes
            show as locked without --key-file (or SCHEMAGEN_KEYS). Records can be edited, inserted
            and deleted through the store (recorded in the history as 'studio'), unless
            --read-only, on PostgreSQL unless --allow-writes. ^C or SIGTERM stops it. Exit status:
            0 stopped, 1 no schema of the database could be opened, 2 usage error or a port that
            cannot be listened on.
            """,
        options: [
            .value("database", valueName: "path|url", help: "The SQLite file or postgres:// URL (default: DATABASE_URL, else the config's database)."),
            .value("schema", short: "s", valueName: "path", help: "A schema file or folder (default: Schemas).", repeatable: true),
            .value("migrations", short: "m", valueName: "dir", help: "Where each schema's migration folder is (default: the config's, else Migrations)."),
            .value("port", valueName: "n", help: "The port to listen on (default: a free one)."),
            .value("host", valueName: "address", help: "The address to listen on (default 127.0.0.1: this machine only)."),
            .value("key-file", valueName: "file", help: "The key file of encrypted attributes (as Store.Configuration.keys reads it)."),
            .flag("read-only", help: "Refuse every edit."),
            .flag("allow-writes", help: "Let a PostgreSQL database be edited (SQLite files are editable unless --read-only)."),
            .flag("open", help: "Open the address in the browser (xdg-open)."),
            .value("config", valueName: "file", help: "A config file with defaults.", defaultValue: ProjectConfig.defaultFile),
        ])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let (loadedConfig, configFailure) = SchemaInput.config(arguments, io: io)
        guard let config = loadedConfig else { return configFailure }
        let given = arguments.value("database") ?? io.environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? config.database
        guard let given else {
            io.writeError("schemagen: error: no database: pass --database PATH or --database postgres://..., set DATABASE_URL, or put 'database:' in .schemagen.yaml\n")
            return .usageOrIO
        }
        let location: DatabaseLocation
        do {
            location = try DatabaseLocation.parse(given)
        } catch {
            io.writeError("schemagen: error: --database: \(error)\n")
            return .usageOrIO
        }
        if case .sqlite(let path) = location, !FileManager.default.fileExists(atPath: path) {
            io.writeError("schemagen: error: \(path) does not exist; create it with `migrate up --database \(path)`\n")
            return .usageOrIO
        }
        let port = arguments.value("port").map { Int($0) ?? -1 } ?? 0
        guard (0...65535).contains(port) else {
            io.writeError("schemagen: error: --port takes a number from 0 to 65535\n")
            return .usageOrIO
        }
        let (schemas, failure) = SchemaInput.validSchemas(arguments.values("schema"), io: io)
        if let failure { return failure }
        let root = arguments.value("migrations") ?? config.migrations ?? "Migrations"
        let catalog: StudioCatalog
        switch StudioOpening.open(location, schemas: schemas, root: root, keyFile: arguments.value("key-file"), io: io) {
        case .success(let entries):
            let reason: String? =
                arguments.flag("read-only")
                ? "started with --read-only" : location.isPostgres && !arguments.flag("allow-writes") ? "a PostgreSQL database is read-only unless --allow-writes" : nil
            // The schema site, for each entity's diagram and docs (plain layout: no Graphviz wait).
            let site = (try? Site.files(for: schemas, migrations: root, layout: .plain)) ?? []
            catalog = StudioCatalog(
                entries: entries, databaseLabel: location.label, readOnly: reason != nil, readOnlyReason: reason,
                site: Dictionary(site.map { ($0.path, $0.contents) }, uniquingKeysWith: { first, _ in first }))
        case .failure(let failure):
            return failure.code
        }
        let host = arguments.value("host") ?? "127.0.0.1"
        if host != "127.0.0.1" && host != "::1" {
            io.writeError("schemagen: warning: listening on \(host): other machines can reach the studio; anyone with the token sees the data\n")
        }
        let app = StudioApp(catalog: catalog, token: StudioApp.newToken())
        let server: HTTPServer
        do {
            server = try HTTPServer(.init(host: host, port: port)) { app.handle($0) }
        } catch {
            io.writeError("schemagen: error: \(error)\n")
            return .usageOrIO
        }
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let address = "http://\(shownHost):\(server.port)/?token=\(app.token)"
        io.writeOutput("Studio: \(address)\n")
        io.writeOutput("Reading \(location.label): \(catalog.entries.map { "\($0.schema.name) v\($0.schema.version)" }.joined(separator: ", ")). Stop with ^C.\n")
        if arguments.flag("open") { openInBrowser(address, io: io) }
        let stopped = waitForStopSignal()
        server.stop()
        io.writeError("schemagen: studio stopped (\(stopped == SIGINT ? "SIGINT" : "SIGTERM"))\n")
        return .success
    }

    static func openInBrowser(_ address: String, io: CommandIO) {
        let opener = "/usr/bin/xdg-open"
        guard FileManager.default.isExecutableFile(atPath: opener) else {
            io.writeError("schemagen: note: --open: no xdg-open here; open the address above yourself\n")
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: opener)
        process.arguments = [address]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
    }
}

/// How the studio opens a database: each schema at the version its history says, or left out
/// with what to do.
enum StudioOpening {
    struct Failure: Error {
        let code: ExitCode
    }

    static func open(_ location: DatabaseLocation, schemas: [Schema], root: String, keyFile: String?, io: CommandIO) -> Result<[StudioCatalog.Entry], Failure> {
        // A key file asked for and not readable is the command's mistake: said before anything opens.
        if let keyFile {
            do {
                try KeySource.file(keyFile).check()
            } catch {
                io.writeError("schemagen: error: --key-file \(keyFile): \(error)\n")
                return .failure(Failure(code: .usageOrIO))
            }
        }
        let database: any MigrationDatabase
        do {
            database = try DatabaseOpener.open(location, readOnly: true)
        } catch {
            io.writeError("schemagen: error: cannot open \(location.label): \(error)\n")
            return .failure(Failure(code: .failure))
        }
        let dialect: SQLDialectName = location.isPostgres ? .postgres : .sqlite
        var entries: [StudioCatalog.Entry] = []
        var leftOut: [String] = []
        for schema in schemas {
            let folder = MigrationDirectory.folder(schema: schema.name, root: root, dialect: dialect)
            guard FileManager.default.fileExists(atPath: folder.path) else {
                leftOut.append("\(schema.name): no \(dialect.rawValue) migrations in \(folder.path)")
                continue
            }
            do {
                let scripts = try MigrationScriptLoader.load(directory: folder.path)
                let migrator = Migrator(database: database, schema: schema.name, scripts: scripts)
                let status = try migrator.status()
                let applied = status.compactMap { if case .applied = $0.state { $0.version } else { nil } }
                guard let version = applied.max() else {
                    let first = scripts.last?.version ?? schema.version
                    leftOut.append(
                        "\(schema.name): this database has none of its migrations; if its tables are there, adopt them with `migrate baseline \(first) --dir \(folder.path) --database \(location.label)`"
                    )
                    continue
                }
                let pending = status.compactMap { if case .pending = $0.state { $0.version } else { nil } }
                let served = (try? migrator.servedVersions()) ?? []
                guard let entry = try entry(schema, version: version, applied: applied, pending: pending, served: served, location: location, root: root, keyFile: keyFile, io: io)
                else { continue }
                entries.append(entry)
            } catch {
                leftOut.append("\(schema.name): \(error)")
            }
        }
        for reason in leftOut { io.writeError("schemagen: note: left out \(reason)\n") }
        guard !entries.isEmpty else {
            io.writeError("schemagen: error: no schema of \(location.label) could be opened\n")
            return .failure(Failure(code: .failure))
        }
        return .success(entries)
    }

    /// One schema at `version`: its recorded schema, metadata and an open store.
    static func entry(
        _ schema: Schema, version: Int, applied: [Int], pending: [Int], served: [Int], location: DatabaseLocation, root: String, keyFile: String?, io: CommandIO
    ) throws -> StudioCatalog.Entry? {
        let pipeline = GenerationPipeline(.init(schemas: [schema.sourcePath], migrations: root))
        let history = SchemaHistory.load(for: schema, root: root, dialects: schema.dialects ?? [.sqlite])
        guard let recorded = history.versions.first(where: { $0.schema.version == version })?.schema else {
            io.writeError("schemagen: note: left out \(schema.name): the database is at version \(version), whose recorded schema is missing from \(root)\n")
            return nil
        }
        var descriptor =
            version == schema.version
            ? pipeline.storeDescriptor(schema) : TemplateContext(schema: recorded, sourceFile: URL(fileURLWithPath: schema.sourcePath).lastPathComponent).schemaDescriptor
        let migrations = PendingMigration.scripts(for: schema, root: root, pending: []).filter { $0.version <= version }
        var keys = KeySource.default
        var locked = false
        if descriptor.hasEncryptedColumns {
            if let keyFile {
                keys = .file(keyFile)
            } else if ProcessInfo.processInfo.environment["SCHEMAGEN_KEYS"]?.isEmpty ?? true {
                descriptor = descriptor.lockingEncryptedColumns()
                locked = true
            }
        }
        let configuration = Store.Configuration(author: "studio", keys: keys, migrations: .verify)
        let store: Store =
            switch location {
            case .sqlite(let path): try Store(path: path, schema: descriptor, migrations: migrations, configuration: configuration)
            case .postgres(let connection): try Store(url: connection, schema: descriptor, migrations: migrations, configuration: configuration)
            }
        return StudioCatalog.Entry(
            schema: recorded, descriptor: descriptor, newestVersion: schema.version,
            migrations: .init(applied: applied, pending: pending, servedVersions: served), store: store, encryptionLocked: locked)
    }
}
