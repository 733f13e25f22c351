import CommandLineKit
import Diagnostics
import Foundation
import MigrationFiles
import MigrationPlanner
import RelationalModel
import SQLDialects
import SchemaKit
import SchemagenPipeline
import TextEscaping

/// `schemagen diff`: the migration plan for a schema, written nowhere.
public enum DiffCommand: Command {
    public static let spec = CommandSpec(
        name: "diff",
        abstract: "Print the migration plan (steps, lint findings, SQL) without writing anything.",
        discussion: """
            With --from and --to, compares two schema files. Otherwise compares each schema with the
            snapshot of its newest migration. Exit status: 0 printed, no lint errors; 1 lint errors
            (destructive changes without --allow-destructive, a required column without a value),
            an invalid schema or a tampered migration folder; 2 usage or I/O error.
            """,
        options: [
            .value("schema", short: "s", valueName: "path", help: "A schema file or folder.", repeatable: true),
            .value("from", valueName: "file", help: "The old schema file."),
            .value("to", valueName: "file", help: "The new schema file."),
            .value("migrations", short: "m", valueName: "dir", help: "Where each schema's migration folder is.", defaultValue: "Migrations"),
            .value(
                "dialect", valueName: "dialect", help: "Plan for this dialect (\(SQLDialectName.list)); repeatable. Default: the schema's dialects.", allowed: SQLDialectName.allCases.map(\.rawValue),
                repeatable: true),
            .flag("allow-destructive", help: "Report destructive changes as warnings."),
            .value("format", short: "f", valueName: "format", help: "How to print the plan.", allowed: ["text", "json"], defaultValue: "text"),
        ])

    struct Plan {
        var schema: Schema
        var dialect: SQLDialectName
        var migration: Migration
        var findings: [Diagnostic]
        var sources: [String: SourceFile]
    }

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        var plans: [Plan] = []
        let named = arguments.values("dialect").compactMap(SQLDialectName.init)
        let allowDestructive = arguments.flag("allow-destructive")
        if arguments.value("from") != nil || arguments.value("to") != nil {
            guard let fromPath = arguments.value("from"), let toPath = arguments.value("to") else {
                io.writeError("schemagen: error: --from and --to go together\nUsage: schemagen diff --from OLD.yaml --to NEW.yaml\n")
                return .usageOrIO
            }
            // Loaded one by one: the two files are versions of one schema and share its name.
            let loaded = SchemaLoader.Result(files: [SchemaLoader.load(file: fromPath), SchemaLoader.load(file: toPath)])
            if let failure = report(loaded, io: io) { return failure }
            guard let old = loaded.files[0].schema, let new = loaded.files[1].schema else { return .failure }
            for dialect in named.isEmpty ? (new.dialects ?? [.default]) : named {
                let migration = Migration(
                    from: SnapshotBuilder.snapshot(of: old), to: SnapshotBuilder.snapshot(of: new), renderer: PendingMigration.renderer(dialect), online: new.online ?? false)
                plans.append(
                    Plan(
                        schema: new, dialect: dialect, migration: migration,
                        findings: PendingMigration.lintFindings(migration, schema: new, allowDestructive: allowDestructive, previous: old),
                        sources: SchemaInput.sources(loaded)))
            }
        } else {
            let paths = arguments.values("schema").isEmpty ? ["Schemas"] : arguments.values("schema")
            guard let files = SchemaInput.files(paths, io: io) else { return .usageOrIO }
            let loaded = SchemaLoader.load(files: files)
            if let failure = report(loaded, io: io) { return failure }
            let root = arguments.value("migrations") ?? "Migrations"
            for schema in loaded.schemas {
                let dialects = named.isEmpty ? (schema.dialects ?? [.default]) : named
                let reference = PendingMigration.directory(schema.name, root: root, dialect: dialects.contains(.default) ? .default : dialects[0])
                let snapshot = SnapshotBuilder.snapshot(of: schema)
                for dialect in dialects {
                    switch PendingMigration.plan(
                        for: schema, root: root, dialect: dialect, reference: reference, name: nil, allowDestructive: allowDestructive, online: schema.online ?? false)
                    {
                    case .failed(let problems):
                        io.writeError(DiagnosticRenderer(format: .text).render(problems))
                        return .failure
                    case .pending(let pending) where pending.last?.migration.to == snapshot && pending.last?.migration.from != snapshot:
                        let last = pending[pending.count - 1]
                        plans.append(Plan(schema: schema, dialect: dialect, migration: last.migration, findings: last.findings, sources: SchemaInput.sources(loaded)))
                    default:
                        plans.append(
                            Plan(
                                schema: schema, dialect: dialect, migration: Migration(from: snapshot, to: snapshot, renderer: PendingMigration.renderer(dialect)),
                                findings: [], sources: SchemaInput.sources(loaded)))
                    }
                }
            }
        }
        // A finding every dialect reports is printed once; the others say their dialect.
        var merged: [Plan] = []
        for name in plans.map(\.schema.name).reduce(into: [String](), { if !$0.contains($1) { $0.append($1) } }) {
            let group = plans.filter { $0.schema.name == name }
            let findings = PendingMigration.merge(group.map { ($0.dialect, $0.findings) })
            merged += zip(group, findings).map { plan, entry in
                var plan = plan
                plan.findings = entry.findings
                return plan
            }
        }
        io.writeOutput(arguments.value("format") == "json" ? json(merged) : text(merged))
        return merged.contains { $0.findings.contains { $0.severity == .error } } ? .failure : .success
    }

    private static func report(_ loaded: SchemaLoader.Result, io: CommandIO) -> ExitCode? {
        guard !loaded.diagnostics.isEmpty else { return nil }
        let sources = SchemaInput.sources(loaded)
        io.writeError(DiagnosticRenderer(format: .text, sources: { sources[$0] }).render(loaded.diagnostics))
        if loaded.diagnostics.contains(where: { $0.has(SchemaDiagnosticCode.fileUnreadable) }) { return .usageOrIO }
        return loaded.hasErrors ? .failure : nil
    }

    static func text(_ plans: [Plan]) -> String {
        var out = ""
        for plan in plans {
            let from = plan.migration.from.map { "version \($0.version)" } ?? "nothing"
            guard !plan.migration.isEmpty else {
                out += "\(plan.schema.name)\(plan.dialect == .default ? "" : " (\(plan.dialect.rawValue))"): no changes since \(from).\n"
                continue
            }
            out +=
                "\(plan.schema.name)\(plan.dialect == .default ? "" : " (\(plan.dialect.rawValue))"): \(from) -> version \(plan.schema.version), \(plan.migration.steps.count) step\(plan.migration.steps.count == 1 ? "" : "s")\n"
            for step in plan.migration.steps { out += "  - \(step.summary(for: plan.migration.renderer))\n" }
            if !plan.findings.isEmpty {
                let sources = plan.sources
                out += DiagnosticRenderer(format: .text, sources: { sources[$0] }).render(plan.findings)
            }
            out += "\n" + plan.migration.upSQL() + "\n" + plan.migration.downSQL() + (plan.migration.contractSQL().map { "\n" + $0 } ?? "")
        }
        return out
    }

    static func json(_ plans: [Plan]) -> String {
        let jsonString = TextEscaping.json
        let objects = plans.map { plan -> String in
            let findings = plan.findings.map { finding in
                "{\"file\": \(jsonString(finding.location?.file ?? "")), \"line\": \(finding.location?.line ?? 0), \"column\": \(finding.location?.column ?? 0), \"severity\": \(jsonString(finding.severity.rawValue)), \"code\": \(jsonString(finding.code)), \"message\": \(jsonString(finding.message))}"
            }
            return """
                {"schema": \(jsonString(plan.schema.name)), "from": \(plan.migration.from.map { String($0.version) } ?? "null"), "to": \(plan.schema.version), \
                "steps": [\(plan.migration.steps.map { jsonString($0.summary(for: plan.migration.renderer)) }.joined(separator: ", "))], \
                "findings": [\(findings.joined(separator: ", "))], \
                "up": \(plan.migration.isEmpty ? "null" : jsonString(plan.migration.upSQL())), "down": \(plan.migration.isEmpty ? "null" : jsonString(plan.migration.downSQL()))\
                \(plan.migration.contractSQL().map { ", \"contract\": \(jsonString($0))" } ?? "")}
                """
        }
        return "[\n" + objects.map { "  " + $0 }.joined(separator: ",\n") + "\n]\n"
    }
}

/// `schemagen rehash`: rewrites migrations.sum after a deliberate edit of a migration.
public enum RehashCommand: Command {
    public static let spec = CommandSpec(
        name: "rehash",
        abstract: "Rewrite migrations.sum after a deliberate edit of a migration file.",
        discussion: "Every dialect folder (the schema's own, and postgres/) of every schema under the migrations root, or of the schemas named. Exit status: 0 done, 2 usage or I/O error.",
        options: [
            .value("migrations", short: "m", valueName: "dir", help: "The migrations root.", defaultValue: "Migrations")
        ],
        arguments: [ArgumentSpec("SCHEMA", help: "Schema names (default: every folder).", isVariadic: true)])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let root = arguments.value("migrations") ?? "Migrations"
        var names = arguments.arguments
        if names.isEmpty {
            guard let folders = try? FileManager.default.contentsOfDirectory(atPath: root) else {
                io.writeError("schemagen: error: cannot read migrations folder '\(root)'\n")
                return .usageOrIO
            }
            names = folders.sorted().filter { !MigrationDirectory.dialectFolders(schema: $0, root: root).isEmpty }
        }
        for name in names {
            // Every dialect folder of the schema: SQLite's and, say, postgres/.
            let folders = MigrationDirectory.dialectFolders(schema: name, root: root).filter { !$0.directory.entries().isEmpty }
            guard !folders.isEmpty else {
                io.writeError("schemagen: error: no migrations in '\(root)/\(name)'\n")
                return .usageOrIO
            }
            for (_, directory) in folders {
                do {
                    try directory.rehash()
                } catch {
                    io.writeError("schemagen: error: cannot write '\(directory.path)/\(MigrationDirectory.sumFile)': \(error.localizedDescription)\n")
                    return .usageOrIO
                }
                io.writeOutput("rehashed \(directory.path)/\(MigrationDirectory.sumFile)\n")
            }
        }
        return .success
    }
}
