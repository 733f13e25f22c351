#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CommandLineKit
import Foundation
import Migrator
import PostgresKit
import ProjectConfig
import SQLiteKit

/// The `migrate` tool: applies a schema's migrations to a SQLite database.
public enum MigrateTool {
    public static var tool: CommandLineTool {
        CommandLineTool(
            name: "migrate", version: "0.1.0",
            abstract: "Apply, revert and inspect a schema's SQL migrations on a SQLite file or a PostgreSQL database.",
            commands: [UpCommand.self, DownCommand.self, StatusCommand.self, ValidateMigrationsCommand.self, RedoCommand.self, BaselineCommand.self])
    }

    public static func main(arguments: [String], io: CommandIO = .standard()) -> ExitCode {
        tool.main(arguments: arguments, io: io)
    }

    /// A migration was refused or failed (checksums, order, SQL, foreign keys, destructive down).
    public static let refused = ExitCode(1)
    /// Another migrator held the database past the lock timeout.
    public static let locked = ExitCode(3)

    static let common: [OptionSpec] = [
        .value("database", short: "d", valueName: "path|url", help: "A SQLite file (created, with its folder, when missing), or postgres://user:pass@host:port/db. Default: DATABASE_URL, then the config file, then libpq's PG* variables."),
        .value("dir", valueName: "dir", help: "The schema's migration folder. Default: the one folder under Migrations/ (its postgres/ folder for PostgreSQL)."),
        .flag("dry-run", help: "Print the SQL that would run and change nothing."),
        .value("lock-timeout", valueName: "seconds", help: "How long to wait for another migrator.", defaultValue: "30"),
        .value("statement-timeout", valueName: "seconds", help: "PostgreSQL: cancel a statement that runs longer (statement_timeout)."),
        .value("ddl-lock-timeout", valueName: "seconds", help: "PostgreSQL: give up when a statement waits longer for a table lock (lock_timeout)."),
        .value("config", valueName: "file", help: "A config file with defaults (database, migrations).", defaultValue: ProjectConfig.defaultFile),
    ]

    /// The config file, when there is one; nil after printing why it cannot be used.
    static func config(_ arguments: ParsedArguments, io: CommandIO) -> ProjectConfig? {
        let path = arguments.value("config") ?? ProjectConfig.defaultFile
        guard arguments.value("config") != nil || FileManager.default.fileExists(atPath: path) else { return ProjectConfig() }
        let (config, diagnostics, _) = ProjectConfig.load(path: path)
        for diagnostic in diagnostics {
            io.writeError("migrate: error: \(diagnostic.location.map { "\($0.file):\($0.line):\($0.column): " } ?? "")\(diagnostic.message)\n")
        }
        return config
    }

    /// Opens the database and reads the migrations of `--dir`, or of every schema folder under
    /// the migrations root when `allSchemas` (they share the database, each with its history).
    /// For PostgreSQL each schema's `postgres/` folder is read. The second value names the
    /// database for messages, without its password.
    static func open(_ arguments: ParsedArguments, io: CommandIO, allSchemas: Bool = false) -> ([Migrator], String)? {
        openFailure = .usageOrIO
        guard let config = config(arguments, io: io),
              let target = databaseTarget(arguments, config: config, io: io) else { return nil }
        let postgres = ConnectionURL.isPostgres(target)
        guard let directories = directoryPaths(arguments, config: config, io: io, allowSeveral: allSchemas, postgres: postgres) else { return nil }
        func seconds(_ name: String) -> Double? { arguments.value(name).flatMap(Double.init) }
        let database: any MigrationDatabase
        do {
            database = try DatabaseOpener.open(target, postgres: .init(lockTimeout: seconds("ddl-lock-timeout"), statementTimeout: seconds("statement-timeout")))
        } catch {
            io.writeError("migrate: error: cannot open database: \(error)\n")
            openFailure = exitCode(for: error)
            return nil
        }
        let timeout = seconds("lock-timeout") ?? 30
        var migrators: [Migrator] = []
        for directory in directories {
            do {
                let scripts = try MigrationScriptLoader.load(directory: directory.path)
                migrators.append(Migrator(database: database, schema: directory.schema, scripts: scripts, lockTimeoutSeconds: timeout))
            } catch {
                io.writeError("migrate: error: \(error)\n")
                openFailure = exitCode(for: error)
                return nil
            }
        }
        return (migrators, database.label)
    }

    /// Why the last `open` failed: 2 for usage and I/O, 1 for a tampered folder or a refused database.
    /// Commands run one at a time in a process, so one variable serves.
    nonisolated(unsafe) static var openFailure = ExitCode.usageOrIO

    /// Opens exactly one schema's migrations (commands that change one schema at a time).
    static func openOne(_ arguments: ParsedArguments, io: CommandIO) -> (Migrator, String)? {
        guard let (migrators, database) = open(arguments, io: io), let migrator = migrators.first else { return nil }
        return (migrator, database)
    }

    /// `--database`, else DATABASE_URL (`postgres://...`, `postgresql://...`, `sqlite:path`,
    /// `sqlite://path`, `file:path` or a path), else the config file's `database`, else libpq's
    /// `PGHOST`/`PGDATABASE` environment (an empty `postgresql://` URL lets libpq fill it in).
    static func databaseTarget(_ arguments: ParsedArguments, config: ProjectConfig, io: CommandIO) -> String? {
        if let value = arguments.value("database") { return normalized(value) }
        if let url = io.environment["DATABASE_URL"], !url.isEmpty { return normalized(url) }
        if let database = config.database { return normalized(database) }
        if io.environment["PGHOST"] != nil || io.environment["PGDATABASE"] != nil || io.environment["PGSERVICE"] != nil { return "postgresql://" }
        io.writeError("migrate: error: no database: pass --database PATH or --database postgres://..., set DATABASE_URL, or put 'database:' in .schemagen.yaml\n")
        return nil
    }

    /// SQLite URLs as plain paths; PostgreSQL URLs as they are.
    static func normalized(_ target: String) -> String {
        if ConnectionURL.isPostgres(target) { return target }
        for prefix in ["sqlite:///", "sqlite://", "sqlite:", "file://", "file:"] where target.hasPrefix(prefix) {
            return (prefix.hasSuffix("///") ? "/" : "") + String(target.dropFirst(prefix.count))
        }
        return target
    }

    /// `--dir` (the schema is the folder's name, or its parent's for a dialect folder), else the
    /// schema folders under the config's `migrations` (or `Migrations`): all of them when
    /// `allowSeveral`, else the only one. For PostgreSQL, each folder's `postgres/`.
    static func directoryPaths(_ arguments: ParsedArguments, config: ProjectConfig, io: CommandIO, allowSeveral: Bool, postgres: Bool) -> [(path: String, schema: String)]? {
        if let directory = arguments.value("dir") {
            let url = URL(fileURLWithPath: directory)
            let isDialectFolder = ["postgres", "sqlite"].contains(url.lastPathComponent)
            return [(directory, isDialectFolder ? url.deletingLastPathComponent().lastPathComponent : url.lastPathComponent)]
        }
        let root = config.migrations ?? "Migrations"
        let folders = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted().filter { name in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isFolder) && isFolder.boolValue
        }
        guard folders.count == 1 || (allowSeveral && !folders.isEmpty) else {
            io.writeError(folders.isEmpty
                ? "migrate: error: no migration folder under '\(root)': pass --dir DIR\n"
                : "migrate: error: several schemas have migrations (\(folders.joined(separator: ", "))); pass --dir \(root)/<Schema>\n")
            return nil
        }
        guard postgres else { return folders.map { (root + "/" + $0, $0) } }
        let withPostgres = folders.filter { FileManager.default.fileExists(atPath: root + "/" + $0 + "/postgres") }
        guard !withPostgres.isEmpty else {
            io.writeError("migrate: error: no PostgreSQL migrations under '\(root)': add 'dialects: [sqlite, postgres]' to the schema (or `--dialect postgres` to schemagen generate) and run `schemagen generate`\n")
            return nil
        }
        return withPostgres.map { (root + "/" + $0 + "/postgres", $0) }
    }

    static func exitCode(for error: MigratorError) -> ExitCode {
        switch error {
        case .locked, .tableLockTimeout: locked
        case .noMigrations, .unreadable: .usageOrIO
        case .postgres(let error, _) where error.sqlState == nil: .usageOrIO
        default: refused
        }
    }

    /// Progress on a terminal (statement n of m, a spinner during long copies, elapsed time),
    /// plain lines otherwise.
    final class Reporter: @unchecked Sendable {
        let io: CommandIO
        private var spinner = 0
        private var current = ""
        private var lastDraw = Date.distantPast

        init(io: CommandIO) { self.io = io }

        func handle(_ event: Migrator.Event) {
            switch event {
            case .started(let script, let direction, _):
                current = "\(direction == .up ? "applying" : "reverting") \(script.label)"
                draw("")
            case .statement(let index, let total):
                statement = "statement \(index) of \(total)"
                draw(statement, force: index == 1 || index == total)
            case .copyingRows(let table, let copied, let total):
                let percent = total > 0 ? " (\(min(100, copied * 100 / total))%)" : ""
                draw("\(statement): copying \(table) \(Self.grouped(copied)) of \(Self.grouped(total)) rows\(percent)")
            case .working:
                spinner = (spinner + 1) % 4
                draw("\(statement) " + ["|", "/", "-", "\\"][spinner])
            case .interrupted(let version, let direction, let startedAt):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeOutput("note: migration \(String(format: "%04d", version)) (\(direction.rawValue)) started \(startedAt) never finished: its process or connection was lost, and the database rolled it back; it runs again now if it is still pending\n")
            case .finished(let script, let direction, let milliseconds):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeOutput("\(direction == .up ? "applied " : "reverted") \(script.label) (\(milliseconds) ms)\n")
            case .skipped(let script):
                io.writeOutput("skipped \(script.label) (another migrator ran it)\n")
            }
        }

        private var statement = ""

        /// 1234567 as "1,234,567".
        static func grouped(_ number: Int) -> String {
            let digits = Array(String(number))
            return String(digits.enumerated().flatMap { offset, digit in
                offset > 0 && (digits.count - offset) % 3 == 0 ? [",", digit] : [digit]
            })
        }

        /// Redraws the status line, at most 20 times a second unless `force`.
        private func draw(_ detail: String, force: Bool = false) {
            guard io.outputIsTerminal, force || Date().timeIntervalSince(lastDraw) > 0.05 else { return }
            lastDraw = Date()
            io.writeOutput("\r\u{1B}[K\(current) \(detail)")
        }
    }
}

/// Parses `N` and `--to VERSION` into a target.
func target(_ arguments: ParsedArguments, default fallback: Migrator.Target, io: CommandIO) -> Migrator.Target? {
    if let version = arguments.value("to") {
        guard let number = Int(version), number >= 0 else {
            io.writeError("migrate: error: --to expects a version number, found '\(version)'\n")
            return nil
        }
        return .version(number)
    }
    if let count = arguments.arguments.first {
        guard let number = Int(count), number >= 0 else {
            io.writeError("migrate: error: expected a number of migrations, found '\(count)'\n")
            return nil
        }
        return .count(number)
    }
    return fallback
}

enum UpCommand: Command {
    static let spec = CommandSpec(
        name: "up", abstract: "Apply pending migrations (all by default).",
        discussion: "Exit status: 0 done, 1 refused or failed (nothing of the failing migration remains), 2 usage or I/O error, 3 locked by another migrator or session (--lock-timeout, --ddl-lock-timeout).",
        options: MigrateTool.common + [
            .value("to", valueName: "version", help: "Apply up to and including this version."),
            .flag("allow-out-of-order", help: "Apply a pending migration numbered below the newest applied one."),
        ],
        arguments: [ArgumentSpec("N", help: "How many migrations to apply.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let chosen = target(arguments, default: .all, io: io),
              let (migrators, database) = MigrateTool.open(arguments, io: io, allSchemas: chosen == .all) else { return MigrateTool.openFailure }
        let options = Migrator.Options(allowOutOfOrder: arguments.flag("allow-out-of-order"))
        do {
            for migrator in migrators {
                if arguments.flag("dry-run") {
                    for script in try migrator.pendingUp(chosen, options: options) { io.writeOutput("-- \(script.upFile)\n\(script.up)\n") }
                    continue
                }
                let applied = try migrator.up(chosen, options: options, progress: MigrateTool.Reporter(io: io).handle)
                if applied.isEmpty { io.writeOutput("\(database) is up to date with \(migrator.schema).\n") }
            }
            return .success
        } catch {
            io.writeError("migrate: error: \(error)\n")
            return MigrateTool.exitCode(for: error)
        }
    }
}

enum DownCommand: Command {
    static let spec = CommandSpec(
        name: "down", abstract: "Revert applied migrations (one by default; --to 0 reverts all).",
        discussion: "Exit status: 0 done, 1 refused or failed, 2 usage or I/O error, 3 locked by another migrator or session (--lock-timeout, --ddl-lock-timeout).",
        options: MigrateTool.common + [
            .value("to", valueName: "version", help: "Revert down to this version (0 = everything)."),
            .flag("allow-destructive", help: "Run down migrations that lose data."),
        ],
        arguments: [ArgumentSpec("N", help: "How many migrations to revert.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let chosen = target(arguments, default: .count(1), io: io), let (migrator, _) = MigrateTool.openOne(arguments, io: io) else { return MigrateTool.openFailure }
        let options = Migrator.Options(allowDestructive: arguments.flag("allow-destructive"))
        do {
            if arguments.flag("dry-run") {
                for script in try migrator.pendingDown(chosen, options: options) { io.writeOutput("-- \(script.downFile)\n\(script.down)\n") }
                return .success
            }
            let reverted = try migrator.down(chosen, options: options, progress: MigrateTool.Reporter(io: io).handle)
            if reverted.isEmpty { io.writeOutput("nothing to revert\n") }
            return .success
        } catch {
            io.writeError("migrate: error: \(error)\n")
            return MigrateTool.exitCode(for: error)
        }
    }
}

enum RedoCommand: Command {
    static let spec = CommandSpec(
        name: "redo", abstract: "Revert the newest migration and apply it again.",
        options: MigrateTool.common + [.flag("allow-destructive", help: "Run a down migration that loses data.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let (migrator, _) = MigrateTool.openOne(arguments, io: io) else { return MigrateTool.openFailure }
        do {
            let reporter = MigrateTool.Reporter(io: io)
            let reverted = try migrator.down(.count(1), options: .init(allowDestructive: arguments.flag("allow-destructive")), progress: reporter.handle)
            guard let last = reverted.first else {
                io.writeOutput("nothing to redo\n")
                return .success
            }
            try migrator.up(.version(last.version), progress: reporter.handle)
            return .success
        } catch {
            io.writeError("migrate: error: \(error)\n")
            return MigrateTool.exitCode(for: error)
        }
    }
}

enum BaselineCommand: Command {
    static let spec = CommandSpec(
        name: "baseline", abstract: "Record migrations up to VERSION as applied without running them (adopt an existing database).",
        options: MigrateTool.common, arguments: [ArgumentSpec("VERSION", help: "The version the database is at.", isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let version = Int(arguments.arguments[0]) else {
            io.writeError("migrate: error: VERSION must be a number, found '\(arguments.arguments[0])'\n")
            return .usageOrIO
        }
        guard let (migrator, database) = MigrateTool.openOne(arguments, io: io) else { return MigrateTool.openFailure }
        do {
            try migrator.baseline(version)
            io.writeOutput("\(database) recorded at \(migrator.schema) version \(version)\n")
            return .success
        } catch {
            io.writeError("migrate: error: \(error)\n")
            return MigrateTool.exitCode(for: error)
        }
    }
}

enum ValidateMigrationsCommand: Command {
    static let spec = CommandSpec(
        name: "validate", abstract: "Check applied migrations against their files (every schema unless --dir).",
        discussion: "Exit status: 0 consistent, 1 an applied file changed or is missing, or a pending one is out of order, 2 usage or I/O error.",
        options: MigrateTool.common)

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let (migrators, database) = MigrateTool.open(arguments, io: io, allSchemas: true) else { return MigrateTool.openFailure }
        var failed = false
        for migrator in migrators {
            do {
                let problems = try migrator.validate()
                if problems.isEmpty {
                    io.writeOutput("\(database): applied migrations of \(migrator.schema) match their files.\n")
                } else {
                    failed = true
                    io.writeError(problems.map { "migrate: error: \($0)\n" }.joined())
                }
            } catch {
                io.writeError("migrate: error: \(error)\n")
                return MigrateTool.exitCode(for: error)
            }
        }
        return failed ? MigrateTool.refused : .success
    }
}

enum StatusCommand: Command {
    static let spec = CommandSpec(
        name: "status", abstract: "List every migration: applied (when, how long, checksum) or pending.",
        options: MigrateTool.common + [.value("format", short: "f", valueName: "format", help: "Output format.", allowed: ["text", "json"], defaultValue: "text")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let (migrators, _) = MigrateTool.open(arguments, io: io, allSchemas: true) else { return MigrateTool.openFailure }
        var rows: [(schema: String, status: Migrator.Status)] = []
        do {
            for migrator in migrators { rows += try migrator.status().map { (migrator.schema, $0) } }
        } catch {
            io.writeError("migrate: error: \(error)\n")
            return MigrateTool.exitCode(for: error)
        }
        if arguments.value("format") == "json" {
            let items = rows.map { entry -> String in
                let row = entry.status
                var fields = ["\"schema\": \"\(entry.schema)\"", "\"version\": \(row.version)", "\"name\": \"\(row.name)\""]
                switch row.state {
                case .applied(let at, let milliseconds, let matches):
                    fields += ["\"state\": \"applied\"", "\"appliedAt\": \"\(at)\"", "\"durationMs\": \(milliseconds)", "\"checksum\": \"\(matches ? "ok" : "changed")\""]
                case .pending:
                    fields += ["\"state\": \"pending\""]
                case .fileMissing(let at):
                    fields += ["\"state\": \"missing-file\"", "\"appliedAt\": \"\(at)\""]
                }
                return "  {" + fields.joined(separator: ", ") + "}"
            }
            io.writeOutput("[\n" + items.joined(separator: ",\n") + (items.isEmpty ? "" : "\n") + "]\n")
            return .success
        }
        var out = "SCHEMA      VERSION  NAME" + String(repeating: " ", count: 44) + "STATE\n"
        for entry in rows {
            let row = entry.status
            let schema = entry.schema.count > 10 ? String(entry.schema.prefix(10)) : entry.schema
            out += schema + String(repeating: " ", count: 12 - schema.count)
            let name = row.name.count > 46 ? String(row.name.prefix(45)) + "…" : row.name
            let padded = name + String(repeating: " ", count: max(1, 48 - name.count))
            let state: String = switch row.state {
            case .applied(let at, let milliseconds, let matches): "applied \(at) in \(milliseconds) ms" + (matches ? "" : ", FILE CHANGED")
            case .pending: "pending"
            case .fileMissing(let at): "applied \(at), FILE MISSING"
            }
            out += String(format: "%04d     ", row.version) + padded + state + "\n"
        }
        io.writeOutput(out)
        return .success
    }
}
