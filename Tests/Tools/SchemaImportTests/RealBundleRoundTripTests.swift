import Diagnostics
import Foundation
import SchemaExport
import SchemaKit
import TestSupport
import Testing

@testable import SchemaImport

/// Delta's and Mastodon's real model bundles (Tests/Fixtures/Import/CoreData, with their
/// licences): every version imported, then exported again, gives Core Data the same version
/// hash inputs (per Apple's "Understanding Versions": an entity's name and hash modifier; an
/// attribute's name, optionality, transience, type and hash modifier; a relationship's
/// destination, optionality, counts, delete rule, inverse and hash modifier) and keeps what the
/// apps rely on: each Transformable's transformer and class, attribute user info
/// (`attributeValueClassName`), each entity's class.
@Suite struct RealBundleRoundTripTests {
    static let bundles = ["Delta/Delta.xcdatamodeld", "Mastodon/CoreData.xcdatamodeld"]

    /// What Core Data's version hash and the apps see of one model, a line per entity and
    /// property, sorted.
    static func hashInputs(_ contents: String) throws -> [String] {
        guard case .success(let root) = XMLTree.parse(Array(contents.utf8)) else { throw Failure(description: "not XML") }
        var lines: [String] = []
        func value(_ element: XMLTree.Element, _ key: String, _ fallback: String = "-") -> String { element[key] ?? fallback }
        for entity in root.children(named: "entity") {
            let name = value(entity, "name")
            lines.append(
                "entity \(name) parent=\(value(entity, "parentEntity")) abstract=\(value(entity, "isAbstract", "NO")) modifier=\(value(entity, "versionHashModifier")) class=\(value(entity, "representedClassName"))"
            )
            for attribute in entity.children(named: "attribute") {
                let info = attribute.children(named: "userInfo").flatMap { $0.children(named: "entry") }
                    .filter { !($0["key"] ?? "").hasPrefix("schemagen.") }.map { "\(value($0, "key"))=\(value($0, "value"))" }.sorted()
                lines.append(
                    "attribute \(name).\(value(attribute, "name")) optional=\(value(attribute, "optional", "NO")) transient=\(value(attribute, "transient", "NO")) type=\(value(attribute, "attributeType")) "
                        + "modifier=\(value(attribute, "versionHashModifier")) transformer=\(value(attribute, "valueTransformerName")) class=\(value(attribute, "customClassName")) info=\(info)")
            }
            for relationship in entity.children(named: "relationship") {
                lines.append(
                    "relationship \(name).\(value(relationship, "name")) to=\(value(relationship, "destinationEntity")) optional=\(value(relationship, "optional", "NO")) many=\(value(relationship, "toMany", "NO")) "
                        + "min=\(value(relationship, "minCount", "0")) max=\(value(relationship, "maxCount", "0")) rule=\(value(relationship, "deletionRule")) inverse=\(value(relationship, "inverseName")) "
                        + "ordered=\(value(relationship, "ordered", "NO")) modifier=\(value(relationship, "versionHashModifier"))")
            }
        }
        return lines.sorted()
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    @Test(arguments: bundles)
    func everyVersionKeepsItsVersionHashInputs(_ bundle: String) throws {
        let path = ImportFixtures.folder.appendingPathComponent("CoreData/\(bundle)").path
        let versions = try CoreDataImporter.importBundle(at: path, history: true)
        #expect(versions.count > 8)
        for version in versions {
            let text = SchemaYAMLWriter.yaml(version.result.schema)
            let loaded = SchemaLoader.load(source: SourceFile(path: "\(version.name).yaml", bytes: Array(text.utf8)))
            let schema = try #require(loaded.schema, "\(version.name) does not validate: \(loaded.diagnostics.map(\.message))")
            let original = try String(contentsOfFile: path + "/\(version.name).xcdatamodel/contents", encoding: .utf8)
            let expected = try Self.hashInputs(original), actual = try Self.hashInputs(CoreDataExporter.model(schema))
            let missing = expected.filter { !actual.contains($0) }, extra = actual.filter { !expected.contains($0) }
            #expect(missing.isEmpty && extra.isEmpty, "\(bundle) \(version.name):\nlost:\n\(missing.prefix(12).joined(separator: "\n"))\ngained:\n\(extra.prefix(12).joined(separator: "\n"))")
        }
    }

    /// The renaming identifier of each entity and property of one model (`elementID`, or the
    /// older `renamingIdentifier`), by `Entity` or `Entity.member`.
    static func renamingIdentifiers(_ contents: String) throws -> [String: String] {
        guard case .success(let root) = XMLTree.parse(Array(contents.utf8)) else { throw Failure(description: "not XML") }
        var found: [String: String] = [:]
        for entity in root.children(named: "entity") {
            let name = entity["name"] ?? "-"
            if let identifier = entity["elementID"] ?? entity["renamingIdentifier"] { found[name] = identifier }
            for member in entity.children(named: "attribute") + entity.children(named: "relationship") {
                if let identifier = member["elementID"] ?? member["renamingIdentifier"] { found["\(name).\(member["name"] ?? "-")"] = identifier }
            }
        }
        return found
    }

    /// The bundle imported with its history and exported whole again says every renaming
    /// identifier the original does, in every version (Mastodon's `Status.visibilityRaw` says
    /// `visibility` from version 3 on).
    @Test(arguments: bundles)
    func everyVersionKeepsItsRenamingIdentifiers(_ bundle: String) throws {
        let path = ImportFixtures.folder.appendingPathComponent("CoreData/\(bundle)").path
        let versions = try CoreDataImporter.importBundle(at: path, history: true)
        let schemas = try versions.map { version in
            let text = SchemaYAMLWriter.yaml(version.result.schema)
            return try #require(SchemaLoader.load(source: SourceFile(path: "\(version.name).yaml", bytes: Array(text.utf8))).schema)
        }
        let exported = CoreDataExporter.bundle(schemas, name: "Export")
        var seen = 0
        for (version, schema) in zip(versions, schemas) {
            let original = try Self.renamingIdentifiers(try String(contentsOfFile: path + "/\(version.name).xcdatamodel/contents", encoding: .utf8))
            let contents = try #require(exported.first { $0.path == "\(CoreDataExporter.versionName(schema, bundle: "Export")).xcdatamodel/contents" }?.contents)
            #expect(try Self.renamingIdentifiers(contents) == original, "\(bundle) \(version.name)")
            seen += original.count
        }
        if bundle.hasPrefix("Mastodon") { #expect(seen == 7, "visibilityRaw in versions 3 to 9") }
    }

    /// The cases the iOS developer found lost, said one by one on Mastodon's newest version: `id`
    /// is `identifier` in the schema and `id` again in the model, Nullify stays Nullify where the
    /// store's own rule is deny, a required to-many stays required, a Transformable keeps its
    /// transformer and Delta's `attributeValueClassName` survives.
    @Test func whatTheAppsRelyOnComesBack() throws {
        let mastodon = ImportFixtures.folder.appendingPathComponent("CoreData/Mastodon/CoreData.xcdatamodeld").path
        let newest = try #require(try CoreDataImporter.importBundle(at: mastodon, history: false).first).result.schema
        let text = SchemaYAMLWriter.yaml(newest)
        #expect(text.contains("coreData: {name: id}"), "the Core Data name travels with the renamed attribute")
        let schema = try #require(SchemaLoader.load(source: SourceFile(path: "Mastodon.yaml", bytes: Array(text.utf8))).schema)
        let exported = CoreDataExporter.model(schema)
        let original = try String(contentsOfFile: mastodon + "/CoreData 9.xcdatamodel/contents", encoding: .utf8)
        func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }
        #expect(count("deletionRule=\"Nullify\"", in: exported) == count("deletionRule=\"Nullify\"", in: original))
        // A required to-many says so by leaving `optional` out, as Xcode writes it.
        #expect(!exported.contains("optional=\"NO\"") && !original.contains("optional=\"NO\""))
        #expect(count("toMany=\"YES\"", in: exported) == count("toMany=\"YES\"", in: original))
        #expect(count("<attribute name=\"id\" ", in: exported) == count("<attribute name=\"id\" ", in: original))
        #expect(count("representedClassName=\"CoreDataStack.", in: exported) == count("representedClassName=\"CoreDataStack.", in: original))

        let delta = ImportFixtures.folder.appendingPathComponent("CoreData/Delta/Delta.xcdatamodeld").path
        let deltaSchema = try #require(try CoreDataImporter.importBundle(at: delta, history: false).first).result.schema
        let deltaText = SchemaYAMLWriter.yaml(deltaSchema)
        #expect(deltaText.contains("coreData: {attributeType: Transformable, valueTransformerName: NSSecureUnarchiveFromData, userInfo: {attributeValueClassName: CheatType}}"), "\(deltaText)")
        // Delta writes its own classes (Manual/None): the export adds no code generation.
        #expect(deltaText.contains("coreData: {codeGenerationType: \"\"}"))
        let deltaExport = CoreDataExporter.model(try #require(SchemaLoader.load(source: SourceFile(path: "Delta.yaml", bytes: Array(deltaText.utf8))).schema))
        #expect(!deltaExport.contains("codeGenerationType"), "\(deltaExport.prefix(400))")
    }
}
