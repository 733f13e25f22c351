import CodeGeneration
import CommandLineKit
import Diagnostics
import Foundation
import Mustache
import ProjectConfig
import SchemaKit

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
            .value("config", valueName: "file", help: "A config file with defaults.", defaultValue: ProjectConfig.defaultFile),
            .value("migrations", short: "m", valueName: "dir", help: "Where each schema's migration folder is.", defaultValue: "Migrations"),
            .value("name", valueName: "name", help: "The name of the new migration (default: derived from the change)."),
            .flag("allow-destructive", help: "Let a migration that drops or narrows data through, with warnings."),
        ])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        // Defaults, then the config file, then flags.
        var config = ProjectConfig()
        let configPath = arguments.value("config") ?? ProjectConfig.defaultFile
        if arguments.value("config") != nil || FileManager.default.fileExists(atPath: configPath) {
            let (loaded, diagnostics, source) = ProjectConfig.load(path: configPath)
            if !diagnostics.isEmpty {
                io.writeError(DiagnosticRenderer(format: .text, sources: { _ in source }).render(diagnostics))
            }
            guard let loaded else { return diagnostics.contains { $0.code == "file-unreadable" } ? .usageOrIO : .failure }
            config = loaded
        }
        let explicitSchemas = arguments.values("schema")
        let schemaPaths = explicitSchemas.isEmpty ? (config.schemas ?? ["Schemas"]) : explicitSchemas
        let output = arguments.value("output") ?? config.output ?? "Generated"
        let templatesFolder = arguments.value("templates") ?? config.templates

        // Schemas: invalid ones stop generation with the validator's diagnostics.
        guard let files = SchemaInput.files(schemaPaths, io: io) else { return .usageOrIO }
        let loaded = SchemaLoader.load(files: files)
        if !loaded.diagnostics.isEmpty {
            let sources = SchemaInput.sources(loaded)
            io.writeError(DiagnosticRenderer(format: .text, colored: false, sources: { sources[$0] }).render(loaded.diagnostics))
        }
        if loaded.diagnostics.contains(where: { $0.code == SchemaDiagnosticCode.fileUnreadable.rawValue }) { return .usageOrIO }
        if loaded.hasErrors {
            io.writeError("schemagen: error: no code generated: fix the schema errors above\n")
            return .failure
        }

        // Templates, parsed once.
        let templates: TemplateSet
        do {
            if let templatesFolder {
                var isFolder: ObjCBool = false
                guard FileManager.default.fileExists(atPath: templatesFolder, isDirectory: &isFolder), isFolder.boolValue else {
                    io.writeError("schemagen: error: templates folder '\(templatesFolder)' does not exist\n")
                    return .usageOrIO
                }
            }
            templates = try TemplateSet.loading(userFolder: templatesFolder)
        } catch let error as MustacheError {
            io.writeError("schemagen: error: \(error)\n")
            return .failure
        } catch {
            io.writeError("schemagen: error: \(error)\n")
            return .failure
        }

        // Migrations: one new numbered migration per changed schema; with --single-file, none,
        // and the committed history must already describe the schema.
        var pendingMigrations: [PendingMigration] = []
        let migrationsRoot = arguments.value("migrations") ?? config.migrations ?? "Migrations"
        let singleFile = arguments.flag("single-file")
        do {
            var diagnostics: [Diagnostic] = []
            for schema in loaded.schemas {
                switch PendingMigration.plan(for: schema, root: migrationsRoot, name: arguments.value("name"), allowDestructive: arguments.flag("allow-destructive")) {
                case .upToDate: break
                case .failed(let problems): diagnostics += problems
                case .pending(let pending) where singleFile:
                    diagnostics.append(PendingMigration.notPlanned(pending, root: migrationsRoot))
                case .pending(let pending):
                    diagnostics += pending.findings
                    pendingMigrations.append(pending)
                }
            }
            if !diagnostics.isEmpty {
                let sources = SchemaInput.sources(loaded)
                io.writeError(DiagnosticRenderer(format: .text, sources: { sources[$0] }).render(diagnostics))
            }
            if diagnostics.contains(where: { $0.severity == .error }) {
                io.writeError("schemagen: error: no code or migration generated: fix the problems above\n")
                return .failure
            }
        }
        if arguments.flag("migrations-only") {
            return writeMigrations(pendingMigrations, check: arguments.flag("check"), io: io)
        }

        var generated: [(schema: Schema, file: String, files: [GeneratedFile])] = []
        for result in loaded.files {
            guard let schema = result.schema else { continue }
            let sourceFile = URL(fileURLWithPath: result.path).lastPathComponent
            do {
                // Templates may embed the schema's migrations, the new one included.
                let migrations = PendingMigration.sources(
                    for: schema, root: migrationsRoot, pending: pendingMigrations.first { $0.schema.name == schema.name })
                generated.append((schema, result.path, try Generator.generate(schema: schema, sourceFile: sourceFile, templates: templates, migrations: migrations)))
            } catch {
                io.writeError("schemagen: error: \(error)\n")
                return .failure
            }
        }

        let allFiles: [GeneratedFile]
        let folders: [String]
        if singleFile {
            allFiles = generated.map { entry in
                let name = URL(fileURLWithPath: entry.file).deletingPathExtension().lastPathComponent + ".swift"
                return GeneratedFile(path: name, contents: combine(entry.files))
            }
            folders = []
        } else {
            allFiles = generated.flatMap(\.files)
            // A full run also cleans up after schemas that were removed.
            let outputFolders = ((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []).filter { name in
                var isFolder: ObjCBool = false
                return FileManager.default.fileExists(atPath: output + "/" + name, isDirectory: &isFolder) && isFolder.boolValue
            }
            folders = explicitSchemas.isEmpty ? Array(Set(outputFolders + generated.map(\.schema.name))).sorted() : generated.map(\.schema.name)
        }

        let sync = GeneratedFileSync(outputFolder: output)
        let plan = sync.plan(allFiles, schemas: folders)
        if arguments.flag("check") {
            var report = ""
            for path in plan.missing { report += "missing: \(output)/\(path)\n" }
            for path in plan.stale { report += "stale:   \(output)/\(path)\n" }
            for path in plan.extra { report += "extra:   \(output)/\(path)\n" }
            for pending in pendingMigrations {
                report += "missing migration: \(pending.directory.path)/\(pending.entry.upFile) (schema \(pending.schema.name) version \(pending.schema.version))\n"
            }
            if plan.isUpToDate, pendingMigrations.isEmpty {
                io.writeOutput("Generated code in \(output) is up to date (\(VerbalCount.files(allFiles.count))).\n")
                return .success
            }
            io.writeOutput(report + "Generated code or migrations are out of date: run `schemagen generate`.\n")
            return .failure
        }
        do {
            try sync.apply(plan, files: allFiles)
        } catch {
            io.writeError("schemagen: error: cannot write to '\(output)': \(error.localizedDescription)\n")
            return .usageOrIO
        }
        var report = ""
        for pending in pendingMigrations {
            do {
                try pending.directory.write(pending.migration, as: pending.entry)
            } catch {
                io.writeError("schemagen: error: cannot write migration to '\(pending.directory.path)': \(error.localizedDescription)\n")
                return .usageOrIO
            }
            report += "migration \(pending.directory.path)/\(pending.entry.prefix) (schema \(pending.schema.name) version \(pending.schema.version)): \(VerbalCount.count(pending.migration.steps.count, "step"))\n"
        }
        for path in plan.missing + plan.stale { report += "wrote   \(output)/\(path)\n" }
        for path in plan.extra { report += "deleted \(output)/\(path)\n" }
        report += "Generated \(VerbalCount.count(generated.count, "schema")) into \(output): \(plan.missing.count + plan.stale.count) written, \(plan.unchanged.count) unchanged, \(plan.extra.count) deleted.\n"
        io.writeOutput(report)
        return .success
    }

    /// `--migrations-only`: writes (or, with `check`, lists) the planned migrations and nothing else.
    static func writeMigrations(_ pending: [PendingMigration], check: Bool, io: CommandIO) -> ExitCode {
        if check {
            guard !pending.isEmpty else {
                io.writeOutput("Migrations are up to date.\n")
                return .success
            }
            for migration in pending {
                io.writeOutput("missing migration: \(migration.directory.path)/\(migration.entry.upFile) (schema \(migration.schema.name) version \(migration.schema.version))\n")
            }
            return .failure
        }
        for migration in pending {
            do {
                try migration.directory.write(migration.migration, as: migration.entry)
            } catch {
                io.writeError("schemagen: error: cannot write migration to '\(migration.directory.path)': \(error.localizedDescription)\n")
                return .usageOrIO
            }
            io.writeOutput("migration \(migration.directory.path)/\(migration.entry.prefix) (schema \(migration.schema.name) version \(migration.schema.version)): \(VerbalCount.count(migration.migration.steps.count, "step"))\n")
        }
        if pending.isEmpty { io.writeOutput("Migrations are up to date.\n") }
        return .success
    }

    /// One schema's files as one: the first header kept, the others' header lines dropped.
    static func combine(_ files: [GeneratedFile]) -> String {
        var out = ""
        for (index, file) in files.enumerated() {
            var lines = file.contents.split(separator: "\n", omittingEmptySubsequences: false)
            if index > 0, lines.first?.hasPrefix(TemplateContext.headerPrefix) == true { lines.removeFirst() }
            out += (index > 0 ? "\n// MARK: - \(file.path)\n" : "") + lines.joined(separator: "\n")
        }
        return out
    }
}

enum VerbalCount {
    static func count(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
    static func files(_ count: Int) -> String { Self.count(count, "file") }
}
