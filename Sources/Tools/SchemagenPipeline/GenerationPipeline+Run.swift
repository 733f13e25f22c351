import CodeGeneration
import Diagnostics
import Foundation
import RelationalModel
import SchemaKit

extension GenerationPipeline {
    /// What a run does with what it produces.
    public enum Mode: Sendable {
        /// Writes changed files and new migrations, and records the run so an unchanged next
        /// run can stop early.
        case write
        /// Writes nothing: reports missing, stale and extra files and unplanned migrations.
        case check
        /// Plans and writes migrations only.
        case migrationsOnly
        /// Writes nothing: reports the migrations `migrationsOnly` would write.
        case checkMigrationsOnly

        var writes: Bool { self == .write || self == .migrationsOnly }
        var generatesCode: Bool { self == .write || self == .check }
    }

    /// How a run ended, with everything a caller prints.
    public struct Report: Sendable {
        public enum Outcome: Sendable {
            /// Nothing changed since the last recorded run (inputs by content, outputs by size
            /// and time): nothing was read beyond the inputs' digest.
            case unchangedSinceLastRun(schemaCount: Int)
            /// A schema file could not be read (exit 2).
            case unreadableSchema
            /// The schemas have errors: nothing was generated.
            case invalidSchemas
            /// Planning found errors (lint, tampered folders): nothing was generated.
            case planningFailed
            /// A stage stopped: templates, rendering or writing.
            case stopped(Failure)
            /// `check`: the files and migrations as they should be, or what differs.
            case checked(GeneratedFileSync.Plan, migrations: [PendingMigration], fileCount: Int)
            /// `migrationsOnly`: the migrations written; `checkMigrationsOnly`: those missing.
            case migrations([PendingMigration], written: Bool)
            /// `write`: files written, unchanged and deleted, and the migrations written.
            case generated(GeneratedFileSync.Plan, migrations: [PendingMigration], schemaCount: Int)
        }

        public var outcome: Outcome
        /// The schemas' and the plan's diagnostics as text, as the run found them (for a run
        /// that stopped early, as the recorded run printed them).
        public var diagnostics = ""
        /// Seconds per stage (`cache`, `load`, `model`, `plan`, `templates`, `render`,
        /// `compare`, `write`), in order.
        public var timings: [(stage: String, seconds: Double)] = []
        /// The runtime store's own migrations (`Migrations/SchemagenStore/postgres/`, without
        /// extensions) this run wrote, or in a checking mode, the ones missing.
        public var storeMigrations: [String] = []
    }

    /// Runs the stages in order and stops at the first that fails: the cache check, load,
    /// relational model, plan, templates, render, compare, then write (or check).
    ///
    ///     let report = GenerationPipeline(.init(schemas: ["Schemas"], output: "Sources/Models")).run(.write)
    ///     if case .generated(let changes, _, _) = report.outcome { print(changes.missing.count, "files written") }
    public func run(_ mode: Mode) -> Report {
        var clock = StageClock()
        var diagnostics = ""
        var storeMigrations: [String] = []
        let outcome = stages(mode, diagnostics: &diagnostics, storeMigrations: &storeMigrations, clock: &clock)
        return Report(outcome: outcome, diagnostics: diagnostics, timings: clock.laps, storeMigrations: storeMigrations)
    }

    private func stages(_ mode: Mode, diagnostics: inout String, storeMigrations: inout [String], clock: inout StageClock) -> Report.Outcome {
        // The schema files, found once; an unchanged run stops here, saying what the recorded
        // run said. Whatever the digest read, the stages below read from memory.
        let schemaFiles: [String]
        switch SchemaDiscovery.files(in: configuration.schemaPaths) {
        case .failure(let failure): return .stopped(.io("\(failure)"))
        case .success(let found): schemaFiles = found
        }
        let usesCache = mode == .write && !configuration.singleFile
        let cacheLocation = GenerationCache.Location(output: configuration.output, cacheFolder: configuration.cacheFolder)
        let cacheInputs = usesCache && !schemaFiles.isEmpty ? GenerationCache.inputsDigest(configuration, schemaFiles: schemaFiles, files: files) : nil
        if let inputs = cacheInputs, let cache = GenerationCache.load(cacheLocation), cache.isFresh(output: configuration.output, inputs: inputs) {
            clock.lap("cache")
            diagnostics = cache.warnings
            return .unchangedSinceLastRun(schemaCount: cache.schemaCount)
        }

        // 1. Load: invalid schemas stop here with the validator's diagnostics.
        let loaded = load(schemaFiles)
        clock.lap("load")
        let sources = Dictionary(loaded.files.compactMap { file in file.source.map { (file.path, $0) } }, uniquingKeysWith: { first, _ in first })
        let render = DiagnosticRenderer(format: .text, colored: false, sources: { sources[$0] })
        diagnostics += render.render(loaded.diagnostics)
        if loaded.diagnostics.contains(where: { $0.has(SchemaDiagnosticCode.fileUnreadable) }) {
            return .unreadableSchema
        }
        guard !loaded.hasErrors else { return .invalidSchemas }

        // 2-3. The relational model, then the migrations it calls for.
        let models = model(loaded.schemas)
        clock.lap("model")
        let plan = plan(loaded.schemas, models: models, sources: sources.mapValues { String(decoding: $0.bytes, as: UTF8.self) })
        clock.lap("plan")
        diagnostics += render.render(plan.diagnostics)
        if plan.hasErrors {
            return .planningFailed
        }
        // Written with the other migrations below; a checking run reports them missing.
        storeMigrations = plan.storeMigrations.map { StoreMigrationFolder.path(of: $0, root: configuration.migrationsRoot) }
        if !mode.generatesCode {
            if mode.writes, case .failure(let failure) = writeMigrations(plan) {
                return .stopped(failure)
            }
            clock.lap("write")
            return .migrations(plan.migrations, written: mode.writes)
        }
        let (outcome, rendered) = renderAndWrite(mode, loaded: loaded, models: models, plan: plan, diagnostics: &diagnostics, render: render, clock: &clock)
        if usesCache, case .generated = outcome, let rendered {
            record(cacheLocation, inputs: cacheInputs, schemaFiles: schemaFiles, plan: plan, rendered: rendered, warnings: diagnostics)
        }
        return outcome
    }

    /// Stages 4 and 5: render every file, compare with what is on disk, then write (or, in
    /// `check`, only report).
    private func renderAndWrite(
        _ mode: Mode, loaded: SchemaLoader.Result, models: [String: SchemaSnapshot], plan: Plan, diagnostics: inout String, render: DiagnosticRenderer, clock: inout StageClock
    ) -> (outcome: Report.Outcome, rendered: Rendered?) {
        let templateSet: TemplateSet
        switch templates() {
        case .failure(let failure):
            return (.stopped(failure), nil)
        case .success(let result): templateSet = result
        }
        clock.lap("templates")
        let rendered: Rendered
        switch self.render(loaded, models: models, plan: plan, templates: templateSet) {
        case .failure(let failure):
            return (.stopped(failure), nil)
        case .success(let result): rendered = result
        }
        clock.lap("render")
        diagnostics += render.render(rendered.diagnostics)
        if rendered.diagnostics.contains(where: { $0.severity == .error }) {
            if mode == .write, let written = writeHooksForIncompleteStages(rendered) {
                diagnostics += written
            }
            return (.stopped(.invalid("no code generated: fix the problems above")), nil)
        }
        let changes = compare(rendered)
        clock.lap("compare")
        guard mode == .write else {
            return (.checked(changes, migrations: plan.migrations, fileCount: rendered.files.count), rendered)
        }
        if case .failure(let failure) = sync(rendered, changes) {
            return (.stopped(failure), nil)
        }
        if case .failure(let failure) = writeMigrations(plan) {
            return (.stopped(failure), nil)
        }
        clock.lap("write")
        return (.generated(changes, migrations: plan.migrations, schemaCount: rendered.schemaCount), rendered)
    }

    /// When the only errors are stages that cannot do their work alone, the file their work goes
    /// in (`<Schema>+MigrationPlan+Custom.swift`, the user's) is written now if it is missing, so
    /// the errors name a file that exists. Nothing else is written. A note per file written.
    private func writeHooksForIncompleteStages(_ rendered: Rendered) -> String? {
        let errors = rendered.diagnostics.filter { $0.severity == .error }
        guard errors.allSatisfy({ $0.has(SwiftDataCode.incompleteStage) }) else { return nil }
        let hooks = rendered.files.filter(\.isUserOwned)
        // Compared within no schema folder, so nothing counts as extra: only what is missing.
        var missing = compare(Rendered(files: hooks, folders: [], schemaCount: 0))
        missing.stale = []
        guard !missing.missing.isEmpty, (try? GeneratedFileSync(outputFolder: configuration.output).apply(missing, files: hooks)) != nil else { return nil }
        return missing.missing.map { "\(configuration.output)/\($0): note: written for the stages' work (yours from now on)\n" }.joined()
    }

    /// Records the run for the next one to skip if nothing changed. The digest is the one taken
    /// before reading: a schema edited since then no longer matches it, so the next run is a
    /// full one. Migrations this run wrote are inputs of the next: their folders, forgotten by
    /// the write, are read again; nothing else is.
    private func record(_ location: GenerationCache.Location, inputs: String?, schemaFiles: [String], plan: Plan, rendered: Rendered, warnings: String) {
        let inputs = plan.migrations.isEmpty ? inputs : GenerationCache.inputsDigest(configuration, schemaFiles: schemaFiles, files: files)
        if let inputs {
            GenerationCache.record(location, inputs: inputs, files: rendered.files.map(\.path), folders: rendered.folders, schemaCount: rendered.schemaCount, warnings: warnings)
        } else {
            GenerationCache.forget(location)
        }
    }
}

/// Wall-clock time per stage of one run.
struct StageClock {
    private var last = DispatchTime.now().uptimeNanoseconds
    private(set) var laps: [(stage: String, seconds: Double)] = []

    mutating func lap(_ stage: String) {
        let now = DispatchTime.now().uptimeNanoseconds
        laps.append((stage, Double(now - last) / 1e9))
        last = now
    }
}
