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
            name: "migrate", version: "0.2.0",
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
    static func open(_ arguments: ParsedArguments, io: CommandIO, allSchemas: Bool = false, readOnly: Bool = false) -> Result<([Migrator], String), CommandFailure> {
        let usage = Result<([Migrator], String), CommandFailure>.failure(CommandFailure(.usageOrIO))
        guard let config = config(arguments, io: io),
            let location = databaseLocation(arguments, config: config, io: io)
        else { return usage }
        guard let directories = directoryPaths(arguments, config: config, io: io, allowSeveral: allSchemas, postgres: location.isPostgres) else { return usage }
        var settings = DatabaseOpener.MigrationSessionSettings()
        var lockTimeout = 30.0
        let timeouts: [(String, (Double) -> Void)] = [
            ("ddl-lock-timeout", { settings.lockTimeout = $0 }), ("connect-retry", { settings.connectRetry = $0 }),
            ("statement-timeout", { settings.statementTimeout = $0 }), ("lock-timeout", { lockTimeout = $0 }),
            ("idle-in-transaction-timeout", { settings.idleInTransactionTimeout = $0 }),
        ]
        guard applyNumbers(timeouts, from: arguments, expecting: "a number of seconds", io: io) else { return usage }
        let database: any MigrationDatabase
        do {
            database = try DatabaseOpener.open(location, readOnly: readOnly, lockWait: lockTimeout, postgres: settings)
        } catch {
            io.writeError("migrate: error: \(MigrateAdvice.message(error))\n")
            return .failure(CommandFailure(exitCode(for: error)))
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
                return .failure(CommandFailure(exitCode(for: error)))
            }
        }
        return .success((migrators, database.label))
    }

    /// Opens exactly one schema's migrations (commands that change one schema at a time).
    static func openOne(_ arguments: ParsedArguments, io: CommandIO, readOnly: Bool = false) -> Result<(Migrator, String), CommandFailure> {
        open(arguments, io: io, readOnly: readOnly).flatMap { migrators, database in
            // `--dir` names one folder, so there is exactly one migrator.
            migrators.first.map { .success(($0, database)) } ?? .failure(CommandFailure(.usageOrIO))
        }
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
        let found = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted().filter { name in
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isFolder), isFolder.boolValue else { return false }
            // The store's own migrations (PostgreSQL only) run with every schema's, last, so
            // one that fails holds back no app schema; a command on one schema names them with --dir.
            return name != StoreTableMigrations.schema || (postgres && allowSeveral)
        }
        let folders = found.filter { $0 != StoreTableMigrations.schema } + found.filter { $0 == StoreTableMigrations.schema }
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
            "device-retention", valueName: "days",
            help: "complete: refuse to drop a version that sync devices used within this many days (the devices would be stranded).", defaultValue: "30"),
        .flag("strand-devices", help: "complete: drop the version even so; its devices cannot sync until their app is updated."),
        .value(
            "online-lock-timeout", valueName: "ms",
            help: "Online migrations: how long each DDL statement may wait for a lock (and so hold app queries behind it) before it gives up and is retried.",
            defaultValue: "500"),
        FailoverResume.option,
        .value("lock-retries", valueName: "count", help: "Online migrations: how many times a section that did not get its locks is retried, with growing pauses.", defaultValue: "20"),
        .flag(
            "drop-uncarried",
            help:
                "Online migrations that copy a table: drop, with a warning each, what was made on it outside the schema and cannot be made again on the copy (an index on a column the version drops, say), instead of stopping."
        ),
        .value(
            "max-replica-lag", valueName: "ms",
            help: "PostgreSQL backfills: before each batch, wait while a standby replays more than this far behind (0: never wait). Config: maxReplicaLag.",
            defaultValue: "1000"),
        .value(
            "replica-lag-timeout", valueName: "seconds",
            help: "PostgreSQL backfills: give up (exit 1, progress kept) after waiting this long for a lagging standby. Default: wait as long as it takes. Config: replicaLagTimeout."),
        .value("max-wal-rate", valueName: "MB/s", help: "PostgreSQL backfills: pause so the server's WAL grows at most this fast. Default: off. Config: maxWalRate."),
        .value("batch-time", valueName: "ms", help: "Backfills: size batches to take about this long (0: the file's batch size).", defaultValue: "200"),
    ]

    /// `complete` and `rollback`: the phase `run` makes on every schema's migrator, or with
    /// `--dry-run` the phase file that would run (found by `file` in the states of `dryRunPhases`).
    static func runPhase(
        _ arguments: ParsedArguments, io: CommandIO, dryRunPhases: Set<Migrator.OnlineState.Phase>, file: (MigrationScript) -> (String?, String?), nothing: String,
        run: (Migrator, Migrator.Options, @escaping (Migrator.Event) -> Void) throws(MigratorError) -> MigrationScript?
    ) -> ExitCode {
        guard let options = onlineOptions(arguments, io: io) else { return .usageOrIO }
        let dryRun = arguments.flag("dry-run")
        return FailoverResume.run(arguments, io: io, allSchemas: true, readOnly: dryRun) { (migrators, database, reporter) throws(MigratorError) in
            for migrator in migrators {
                if dryRun {
                    printPhase(of: migrator, phases: dryRunPhases, file: file, io: io)
                } else if try run(migrator, options, reporter.handle) == nil {
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
        options.dropUncarried = arguments.flag("drop-uncarried")
        options.strandDevices = arguments.flag("strand-devices")
        let counts: [(String, (Double) -> Void)] = [
            ("online-lock-timeout", { options.lockTimeoutMilliseconds = Int($0) }), ("lock-retries", { options.lockRetries = Int($0) }),
            ("max-replica-lag", { options.maxReplicaLagMilliseconds = Int($0) }), ("batch-time", { options.batchTargetMilliseconds = Int($0) }),
        ]
        guard applyNumbers(counts, from: arguments, expecting: "a whole number", wholeNumbers: true, io: io) else { return nil }
        // The config file's settings, where no flag gives them.
        let config = config(arguments, io: io) ?? ProjectConfig()
        if arguments.value("max-replica-lag") == nil, let lag = config.maxReplicaLag { options.maxReplicaLagMilliseconds = Int(lag) }
        options.replicaLagTimeout = config.replicaLagTimeout
        options.maxWALMegabytesPerSecond = config.maxWalRate.flatMap { $0 > 0 ? $0 : nil }
        let rates: [(String, (Double) -> Void)] = [
            ("replica-lag-timeout", { options.replicaLagTimeout = $0 }), ("max-wal-rate", { options.maxWALMegabytesPerSecond = $0 > 0 ? $0 : nil }),
            ("device-retention", { options.deviceRetention = $0 * 86_400 }),
        ]
        guard applyNumbers(rates, from: arguments, expecting: "a number", io: io) else { return nil }
        return options
    }

    /// Hands each flag of `flags` given on the command line to its closure, as a number of at
    /// least 0 (a whole one with `wholeNumbers`); false once one is not, its error written.
    static func applyNumbers(
        _ flags: [(String, (Double) -> Void)], from arguments: ParsedArguments, expecting: String, wholeNumbers whole: Bool = false, io: CommandIO
    ) -> Bool {
        for (name, apply) in flags {
            guard let text = arguments.value(name) else { continue }
            guard let value = Double(text), value >= 0, value.isFinite, !whole || Int(text) != nil else {
                io.writeError("migrate: error: --\(name) expects \(expecting), found '\(text)'\n")
                return false
            }
            apply(value)
        }
        return true
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
                (lastScript, lastVersion) = (script.label, script.version)
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
                (lastScript, lastVersion) = ("\(script.label) (\(phase.rawValue), section \(index))", script.version)
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
            case .waitingForStandby(let wait):
                if io.outputIsTerminal { draw("\(statement): \(wait)", force: true) } else { io.writeOutput("\(current): \(wait) (\(Int(wait.waited)) s so far)\n") }
            case .standbyGone(let name):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeOutput("note: standby \(name) stopped streaming (it left pg_stat_replication); the backfill no longer waits for it\n")
            case .standbyPositionsHidden(let names):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeOutput("note: this role cannot see the replay positions of \(names.joined(separator: ", ")) (grant it pg_monitor): the backfill does not wait for them\n")
            case .pacingWAL(let seconds):
                draw("\(statement): pausing \(String(format: "%.2f", seconds)) s for the WAL budget")
            case .carrying(let objects):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeOutput("note: carried to the copy of the table (made outside the schema):\n" + objects.map { "  \($0)\n" }.joined())
            case .droppingUncarried(let objects):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeError("migrate: warning: dropped, as --drop-uncarried allows (made outside the schema, it cannot be made on the copy):\n" + objects.map { "  \($0)\n" }.joined())
            case .serverWarning(let message):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeError("migrate: warning: \(message)\n")
            case .carriedAcrossRebuild(let objects):
                if io.outputIsTerminal { io.writeOutput("\r\u{1B}[K") }
                io.writeOutput("note: made again after the table rebuild (made outside the schema): \(objects.joined(separator: ", "))\n")
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
        /// The migration last started, for a failover's message.
        var lastScript: String?
        var lastVersion: Int?

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
/// `report` sees the error first and says whether to print it (a failover is handled instead).
func runMigrations(_ migrators: [Migrator], io: CommandIO, report: (MigratorError) -> Bool = { _ in true }, _ body: () throws(MigratorError) -> Void) -> ExitCode {
    guard let cancellation = migrators.first?.cancellation else { return .success }
    return Interrupts.whileRunning(cancellation, io: io) { () -> ExitCode in
        do throws(MigratorError) {
            try body()
            return .success
        } catch {
            if report(error) { io.writeError("migrate: error: \(MigrateAdvice.message(error))\n") }
            return MigrateTool.exitCode(for: error)
        }
    }
}
