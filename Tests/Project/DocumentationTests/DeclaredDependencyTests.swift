import Foundation
import TestSupport
import Testing

/// Package.swift tells the truth about the architecture: every target declares each of this
/// package's modules it imports, and imports each one it declares. SwiftPM builds a module it
/// finds through another target's dependencies, so an undeclared import compiles until the
/// build order changes; a declared one never imported hides what a layer really uses.
@Suite(.blocking) struct DeclaredDependencyTests {
    struct Target {
        let name: String
        let kind: String
        let path: String
        let dependencies: Set<String>
    }

    static func targets() throws -> [Target] {
        // A scratch folder of its own: the running `swift test` holds the package's `.build`.
        let dump = try standardOutput(of: "swift", ["package", "--scratch-path", temporaryFolder().path, "dump-package"])
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(dump.output.utf8)) as? [String: Any])
        let targets = try #require(manifest["targets"] as? [[String: Any]])
        return targets.compactMap { target in
            guard let name = target["name"] as? String, let kind = target["type"] as? String else { return nil }
            let folder = kind == "test" ? "Tests/" : "Sources/"
            let dependencies = (target["dependencies"] as? [[String: Any]] ?? []).compactMap { dependency -> String? in
                for key in ["byName", "target", "product"] {
                    if let value = dependency[key] as? [Any], let name = value.first as? String { return name }
                }
                return nil
            }
            return Target(name: name, kind: kind, path: target["path"] as? String ?? folder + name, dependencies: Set(dependencies))
        }
    }

    /// The modules a folder's Swift files import.
    static func imports(under path: String) -> Set<String> {
        let folder = repositoryRoot.appendingPathComponent(path).path
        let files = swiftFiles(under: folder)
        let line = /^\s*(?:@testable\s+|@preconcurrency\s+|@_exported\s+)?import\s+(?:(?:struct|enum|class|protocol|func|typealias|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)/.anchorsMatchLineEndings()
        var modules: Set<String> = []
        for file in files {
            guard let text = try? String(contentsOfFile: folder + "/" + file, encoding: .utf8) else { continue }
            for match in text.matches(of: line) { modules.insert(String(match.1)) }
        }
        return modules
    }

    @Test func everyTargetDeclaresWhatItImportsAndImportsWhatItDeclares() throws {
        let targets = try Self.targets()
        #expect(targets.count > 30, "dump-package listed the targets")
        let names = Set(targets.map(\.name))
        // Targets listed for what they build, not for an import: executables that tests run,
        // and the modules the documentation's snippets are type-checked against.
        let builtForTests = Set(targets.filter { $0.kind == "executable" }.map(\.name))
        let snippetModules: Set<String> = [
            "ExampleModels", "FieldEncryption", "Migrator", "MigratorCore", "MigratorPostgres", "MigratorSQLite", "PersistentStore", "PersistentStoreCore",
            "PersistentStoreSQLite", "PersistentStorePostgres", "PostgresKit", "SQLiteKit", "SchemaMetadata",
        ]
        for target in targets where ["regular", "executable", "test"].contains(target.kind) {
            let imported = Self.imports(under: target.path).intersection(names)
            let undeclared = imported.subtracting(target.dependencies)
            #expect(undeclared.isEmpty, "\(target.name) imports \(undeclared.sorted()) without declaring them in Package.swift")
            var unused = target.dependencies.intersection(names).subtracting(imported).subtracting(builtForTests)
            if target.name == "DocumentationTests" { unused.subtract(snippetModules) }
            // System-library targets are imported under their own names too.
            #expect(unused.isEmpty, "\(target.name) declares \(unused.sorted()) but imports none of them")
        }
    }

    /// docs/architecture.md's module table is Package.swift in words: every module, executable
    /// and plugin has a row (or several, whose lists add up), and the last column names exactly
    /// the targets it depends on (system libraries say so in words). A new dependency the table does not show fails.
    @Test func theArchitectureTableListsEachTargetsDependencies() throws {
        let targets = try Self.targets()
        let names = Set(targets.map(\.name))
        let guide = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        var rows: [String: Set<String>] = [:]
        for line in guide.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 5 else { continue }
            let named = cells[1].matches(of: /`([^`]+)`/).map { String($0.1) }.filter(names.contains)
            let listed = Set(cells[cells.count - 2].matches(of: /`([^`]+)`/).map { String($0.1) })
            // A target may take several rows (a long list goes on below): they add up.
            for name in named { rows[name, default: []].formUnion(listed) }
        }
        for target in targets where ["regular", "executable", "plugin", "system"].contains(target.kind) {
            guard let listed = rows[target.name] else {
                Issue.record("docs/architecture.md has no row for \(target.name)")
                continue
            }
            let declared = target.dependencies.intersection(names)
            #expect(
                listed == declared,
                "docs/architecture.md's row for \(target.name): only in the docs \(listed.subtracting(declared).sorted()), only in Package.swift \(declared.subtracting(listed).sorted())")
        }
    }
}
