import CodeGeneration
import Diagnostics
import Foundation
import MigrationFiles
import SQLDialects
import SchemaExport
import SchemaKit
import SchemagenPipeline
import TestSupport
import Testing

/// A schema's history as migrations: each fixture version written as the schema, then planned
/// (`generate --migrations-only`), as a project would over four releases.
func plannedHistory(_ versions: [String], name: String, dialects: [SQLDialectName] = [.sqlite]) throws -> URL {
    try plannedHistory(texts: versions.map { try String(contentsOf: repositoryRoot.appendingPathComponent($0), encoding: .utf8) }, name: name, dialects: dialects)
}

/// The same, from each version's text.
func plannedHistory(texts: [String], name: String, dialects: [SQLDialectName] = [.sqlite]) throws -> URL {
    let project = temporaryFolder()
    let schemas = project.appendingPathComponent("Schemas")
    try FileManager.default.createDirectory(at: schemas, withIntermediateDirectories: true)
    for version in texts {
        try version.write(to: schemas.appendingPathComponent("\(name).yaml.new"), atomically: true, encoding: .utf8)
        _ = try? FileManager.default.removeItem(at: schemas.appendingPathComponent("\(name).yaml"))
        try FileManager.default.moveItem(at: schemas.appendingPathComponent("\(name).yaml.new"), to: schemas.appendingPathComponent("\(name).yaml"))
        let pipeline = GenerationPipeline(
            .init(
                schemas: [schemas.path], output: project.appendingPathComponent("Generated").path, migrations: project.appendingPathComponent("Migrations").path,
                allowDestructive: true, dialects: dialects))
        let report = pipeline.run(.migrationsOnly)
        guard case .migrations(let written, true) = report.outcome, written.count == 1 else {
            throw SwiftDataTargetFailure(description: "planning \(version.prefix(200)) wrote no migration: \(report.diagnostics)")
        }
    }
    return project
}

struct SwiftDataTargetFailure: Error, CustomStringConvertible {
    let description: String
}

/// The SwiftData target's files and warnings for the schemas at `schemas`, with the
/// migrations under `migrations`.
func swiftDataOutput(
    schemas: String, migrations: String, deploymentTarget: DeploymentTarget = .default, typeAliases: SwiftDataTypeAliases = .sparingPlatformNames,
    allowReleasedVersionChanges: Bool = false
) throws -> (files: [GeneratedFile], warnings: [Diagnostic]) {
    let pipeline = GenerationPipeline(
        .init(
            schemas: [schemas], output: temporaryFolder().path, migrations: migrations, allowDestructive: true, target: .swiftdata, deploymentTarget: deploymentTarget,
            typeAliases: typeAliases, allowReleasedVersionChanges: allowReleasedVersionChanges))
    let loaded = try pipeline.load().get()
    let models = pipeline.model(loaded.schemas)
    let plan = pipeline.plan(loaded.schemas, models: models)
    let rendered = try pipeline.render(loaded, models: models, plan: plan, templates: try pipeline.templates().get()).get()
    return (rendered.files, rendered.diagnostics)
}

@Suite struct SwiftDataTargetTests {
    static let exampleSchemas = ["Flights", "Garage", "Notes", "Tasks", "Todo", "Users"]

    /// Every example schema's SwiftData output, with its whole committed history, type-checks
    /// in Swift 6 against the shim of Apple's API, for iOS 17 (where `#Unique` and `#Index` are
    /// unavailable) and for iOS 18.
    @Test(arguments: exampleSchemas, [DeploymentTarget.ios17, .ios18])
    func exampleSchemaTypeChecks(_ name: String, _ target: DeploymentTarget) async throws {
        let output = try swiftDataOutput(
            schemas: repositoryRoot.appendingPathComponent("Schemas/\(name).yaml").path, migrations: repositoryRoot.appendingPathComponent("Migrations").path, deploymentTarget: target)
        let files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        #expect(files.keys.contains("\(name)+MigrationPlan.swift"))
        #expect(!output.warnings.contains { $0.code == "history-source-missing" || $0.code == "history-source-invalid" }, "\(output.warnings.map(\.message))")
        let check = try await offThePool { try SwiftDataShim.typecheck(files, beforeIOS18: !target.hasConstraintMacros) }
        #expect(check.passed, "\(check.output)")
    }

    /// Versions whose changes lie outside the version hash (a unique flag, a default,
    /// `preserveValueOnDeletion`) or that return to an earlier shape hash alike: each gets a
    /// modifier of its own, on one attribute in SwiftData and in the Core Data bundle, and the
    /// versions that differ anyway get none.
    @Test func versionsThatHashAlikeGetAModifier() async throws {
        let base = "schema: Library\nentities:\n  Book:\n    attributes:\n      title: String\n      pages: Int?\n"
        let texts = [
            "version: 1\n" + base,
            "version: 2\n" + base.replacingOccurrences(of: "title: String", with: "title: {type: String, unique: true}"),
            "version: 3\n" + base.replacingOccurrences(of: "title: String", with: "title: {type: String, unique: true}") + "      subtitle: String?\n",
            "version: 4\n" + base.replacingOccurrences(of: "title: String", with: "title: {type: String, unique: true}")
                + "      subtitle: {type: String?, preserveValueOnDeletion: true, default: none}\n",
            "version: 5\n" + base,
        ]
        let versions = try texts.map { text in try #require(SchemaLoader.load(source: SourceFile(path: "Library.yaml", text: text)).schema, "\(text)") }
        let modifiers = VersionHashModifiers.modifiers(versions)
        #expect(modifiers.mapValues(\.value) == [2: "v2", 4: "v4", 5: "v5"], "version 5 returns to version 1's shape")
        #expect(modifiers[2]?.entity == "Book" && modifiers[2]?.attribute == "title")
        let inputs = versions.map { VersionHashModifiers.inputs($0, modifier: modifiers[$0.version]) }
        #expect(Set(inputs).count == versions.count, "every version hashes apart")

        let output = try Generator.generateSwiftData(versions: versions, sourceFile: "Library.yaml", templates: try TemplateSet.defaults(for: .swiftdata))
        let files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        #expect(files["LibrarySchemaV2.swift"]?.contains("@Attribute(.unique, hashModifier: \"v2\")") == true, "\(files["LibrarySchemaV2.swift"] ?? "")")
        #expect(files["LibrarySchemaV3.swift"]?.contains("hashModifier") == false)
        #expect(files["LibrarySchemaV5.swift"]?.contains("@Attribute(hashModifier: \"v5\")") == true)
        let check = try await offThePool { try SwiftDataShim.typecheck(files, beforeIOS18: true) }
        #expect(check.passed, "\(check.output)")
        let bundle = CoreDataExporter.bundle(versions, name: "Library")
        let second = try #require(bundle.first { $0.path == "Library 2.xcdatamodel/contents" }?.contents)
        #expect(second.contains("<attribute name=\"title\" attributeType=\"String\" versionHashModifier=\"v2\">"), "\(second)")
        #expect(second.contains("<entry key=\"schemagen.derivedHashModifier\" value=\"YES\"/>"), "an import knows the modifier for export's own")
        #expect(bundle.first { $0.path == "Library 3.xcdatamodel/contents" }?.contents.contains("versionHashModifier") == false)
    }

    /// Tasks' `Task` typealias would hide Swift's `Task`: `Task { }` in the app's module stops
    /// compiling, as the shim shows. By default it is not written, with a warning at the entity's
    /// line; `--typealiases on` writes it, warned; a prefix (or no typealiases) keeps Swift's.
    @Test func typealiasesThatHidePlatformTypesAreWarnedAndCanBePrefixed() async throws {
        let schema = repositoryRoot.appendingPathComponent("Schemas/Tasks.yaml").path, migrations = repositoryRoot.appendingPathComponent("Migrations").path
        let usesSwiftsTask = "func refresh() { Task { print(\"refreshed\") } }\n"
        @Sendable func files(_ output: (files: [GeneratedFile], warnings: [Diagnostic])) -> [String: String] {
            Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        }
        let sparing = try swiftDataOutput(schemas: schema, migrations: migrations)
        let aliases = try #require(files(sparing)["Tasks.swift"])
        #expect(!aliases.contains("typealias Task =") && aliases.contains("public typealias TaskList = TasksSchemaV3.TaskList"), "\(aliases)")
        let skipped = try #require(sparing.warnings.first { $0.message.contains("no typealias 'Task': it would hide Swift's Task") }, "\(sparing.warnings.map(\.message))")
        #expect(skipped.message.contains("the app names TasksSchemaV3.Task") && skipped.location?.line != nil)
        let sparingFiles = files(sparing).merging(["App.swift": usesSwiftsTask + "func named(_ list: TaskList, _ task: TasksSchemaV3.Task) {}\n"]) { a, _ in a }
        let spared = try await offThePool { try SwiftDataShim.typecheck(sparingFiles, beforeIOS18: true) }
        #expect(spared.passed, "\(spared.output)")

        let plain = try swiftDataOutput(schemas: schema, migrations: migrations, typeAliases: .plain)
        let warning = try #require(plain.warnings.first { $0.message.contains("the typealias 'Task' hides Swift's Task") }, "\(plain.warnings.map(\.message))")
        let location = try #require(warning.location)
        let lines = try String(contentsOfFile: schema, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[location.line - 1].hasPrefix("  Task:"), "\(location)")
        let plainFiles = files(plain).merging(["App.swift": usesSwiftsTask]) { a, _ in a }
        let hidden = try await offThePool { try SwiftDataShim.typecheck(plainFiles, beforeIOS18: true) }
        #expect(!hidden.passed, "the typealias hides Swift's Task")

        let prefixed = try swiftDataOutput(schemas: schema, migrations: migrations, typeAliases: .prefixed("App"))
        #expect(files(prefixed)["Tasks.swift"]?.contains("public typealias AppTask = TasksSchemaV3.Task") == true)
        #expect(!prefixed.warnings.contains { $0.message.contains("hides") })
        let prefixedFiles = files(prefixed).merging(["App.swift": usesSwiftsTask]) { a, _ in a }
        let kept = try await offThePool { try SwiftDataShim.typecheck(prefixedFiles, beforeIOS18: true) }
        #expect(kept.passed, "\(kept.output)")

        let none = try swiftDataOutput(schemas: schema, migrations: migrations, typeAliases: .none)
        #expect(files(none)["Tasks.swift"] == nil && files(none)["Tasks+MigrationPlan.swift"] != nil)
    }

    /// A stage that cannot do its work alone (Tasks' version 3 adds a required
    /// `ChecklistItem.position` without a default) is a warning at the attribute's line, and an
    /// error only with `strictStages`. The stage calls the hooks requirement
    /// `fillChecklistItemPosition(context:)`, whose deprecated default makes every build warn
    /// until the user writes it, then checks the work was done; `Tasks+MigrationPlan+Custom.swift`
    /// is written once, the user's from then on: a second run neither replaces nor deletes it.
    @Test func incompleteStagesAreWarningsWithTheirWorkInTheUsersHooks() async throws {
        let output = temporaryFolder().path
        func pipeline(strict: Bool = false, allow: Bool? = nil) -> GenerationPipeline {
            GenerationPipeline(
                .init(
                    schemas: [repositoryRoot.appendingPathComponent("Schemas/Tasks.yaml").path], output: output,
                    migrations: repositoryRoot.appendingPathComponent("Migrations").path, cacheFolder: temporaryFolder().path, target: .swiftdata,
                    allowIncompleteStages: allow, strictStages: strict))
        }
        let refused = pipeline(strict: true).run(.write)
        guard case .stopped = refused.outcome else {
            Issue.record("expected generate to stop, got \(refused.outcome)")
            return
        }
        #expect(refused.diagnostics.contains("error: version 3, ChecklistItem.position: the stage into version 3 cannot do its work alone"), "\(refused.diagnostics)")
        #expect(refused.diagnostics.contains("[swiftdata-incomplete-stage]") && refused.diagnostics.contains("Tasks.yaml:"))
        // The file the error names exists: only it is written, for the user's work.
        #expect(refused.diagnostics.contains("write fillChecklistItemPosition(context:) in Tasks+MigrationPlan+Custom.swift to give every TasksSchemaV2_1.ChecklistItem one"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: output + "/Tasks") == ["Tasks+MigrationPlan+Custom.swift"])
        #expect(refused.diagnostics.contains("Tasks+MigrationPlan+Custom.swift: note: written for the stages' work"))
        guard case .generated = pipeline(strict: true, allow: true).run(.write).outcome else {
            Issue.record("--allow-incomplete-stages undoes strictStages")
            return
        }
        try FileManager.default.removeItem(atPath: output + "/Tasks")

        let allowed = pipeline().run(.write)
        guard case .generated = allowed.outcome else {
            Issue.record("expected files, got \(allowed.outcome)")
            return
        }
        #expect(allowed.diagnostics.contains("warning: version 3, ChecklistItem.position: the stage into version 3 cannot do its work alone"))
        let plan = try String(contentsOfFile: output + "/Tasks/Tasks+MigrationPlan.swift", encoding: .utf8)
        #expect(plan.contains("try TasksMigrationPlan.willMigrate(from: 2, context: context)") && plan.contains("try TasksMigrationPlan.didMigrate(to: 3, context: context)"))
        // A new required attribute goes through version 2.1, where it is optional: the hook fills
        // it on those models, and the stage checks before the inferred step requires it.
        #expect(plan.contains("[TasksSchemaV1.self, TasksSchemaV2.self, TasksSchemaV2_1.self, TasksSchemaV3.self]"))
        #expect(
            plan.contains(
                "fromVersion: TasksSchemaV2_1.self, toVersion: TasksSchemaV3.self,\n            willMigrate: { context in\n                try TasksMigrationPlan.willMigrate(from: 2, context: context)\n                try TasksMigrationPlan.fillChecklistItemPosition(context: context)\n                for (index, object) in try context.fetch(FetchDescriptor<TasksSchemaV2_1.ChecklistItem>(), batchSize: 500).enumerated() {"
            ), "\(plan)")
        #expect(
            plan.contains(
                "if object.position == nil { throw TasksMigrationError(description: \"a ChecklistItem has no position, which version 3 requires: write fillChecklistItemPosition(context:) in Tasks+MigrationPlan+Custom.swift\") }"
            ))
        #expect(plan.contains("    static func fillChecklistItemPosition(context: ModelContext) throws\n}"), "a requirement of the hooks")
        #expect(plan.contains("    @available(*, deprecated, message: \"write fillChecklistItemPosition(context:) in Tasks+MigrationPlan+Custom.swift"))
        #expect(plan.components(separatedBy: "TasksMigrationPlan.willMigrate(from: 2,").count == 2, "once per version step")
        let intermediate = try String(contentsOfFile: output + "/Tasks/TasksSchemaV2_1.swift", encoding: .utf8)
        #expect(intermediate.contains("Schema.Version(2, 1, 0)") && intermediate.contains("public var position: Int?"))
        let hooks = output + "/Tasks/Tasks+MigrationPlan+Custom.swift"
        let written = try String(contentsOfFile: hooks, encoding: .utf8)
        #expect(written.contains("extension TasksMigrationPlan: TasksMigrationHooks {"))
        #expect(written.contains("    // static func fillChecklistItemPosition(context: ModelContext) throws {"), "\(written)")
        let mine = "import SwiftData\n\nextension TasksMigrationPlan: TasksMigrationHooks {\n    static func willMigrate(from version: Int, context: ModelContext) throws {}\n}\n"
        try mine.write(toFile: hooks, atomically: true, encoding: .utf8)
        _ = pipeline().run(.write)
        #expect(try String(contentsOfFile: hooks, encoding: .utf8) == mine, "the user's file is kept as they wrote it")
        let names = try FileManager.default.contentsOfDirectory(atPath: output + "/Tasks").sorted()
        var files: [String: String] = [:]
        for name in names { files[name] = try String(contentsOfFile: output + "/Tasks/" + name, encoding: .utf8) }
        let generated = files
        let check = try await offThePool { try SwiftDataShim.typecheck(generated, beforeIOS18: true) }
        #expect(check.passed, "\(check.output)")
        #expect(check.output.contains("fillChecklistItemPosition") && check.output.contains("deprecated"), "the build warns until it is written: \(check.output)")
        // Written, the warning goes.
        var done = generated
        done["Tasks+MigrationPlan+Custom.swift"] =
            "import SwiftData\n\nextension TasksMigrationPlan: TasksMigrationHooks {\n    static func fillChecklistItemPosition(context: ModelContext) throws {}\n}\n"
        let written2 = done
        let quiet = try await offThePool { try SwiftDataShim.typecheck(written2, beforeIOS18: true) }
        #expect(quiet.passed && !quiet.output.contains("deprecated"), "\(quiet.output)")
    }

    /// A stage that would drop values without a word (a type with no conversion) stops generate
    /// even without `strictStages`, unless incomplete stages are allowed; one whose check guards
    /// it (a value to fill) does not.
    @Test func aStageThatWouldLoseValuesStopsGenerate() throws {
        let project = try plannedHistory(
            texts: [
                "schema: Blob\nversion: 1\nentities:\n  Item:\n    attributes:\n      payload: Data\n",
                "schema: Blob\nversion: 2\nentities:\n  Item:\n    attributes:\n      payload: Int64\n",
            ], name: "Blob")
        func run(allow: Bool?) -> GenerationPipeline.Report {
            GenerationPipeline(
                .init(
                    schemas: [project.appendingPathComponent("Schemas").path], output: temporaryFolder().path, migrations: project.appendingPathComponent("Migrations").path,
                    cacheFolder: temporaryFolder().path, target: .swiftdata, allowIncompleteStages: allow)
            ).run(.write)
        }
        let stopped = run(allow: nil)
        guard case .stopped = stopped.outcome else {
            Issue.record("expected a stop, got \(stopped.outcome)")
            return
        }
        #expect(stopped.diagnostics.contains("error: version 2, Item.payload:") && stopped.diagnostics.contains("its values would be lost"), "\(stopped.diagnostics)")
        guard case .generated = run(allow: true).outcome else {
            Issue.record("allowed, it generates")
            return
        }
    }

    /// The first run on each example, before any version is recorded as released, generates
    /// (warnings only) at iOS 17 and at iOS 18, and again after raising the target from one to
    /// the other; what it writes type-checks.
    @Test(arguments: exampleSchemas)
    func theFirstRunPassesAtEitherTargetAndAfterRaisingIt(_ name: String) async throws {
        func unreleased() throws -> URL {
            let migrations = temporaryFolder()
            let folder = migrations.appendingPathComponent(name)
            try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Migrations/\(name)"), to: folder)
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swiftdata.sum") {
                try FileManager.default.removeItem(at: folder.appendingPathComponent(file))
            }
            try MigrationDirectory(path: folder.path).rehash()
            return migrations
        }
        func run(_ target: DeploymentTarget, migrations: URL, output: String) -> GenerationPipeline.Report {
            GenerationPipeline(
                .init(
                    schemas: [repositoryRoot.appendingPathComponent("Schemas/\(name).yaml").path], output: output, migrations: migrations.path,
                    cacheFolder: temporaryFolder().path, target: .swiftdata, deploymentTarget: target)
            ).run(.write)
        }
        for target in [DeploymentTarget.ios17, .ios18] {
            let report = run(target, migrations: try unreleased(), output: temporaryFolder().path)
            guard case .generated = report.outcome else {
                Issue.record("\(name) at \(target): \(report.outcome) \(report.diagnostics)")
                continue
            }
            #expect(!report.diagnostics.contains(": error:"), "\(report.diagnostics)")
        }
        let migrations = try unreleased(), output = temporaryFolder().path
        _ = run(.ios17, migrations: migrations, output: output)
        let raised = run(.ios18, migrations: migrations, output: output)
        guard case .generated = raised.outcome else {
            Issue.record("\(name) raised to iOS 18: \(raised.outcome) \(raised.diagnostics)")
            return
        }
        var files: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: output + "/" + name) {
            files[file] = try String(contentsOfFile: output + "/\(name)/" + file, encoding: .utf8)
        }
        let written = files
        let check = try await offThePool { try SwiftDataShim.typecheck(written, beforeIOS18: false) }
        #expect(check.passed, "\(check.output)")
    }

    /// Released versions stay as devices have them: the first run records each version's models
    /// beside its migration (`NNNN_name.swiftdata.sum`, listed in `migrations.sum`); a template
    /// that writes a released version differently stops generate, naming the file, unless changes
    /// are allowed, which records the new text.
    @Test func releasedVersionsAreFrozen() throws {
        let project = try plannedHistory((1...2).map { "Tests/Fixtures/LibraryHistory/v\($0).yaml" }, name: "Library")
        let migrations = project.appendingPathComponent("Migrations")
        let folder = migrations.appendingPathComponent("Library")
        func run(templates: String? = nil, allow: Bool = false) -> GenerationPipeline.Report {
            GenerationPipeline(
                .init(
                    schemas: [project.appendingPathComponent("Schemas").path], output: project.appendingPathComponent("AppModels").path, templates: templates,
                    migrations: migrations.path, cacheFolder: temporaryFolder().path, target: .swiftdata, allowIncompleteStages: true, allowReleasedVersionChanges: allow)
            ).run(.write)
        }
        guard case .generated = run().outcome else {
            Issue.record("the first run generates")
            return
        }
        let entries = MigrationDirectory(path: folder.path).entries()
        let records = entries.map { folder.appendingPathComponent($0.releasedModelsFile).path }
        #expect(records.allSatisfy { FileManager.default.fileExists(atPath: $0) }, "\(records)")
        #expect(try String(contentsOfFile: records[0], encoding: .utf8).hasPrefix("LibrarySchemaV1.swift "))
        #expect(MigrationDirectory(path: folder.path).verify().isEmpty, "migrations.sum lists the records")
        #expect(try String(contentsOf: folder.appendingPathComponent("migrations.sum"), encoding: .utf8).contains(entries[0].releasedModelsFile))
        guard case .generated = run().outcome else {
            Issue.record("an unchanged run generates")
            return
        }

        // A newer template writes version 1 differently.
        let templates = temporaryFolder()
        try FileManager.default.createDirectory(at: templates, withIntermediateDirectories: true)
        let template = try String(contentsOf: repositoryRoot.appendingPathComponent("Templates/swiftdata/version.swift.mustache"), encoding: .utf8)
        try (template + "// one more line\n").write(to: templates.appendingPathComponent("version.swift.mustache"), atomically: true, encoding: .utf8)
        let refused = run(templates: templates.path)
        guard case .stopped = refused.outcome else {
            Issue.record("a changed released version stops generate, got \(refused.outcome)")
            return
        }
        #expect(refused.diagnostics.contains("error: LibrarySchemaV1.swift, the models of released version 1, would change"), "\(refused.diagnostics)")
        #expect(refused.diagnostics.contains("[swiftdata-released-version-changed]") && refused.diagnostics.contains(entries[0].releasedModelsFile))
        let before = try String(contentsOfFile: records[0], encoding: .utf8)
        let allowed = run(templates: templates.path, allow: true)
        guard case .generated = allowed.outcome else {
            Issue.record("allowed, it generates, got \(allowed.outcome)")
            return
        }
        #expect(allowed.diagnostics.contains("warning: LibrarySchemaV1.swift, the models of released version 1, would change"))
        #expect(try String(contentsOfFile: records[0], encoding: .utf8) != before, "the new text is recorded")
        #expect(MigrationDirectory(path: folder.path).verify().isEmpty)
    }

    /// `encrypt` is `.allowsCloudEncryption`, which only CloudKit honours: a schema synced with
    /// CloudKit gets a comment, one that is not a warning at the attribute's line.
    @Test func cloudEncryptionIsAWarningOutsideCloudKit() throws {
        let migrations = repositoryRoot.appendingPathComponent("Migrations").path
        let notes = try swiftDataOutput(schemas: repositoryRoot.appendingPathComponent("Schemas/Notes.yaml").path, migrations: migrations)
        let model = try #require(notes.files.first { $0.path.hasSuffix("NotesSchemaV1.swift") }?.contents)
        #expect(model.contains("@Attribute(.allowsCloudEncryption)") && model.contains("CloudKit keeps the value encrypted"))
        #expect(!notes.warnings.contains { $0.message.contains("allowsCloudEncryption") }, "\(notes.warnings.map(\.message))")
        let users = try swiftDataOutput(schemas: repositoryRoot.appendingPathComponent("Schemas/Users.yaml").path, migrations: migrations)
        let warning = try #require(users.warnings.first { $0.message.contains("not synced with CloudKit") })
        #expect(warning.severity == .warning && warning.location?.file.hasSuffix("Users.yaml") == true && (warning.location?.line ?? 1) > 1)
    }

    /// CloudKit needs every relationship optional, to-many ones too (Apple's "Creating a Core
    /// Data Model for CloudKit"): a `cloudKit: true` schema declares them `[T]? = []`; others keep
    /// `[T] = []`. Both type-check.
    /// The repository's Notes, whose version 1 was recorded before, keeps `[Note] = []` there.
    @Test func cloudKitSchemasDeclareToManyRelationshipsOptional() async throws {
        let notes = try swiftDataOutput(schemas: repositoryRoot.appendingPathComponent("Schemas/Notes.yaml").path, migrations: temporaryFolder().path)
        let model = try #require(notes.files.first { $0.path.hasSuffix("NotesSchemaV1.swift") }?.contents)
        #expect(model.contains("var notes: [Note]? = []"), "\(model)")
        #expect(model.contains("var folder: Folder?"))
        let library = try swiftDataOutput(schemas: repositoryRoot.appendingPathComponent("Tests/Fixtures/LibraryHistory/v1.yaml").path, migrations: temporaryFolder().path)
        #expect(library.files.contains { $0.contents.contains("var books: [Book] = []") })
        let files = Dictionary(uniqueKeysWithValues: notes.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        let check = try await offThePool { try SwiftDataShim.typecheck(files, beforeIOS18: true) }
        #expect(check.passed, "\(check.output)")

        let released = try swiftDataOutput(schemas: repositoryRoot.appendingPathComponent("Schemas/Notes.yaml").path, migrations: repositoryRoot.appendingPathComponent("Migrations").path)
        #expect(!released.warnings.contains { $0.severity == .error }, "\(released.warnings.map(\.message))")
        #expect(released.files.first { $0.path.hasSuffix("NotesSchemaV1.swift") }?.contents.contains("var notes: [Note] = []") == true)
    }

    /// A table split goes through an intermediate version that has both the old attribute and
    /// the new entity: its stage makes each customer's contact from the customer's own phone, on
    /// the same models, so no identity is carried across an inferred step (Apple does not
    /// document `persistentModelID` as stable across one); the next stage drops the old phone.
    /// Pages come from `fetch(_:batchSize:)`, never `fetchOffset` over an unsorted fetch.
    @Test func movedAttributesGoThroughAnIntermediateVersion() async throws {
        let v1 = "schema: Shop\nversion: 1\nentities:\n  Customer:\n    attributes:\n      name: String\n      phone: String?\n      fax: String?\n"
        let v2 =
            "schema: Shop\nversion: 2\nentities:\n  Customer:\n    attributes:\n      name: String\n    relationships:\n      contact: {to: Contact?, inverse: customer, deleteRule: cascade}\n"
            + "  Contact:\n    attributes:\n      phone: {type: String, unique: true, movedFrom: Customer.phone}\n      fax: {type: String?, movedFrom: Customer.fax}\n    relationships:\n      customer: {to: Customer, inverse: contact}\n"
        let versions = try [v1, v2].map { text in
            try #require(
                SchemaLoader.load(source: SourceFile(path: "Shop.yaml", text: text)).schema, "\(SchemaLoader.load(source: SourceFile(path: "Shop.yaml", text: text)).diagnostics.map(\.message))")
        }
        let output = try Generator.generateSwiftData(versions: versions, sourceFile: "Shop.yaml", templates: try TemplateSet.defaults(for: .swiftdata))
        let files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        let plan = try #require(files["Shop+MigrationPlan.swift"])
        #expect(plan.contains("[ShopSchemaV1.self, ShopSchemaV1_1.self, ShopSchemaV2.self]"), "\(plan)")
        #expect(plan.contains("for (index, object) in try context.fetch(FetchDescriptor<ShopSchemaV1_1.Customer>(), batchSize: 500).enumerated() {"))
        // One contact per customer with a phone (required), holding both values.
        #expect(
            plan.contains(
                "if let moved0 = object.phone {\n                        context.insert(ShopSchemaV1_1.Contact(phone: moved0, fax: object.fax, customer: object))\n                    } else if object.phone != nil || object.fax != nil {\n                        throw ShopMigrationError(description: \"a Customer has values to move into Contact but not the required ones, so they would be lost"
            ), "\(plan)")
        #expect(plan.contains("// Lightweight: removes Customer.phone, whose values are now in the entity it moved into."))
        #expect(!plan.contains("persistentModelID") && !plan.contains("fetchOffset") && !plan.contains("CarriedValues"))
        let intermediate = try #require(files["ShopSchemaV1_1.swift"])
        #expect(intermediate.contains("public var phone: String?") && intermediate.contains("public final class Contact"), "\(intermediate)")
        #expect(intermediate.contains("public var contact: Contact?"))
        // Unique only after the step that checks: an insert of a taken value would be an upsert.
        #expect(!intermediate.contains("@Attribute(.unique)"), "\(intermediate)")
        #expect(plan.contains("var seenContactPhone = Set<String>()") && plan.contains("FetchDescriptor<ShopSchemaV1_1.Contact>()"), "\(plan)")
        #expect(output.notes.filter(\.isIncompleteStage).isEmpty, "\(output.notes.map(\.message))")
        let check = try await offThePool { try SwiftDataShim.typecheck(files, beforeIOS18: true) }
        #expect(check.passed, "\(check.output)")
    }

    /// A type change and a new required attribute in one step share the intermediate version:
    /// its first stage converts into the copy, the second runs the user's hook on the
    /// intermediate's models (where the new attribute is, optional) and checks it is filled.
    @Test func aTypeChangeAndANewRequiredAttributeShareTheIntermediateVersion() async throws {
        let v1 = "schema: Stock\nversion: 1\nentities:\n  Item:\n    attributes:\n      count: Int32\n      name: String\n"
        let v2 = "schema: Stock\nversion: 2\nentities:\n  Item:\n    attributes:\n      count: Int64\n      name: String\n      code: String\n"
        let versions = try [v1, v2].map { text in try #require(SchemaLoader.load(source: SourceFile(path: "Stock.yaml", text: text)).schema) }
        let output = try Generator.generateSwiftData(versions: versions, sourceFile: "Stock.yaml", templates: try TemplateSet.defaults(for: .swiftdata))
        let files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        let plan = try #require(files["Stock+MigrationPlan.swift"])
        #expect(plan.contains("[StockSchemaV1.self, StockSchemaV1_1.self, StockSchemaV2.self]"), "\(plan)")
        let intermediate = try #require(files["StockSchemaV1_1.swift"])
        #expect(intermediate.contains("public var countConverted: Int64?") && intermediate.contains("public var code: String?"), "\(intermediate)")
        #expect(plan.contains("object.countConverted = Int64(clamping: value)"))
        let second = try #require(plan.range(of: "fromVersion: StockSchemaV1_1.self, toVersion: StockSchemaV2.self"))
        let hook = try #require(plan.range(of: "try StockMigrationPlan.willMigrate(from: 1, context: context)"))
        #expect(hook.lowerBound > second.lowerBound, "the hook runs where code exists")
        #expect(
            plan.contains("if object.code == nil { throw StockMigrationError(description: \"an Item has no code")
                || plan.contains("if object.code == nil { throw StockMigrationError(description: \"a Item has no code"), "\(plan)")
        #expect(plan.components(separatedBy: "StockMigrationPlan.willMigrate(from: 1,").count == 2)
        let check = try await offThePool { try SwiftDataShim.typecheck(files, beforeIOS18: true) }
        #expect(check.passed, "\(check.output)")
    }

    /// An attribute that becomes unique: the stage looks for objects that share a value before
    /// the inferred step, which would fail on them with Core Data's error, and names the file
    /// where duplicates are removed, never the value (it may be encrypted).
    @Test func aNewlyUniqueAttributeIsCheckedForDuplicatesFirst() async throws {
        let output = try swiftDataOutput(
            schemas: repositoryRoot.appendingPathComponent("Schemas/Users.yaml").path, migrations: repositoryRoot.appendingPathComponent("Migrations").path)
        let plan = try #require(output.files.first { $0.path.hasSuffix("Users+MigrationPlan.swift") }?.contents)
        #expect(plan.contains("var seenUserEmail = Set<String>()"), "\(plan)")
        #expect(
            plan.contains(
                "if let value = object.email, !seenUserEmail.insert(value).inserted { throw UsersMigrationError(description: \"two User objects share a value of email, which version 3 makes unique: remove or change the duplicates in willMigrate(from: 2) of Users+MigrationPlan+Custom.swift\") }"
            ))
        let hook = try #require(plan.range(of: "try UsersMigrationPlan.willMigrate(from: 2"))
        #expect(plan.range(of: "var seenUserEmail")!.lowerBound > hook.lowerBound, "the user's hook removes duplicates first")
        #expect(!output.warnings.contains { $0.code == "swiftdata-incomplete-stage" }, "\(output.warnings.map(\.message))")
        // A one-attribute unique list or key is `.unique` too, and checked the same way.
        for uniqueness in ["    uniques: [[code]]\n", "    primaryKey: [code]\n"] {
            let v1 = "schema: Stock\nversion: 1\nentities:\n  Item:\n    attributes:\n      code: String\n"
            let versions = try [v1, v1.replacingOccurrences(of: "version: 1", with: "version: 2") + uniqueness].map { text in
                try #require(SchemaLoader.load(source: SourceFile(path: "Stock.yaml", text: text)).schema)
            }
            let plan = try #require(
                Generator.generateSwiftData(versions: versions, sourceFile: "Stock.yaml", templates: try TemplateSet.defaults(for: .swiftdata)).files.first {
                    $0.path.hasSuffix("Stock+MigrationPlan.swift")
                }?.contents)
            #expect(plan.contains("if !seenItemCode.insert(object.code).inserted { throw StockMigrationError("), "\(uniqueness): \(plan)")
        }
    }

    /// iOS 17 has no `#Unique` or `#Index`: a one-attribute unique list becomes
    /// `@Attribute(.unique)`, the rest comments and warnings at the entity's line; iOS 18 output
    /// uses the macros, and fails the iOS 17 check.
    @Test func theDeploymentTargetDecidesTheConstraintMacros() async throws {
        let schemas = repositoryRoot.appendingPathComponent("Schemas/Flights.yaml").path, migrations = repositoryRoot.appendingPathComponent("Migrations").path
        let old = try swiftDataOutput(schemas: schemas, migrations: migrations, deploymentTarget: .ios17)
        // As if no version had shipped: released ones keep their recorded target otherwise.
        let new = try swiftDataOutput(schemas: schemas, migrations: migrations, deploymentTarget: .ios18, allowReleasedVersionChanges: true)
        @Sendable func files(_ output: (files: [GeneratedFile], warnings: [Diagnostic])) -> [String: String] {
            Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        }
        let oldV5 = try #require(files(old)["FlightsSchemaV5.swift"]), newV5 = try #require(files(new)["FlightsSchemaV5.swift"])
        #expect(!files(old).values.contains { $0.contains("#Unique<") || $0.contains("#Index<") })
        #expect(oldV5.contains("// No SwiftData equivalent before iOS 18: the index [city, name] needs #Index, which is iOS 18 and macOS 15 API"))
        #expect(newV5.contains("#Index<Airport>([\\.city, \\.name])"))
        let warning = try #require(old.warnings.first { $0.message.contains("the index [city, name] needs #Index") })
        let yaml = try String(contentsOfFile: schemas, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let location = try #require(warning.location)
        #expect(location.file.hasSuffix("Schemas/Flights.yaml") && yaml[location.line - 1].hasPrefix("  Airport:"), "\(location)")
        let newFiles = files(new)
        let check = try await offThePool { try SwiftDataShim.typecheck(newFiles, beforeIOS18: true) }
        #expect(!check.passed && check.output.contains("is iOS 18 and macOS 15 API"), "\(check.output)")
    }

    /// Raising the deployment target is routine: the versions released at iOS 17 keep their
    /// recorded output (no `#Index`), with no error, and a version planned after it gets the
    /// macros.
    @Test func raisingTheDeploymentTargetChangesOnlyNewVersions() throws {
        let project = try plannedHistory((1...2).map { "Tests/Fixtures/LibraryHistory/v\($0).yaml" }, name: "Library")
        let migrations = project.appendingPathComponent("Migrations")
        func run(_ target: DeploymentTarget) -> GenerationPipeline.Report {
            GenerationPipeline(
                .init(
                    schemas: [project.appendingPathComponent("Schemas").path], output: project.appendingPathComponent("AppModels").path,
                    migrations: migrations.path, cacheFolder: temporaryFolder().path, target: .swiftdata, deploymentTarget: target, allowIncompleteStages: true)
            ).run(.write)
        }
        func file(_ version: Int) throws -> String {
            try String(contentsOf: project.appendingPathComponent("AppModels/Library/LibrarySchemaV\(version).swift"), encoding: .utf8)
        }
        guard case .generated = run(.ios17).outcome else {
            Issue.record("the first run generates")
            return
        }
        let releasedV2 = try file(2)
        #expect(!releasedV2.contains("#Index<"))
        let raised = run(.ios18)
        guard case .generated = raised.outcome else {
            Issue.record("raising the target generates, got \(raised.outcome): \(raised.diagnostics)")
            return
        }
        #expect(!raised.diagnostics.contains("swiftdata-released-version-changed"), "\(raised.diagnostics)")
        #expect(try file(2) == releasedV2, "version 2 keeps its iOS 17 output")

        // Version 3 is planned after the target was raised.
        try FileManager.default.removeItem(at: project.appendingPathComponent("Schemas/Library.yaml"))
        try FileManager.default.copyItem(
            at: repositoryRoot.appendingPathComponent("Tests/Fixtures/LibraryHistory/v3.yaml"), to: project.appendingPathComponent("Schemas/Library.yaml"))
        let planned = GenerationPipeline(
            .init(
                schemas: [project.appendingPathComponent("Schemas").path], output: project.appendingPathComponent("Generated").path, migrations: migrations.path,
                allowDestructive: true)
        ).run(.migrationsOnly)
        guard case .migrations = planned.outcome else {
            Issue.record("version 3 is planned, got \(planned.outcome)")
            return
        }
        guard case .generated = run(.ios18).outcome else {
            Issue.record("version 3 generates")
            return
        }
        let third = try file(3)
        #expect(third.contains("#Index<Book>"), "\(third)")
        #expect(try file(2) == releasedV2)
    }

    /// Apple's `Unique` takes relationships that reference a single model: Garage's unique
    /// [car, day] and [make, model, owner] are `#Unique` at iOS 18 (before it, comments and
    /// warnings), and the models type-check.
    @Test func uniqueConstraintsOverToOneRelationshipsAreKeptAtIOS18() async throws {
        let schema = repositoryRoot.appendingPathComponent("Schemas/Garage.yaml").path
        let output = try swiftDataOutput(schemas: schema, migrations: temporaryFolder().path, deploymentTarget: .ios18)
        let files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        let model = try #require(files.first { $0.key.hasPrefix("GarageSchemaV") }?.value)
        #expect(model.contains("#Unique<ServiceVisit>([\\.car, \\.day])"), "\(model)")
        #expect(model.contains("#Unique<Car>([\\.make, \\.model, \\.owner])"))
        #expect(!output.warnings.contains { $0.message.contains("#Unique takes") }, "\(output.warnings.map(\.message))")
        let check = try await offThePool { try SwiftDataShim.typecheck(files, beforeIOS18: false) }
        #expect(check.passed, "\(check.output)")
        let older = try swiftDataOutput(schemas: schema, migrations: temporaryFolder().path, deploymentTarget: .ios17)
        #expect(older.warnings.contains { $0.message.contains("the unique constraint [car, day] needs #Unique, which is iOS 18") })
    }

    /// A unique list that version 1's iOS 17 models left out is enforced by version 2's iOS 18
    /// `#Unique`: objects that share a value would fail the migration, so generate says so, as it
    /// does for a newly unique attribute. Lowering the target under a released iOS 18 version is
    /// refused: its kept `#Unique` would not compile for iOS 17.
    @Test func uniquesFirstEnforcedAfterRaisingTheTargetAreIncompleteStages() throws {
        let v1 = "schema: Shelf\nversion: 1\nentities:\n  Book:\n    attributes:\n      title: String\n      shelf: String\n    uniques: [[title, shelf]]\n"
        let project = try plannedHistory(texts: [v1], name: "Shelf")
        let migrations = project.appendingPathComponent("Migrations")
        func run(_ target: DeploymentTarget, allow: Bool = false) -> GenerationPipeline.Report {
            GenerationPipeline(
                .init(
                    schemas: [project.appendingPathComponent("Schemas").path], output: project.appendingPathComponent("AppModels").path,
                    migrations: migrations.path, cacheFolder: temporaryFolder().path, target: .swiftdata, deploymentTarget: target, allowIncompleteStages: allow)
            ).run(.write)
        }
        guard case .generated = run(.ios17).outcome else {
            Issue.record("version 1 generates at iOS 17")
            return
        }
        let v2 = v1.replacingOccurrences(of: "version: 1", with: "version: 2").replacingOccurrences(of: "      shelf: String\n", with: "      shelf: String\n      note: String?\n")
        try v2.write(to: project.appendingPathComponent("Schemas/Shelf.yaml"), atomically: true, encoding: .utf8)
        let planned = GenerationPipeline(
            .init(schemas: [project.appendingPathComponent("Schemas").path], output: temporaryFolder().path, migrations: migrations.path, allowDestructive: true)
        ).run(.migrationsOnly)
        guard case .migrations = planned.outcome else {
            Issue.record("version 2 is planned, got \(planned.outcome)")
            return
        }
        let raised = run(.ios18)
        guard case .generated = raised.outcome else {
            Issue.record("the newly enforced unique list is a warning, got \(raised.outcome)")
            return
        }
        #expect(
            raised.diagnostics.contains(
                "version 2, Book: the stage into version 2 cannot do its work alone: its models enforce the unique constraint [title, shelf] (#Unique), which version 1's models do not"),
            "\(raised.diagnostics)")
        guard case .generated = run(.ios18, allow: true).outcome else {
            Issue.record("allowed, it generates")
            return
        }

        // Released at iOS 18 with #Unique: iOS 17 cannot keep it, and cannot change it silently.
        let lowered = run(.ios17)
        guard case .stopped = lowered.outcome else {
            Issue.record("lowering the target under a released iOS 18 version stops generate, got \(lowered.outcome)")
            return
        }
        #expect(lowered.diagnostics.contains("ShelfSchemaV2.swift, the models of released version 2, would change"), "\(lowered.diagnostics)")
    }

    /// The generated code can fail the check: a misspelled option in it is refused.
    @Test func aMisspelledOptionInGeneratedCodeFails() async throws {
        let output = try swiftDataOutput(schemas: repositoryRoot.appendingPathComponent("Schemas/Flights.yaml").path, migrations: repositoryRoot.appendingPathComponent("Migrations").path)
        var files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        let newest = try #require(files["FlightsSchemaV5.swift"])
        #expect(newest.contains("@Attribute(.unique)"))
        files["FlightsSchemaV5.swift"] = newest.replacingOccurrences(of: "@Attribute(.unique)", with: "@Attribute(.uniqe)")
        let misspelled = files
        let check = try await offThePool { try SwiftDataShim.typecheck(misspelled) }
        #expect(!check.passed)
        #expect(check.output.contains("uniqe"), "\(check.output)")
    }

    /// Flights' five versions: each a VersionedSchema with its own models, and each step's stage
    /// what SwiftData can infer or the data work it needs.
    @Test func flightsHistoryBecomesAVersionChain() throws {
        let output = try swiftDataOutput(
            schemas: repositoryRoot.appendingPathComponent("Schemas/Flights.yaml").path, migrations: repositoryRoot.appendingPathComponent("Migrations").path, deploymentTarget: .ios18,
            allowReleasedVersionChanges: true)
        let files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        for version in 1...5 {
            let file = try #require(files["FlightsSchemaV\(version).swift"])
            #expect(file.contains("public enum FlightsSchemaV\(version): VersionedSchema"))
            #expect(file.contains("Schema.Version(\(version), 0, 0)"))
        }
        #expect(!files["FlightsSchemaV1.swift"]!.contains("elevation"))
        #expect(files["FlightsSchemaV2.swift"]!.contains("public var elevation: Int?"))
        #expect(files["FlightsSchemaV3.swift"]!.contains("@Attribute(originalName: \"elevation\")\n        public var elevationFeet: Int?"))
        #expect(files["FlightsSchemaV3.swift"]!.contains("public var progressPercent: Int = 0"))
        #expect(files["FlightsSchemaV4.swift"]!.contains("public var progressPercent: Double = 0"))
        #expect(files["FlightsSchemaV5.swift"]!.contains("public var progressPercent: Double?"))
        // Inverses named on one side only: the to-many one.
        #expect(files["FlightsSchemaV5.swift"]!.contains("@Relationship(inverse: \\Flight.origin)\n        public var flightsFrom: [Flight] = []"))
        #expect(files["FlightsSchemaV5.swift"]!.contains("@Relationship(deleteRule: .nullify") == false)
        #expect(files["FlightsSchemaV5.swift"]!.contains("@Transient\n        public var isFavorite: Bool = false"))
        #expect(files["FlightsSchemaV5.swift"]!.contains("@Attribute(.spotlight)\n        public var name: String?"))
        #expect(files["FlightsSchemaV5.swift"]!.contains("#Index<Airport>([\\.city, \\.name])"))
        let plan = try #require(files["Flights+MigrationPlan.swift"])
        // The type change of version 4 takes two stages: the converted values first sit beside
        // the old ones in version 3.1, then version 4 renames them.
        #expect(plan.contains("[FlightsSchemaV1.self, FlightsSchemaV2.self, FlightsSchemaV3.self, FlightsSchemaV3_1.self, FlightsSchemaV4.self, FlightsSchemaV5.self]"))
        #expect(plan.contains("fromVersion: FlightsSchemaV1.self, toVersion: FlightsSchemaV2.self,"))
        #expect(plan.contains("fromVersion: FlightsSchemaV2.self, toVersion: FlightsSchemaV3.self,"))
        #expect(
            plan.contains(
                "fromVersion: FlightsSchemaV3.self, toVersion: FlightsSchemaV3_1.self,\n            willMigrate: { context in\n                try FlightsMigrationPlan.willMigrate(from: 3, context: context)"
            ))
        // Every stage calls the user's hooks, once per version step: a lightweight step too.
        #expect(
            plan.contains(
                "fromVersion: FlightsSchemaV1.self, toVersion: FlightsSchemaV2.self,\n            willMigrate: { context in\n                try FlightsMigrationPlan.willMigrate(from: 1, context: context)"
            ))
        #expect(plan.contains("try FlightsMigrationPlan.didMigrate(to: 2, context: context)"))
        #expect(plan.components(separatedBy: "FlightsMigrationPlan.willMigrate(from: 3,").count == 2 && plan.components(separatedBy: "FlightsMigrationPlan.didMigrate(to: 4,").count == 2)
        #expect(!plan.contains(".lightweight("))
        #expect(plan.contains("try context.fetch(FetchDescriptor<FlightsSchemaV3_1.Flight>(), batchSize: 500).enumerated()") && !plan.contains("fetchOffset"), "a batch at a time")
        #expect(plan.contains("object.progressPercentConverted = Double(value)"))
        #expect(plan.contains("fromVersion: FlightsSchemaV3_1.self, toVersion: FlightsSchemaV4.self,"))
        #expect(files["FlightsSchemaV3_1.swift"]!.contains("Schema.Version(3, 1, 0)") && files["FlightsSchemaV3_1.swift"]!.contains("public var progressPercentConverted: Double?"))
        #expect(files["FlightsSchemaV4.swift"]!.contains("@Attribute(originalName: \"progressPercentConverted\")\n        public var progressPercent: Double = 0"))
        #expect(!plan.contains("persistentModelID"), "no value crosses the inferred step")
        // Core Data matches properties by renaming identifier: later versions keep the copy's.
        #expect(files["FlightsSchemaV5.swift"]!.contains("@Attribute(originalName: \"progressPercentConverted\")\n        public var progressPercent: Double?"))
        #expect(plan.contains("fromVersion: FlightsSchemaV4.self, toVersion: FlightsSchemaV5.self,"))
        #expect(plan.contains("public static var stages: [MigrationStage] {"))
        let typealiases = try #require(files["Flights.swift"])
        #expect(typealiases.contains("public typealias Airport = FlightsSchemaV5.Airport"))
        // An index over a relationship has no SwiftData equivalent: said in the file and warned.
        #expect(files["FlightsSchemaV5.swift"]!.contains("// No SwiftData equivalent: the index [origin, scheduledOff] includes the relationship 'origin'"))
        #expect(output.warnings.contains { $0.code == "swiftdata-no-equivalent" && $0.message.contains("[origin, scheduledOff]") && $0.severity == .warning })
    }

    /// Four versions with renames, a type change, a newly required attribute and a renamed
    /// entity, planned as a project would: the chain type-checks and each stage does its work.
    @Test func aFourVersionHistoryWithRenames() async throws {
        let project = try plannedHistory((1...4).map { "Tests/Fixtures/LibraryHistory/v\($0).yaml" }, name: "Library")
        let migrations = project.appendingPathComponent("Migrations/Library")
        // Planning records each version's schema text beside its migration, in migrations.sum.
        let recorded = try FileManager.default.contentsOfDirectory(atPath: migrations.path).filter { $0.hasSuffix(".schema.yaml") }.sorted()
        #expect(recorded.count == 4)
        let sum = try String(contentsOf: migrations.appendingPathComponent("migrations.sum"), encoding: .utf8)
        for file in recorded { #expect(sum.contains(file)) }
        let output = try swiftDataOutput(schemas: project.appendingPathComponent("Schemas").path, migrations: project.appendingPathComponent("Migrations").path)
        let files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        let plan = try #require(files["Library+MigrationPlan.swift"])
        #expect(plan.contains("// Lightweight: renames Book.title to name (originalName)."))
        #expect(plan.contains("fromVersion: LibrarySchemaV1.self, toVersion: LibrarySchemaV2.self,"))
        #expect(plan.contains("if object.pages == nil { object.pages = 0 }"))
        #expect(plan.contains("object.ratingConverted = Double(value)"))
        #expect(plan.contains("FetchDescriptor<LibrarySchemaV3.Writer>()"))
        #expect(plan.contains("let inserted = LibrarySchemaV4.Author(name: values.0, born: values.1)"))
        // The renamed entity's links are carried too, by the Books' identity (Book has no unique
        // attribute of its own), and a link that finds no Book fails the stage instead of
        // dropping it.
        #expect(plan.contains("carriedAuthorBooks.keep(object.books.map(\\.persistentModelID), for: object.persistentModelID)"))
        #expect(plan.contains("for key in carriedAuthorBooks.value(for: model) ?? [] {"))
        #expect(plan.contains("guard let related = byBook[key] else { throw LibraryMigrationError(description: \"no Book \\(key) after the stage for a Author's books\") }"))
        #expect(plan.contains("struct LibraryMigrationError: Error, CustomStringConvertible"))
        #expect(plan.contains("// Lightweight: renames the relationship Book.writer to author (originalName)."))
        #expect(files["LibrarySchemaV4.swift"]!.contains("@Relationship(originalName: \"writer\")\n        public var author: Author?"))
        #expect(files["LibrarySchemaV4.swift"]!.contains("@Relationship(deleteRule: .cascade, maximumModelCount: 500, inverse: \\Book.author)"))
        #expect(files["LibrarySchemaV1.swift"]!.contains("@Attribute(.externalStorage)\n        public var cover: Data?"))
        #expect(!output.warnings.contains { $0.subject(is: "Author") }, "\(output.warnings.map(\.message))")
        let check = try await offThePool { try SwiftDataShim.typecheck(files) }
        #expect(check.passed, "\(check.output)")
    }

    /// A migration without its schema text (planned before versions were recorded) leaves its
    /// version out with a warning that says how to restore it; a recorded text that does not
    /// build its migration's tables is refused the same way.
    @Test func versionsWithoutTheirSchemaAreLeftOutAndSaidSo() throws {
        let project = try plannedHistory((1...3).map { "Tests/Fixtures/LibraryHistory/v\($0).yaml" }, name: "Library")
        let migrations = project.appendingPathComponent("Migrations/Library")
        let files = try FileManager.default.contentsOfDirectory(atPath: migrations.path).sorted()
        let first = try #require(files.first { $0.hasPrefix("0001") && $0.hasSuffix(".schema.yaml") })
        try FileManager.default.removeItem(at: migrations.appendingPathComponent(first))
        let second = try #require(files.first { $0.hasPrefix("0002") && $0.hasSuffix(".schema.yaml") })
        let text = try String(contentsOf: migrations.appendingPathComponent(second), encoding: .utf8)
        try text.replacingOccurrences(of: "subtitle: String?", with: "subtitle: String").write(to: migrations.appendingPathComponent(second), atomically: true, encoding: .utf8)
        let output = try swiftDataOutput(schemas: project.appendingPathComponent("Schemas").path, migrations: project.appendingPathComponent("Migrations").path)
        let names = output.files.map { URL(fileURLWithPath: $0.path).lastPathComponent }
        #expect(!names.contains("LibrarySchemaV1.swift"))
        #expect(!names.contains("LibrarySchemaV2.swift"))
        #expect(names.contains("LibrarySchemaV3.swift"))
        let missing = try #require(output.warnings.first { $0.code == "history-source-missing" })
        #expect(missing.message.contains("git show"))
        #expect(missing.location?.file.hasSuffix(first) == true)
        #expect(output.warnings.contains { $0.code == "history-source-invalid" && $0.message.contains("does not build the tables") })
    }

    /// A released version must not change its models in place (SwiftData would no longer know
    /// stores of it): a change no table sees, without a new version, is warned about; a new doc
    /// is not.
    @Test func aReleasedVersionChangedInPlaceIsWarnedAbout() throws {
        let project = try plannedHistory((1...2).map { "Tests/Fixtures/LibraryHistory/v\($0).yaml" }, name: "Library")
        let schema = project.appendingPathComponent("Schemas/Library.yaml")
        let text = try String(contentsOf: schema, encoding: .utf8)
        try text.replacingOccurrences(of: "doc: Writers and their books.", with: "doc: Writers, and the books they wrote.").write(to: schema, atomically: true, encoding: .utf8)
        let documented = try swiftDataOutput(schemas: schema.path, migrations: project.appendingPathComponent("Migrations").path)
        #expect(!documented.warnings.contains { $0.code == "history-version-changed" })
        #expect(documented.files.first { $0.path.hasSuffix("LibrarySchemaV2.swift") }?.contents.contains("/// Writers, and the books they wrote.") == true)
        try text.replacingOccurrences(of: "      subtitle: String?", with: "      subtitle: String?\n      isSelected: {type: Bool, transient: true, default: false}")
            .write(to: schema, atomically: true, encoding: .utf8)
        let changed = try swiftDataOutput(schemas: schema.path, migrations: project.appendingPathComponent("Migrations").path)
        let warning = try #require(changed.warnings.first { $0.code == "history-version-changed" })
        #expect(warning.message.contains("bump 'version'"))
    }

    /// A new version that changes no table is recorded all the same, as a migration without
    /// statements: were it left out, the next migration's version would follow the one before
    /// it, and an app that shipped it would open stores of a version the chain does not know.
    @Test func aVersionThatChangesNoTableStaysInTheChain() throws {
        let project = try plannedHistory((1...2).map { "Tests/Fixtures/LibraryHistory/v\($0).yaml" }, name: "Library")
        let schema = project.appendingPathComponent("Schemas/Library.yaml")
        let migrations = project.appendingPathComponent("Migrations")
        func plan(_ text: String) throws -> [PendingMigration] {
            try text.write(to: schema, atomically: true, encoding: .utf8)
            let pipeline = GenerationPipeline(.init(schemas: [schema.path], output: project.appendingPathComponent("Generated").path, migrations: migrations.path))
            guard case .migrations(let written, true) = pipeline.run(.migrationsOnly).outcome else { return [] }
            return written
        }
        let second = try String(contentsOf: schema, encoding: .utf8)
        let third = second.replacingOccurrences(of: "version: 2", with: "version: 3")
            .replacingOccurrences(of: "      subtitle: String?", with: "      subtitle: String?\n      isSelected: {type: Bool, transient: true, default: false}")
        #expect(try plan(third).count == 1)
        let folder = migrations.appendingPathComponent("Library")
        let up = try String(contentsOf: folder.appendingPathComponent("0003_v3.up.sql"), encoding: .utf8)
        #expect(up.split(separator: "\n").allSatisfy { $0.hasPrefix("--") || $0.trimmingCharacters(in: .whitespaces).isEmpty }, "\(up)")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("0003_v3.schema.yaml").path))
        #expect(try plan(third).isEmpty, "planned once")
        let fourth = third.replacingOccurrences(of: "version: 3", with: "version: 4").replacingOccurrences(of: "      subtitle: String?", with: "      subtitle: String?\n      edition: Int16?")
        #expect(try plan(fourth).count == 1)
        let loaded = try #require(SchemaLoader.load(file: schema.path).schema)
        let history = SchemaHistory.load(for: loaded, root: migrations.path, dialects: [.sqlite])
        #expect(history.versions.map(\.schema.version) == [1, 2, 3, 4])
        #expect(history.versions.allSatisfy { $0.migration != nil })
        let output = try swiftDataOutput(schemas: schema.path, migrations: migrations.path)
        let files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        #expect(files["LibrarySchemaV3.swift"]?.contains("@Transient") == true)
        let migrationPlan = try #require(files["Library+MigrationPlan.swift"])
        #expect(migrationPlan.contains("LibrarySchemaV2.self, LibrarySchemaV3.self, LibrarySchemaV4.self"), "\(migrationPlan)")
    }
}

extension Diagnostic {
    /// Whether a SwiftData warning is about `subject` (`version 4, Author: ...`).
    func subject(is subject: String) -> Bool { message.contains(", \(subject): ") }
}
