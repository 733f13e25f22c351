import CodeGeneration
import Diagnostics
import Foundation
import MigrationFiles
import MigrationPlanner
import Mustache
import ProjectConfig
import RelationalModel
import SQLDialects
import SchemaKit
import SchemaMetadata

/// `schemagen generate` as a library: configuration -> load -> relational model -> plan ->
/// render -> sync. Each stage takes the values the one before returned and returns values; only
/// `sync` and `writeMigrations` touch the disk. The command is a thin shell that prints.
public struct GenerationPipeline: Sendable {
    /// Where everything is, resolved from defaults, then the config file, then flags.
    public struct Configuration: Sendable {
        public var schemaPaths: [String]
        /// True when schemas were named explicitly: then only their output folders are considered.
        public var schemasWereNamed: Bool
        public var output: String
        public var templatesFolder: String?
        public var migrationsRoot: String
        public var migrationName: String?
        public var allowDestructive: Bool
        /// One file per schema, embedding the committed migrations and planning none (the plugin).
        public var singleFile: Bool
        /// Dialects named on the command line, over each schema's `dialects:` and the config file's.
        public var dialects: [SQLDialectName]?
        /// The config file's dialects, for schemas that name none.
        public var defaultDialects: [SQLDialectName]
        /// Whether schemas that do not say plan PostgreSQL migrations online (`online:` in the config file).
        public var onlineByDefault: Bool
        /// The config file's grants, for schemas that declare none (`grants:`).
        public var defaultGrants: [Grant]?
        /// Where the record that skips unchanged runs is kept (not in the output folder).
        public var cacheFolder: String
        /// What the built-in templates produce: the store's models, or SwiftData's.
        public var target: TemplateSet.Target
        /// The oldest OS SwiftData models run on (`--deployment-target`, `deploymentTarget:`).
        public var deploymentTarget: DeploymentTarget
        /// A released SwiftData version's models may change (`--allow-released-version-changes`):
        /// the change is a warning and is recorded.
        public var allowReleasedVersionChanges: Bool
        /// Stages that cannot do their work alone are warnings, not errors, even with
        /// `strictStages` (`--allow-incomplete-stages`, `allowIncompleteStages:`).
        public var allowIncompleteStages: Bool
        /// Stages that cannot do their work alone are errors (`--strict-stages`,
        /// `strictStages:`). By default they are warnings: their work goes in the plan's hooks,
        /// and the stage checks at run time that it was done before SwiftData's inferred step,
        /// or the inferred step fails with Core Data's error. One that would drop values
        /// (`SwiftDataNote.losesData`) is an error unless `allowIncompleteStages`.
        public var strictStages: Bool
        /// How a stage that cannot do its work alone is reported.
        var incompleteStageSeverity: Severity { strictStages && !allowIncompleteStages ? .error : .warning }
        /// The SwiftData typealiases of the newest version's types (`--typealiases`,
        /// `--typealias-prefix`; `typealiases:`, `typealiasPrefix:`).
        public var typeAliases: SwiftDataTypeAliases

        /// The cache folder unless one is named: beside SwiftPM's own build products.
        public static let defaultCacheFolder = ".build/schemagen"

        public init(
            config: ProjectConfig = ProjectConfig(), schemas: [String] = [], output: String? = nil, templates: String? = nil,
            migrations: String? = nil, migrationName: String? = nil, allowDestructive: Bool = false, singleFile: Bool = false,
            dialects: [SQLDialectName]? = nil, cacheFolder: String? = nil, target: TemplateSet.Target = .store,
            deploymentTarget: DeploymentTarget? = nil, typeAliases: SwiftDataTypeAliases? = nil, allowIncompleteStages: Bool? = nil,
            allowReleasedVersionChanges: Bool = false, strictStages: Bool? = nil
        ) {
            self.target = target
            self.allowReleasedVersionChanges = allowReleasedVersionChanges
            self.allowIncompleteStages = allowIncompleteStages ?? config.allowIncompleteStages ?? false
            self.strictStages = strictStages ?? config.strictStages ?? false
            if let typeAliases {
                self.typeAliases = typeAliases
            } else if config.typealiases == false {
                self.typeAliases = .none
            } else if let prefix = config.typealiasPrefix, !prefix.isEmpty {
                self.typeAliases = .prefixed(prefix)
            } else if config.typealiases == true {
                self.typeAliases = .plain
            } else {
                self.typeAliases = .sparingPlatformNames
            }
            self.deploymentTarget = deploymentTarget ?? config.deploymentTarget.flatMap(DeploymentTarget.init) ?? .default
            self.cacheFolder = cacheFolder ?? config.cache ?? Self.defaultCacheFolder
            self.schemaPaths = schemas.isEmpty ? (config.schemas ?? ["Schemas"]) : schemas
            self.schemasWereNamed = !schemas.isEmpty
            self.output = output ?? config.output ?? "Generated"
            self.templatesFolder = templates ?? config.templates
            self.migrationsRoot = migrations ?? config.migrations ?? "Migrations"
            self.migrationName = migrationName
            self.allowDestructive = allowDestructive
            self.singleFile = singleFile
            self.dialects = dialects
            self.defaultDialects = config.dialects?.compactMap(SQLDialectName.init) ?? [.default]
            self.onlineByDefault = config.online ?? false
            self.defaultGrants = config.grants.map { grants in
                grants.compactMap { role, access in Grant.Access(rawValue: access).map { Grant(role: role, access: $0) } }.sorted { $0.role < $1.role }
            }
        }

        /// Whether a schema's PostgreSQL migrations are planned in expand and contract phases:
        /// the schema's `online:`, else the config file's (off by default).
        public func isOnline(_ schema: Schema) -> Bool { schema.online ?? onlineByDefault }

        /// The dialects a schema's migrations are planned for: the command line's, else the
        /// schema's, else the config file's (SQLite by default). The build plugin embeds SQLite's only.
        public func dialects(of schema: Schema) -> [SQLDialectName] {
            if singleFile { return [.default] }
            return dialects ?? schema.dialects ?? defaultDialects
        }
    }

    /// Why a stage stopped. Diagnostics that explain it are returned alongside, not in here.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// Bad input the user must fix (exit 1): invalid schemas, templates or migration folders.
        case invalid(String)
        /// A path or the disk (exit 2).
        case io(String)

        public var description: String {
            switch self {
            case .invalid(let message), .io(let message): message
            }
        }
    }

    public let configuration: Configuration
    /// Every input the run reads, each read from the disk once and shared by the stages.
    public let files: InputFiles

    /// A run of `configuration`; `files` keeps what it reads (a new one reads everything afresh).
    ///
    ///     let pipeline = GenerationPipeline(.init(schemas: ["Schemas"], output: "Sources/Models"))
    public init(_ configuration: Configuration, files: InputFiles = InputFiles()) {
        self.configuration = configuration
        self.files = files
    }

    // MARK: - 1. Load

    /// The validated schemas; the diagnostics of every file either way.
    public func load() -> Result<SchemaLoader.Result, Failure> {
        switch SchemaDiscovery.files(in: configuration.schemaPaths) {
        case .failure(let failure):
            return .failure(.io("\(failure)"))
        case .success(let paths):
            return .success(load(paths))
        }
    }

    /// The schemas of files already found, each read through `files` (once for the whole run).
    public func load(_ paths: [String]) -> SchemaLoader.Result {
        var loaded = SchemaLoader.load(files: paths, read: files.bytes(atPath:))
        if let grants = configuration.defaultGrants {
            for index in loaded.files.indices where loaded.files[index].schema != nil && loaded.files[index].schema?.grants == nil {
                loaded.files[index].schema?.grants = grants
            }
        }
        return loaded
    }

    // MARK: - 2. Relational model

    /// Each schema's relational model, derived once for planning and rendering alike.
    public func model(_ schemas: [Schema]) -> [String: SchemaSnapshot] {
        Dictionary(schemas.map { ($0.name, SnapshotBuilder.snapshot(of: $0)) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: - 3. Plan

    public struct Plan: Sendable {
        /// The migrations to write, one per changed schema.
        public var migrations: [PendingMigration] = []
        /// Lint findings and folder problems; any error stops the run.
        public var diagnostics: [Diagnostic] = []
        /// The runtime store's own migrations the project lacks (`StoreMigrationFolder`).
        public var storeMigrations: [StoreTableMigrations.Migration] = []
        public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
    }

    /// One new numbered migration per changed schema; in single-file mode none, and a schema
    /// ahead of its committed history is an error that says how to plan it.
    /// `sources` holds each schema file's text as the load stage read it, by path, so the
    /// text written beside a new migration is the text that was planned, read once.
    public func plan(_ schemas: [Schema], models: [String: SchemaSnapshot], sources: [String: String] = [:]) -> Plan {
        var plan = Plan()
        for schema in schemas {
            let dialects = configuration.dialects(of: schema)
            // The first folders were SQLite's: the others number after them.
            let referenceDialect = dialects.contains(.default) ? SQLDialectName.default : dialects[0]
            let reference = PendingMigration.directory(schema.name, root: configuration.migrationsRoot, dialect: referenceDialect, files: files)
            var findings: [(dialect: SQLDialectName, findings: [Diagnostic])] = []
            // Every dialect's new migration takes the reference's name, whatever its own steps
            // (a change only some engines render, such as grants, would name them apart).
            var referenceName: String?
            for dialect in [referenceDialect] + dialects.filter({ $0 != referenceDialect }) {
                let outcome = PendingMigration.plan(
                    for: schema, model: models[schema.name], root: configuration.migrationsRoot, dialect: dialect,
                    reference: dialect == referenceDialect ? nil : reference,
                    name: configuration.migrationName ?? referenceName, allowDestructive: configuration.allowDestructive, online: configuration.isOnline(schema),
                    sourceText: sources[schema.sourcePath], files: files)
                if dialect == referenceDialect, case .pending(let pending) = outcome { referenceName = pending.last?.entry.name }
                switch outcome {
                case .upToDate: break
                case .failed(let problems): plan.diagnostics += problems
                case .pending(let pending) where configuration.singleFile:
                    plan.diagnostics += pending.map { PendingMigration.notPlanned($0, root: configuration.migrationsRoot) }
                case .pending(let pending):
                    findings.append((dialect, pending.flatMap(\.findings)))
                    plan.migrations += pending
                }
            }
            plan.diagnostics += PendingMigration.merge(findings).flatMap(\.findings)
        }
        if !configuration.singleFile, StoreMigrationFolder.isNeeded(schemas, dialects: configuration.dialects(of:)) {
            let store = StoreMigrationFolder.pending(schemas, root: configuration.migrationsRoot, files: files)
            plan.storeMigrations = store.missing
            plan.diagnostics += store.problems
        }
        return plan
    }

    // MARK: - 4. Render

    /// The templates: the defaults with the configured folder laid over them, parsed once.
    public func templates() -> Result<TemplateSet, Failure> {
        if let folder = configuration.templatesFolder {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                return .failure(.io("templates folder '\(folder)' does not exist"))
            }
        }
        do {
            return .success(try TemplateSet.loading(userFolder: configuration.templatesFolder, target: configuration.target))
        } catch {
            return .failure(.invalid("\(error)"))
        }
    }

    public struct Rendered: Sendable {
        public var files: [GeneratedFile]
        /// The schema folders `sync` owns: it deletes generated files there that are no longer produced.
        public var folders: [String]
        public var schemaCount: Int
        /// What the output cannot say (SwiftData has no equivalent), and versions left out of a
        /// history: warnings.
        public var diagnostics: [Diagnostic] = []
        /// Digests of released SwiftData versions to record beside their migrations.
        var releasedRecords: [(directory: MigrationDirectory, file: String, contents: String)] = []
    }

    /// A schema's SwiftData files for every version its migrations recorded (the ones about to be
    /// written included), released versions as they were recorded, with what SwiftData cannot say.
    func renderSwiftData(_ schema: Schema, sourceFile: String, templates: TemplateSet) throws -> (
        files: [GeneratedFile], diagnostics: [Diagnostic], releasedRecords: [(directory: MigrationDirectory, file: String, contents: String)]
    ) {
        let history = SchemaHistory.load(for: schema, root: configuration.migrationsRoot, dialects: configuration.dialects(of: schema), files: files)
        let versions = history.versions.map(\.schema)
        let output = try Generator.generateSwiftData(
            versions: versions, sourceFile: sourceFile, templates: templates, deploymentTarget: configuration.deploymentTarget, typeAliases: configuration.typeAliases)
        let dialects = configuration.dialects(of: schema)
        let reference = dialects.contains(.default) || dialects.isEmpty ? SQLDialectName.default : dialects[0]
        let released = ReleasedSwiftDataModels(
            files: output.files, target: configuration.deploymentTarget,
            otherForms: { form in
                (try? Generator.generateSwiftData(
                    versions: versions, sourceFile: sourceFile, templates: templates, deploymentTarget: form.target, typeAliases: configuration.typeAliases,
                    earlierForms: form.earlier))?.files ?? []
            }, history: history, schema: schema,
            directory: PendingMigration.directory(schema.name, root: configuration.migrationsRoot, dialect: reference, files: files),
            allowChanges: configuration.allowReleasedVersionChanges)
        // Released versions keep the form they were recorded in.
        let written = output.files.map { file in
            released.kept[URL(fileURLWithPath: file.path).lastPathComponent].map { GeneratedFile(path: file.path, contents: $0, isUserOwned: file.isUserOwned) } ?? file
        }
        var diagnostics = history.diagnostics + released.diagnostics
        diagnostics += newlyEnforcedUniques(versions, schema: schema, keptForms: released.keptForms)
        // What a kept version's models cannot say is what its kept file says; the stages (the
        // plan is never kept) are this run's.
        var keptVersions: [Int: ReleasedSwiftDataModels.Form] = [:]
        for version in versions {
            if let form = released.keptForms["\(schema.name)SchemaV\(version.version).swift"] { keptVersions[version.version] = form }
        }
        var notes = output.notes.filter { $0.isIncompleteStage || keptVersions[$0.version] == nil }
        for form in Set(keptVersions.values) {
            let kept = try Generator.generateSwiftData(
                versions: versions, sourceFile: sourceFile, templates: templates, deploymentTarget: form.target, typeAliases: configuration.typeAliases,
                earlierForms: form.earlier)
            notes += kept.notes.filter { !$0.isIncompleteStage && keptVersions[$0.version] == form }
        }
        diagnostics += notes.map { note in
            let at = note.location ?? SourceLocation(file: schema.sourcePath, line: 1, column: 1)
            guard note.isIncompleteStage else {
                return Diagnostic(.warning, code: SwiftDataCode.noEquivalent, message: "version \(note.version), \(note.subject): \(note.message)", at: at)
            }
            let hooks = "\(schema.name)+MigrationPlan+Custom.swift"
            // Values dropped without a word stop generate, whatever else is allowed.
            let severity: Severity = note.losesData ? (configuration.allowIncompleteStages ? .warning : .error) : configuration.incompleteStageSeverity
            let after = note.losesData ? "; its values would be lost, so generate stops unless --allow-incomplete-stages" : ""
            return Diagnostic(
                severity, code: SwiftDataCode.incompleteStage,
                message:
                    "version \(note.version), \(note.subject): the stage into version \(note.version) cannot do its work alone: \(note.message). Write it in \(hooks) (yours; generate writes it once)\(after)",
                at: at)
        }
        return (written, diagnostics, released.records)
    }

    /// A version whose models enforce a unique list its predecessor's models did not (a new
    /// `uniques:` list, the deployment target raised to iOS 18 after a release, `#Unique` now
    /// taking a relationship): objects that share a value make the migration fail, so it is an
    /// incomplete stage, as a newly unique attribute is.
    func newlyEnforcedUniques(_ versions: [Schema], schema: Schema, keptForms: [String: ReleasedSwiftDataModels.Form]) -> [Diagnostic] {
        func form(_ version: Schema) -> ReleasedSwiftDataModels.Form {
            keptForms["\(schema.name)SchemaV\(version.version).swift"] ?? .init(target: configuration.deploymentTarget, earlier: [])
        }
        var diagnostics: [Diagnostic] = []
        for (old, new) in zip(versions, versions.dropFirst()) {
            let (before, after) = (form(old), form(new))
            for entity in new.entities {
                guard let previous = old.entity(named: entity.name) ?? entity.renamedFrom.flatMap(old.entity(named:)) else { continue }
                let had = SwiftDataUniqueness.enforcedLists(previous, target: before.target, earlier: before.earlier)
                for members in SwiftDataUniqueness.enforcedLists(entity, target: after.target, earlier: after.earlier).subtracting(had).sorted(by: { $0.joined() < $1.joined() }) {
                    diagnostics.append(
                        Diagnostic(
                            configuration.incompleteStageSeverity, code: SwiftDataCode.incompleteStage,
                            message:
                                "version \(new.version), \(entity.name): the stage into version \(new.version) cannot do its work alone: its models enforce the unique constraint [\(members.joined(separator: ", "))] (#Unique), which version \(old.version)'s models do not, so objects that share a value make the migration fail; remove the duplicates in willMigrate(from: \(old.version)) of \(schema.name)+MigrationPlan+Custom.swift",
                            at: entity.location ?? SourceLocation(file: schema.sourcePath, line: 1, column: 1)))
                }
            }
        }
        return diagnostics
    }

    /// Every output file, with the migrations each schema's code embeds (the new ones included).
    public func render(_ loaded: SchemaLoader.Result, models: [String: SchemaSnapshot], plan: Plan, templates: TemplateSet) -> Result<Rendered, Failure> {
        var perSchema: [(schema: Schema, file: String, files: [GeneratedFile])] = []
        var diagnostics: [Diagnostic] = []
        var releasedRecords: [(directory: MigrationDirectory, file: String, contents: String)] = []
        for result in loaded.files {
            guard let schema = result.schema else { continue }
            let sourceFile = URL(fileURLWithPath: result.path).lastPathComponent
            if configuration.target == .swiftdata {
                do {
                    let rendered = try renderSwiftData(schema, sourceFile: sourceFile, templates: templates)
                    perSchema.append((schema, result.path, rendered.files))
                    diagnostics += rendered.diagnostics
                    releasedRecords += rendered.releasedRecords
                } catch {
                    return .failure(.invalid("\(error)"))
                }
                continue
            }
            // The generated code embeds every dialect's migrations: the store opens either engine.
            let migrations = PendingMigration.scripts(
                for: schema, root: configuration.migrationsRoot, pending: plan.migrations.filter { $0.schema.name == schema.name }, files: files)
            let history = schema.sync == nil ? nil : SchemaHistory.load(for: schema, root: configuration.migrationsRoot, dialects: configuration.dialects(of: schema), files: files)
            let previous = history?.previousVersion(of: schema, migrations: migrations) ?? (version: nil, diagnostics: [])
            diagnostics += previous.diagnostics
            do {
                let model = models[schema.name].map { runtimeModel(schema, $0, plan: plan) }
                perSchema.append(
                    (
                        schema, result.path,
                        try Generator.generate(
                            schema: schema, model: model, sourceFile: sourceFile,
                            templates: templates, migrations: migrations, previousVersion: previous.version)
                    ))
            } catch {
                return .failure(.invalid("\(error)"))
            }
        }
        if configuration.singleFile {
            let files = perSchema.map { entry in
                GeneratedFile(path: URL(fileURLWithPath: entry.file).deletingPathExtension().lastPathComponent + ".swift", contents: Self.combine(entry.files))
            }
            return .success(Rendered(files: files, folders: [], schemaCount: perSchema.count, diagnostics: diagnostics, releasedRecords: releasedRecords))
        }
        // A full run also cleans up after schemas that were removed.
        let output = configuration.output
        let existing = ((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []).filter { name in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: output + "/" + name, isDirectory: &isFolder) && isFolder.boolValue
        }
        let produced = perSchema.map(\.schema.name)
        let folders = configuration.schemasWereNamed ? produced : Array(Set(existing + produced)).sorted()
        return .success(Rendered(files: perSchema.flatMap(\.files), folders: folders, schemaCount: perSchema.count, diagnostics: diagnostics, releasedRecords: releasedRecords))
    }

    /// Diagnostic codes of the SwiftData target.
    public enum SwiftDataCode: String, DiagnosticCode {
        /// The schema says something SwiftData cannot: the file says so in a comment.
        case noEquivalent = "swiftdata-no-equivalent"
        /// A stage that cannot do its work alone (an error with `--strict-stages`).
        case incompleteStage = "swiftdata-incomplete-stage"
    }

    /// The model the generated code describes: the database as its migrations leave it. Where
    /// the newest migration's snapshot predates facts the model now derives (a one-to-one key's
    /// unique index) and no new migration is planned, the code keeps the snapshot's indexes, so
    /// an upsert never names a constraint the database lacks.
    func runtimeModel(_ schema: Schema, _ model: SchemaSnapshot, plan: Plan) -> SchemaSnapshot {
        let dialects = configuration.dialects(of: schema)
        let reference = PendingMigration.directory(schema.name, root: configuration.migrationsRoot, dialect: dialects.contains(.default) ? .default : dialects[0], files: files)
        // A migration about to be written to the reference folder brings its databases to the
        // schema's model; one written to another dialect's folder (its history planned for the
        // first time, say) changes nothing the reference's databases hold.
        guard !plan.migrations.contains(where: { $0.schema.name == schema.name && $0.directory.path == reference.path }) else { return model }
        guard let latest = try? reference.latestSnapshot() else { return model }
        return latest.databaseModel(of: model)
    }

    /// The schema's runtime metadata as generated code declares it (`TemplateContext.schemaDescriptor`)
    /// over the database its committed migrations make: for tools that open a store without
    /// compiled models (the studio).
    ///
    ///     let descriptor = pipeline.storeDescriptor(schema)
    public func storeDescriptor(_ schema: Schema) -> SchemaDescriptor {
        let model = runtimeModel(schema, self.model([schema])[schema.name] ?? SnapshotBuilder.snapshot(of: schema), plan: Plan())
        return TemplateContext(schema: schema, model: model, sourceFile: URL(fileURLWithPath: schema.sourcePath).lastPathComponent).schemaDescriptor
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

    // MARK: - 5. Sync

    /// What writing would change: missing, stale, unchanged and extra files.
    public func compare(_ rendered: Rendered) -> GeneratedFileSync.Plan {
        GeneratedFileSync(outputFolder: configuration.output).plan(rendered.files, schemas: rendered.folders)
    }

    /// Writes the changed files and deletes the extra ones.
    public func sync(_ rendered: Rendered, _ changes: GeneratedFileSync.Plan) -> Result<Void, Failure> {
        do {
            try GeneratedFileSync(outputFolder: configuration.output).apply(changes, files: rendered.files)
        } catch {
            return .failure(.io("cannot write to '\(configuration.output)': \(error.localizedDescription)"))
        }
        // Released SwiftData versions, recorded beside their migrations (and in migrations.sum).
        for record in rendered.releasedRecords {
            do {
                try Data(record.contents.utf8).write(to: URL(fileURLWithPath: record.directory.path).appendingPathComponent(record.file), options: .atomic)
                try record.directory.recordInManifest([(record.file, Array(record.contents.utf8))])
                files.forget(folder: record.directory.path, files: [record.file, MigrationDirectory.sumFile])
            } catch {
                return .failure(.io("cannot record \(record.file) in '\(record.directory.path)': \(error.localizedDescription)"))
            }
        }
        return .success(())
    }

    /// Writes the planned migrations; the path of each written one.
    public func writeMigrations(_ plan: Plan) -> Result<[String], Failure> {
        var written: [String] = []
        for pending in plan.migrations {
            do {
                try pending.directory.write(
                    up: pending.sql.up, down: pending.sql.down, contract: pending.sql.contract, snapshot: pending.migration.to.canonicalJSON(), source: pending.source, as: pending.entry,
                    manifest: .addWritten)
            } catch {
                return .failure(.io("cannot write migration to '\(pending.directory.path)': \(error.localizedDescription)"))
            }
            // What is read after this (the next run's digest) is the folder as it is now.
            files.forget(folder: pending.directory.path, files: pending.entry.files + pending.entry.optionalFiles + [MigrationDirectory.sumFile])
            written.append("\(pending.directory.path)/\(pending.entry.prefix)")
        }
        guard !plan.storeMigrations.isEmpty else { return .success(written) }
        do {
            written += try StoreMigrationFolder.write(plan.storeMigrations, root: configuration.migrationsRoot)
        } catch {
            return .failure(.io("cannot write the store's migrations to '\(StoreMigrationFolder.directory(root: configuration.migrationsRoot).path)': \(error.localizedDescription)"))
        }
        files.forget(folder: StoreMigrationFolder.directory(root: configuration.migrationsRoot).path, files: plan.storeMigrations.flatMap { $0.entry.files } + [MigrationDirectory.sumFile])
        return .success(written)
    }
}
