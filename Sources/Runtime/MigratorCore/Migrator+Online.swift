import Foundation
import MigrationFiles
import SQLDialects
import SchemaMetadata

/// Online (expand/contract) migrations: a migration whose files carry `online:` headers is
/// applied in phases. `up` expands (the old and new app versions then run side by side),
/// `complete` contracts, `rollback` undoes an expand. Each phase is a list of sections
/// (`OnlinePhase`) run one by one under the migrator lock; the section reached is recorded in
/// `schemagen_online_migrations`, in the same transaction as the section's work where it has
/// one, so a killed run resumes where it stopped. The history row is written when expand
/// finishes: from then on the version counts as applied, and the new version's apps may start.
extension Migrator {
    /// Where a schema's online migration stands: one row per schema, while a migration is
    /// expanding, expanded (both versions served), contracting or rolling back.
    public static let onlineTable = "schemagen_online_migrations"

    /// An online migration in progress.
    public struct OnlineState: Sendable, Hashable {
        /// Which phase, and whether it is running or done.
        public enum Phase: String, Sendable, Hashable {
            /// Expanding: sections run so far, `section` of them.
            case expand
            /// Expanded: the previous version and this one are both served; `complete` or `rollback` next.
            case expanded
            /// Contracting.
            case contract
            /// Rolling the expand back.
            case rollback
        }
        /// The migration's number.
        public var version: Int
        /// Where it stands.
        public var phase: Phase
        /// The sections of the phase done so far.
        public var section: Int
        /// A backfill's last key done, in the section in progress.
        public var resumeKey: String?
        /// When the phase started (ISO 8601 UTC).
        public var startedAt: String
    }

    var onlineName: String { database.qualifiedName(Self.onlineTable, schema: historySchema) }
    var onlineTableSQL: SQL { SQL(verbatim: onlineName) }

    /// The schema's online migration in progress, if any.
    ///
    ///     if let state = try migrator.onlineState(), state.phase == .expanded { try migrator.complete() }
    public func onlineState() throws(MigratorError) -> OnlineState? {
        guard online != nil, try database.tableExists(Self.onlineTable, schema: historySchema) else { return nil }
        let rows = try database.query("SELECT version, phase, section, resume_key, started_at FROM \(onlineTableSQL) WHERE schema = \(value: .text(schema))")
        guard let row = rows.first, case .integer(let version) = row[0], case .text(let phase) = row[1], case .integer(let section) = row[2],
            case .text(let started) = row[4], let kind = OnlineState.Phase(rawValue: phase)
        else { return nil }
        let key: String? = if case .text(let text) = row[3] { text } else { nil }
        return OnlineState(version: Int(version), phase: kind, section: Int(section), resumeKey: key, startedAt: started)
    }

    /// Whether a migration is planned online (its up file says `online: expand`).
    func isOnline(_ script: MigrationScript) throws(MigratorError) -> Bool {
        try script.header(.up).online == .expand
    }

    /// The versions served as schemas of views (`shop_v2`): the newest applied one, and the one
    /// before it while a migration is expanded. Empty when the schema is not online.
    ///
    ///     try migrator.servedVersions()   // [1, 2] while 0002 is expanded
    public func servedVersions() throws(MigratorError) -> [Int] {
        let applied = try history().map(\.version)
        guard let newest = applied.last, let script = scripts.first(where: { $0.version == newest }), try isOnline(script) else { return [] }
        let state = try onlineState()
        if let state, state.version == newest, state.phase != .expand {
            return [applied.dropLast().last, newest].compactMap { $0 }
        }
        return [newest]
    }

    // MARK: - Phases

    /// Contracts the expanded migration: removes what only the previous version used. Run once
    /// no app of that version is left.
    ///
    ///     try migrator.complete()
    @discardableResult
    public func complete(options: Options = Options(), progress: @escaping (Event) -> Void = { _ in }) throws(MigratorError) -> MigrationScript? {
        guard let state = try onlineState() else { return nil }
        switch state.phase {
        case .expanded, .contract: return try runContract(state, options: options, progress: progress)
        case .expand:
            throw .onlineState("migration \(MigratorError.number(state.version)) is still expanding (interrupted at section \(state.section + 1)); finish it with `up` first, or roll it back")
        case .rollback:
            throw .onlineState("migration \(MigratorError.number(state.version)) is being rolled back; finish that with `rollback`")
        }
    }

    /// Undoes the expand of the migration in progress (expanding, expanded, or rolling back):
    /// the new version's views, columns and triggers go, rows either version wrote stay.
    ///
    ///     try migrator.rollback()
    @discardableResult
    public func rollback(options: Options = Options(), progress: @escaping (Event) -> Void = { _ in }) throws(MigratorError) -> MigrationScript? {
        guard let state = try onlineState() else { return nil }
        if state.phase == .contract {
            throw .onlineState("migration \(MigratorError.number(state.version)) is contracting, which removes the previous version's columns: it cannot be rolled back; finish it with `complete`")
        }
        let script = try self.script(state.version)
        try runOrResume(.rollback, of: script, state: state, options: options, progress: progress)
        return script
    }

    /// The schema's migration numbered `version`.
    func script(_ version: Int) throws(MigratorError) -> MigrationScript {
        guard let script = scripts.first(where: { $0.version == version }) else { throw .unknownVersion(version) }
        return script
    }

    /// Resumes the phase `kind` of `script` where `state` left it, or begins it; false (and
    /// `.skipped`) when another migrator finished it while this one waited for the lock.
    @discardableResult
    func runOrResume(
        _ kind: MigrationHeader.OnlinePhaseKind, of script: MigrationScript, state: OnlineState?, options: Options, progress: @escaping (Event) -> Void
    ) throws(MigratorError) -> Bool {
        let phase = OnlineState.Phase(rawValue: kind.rawValue) ?? .expand
        var start = state.flatMap { $0.version == script.version && $0.phase == phase ? $0 : nil }
        if start == nil { start = try beginPhase(script, phase) }
        guard let start else {
            progress(.skipped(script))
            return false
        }
        try runPhase(script, kind: kind, from: start, options: options, progress: progress)
        return true
    }

    /// `up` for online migrations: finishes what was interrupted, contracts an expanded
    /// migration before expanding the next, expands the last one pending (and contracts it too
    /// with `options.complete`).
    func upOnline(_ target: Target, options: Options, progress: @escaping (Event) -> Void) throws(MigratorError) -> [MigrationScript] {
        var done: [MigrationScript] = []
        if let state = try onlineState() {
            guard let script = scripts.first(where: { $0.version == state.version }) else {
                // A newer app is migrating: this code has nothing to apply.
                if state.version > (scripts.last?.version ?? 0) { return [] }
                throw .unknownVersion(state.version)
            }
            switch state.phase {
            case .rollback:
                throw .onlineState("migration \(MigratorError.number(state.version)) is being rolled back; finish that with `rollback` before `up`")
            case .expand:
                if try runOrResume(.expand, of: script, state: state, options: options, progress: progress) { done.append(script) }
            case .contract:
                try runContract(state, options: options, progress: progress)
            case .expanded:
                break
            }
        }
        let pending = try pendingUp(target, options: options)
        if let state = try onlineState(), state.phase == .expanded, !pending.isEmpty || options.complete {
            try runContract(state, options: options, progress: progress)
        }
        for (offset, script) in pending.enumerated() {
            guard try isOnline(script) else {
                if try run(script, direction: .up, progress: progress) { done.append(script) }
                continue
            }
            guard try runOrResume(.expand, of: script, state: nil, options: options, progress: progress) else { continue }
            done.append(script)
            // A contract with nothing to do (a first migration's) is done at once.
            let emptyContract = script.contract.map { (try? OnlinePhase.parse($0))?.sections.isEmpty ?? false } ?? false
            if offset < pending.count - 1 || options.complete || emptyContract, let state = try onlineState() {
                try runContract(state, options: options, progress: progress)
            }
        }
        return done
    }

    @discardableResult
    func runContract(_ state: OnlineState, options: Options, progress: @escaping (Event) -> Void) throws(MigratorError) -> MigrationScript {
        let script = try self.script(state.version)
        try runOrResume(.contract, of: script, state: state, options: options, progress: progress)
        return script
    }

    /// Records that a phase starts (or, for the same phase, resumes); nil when another migrator
    /// finished it while this one waited for the lock.
    func beginPhase(_ script: MigrationScript, _ phase: OnlineState.Phase) throws(MigratorError) -> OnlineState? {
        try locker?.lock(schema: schema, timeout: lockTimeout, cancelled: { cancellation.isRequested })
        defer { locker?.unlock(schema: schema) }
        var state: OnlineState? = OnlineState(version: script.version, phase: phase, section: 0, resumeKey: nil, startedAt: Self.now())
        try transaction { () throws(MigratorError) in
            try ensureOnlineTable()
            let current = try onlineState()
            let done: Bool =
                switch phase {
                case .expand: try history().contains { $0.version == script.version }
                default: current?.version != script.version
                }
            if done, current?.phase != phase {
                state = nil
                return
            }
            if let current {
                if current.version == script.version, current.phase == phase {
                    state = current
                    return
                }
                let allowed: Bool =
                    switch (current.phase, phase) {
                    case (.expanded, .contract), (.expanded, .rollback), (.expand, .rollback): current.version == script.version
                    default: false
                    }
                guard allowed else {
                    throw .onlineState(
                        "migration \(MigratorError.number(current.version)) is in its \(current.phase.rawValue) phase; finish it before \(phase.rawValue) of \(MigratorError.number(script.version))")
                }
            }
            _ = try database.query("DELETE FROM \(onlineTableSQL) WHERE schema = \(value: .text(schema))")
            _ = try database.query(
                "INSERT INTO \(onlineTableSQL) (schema, version, phase, section, resume_key, started_at) VALUES (\(SQL.parameters([.text(schema), .integer(Int64(script.version)), .text(phase.rawValue), .integer(0), .null, .text(Self.now())])))"
            )
        }
        return state
    }

    func ensureOnlineTable() throws(MigratorError) {
        let (text, integer) = (dialect.columnType(.text), dialect.columnType(.integer))
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS \(onlineName) (
                "schema" \(text) NOT NULL PRIMARY KEY,
                "version" \(integer) NOT NULL,
                "phase" \(text) NOT NULL,
                "section" \(integer) NOT NULL,
                "resume_key" \(text),
                "started_at" \(text) NOT NULL
            );
            """)
    }

    /// Runs a phase's sections from where `state` says, under the migrator lock, then records
    /// its end: expand writes the history row, contract and rollback clear the state (rollback
    /// also the history row).
    func runPhase(_ script: MigrationScript, kind: MigrationHeader.OnlinePhaseKind, from state: OnlineState, options: Options, progress: @escaping (Event) -> Void)
        throws(MigratorError)
    {
        guard let online else {
            throw .onlineState("\(script.upFile) is an online migration, which only PostgreSQL runs")
        }
        let (text, file): (String?, String) =
            switch kind {
            case .expand: (script.up, script.upFile)
            case .contract: (script.contract, script.contractFile ?? script.fileName.contractFile)
            case .rollback: (script.down, script.downFile)
            }
        guard let text else { throw .unreadable(file) }
        let phase: OnlinePhase
        do {
            phase = try OnlinePhase.parse(text)
        } catch {
            throw .badOnlineFile(file: file, error)
        }
        try locker?.lock(schema: schema, timeout: lockTimeout, cancelled: { cancellation.isRequested })
        defer { locker?.unlock(schema: schema) }
        // Read again under the lock: another migrator may have run the phase, or part of it,
        // while this one waited.
        guard let current = try onlineState(), current.version == state.version, current.phase.rawValue == kind.rawValue else {
            progress(.skipped(script))
            return
        }
        let state = current
        try online.setSearchPath(historySchema)
        let started = Date()
        var resumeKey = state.resumeKey
        for (index, section) in phase.sections.enumerated() where index >= state.section {
            if cancellation.isRequested { throw .interrupted(during: "\(kind.rawValue) of \(script.label) before section \(index + 1)") }
            progress(.onlineSection(script, phase: kind, index: index + 1, of: phase.sections.count))
            let line = phase.lines.indices.contains(index) ? phase.lines[index] : 1
            switch section {
            case .transaction(let sql):
                try retryingLocks(file: file, section: index + 1, line: line, options: options, progress: progress) { () throws(MigratorError) in
                    try database.beginTransaction(timeout: lockTimeout)
                    do throws(MigratorError) {
                        try online.setLockTimeout(milliseconds: options.lockTimeoutMilliseconds, local: true)
                        try runSectionScript(sql, file: file, section: index + 1, line: line)
                        try advance(to: index + 1)
                        try database.commit()
                    } catch {
                        database.rollback()
                        throw error
                    }
                }
            case .statement(let sql):
                try retryingLocks(file: file, section: index + 1, line: line, options: options, progress: progress) { () throws(MigratorError) in
                    try online.setLockTimeout(milliseconds: options.lockTimeoutMilliseconds, local: false)
                    try runSectionScript(sql, file: file, section: index + 1, line: line)
                }
                try advance(to: index + 1)
            case .backfill(let backfill, let update):
                try runBackfill(backfill, update: update, from: resumeKey, file: file, section: index + 1, line: line, options: options, progress: progress)
                try advance(to: index + 1)
            }
            resumeKey = nil
        }
        let milliseconds = Int(Date().timeIntervalSince(started) * 1000)
        try transaction { () throws(MigratorError) in
            switch kind {
            case .expand:
                try record(script, milliseconds: milliseconds)
                _ = try database.query("UPDATE \(onlineTableSQL) SET phase = 'expanded', section = 0, resume_key = NULL WHERE schema = \(value: .text(schema))")
            case .contract:
                _ = try database.query("DELETE FROM \(onlineTableSQL) WHERE schema = \(value: .text(schema))")
            case .rollback:
                _ = try database.query("DELETE FROM \(historyTableSQL) WHERE schema = \(value: .text(schema)) AND version = \(value: .integer(Int64(script.version)))")
                _ = try database.query("DELETE FROM \(onlineTableSQL) WHERE schema = \(value: .text(schema))")
            }
        }
        progress(.onlineFinished(script, phase: kind, milliseconds: milliseconds))
    }

    /// Records the sections done (outside a transaction it commits on its own).
    func advance(to section: Int) throws(MigratorError) {
        _ = try database.query("UPDATE \(onlineTableSQL) SET section = \(value: .integer(Int64(section))), resume_key = NULL WHERE schema = \(value: .text(schema))")
    }

    func runSectionScript(_ sql: String, file: String, section: Int, line: Int) throws(MigratorError) {
        do throws(StatementFailure) {
            try database.runScript(sql, shouldStop: { self.cancellation.isRequested }) { _, _ in }
        } catch {
            if cancellation.isRequested { throw .interrupted(during: "section \(section) of \((file as NSString).lastPathComponent) (line \(line + error.line - 1))") }
            let at = line + error.line - 1
            switch error.reason {
            case .lockTimeout: throw .tableLockTimeout(file: file, statement: error.index, line: at, message: error.message)
            case .connectionLost:
                throw .onlineSectionFailed(file: file, section: section, line: at, message: error.message + " (the connection to \(database.label) was lost)")
            default: throw .onlineSectionFailed(file: file, section: section, line: at, message: error.message)
            }
        }
    }

    /// Runs `body` again when a statement gave up waiting for a lock (the app held it longer
    /// than the lock timeout): after a pause that doubles from 50 ms up to 5 s, with jitter,
    /// up to `options.lockRetries` times. No app query waits behind a statement for longer
    /// than the lock timeout.
    func retryingLocks(file: String, section: Int, line: Int, options: Options, progress: (Event) -> Void, _ body: () throws(MigratorError) -> Void) throws(MigratorError) {
        var attempt = 0
        while true {
            do {
                try body()
                return
            } catch {
                guard case .tableLockTimeout(_, _, let at, let message) = error else { throw error }
                attempt += 1
                guard attempt <= options.lockRetries else {
                    throw .onlineSectionFailed(
                        file: file, section: section, line: at,
                        message:
                            "\(message): a lock was not granted within \(options.lockTimeoutMilliseconds) ms in \(attempt) attempts; the tables are busy with long transactions: run again later, or allow a longer lock timeout"
                    )
                }
                let pause = min(5.0, 0.05 * pow(2.0, Double(attempt - 1))) * Double.random(in: 0.5...1.0)
                progress(.lockRetry(section: section, attempt: attempt, pauseMilliseconds: Int(pause * 1000)))
                if cancellation.isRequested { throw .interrupted(during: "the wait to retry section \(section) of \((file as NSString).lastPathComponent)") }
                Thread.sleep(forTimeInterval: pause)
            }
        }
    }

    /// A backfill in key ranges of `batch` rows, each committed with the range's end as the
    /// resume key, the sync triggers told to let the batch through.
    func runBackfill(
        _ backfill: OnlinePhase.Backfill, update: String, from resume: String?, file: String, section: Int, line: Int, options: Options,
        progress: (Event) -> Void
    ) throws(MigratorError) {
        guard let online else { return }
        let q = dialect.quote
        let (table, key, type) = (q(backfill.table), q(backfill.key), backfill.type)
        let after = "($1::\(type) IS NULL OR \(key) > $1::\(type))"
        var lower = resume
        var rows = 0
        while true {
            if cancellation.isRequested { throw .interrupted(during: "the backfill of \(backfill.table) (section \(section)); it resumes after the last batch done") }
            var finished = false
            try retryingLocks(file: file, section: section, line: line, options: options, progress: progress) { () throws(MigratorError) in
                try database.beginTransaction(timeout: lockTimeout)
                do throws(MigratorError) {
                    try online.setLockTimeout(milliseconds: options.lockTimeoutMilliseconds, local: true)
                    try online.markBackfill()
                    let bound: [StoredValue] = [lower.map(StoredValue.text) ?? .null]
                    // The key as text under another name, so ORDER BY sorts by the key itself (by its index).
                    var end = try database.query(
                        "SELECT \(key)::text AS schemagen_batch_end FROM \(table) WHERE \(after) ORDER BY \(key) LIMIT 1 OFFSET \(backfill.batch - 1)", bound
                    ).first?.first
                    if end == nil || end == .null {
                        end = try database.query("SELECT max(\(key))::text FROM \(table) WHERE \(after)", bound).first?.first
                    }
                    guard case .text(let upper)? = end else {
                        finished = true
                        try database.commit()
                        return
                    }
                    do throws(MigratorError) {
                        _ = try database.query(update, bound + [.text(upper)])
                    } catch {
                        if case .database(let failure) = error, failure.kind == .busy {
                            throw MigratorError.tableLockTimeout(file: file, statement: 1, line: line, message: failure.message)
                        }
                        throw MigratorError.onlineSectionFailed(file: file, section: section, line: line, message: "\(error)")
                    }
                    _ = try database.query(
                        "UPDATE \(onlineTableSQL) SET resume_key = \(value: .text(upper)) WHERE schema = \(value: .text(schema))")
                    try database.commit()
                    lower = upper
                } catch {
                    database.rollback()
                    throw error
                }
            }
            if finished { return }
            rows += backfill.batch
            progress(.backfilled(table: backfill.table, rows: rows))
        }
    }
}
