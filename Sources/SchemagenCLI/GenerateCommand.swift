import CodeGeneration
import CommandLineKit
import Diagnostics
import Foundation
import ProjectConfig
import SQLDialects
import SchemaKit
import SchemagenPipeline

/// `schemagen generate`: Swift models from schemas through templates.
public enum GenerateCommand: Command {
    public static let spec = CommandSpec(
        name: "generate",
        abstract: "Generate Swift model code from schemas through Mustache templates.",
        discussion: """
            Writes one folder per schema under the output folder, rewriting only files whose content
            changed and deleting generated files that are no longer produced (files without the
            generated header are never touched). Defaults may come from .schemagen.yaml (keys:
            schemas, output, templates, migrations); flags override it. When a schema differs from
            the snapshot of its newest migration, a new numbered migration is written to
            <migrations>/<Schema>/, and the generated code embeds every migration. With
            --single-file (what the build-tool plugin runs) no migration is planned: the committed
            ones are verified and embedded, and a schema that differs from its newest migration is
            an error telling you to plan it with --migrations-only. Exit status: 0 done (or up to
            date with --check), 1 invalid schema, template error, risky migration, tampered or
            out-of-date migration folder, or out-of-date files with --check, 2 usage or I/O error.
            """,
        options: [
            .value("schema", short: "s", valueName: "path", help: "A schema file or folder; only these schemas are generated.", repeatable: true),
            .value("output", short: "o", valueName: "dir", help: "Where generated files go.", defaultValue: "Generated"),
            .value("templates", short: "t", valueName: "dir", help: "Templates that replace or add to the defaults."),
            .flag("check", help: "Write nothing; list missing, stale and extra files and fail if there are any."),
            .flag("single-file", help: "Write each schema's code into one file named after the schema file, embedding the committed migrations without planning any (for build plugins)."),
            .flag("migrations-only", help: "Plan and write migrations only; write no code."),
            .value(
                "dialect", valueName: "dialect",
                help: "Plan migrations for this dialect (\(SQLDialectName.list)); repeatable. Default: each schema's dialects, else the config's, else \(SQLDialectName.default.rawValue).",
                allowed: SQLDialectName.allCases.map(\.rawValue), repeatable: true),
            .value("config", valueName: "file", help: "A config file with defaults.", defaultValue: ProjectConfig.defaultFile),
            .value("migrations", short: "m", valueName: "dir", help: "Where each schema's migration folder is.", defaultValue: "Migrations"),
            .value("name", valueName: "name", help: "The name of the new migration (default: derived from the change)."),
            .flag("allow-destructive", help: "Let a migration that drops or narrows data through, with warnings."),
            .value("cache-dir", valueName: "dir", help: "Where the record that skips unchanged runs is kept (default: .build/schemagen; never the output folder)."),
            .flag("timings", help: "Print how long each stage took (load, model, plan, templates, render, compare, write) to standard error."),
        ])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let (loadedConfig, configFailure) = SchemaInput.config(arguments, io: io)
        guard let config = loadedConfig else { return configFailure }
        let pipeline = GenerationPipeline(
            .init(
                config: config, schemas: arguments.values("schema"), output: arguments.value("output"), templates: arguments.value("templates"),
                migrations: arguments.value("migrations"), migrationName: arguments.value("name"),
                allowDestructive: arguments.flag("allow-destructive"), singleFile: arguments.flag("single-file"),
                dialects: arguments.values("dialect").isEmpty ? nil : arguments.values("dialect").compactMap(SQLDialectName.init),
                cacheFolder: arguments.value("cache-dir")))
        let check = arguments.flag("check")
        var clock = StageClock(enabled: arguments.flag("timings"))
        defer { if let report = clock.report() { io.writeError(report) } }

        // Nothing changed since the last run (inputs by content, outputs by size and time):
        // say so, with the warnings that run printed, and stop.
        let usesCache = !check && !arguments.flag("migrations-only") && !pipeline.configuration.singleFile
        let output = pipeline.configuration.output
        var cacheInputs: String?
        let cacheLocation = GenerationCache.Location(output: output, cacheFolder: pipeline.configuration.cacheFolder)
        let schemaFiles = (try? SchemaDiscovery.files(in: pipeline.configuration.schemaPaths).get()) ?? []
        if usesCache, !schemaFiles.isEmpty {
            cacheInputs = GenerationCache.inputsDigest(pipeline.configuration, schemaFiles: schemaFiles)
            if let inputs = cacheInputs, let cache = GenerationCache.load(cacheLocation), cache.isFresh(output: output, inputs: inputs) {
                io.writeError(cache.warnings)
                clock.lap("cache")
                io.writeOutput("Generated \(VerbalCount.count(cache.schemaCount, "schema")) into \(output): nothing changed since the last run.\n")
                return .success
            }
        }
        var printed = ""

        // 1. Load: invalid schemas stop here with the validator's diagnostics.
        let loaded: SchemaLoader.Result
        switch pipeline.load() {
        case .failure(let failure): return stop(failure, io: io)
        case .success(let result): loaded = result
        }
        clock.lap("load")
        let sources = SchemaInput.sources(loaded)
        if !loaded.diagnostics.isEmpty {
            let text = DiagnosticRenderer(format: .text, colored: false, sources: { sources[$0] }).render(loaded.diagnostics)
            printed += text
            io.writeError(text)
        }
        if loaded.diagnostics.contains(where: { $0.has(SchemaDiagnosticCode.fileUnreadable) }) { return .usageOrIO }
        if loaded.hasErrors {
            io.writeError("schemagen: error: no code generated: fix the schema errors above\n")
            return .failure
        }

        // 2-3. The relational model, then the migrations it calls for.
        let models = pipeline.model(loaded.schemas)
        clock.lap("model")
        let plan = pipeline.plan(loaded.schemas, models: models)
        clock.lap("plan")
        if !plan.diagnostics.isEmpty {
            let text = DiagnosticRenderer(format: .text, sources: { sources[$0] }).render(plan.diagnostics)
            printed += text
            io.writeError(text)
        }
        if plan.hasErrors {
            io.writeError("schemagen: error: no code or migration generated: fix the problems above\n")
            return .failure
        }
        if arguments.flag("migrations-only") { return migrationsOnly(plan, pipeline: pipeline, check: check, io: io) }

        // 4. Render.
        let rendered: GenerationPipeline.Rendered
        let templates: TemplateSet
        switch pipeline.templates() {
        case .failure(let failure): return stop(failure, io: io)
        case .success(let result): templates = result
        }
        clock.lap("templates")
        switch pipeline.render(loaded, models: models, plan: plan, templates: templates) {
        case .failure(let failure): return stop(failure, io: io)
        case .success(let result): rendered = result
        }
        clock.lap("render")

        // 5. Compare, then write (or only report, with --check).
        let changes = pipeline.compare(rendered)
        clock.lap("compare")
        if check {
            var report = ""
            for path in changes.missing { report += "missing: \(output)/\(path)\n" }
            for path in changes.stale { report += "stale:   \(output)/\(path)\n" }
            for path in changes.extra { report += "extra:   \(output)/\(path)\n" }
            report += missingMigrations(plan)
            if changes.isUpToDate, plan.migrations.isEmpty {
                io.writeOutput("Generated code in \(output) is up to date (\(VerbalCount.files(rendered.files.count))).\n")
                return .success
            }
            io.writeOutput(report + "Generated code or migrations are out of date: run `schemagen generate`.\n")
            return .failure
        }
        if case .failure(let failure) = pipeline.sync(rendered, changes) { return stop(failure, io: io) }
        var report = ""
        switch pipeline.writeMigrations(plan) {
        case .failure(let failure): return stop(failure, io: io)
        case .success: report += writtenMigrations(plan)
        }
        clock.lap("write")
        if usesCache {
            // The digest taken before reading: a schema edited since then no longer matches it,
            // so the next run is a full one. Migrations this run wrote are inputs of the next.
            let inputs = plan.migrations.isEmpty ? cacheInputs : GenerationCache.inputsDigest(pipeline.configuration, schemaFiles: loaded.files.map(\.path))
            if let inputs {
                GenerationCache.record(
                    cacheLocation, inputs: inputs, files: rendered.files.map(\.path), folders: rendered.folders,
                    schemaCount: rendered.schemaCount, warnings: printed)
            } else {
                GenerationCache.forget(cacheLocation)
            }
        }
        for path in changes.missing + changes.stale { report += "wrote   \(output)/\(path)\n" }
        for path in changes.extra { report += "deleted \(output)/\(path)\n" }
        report +=
            "Generated \(VerbalCount.count(rendered.schemaCount, "schema")) into \(output): \(changes.missing.count + changes.stale.count) written, \(changes.unchanged.count) unchanged, \(changes.extra.count) deleted.\n"
        io.writeOutput(report)
        return .success
    }

    /// `--migrations-only`: writes (or, with `check`, lists) the planned migrations and nothing else.
    static func migrationsOnly(_ plan: GenerationPipeline.Plan, pipeline: GenerationPipeline, check: Bool, io: CommandIO) -> ExitCode {
        if plan.migrations.isEmpty {
            io.writeOutput("Migrations are up to date.\n")
            return .success
        }
        if check {
            io.writeOutput(missingMigrations(plan))
            return .failure
        }
        if case .failure(let failure) = pipeline.writeMigrations(plan) { return stop(failure, io: io) }
        io.writeOutput(writtenMigrations(plan))
        return .success
    }

    static func missingMigrations(_ plan: GenerationPipeline.Plan) -> String {
        plan.migrations.map { "missing migration: \($0.directory.path)/\($0.entry.upFile) (schema \($0.schema.name) version \($0.migration.to.version))\n" }.joined()
    }

    static func writtenMigrations(_ plan: GenerationPipeline.Plan) -> String {
        plan.migrations.map {
            "migration \($0.directory.path)/\($0.entry.prefix) (schema \($0.schema.name) version \($0.migration.to.version)): \(VerbalCount.count($0.migration.steps.count, "step"))\n"
        }.joined()
    }

    static func stop(_ failure: GenerationPipeline.Failure, io: CommandIO) -> ExitCode {
        io.writeError("schemagen: error: \(failure)\n")
        if case .io = failure { return .usageOrIO }
        return .failure
    }
}

enum VerbalCount {
    static func count(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
    static func files(_ count: Int) -> String { Self.count(count, "file") }
}

/// Wall-clock time per stage of one run, for `--timings`.
struct StageClock {
    let enabled: Bool
    private var last = DispatchTime.now().uptimeNanoseconds
    private var laps: [(stage: String, seconds: Double)] = []

    init(enabled: Bool) { self.enabled = enabled }

    mutating func lap(_ stage: String) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        laps.append((stage, Double(now - last) / 1e9))
        last = now
    }

    func report() -> String? {
        guard enabled, !laps.isEmpty else { return nil }
        let total = laps.reduce(0) { $0 + $1.seconds }
        return laps.map { String(format: "timing %-9@ %.3f s\n", $0.stage, $0.seconds) }.joined() + String(format: "timing total     %.3f s\n", total)
    }
}
