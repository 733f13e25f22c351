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
            an error telling you to plan it with --migrations-only. With --target swiftdata the
            output is SwiftData models: each committed version (from the schema text recorded beside
            its migration) as a VersionedSchema, and the migration plan between them; what SwiftData
            cannot say is a comment in the file and a warning. Exit status: 0 done (or up to
            date with --check), 1 invalid schema, template error, risky migration, tampered or
            out-of-date migration folder, or out-of-date files with --check, 2 usage or I/O error.
            """,
        options: [
            .value("schema", short: "s", valueName: "path", help: "A schema file or folder; only these schemas are generated.", repeatable: true),
            .value("output", short: "o", valueName: "dir", help: "Where generated files go.", defaultValue: "Generated"),
            .value("templates", short: "t", valueName: "dir", help: "Templates that replace or add to the target's defaults."),
            .value(
                "target", valueName: "target",
                help:
                    "What the built-in templates produce: store (the store's model structs) or swiftdata (SwiftData models, one VersionedSchema per committed version, and their migration plan). Default: the config's target, else store.",
                allowed: TemplateSet.Target.allCases.map(\.rawValue)),
            .value(
                "deployment-target", valueName: "os",
                help:
                    "With --target swiftdata: the oldest OS the models run on (ios17, ios18, macos14, macos15; default: the config's deploymentTarget, else ios17). Before iOS 18 and macOS 15, #Unique and #Index are comments and warnings.",
                allowed: DeploymentTarget.allCases.map(\.rawValue)),
            .value(
                "typealiases", valueName: "on|off",
                help:
                    "With --target swiftdata: whether the newest version's types get typealiases of their own names. Default: each one except a name that would hide a type of Swift, Foundation, SwiftUI or SwiftData (Task, Color), with a warning; on writes those too (or the config's typealiases).",
                allowed: ["on", "off"]),
            .value(
                "typealias-prefix", valueName: "prefix",
                help: "With --target swiftdata: start each typealias with this (App: AppTask = TasksSchemaV3.Task), so none hides Swift's, SwiftUI's or SwiftData's types."),
            .flag(
                "strict-stages",
                help:
                    "With --target swiftdata: fail where a stage cannot do its work alone. By default that is a warning: its work is yours, in <Schema>+MigrationPlan+Custom.swift, and the stage checks at run time that it was done."
            ),
            .flag("allow-incomplete-stages", help: "Undoes --strict-stages and the config's strictStages (what earlier releases needed; now the default)."),
            .flag(
                "allow-released-version-changes",
                help: "With --target swiftdata: let a released version's models change (recorded in its migration's .swiftdata.sum); only before any device has that version."),
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

    /// `--typealiases off`, `--typealias-prefix P`, `--typealiases on`; nil leaves it to the config.
    static func typeAliases(_ arguments: ParsedArguments) -> SwiftDataTypeAliases? {
        if arguments.value("typealiases") == "off" { return SwiftDataTypeAliases.none }
        if let prefix = arguments.value("typealias-prefix") { return prefix.isEmpty ? .plain : .prefixed(prefix) }
        return arguments.value("typealiases") == "on" ? .plain : nil
    }

    /// `--target`, else the config's `target`, else the store's models.
    static func target(_ arguments: ParsedArguments, config: ProjectConfig) -> TemplateSet.Target {
        (arguments.value("target") ?? config.target).flatMap(TemplateSet.Target.init) ?? .store
    }

    /// The command that brings the checked output up to date: `generate` with the options that
    /// shape it, as this run was given them.
    static func rerun(_ arguments: ParsedArguments) -> String {
        var command = "schemagen generate"
        for option in ["schema", "output", "templates", "migrations", "dialect", "target", "deployment-target", "typealias-prefix", "typealiases"] {
            for value in arguments.values(option) { command += " --\(option) \(shellWord(value))" }
        }
        for flag in ["single-file", "strict-stages", "allow-incomplete-stages"] where arguments.flag(flag) { command += " --\(flag)" }
        return command
    }

    /// The value as one shell word: bare when it is plain, else in single quotes.
    static func shellWord(_ value: String) -> String {
        if !value.isEmpty, value.allSatisfy({ $0.isLetter || $0.isNumber || "-_./=:@".contains($0) }) { return value }
        return "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        if let prefix = arguments.value("typealias-prefix"), !prefix.isEmpty, prefix.first?.isNumber == true || !prefix.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
            io.writeError("schemagen: error: --typealias-prefix '\(prefix)' is not the start of a Swift name; use letters, digits and _, such as App\n")
            return .usageOrIO
        }
        let (loadedConfig, configFailure) = SchemaInput.config(arguments, io: io)
        guard let config = loadedConfig else { return configFailure }
        let pipeline = GenerationPipeline(
            .init(
                config: config, schemas: arguments.values("schema"), output: arguments.value("output"), templates: arguments.value("templates"),
                migrations: arguments.value("migrations"), migrationName: arguments.value("name"),
                allowDestructive: arguments.flag("allow-destructive"), singleFile: arguments.flag("single-file"),
                dialects: arguments.values("dialect").isEmpty ? nil : arguments.values("dialect").compactMap(SQLDialectName.init),
                cacheFolder: arguments.value("cache-dir"), target: target(arguments, config: config),
                deploymentTarget: arguments.value("deployment-target").flatMap(DeploymentTarget.init),
                typeAliases: typeAliases(arguments),
                allowIncompleteStages: arguments.flag("allow-incomplete-stages") ? true : nil,
                allowReleasedVersionChanges: arguments.flag("allow-released-version-changes"),
                strictStages: arguments.flag("strict-stages") ? true : nil))
        let check = arguments.flag("check")
        let mode: GenerationPipeline.Mode =
            arguments.flag("migrations-only") ? (check ? .checkMigrationsOnly : .migrationsOnly) : (check ? .check : .write)
        let report = pipeline.run(mode)
        io.writeError(report.diagnostics)
        if arguments.flag("timings"), !report.timings.isEmpty {
            let total = report.timings.reduce(0) { $0 + $1.seconds }
            io.writeError(report.timings.map { String(format: "timing %-9@ %.3f s\n", $0.stage, $0.seconds) }.joined() + String(format: "timing total     %.3f s\n", total))
        }
        let output = pipeline.configuration.output
        switch report.outcome {
        case .unchangedSinceLastRun(let schemaCount):
            io.writeOutput("Generated \(VerbalCount.count(schemaCount, "schema")) into \(output): nothing changed since the last run.\n")
            return .success
        case .unreadableSchema:
            return .usageOrIO
        case .invalidSchemas:
            io.writeError("schemagen: error: no code generated: fix the schema errors above\n")
            return .failure
        case .planningFailed:
            io.writeError("schemagen: error: no code or migration generated: fix the problems above\n")
            return .failure
        case .stopped(let failure):
            return stop(failure, io: io)
        case .migrations(let migrations, let written):
            if migrations.isEmpty, report.storeMigrations.isEmpty {
                io.writeOutput("Migrations are up to date.\n")
                return .success
            }
            io.writeOutput(
                written
                    ? writtenMigrations(migrations) + writtenStoreMigrations(report.storeMigrations)
                    : missingMigrations(migrations) + missingStoreMigrations(report.storeMigrations))
            return written ? .success : .failure
        case .checked(let changes, let migrations, let fileCount):
            if changes.isUpToDate, migrations.isEmpty, report.storeMigrations.isEmpty {
                io.writeOutput("Generated code in \(output) is up to date (\(VerbalCount.files(fileCount))).\n")
                return .success
            }
            var text = ""
            for path in changes.missing { text += "missing: \(output)/\(path)\n" }
            for path in changes.stale { text += "stale:   \(output)/\(path)\n" }
            for path in changes.extra { text += "extra:   \(output)/\(path)\n" }
            io.writeOutput(
                text + missingMigrations(migrations) + missingStoreMigrations(report.storeMigrations) + "Generated code or migrations are out of date: run `\(rerun(arguments))`.\n")
            return .failure
        case .generated(let changes, let migrations, let schemaCount):
            var text = writtenMigrations(migrations) + writtenStoreMigrations(report.storeMigrations)
            for path in changes.missing + changes.stale { text += "wrote   \(output)/\(path)\n" }
            for path in changes.extra { text += "deleted \(output)/\(path)\n" }
            text +=
                "Generated \(VerbalCount.count(schemaCount, "schema")) into \(output): \(changes.missing.count + changes.stale.count) written, \(changes.unchanged.count) unchanged, \(changes.extra.count) deleted.\n"
            io.writeOutput(text)
            return .success
        }
    }

    /// The runtime store's own migrations (its history tables on PostgreSQL), by path without extension.
    static func missingStoreMigrations(_ paths: [String]) -> String {
        paths.map { "missing migration: \($0).up.sql (the store's own tables)\n" }.joined()
    }

    static func writtenStoreMigrations(_ paths: [String]) -> String {
        paths.map { "migration \($0) (the store's own tables): review it; `migrate up` applies it with the app's\n" }.joined()
    }

    static func missingMigrations(_ migrations: [PendingMigration]) -> String {
        migrations.map { "missing migration: \($0.directory.path)/\($0.entry.upFile) (schema \($0.schema.name) version \($0.migration.to.version))\n" }.joined()
    }

    static func writtenMigrations(_ migrations: [PendingMigration]) -> String {
        migrations.map {
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
