import Foundation
import TestSupport
import Testing

/// The modules an application links document their public API as DocC renders it
/// (`docs/api-reference.sh`): every public declaration has a `///` summary, every public
/// initializer and top-level function an example (an indented code line in its comment), and
/// each entry point an application starts from shows one too.
@Suite struct DocumentationCoverageTests {
    static let runtimeModules = ["PersistentStoreCore", "PersistentStoreSQLite", "PersistentStorePostgres", "SchemaMetadata", "MigratorCore", "MigratorSQLite", "MigratorPostgres"]

    /// Every module an application may link: each target folder of `Sources/Runtime` and
    /// `Sources/Engines` (system-library targets, which hold no Swift, aside).
    static var linkedModules: [String] {
        ["Runtime", "Engines"].flatMap { layer -> [String] in
            let folder = repositoryRoot.appendingPathComponent("Sources").appendingPathComponent(layer).path
            return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted().filter { !swiftFiles(under: folder + "/" + $0).isEmpty }
        }
    }

    struct Declaration {
        let file: String
        let line: Int
        let text: String
        let comment: [String]
        /// Spaces before the declaration: 0 for a top-level one.
        var indent = 0
    }

    /// Every `public` or `open` declaration of a module's sources (extensions themselves aside),
    /// every case of a public enum and every requirement of a public protocol, with the doc
    /// comment above it (attributes skipped).
    static func declarations(of module: String) throws -> [Declaration] {
        let folder = sourceFolder(of: module).path
        let files = swiftFiles(under: folder)
        let declaration = /^(@\w+(\([^)]*\))?\s+)*(public|open)\s/
        let container = /\b(enum|protocol)\b/
        let requirement = /^(func|var|static|init|associatedtype|mutating|subscript)\b/
        var found: [Declaration] = []
        for file in files {
            let lines = try String(contentsOfFile: folder + "/" + file, encoding: .utf8).components(separatedBy: "\n")
            // Open public enums and protocols: their indentation and which they are.
            var open: [(indent: Int, isEnum: Bool)] = []
            for (index, line) in lines.enumerated() {
                let text = line.trimmingCharacters(in: .whitespaces)
                let indent = line.prefix { $0 == " " }.count
                if let innermost = open.last, text.hasPrefix("}"), indent == innermost.indent { open.removeLast() }
                var counts = false
                if text.firstMatch(of: declaration) != nil, !text.hasPrefix("public import"), !text.contains("extension ") {
                    counts = true
                    if let kind = text.firstMatch(of: container), text.hasSuffix("{") { open.append((indent, kind.1 == "enum")) }
                } else if let innermost = open.last, indent == innermost.indent + 4 {
                    counts = innermost.isEnum ? text.hasPrefix("case ") : text.firstMatch(of: requirement) != nil
                }
                guard counts else { continue }
                var above = index - 1
                // Attribute lines only: `@inlinable public init(...)` above is a declaration of its own.
                while above >= 0, lines[above].trimmingCharacters(in: .whitespaces).hasPrefix("@"), lines[above].firstMatch(of: declaration) == nil,
                    !lines[above].contains(" func "), !lines[above].contains(" init")
                {
                    above -= 1
                }
                var comment: [String] = []
                while above >= 0, lines[above].trimmingCharacters(in: .whitespaces).hasPrefix("///") {
                    comment.insert(lines[above].trimmingCharacters(in: .whitespaces), at: 0)
                    above -= 1
                }
                found.append(Declaration(file: "\(module)/\(file)", line: index + 1, text: text, comment: comment, indent: indent))
            }
        }
        return found
    }

    @Test func atLeastNinetyPercentOfTheRuntimePublicAPIIsDocumented() throws {
        let all = try Self.runtimeModules.flatMap(Self.declarations)
        #expect(all.count > 500, "the scan found the runtime's public declarations, enum cases and protocol requirements")
        let undocumented = all.filter(\.comment.isEmpty)
        let share = Double(all.count - undocumented.count) / Double(all.count)
        let list = undocumented.map { "\($0.file):\($0.line): \($0.text)" }.joined(separator: "\n")
        #expect(share >= 0.9, "\(Int(share * 100))% documented; undocumented:\n\(list)")
    }

    /// Every public declaration of every module an application links has a `///` summary, and
    /// every public initializer and top-level function an example (an indented code line).
    @Test func everyLinkedPublicDeclarationIsDocumentedAndEveryInitializerShowsAnExample() throws {
        let modules = Self.linkedModules
        #expect(modules.contains("SQLDialects") && modules.contains("FieldEncryption") && modules.contains("PostgresKit"), "\(modules)")
        let all = try modules.flatMap(Self.declarations)
        #expect(all.count > 1000, "the scan found the public declarations")
        let undocumented = all.filter(\.comment.isEmpty).map { "\($0.file):\($0.line): \($0.text)" }
        #expect(undocumented.isEmpty, "no /// summary:\n\(undocumented.joined(separator: "\n"))")
        let needsExample = all.filter { declaration in
            declaration.text.firstMatch(of: /^(@\w+(\([^)]*\))?\s+)*(public|open)\s+(convenience\s+)?init[(<?]/) != nil
                || (declaration.indent == 0 && declaration.text.firstMatch(of: /\bfunc\b/) != nil)
        }
        #expect(needsExample.count > 80, "the scan found the public initializers")
        let withoutExample = needsExample.filter { !$0.comment.contains { $0.hasPrefix("///     ") && $0.count > 8 } }.map { "\($0.file):\($0.line): \($0.text)" }
        #expect(withoutExample.isEmpty, "no example:\n\(withoutExample.joined(separator: "\n"))")
    }

    /// The calls an application starts from, each shown in use.
    static let entryPoints: [(module: String, declaration: String)] = [
        ("PersistentStoreSQLite", "public init(path givenPath"), ("PersistentStorePostgres", "public init(url: String"), ("PersistentStoreCore", "public func insert<M: PersistentModel>(_ model: M)"),
        ("PersistentStoreCore", "public func insert<M: PersistentModel>(_ models: consuming [M])"), ("PersistentStoreCore", "public func transaction<"),
        ("PersistentStoreCore", "public func read<"), ("PersistentStoreCore", "public func deleteAll<"), ("PersistentStoreCore", "public func fetch<M: PersistentModel>("),
        ("PersistentStoreCore", "public func forEach<"), ("PersistentStoreCore", "public func count<"), ("PersistentStoreCore", "public func delete<M: PersistentModel>(_ type"),
        ("PersistentStoreCore", "public func update<"), ("PersistentStoreCore", "public func fetch<M: Joinable>("), ("PersistentStoreCore", "public func delete<M: PersistentModel>(_ model: M)"),
        ("PersistentStoreCore", "public func search<"), ("PersistentStoreCore", "public func reencrypt("), ("PersistentStoreCore", "public func history("),
        ("PersistentStoreCore", "public func deleteHistory("), ("PersistentStoreCore/History/Store+Observation.swift", "public func changes("),
        ("PersistentStoreCore", "public func observe<M: PersistentModel>("), ("PersistentStoreCore", "public func claim<"),
        ("PersistentStoreCore", "public func insert<M: PersistentModel>(_ model: M, onConflict"),
        ("PersistentStoreCore", "public func observeCount<"), ("MigratorCore/Migrator.swift", "public init("), ("MigratorCore", "public func up("), ("MigratorCore", "public func down("),
        ("MigratorCore", "public func baseline("), ("MigratorCore", "public func repair("), ("MigratorCore", "public func status("), ("MigratorCore", "public func validate("),
        ("MigratorSQLite", "public init("), ("MigratorSQLite", "public convenience init(connection: SQLiteConnection, schema: String, embedded"),
        ("MigratorPostgres", "public init("), ("SchemaMetadata", "public init(name: String, version: Int"),
    ]

    @Test func everyEntryPointShowsAnExample() throws {
        var declarations: [String: [Declaration]] = [:]
        for module in Self.runtimeModules { declarations[module] = try Self.declarations(of: module) }
        for (module, prefix) in Self.entryPoints {
            // A module, or a module's file ("MigratorCore/Migrator.swift") where the prefix is common.
            let moduleName = String(module.split(separator: "/")[0])
            let file = module.contains("/") ? module : nil
            guard let entry = declarations[moduleName]?.first(where: { $0.text.hasPrefix(prefix) && (file == nil || $0.file == file) }) else {
                Issue.record("\(module) has no declaration starting '\(prefix)'")
                continue
            }
            let example = entry.comment.contains { $0.hasPrefix("///     ") && $0.count > 8 }
            #expect(example, "\(entry.file):\(entry.line): \(entry.text) has no example in its doc comment")
        }
    }
}
