import Foundation
import SchemagenPipeline
import TestSupport
import Testing

/// `GenerationPipeline.run` owns the stages, the record that skips unchanged runs and the
/// timings; these tests drive it directly, on real files, without the command.
@Suite struct GenerationPipelineRunTests {
    static let notes = """
        schema: Notes
        version: 1
        entities:
          Note:
            attributes:
              title: String

        """

    struct Project {
        let folder = temporaryFolder()
        var schema: URL { folder.appendingPathComponent("Notes.yaml") }
        var output: String { folder.appendingPathComponent("Sources/Models").path }
        var migrations: String { folder.appendingPathComponent("Migrations").path }
        var pipeline: GenerationPipeline {
            GenerationPipeline(.init(schemas: [schema.path], output: output, migrations: migrations, cacheFolder: folder.appendingPathComponent(".build/schemagen").path))
        }

        func write(_ yaml: String) throws { try yaml.write(to: schema, atomically: true, encoding: .utf8) }
        func files(under path: String) -> [String] {
            ((FileManager.default.enumerator(atPath: path)?.allObjects as? [String]) ?? []).filter { $0.hasSuffix(".swift") || $0.hasSuffix(".sql") }.sorted()
        }
    }

    @Test func aFirstRunWritesCodeAndMigrationAndAnUnchangedRunStopsEarly() throws {
        let project = Project()
        try project.write(Self.notes)
        let first = project.pipeline.run(.write)
        guard case .generated(let changes, let migrations, let schemaCount) = first.outcome else {
            Issue.record("expected generated, got \(first.outcome)")
            return
        }
        #expect(schemaCount == 1 && migrations.count == 1)
        #expect(changes.missing.contains("Notes/Note.swift") && changes.stale.isEmpty && changes.extra.isEmpty, "\(changes.missing)")
        #expect(project.files(under: project.output).contains("Notes/Note.swift"))
        #expect(project.files(under: project.migrations).contains("Notes/0001_create_notes.up.sql"), "\(project.files(under: project.migrations))")
        #expect(first.timings.map(\.stage) == ["load", "model", "plan", "templates", "render", "compare", "write"])

        let second = project.pipeline.run(.write)
        guard case .unchangedSinceLastRun(let count) = second.outcome else {
            Issue.record("expected the recorded run to be reused, got \(second.outcome)")
            return
        }
        #expect(count == 1)
        #expect(second.timings.map(\.stage) == ["cache"])
    }

    @Test func checkReportsAStaleFileAndWritesNothing() throws {
        let project = Project()
        try project.write(Self.notes)
        _ = project.pipeline.run(.write)
        let note = project.output + "/Notes/Note.swift"
        let edited = try String(contentsOfFile: note, encoding: .utf8) + "// edited by hand\n"
        try edited.write(toFile: note, atomically: true, encoding: .utf8)
        let report = project.pipeline.run(.check)
        guard case .checked(let changes, let migrations, _) = report.outcome else {
            Issue.record("expected checked, got \(report.outcome)")
            return
        }
        #expect(changes.stale == ["Notes/Note.swift"] && migrations.isEmpty)
        #expect(try String(contentsOfFile: note, encoding: .utf8) == edited, "check writes nothing")
    }

    @Test func aSchemaChangeIsPlannedAndOnlyMigrationsOnlyWritesIt() throws {
        let project = Project()
        try project.write(Self.notes)
        _ = project.pipeline.run(.write)
        try project.write(Self.notes.replacingOccurrences(of: "version: 1", with: "version: 2") + "      body: String?\n")
        let before = project.files(under: project.migrations)

        let planned = project.pipeline.run(.checkMigrationsOnly)
        guard case .migrations(let pending, written: false) = planned.outcome, let migration = pending.first else {
            Issue.record("expected a pending migration, got \(planned.outcome)")
            return
        }
        #expect(migration.migration.to.version == 2)
        #expect(project.files(under: project.migrations) == before, "a check writes no migration")

        let written = project.pipeline.run(.migrationsOnly)
        guard case .migrations(let done, written: true) = written.outcome else {
            Issue.record("expected written migrations, got \(written.outcome)")
            return
        }
        #expect(done.count == 1)
        #expect(project.files(under: project.migrations).count == before.count + 2, "the up and down files of 0002")
        #expect(!project.files(under: project.output).isEmpty)
    }

    @Test func invalidSchemasStopBeforeAnythingIsWritten() throws {
        let project = Project()
        try project.write(Self.notes.replacingOccurrences(of: "title: String", with: "title: Strin"))
        let report = project.pipeline.run(.write)
        guard case .invalidSchemas = report.outcome else {
            Issue.record("expected invalid schemas, got \(report.outcome)")
            return
        }
        #expect(report.diagnostics.contains("Notes.yaml:6:"), "\(report.diagnostics)")
        #expect(!FileManager.default.fileExists(atPath: project.output))
        #expect(!FileManager.default.fileExists(atPath: project.migrations))
    }

    /// Adding a dialect plans its folder's whole history; the generated metadata still
    /// describes what the default dialect's databases hold (Users' one-to-one key has a plain
    /// index there, from a snapshot older than unique one-to-one keys), not the new folder's.
    @Test func addingADialectKeepsTheMetadataOfTheDefaultDialectsDatabases() throws {
        let folder = temporaryFolder()
        let schema = folder.appendingPathComponent("Users.yaml")
        let migrations = folder.appendingPathComponent("Migrations")
        try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Migrations/Users"), to: migrations.appendingPathComponent("Users"))
        try? FileManager.default.removeItem(at: migrations.appendingPathComponent("Users/postgres"))
        var yaml = try String(contentsOf: repositoryRoot.appendingPathComponent("Schemas/Users.yaml"), encoding: .utf8)
        yaml = yaml.replacingOccurrences(of: "dialects: [sqlite, postgres]\n", with: "")
        try yaml.write(to: schema, atomically: true, encoding: .utf8)
        let output = folder.appendingPathComponent("Sources/Models").path
        let pipeline = { GenerationPipeline(.init(schemas: [schema.path], output: output, migrations: migrations.path, cacheFolder: folder.appendingPathComponent(".cache").path)) }
        _ = pipeline().run(.write)
        let before = try String(contentsOfFile: output + "/Users/Users+Metadata.swift", encoding: .utf8)
        #expect(before.contains(".plain(\"image_owner_identifier_idx\""))
        try (yaml.replacingOccurrences(of: "doc: Users and their profile images.\n", with: "doc: Users and their profile images.\ndialects: [sqlite, postgres]\n")).write(
            to: schema, atomically: true, encoding: .utf8)
        _ = pipeline().run(.write)
        #expect(FileManager.default.fileExists(atPath: migrations.path + "/Users/postgres/0001_create_users.up.sql"))
        let after = try String(contentsOfFile: output + "/Users/Users+Metadata.swift", encoding: .utf8)
        #expect(after == before, "the metadata follows the SQLite databases, not the new PostgreSQL folder")
    }
}
