import Foundation
import MigrationFiles
import SchemaMetadata
import SQLDialects
import SQLiteKit

/// Brings a database to a schema's current version, and back: the library behind `migrate`,
/// for applications to call at start-up. It never prints; progress arrives as events.
public final class Migrator {
    public let connection: SQLiteConnection
    public let schema: String
    public let scripts: [MigrationScript]

    /// The history table; several schemas share it, one row per applied migration.
    public static let historyTable = "schemagen_migrations"

    public init(connection: SQLiteConnection, schema: String, scripts: [MigrationScript], lockTimeoutSeconds: Double = 30) {
        self.connection = connection
        self.schema = schema
        self.scripts = scripts.sorted { $0.version < $1.version }
        self.lockTimeout = lockTimeoutSeconds
        connection.setBusyTimeout(milliseconds: Int32(min(lockTimeoutSeconds * 1000, Double(Int32.max))))
    }

    private let lockTimeout: Double

    /// A migrator for migrations embedded in generated code:
    /// `Migrator(connection: db, schema: FlightsSchema.name, embedded: FlightsSchema.migrations)`.
    public convenience init(connection: SQLiteConnection, schema: String, embedded: [MigrationScript], lockTimeoutSeconds: Double = 30) {
        self.init(connection: connection, schema: schema, scripts: embedded, lockTimeoutSeconds: lockTimeoutSeconds)
    }

    /// Quotes the names of the migrator's own SQL.
    static let dialect = SQLiteDialect()

    // MARK: - History

    /// A migration recorded in the history table.
    public struct AppliedRecord: Sendable, Hashable {
        public var version: Int
        public var name: String
        public var checksum: String
        public var appliedAt: String
        public var durationMilliseconds: Int
    }

    static let createHistory = """
        CREATE TABLE IF NOT EXISTS \(dialect.quote(historyTable)) (
            "schema" TEXT NOT NULL,
            "version" INTEGER NOT NULL,
            "name" TEXT NOT NULL,
            "checksum" TEXT NOT NULL,
            "applied_at" TEXT NOT NULL,
            "duration_ms" INTEGER NOT NULL,
            PRIMARY KEY ("schema", "version")
        ) STRICT;
        """

    /// The applied migrations of this schema, oldest first.
    public func history() throws(MigratorError) -> [AppliedRecord] {
        do throws(SQLiteError) {
            let exists = try connection.query("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(Self.historyTable)])
            guard !exists.isEmpty else { return [] }
            return try connection.query("SELECT version, name, checksum, applied_at, duration_ms FROM \(Self.dialect.quote(Self.historyTable)) WHERE schema = ? ORDER BY version", [.text(schema)])
                .compactMap { row in
                    guard case .integer(let version) = row[0], case .text(let name) = row[1], case .text(let checksum) = row[2],
                          case .text(let appliedAt) = row[3], case .integer(let duration) = row[4] else { return nil }
                    return AppliedRecord(version: Int(version), name: name, checksum: checksum, appliedAt: appliedAt, durationMilliseconds: Int(duration))
                }
        } catch {
            throw .database(error)
        }
    }

    // MARK: - Status

    public struct Status: Sendable, Hashable {
        public enum State: Sendable, Hashable {
            case applied(at: String, milliseconds: Int, checksumMatches: Bool)
            case pending
            /// Applied, but no file has this version.
            case fileMissing(at: String)
        }
        public var version: Int
        public var name: String
        public var state: State
    }

    public func status() throws(MigratorError) -> [Status] {
        let applied = Dictionary(try history().map { ($0.version, $0) }, uniquingKeysWith: { a, _ in a })
        var result: [Status] = scripts.map { script in
            guard let record = applied[script.version] else { return Status(version: script.version, name: script.name, state: .pending) }
            return Status(version: script.version, name: script.name,
                          state: .applied(at: record.appliedAt, milliseconds: record.durationMilliseconds, checksumMatches: record.checksum == script.checksum))
        }
        let known = Set(scripts.map(\.version))
        for record in applied.values where !known.contains(record.version) {
            result.append(Status(version: record.version, name: record.name, state: .fileMissing(at: record.appliedAt)))
        }
        return result.sorted { $0.version < $1.version }
    }

    /// Problems between the database's history and the files, without changing anything.
    public func validate() throws(MigratorError) -> [MigratorError] {
        let applied = try history()
        let byVersion = Dictionary(scripts.map { ($0.version, $0) }, uniquingKeysWith: { a, _ in a })
        var problems: [MigratorError] = []
        for record in applied {
            guard let script = byVersion[record.version] else {
                problems.append(.missingFile(version: record.version, name: record.name))
                continue
            }
            if script.checksum != record.checksum { problems.append(.changedAfterApply(version: record.version, file: script.upFile)) }
        }
        if let newest = applied.last?.version {
            let appliedVersions = Set(applied.map(\.version))
            for script in scripts where script.version < newest && !appliedVersions.contains(script.version) {
                problems.append(.outOfOrder(file: script.upFile, newestApplied: newest))
            }
        }
        return problems
    }

    // MARK: - Progress

    public enum Event: Sendable {
        case started(MigrationScript, direction: Direction, statements: Int)
        case statement(index: Int, of: Int)
        /// A table rebuild's row copy under way: rows written so far, of the rows the old table holds.
        case copyingRows(table: String, copied: Int, of: Int)
        /// SQLite is busy inside one long statement that is not a row copy.
        case working
        case finished(MigrationScript, direction: Direction, milliseconds: Int)
        /// Another migrator applied it while this one waited for the lock.
        case skipped(MigrationScript)
    }

    public enum Direction: String, Sendable { case up, down }

    /// Which migrations to run.
    public enum Target: Sendable, Hashable {
        case all
        case count(Int)
        /// Up: up to and including this version. Down: down to this version (0 = everything).
        case version(Int)
    }

    public struct Options: Sendable {
        public var allowOutOfOrder = false
        public var allowDestructive = false
        public init(allowOutOfOrder: Bool = false, allowDestructive: Bool = false) {
            self.allowOutOfOrder = allowOutOfOrder
            self.allowDestructive = allowDestructive
        }
    }

    // MARK: - Up and down

    /// The migrations `up` would apply, in order, after checking applied ones against their files.
    public func pendingUp(_ target: Target, options: Options = Options()) throws(MigratorError) -> [MigrationScript] {
        if let problem = try validate().first(where: { if case .outOfOrder = $0 { return false } else { return true } }) { throw problem }
        let applied = Set(try history().map(\.version))
        let newest = applied.max() ?? 0
        var pending = scripts.filter { !applied.contains($0.version) }
        if !options.allowOutOfOrder, let early = pending.first(where: { $0.version < newest }) {
            throw .outOfOrder(file: early.upFile, newestApplied: newest)
        }
        switch target {
        case .all: break
        case .count(let count): pending = Array(pending.prefix(max(0, count)))
        case .version(let version):
            guard version == 0 || scripts.contains(where: { $0.version == version }) else { throw .unknownVersion(version) }
            pending = pending.filter { $0.version <= version }
        }
        return pending
    }

    /// The migrations `down` would revert, newest first.
    public func pendingDown(_ target: Target, options: Options = Options()) throws(MigratorError) -> [MigrationScript] {
        if let problem = try validate().first(where: { if case .outOfOrder = $0 { return false } else { return true } }) { throw problem }
        let applied = try history().map(\.version).sorted(by: >)
        let byVersion = Dictionary(scripts.map { ($0.version, $0) }, uniquingKeysWith: { a, _ in a })
        var selected: [Int]
        switch target {
        case .all: selected = applied
        case .count(let count): selected = Array(applied.prefix(max(0, count)))
        case .version(let version):
            guard version == 0 || byVersion[version] != nil else { throw .unknownVersion(version) }
            selected = applied.filter { $0 > version }
        }
        let result = selected.compactMap { byVersion[$0] }
        if !options.allowDestructive {
            for script in result where try script.header(.down).losesData { throw .destructiveDown(file: script.downFile) }
        }
        return result
    }

    /// Applies pending migrations, each in its own transaction with its history row.
    @discardableResult
    public func up(_ target: Target = .all, options: Options = Options(), progress: @escaping (Event) -> Void = { _ in }) throws(MigratorError) -> [MigrationScript] {
        let pending = try pendingUp(target, options: options)
        var applied: [MigrationScript] = []
        for script in pending where try run(script, direction: .up, progress: progress) {
            applied.append(script)
        }
        return applied
    }

    /// Reverts applied migrations, newest first (one by default).
    @discardableResult
    public func down(_ target: Target = .count(1), options: Options = Options(), progress: @escaping (Event) -> Void = { _ in }) throws(MigratorError) -> [MigrationScript] {
        let selected = try pendingDown(target, options: options)
        var reverted: [MigrationScript] = []
        for script in selected where try run(script, direction: .down, progress: progress) {
            reverted.append(script)
        }
        return reverted
    }

    /// Records migrations up to `version` as applied without running them: adopting a database
    /// that already has this schema.
    public func baseline(_ version: Int) throws(MigratorError) {
        guard scripts.contains(where: { $0.version == version }) else { throw .unknownVersion(version) }
        try transaction { () throws(MigratorError) in
            let applied = Set(try history().map(\.version))
            for script in scripts where script.version <= version && !applied.contains(script.version) {
                try record(script, milliseconds: 0)
            }
        }
    }

    // MARK: - One migration

    /// Runs one migration in an immediate transaction; false when another migrator did it first.
    /// The file's header says how: foreign keys off around it, outside a transaction, which row
    /// copies to report.
    private func run(_ script: MigrationScript, direction: Direction, progress: @escaping (Event) -> Void) throws(MigratorError) -> Bool {
        let sql = direction == .up ? script.up : script.down
        let file = direction == .up ? script.upFile : script.downFile
        let header = try script.header(direction)
        let foreignKeysWereOn = (try? connection.query("PRAGMA foreign_keys;")) == [[.integer(1)]]
        // PRAGMA foreign_keys does nothing inside a transaction, so it goes around it.
        if header.foreignKeysOff { try database { () throws(SQLiteError) in try connection.execute("PRAGMA foreign_keys = OFF;") } }
        defer {
            if header.foreignKeysOff, foreignKeysWereOn { try? connection.execute("PRAGMA foreign_keys = ON;") }
        }
        guard header.runsInTransaction else { return try runOutsideTransaction(script, sql: sql, file: file, direction: direction, header: header, progress: progress) }
        let started = Date()
        var ran = false
        try transaction { () throws(MigratorError) in
            // Another migrator may have run it while this one waited for the lock.
            let applied = Set(try history().map(\.version))
            if (direction == .up) == applied.contains(script.version) {
                progress(.skipped(script))
                return
            }
            try execute(sql, file: file, script: script, direction: direction, header: header, progress: progress)
            if header.foreignKeysOff {
                let violations = try database { () throws(SQLiteError) in try connection.query("PRAGMA foreign_key_check;") }
                if !violations.isEmpty {
                    throw .foreignKeyViolations(file: file, violations: violations.prefix(20).map { row in
                        "table \(row[0]) row \(row[1]) references \(row[2]) (foreign key \(row[3]))"
                    } + (violations.count > 20 ? ["... and \(violations.count - 20) more"] : []))
                }
            }
            let milliseconds = Int(Date().timeIntervalSince(started) * 1000)
            try recordOrForget(script, direction: direction, milliseconds: milliseconds)
            ran = true
            progress(.finished(script, direction: direction, milliseconds: milliseconds))
        }
        return ran
    }

    /// A migration whose header says `transaction: no`: its statements commit one by one, then
    /// its history row in a transaction of its own. A failure leaves it unrecorded.
    private func runOutsideTransaction(_ script: MigrationScript, sql: String, file: String, direction: Direction, header: MigrationHeader,
                                       progress: @escaping (Event) -> Void) throws(MigratorError) -> Bool {
        let applied = Set(try history().map(\.version))
        if (direction == .up) == applied.contains(script.version) {
            progress(.skipped(script))
            return false
        }
        let started = Date()
        do {
            try execute(sql, file: file, script: script, direction: direction, header: header, progress: progress)
        } catch {
            guard case .statementFailed(let file, let statement, let line, let message) = error else { throw error }
            throw .failedOutsideTransaction(file: file, statement: statement, line: line, message: message)
        }
        let milliseconds = Int(Date().timeIntervalSince(started) * 1000)
        try transaction { () throws(MigratorError) in try recordOrForget(script, direction: direction, milliseconds: milliseconds) }
        progress(.finished(script, direction: direction, milliseconds: milliseconds))
        return true
    }

    /// Runs the statements of a file, reporting each, and the rows of the header's row copies.
    private func execute(_ sql: String, file: String, script: MigrationScript, direction: Direction, header: MigrationHeader,
                         progress: @escaping (Event) -> Void) throws(MigratorError) {
        let statements = SQLiteConnection.statements(in: sql)
        progress(.started(script, direction: direction, statements: statements.count))
        // Counting the old tables first costs little next to copying them.
        var copies: [String: (table: String, rows: Int)] = [:]
        for copy in header.rowCopies {
            if case .integer(let rows)? = (try? connection.query("SELECT count(*) FROM \(Self.dialect.quote(copy.from))"))?.first?.first {
                copies[copy.to] = (copy.from, Int(rows))
            }
        }
        connection.setProgressHandler(every: 100_000) { [connection] in
            if let table = connection.currentInsertTable, let copy = copies[table], let copied = connection.currentInsertCount {
                progress(.copyingRows(table: copy.table, copied: copied, of: copy.rows))
            } else {
                progress(.working)
            }
        }
        defer { connection.setProgressHandler(every: 0, nil) }
        do throws(SQLiteConnection.ScriptError) {
            try connection.countingInsertedRows { () throws(SQLiteConnection.ScriptError) in
                try connection.executeScript(sql) { position in
                    connection.resetInsertCount()
                    progress(.statement(index: position.index, of: statements.count))
                }
            }
        } catch {
            throw .statementFailed(file: file, statement: error.position.index, line: error.position.line, message: error.error.message)
        }
    }

    private func recordOrForget(_ script: MigrationScript, direction: Direction, milliseconds: Int) throws(MigratorError) {
        if direction == .up {
            try record(script, milliseconds: milliseconds)
        } else {
            try database { () throws(SQLiteError) in
                _ = try connection.query("DELETE FROM \(Self.dialect.quote(Self.historyTable)) WHERE schema = ? AND version = ?", [.text(schema), .integer(Int64(script.version))])
            }
        }
    }

    private func record(_ script: MigrationScript, milliseconds: Int) throws(MigratorError) {
        try database { () throws(SQLiteError) in
            _ = try connection.query(
                "INSERT INTO \(Self.dialect.quote(Self.historyTable)) (schema, version, name, checksum, applied_at, duration_ms) VALUES (?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?)",
                [.text(schema), .integer(Int64(script.version)), .text(script.name), .text(script.checksum), .integer(Int64(milliseconds))])
        }
    }

    /// BEGIN IMMEDIATE takes the write lock at once (waiting up to the busy timeout), so two
    /// migrators never interleave; anything thrown rolls everything back.
    private func transaction(_ body: () throws(MigratorError) -> Void) throws(MigratorError) {
        do {
            try connection.execute("BEGIN IMMEDIATE;")
        } catch {
            if error.primary == .busy { throw .locked(seconds: lockTimeout) }
            throw .database(error)
        }
        do {
            try database { () throws(SQLiteError) in try connection.execute(Self.createHistory) }
            try body()
            try database { () throws(SQLiteError) in try connection.execute("COMMIT;") }
        } catch {
            if connection.isInTransaction { try? connection.execute("ROLLBACK;") }
            throw error
        }
    }

    private func database<T>(_ body: () throws(SQLiteError) -> T) throws(MigratorError) -> T {
        do {
            return try body()
        } catch {
            if error.primary == .busy { throw .locked(seconds: lockTimeout) }
            throw .database(error)
        }
    }
}
