import Foundation
import TestSupport
import Testing

/// Code written from the previous release's docs keeps compiling: every Swift block of README.md
/// and docs/ as they were at c4d148e (Tests/Fixtures/PreviousRelease) type-checks against
/// today's modules, imported as those docs imported them: `PersistentStore` without naming an
/// engine, `Migrator` with `SQLiteKit`. Deprecation warnings are expected; an error fails.
@Suite(.blocking) struct PreviousReleaseTests {
    static let folder = repositoryRoot.appendingPathComponent("Tests/Fixtures/PreviousRelease/snippets")

    static let snippets: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".snippet") }.sorted()

    /// What the snippets of that release were checked with: no engine module among them.
    static let imports = ["Foundation", "ExampleModels", "PersistentStore", "Migrator", "SQLiteKit", "SchemaMetadata", "FieldEncryption"]

    @Test func theFixtureHoldsThatReleasesBlocks() {
        #expect(Self.snippets.count == 23, "\(Self.snippets)")
    }

    @Test(arguments: snippets)
    func aBlockOfThePreviousDocsStillCompiles(_ name: String) async throws {
        let code = try String(contentsOf: Self.folder.appendingPathComponent(name), encoding: .utf8)
        let lines = code.components(separatedBy: "\n")
        let lifted = lines.filter { $0.hasPrefix("import ") }.map { String($0.dropFirst("import ".count)) }
        let modules = (Self.imports + lifted).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        let source =
            modules.map { "import \($0)" }.joined(separator: "\n") + "\n\n" + SnippetCompilationTests.prelude
            + "func snippet() async throws {\n\(SnippetCompilationTests.locals)\n    do {\n"
            + lines.filter { !$0.hasPrefix("import ") }.map { "        " + $0 }.joined(separator: "\n") + "\n    }\n}\n"
        let file = temporaryFolder().appendingPathComponent("Snippet.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        let run = try await offThePool {
            SnippetCompilationTests.compilers.wait()
            defer { SnippetCompilationTests.compilers.signal() }
            return try runProgram(
                "swiftc", ["-typecheck", "-swift-version", "6", "-I", SnippetCompilationTests.modules.path] + SnippetCompilationTests.systemLibraryFlags + [file.path],
                in: file.deletingLastPathComponent())
        }
        #expect(run.status == 0, "\(name), written from the previous release's docs, no longer compiles:\n\(run.output)")
    }
}
