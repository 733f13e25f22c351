import Foundation
import TestSupport
import Testing

/// Code written from the previous releases' docs keeps compiling: every Swift block of
/// README.md and docs/ as they were at each release (Tests/Fixtures/PreviousRelease for 0.1.0,
/// c4d148e; Tests/Fixtures/PreviousRelease-0.2.0 for 0.2.0, 3e986f0) type-checks against
/// today's modules, imported as those docs imported them: 0.1.0's `PersistentStore` without
/// naming an engine, `Migrator` with `SQLiteKit`; 0.2.0's with both engines' adapters.
/// Deprecation warnings are expected; an error fails.
@Suite(.blocking) struct PreviousReleaseTests {
    /// One release's blocks and the modules its docs were checked with.
    struct Release: Sendable {
        let name: String
        let folder: URL
        let imports: [String]
        let blocks: Int
        /// Whether a block that imports modules itself is checked with those alone.
        var ownImportsOnly = false

        var snippets: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".snippet") }.sorted() }
    }

    static let releases = [
        Release(
            name: "0.1.0", folder: repositoryRoot.appendingPathComponent("Tests/Fixtures/PreviousRelease/snippets"),
            imports: ["Foundation", "ExampleModels", "PersistentStore", "Migrator", "SQLiteKit", "SchemaMetadata", "FieldEncryption"], blocks: 23),
        Release(
            name: "0.2.0", folder: repositoryRoot.appendingPathComponent("Tests/Fixtures/PreviousRelease-0.2.0/snippets"),
            imports: [
                "Foundation", "ExampleModels", "PersistentStore", "PersistentStoreSQLite", "PersistentStorePostgres", "Migrator", "SQLiteKit", "SchemaMetadata",
                "FieldEncryption",
            ], blocks: 44, ownImportsOnly: true),
    ]

    /// Each block, named with its release.
    static let snippets: [String] = releases.flatMap { release in release.snippets.map { "\(release.name)/\($0)" } }

    @Test func theFixturesHoldThoseReleasesBlocks() {
        for release in Self.releases {
            #expect(release.snippets.count == release.blocks, "\(release.name): \(release.snippets)")
        }
    }

    @Test(arguments: snippets)
    func aBlockOfThePreviousDocsStillCompiles(_ name: String) async throws {
        let parts = name.split(separator: "/", maxSplits: 1).map(String.init)
        let release = try #require(Self.releases.first { $0.name == parts[0] })
        let code = try String(contentsOf: release.folder.appendingPathComponent(parts[1]), encoding: .utf8)
        let lines = code.components(separatedBy: "\n")
        // A client's own models modules (`import JournalModels`) are stood in for, as today's docs' are.
        let lifted = lines.filter { $0.hasPrefix("import ") }.map { String($0.dropFirst("import ".count)) }.filter { !$0.hasSuffix("Models") }
        // A block that names its modules gets those alone (with what the context needs), as an
        // app built from it would: one that imports one engine's adapter sees only that engine.
        let base = release.ownImportsOnly && !lifted.isEmpty ? ["Foundation", "ExampleModels", "SchemaMetadata", "PersistentStoreCore"] : release.imports
        let modules = (base + lifted).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
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
