import CommandLineKit
import DatabaseLocation
import Diagnostics
import Dispatch
import Foundation
import MigrationFiles
import Migrator
import MigratorCore
import PostgresKit
import ProjectConfig
import SQLDialects
import SQLiteKit
import SchemaImport
import SchemaMetadata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `migrate` tool: applies a schema's migrations to a SQLite database.
public enum MigrateTool {
    public static var tool: CommandLineTool {
        CommandLineTool(
            name: "migrate", version: "0.1.0",
            abstract: "Apply, revert and inspect a schema's SQL migrations on a SQLite file or a PostgreSQL database.",
            commands: [
                UpCommand.self, CompleteCommand.self, RollbackCommand.self, DownCommand.self, StatusCommand.self, ValidateMigrationsCommand.self, RedoCommand.self, BaselineCommand.self,
                RepairCommand.self,
            ])
    }

    public static func main(arguments: [String], io: CommandIO = .standard()) -> ExitCode {
        tool.main(arguments: arguments, io: io)
    }

    /// A migration was refused or failed (checksums, order, SQL, foreign keys, destructive down).
    public static let refused = ExitCode(1)
    /// Another migrator held the database past the lock timeout.
    public static let locked = ExitCode(3)

    static let common: [OptionSpec] = [
        .value(
            "database", short: "d", valueName: "path|url",
            help:
                "A SQLite file (created, with its folder, when missing, except by status, validate and --dry-run), a postgres:// or postgresql:// URL, or a libpq keyword string (host=... dbname=...). Default: DATABASE_URL, then the config file, then libpq's PG* variables."
        ),
        .value("dir", valueName: "dir", help: "The schema's migration folder. Default: the one folder under Migrations/ (its postgres/ folder for PostgreSQL)."),
        .flag("dry-run", help: "Print what would run or be recorded, and change nothing (the database is opened read-only)."),
        .value("lock-timeout", valueName: "seconds", help: "How long to wait for another migrator.", defaultValue: "30"),
        .value("statement-timeout", valueName: "seconds", help: "PostgreSQL: cancel a statement that runs longer (statement_timeout). Default: none, whatever the role's default."),
        .value(
            "idle-in-transaction-timeout", valueName: "seconds",
            help: "PostgreSQL: the server ends the migrator's session when it stalls this long inside a transaction (idle_in_transaction_session_timeout); 0 turns it off.",
            defaultValue: "60"),
        .value("ddl-lock-timeout", valueName: "seconds", help: "PostgreSQL: give up when a statement waits longer for a table lock (lock_timeout); 0 waits forever.", defaultValue: "5"),
        .value("connect-retry", valueName: "seconds", help: "PostgreSQL: keep trying to connect this long while the server does not answer or is starting up.", defaultValue: "0"),
        .value("history-schema", valueName: "name", help: "PostgreSQL: the schema that holds the history tables.", defaultValue: Migrator.defaultHistorySchema),
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
    /// For PostgreSQL each schema's `postgres/` folder is read. `readOnly` (status, validate, dry
    /// runs) creates nothing and refuses writes. The second value names the database for
    /// messages, without its password.
    static func open(_ arguments: ParsedArguments, io: CommandIO, allSchemas: Bool = false, readOnly: Bool = false) -> ([Migrator], String)? {
        openFailure = .usageOrIO
        guard let config = config(arguments, io: io),
            let location = databaseLocation(arguments, config: config, io: io)
        else { return nil }
        guard let directories = directoryPaths(arguments, config: config, io: io, allowSeveral: allSchemas, postgres: location.isPostgres) else { return nil }
        var settings = DatabaseOpener.PostgresSettings()
        var lockTimeout = 30.0
        for (name, apply) in [
            ("ddl-lock-timeout", { settings.lockTimeout = $0 }), ("connect-retry", { settings.connectRetry = $0 }),
            ("statement-timeout", { settings.statementTimeout = $0 }), ("lock-timeout", { lockTimeout = $0 }),
            ("idle-in-transaction-timeout", { settings.idleInTransactionTimeout = $0 }),
        ] as [(String, (Double) -> Void)] {
            guard let text = arguments.value(name) else { continue }
            guard let value = Double(text), value >= 0, value.isFinite else {
                io.writeError("migrate: error: --\(name) expects a number of seconds, found '\(text)'\n")
                return nil
            }
            apply(value)
        }
        let database: any MigrationDatabase
        do {
            database = try DatabaseOpener.open(location, readOnly: readOnly, lockWait: lockTimeout, postgres: settings)
        } catch {
            io.writeError("migrate: error: \(MigrateAdvice.message(error))\n")
            openFailure = exitCode(for: error)
            return nil
        }
        let historySchema = arguments.value("history-schema") ?? Migrator.defaultHistorySchema
        let cancellation = MigrationCancellation(database: database)
        var migrators: [Migrator] = []
        for directory in directories {
            do {
                let scripts = try MigrationScriptLoader.load(directory: directory.path)
                let migrator = Migrator(
                    database: database, schema: directory.schema, scripts: scripts, lockTimeoutSeconds: lockTimeout,
                    historySchema: historySchema, cancellation: cancellation)
                // Another dialect's files (a folder named oddly, or moved) are refused before
                // any command reads the history with them.
                try migrator.checkDialect()
                migrators.append(migrator)
            } catch {
                io.writeError("migrate: error: \(MigrateAdvice.message(error))\n")
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
    static func openOne(_ arguments: ParsedArguments, io: CommandIO, readOnly: Bool = false) -> (Migrator, String)? {
        guard let (migrators, database) = open(arguments, io: io, readOnly: readOnly), let migrator = migrators.first else { return nil }
        return (migrator, database)
    }

    /// `--database`, else DATABASE_URL, else the config file's `database`, else libpq's
    /// `PGHOST`/`PGDATABASE`/`PGSERVICE` environment. A value is a SQLite path only when it is a
    /// path: an unknown `scheme:` is a usage error, never a file name.
    static func databaseLocation(_ arguments: ParsedArguments, config: ProjectConfig, io: CommandIO) -> DatabaseLocation? {
        let given: (text: String, origin: String)? =
            if let value = arguments.value("database") { (value, "--database") } else if let url = io.environment["DATABASE_URL"], !url.isEmpty {
                (url, "DATABASE_URL")
            } else if let database = config.database { (database, "'database' in the config file") } else { nil }
        guard let given else {
            if io.environment["PGHOST"] != nil || io.environment["PGDATABASE"] != nil || io.environment["PGSERVICE"] != nil { return .postgres(connection: "") }
            io.writeError("migrate: error: no database: pass --database PATH or --database postgres://..., set DATABASE_URL, or put 'database:' in .schemagen.yaml\n")
            return nil
        }
        do {
            return try DatabaseLocation.parse(given.text)
        } catch {
            io.writeError("migrate: error: \(given.origin): \(error)\n")
            return nil
        }
    }

    /// `--dir` (the schema is the folder's name, or its parent's for a dialect folder), else the
    /// schema folders under the config's `migrations` (or `Migrations`): all of them when
    /// `allowSeveral`, else the only one. For PostgreSQL, each folder's `postgres/`.
    static func directoryPaths(_ arguments: ParsedArguments, config: ProjectConfig, io: CommandIO, allowSeveral: Bool, postgres: Bool) -> [(path: String, schema: String)]? {
        if let directory = arguments.value("dir") {
            return dialectFolder(of: directory, postgres: postgres, io: io).map { [$0] }
        }
        let root = config.migrations ?? "Migrations"
        let folders = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted().filter { name in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isFolder) && isFolder.boolValue
        }
        guard folders.count == 1 || (allowSeveral && !folders.isEmpty) else {
            io.writeError(
                folders.isEmpty
                    ? "migrate: error: no migration folder under '\(root)': pass --dir DIR\n"
                    : "migrate: error: several schemas have migrations (\(folders.joined(separator: ", "))); pass --dir \(root)/<Schema>\n")
            return nil
        }
        guard postgres else { return folders.map { (root + "/" + $0, $0) } }
        let dialect = SQLDialectName.postgres
        let withPostgres = folders.map { (MigrationDirectory.folder(schema: $0, root: root, dialect: dialect).path, $0) }.filter { FileManager.default.fileExists(atPath: $0.0) }
        guard !withPostgres.isEmpty else {
            io.writeError(
                "migrate: error: no PostgreSQL migrations under '\(root)': add 'dialects: [\(SQLDialectName.default.rawValue), \(dialect.rawValue)]' to the schema (or `--dialect \(dialect.rawValue)` to schemagen generate) and run `schemagen generate`\n"
            )
            return nil
        }
        return withPostgres
    }

    /// The folder of `--dir` holding the database's dialect: a dialect folder as given (when it
    /// is the database's), or a schema folder itself for SQLite and its `postgres/` folder for
    /// PostgreSQL, said on standard error. Never another dialect's files.
    static func dialectFolder(of directory: String, postgres: Bool, io: CommandIO) -> (path: String, schema: String)? {
        let url = URL(fileURLWithPath: directory)
        let wanted: SQLDialectName = postgres ? .postgres : .default
        if let named = SQLDialectName.allCases.first(where: { $0.migrationSubfolder == url.lastPathComponent }) {
            guard named == wanted else {
                io.writeError(
                    "migrate: error: '\(directory)' holds \(named.rawValue) migrations and the database is \(wanted.rawValue): pass --dir \(url.deletingLastPathComponent().relativePath)\n")
                return nil
            }
            return (directory, url.deletingLastPathComponent().lastPathComponent)
        }
        guard postgres, let subfolder = wanted.migrationSubfolder else { return (directory, url.lastPathComponent) }
        let folder = directory.hasSuffix("/") ? directory + subfolder : directory + "/" + subfolder
        guard FileManager.default.fileExists(atPath: folder) else {
            io.writeError(
                "migrate: error: '\(directory)' has no \(wanted.rawValue)/ folder, and its own files are SQLite migrations, which a PostgreSQL database never runs: add '\(wanted.rawValue)' to the schema's dialects and run `schemagen generate`, or pass the folder of the PostgreSQL migrations\n"
            )
            return nil
        }
        io.writeError("migrate: note: using \(folder), the PostgreSQL migrations of \(directory)\n")
        return (folder, url.lastPathComponent)
    }

    /// Options of the commands that run online migrations' phases.
    static let online: [OptionSpec] = [
        .value(
            "online-lock-timeout", valueName: "ms",
            help: "Online migrations: how long each DDL statement may wait for a lock (and so hold app queries behind it) before it gives up and is retried.",
            defaultValue: "500"),
        .value("lock-retries", valueName: "count", help: "Online migrations: how many times a section that did not get its locks is retried, with growing pauses.", defaultValue: "20"),
    ]

    /// `complete` and `rollback`: the phase `run` makes on every schema's migrator, or with
    /// `--dry-run` the phase file that would run (found by `file` in the states of `dryRunPhases`).
    static func runPhase(
        _ arguments: ParsedArguments, io: CommandIO, dryRunPhases: Set<Migrator.OnlineState.Phase>, file: (MigrationScript) -> (String?, String?), nothing: String,
        run: (Migrator, Migrator.Options, @escaping (Migrator.Event) -> Void) throws(MigratorError) -> MigrationScript?
    ) -> ExitCode {
        guard let options = onlineOptions(arguments, io: io) else { return .usageOrIO }
        let dryRun = arguments.flag("dry-run")
        guard let (migrators, database) = open(arguments, io: io, allSchemas: true, readOnly: dryRun) else { return openFailure }
        return runMigrations(migrators, io: io) { () throws(MigratorError) in
            for migrator in migrators {
                if dryRun {
                    printPhase(of: migrator, phases: dryRunPhases, file: file, io: io)
                } else if try run(migrator, options, Reporter(io: io).handle) == nil {
                    io.writeOutput("\(database): no online migration of \(migrator.schema) \(nothing).\n")
                }
            }
        }
    }

    /// `--dry-run` of `complete` and `rollback`: the phase file that would run, or why none.
    static func printPhase(
        of migrator: Migrator, phases: Set<Migrator.OnlineState.Phase>, file: (MigrationScript) -> (String?, String?), io: CommandIO
    ) {
        guard let state = try? migrator.onlineState(), phases.contains(state.phase),
            let script = migrator.scripts.first(where: { $0.version == state.version }), case let (name?, text?) = file(script)
        else {
            io.writeOutput("-- \(migrator.schema): nothing would run\n")
            return
        }
        io.writeOutput("-- \(name)\n\(text)\n")
    }

    static func onlineOptions(_ arguments: ParsedArguments, io: CommandIO) -> Migrator.Options? {
        var options = Migrator.Options()
        for (name, apply) in [("online-lock-timeout", { options.lockTimeoutMilliseconds = $0 }), ("lock-retries", { options.lockRetries = $0 })] as [(String, (Int) -> Void)] {
            guard let text = arguments.value(name) else { continue }
            guard let value = Int(text), value >= 0 else {
                io.writeError("migrate: error: --\(name) expects a whole number, found '\(text)'\n")
                return nil
            }
            apply(value)
        }
        return options
    }

    static func exitCode(for error: MigratorError) -> ExitCode {
        switch error {
        case .interrupted, .interruptedPhase: Interrupts.exitCode
        case .locked, .tableLockTimeout: locked
        case .noMigrations, .unreadable, .cannotConnect: .usageOrIO
        case .database(let failure) where failure.code == nil: .usageOrIO
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
                io.writeOutput(
                    "note: migration \(String(format: "%04d", version)) (\(direction.rawValue)) started \(startedAt) never finished: its process or connection was lost, and the database rolled it back; it runs again now if it is still pending\n"
                )
            case .finished(let script, let direction, let milliseconds):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeOutput("\(direction == .up ? "applied " : "reverted") \(script.label) (\(milliseconds) ms)\n")
            case .skipped(let script):
                io.writeOutput("skipped \(script.label) (another migrator ran it)\n")
            case .onlineSection(let script, let phase, let index, let total):
                current = "\(phase.rawValue) \(script.label)"
                statement = "section \(index) of \(total)"
                if io.outputIsTerminal { draw(statement, force: true) } else { io.writeOutput("\(current): \(statement)\n") }
            case .backfilled(let table, let rows):
                draw("\(statement): backfilled \(table) \(Self.grouped(rows)) rows")
            case .lockRetry(let section, let attempt, let pause, let holders):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                let who = holders.isEmpty ? "apps' transactions held them" : "held by \(holders.joined(separator: "; "))"
                io.writeOutput("note: section \(section) could not get its locks in time (\(who)); attempt \(attempt + 1) in \(pause) ms\n")
            case .indexBuildWaits(let section, let sessions):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeOutput(
                    "note: section \(section) builds an index, which cannot finish before these open transactions end (it waits for them, without a time limit): \(sessions.joined(separator: "; "))\n"
                )
            case .rowsHeld(let table, let keys, let holders, let attempt):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeOutput(
                    "note: the backfill of \(table) is done but for \(keys.count == 20 ? "20 or more rows" : "\(keys.count) row\(keys.count == 1 ? "" : "s")") apps hold locked (\(keys.prefix(5).joined(separator: ", ")))\(holders.isEmpty ? "" : ", by \(holders.joined(separator: "; "))"); trying them again (\(attempt))\n"
                )
            case .onlineFinished(let script, let phase, let milliseconds):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                let done: String =
                    switch phase {
                    case .expand: "expanded"
                    case .contract: "completed"
                    case .rollback: "rolled back"
                    }
                io.writeOutput("\(done) \(script.label) (\(milliseconds) ms)\n")
            }
        }

        private var statement = ""

        /// 1234567 as "1,234,567".
        static func grouped(_ number: Int) -> String {
            let digits = Array(String(number))
            return String(
                digits.enumerated().flatMap { offset, digit in
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

/// Runs a command's work with SIGINT and SIGTERM turned into a cancellation and reports the
/// error the same way for every command.
func runMigrations(_ migrators: [Migrator], io: CommandIO, _ body: () throws(MigratorError) -> Void) -> ExitCode {
    guard let cancellation = migrators.first?.cancellation else { return .success }
    return Interrupts.whileRunning(cancellation, io: io) { () -> ExitCode in
        do throws(MigratorError) {
            try body()
            return .success
        } catch {
            io.writeError("migrate: error: \(MigrateAdvice.message(error))\n")
            return MigrateTool.exitCode(for: error)
        }
    }
}

enum UpCommand: Command {
    static let spec = CommandSpec(
        name: "up", abstract: "Apply pending migrations (all by default).",
        discussion:
            "Exit status: 0 done, 1 refused or failed (nothing of the failing migration remains), 2 usage or I/O error, 3 locked by another migrator or session (--lock-timeout, --ddl-lock-timeout), 130 or 143 interrupted by SIGINT or SIGTERM (the migration in progress rolled back).",
        options: MigrateTool.common + [
            .value("to", valueName: "version", help: "Apply up to and including this version."),
            .flag("allow-out-of-order", help: "Apply a pending migration numbered below the newest applied one."),
            .flag("complete", help: "Online migrations: contract each right after its expand (for a database without traffic)."),
            .flag("allow-destructive", help: "With --complete: also run contract phases that drop data the previous version wrote (loses-data: yes)."),
        ] + MigrateTool.online,
        arguments: [ArgumentSpec("N", help: "How many migrations to apply.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        guard let chosen = target(arguments, default: .all, io: io),
            let (migrators, database) = MigrateTool.open(arguments, io: io, allSchemas: chosen == .all, readOnly: dryRun)
        else { return MigrateTool.openFailure }
        guard var options = MigrateTool.onlineOptions(arguments, io: io) else { return .usageOrIO }
        options.allowOutOfOrder = arguments.flag("allow-out-of-order")
        options.complete = arguments.flag("complete")
        options.allowDestructive = arguments.flag("allow-destructive")
        return runMigrations(migrators, io: io) { () throws(MigratorError) in
            for migrator in migrators {
                if dryRun {
                    // Every file `up` would run, phase by phase, in order; then why it would stop.
                    let (steps, stop) = try migrator.plannedUpEverywhere(chosen, options: options)
                    for step in steps { io.writeOutput("-- \(step.kind.rawValue): \(step.file)\n\(step.text ?? "")\n") }
                    if let stop { io.writeError("migrate: note: \(MigrateAdvice.message(stop))\n") }
                    continue
                }
                let applied = try migrator.up(chosen, options: options, progress: MigrateTool.Reporter(io: io).handle)
                if applied.isEmpty { io.writeOutput("\(database) is up to date with \(migrator.schema).\n") }
            }
        }
    }
}

enum DownCommand: Command {
    static let spec = CommandSpec(
        name: "down", abstract: "Revert applied migrations (one by default; --to 0 reverts all).",
        discussion: "Exit status: 0 done, 1 refused or failed, 2 usage or I/O error, 3 locked by another migrator or session (--lock-timeout, --ddl-lock-timeout), 130 or 143 interrupted.",
        options: MigrateTool.common + [
            .value("to", valueName: "version", help: "Revert down to this version (0 = everything)."),
            .flag("allow-destructive", help: "Run down migrations that lose data."),
        ],
        arguments: [ArgumentSpec("N", help: "How many migrations to revert.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        guard let chosen = target(arguments, default: .count(1), io: io),
            let (migrator, _) = MigrateTool.openOne(arguments, io: io, readOnly: dryRun)
        else { return MigrateTool.openFailure }
        let options = Migrator.Options(allowDestructive: arguments.flag("allow-destructive"))
        return runMigrations([migrator], io: io) { () throws(MigratorError) in
            if dryRun {
                for script in try migrator.pendingDown(chosen, options: options) { io.writeOutput("-- \(script.downFile)\n\(script.down)\n") }
                return
            }
            let reverted = try migrator.down(chosen, options: options, progress: MigrateTool.Reporter(io: io).handle)
            if reverted.isEmpty { io.writeOutput("nothing to revert\n") }
        }
    }
}

enum RedoCommand: Command {
    static let spec = CommandSpec(
        name: "redo", abstract: "Revert the newest migration and apply it again.",
        discussion: "Exit status: as for down and up.",
        options: MigrateTool.common + [.flag("allow-destructive", help: "Run a down migration that loses data.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        guard let (migrator, _) = MigrateTool.openOne(arguments, io: io, readOnly: dryRun) else { return MigrateTool.openFailure }
        let options = Migrator.Options(allowDestructive: arguments.flag("allow-destructive"))
        return runMigrations([migrator], io: io) { () throws(MigratorError) in
            if dryRun {
                guard let last = try migrator.pendingDown(.count(1), options: options).first else {
                    io.writeOutput("nothing to redo\n")
                    return
                }
                io.writeOutput("-- \(last.downFile)\n\(last.down)\n-- \(last.upFile)\n\(last.up)\n")
                return
            }
            let reporter = MigrateTool.Reporter(io: io)
            let reverted = try migrator.down(.count(1), options: options, progress: reporter.handle)
            guard let last = reverted.first else {
                io.writeOutput("nothing to redo\n")
                return
            }
            try migrator.up(.version(last.version), progress: reporter.handle)
        }
    }
}

enum CompleteCommand: Command {
    static let spec = CommandSpec(
        name: "complete", abstract: "Contract the expanded online migration: remove what only the previous app version used.",
        discussion:
            "Run once no instance of the previous app version is left. A killed run resumes where it stopped. Exit status: 0 done (or nothing to complete), 1 refused or failed, 2 usage or I/O error, 3 locked, 130 or 143 interrupted.",
        options: MigrateTool.common + MigrateTool.online)

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        MigrateTool.runPhase(
            arguments, io: io, dryRunPhases: [.expanded, .contract], file: { ($0.contractFile, $0.contract) }, nothing: "to complete",
            run: { migrator, options, progress throws(MigratorError) in try migrator.complete(options: options, progress: progress) })
    }
}

enum RollbackCommand: Command {
    static let spec = CommandSpec(
        name: "rollback", abstract: "Undo the expand of the online migration in progress, keeping the rows either app version wrote.",
        discussion:
            "Run before `complete`, once no instance of the new app version is left. Exit status: 0 done (or nothing to roll back), 1 refused or failed, 2 usage or I/O error, 3 locked, 130 or 143 interrupted.",
        options: MigrateTool.common + MigrateTool.online)

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        MigrateTool.runPhase(
            arguments, io: io, dryRunPhases: [.expand, .expanded, .rollback], file: { ($0.downFile, $0.down) }, nothing: "in progress",
            run: { migrator, options, progress throws(MigratorError) in try migrator.rollback(options: options, progress: progress) })
    }
}

enum BaselineCommand: Command {
    static let spec = CommandSpec(
        name: "baseline", abstract: "Record migrations up to VERSION as applied without running them (adopt an existing database).",
        discussion:
            "The database must have every table and column of VERSION (from its snapshot); otherwise nothing is recorded. On PostgreSQL the live tables are also compared with what VERSION's migrations build (types, nullability, defaults, keys, foreign keys and their actions, uniques, indexes, checks, partitioning): each difference is listed, and nothing is recorded unless --accept-differences. Exit status: 0 recorded (or, with --dry-run, would be), 1 refused, 2 usage or I/O error, 3 locked.",
        options: MigrateTool.common + [.flag("accept-differences", help: "PostgreSQL: record VERSION although the live tables differ from it (the differences are listed).")],
        arguments: [ArgumentSpec("VERSION", help: "The version the database is at.", isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let version = Int(arguments.arguments[0]) else {
            io.writeError("migrate: error: VERSION must be a number, found '\(arguments.arguments[0])'\n")
            return .usageOrIO
        }
        let dryRun = arguments.flag("dry-run")
        guard let (migrator, database) = MigrateTool.openOne(arguments, io: io, readOnly: dryRun) else { return MigrateTool.openFailure }
        // Compared before anything is recorded, once the migrator's own check (every table and
        // column of the version) passes: a database lacking some is refused whatever the flag.
        let differences: [ShapeDifference]
        do {
            differences = (try? migrator.pendingBaseline(version)) == nil ? [] : try BaselineCheck.differences(migrator, version: version) ?? []
        } catch {
            io.writeError("migrate: error: cannot compare \(database) with version \(version): \(error)\n")
            return .usageOrIO
        }
        if !differences.isEmpty {
            let accepted = arguments.flag("accept-differences")
            io.writeError(
                "migrate: \(accepted ? "warning" : "error"): \(database) differs from \(migrator.schema) version \(version) in \(differences.count) way\(differences.count == 1 ? "" : "s"):\n"
                    + differences.map { "  \($0)\n" }.joined()
                    + (accepted ? "" : "nothing was recorded: change the database (or the schema) until they agree, or pass --accept-differences to record it as it is\n"))
            if !accepted { return MigrateTool.refused }
        }
        return runMigrations([migrator], io: io) { () throws(MigratorError) in
            let scripts = dryRun ? try migrator.pendingBaseline(version) : try migrator.baseline(version)
            let verb = dryRun ? "would record" : "recorded"
            for script in scripts { io.writeOutput("\(verb) \(script.label) as applied (not run)\n") }
            io.writeOutput(
                scripts.isEmpty
                    ? "\(database): \(migrator.schema) is already recorded at version \(version) or later\n"
                    : "\(database) \(dryRun ? "would be" : "is") recorded at \(migrator.schema) version \(version)\n")
        }
    }
}

enum RepairCommand: Command {
    static let spec = CommandSpec(
        name: "repair", abstract: "Fix the history: forget migrations whose tables are absent, record checksums of reviewed edits, clear notes of lost attempts.",
        discussion: """
            Lists the changes and asks before making them (--yes skips the question; --dry-run only lists). \
            A recorded migration is forgotten when the database lacks tables or columns of its snapshot \
            and of every newer recorded one (a baseline at the wrong version, a failed hand-run migration); \
            `up` then runs it. Exit status: 0 repaired or nothing to repair, 1 declined or refused, 2 usage or I/O error, 3 locked.
            """,
        options: MigrateTool.common + [.flag("yes", short: "y", help: "Make the changes without asking.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        guard let (migrators, database) = MigrateTool.open(arguments, io: io, allSchemas: true, readOnly: dryRun) else { return MigrateTool.openFailure }
        var declined = false
        let status = runMigrations(migrators, io: io) { () throws(MigratorError) in
            var plans: [(Migrator, [Migrator.RepairAction])] = []
            for migrator in migrators {
                let plan = try migrator.repairPlan()
                if !plan.isEmpty { plans.append((migrator, plan)) }
            }
            guard !plans.isEmpty else {
                io.writeOutput("\(database): the history needs no repair.\n")
                return
            }
            for (migrator, plan) in plans {
                io.writeOutput("\(migrator.schema) on \(database):\n" + plan.map { "  - \($0)\n" }.joined())
            }
            if dryRun { return }
            if !arguments.flag("yes") {
                io.writeOutput("Make these changes? [y/N] ")
                let answer = io.readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
                guard answer == "y" || answer == "yes" else {
                    io.writeOutput(answer == nil ? "\nno answer (pass --yes to repair without asking); nothing changed\n" : "nothing changed\n")
                    declined = true
                    return
                }
            }
            for (migrator, _) in plans {
                let made = try migrator.repair()
                io.writeOutput("repaired \(migrator.schema): \(made.count) change\(made.count == 1 ? "" : "s")\n")
            }
        }
        return declined ? MigrateTool.refused : status
    }
}

enum ValidateMigrationsCommand: Command {
    static let spec = CommandSpec(
        name: "validate", abstract: "Check applied migrations against their files (every schema unless --dir).",
        discussion:
            "Reads only: a missing SQLite file is an empty database, not created. Exit status: 0 consistent, 1 an applied file changed or is missing, or a pending one is out of order, 2 usage or I/O error.",
        options: MigrateTool.common)

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let (migrators, database) = MigrateTool.open(arguments, io: io, allSchemas: true, readOnly: true) else { return MigrateTool.openFailure }
        var failed = false
        for migrator in migrators {
            do {
                let problems = try migrator.validate()
                if problems.isEmpty {
                    io.writeOutput("\(database): applied migrations of \(migrator.schema) match their files.\n")
                } else {
                    failed = true
                    io.writeError(problems.map { "migrate: error: \(MigrateAdvice.message($0))\n" }.joined())
                }
            } catch {
                io.writeError("migrate: error: \(MigrateAdvice.message(error))\n")
                return MigrateTool.exitCode(for: error)
            }
        }
        return failed ? MigrateTool.refused : .success
    }
}

enum StatusCommand: Command {
    static let spec = CommandSpec(
        name: "status", abstract: "List every migration: applied (when, by whom, how long, checksum), pending, running or interrupted.",
        discussion: "Reads only: a missing SQLite file is an empty database, not created.",
        options: MigrateTool.common + [.value("format", short: "f", valueName: "format", help: "Output format.", allowed: ["text", "json"], defaultValue: "text")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let (migrators, _) = MigrateTool.open(arguments, io: io, allSchemas: true, readOnly: true) else { return MigrateTool.openFailure }
        var rows: [(schema: String, status: Migrator.Status, attempt: Migrator.Attempt?)] = []
        var orphans: [(schema: String, attempt: Migrator.Attempt)] = []
        var online: [String: (state: Migrator.OnlineState, served: [Int])] = [:]
        do {
            for migrator in migrators {
                if let state = try migrator.onlineProgress() { online[migrator.schema] = (state, try migrator.servedVersions()) }
                let attempts = try migrator.attempts()
                let statuses = try migrator.status()
                rows += statuses.map { status in (migrator.schema, status, attempts.last { $0.version == status.version }) }
                let known = Set(statuses.map(\.version))
                orphans += attempts.filter { !known.contains($0.version) }.map { (migrator.schema, $0) }
            }
        } catch {
            io.writeError("migrate: error: \(MigrateAdvice.message(error))\n")
            return MigrateTool.exitCode(for: error)
        }
        if arguments.value("format") == "json" {
            let q = DiagnosticRenderer.jsonString
            let items = rows.map { entry -> String in
                let row = entry.status
                var fields = ["\"schema\": \(q(entry.schema))", "\"version\": \(row.version)", "\"name\": \(q(row.name))"]
                switch row.state {
                case .applied(let at, let milliseconds, let matches, let by):
                    fields += [
                        "\"state\": \"applied\"", "\"appliedAt\": \(q(at))", "\"appliedBy\": \(by.map(q) ?? "null")", "\"durationMs\": \(milliseconds)",
                        "\"checksum\": \"\(matches ? "ok" : "changed")\"",
                    ]
                case .pending:
                    fields += ["\"state\": \"pending\""]
                case .fileMissing(let at):
                    fields += ["\"state\": \"missing-file\"", "\"appliedAt\": \(q(at))"]
                }
                if let (state, served) = online[entry.schema], state.version == row.version {
                    var online = [
                        "\"phase\": \"\(state.phase.rawValue)\"", "\"sectionsDone\": \(state.section)", "\"startedAt\": \(q(state.startedAt))",
                        "\"resumedAt\": \(state.resumedAt.map(q) ?? "null")",
                        "\"served\": [\(served.map { q(VersionSchema.name(schema: entry.schema, version: $0)) }.joined(separator: ", "))]",
                    ]
                    if state.phase != .expanded {
                        online.append("\"state\": \"\(state.runningInBackend == nil ? "interrupted" : "running")\"")
                        if let pid = state.runningInBackend { online.append("\"backendPid\": \(pid)") }
                    }
                    if let backfill = state.backfill, state.phase == .expand || state.phase == .contract || state.phase == .rollback {
                        let number: (Double?) -> String = { $0.map { String(format: "%.1f", $0) } ?? "null" }
                        online.append(
                            "\"backfill\": {\"table\": \(q(backfill.table)), \"rowsDone\": \(backfill.rowsDone), \"rowsEstimate\": \(backfill.rowsEstimate.map(String.init) ?? "null"), \"rowsPerSecond\": \(number(backfill.rowsPerSecond)), \"secondsLeft\": \(number(backfill.secondsLeft)), \"updatedAt\": \(q(backfill.updatedAt))}"
                        )
                    }
                    fields.append("\"online\": {" + online.joined(separator: ", ") + "}")
                }
                if let attempt = entry.attempt {
                    fields.append(
                        "\"attempt\": {\"direction\": \"\(attempt.direction.rawValue)\", \"startedAt\": \(q(attempt.startedAt)), \"state\": \"\(attempt.runningInBackend == nil ? "interrupted" : "running")\"\(attempt.runningInBackend.map { ", \"backendPid\": \($0)" } ?? "")}"
                    )
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
            var state: String =
                switch row.state {
                case .applied(let at, let milliseconds, let matches, let by): "applied \(at)\(by.map { " by \($0)" } ?? "") in \(milliseconds) ms" + (matches ? "" : ", FILE CHANGED")
                case .pending: "pending"
                case .fileMissing(let at): "applied \(at), FILE MISSING"
                }
            if let attempt = entry.attempt { state += "; " + describe(attempt) }
            if let (online, served) = online[entry.schema], online.version == row.version { state += "; " + describe(online, served: served, schema: entry.schema) }
            out += String(format: "%04d     ", row.version) + padded + state + "\n"
        }
        for (schema, attempt) in orphans {
            out += "note: \(schema) migration \(String(format: "%04d", attempt.version)) has no file here; \(describe(attempt))\n"
        }
        io.writeOutput(out)
        return .success
    }

    static func describe(_ state: Migrator.OnlineState, served: [Int], schema: String) -> String {
        let names = served.map { VersionSchema.name(schema: schema, version: $0) }.joined(separator: " and ")
        let since = "since \(state.startedAt)" + (state.resumedAt.map { " (resumed \($0))" } ?? "")
        var progress = "\(state.section) sections done"
        if let backfill = state.backfill, state.phase != .expanded { progress += "; " + describe(backfill) }
        // The migrator lock's holder tells a phase running now from one a lost run left.
        let running = state.runningInBackend.map { "RUNNING in backend pid \($0)" }
        switch state.phase {
        case .expand: return "EXPANDING \(since), \(progress); " + (running ?? "INTERRUPTED: `migrate up` resumes it, `migrate rollback` undoes it")
        case .expanded: return "EXPANDED: serving \(names); `migrate complete` once no app of the previous version runs, or `migrate rollback`"
        case .contract: return "CONTRACTING \(since), \(progress); " + (running ?? "INTERRUPTED: `migrate complete` finishes it")
        case .rollback: return "ROLLING BACK \(since), \(progress); " + (running ?? "INTERRUPTED: `migrate rollback` finishes it")
        }
    }

    /// `backfill of orders: 550000 of about 1000000 rows (55%), 12000 rows/s, about 38 s left`.
    static func describe(_ backfill: Migrator.BackfillProgress) -> String {
        var text = "backfill of \(backfill.table): \(backfill.rowsDone)"
        if let estimate = backfill.rowsEstimate, estimate > 0 {
            text += " of about \(estimate) rows (\(min(100, backfill.rowsDone * 100 / estimate))%)"
        } else {
            text += " rows"
        }
        if let rate = backfill.rowsPerSecond { text += ", \(Int(rate.rounded())) rows/s" }
        if let left = backfill.secondsLeft { text += ", about \(Int(left.rounded(.up))) s left" }
        return text + " at \(backfill.updatedAt)"
    }

    static func describe(_ attempt: Migrator.Attempt) -> String {
        if let pid = attempt.runningInBackend {
            return "\(attempt.direction.rawValue) RUNNING since \(attempt.startedAt) (backend pid \(pid))"
        }
        return "\(attempt.direction.rawValue) INTERRUPTED at \(attempt.startedAt) (process or connection lost; rolled back; `migrate up` runs it again, `migrate repair` clears this note)"
    }
}

/// SIGINT and SIGTERM while migrations run: the first sends the engine's cancel (libpq's cancel
/// request, SQLite's interrupt) and lets the migration roll back, so no backend is left queued
/// for a lock; a second one quits at once.
enum Interrupts {
    final class State: @unchecked Sendable {
        let lock = NSLock()
        var signal: Int32 = 0
        var repeats: DispatchSourceTimer?
    }

    static let state = State()

    /// 128 plus the signal, as shells report it: 130 for SIGINT, 143 for SIGTERM.
    static var exitCode: ExitCode {
        let signal = state.lock.withLock { state.signal }
        return ExitCode(128 + (signal == 0 ? SIGINT : signal))
    }

    static func whileRunning<T>(_ cancellation: MigrationCancellation, io: CommandIO, _ body: () -> T) -> T {
        let queue = DispatchQueue(label: "migrate.interrupts")
        let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { received(number, cancellation: cancellation, io: io, queue: queue) }
            source.resume()
            return source
        }
        defer {
            for source in sources { source.cancel() }
            queue.sync { state.repeats?.cancel() }
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
        }
        return body()
    }

    private static func received(_ number: Int32, cancellation: MigrationCancellation, io: CommandIO, queue: DispatchQueue) {
        let name = number == SIGINT ? "SIGINT" : "SIGTERM"
        let first = state.lock.withLock { () -> Bool in
            defer { if state.signal == 0 { state.signal = number } }
            return state.signal == 0
        }
        guard first else {
            io.writeError("migrate: \(name) again: quitting now; the server rolls back what the closed connection leaves\n")
            cancellation.cancel()
            _exit(128 + number)
        }
        io.writeError("migrate: \(name) received: cancelling the statement in progress and rolling the migration back (send it again to quit at once)\n")
        cancellation.cancel()
        // A request that reached the server between two statements cancelled nothing: repeat it
        // until the migration has stopped.
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 0.5, repeating: 0.5)
        timer.setEventHandler { cancellation.cancel() }
        timer.resume()
        state.repeats = timer
    }
}
