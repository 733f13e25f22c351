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
        /// When the phase first started (ISO 8601 UTC).
        public var startedAt: String
        /// When a run last resumed it after an interruption, if one did.
        public var resumedAt: String? = nil
        /// The backfill in progress, if the section reached is one.
        public var backfill: BackfillProgress? = nil
        /// The server process of the migrator running it now (it holds the migrator lock); nil
        /// when none does: the phase was interrupted, and the same command resumes it. Read by
        /// `onlineProgress()` only.
        public var runningInBackend: Int? = nil
        /// What the run is waiting for before its next backfill batch, when it waits ("waiting:
        /// pg3 replay lag 2.4 s > 1.0 s"). Meaningful while `runningInBackend` is set.
        public var waiting: String? = nil
    }

    /// How far a backfill has come, as its last batch recorded it.
    ///
    ///     if let backfill = try migrator.onlineProgress()?.backfill { print(backfill.rowsDone, backfill.secondsLeft ?? 0) }
    public struct BackfillProgress: Sendable, Hashable {
        /// The table being filled.
        public var table: String
        /// Rows done so far, over every run of the section.
        public var rowsDone: Int
        /// The table's row count as the server estimates it (`pg_class.reltuples`), when known.
        public var rowsEstimate: Int?
        /// Rows per second of the run that wrote the last batch.
        public var rowsPerSecond: Double?
        /// When the last batch committed (ISO 8601 UTC).
        public var updatedAt: String

        /// Seconds left at `rowsPerSecond`, when both it and the estimate are known.
        public var secondsLeft: Double? {
            guard let rowsEstimate, let rowsPerSecond, rowsPerSecond > 0 else { return nil }
            return Double(max(0, rowsEstimate - rowsDone)) / rowsPerSecond
        }
    }

    var onlineTableSQL: SQL { database.qualifiedName(Self.onlineTable, schema: historySchema) }

    /// A backfill's key type, for the casts of its bounds: the header's PostgreSQL type name,
    /// read from the checksummed file.
    static func keyType(_ backfill: OnlinePhase.Backfill) -> SQL { SQL(verbatim: backfill.type) }

    /// The schema's online migration in progress, if any.
    ///
    ///     if let state = try migrator.onlineState(), state.phase == .expanded { try migrator.complete() }
    public func onlineState() throws(MigratorError) -> OnlineState? {
        guard online != nil, let columns = try database.columns(of: Self.onlineTable, schema: historySchema) else { return nil }
        // A table of an earlier release has no progress columns until a phase runs again.
        let progress = Self.progressColumns.allSatisfy(columns.contains) ? ", " + Self.progressColumns.joined(separator: ", ") : ""
        let waiting = columns.contains("waiting") ? ", waiting" : ""
        let rows = try database.query(
            "SELECT version, phase, section, resume_key, started_at\(SQL(verbatim: progress + waiting)) FROM \(onlineTableSQL) WHERE schema = \(value: .text(schema))")
        guard let row = rows.first, case .integer(let version) = row[0], case .text(let phase) = row[1], case .integer(let section) = row[2],
            case .text(let started) = row[4], let kind = OnlineState.Phase(rawValue: phase)
        else { return nil }
        func text(_ index: Int) -> String? { if row.indices.contains(index), case .text(let text) = row[index] { text } else { nil } }
        func integer(_ index: Int) -> Int? { if row.indices.contains(index), case .integer(let value) = row[index] { Int(value) } else { nil } }
        var state = OnlineState(version: Int(version), phase: kind, section: Int(section), resumeKey: text(3), startedAt: started, resumedAt: text(5))
        if let table = text(6), let done = integer(7), let updated = text(10) {
            let rate: Double? =
                switch row.indices.contains(9) ? row[9] : .null {
                case .real(let value): value
                case .integer(let value): Double(value)
                default: nil
                }
            state.backfill = BackfillProgress(table: table, rowsDone: done, rowsEstimate: integer(8), rowsPerSecond: rate, updatedAt: updated)
        }
        if !waiting.isEmpty { state.waiting = text(progress.isEmpty ? 5 : 5 + Self.progressColumns.count) }
        return state
    }

    /// The online state's columns that record resumes and backfill progress, in the order
    /// `onlineState` reads them.
    static let progressColumns = ["resumed_at", "backfill_table", "rows_done", "rows_estimate", "rows_per_second", "progress_at"]

    /// `onlineState()` with the migrator running it, if one holds the migrator lock now: for
    /// `status`, which tells a running phase from an interrupted one.
    ///
    ///     if let state = try migrator.onlineProgress(), state.runningInBackend == nil { print("interrupted") }
    public func onlineProgress() throws(MigratorError) -> OnlineState? {
        guard var state = try onlineState() else { return nil }
        state.runningInBackend = try locker?.lockHolder(schema: schema)
        return state
    }

    /// Whether a migration is planned online (its up file says `online: expand`).
    func isOnline(_ script: MigrationScript) throws(MigratorError) -> Bool {
        try script.header(.up).online == .expand
    }

    /// The schema versions served as schemas of views (`shop_v2`): the newest applied online
    /// migration's, and the one it comes from while it is expanded. Versions are the schema's (the
    /// headers' `to-version`), not migration numbers, which hand-written migrations also take.
    /// Empty when the schema is not online.
    ///
    ///     try migrator.servedVersions()   // [1, 2] while 0002 is expanded
    public func servedVersions() throws(MigratorError) -> [Int] {
        var applied: [(number: Int, header: MigrationHeader?)] = []
        for number in try history().map(\.version) {
            applied.append((number, try scripts.first { $0.version == number }.map { script throws(MigratorError) in try script.header(.up) }))
        }
        guard let serving = VersionSchema.servingMigration(applied) else { return [] }
        let state = try onlineState()
        let expanded = state.map { $0.version == serving.number && $0.phase != .expand } ?? false
        return VersionSchema.versions(servedBy: serving.header, number: serving.number, expanded: expanded)
    }

    /// The schema versions `script` serves once expanded, as `shop_v1 and shop_v2`.
    func servedSchemas(expanding script: MigrationScript) -> String {
        let header = (try? script.header(.up)) ?? MigrationHeader()
        return VersionSchema.versions(servedBy: header, number: script.version, expanded: true)
            .map { VersionSchema.name(schema: schema, version: $0) }.joined(separator: " and ")
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
        case .expanded, .contract:
            try refuseStrandingDevices(state, options: options)
            return try runContract(state, options: options, progress: progress)
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
        // The phase's file is read and parsed before any state is written: a missing or broken
        // file leaves the database as it was.
        let (sections, file) = try phaseFile(of: script, kind)
        let phase = OnlineState.Phase(rawValue: kind.rawValue) ?? .expand
        var start = state.flatMap { $0.version == script.version && $0.phase == phase ? $0 : nil }
        var resuming = start != nil
        if start == nil { (start, resuming) = try beginPhase(script, phase) }
        guard let start else {
            progress(.skipped(script))
            return false
        }
        try runPhase(script, kind: kind, sections: sections, file: file, from: start, resuming: resuming, options: options, progress: progress)
        return true
    }

    /// A phase's sections and the file they come from.
    func phaseFile(of script: MigrationScript, _ kind: MigrationHeader.OnlinePhaseKind) throws(MigratorError) -> (OnlinePhase, String) {
        guard online != nil else {
            throw .onlineState("\(script.upFile) is an online migration, which only PostgreSQL runs")
        }
        let (text, file): (String?, String) =
            switch kind {
            case .expand: (script.up, script.upFile)
            case .contract: (script.contract, script.contractFile ?? script.fileName.contractFile)
            case .rollback: (script.down, script.downFile)
            }
        guard let text else { throw .unreadable(file) }
        do {
            return (try OnlinePhase.parse(text), file)
        } catch {
            throw .badOnlineFile(file: file, error)
        }
    }

    /// One step `up` would take on a schema with online migrations: a whole migration, or one
    /// phase of an online one.
    public struct PlannedStep: Sendable {
        /// What runs.
        public enum Kind: String, Sendable {
            /// An ordinary migration, applied whole.
            case apply
            /// An online migration's expand phase (begun, or resumed where it stopped).
            case expand
            /// An online migration's contract phase (`--complete`, a first migration's empty
            /// one, or one a killed run left half done).
            case contract
        }
        /// The migration the step belongs to.
        public var script: MigrationScript
        /// Whether the step applies the migration whole or runs one of its phases.
        public var kind: Kind
        /// The file that runs, and its text.
        public var file: String { kind == .contract ? (script.contractFile ?? script.fileName.contractFile) : script.upFile }
        /// The SQL that runs: the contract phase for a contract step, else the up file; nil when the script carries no contract text.
        public var text: String? { kind == .contract ? script.contract : script.up }
    }

    /// What `up` does on a schema with online migrations, in order, without doing it (the
    /// dry run prints it), and why it stops short of `target` when it does.
    ///
    /// `up` never contracts on its own: an expanded migration stays expanded (both versions
    /// served) until `complete`, or `--complete` asks for contracts (which then need
    /// `allowDestructive` where their header says they lose data). While a migration is
    /// expanded, no other is expanded after it: `stop` says why, naming the versions served
    /// and `migrate complete`. A contract left half done by a killed `complete` is finished.
    ///
    ///     let plan = try migrator.plannedUp(.all)
    ///     for step in plan.steps { print(step.kind, step.file) }
    public func plannedUp(_ target: Target, options: Options = Options()) throws(MigratorError) -> (steps: [PlannedStep], stop: MigratorError?) {
        var steps: [PlannedStep] = []
        var expanded: MigrationScript?
        var inProgress: Int?
        if let state = try onlineState() {
            guard let script = scripts.first(where: { $0.version == state.version }) else {
                // A newer app is migrating: this code has nothing to apply.
                if state.version > (scripts.last?.version ?? 0) { return ([], nil) }
                throw .unknownVersion(state.version)
            }
            inProgress = state.version
            switch state.phase {
            case .rollback:
                throw .onlineState("migration \(MigratorError.number(state.version)) is being rolled back; finish that with `rollback` before `up`")
            case .expand:
                steps.append(PlannedStep(script: script, kind: .expand))
                expanded = script
            case .contract:
                steps.append(PlannedStep(script: script, kind: .contract))
            case .expanded:
                expanded = script
            }
        }
        /// Contracting `script` is asked for: refused when it loses data and that is not allowed.
        func contract(_ script: MigrationScript) throws(MigratorError) -> PlannedStep {
            if !options.allowDestructive, let text = script.contract, (try? MigrationHeader.parse(text))?.losesData == true {
                throw .destructiveContract(file: script.contractFile ?? script.fileName.contractFile)
            }
            if let newest = (try? script.header(.up))?.toVersion { try refuseStrandingDevices(below: newest, migration: script.version, options: options) }
            return PlannedStep(script: script, kind: .contract)
        }
        for script in try pendingUp(target, options: options) where script.version != inProgress {
            if let waiting = expanded {
                guard options.complete else {
                    let schemas = servedSchemas(expanding: waiting)
                    return (
                        steps,
                        .onlineState(
                            "\(script.label) was not applied: migration \(waiting.label) is expanded (\(schemas) are served), and an online migration is expanded one at a time; once no app of the previous version runs, `migrate complete` contracts it (or `migrate rollback` undoes it), then `migrate up` goes on"
                        )
                    )
                }
                steps.append(try contract(waiting))
                expanded = nil
            }
            guard try isOnline(script) else {
                steps.append(PlannedStep(script: script, kind: .apply))
                continue
            }
            steps.append(PlannedStep(script: script, kind: .expand))
            expanded = script
            // A first migration's contract has nothing to do (no earlier version is served).
            if let text = script.contract, (try? OnlinePhase.parse(text))?.sections.isEmpty ?? false {
                steps.append(PlannedStep(script: script, kind: .contract))
                expanded = nil
            }
        }
        if options.complete, let waiting = expanded { steps.append(try contract(waiting)) }
        return (steps, nil)
    }

    /// `plannedUp` for any schema: an ordinary one's pending migrations, each applied whole.
    ///
    ///     for step in try migrator.plannedUpEverywhere(.all).steps { print(step.file) }
    public func plannedUpEverywhere(_ target: Target, options: Options = Options()) throws(MigratorError) -> (steps: [PlannedStep], stop: MigratorError?) {
        if online != nil, try hasOnlineScripts() { return try plannedUp(target, options: options) }
        return (try pendingUp(target, options: options).map { PlannedStep(script: $0, kind: .apply) }, nil)
    }

    /// `up` for online migrations: runs `plannedUp`'s steps, then throws why it stopped short.
    func upOnline(_ target: Target, options: Options, progress: @escaping (Event) -> Void) throws(MigratorError) -> [MigrationScript] {
        let (steps, stop) = try plannedUp(target, options: options)
        var done: [MigrationScript] = []
        for step in steps {
            switch step.kind {
            case .apply:
                if try run(step.script, direction: .up, progress: progress) { done.append(step.script) }
            case .expand:
                let state = try onlineState()
                if try runOrResume(.expand, of: step.script, state: state, options: options, progress: progress) { done.append(step.script) }
            case .contract:
                guard let state = try onlineState(), state.version == step.script.version else { continue }
                try runContract(state, options: options, progress: progress)
            }
        }
        if let stop { throw stop }
        return done
    }

    @discardableResult
    func runContract(_ state: OnlineState, options: Options, progress: @escaping (Event) -> Void) throws(MigratorError) -> MigrationScript {
        let script = try self.script(state.version)
        try runOrResume(.contract, of: script, state: state, options: options, progress: progress)
        return script
    }

    /// Records that a phase starts (or finds it started: `resumed`); nil when another migrator
    /// finished it while this one waited for the lock.
    func beginPhase(_ script: MigrationScript, _ phase: OnlineState.Phase) throws(MigratorError) -> (state: OnlineState?, resumed: Bool) {
        try locker?.lock(schema: schema, timeout: lockTimeout, cancelled: { cancellation.isRequested })
        defer { locker?.unlock(schema: schema) }
        var state: OnlineState? = OnlineState(version: script.version, phase: phase, section: 0, resumeKey: nil, startedAt: Self.now())
        var resumed = false
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
                    resumed = true
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
        return (state, resumed)
    }

    func ensureOnlineTable() throws(MigratorError) {
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS \(onlineTableSQL) (
                "schema" \(type: .text, in: dialect) NOT NULL PRIMARY KEY,
                "version" \(type: .integer, in: dialect) NOT NULL,
                "phase" \(type: .text, in: dialect) NOT NULL,
                "section" \(type: .integer, in: dialect) NOT NULL,
                "resume_key" \(type: .text, in: dialect),
                "started_at" \(type: .text, in: dialect) NOT NULL
            );
            """)
        // Added after the first release: tables it made get them here.
        let added = zip(Self.progressColumns + ["waiting"], [StorageKind.text, .text, .integer, .integer, .real, .text, .text])
        let existing = try database.columns(of: Self.onlineTable, schema: historySchema) ?? []
        for (column, kind) in added where !existing.contains(column) {
            try database.execute("ALTER TABLE \(onlineTableSQL) ADD COLUMN \(identifier: column) \(type: kind, in: dialect);")
        }
    }

    /// Runs a phase's sections from where `state` says, under the migrator lock, then records
    /// its end: expand writes the history row, contract and rollback clear the state (rollback
    /// also the history row).
    func runPhase(
        _ script: MigrationScript, kind: MigrationHeader.OnlinePhaseKind, sections phase: OnlinePhase, file: String, from state: OnlineState, resuming: Bool = false,
        options: Options, progress: @escaping (Event) -> Void
    ) throws(MigratorError) {
        guard let online else {
            throw .onlineState("\(script.upFile) is an online migration, which only PostgreSQL runs")
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
        // A phase started by an earlier run (perhaps of an earlier release, whose table lacks the
        // progress columns): `startedAt` stays its first start.
        if resuming {
            try ensureOnlineTable()
            _ = try database.query("UPDATE \(onlineTableSQL) SET resumed_at = \(value: .text(Self.now())) WHERE schema = \(value: .text(schema))")
        }
        try online.setSearchPath(historySchema)
        let started = Date()
        var resumeKey = state.resumeKey
        do {
            try runSections(of: phase, script, kind: kind, file: file, from: state, resumeKey: &resumeKey, options: options, progress: progress)
        } catch {
            // What ran before stays: the message says so, and which command resumes.
            guard case .interrupted(let during) = error else { throw error }
            let command =
                switch kind {
                case .expand: "up"
                case .contract: "complete"
                case .rollback: "rollback"
                }
            throw .interruptedPhase(during: during, command: command)
        }
        let milliseconds = Int(Date().timeIntervalSince(started) * 1000)
        try transaction { () throws(MigratorError) in
            switch kind {
            case .expand:
                try record(script, milliseconds: milliseconds)
                _ = try database.query("UPDATE \(onlineTableSQL) SET phase = 'expanded', section = 0, resume_key = NULL, backfill_table = NULL WHERE schema = \(value: .text(schema))")
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
        _ = try database.query("UPDATE \(onlineTableSQL) SET section = \(value: .integer(Int64(section))), resume_key = NULL, backfill_table = NULL WHERE schema = \(value: .text(schema))")
    }

    func runSectionScript(_ sql: String, file: String, section: Int, line: Int) throws(MigratorError) {
        do throws(StatementFailure) {
            try database.runScript(MigrationScriptText(sql), shouldStop: { self.cancellation.isRequested }) { _, _ in }
        } catch {
            if cancellation.isRequested { throw .interrupted(during: "section \(section) of \((file as NSString).lastPathComponent) (line \(line + error.line - 1))") }
            let at = line + error.line - 1
            switch error.reason {
            case .lockTimeout, .deadlock: throw .tableLockTimeout(file: file, statement: error.index, line: at, message: error.message)
            case .connectionLost:
                throw .onlineSectionFailed(file: file, section: section, line: at, message: error.message + " (the connection to \(database.label) was lost)")
            default: throw .onlineSectionFailed(file: file, section: section, line: at, message: error.message)
            }
        }
    }

    /// The sections of a phase from the one `state` reached, each recorded as done when it is.
    private func runSections(
        of phase: OnlinePhase, _ script: MigrationScript, kind: MigrationHeader.OnlinePhaseKind, file: String, from state: OnlineState, resumeKey: inout String?,
        options: Options, progress: @escaping (Event) -> Void
    ) throws(MigratorError) {
        guard let online else { return }
        // One WAL budget and one lag gauge for the phase: its backfills and its index builds.
        var pacer = ReplicationPacer()
        try startPacing(&pacer, options: options)
        try online.dropUncarried(options.dropUncarried)
        // The server's warnings, after each section and whatever happens.
        defer { reportWarnings(progress) }
        for (index, section) in phase.sections.enumerated() where index >= state.section {
            reportWarnings(progress)
            if cancellation.isRequested { throw .interrupted(during: "\(kind.rawValue) of \(script.label) before section \(index + 1)") }
            progress(.onlineSection(script, phase: kind, index: index + 1, of: phase.sections.count))
            let line = phase.lines.indices.contains(index) ? phase.lines[index] : 1
            switch section {
            case .transaction(let sql, let facts):
                try retryingLocks(file: file, section: index + 1, line: line, relations: facts.relations, options: options, progress: progress) {
                    () throws(MigratorError) in
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
            case .statement(let sql, let facts):
                // An index build's locks never block app writes, but it waits for every
                // transaction open when it starts and, at the end, for every older snapshot (a
                // pg_dump's): it runs without a lock timeout, which would abandon it midway, and
                // says which sessions it will wait for.
                let buildsIndex = facts.concurrently
                if buildsIndex {
                    // A build writes its whole index's WAL at once, which cannot be paced within
                    // it: it starts only once the standbys are within the lag bound and the
                    // phase's WAL (earlier builds' and backfills' included) is within budget.
                    _ = try paceForReplication(&pacer, lastBatchRows: 0, options: options, progress: progress)
                    let waitedFor = online.sessionsInTransactions()
                    if !waitedFor.isEmpty { progress(.indexBuildWaits(section: index + 1, sessions: waitedFor)) }
                }
                try retryingLocks(file: file, section: index + 1, line: line, relations: facts.relations, options: options, progress: progress) {
                    () throws(MigratorError) in
                    try online.setLockTimeout(milliseconds: buildsIndex ? 0 : options.lockTimeoutMilliseconds, local: false)
                    try runSectionScript(sql, file: file, section: index + 1, line: line)
                }
                try advance(to: index + 1)
            case .backfill(let backfill, let update):
                try runBackfill(backfill, update: update, from: resumeKey, file: file, section: index + 1, line: line, pacer: &pacer, options: options, progress: progress)
                try advance(to: index + 1)
            case .check(let query):
                let found = try carriedObjects(query, file: file, section: index + 1, line: line)
                let stops = found.filter { $0.action == .stop }.map { "\($0.object): \($0.reason)" }
                let carried = found.filter { $0.action == .carry }.map { "\($0.object): \($0.reason)" }
                if !carried.isEmpty { progress(.carrying(carried)) }
                if !stops.isEmpty {
                    guard options.dropUncarried else {
                        throw .onlineSectionFailed(
                            file: file, section: index + 1, line: line,
                            message:
                                "what was made on the table outside the schema cannot all be carried to its copy, and nothing was changed:\n"
                                + stops.map { "  \($0)" }.joined(separator: "\n")
                                + "\nchange or drop each first (and make it again after `migrate complete`), or run again with --drop-uncarried to drop them")
                    }
                    progress(.droppingUncarried(stops))
                }
                try advance(to: index + 1)
            }
            resumeKey = nil
        }
    }

    /// What a `check` section's query lists: each object, carried or not, and why.
    public struct CarriedObject: Sendable, Hashable {
        /// What it is: "index audit_idx on orders".
        public var object: String
        /// Whether it is made again on the rebuilt table.
        public var action: OnlinePhase.CheckAction
        /// How, or why not.
        public var reason: String
    }

    /// Runs a `check` section's query (in a transaction of its own: it only reads).
    func carriedObjects(_ query: String, file: String, section: Int, line: Int) throws(MigratorError) -> [CarriedObject] {
        let rows: [[StoredValue]]
        do {
            rows = try database.query(MigrationScriptText(query), arguments: [])
        } catch {
            throw .onlineSectionFailed(file: file, section: section, line: line, message: "\(error)")
        }
        return rows.compactMap { row in
            guard row.count == 3, case .text(let object) = row[0], case .text(let action) = row[1], let action = OnlinePhase.CheckAction(rawValue: action) else { return nil }
            let reason = if case .text(let text) = row[2] { text } else { "" }
            return CarriedObject(object: object, action: action, reason: reason)
        }
    }

    /// What each online migration not yet contracted carries across the tables it copies (its
    /// expand file's `check` sections, run now: they only read), by version, for `status` and
    /// `--dry-run`; empty on an engine without online migrations.
    ///
    ///     for (version, objects) in try migrator.carriedObjects() { print(version, objects.map(\.object)) }
    public func carriedObjects() throws(MigratorError) -> [(version: Int, objects: [CarriedObject])] {
        guard online != nil else { return [] }
        let applied = Set(try history().map(\.version))
        let state = try onlineState()
        var found: [(version: Int, objects: [CarriedObject])] = []
        for script in scripts where !applied.contains(script.version) || (state?.version == script.version && state?.phase != .contract) {
            guard (try? MigrationHeader.parse(script.up))?.online == .expand, let phase = try? OnlinePhase.parse(script.up) else { continue }
            let objects = try carriedObjects(of: phase)
            if !objects.isEmpty { found.append((script.version, objects)) }
        }
        return found
    }

    /// What the phase's `check` sections list now: empty where the phase rebuilds no table by
    /// copying.
    public func carriedObjects(of phase: OnlinePhase) throws(MigratorError) -> [CarriedObject] {
        var found: [CarriedObject] = []
        for (index, section) in phase.sections.enumerated() {
            guard case .check(let query) = section else { continue }
            found += try carriedObjects(query, file: "", section: index + 1, line: phase.lines.indices.contains(index) ? phase.lines[index] : 1)
        }
        return found
    }

    /// Hands on the server's warnings as events.
    func reportWarnings(_ progress: (Event) -> Void) {
        for warning in warnings?.takeWarnings() ?? [] { progress(.serverWarning(warning)) }
    }

    /// Runs `body` again when a statement gave up waiting for a lock (the app held it longer
    /// than the lock timeout) or was chosen to break a deadlock: after a pause that doubles from
    /// 50 ms up to 5 s, with jitter, up to `options.lockRetries` times. No app query waits behind
    /// a statement for longer than the lock timeout. When the retries run out, the message names
    /// the sessions holding locks on `relations` at that moment.
    func retryingLocks(
        file: String, section: Int, line: Int, relations: [String], options: Options, progress: (Event) -> Void, _ body: () throws(MigratorError) -> Void
    ) throws(MigratorError) {
        var attempt = 0
        while true {
            do {
                try body()
                return
            } catch {
                guard case .tableLockTimeout(_, _, let at, let message) = error else { throw error }
                attempt += 1
                let holders = online?.sessionsHoldingLocks(on: relations) ?? []
                guard attempt <= options.lockRetries else {
                    let who =
                        holders.isEmpty
                        ? "no session holds a lock on \(relations.prefix(4).joined(separator: ", ")) now: the waits were behind other transactions' locks, each shorter than the budget but never all gone at once"
                        : "sessions holding locks on its tables: \(holders.joined(separator: "; "))"
                    throw .onlineSectionFailed(
                        file: file, section: section, line: at,
                        message:
                            "\(message): its locks were not granted within \(options.lockTimeoutMilliseconds) ms in \(attempt) attempts; \(who); run again later, or allow a longer --online-lock-timeout"
                    )
                }
                let pause = min(5.0, 0.05 * pow(2.0, Double(attempt - 1))) * Double.random(in: 0.5...1.0)
                progress(.lockRetry(section: section, attempt: attempt, pauseMilliseconds: Int(pause * 1000), holders: holders))
                if cancellation.isRequested { throw .interrupted(during: "the wait to retry section \(section) of \((file as NSString).lastPathComponent)") }
                Thread.sleep(forTimeInterval: pause)
            }
        }
    }

    /// A backfill in key ranges of `batch` rows, each committed with the range's end as the
    /// resume key, the sync triggers told to let the batch through. An inclusive backfill (what
    /// schemagen writes) skips rows apps hold locked and comes back to them at the end.
    func runBackfill(
        _ backfill: OnlinePhase.Backfill, update: String, from resume: String?, file: String, section: Int, line: Int, pacer: inout ReplicationPacer,
        options: Options, progress: (Event) -> Void
    ) throws(MigratorError) {
        let update = MigrationScriptText(update)
        // Progress for `status`: rows done over every run (a resumed one goes on counting).
        let recorded = resume == nil ? nil : try onlineState()?.backfill
        var run = BackfillRun(
            backfill: backfill, update: update, copies: backfill.copies ?? false, place: (file, section, line), lower: resume,
            done: recorded?.table == backfill.table ? recorded?.rowsDone ?? 0 : 0, estimate: online?.estimatedRowCount(of: backfill.table), batch: backfill.batch)
        var lastBatchRows = 0
        while true {
            if cancellation.isRequested { throw .interrupted(during: "the backfill of \(backfill.table) (section \(section)); it resumes after the last batch done") }
            if let most = try paceForReplication(&pacer, lastBatchRows: lastBatchRows, options: options, progress: progress) { run.batch = min(run.batch, most) }
            let (began, doneBefore) = (Date(), run.done)
            guard try backfillBatch(&run, options: options, progress: progress) else { break }
            lastBatchRows = run.done - doneBefore
            run.batch = Self.nextBatchSize(after: run.batch, took: Date().timeIntervalSince(began), options: options, fileBatch: backfill.batch)
            progress(.backfilled(table: backfill.table, rows: run.done))
        }
        if backfill.inclusive {
            // A copy that counted its batches from the first comes back only to the ranges where
            // it passed rows by; anything else reads the whole table again for them.
            let ranges = resume == nil && run.copies ? run.passedRanges : nil
            try revisitHeldRows(backfill, update: update, ranges: ranges, file: file, section: section, line: line, options: options, progress: progress)
        }
    }

    /// One backfill as it runs: where the next batch starts, and its progress.
    struct BackfillRun {
        let backfill: OnlinePhase.Backfill
        let update: MigrationScriptText
        /// Whether it copies rows into another table (`INSERT ... SELECT`), counting them.
        let copies: Bool
        let place: (file: String, section: Int, line: Int)
        /// The key the last batch ended at (nil: none yet).
        var lower: String?
        /// Rows done over every run: a resumed one goes on counting.
        var done: Int
        /// The server's estimate of the table's rows.
        let estimate: Int?
        let started = Date()
        /// Rows done by this run, for its rate.
        var runRows = 0
        /// Rows in the next batch: the file's batch at first, then sized to the time target.
        var batch: Int
        /// A copy's ranges in which it wrote fewer rows than the range holds: rows apps held, or
        /// rows the app's writes had copied already.
        var passedRanges: [[StoredValue]] = []

        var table: SQL { SQL.identifier(backfill.table) }
        var key: SQL { SQL.identifier(backfill.key) }
    }

    /// The next batch's rows: scaled by how far the last one was from the time target, at most
    /// halved or doubled at a time (one slow batch, a checkpoint or a lock wait, does not
    /// swing it), between 100 rows and 100 times the file's batch (at most 100,000). A zero
    /// target keeps the file's batch.
    static func nextBatchSize(after batch: Int, took seconds: Double, options: Options, fileBatch: Int) -> Int {
        guard options.batchTargetMilliseconds > 0, seconds > 0 else { return batch }
        let scale = min(2, max(0.5, Double(options.batchTargetMilliseconds) / 1000 / seconds))
        let ceiling = max(fileBatch, min(100_000, fileBatch * 100))
        return min(ceiling, max(min(100, fileBatch), Int(Double(batch) * scale)))
    }

    /// One batch in a transaction of its own, from the key the last one ended at; false when no
    /// row is left.
    func backfillBatch(_ run: inout BackfillRun, options: Options, progress: (Event) -> Void) throws(MigratorError) -> Bool {
        var finished = false
        let (file, section, line) = run.place
        try retryingLocks(file: file, section: section, line: line, relations: [run.backfill.table], options: options, progress: progress) { () throws(MigratorError) in
            try database.beginTransaction(timeout: lockTimeout)
            do throws(MigratorError) {
                try online?.setLockTimeout(milliseconds: options.lockTimeoutMilliseconds, local: true)
                try online?.markBackfill()
                guard let (from, upper, count) = try (run.backfill.inclusive ? inclusiveBatchBounds(run) : exclusiveBatchBounds(run)) else {
                    finished = true
                    try database.commit()
                    return
                }
                if run.copies {
                    let written = try runCountedCopy(run.update, [from, upper], file: file, section: section, line: line)
                    if written < count { run.passedRanges.append([from, upper]) }
                } else {
                    try runBackfillUpdate(run.update, [from, upper], file: file, section: section, line: line)
                }
                if case .text(let end) = upper {
                    try recordBackfillProgress(run, end: end, rows: count)
                    run.lower = end
                }
                try database.commit()
                run.done += count
                run.runRows += count
            } catch {
                database.rollback()
                throw error
            }
        }
        return !finished
    }

    /// The batch's end as the resume key, with the progress `status` shows, in the batch's
    /// transaction.
    private func recordBackfillProgress(_ run: BackfillRun, end: String, rows: Int) throws(MigratorError) {
        let seconds = Date().timeIntervalSince(run.started)
        let rate: StoredValue = seconds > 0 ? .real(Double(run.runRows + rows) / seconds) : .null
        _ = try database.query(
            """
            UPDATE \(onlineTableSQL) SET resume_key = \(value: .text(end)), backfill_table = \(value: .text(run.backfill.table)), \
            rows_done = \(value: .integer(Int64(run.done + rows))), rows_estimate = \(value: run.estimate.map { .integer(Int64($0)) } ?? .null), \
            rows_per_second = \(value: rate), progress_at = \(value: .text(Self.now())), waiting = NULL WHERE schema = \(value: .text(schema))
            """)
    }

    /// The next range of an inclusive backfill: its first and last keys, two plain bounds read by
    /// the key's index under any plan, and its rows; nil when no row is left. The first batch's
    /// start is its own statement, so no predicate has to allow for a missing bound.
    private func inclusiveBatchBounds(_ run: BackfillRun) throws(MigratorError) -> (StoredValue, StoredValue, Int)? {
        let (table, key, type) = (run.table, run.key, Self.keyType(run.backfill))
        let start =
            if let last = run.lower {
                try database.query(
                    "SELECT CAST(\(key) AS text) AS schemagen_batch_start FROM \(table) WHERE \(key) > CAST(\(value: .text(last)) AS \(type)) ORDER BY \(key) LIMIT 1")
            } else {
                try database.query("SELECT CAST(\(key) AS text) AS schemagen_batch_start FROM \(table) ORDER BY \(key) LIMIT 1")
            }
        guard case .text(let first)? = start.first?.first else { return nil }
        guard let (end, rows) = try batchEnd(run, after: "\(key) >= CAST(\(value: .text(first)) AS \(type))") else { return nil }
        return (.text(first), .text(end), rows)
    }

    /// The next range of a file of an earlier release: `$1` the exclusive lower bound, NULL for
    /// the first batch.
    private func exclusiveBatchBounds(_ run: BackfillRun) throws(MigratorError) -> (StoredValue, StoredValue, Int)? {
        let (key, type) = (run.key, Self.keyType(run.backfill))
        let bound: StoredValue = run.lower.map(StoredValue.text) ?? .null
        let after: SQL = "(CAST(\(value: bound) AS \(type)) IS NULL OR \(key) > CAST(\(value: bound) AS \(type)))"
        guard let (end, rows) = try batchEnd(run, after: after) else { return nil }
        return (bound, .text(end), rows)
    }

    /// A batch's last key past the rows `range` selects (a whole batch on), and how many rows it
    /// holds: fewer than a batch at the table's end, counted for the progress.
    private func batchEnd(_ run: BackfillRun, after range: SQL) throws(MigratorError) -> (end: String, rows: Int)? {
        let (table, key, batch) = (run.table, run.key, run.batch)
        let whole = try database.query(
            "SELECT CAST(\(key) AS text) AS schemagen_batch_end FROM \(table) WHERE \(range) ORDER BY \(key) LIMIT 1 OFFSET \(value: .integer(Int64(batch - 1)))")
        if case .text(let end)? = whole.first?.first { return (end, batch) }
        // The last key by the index, not `max`, which some key types (uuid) lack; the text named
        // apart from the key, or ORDER BY would sort the text.
        let rest = try database.query(
            "SELECT (SELECT CAST(\(key) AS text) AS schemagen_batch_end FROM \(table) WHERE \(range) ORDER BY \(key) DESC LIMIT 1), (SELECT count(*) FROM \(table) WHERE \(range))"
        ).first
        guard case .text(let end)? = rest?.first, case .integer(let rows)? = rest?.last else { return nil }
        return (end, Int(rows))
    }

    /// The rows a skipping backfill passed by, because apps held them: written now that they may
    /// be free, over and over with growing pauses while some stay held, each time naming the
    /// sessions holding them. When the retries run out, the section fails with them named; the
    /// rest of the table is done, and running the same command again resumes here.
    func revisitHeldRows(
        _ backfill: OnlinePhase.Backfill, update: MigrationScriptText, ranges: [[StoredValue]]? = nil, file: String, section: Int, line: Int, options: Options,
        progress: (Event) -> Void
    ) throws(MigratorError) {
        guard let pending = backfill.pending else { return }
        let (table, key) = (SQL.identifier(backfill.table), SQL.identifier(backfill.key))
        // The file's subquery keeps its own `$1` and `$2`, the range bound below.
        let heldRows = MigrationScriptText(
            ("SELECT CAST(\(key) AS text) FROM (\(SQL(verbatim: pending))) AS schemagen_pending LIMIT 20" as SQL).rendered(for: dialect).text)
        var attempt = 0
        while true {
            var held: [String] = []
            try retryingLocks(file: file, section: section, line: line, relations: [backfill.table], options: options, progress: progress) { () throws(MigratorError) in
                try database.beginTransaction(timeout: lockTimeout)
                do throws(MigratorError) {
                    try online?.setLockTimeout(milliseconds: options.lockTimeoutMilliseconds, local: true)
                    try online?.markBackfill()
                    let whole: [[StoredValue]]
                    if let ranges {
                        whole = ranges
                    } else {
                        // The whole table: its first and last keys (named apart from the key, or ORDER BY would sort their text).
                        whole = [
                            try database.query(
                                "SELECT (SELECT CAST(\(key) AS text) AS schemagen_first FROM \(table) ORDER BY \(key) LIMIT 1), (SELECT CAST(\(key) AS text) AS schemagen_last FROM \(table) ORDER BY \(key) DESC LIMIT 1)"
                            ).first ?? []
                        ]
                    }
                    held = []
                    for range in whole where range.count == 2 && range[0] != .null {
                        try runBackfillUpdate(update, range, file: file, section: section, line: line)
                        held += try database.query(heldRows, arguments: range).compactMap {
                            if case .text(let text)? = $0.first { text } else { nil }
                        }
                    }
                    try database.commit()
                } catch {
                    database.rollback()
                    throw error
                }
            }
            guard !held.isEmpty else { return }
            attempt += 1
            let holders = online?.sessionsHoldingRows(of: backfill.table, key: backfill.key, type: backfill.type, keys: held) ?? []
            guard attempt <= options.lockRetries else {
                throw .onlineSectionFailed(
                    file: file, section: section, line: line,
                    message:
                        "the backfill of \(backfill.table) is done but for \(held.count == 20 ? "20 or more rows" : "\(held.count) row\(held.count == 1 ? "" : "s")") (\(backfill.key) \(held.prefix(5).joined(separator: ", "))) that apps kept locked through \(attempt) attempts\(holders.isEmpty ? "" : ", held by \(holders.joined(separator: "; "))"); run the same command again once they are released"
                )
            }
            progress(.rowsHeld(table: backfill.table, keys: held, holders: holders, attempt: attempt))
            if cancellation.isRequested { throw .interrupted(during: "the backfill of \(backfill.table) (section \(section)), waiting for rows apps hold; it resumes there") }
            Thread.sleep(forTimeInterval: min(5.0, 0.05 * pow(2.0, Double(attempt - 1))) * Double.random(in: 0.5...1.0))
        }
    }

    /// One batch of a copy, with the rows it wrote.
    func runCountedCopy(_ copy: MigrationScriptText, _ bounds: [StoredValue], file: String, section: Int, line: Int) throws(MigratorError) -> Int {
        let statement = copy.text.trimmingCharacters(in: .whitespacesAndNewlines).dropLast()
        let counted = MigrationScriptText("WITH schemagen_batch AS (\(statement) RETURNING 1) SELECT count(*) FROM schemagen_batch")
        guard case .integer(let written)? = try runBackfillUpdate(counted, bounds, file: file, section: section, line: line).first?.first else { return 0 }
        return Int(written)
    }

    /// One batch's UPDATE; a lock or deadlock it met is retried like a section's.
    @discardableResult
    func runBackfillUpdate(_ update: MigrationScriptText, _ bounds: [StoredValue], file: String, section: Int, line: Int) throws(MigratorError) -> [[StoredValue]] {
        do {
            return try database.query(update, arguments: bounds)
        } catch {
            if case .database(let failure) = error, failure.kind == .busy {
                throw MigratorError.tableLockTimeout(file: file, statement: 1, line: line, message: failure.message)
            }
            throw MigratorError.onlineSectionFailed(file: file, section: section, line: line, message: "\(error)")
        }
    }
}
