import CodeGeneration
import Foundation
import SchemagenPipeline
import TestSupport
import Testing

/// `generate` reads each schema file and each migration file once: the cache's digest, the load,
/// the plan (every dialect's folder), the embedded scripts and the SwiftData history share one
/// read. What a run writes is read again only where the next run's digest needs it.
@Suite struct InputFilesTests {
    /// The Users schema (two dialects, two migrations each) in a project of its own, its version
    /// bumped with a change so a new migration is planned for both dialects.
    struct Project {
        let folder = temporaryFolder()
        var schema: URL { folder.appendingPathComponent("Users.yaml") }
        var migrations: URL { folder.appendingPathComponent("Migrations") }

        init(bumped: Bool) throws {
            try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Migrations/Users"), to: migrations.appendingPathComponent("Users"))
            var yaml = try String(contentsOf: repositoryRoot.appendingPathComponent("Schemas/Users.yaml"), encoding: .utf8)
            if bumped {
                yaml = yaml.replacingOccurrences(of: "version: 3\n", with: "version: 4\n").replacingOccurrences(of: "      isOnline: Bool?\n", with: "      isOnline: Bool?\n      nickname: String?\n")
            }
            try yaml.write(to: schema, atomically: true, encoding: .utf8)
        }

        func pipeline(_ files: InputFiles, target: TemplateSet.Target = .store) -> GenerationPipeline {
            GenerationPipeline(
                .init(
                    schemas: [schema.path], output: folder.appendingPathComponent("Generated").path, migrations: migrations.path, allowDestructive: true,
                    cacheFolder: folder.appendingPathComponent(".cache").path, target: target, allowIncompleteStages: true),
                files: files)
        }

        /// Every migration file the project had before the run.
        var migrationFiles: [String] {
            let root = migrations.path
            return ((FileManager.default.enumerator(atPath: root)?.allObjects as? [String]) ?? []).map { root + "/" + $0 }.filter {
                var isFolder: ObjCBool = false
                return FileManager.default.fileExists(atPath: $0, isDirectory: &isFolder) && !isFolder.boolValue
            }
        }
    }

    static func counts(_ reads: [String]) -> [String: Int] { reads.reduce(into: [:]) { $0[$1, default: 0] += 1 } }

    @Test func aNewVersionReadsEachInputOnce() throws {
        let project = try Project(bumped: true)
        let before = project.migrationFiles
        let files = InputFiles()
        let report = project.pipeline(files).run(.write)
        guard case .generated(_, let migrations, _) = report.outcome else {
            Issue.record("expected generated, got \(report.outcome): \(report.diagnostics)")
            return
        }
        #expect(migrations.count == 2, "one new migration per dialect")
        let reads = Self.counts(files.diskReads)
        #expect(reads[project.schema.path] == 1, "\(files.diskReads)")
        for file in before {
            // The manifests the run rewrote are read again for the next run's digest.
            let expected = file.hasSuffix("/migrations.sum") ? 2 : 1
            #expect(reads[file] == expected, "\(file) read \(reads[file] ?? 0) times")
        }
        // Files the run wrote are read once, after writing, for the digest; none twice.
        #expect(reads.filter { $0.value > 1 && !$0.key.hasSuffix("/migrations.sum") && !$0.key.hasSuffix("/") }.isEmpty, "\(reads.filter { $0.value > 1 })")
    }

    @Test func swiftDataHistoryReadsEachInputOnce() throws {
        let project = try Project(bumped: false)
        let before = project.migrationFiles
        let files = InputFiles()
        let report = project.pipeline(files, target: .swiftdata).run(.check)
        guard case .checked = report.outcome else {
            Issue.record("expected checked, got \(report.outcome): \(report.diagnostics)")
            return
        }
        let reads = Self.counts(files.diskReads)
        #expect(reads[project.schema.path] == 1)
        // The history reads the recorded schema texts and snapshots the plan read too.
        #expect(before.contains { $0.hasSuffix(".schema.yaml") })
        for file in before {
            #expect((reads[file] ?? 0) <= 1, "\(file) read \(reads[file] ?? 0) times")
        }
        #expect(reads.values.allSatisfy { $0 == 1 }, "\(reads.filter { $0.value > 1 })")
    }

    /// The real command, its file opens traced by strace: nothing bypasses the shared reader.
    /// Each schema and migration file is opened once for reading, the rewritten manifests
    /// twice (before and after the write).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: Self.strace), Self.straceMissing))
    func theCommandOpensEachInputOnce() throws {
        let project = try Project(bumped: true)
        let before = project.migrationFiles
        let trace = project.folder.appendingPathComponent("opens.trace").path
        let schemagen = BuiltTool("schemagen").url.path
        let run = try BuiltTool(path: Self.strace).run(
            [
                "-f", "-qq", "-e", "trace=open,openat", "-o", trace, schemagen, "generate", "--schema", project.schema.path, "--output",
                project.folder.appendingPathComponent("Generated").path, "--migrations", project.migrations.path, "--allow-destructive", "--cache-dir",
                project.folder.appendingPathComponent(".cache").path,
            ], in: project.folder)
        #expect(run.status == 0, "\(run.error)")
        // `openat(AT_FDCWD, "/path", O_RDONLY|O_CLOEXEC) = 3`: successful opens for reading only.
        let opens = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").compactMap { line -> String? in
            guard !line.contains("O_WRONLY"), !line.contains("O_RDWR"), !line.contains("= -1"), let start = line.firstIndex(of: "\"") else { return nil }
            let rest = line[line.index(after: start)...]
            return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
        }
        let reads = Self.counts(opens)
        #expect(reads[project.schema.path] == 1, "the schema file opened \(reads[project.schema.path] ?? 0) times")
        for file in before {
            let expected = file.hasSuffix("/migrations.sum") ? 2 : 1
            #expect(reads[file] == expected, "\(file) opened \(reads[file] ?? 0) times")
        }
    }

    static let strace = "/usr/bin/strace"
    static let straceMissing: Comment = "SKIPPED: strace is not installed; `sh .ci/install-deps --tests` installs it"

    /// The reader itself: a second ask is answered from memory, and a forgotten file is read
    /// again, as it now is.
    @Test func aFileIsReadOnceUntilForgotten() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("a.txt").path
        try "one".write(toFile: path, atomically: true, encoding: .utf8)
        let files = InputFiles()
        #expect(files.bytes(atPath: path) == Array("one".utf8))
        try "two".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(files.bytes(atPath: path) == Array("one".utf8))
        #expect(files.names(inFolder: folder.path) == ["a.txt"])
        files.forget(folder: folder.path, files: ["a.txt"])
        #expect(files.bytes(atPath: path) == Array("two".utf8))
        #expect(files.diskReads == [path, folder.path + "/", path])
        #expect(files.bytes(atPath: folder.path + "/missing") == nil)
    }
}
