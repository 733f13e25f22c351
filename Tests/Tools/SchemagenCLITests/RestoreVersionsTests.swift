import Foundation
import TestSupport
import Testing

/// `schemagen restore-versions`: the schema text of migrations planned before it was recorded,
/// from the commits that added them, checked against each migration's snapshot.
@Suite(.blocking) struct RestoreVersionsTests {
    let runner = SchemagenProcessTests()

    func git(_ arguments: [String], in folder: URL) throws {
        let run = try runProgram("git", ["-c", "user.name=Test", "-c", "user.email=test@example.com"] + arguments, in: folder)
        guard run.status == 0 else { throw Failure(description: "git \(arguments): \(run.output)") }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A project whose history was planned by an older schemagen: each version committed with its
    /// migration but without the migration's copy of the schema.
    func olderProject() throws -> URL {
        let project = temporaryFolder()
        try FileManager.default.createDirectory(at: project.appendingPathComponent("Schemas"), withIntermediateDirectories: true)
        try git(["init", "-q"], in: project)
        let schema = project.appendingPathComponent("Schemas/Library.yaml")
        for version in 1...3 {
            let text = try String(contentsOf: repositoryRoot.appendingPathComponent("Tests/Fixtures/LibraryHistory/v\(version).yaml"), encoding: .utf8)
            try text.write(to: schema, atomically: true, encoding: .utf8)
            let planned = try runner.schemagen(["generate", "--migrations-only", "--allow-destructive"], in: project)
            guard planned.status == 0 else { throw Failure(description: planned.error) }
            let folder = project.appendingPathComponent("Migrations/Library")
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".schema.yaml") {
                try FileManager.default.removeItem(at: folder.appendingPathComponent(file))
            }
            #expect(try runner.schemagen(["rehash", "Library"], in: project).status == 0)
            if version == 3 {
                // Committed with the next version's schema already in the file: git's text of
                // that commit is not the version its migration recorded.
                try text.replacingOccurrences(of: "version: 3", with: "version: 4").write(to: schema, atomically: true, encoding: .utf8)
            }
            try git(["add", "-A"], in: project)
            try git(["commit", "-q", "-m", "version \(version)"], in: project)
        }
        return project
    }

    @Test func restoresWhatGitHoldsAndRefusesWhatDoesNotMatch() async throws {
        let project = try await offThePool { try self.olderProject() }
        let run = try await offThePool { try self.runner.schemagen(["restore-versions", "--schema", "Schemas/Library.yaml"], in: project) }
        #expect(run.status == 1, "\(run.output)\(run.error)")
        let folder = project.appendingPathComponent("Migrations/Library")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".schema.yaml") }.sorted()
        #expect(files.count == 2 && files[0].hasPrefix("0001") && files[1].hasPrefix("0002"), "\(files)")
        for (index, file) in files.enumerated() {
            let restored = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            let original = try String(contentsOf: repositoryRoot.appendingPathComponent("Tests/Fixtures/LibraryHistory/v\(index + 1).yaml"), encoding: .utf8)
            #expect(restored == original)
        }
        #expect(run.output.contains("restored Migrations/Library/0001_create_library.schema.yaml from "), "\(run.output)")
        #expect(run.error.contains("0003_change_book.schema.yaml: error: not restored: the schema in"), "\(run.error)")
        #expect(run.error.contains("is version 4, but 0003_change_book.schema.json is version 3"), "\(run.error)")
        // The manifest lists the restored files: the folder validates.
        let validate = try await offThePool { try self.runner.schemagen(["validate"], in: project) }
        #expect(validate.status == 0, "\(validate.error)")
        // Outside a git work tree it says so.
        let elsewhere = temporaryFolder()
        try FileManager.default.createDirectory(at: elsewhere.appendingPathComponent("Schemas"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: project.appendingPathComponent("Schemas/Library.yaml"), to: elsewhere.appendingPathComponent("Schemas/Library.yaml"))
        let outside = try await offThePool { try self.runner.schemagen(["restore-versions", "--schema", "Schemas/Library.yaml"], in: elsewhere) }
        #expect(outside.status == 2 && outside.error.contains("not in a git work tree"), "\(outside.error)")
    }
}
