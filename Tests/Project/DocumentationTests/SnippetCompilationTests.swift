import Foundation
import TestSupport
import Testing

/// Every Swift block of README.md and docs/ type-checks against this package, so the docs cannot
/// drift from the code: statements against the modules the build already compiled (`swiftc
/// -typecheck`, with the names a snippet assumes declared around it), and package manifests
/// through `swift package dump-package`.
@Suite(.blocking) struct SnippetCompilationTests {
    struct Snippet: CustomTestStringConvertible, Sendable {
        let file: String
        let line: Int
        let code: String
        var testDescription: String { "\(file):\(line)" }
        var isManifest: Bool { code.hasPrefix("// swift-tools-version") || code.hasPrefix(".target(") }
    }

    /// The ```swift swiftdata blocks of each document, joined: code for Apple's frameworks,
    /// type-checked against the SwiftData shim as one file per document.
    static let swiftDataPages: [Snippet] = documents.compactMap { file -> Snippet? in
        guard let text = try? String(contentsOfFile: repositoryRoot.path + "/" + file, encoding: .utf8) else { return nil }
        var blocks: [String] = []
        var current: [String]?
        for line in text.components(separatedBy: "\n") {
            if current == nil, line == "```swift swiftdata" {
                current = []
            } else if let lines = current, line == "```" {
                blocks.append(lines.joined(separator: "\n"))
                current = nil
            } else if current != nil {
                current?.append(line)
            }
        }
        guard !blocks.isEmpty else { return nil }
        // Imports lifted to the top, as the blocks of one page make one file.
        let all = blocks.joined(separator: "\n\n").components(separatedBy: "\n")
        let imports = Array(Set(all.filter { $0.hasPrefix("import ") })).sorted()
        return Snippet(file: file, line: 1, code: (imports + all.filter { !$0.hasPrefix("import ") }).joined(separator: "\n"))
    }

    static let documents =
        ["README.md"]
        + ((try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.path + "/docs")) ?? [])
        .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }

    /// The ```swift blocks of the documents, with the line each starts on.
    static let snippets: [Snippet] = documents.flatMap { file -> [Snippet] in
        guard let text = try? String(contentsOfFile: repositoryRoot.path + "/" + file, encoding: .utf8) else { return [] }
        var found: [Snippet] = []
        var current: [String]?
        var start = 0
        for (offset, line) in text.components(separatedBy: "\n").enumerated() {
            if current == nil, line == "```swift" {
                current = []
                start = offset + 2
            } else if let lines = current, line == "```" {
                found.append(Snippet(file: file, line: start, code: lines.joined(separator: "\n")))
                current = nil
            } else if current != nil {
                current?.append(line)
            }
        }
        return found
    }

    /// Modules every snippet may use, and the names snippets assume from their surroundings.
    static let imports = ["Foundation", "ExampleModels", "PersistentStore", "PersistentStoreSQLite", "PersistentStorePostgres", "Migrator", "SQLiteKit", "SchemaMetadata", "FieldEncryption"]

    static let prelude = """
        /// What a snippet assumes exists; never run, only type-checked.
        func context<T>() -> T { fatalError("documentation context") }
        func render<T>(_ value: T) {}
        func log(_ text: String) {}
        /// The models a client's build-tool plugin generates (docs/templates.md), stood in for.
        enum LibrarySchema {
            static var descriptor: SchemaDescriptor { FlightsSchema.descriptor }
            static var migrations: [EmbeddedMigration] { FlightsSchema.migrations }
        }
        /// The journal app's generated models (docs/templates.md), stood in for.
        enum JournalSchema {
            static var descriptor: SchemaDescriptor { TodoSchema.descriptor }
            static var migrations: [EmbeddedMigration] { TodoSchema.migrations }
        }

        """

    static let locals = """
            let store: Store = context(), users: Store = context(), todo: Store = context(), tasks: Store = context()
            let path = "app.sqlite"
            let airports: [Airport] = context(), flights: [Flight] = context()
            var batch: [Flight] = context()
            let sfo: Airport = context(), airport: Airport = context(), flight: Flight = context()
            let car: Car = context(), mechanic: Mechanic = context(), task: Task = context(), list: TaskList = context()
            let body = Data(), savedToken: HistoryToken = context(), saved: HistoryToken = context()
            let origin: Int64? = nil, enRouteOnly = false
        """

    /// The Swift file a snippet becomes: its imports lifted, its statements in a scope of their
    /// own inside an async throwing function, so they may shadow the context's names.
    static func source(of snippet: Snippet) -> String {
        let lines = snippet.code.components(separatedBy: "\n")
        // A client's own models modules (`import JournalModels`) are stood in for by ExampleModels
        // and the prelude.
        let lifted = lines.filter { $0.hasPrefix("import ") }.map { String($0.dropFirst("import ".count)) }.filter { !$0.hasSuffix("Models") }
        let body = lines.filter { !$0.hasPrefix("import ") }
        let modules = (imports + lifted).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        return modules.map { "import \($0)" }.joined(separator: "\n") + "\n\n" + prelude
            + "// \(snippet.file):\(snippet.line)\nfunc snippet() async throws {\n\(locals)\n    do {\n"
            + body.map { "        " + $0 }.joined(separator: "\n") + "\n    }\n}\n"
    }

    /// The build folder's compiled modules, found from the test binary's path.
    static var modules: URL {
        BuiltTool("migrate").url.deletingLastPathComponent().appendingPathComponent("Modules")
    }

    /// Compiler flags for the system-library modules the runtime imports.
    static let systemLibraryFlags: [String] =
        ["CSQLite", "CCrypto", "CYAML", "CPostgreSQL", "CZlib"].flatMap { ["-I", sourceFolder(of: $0).path] }
        + (pkgConfig(["--cflags-only-I", "libpq", "sqlite3", "libcrypto", "yaml-0.1", "zlib"]) ?? "").split(separator: " ").flatMap { ["-Xcc", String($0)] }

    static func pkgConfig(_ arguments: [String]) -> String? {
        (try? runProgram("pkg-config", arguments, in: repositoryRoot)).flatMap { $0.status == 0 ? $0.output.trimmingCharacters(in: .whitespacesAndNewlines) : nil }
    }

    @Test func theDocumentsHaveSnippets() {
        #expect(Self.snippets.count >= 20, "\(Self.snippets.map(\.testDescription))")
        #expect(Self.snippets.contains { $0.file == "docs/runtime.md" && $0.code.contains("store.history()") }, "the API overview is among them")
    }

    @Test(arguments: snippets.filter { !$0.isManifest })
    func aSnippetTypeChecks(_ snippet: Snippet) async throws {
        let folder = temporaryFolder()
        let file = folder.appendingPathComponent("Snippet.swift")
        try Self.source(of: snippet).write(to: file, atomically: true, encoding: .utf8)
        // The compiler is waited for on a thread of its own: dozens of these at once would hold
        // every thread of the cooperative pool that the suite's async tests run on. Two at a
        // time, as the pool ran them: each takes hundreds of megabytes.
        let run = try await offThePool {
            Self.compilers.wait()
            defer { Self.compilers.signal() }
            return try runProgram("swiftc", ["-typecheck", "-swift-version", "6", "-I", Self.modules.path] + Self.systemLibraryFlags + [file.path], in: folder)
        }
        #expect(run.status == 0, "\(snippet.file):\(snippet.line) does not compile against the package:\n\(run.output)")
    }

    /// Compilers allowed to run at once.
    static let compilers = DispatchSemaphore(value: 2)

    @Test(arguments: swiftDataPages)
    func swiftDataBlocksTypeCheckAgainstTheShim(_ page: Snippet) async throws {
        let check = try await offThePool { try SwiftDataShim.typecheck(["Page.swift": page.code]) }
        #expect(check.passed, "the swiftdata blocks of \(page.file) do not type-check against the SwiftData shim:\n\(check.output)")
    }

    @Test func theAppleTargetsPageHasCheckedBlocks() {
        #expect(Self.swiftDataPages.contains { $0.file == "docs/apple-platforms.md" && $0.code.contains("SchemaMigrationPlan") })
    }

    @Test(arguments: snippets.filter(\.isManifest))
    func aManifestIsValid(_ snippet: Snippet) async throws {
        let folder = temporaryFolder()
        let manifest =
            snippet.code.hasPrefix("// swift-tools-version")
            ? snippet.code
            : """
            // swift-tools-version: 6.1
            import PackageDescription

            let package = Package(
                name: "Client",
                dependencies: [.package(name: "SchemaToolkit", path: "\(repositoryRoot.path)")],
                targets: [
            \(snippet.code)
                ]
            )
            """
        try manifest.write(to: folder.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        let run = try await offThePool { try runProgram("swift", ["package", "dump-package"], in: folder) }
        #expect(run.status == 0, "\(snippet.file):\(snippet.line) is not a valid manifest:\n\(run.output)")
    }

    /// Every public type and every entry point of `PersistentStore` is named in
    /// docs/runtime.md: a new one the guide does not mention fails here.
    @Test func theRuntimeGuideNamesEveryPublicTypeAndEntryPoint() throws {
        let guide = try String(contentsOfFile: repositoryRoot.path + "/docs/runtime.md", encoding: .utf8)
        let folder = sourceFolder(of: "PersistentStoreCore").path
        let files = swiftFiles(under: folder)
        var names: Set<String> = []
        let declaration = /public (?:final |nonisolated |static )*(?:struct|enum|class|actor|protocol|func|var) ([A-Za-z_][A-Za-z0-9_]*)/
        for file in files {
            let text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
            for match in text.matches(of: declaration) { names.insert(String(match.1)) }
        }
        // Conformances the compiler asks for, not API a reader calls.
        let protocolRequirements: Set<String> = ["description", "encode", "evaluate", "build_localizedStandardContains", "rawValue"]
        let missing = names.subtracting(protocolRequirements).filter { !guide.contains($0) }.sorted()
        #expect(names.count > 40, "\(names.count) public names found")
        #expect(missing.isEmpty, "docs/runtime.md does not name: \(missing)")
    }
}
