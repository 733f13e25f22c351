import CodeGeneration
import Diagnostics
import Foundation
import MigrationFiles
import SchemaExport
import SchemaKit
import TestSupport
import Testing

@testable import SchemagenPipeline

/// Renaming identifiers across a chain of versions, in both Apple outputs. Core Data maps a
/// source property to the destination property with the same identifier (its name when it has
/// none), and migrates a store straight to the current model: every later version must say the
/// name the property had first, even once the schema drops `renamedFrom`.
@Suite struct RenamingIdentifierTests {
    /// `shelf` → `rack` → `bay` on Book, its `writer` relationship → `author`, and the Writer
    /// entity → Author, with `renamedFrom` dropped in version 4.
    static let texts = [
        """
        schema: Library
        version: 1
        entities:
          Writer:
            attributes:
              name: String
            relationships:
              books: {to: "[Book]", inverse: writer}
          Book:
            attributes:
              title: String
              shelf: String?
            relationships:
              writer: {to: Writer?, inverse: books}
        """,
        """
        schema: Library
        version: 2
        entities:
          Author:
            renamedFrom: Writer
            attributes:
              name: String
            relationships:
              books: {to: "[Book]", inverse: author}
          Book:
            attributes:
              title: String
              rack: {type: String?, renamedFrom: shelf}
            relationships:
              author: {to: Author?, inverse: books, renamedFrom: writer}
        """,
        """
        schema: Library
        version: 3
        entities:
          Author:
            attributes:
              name: String
            relationships:
              books: {to: "[Book]", inverse: author}
          Book:
            attributes:
              title: String
              bay: {type: String?, renamedFrom: rack}
            relationships:
              author: {to: Author?, inverse: books}
        """,
        """
        schema: Library
        version: 4
        entities:
          Author:
            attributes:
              name: String
              country: String?
            relationships:
              books: {to: "[Book]", inverse: author}
          Book:
            attributes:
              title: String
              bay: String?
            relationships:
              author: {to: Author?, inverse: books}
        """,
    ]

    static func versions(_ texts: [String] = texts) throws -> [Schema] {
        try texts.map { text in try #require(SchemaLoader.load(source: SourceFile(path: "Library.yaml", text: text)).schema, "\(text)") }
    }

    /// The `elementID` of each entity and property of one exported version, by `Entity` or
    /// `Entity.member`.
    static func elementIDs(_ contents: String) -> [String: String] {
        var found: [String: String] = [:]
        var entity = ""
        for line in contents.split(separator: "\n") {
            func value(_ key: String) -> String? {
                guard let start = line.range(of: " \(key)=\"") else { return nil }
                return String(line[start.upperBound...].prefix { $0 != "\"" })
            }
            let trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("<entity ") {
                entity = value("name") ?? ""
                if let id = value("elementID") { found[entity] = id }
            } else if trimmed.hasPrefix("<attribute ") || trimmed.hasPrefix("<relationship "), let id = value("elementID"), let name = value("name") {
                found["\(entity).\(name)"] = id
            }
        }
        return found
    }

    @Test func everyVersionAfterARenameSaysTheFirstNameInCoreData() throws {
        let bundle = CoreDataExporter.bundle(try Self.versions(), name: "Library")
        func ids(_ version: Int) throws -> [String: String] {
            Self.elementIDs(try #require(bundle.first { $0.path == "\(version == 1 ? "Library" : "Library \(version)").xcdatamodel/contents" }?.contents))
        }
        #expect(try ids(1) == [:])
        let renamed = ["Author": "Writer", "Book.rack": "shelf", "Book.author": "writer"]
        #expect(try ids(2) == renamed)
        #expect(try ids(3) == ["Author": "Writer", "Book.bay": "shelf", "Book.author": "writer"], "bay keeps rack's identifier, shelf")
        #expect(try ids(4) == ["Author": "Writer", "Book.bay": "shelf", "Book.author": "writer"], "kept once renamedFrom is gone")
        #expect(CoreDataLightweightCheck.findings(try Self.versions(), bundle: "Library").isEmpty)
    }

    @Test func everyVersionAfterARenameSaysTheFirstNameInSwiftData() throws {
        let output = try Generator.generateSwiftData(versions: try Self.versions(), sourceFile: "Library.yaml", templates: try TemplateSet.defaults(for: .swiftdata))
        let files = Dictionary(uniqueKeysWithValues: output.files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) })
        func originalNames(_ version: Int) throws -> [String] {
            let text = try #require(files["LibrarySchemaV\(version).swift"], "\(files.keys.sorted())")
            return text.components(separatedBy: "originalName: \"").dropFirst().map { String($0.prefix { $0 != "\"" }) }.sorted()
        }
        #expect(try originalNames(1) == [])
        #expect(try originalNames(2) == ["shelf", "writer"])
        #expect(try originalNames(3) == ["shelf", "writer"], "bay says shelf, not rack")
        #expect(try originalNames(4) == ["shelf", "writer"], "kept once renamedFrom is gone")
        #expect(!output.notes.contains { $0.message.contains("renaming identifier") })
    }

    /// A new attribute named as a renamed one was first: the two share an identifier, and both
    /// outputs say so at the new attribute.
    @Test func aNewMemberUnderARenamedOnesFirstNameIsReported() throws {
        var texts = Self.texts
        texts[3] = texts[3].replacingOccurrences(of: "      bay: String?\n", with: "      bay: String?\n      shelf: Int?\n")
        let versions = try Self.versions(texts)
        let (_, clashes) = RenamingIdentifiers.chain(versions)
        #expect(clashes.map { "\($0.version) \($0.first) \($0.second) \($0.identifier)" } == ["4 Book.bay Book.shelf shelf"])
        let findings = CoreDataLightweightCheck.findings(versions, bundle: "Library")
        #expect(findings.contains { $0.code == "coredata-renaming-identifier-clash" && $0.message.contains("Book.shelf") && $0.location?.line != nil })
        let output = try Generator.generateSwiftData(versions: versions, sourceFile: "Library.yaml", templates: try TemplateSet.defaults(for: .swiftdata))
        #expect(output.notes.contains { $0.subject == "Book.shelf" && $0.message.contains("renaming identifier 'shelf'") })
    }

    /// A version an earlier release generated and recorded, whose `originalName:` came from
    /// `renamedFrom` alone, is not a changed released version: the identifiers are outside the
    /// version hash, and the carried ones are the fix.
    @Test func releasedVersionsWrittenWithDeclaredIdentifiersStillMatch() throws {
        let project = try plannedHistory(texts: Self.texts, name: "Library")
        let migrations = project.appendingPathComponent("Migrations")
        let folder = migrations.appendingPathComponent("Library")
        func run() -> GenerationPipeline.Report {
            GenerationPipeline(
                .init(
                    schemas: [project.appendingPathComponent("Schemas").path], output: project.appendingPathComponent("AppModels").path,
                    migrations: migrations.path, cacheFolder: temporaryFolder().path, target: .swiftdata, allowIncompleteStages: true)
            ).run(.write)
        }
        guard case .generated = run().outcome else {
            Issue.record("the first run generates")
            return
        }
        // Version 3's record as an earlier release wrote it: `originalName: "rack"`.
        let earlier = try Generator.generateSwiftData(
            versions: try Self.versions(), sourceFile: "Library.yaml", templates: try TemplateSet.defaults(for: .swiftdata), earlierForms: [.declaredRenamingIdentifiers])
        let old = try #require(earlier.files.first { $0.path.hasSuffix("/LibrarySchemaV3.swift") }?.contents)
        #expect(old.contains("originalName: \"rack\""))
        let entry = MigrationDirectory(path: folder.path).entries()[2]
        let record = folder.appendingPathComponent(entry.releasedModelsFile)
        try "LibrarySchemaV3.swift \(ReleasedSwiftDataModels.digest(old))\n".write(to: record, atomically: true, encoding: .utf8)
        try MigrationDirectory(path: folder.path).rehash()
        let again = run()
        guard case .generated = again.outcome else {
            Issue.record("the earlier release's record still matches, got \(again.outcome): \(again.diagnostics)")
            return
        }
        #expect(!again.diagnostics.contains("swiftdata-released-version-changed"), "\(again.diagnostics)")
        let now = try String(contentsOf: project.appendingPathComponent("AppModels/Library/LibrarySchemaV3.swift"), encoding: .utf8)
        #expect(now.contains("originalName: \"shelf\"") && !now.contains("\"rack\""))

        // Any other difference is still a change.
        try "LibrarySchemaV3.swift \(ReleasedSwiftDataModels.digest(old + "// edited\n"))\n".write(to: record, atomically: true, encoding: .utf8)
        try MigrationDirectory(path: folder.path).rehash()
        guard case .stopped = run().outcome else {
            Issue.record("a record that matches neither output stops generate")
            return
        }
    }
}
