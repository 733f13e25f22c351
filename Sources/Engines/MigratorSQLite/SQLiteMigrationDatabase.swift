import Foundation
import MigratorCore
import SQLDialects
import SQLiteKit
import SchemaMetadata

/// A SQLite file: the migrator's lock is the write lock `BEGIN IMMEDIATE` takes, waiting out
/// the busy timeout. Tables are rebuilt with foreign keys switched off around them, and row
/// copies report their progress.
public final class SQLiteMigrationDatabase: MigrationDatabase, ForeignKeySwitching, RowCopyProgress, RebuildCarrying {
    /// The connection migrations run on.
    public let connection: SQLiteConnection
    /// The rebuilds of the file running now, while their objects are carried.
    var carry: RebuildCarry?
    /// SQLite's dialect.
    public let dialect: any SQLDialect = SQLiteDialect()
    /// The file's path (or what the opener named it).
    public let label: String

    /// `label` names the database in messages when it is not the connection's file (a missing
    /// file read as an empty database in memory). `lockWait` is how long any statement waits
    /// for another connection's lock (the busy timeout), in seconds.
    ///
    ///     let database = SQLiteMigrationDatabase(try SQLiteConnection(path: "app.sqlite"), lockWait: 10)
    public init(_ connection: SQLiteConnection, label: String? = nil, lockWait: Double = 30) {
        self.connection = connection
        self.label = label ?? connection.path
        setBusyTimeout(seconds: lockWait)
    }

    private var busyTimeout: Int32 = 30_000

    private func setBusyTimeout(seconds: Double) {
        busyTimeout = Int32(max(0, min(seconds * 1000, Double(Int32.max))))
        connection.setBusyTimeout(milliseconds: busyTimeout)
    }

    private func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(MigratorError) -> T {
        do {
            return try body()
        } catch {
            if error.primary == .busy { throw .locked(seconds: Double(busyTimeout) / 1000) }
            throw .database(Self.failure(error, database: label))
        }
    }

    /// SQLite's error in the migrator's terms.
    public static func failure(_ error: SQLiteError, database: String) -> DatabaseFailure {
        error.failure(database: database)
    }

    /// Runs SQL; a busy database past the timeout is `.locked`.
    public func execute(_ sql: String) throws(MigratorError) { try wrap { () throws(SQLiteError) in try connection.execute(sql) } }

    /// Runs a query with `?` parameters.
    public func query(_ sql: String, _ arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]] {
        try wrap { () throws(SQLiteError) in try connection.query(sql, arguments) }
    }

    /// A statement built by construction, rendered with `?` parameters.
    public func query(_ statement: SQL) throws(MigratorError) -> [[StoredValue]] {
        let (text, arguments) = statement.rendered(for: dialect)
        return try query(text, arguments)
    }

    /// SQL without parameters.
    public func execute(_ sql: SQL) throws(MigratorError) { try execute(sql.rendered(for: dialect).text) }

    /// A migration file's statement with its own parameters.
    public func query(_ statement: MigrationScriptText, arguments: [StoredValue]) throws(MigratorError) -> [[StoredValue]] {
        try query(statement.text, arguments)
    }

    /// The statements of a script, split as SQLite splits them (triggers whole).
    public func statementCount(_ sql: String) -> Int { SQLiteConnection.statements(in: sql).count }

    /// The statements of a migration file's script.
    public func statementCount(_ script: MigrationScriptText) -> Int { statementCount(script.text) }

    /// Runs a migration file's script statement by statement.
    public func runScript(_ script: MigrationScriptText, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        try runScript(script.text, shouldStop: shouldStop, willRun: willRun)
    }

    /// Runs a script statement by statement on the connection.
    public func runScript(_ sql: String, shouldStop: () -> Bool, willRun: (Int, Int) -> Void) throws(StatementFailure) {
        do {
            try connection.executeScript(sql, shouldStop: shouldStop) { position in
                carry?.beforeStatement(position.index, line: position.line, on: connection)
                willRun(position.index, position.line)
            }
        } catch {
            throw StatementFailure(index: error.position.index, line: error.position.line, message: error.error.message)
        }
    }

    /// `BEGIN IMMEDIATE`: takes the write lock, waiting up to `timeout` seconds.
    public func beginTransaction(timeout: Double) throws(MigratorError) {
        setBusyTimeout(seconds: timeout)
        try execute("BEGIN IMMEDIATE;")
    }

    /// Commits.
    public func commit() throws(MigratorError) { try execute("COMMIT;") }
    /// Rolls back the open transaction, if any.
    public func rollback() { if connection.isInTransaction { try? connection.execute("ROLLBACK;") } }

    /// One namespace: `schema` is ignored.
    public func qualifiedName(_ table: String, schema: String?) -> SQL { .identifier(table) }

    /// Whether `sqlite_schema` has the table.
    public func tableExists(_ name: String, schema: String?) throws(MigratorError) -> Bool {
        !(try query("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(name)])).isEmpty
    }

    /// The table's columns, hidden and generated ones included.
    public func columns(of table: String, schema: String?) throws(MigratorError) -> Set<String>? {
        guard try tableExists(table, schema: schema) else { return nil }
        return Set(try query("SELECT name FROM pragma_table_xinfo(?)", [.text(table)]).compactMap { if case .text(let name) = $0.first { name } else { nil } })
    }

    /// Timestamps are kept as ISO 8601 text already.
    public func timestampText(_ column: String) -> SQL { .identifier(column) }

    /// The login name of the process: SQLite has no roles.
    public func currentUser() -> String { SystemUser.name }

    /// `sqlite3_interrupt` on the connection.
    public var canceller: @Sendable () -> Void {
        let interrupter = connection.interrupter
        return { interrupter.interrupt() }
    }

    // MARK: ForeignKeySwitching

    /// `PRAGMA foreign_keys`.
    public func foreignKeysEnabled() -> Bool { (try? connection.query("PRAGMA foreign_keys;")) == [[.integer(1)]] }
    /// Sets `PRAGMA foreign_keys` (outside a transaction).
    public func setForeignKeys(_ enabled: Bool) throws(MigratorError) { try execute("PRAGMA foreign_keys = \(enabled ? "ON" : "OFF");") }

    /// `PRAGMA foreign_key_check`, a line per row.
    public func foreignKeyViolations() throws(MigratorError) -> [String] {
        try query("PRAGMA foreign_key_check;", []).map { row in "table \(row[0]) row \(row[1]) references \(row[2]) (foreign key \(row[3]))" }
    }

    // MARK: RowCopyProgress

    /// Reports every 100,000 virtual-machine steps: the table being filled and its rows so far.
    public func observeProgress(_ report: @escaping (String?, Int) -> Void) {
        connection.setProgressHandler(every: 100_000) { [connection] in
            report(connection.currentInsertTable, connection.currentInsertCount ?? 0)
        }
    }

    /// Stops the reports.
    public func stopObservingProgress() { connection.setProgressHandler(every: 0, nil) }

    /// Counts inserted rows per statement while `body` runs.
    public func countingRows<T>(_ body: () throws(MigratorError) -> T) throws(MigratorError) -> T {
        try connection.countingInsertedRows(body)
    }

    /// Starts the next statement's count from zero.
    public func resetRowCount() { connection.resetInsertCount() }
}

/// The login name of the process, for the history's `applied_by` on engines without roles.
enum SystemUser {
    static var name: String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return ProcessInfo.processInfo.environment["USER"] ?? "uid \(geteuid())"
    }
}

extension Migrator {
    /// A migrator on a SQLite connection; statements wait up to `lockTimeoutSeconds` for
    /// another connection's lock.
    ///
    ///     let scripts = try MigrationScriptLoader.load(directory: "Migrations/Flights")
    ///     try Migrator(connection: try SQLiteConnection(path: "app.sqlite"), schema: "Flights", scripts: scripts).up()
    public convenience init(connection: SQLiteConnection, schema: String, scripts: [MigrationScript], lockTimeoutSeconds: Double = 30) {
        self.init(database: SQLiteMigrationDatabase(connection, lockWait: lockTimeoutSeconds), schema: schema, scripts: scripts, lockTimeoutSeconds: lockTimeoutSeconds)
    }

    /// A migrator for migrations embedded in generated code:
    /// `Migrator(connection: db, schema: FlightsSchema.name, embedded: FlightsSchema.migrations)`.
    ///
    ///     try Migrator(connection: try SQLiteConnection(path: "app.sqlite"), schema: FlightsSchema.name, embedded: FlightsSchema.migrations).up()
    public convenience init(connection: SQLiteConnection, schema: String, embedded: [MigrationScript], lockTimeoutSeconds: Double = 30) {
        self.init(connection: connection, schema: schema, scripts: embedded, lockTimeoutSeconds: lockTimeoutSeconds)
    }
}

// MARK: - Carrying what was made outside the schema across table rebuilds

extension SQLiteMigrationDatabase {
    /// Watches the file's statements for its rebuilds: before each statement, the objects
    /// around a table whose new table does not exist yet are read (so the plan's own drops of
    /// the schema's indexes come first); once the new table exists they are kept, and the views
    /// and other tables' triggers that name the table are dropped, or renaming the new table
    /// would fail on them. After the statements, each kept object the file did not make again
    /// is made from its own SQL, so `sqlite_schema` holds the same text.
    public func carryingObjects(around copies: [(from: String, to: String)], file: String, _ body: () throws(MigratorError) -> Void) throws(MigratorError) -> [String] {
        carry = RebuildCarry(copies: copies)
        defer { carry = nil }
        try body()
        guard let carry else { return [] }
        if let failure = carry.failure { throw .database(Self.failure(failure, database: label)) }
        var carried: [String] = []
        var made: Set<String> = []
        for (table, objects, position) in carry.kept {
            for object in objects where made.insert(object.name).inserted {
                let exists = try query("SELECT 1 FROM sqlite_schema WHERE type = ? AND name = ?", [.text(object.type), .text(object.name)])
                guard exists.isEmpty else { continue }
                // A trigger of another table that the file dropped went with that table: the
                // file's own doing, as it would be without the rebuild.
                if object.type == "trigger", object.table.caseInsensitiveCompare(table) != .orderedSame, try !tableExists(object.table, schema: nil),
                    try query("SELECT 1 FROM sqlite_schema WHERE type = 'view' AND name = ?", [.text(object.table)]).isEmpty
                {
                    continue
                }
                do {
                    try connection.execute(object.sql)
                } catch {
                    throw .statementFailed(
                        file: file, statement: position.index, line: position.line,
                        message:
                            "the rebuild of \(table) drops \(object.description) (made outside the schema), which cannot be made again on the rebuilt table: \(error.message) (\(object.sql.prefix(200))). Drop or change it before migrating, or declare it in the schema"
                    )
                }
                carried.append(object.description)
            }
        }
        return carried
    }
}

/// What sits around the tables one file rebuilds, read as its statements run.
struct RebuildCarry {
    /// One object of `sqlite_schema`.
    struct Object {
        let type: String
        let name: String
        let table: String
        let sql: String

        /// "index audit_idx on orders", "view report".
        var description: String { type == "view" ? "view \(name)" : "\(type) \(name) on \(table)" }
    }

    /// Old table and the new table its rebuild fills, not yet begun.
    private var pending: [(table: String, new: String)]
    /// By old table: what was around it just before its rebuild began, and that statement.
    private(set) var kept: [(table: String, objects: [Object], position: (index: Int, line: Int))] = []
    private var latest: [String: ([Object], (index: Int, line: Int))] = [:]
    /// A failure of the reads themselves, reported after the statements.
    private(set) var failure: SQLiteError?

    init(copies: [(from: String, to: String)]) {
        pending = copies.map { ($0.from, $0.to) }
    }

    mutating func beforeStatement(_ index: Int, line: Int, on connection: SQLiteConnection) {
        guard !pending.isEmpty, failure == nil else { return }
        do {
            var still: [(table: String, new: String)] = []
            for (table, new) in pending {
                let begun = !(try connection.query("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(new)])).isEmpty
                if begun, let (objects, position) = latest[table] {
                    kept.append((table, objects, position))
                    for object in objects where object.type != "index" && object.table.caseInsensitiveCompare(table) != .orderedSame {
                        try connection.execute("DROP \(object.type == "view" ? "VIEW" : "TRIGGER") IF EXISTS \(SQLiteDialect().quote(object.name));")
                    }
                } else {
                    latest[table] = (try Self.objects(around: table, on: connection), (index, line))
                    still.append((table, new))
                }
            }
            pending = still
        } catch {
            failure = error
        }
    }

    /// The indexes and triggers on `table`, and the views and triggers that name it or such a
    /// view (a view over the view, a trigger on it), in the order `sqlite_schema` lists them: a
    /// view after the views it reads. Not the indexes SQLite makes for UNIQUE and PRIMARY KEY
    /// (they have no SQL).
    static func objects(around table: String, on connection: SQLiteConnection) throws(SQLiteError) -> [Object] {
        let rows = try connection.query(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE type IN ('index', 'trigger', 'view') AND sql IS NOT NULL ORDER BY rowid", [])
        let all = rows.compactMap { row -> Object? in
            guard row.count == 4, case .text(let type) = row[0], case .text(let name) = row[1], case .text(let owner) = row[2], case .text(let sql) = row[3] else { return nil }
            return Object(type: type, name: name, table: owner, sql: sql)
        }
        // What the rename would find naming something gone: grown until nothing more is added.
        var gone: Set<String> = [table.lowercased()]
        var included: Set<String> = []
        var grew = true
        while grew {
            grew = false
            for object in all where !included.contains(object.name) {
                let on = gone.contains(object.table.lowercased())
                let naming = object.type != "index" && gone.contains { names($0, in: object.sql) }
                guard on || naming else { continue }
                included.insert(object.name)
                if object.type == "view" { gone.insert(object.name.lowercased()) }
                grew = true
            }
        }
        return all.filter { included.contains($0.name) }
    }

    /// Whether `sql` names `table` as a table (bare, quoted or bracketed; any case): as an
    /// identifier that does not follow a dot, unless the dot follows `main` or `temp` (a
    /// column `new."x"` or `t.x` of the same name is not the table). A superset is harmless: an
    /// object made again from its own SQL is unchanged.
    static func names(_ table: String, in sql: String) -> Bool {
        let text = Array(sql.lowercased().unicodeScalars), name = Array(table.lowercased().unicodeScalars)
        guard !name.isEmpty, text.count >= name.count else { return false }
        func isWord(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "$" }
        func isQuote(_ scalar: Unicode.Scalar) -> Bool { scalar == "\"" || scalar == "`" || scalar == "[" || scalar == "]" }
        for start in 0...(text.count - name.count) where Array(text[start..<(start + name.count)]) == name {
            let end = start + name.count
            if start > 0, isWord(text[start - 1]) { continue }
            if end < text.count, isWord(text[end]) { continue }
            // What precedes it, past an opening quote and blanks.
            var before = start - 1
            if before >= 0, isQuote(text[before]) { before -= 1 }
            while before >= 0, text[before] == " " || text[before] == "\n" || text[before] == "\t" { before -= 1 }
            guard before >= 0, text[before] == "." else { return true }
            var qualifier = before - 1
            while qualifier >= 0, text[qualifier] == " " || isQuote(text[qualifier]) { qualifier -= 1 }
            let schemaEnd = qualifier + 1
            while qualifier >= 0, isWord(text[qualifier]) { qualifier -= 1 }
            let schema = String(String.UnicodeScalarView(text[(qualifier + 1)..<schemaEnd]))
            if schema == "main" || schema == "temp" { return true }
        }
        return false
    }
}
