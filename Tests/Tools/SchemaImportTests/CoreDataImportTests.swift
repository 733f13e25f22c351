import Diagnostics
import Foundation
import SQLiteKit
import SchemaKit
import TestSupport
import Testing

@testable import SchemaImport

/// `schemagen import coredata` on the hand-made Library bundle in Tests/Fixtures/Import/CoreData
/// (three versions: a rename by renaming identifier, another by element ID, a dropped entity,
/// every attribute type, inheritance, uniqueness constraints, fetch indexes) and on broken ones.
@Suite struct CoreDataImportTests {
    static let bundle = ImportFixtures.folder.appendingPathComponent("CoreData/Library.xcdatamodeld").path

    func validated(_ schema: ImportedSchema) -> SchemaLoader.FileResult {
        SchemaLoader.load(source: SourceFile(path: "imported.yaml", text: SchemaYAMLWriter.yaml(schema)))
    }

    @Test func theCurrentVersionCarriesEveryElementAcross() throws {
        let versions = try CoreDataImporter.importBundle(at: Self.bundle, history: false)
        #expect(versions.map(\.name) == ["Library 3"])
        let version = try #require(versions.first)
        #expect(version.isCurrent)
        let schema = version.result.schema
        #expect(schema.name == "Library" && schema.version == 3)
        let checked = validated(schema)
        #expect(checked.diagnostics.isEmpty, "\(checked.diagnostics)\n\(SchemaYAMLWriter.yaml(schema))")
        #expect(schema.entities.map(\.name) == ["Book", "Review", "Tag", "Writer"], "the abstract Item has no table")

        let book = try #require(schema.entity(named: "Book"))
        func attribute(_ name: String) -> ImportedAttribute? { book.attributes.first { $0.name == name } }
        // Every Core Data attribute type, the abstract parent's members first.
        #expect(
            book.attributes.map { "\($0.name): \($0.type)\($0.isOptional ? "?" : "")" } == [
                "createdAt: Date", "uuid: UUID?", "cover: Data?", "edition: Int16", "homepage: URL?", "isAvailable: Bool",
                "isbn: String", "metadata: Data?", "pageCount: Int32", "price: Decimal?", "rating: Double", "searchScore: Double?",
                "summary: String?", "title: String", "weight: Float?", "wordCount: Int64?",
            ])
        #expect(attribute("createdAt")?.defaultValue == .text("2023-01-01T00:00:00Z"), "defaultDateTimeInterval counts from 2001")
        #expect(attribute("isAvailable")?.defaultValue == .plain("true"))
        #expect(attribute("price")?.defaultValue == .plain("9.99"))
        #expect(attribute("edition")?.defaultValue == .plain("1"))
        #expect(attribute("cover")?.usesExternalStorage == true)
        #expect(attribute("summary")?.preservesValueOnDeletion == true)
        #expect(attribute("searchScore")?.isTransient == true)
        #expect(attribute("title")?.isSearchable == true && attribute("title")?.isIndexed == true)
        #expect(attribute("isbn")?.isUnique == true)
        #expect(attribute("pageCount")?.renamedFrom == nil, "renames are written only with --history")
        #expect(book.uniques == [["title", "edition"]])
        #expect(book.indexes == [["rating", "pageCount"]])
        #expect(
            book.relationships.map { "\($0.name) \($0.target) \($0.isToMany) \($0.inverse ?? "-") \($0.deleteRule) \($0.maxCount.map(String.init) ?? "-")" } == [
                "author Writer false books nullify -", "reviews Review true book deny -", "tags Tag true books nullify 5",
            ])
        let review = try #require(schema.entity(named: "Review"))
        #expect(review.primaryKey == ["id"], "a required, unique id becomes the key")
        #expect(review.relationships.first?.isOptional == false)
        let writer = try #require(schema.entity(named: "Writer"))
        #expect(writer.relationships.first.map { "\($0.deleteRule) \($0.minCount ?? 0)" } == "cascade 1")
        #expect(writer.attributes.first { $0.name == "name" }?.isIndexed == true)
        // A composite attribute (iOS 17) becomes a value type.
        #expect(writer.attributes.first { $0.name == "address" }.map { "\($0.type) \($0.isOptional)" } == "Address true")
        #expect(
            schema.values.map { "\($0.name): " + $0.fields.map { "\($0.name) \($0.type)\($0.isOptional ? "?" : "")" }.joined(separator: ", ") } == [
                "Address: street String, city String?, postalCode Int32?"
            ])

        // What does not map is reported at its element.
        let place = "Library.xcdatamodeld/Library 3.xcdatamodel/contents"
        let findings = version.result.findings.map { "\($0.place): \($0.severity.rawValue): \($0.message)" }
        for expected in [
            "\(place):25:9: warning: fetched property 'sequels' of 'Book' not imported",
            "\(place):45:13: warning: fetch index 'byLocation' of 'Book' not imported",
            "\(place):62:9: note: user info of 'Tag' not imported",
            "\(place):72:13: warning: fetch index 'byName' of 'Writer' imported without its descending order",
            "\(place):75:5: warning: configuration 'Cloud' not imported",
            "\(place):84:5: warning: unknown element <futureElement> not imported",
            "note: abstract entity 'Item' has no table of its own; its members are copied into 'Book'",
            "warning: attribute 'Book.metadata' is Transformable ([String: String]), stored through NSSecureUnarchiveFromData",
            "note: 'Review.id' is required and unique, so it becomes the primary key",
            "note: 'Book.reviews' nullifies 'Review.book', which is required",
        ] {
            #expect(findings.contains { $0.hasPrefix(expected) || $0.contains(expected) }, "missing: \(expected)\n\(findings.joined(separator: "\n"))")
        }
    }

    /// Every version becomes a schema; planned in order they make a chain of migrations that
    /// ends where a fresh build of the last version starts, and keeps the data through renames.
    @Test func theVersionHistoryBecomesAChainOfMigrations() throws {
        let folder = temporaryFolder()
        let run = try ImportFixtures.schemagen.run(["import", "coredata", Self.bundle, "--history", "-o", "History"], in: folder)
        #expect(run.status == 0, "\(run.error)")
        #expect(run.error.contains("schemagen generate --migrations-only --schema \"History/v1.yaml\""))
        let v2 = try String(contentsOf: folder.appendingPathComponent("History/v2.yaml"), encoding: .utf8)
        #expect(v2.contains("  Writer:\n    renamedFrom: Author\n") && v2.contains("birthDate: {type: Date?, renamedFrom: born}"))
        let v3 = try String(contentsOf: folder.appendingPathComponent("History/v3.yaml"), encoding: .utf8)
        #expect(v3.contains("pageCount: {type: Int32, default: 0, renamedFrom: pages}"), "element ID")
        #expect(v3.contains("label: {type: String, renamedFrom: name}"), "renaming identifier")
        #expect(!v3.contains("renamedFrom: Author"), "a rename is written in the version that makes it only")
        #expect(v2.contains("subtitle: String?") && !v3.contains("subtitle"), "version 3 drops an attribute")

        let chain = folder.appendingPathComponent("chain.db").path
        for version in 1...3 {
            let planned = try ImportFixtures.schemagen.run(["generate", "--migrations-only", "--allow-destructive", "--schema", "History/v\(version).yaml"], in: folder)
            #expect(planned.status == 0, "\(planned.output)\(planned.error)")
            let applied = try ImportFixtures.migrate.run(["up", "-d", chain, "--dir", "Migrations/Library"], in: folder)
            #expect(applied.status == 0, "\(applied.output)\(applied.error)")
            if version == 1 {
                try SQLiteConnection(path: chain).execute(
                    """
                    INSERT INTO author (id, born, name) VALUES (1, '1947-09-21T00:00:00.000Z', 'Octavia Butler');
                    INSERT INTO book (id, isbn, pages, title, author_id) VALUES (1, '978-0807083697', 264, 'Kindred', 1);
                    """)
            }
        }
        let connection = try SQLiteConnection(path: chain, readOnly: true)
        #expect(try connection.query("SELECT name, birth_date FROM writer") == [[.text("Octavia Butler"), .text("1947-09-21T00:00:00.000Z")]])
        #expect(try connection.query("SELECT title, page_count, author_id, edition FROM book") == [[.text("Kindred"), .integer(264), .integer(1), .integer(1)]])
        #expect(try connection.query("SELECT count(*) FROM pragma_table_info('book') WHERE name = 'subtitle'") == [[.integer(0)]], "dropped in version 3")
        #expect(try connection.query("SELECT count(*) FROM sqlite_schema WHERE name = 'note'") == [[.integer(0)]], "dropped in version 2")

        let fresh = folder.appendingPathComponent("fresh")
        try FileManager.default.createDirectory(at: fresh, withIntermediateDirectories: true)
        #expect(try ImportFixtures.schemagen.run(["generate", "--migrations-only", "--schema", "../History/v3.yaml"], in: fresh).status == 0)
        #expect(try ImportFixtures.migrate.run(["up", "-d", "fresh.db", "--dir", "Migrations/Library"], in: fresh).status == 0)
        let differences = ImportFixtures.differences(original: try ImportFixtures.catalogue(chain), fresh: try ImportFixtures.catalogue(fresh.appendingPathComponent("fresh.db").path))
        #expect(differences == [])
    }

    /// A history like Delta's (whose version 4 makes `Cheat.name` required, migrated by Core
    /// Data with a mapping model): the importer writes `backfill` for the step, warns with the
    /// version, the attribute and the mapping model beside the bundle, and the history plans and
    /// applies from end to end on both engines' plans, filling the old rows.
    @Test func aStepCoreDataMigratedWithAMappingModelPlansWithABackfill() throws {
        let folder = temporaryFolder()
        let bundle = repositoryRoot.path + "/Tests/Fixtures/Import/CoreData/Cheats.xcdatamodeld"
        let run = try ImportFixtures.schemagen.run(["import", "coredata", bundle, "--history", "-o", "History"], in: folder)
        #expect(run.status == 0, "\(run.error)")
        #expect(run.error.contains("warning: version 4 (Cheats 4) makes 'Cheat.name' required without a default"), "\(run.error)")
        #expect(run.error.contains("Core Data used the mapping model Cheats3ToCheats4.xcmappingmodel beside the bundle"), "\(run.error)")
        let v4 = try String(contentsOf: folder.appendingPathComponent("History/v4.yaml"), encoding: .utf8)
        #expect(v4.contains("name: {type: String, backfill: \"\"}") && v4.contains("isEnabled: {type: Bool, backfill: false}"), "\(v4)")
        #expect(!v4.contains("default:"), "a backfill is no default")

        let chain = folder.appendingPathComponent("chain.db").path
        for version in 1...4 {
            let planned = try ImportFixtures.schemagen.run(["generate", "--migrations-only", "--dialect", "sqlite", "--dialect", "postgres", "--schema", "History/v\(version).yaml"], in: folder)
            #expect(planned.status == 0, "version \(version): \(planned.output)\(planned.error)")
            let applied = try ImportFixtures.migrate.run(["up", "-d", chain, "--dir", "Migrations/Cheats"], in: folder)
            #expect(applied.status == 0, "\(applied.output)\(applied.error)")
            if version == 3 {
                try SQLiteConnection(path: chain).execute(
                    """
                    INSERT INTO game (id, identifier, name, type) VALUES (1, 'SMB', 'Super Mario Bros.', 'nes');
                    INSERT INTO cheat (id, code, name, type, game_id) VALUES (1, 'SXIOPO', NULL, 'gameGenie', 1), (2, 'APZLGG', 'Jump higher', 'gameGenie', 1);
                    """)
            }
        }
        let connection = try SQLiteConnection(path: chain, readOnly: true)
        #expect(try connection.query("SELECT code, name, is_enabled FROM cheat ORDER BY id") == [[.text("SXIOPO"), .text(""), .integer(0)], [.text("APZLGG"), .text("Jump higher"), .integer(0)]])
        let postgres = try String(contentsOfFile: folder.path + "/Migrations/Cheats/postgres/0004_change_cheat.up.sql", encoding: .utf8)
        #expect(postgres.contains("UPDATE \"cheat\" SET \"is_enabled\" = false;") && postgres.contains("UPDATE \"cheat\" SET \"name\" = '' WHERE \"name\" IS NULL;"), "\(postgres)")
    }

    /// A bundle is written to a temporary folder: version folders with `contents`.
    func bundle(_ versions: [String: String], current: String? = nil) throws -> URL {
        let url = temporaryFolder().appendingPathComponent("Model.xcdatamodeld")
        for (name, contents) in versions {
            let folder = url.appendingPathComponent("\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: folder.appendingPathComponent("contents"))
        }
        if let current {
            let plist = try PropertyListSerialization.data(fromPropertyList: ["_XCCurrentVersionName": current], format: .xml, options: 0)
            try plist.write(to: url.appendingPathComponent(".xccurrentversion"))
        }
        return url
    }

    static func model(_ entities: String) -> String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<model type=\"com.apple.IDECoreDataModeler.DataModel\" documentVersion=\"1.0\">\n\(entities)\n</model>\n"
    }

    @Test func outputIsDeterministic() throws {
        let first = try CoreDataImporter.importBundle(at: Self.bundle, history: true).map { SchemaYAMLWriter.yaml($0.result.schema) }
        let second = try CoreDataImporter.importBundle(at: Self.bundle, history: true).map { SchemaYAMLWriter.yaml($0.result.schema) }
        #expect(first == second && first.count == 3)
    }

    @Test func versionsFollowXcodesOrderAndTheCurrentOneIsNamed() throws {
        let one = Self.model("<entity name=\"A\"><attribute name=\"x\" attributeType=\"String\"/></entity>")
        let url = try bundle(["Model": one, "Model 2": one, "Model 10": one, "Model 9": one])
        let all = try CoreDataImporter.importBundle(at: url.path, history: true)
        #expect(all.map(\.name) == ["Model", "Model 2", "Model 9", "Model 10"])
        #expect(all.map(\.result.schema.version) == [1, 2, 3, 4])
        #expect(all.last?.result.findings.first?.message.contains("no .xccurrentversion; 'Model 10.xcdatamodel', the last version, is taken as current") == true)

        let named = try bundle(["Model": one, "Model 2": one, "Model 3": one], current: "Model 2.xcdatamodel")
        let current = try CoreDataImporter.importBundle(at: named.path, history: false)
        #expect(current.map { "\($0.name) v\($0.result.schema.version)" } == ["Model 2 v2"])
    }

    @Test func inheritanceIsFlattenedWhereUnambiguousAndReportedWhereNot() throws {
        let url = try bundle([
            "Model": Self.model(
                """
                <entity name="Shape" isAbstract="YES"><attribute name="color" attributeType="String"/>
                    <relationship name="canvas" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Canvas" inverseName="shapes" inverseEntity="Canvas"/></entity>
                <entity name="Circle" parentEntity="Shape"><attribute name="radius" attributeType="Double" defaultValueString="1"/></entity>
                <entity name="Square" parentEntity="Shape"><attribute name="side" attributeType="Double" defaultValueString="1"/></entity>
                <entity name="Canvas"><attribute name="title" attributeType="String"/>
                    <relationship name="shapes" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Shape" inverseName="canvas" inverseEntity="Shape"/></entity>
                """)
        ])
        let version = try #require(try CoreDataImporter.importBundle(at: url.path, history: false).first)
        let schema = version.result.schema
        #expect(schema.entities.map(\.name) == ["Circle", "Square", "Canvas"])
        #expect(schema.entity(named: "Circle")?.attributes.map(\.name) == ["color", "radius"])
        #expect(schema.entity(named: "Canvas")?.relationships.isEmpty == true)
        let messages = version.result.findings.map(\.message).joined(separator: "\n")
        #expect(messages.contains("relationship 'Shape.canvas' is inherited by several entities"))
        #expect(messages.contains("relationship 'Canvas.shapes' points at abstract entity 'Shape', whose objects are of several entities (Circle, Square)"))
        #expect(!validated(schema).diagnostics.contains { $0.severity == .error }, "\(validated(schema).diagnostics)")
    }

    /// Names generated code takes for itself: an attribute `id`, and `<relationship>ID`.
    @Test func attributesNamedLikeGeneratedPropertiesAreRenamed() throws {
        let url = try bundle([
            "Model": Self.model(
                """
                <entity name="Post"><attribute name="id" optional="YES" attributeType="UUID"/><attribute name="authorID" optional="YES" attributeType="Integer 64"/>
                    <relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="posts" inverseEntity="Person"/>
                    <uniquenessConstraints><uniquenessConstraint><constraint value="authorID"/></uniquenessConstraint></uniquenessConstraints></entity>
                <entity name="Person"><attribute name="name" attributeType="String"/>
                    <relationship name="posts" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Post" inverseName="author" inverseEntity="Post"/></entity>
                """)
        ])
        let version = try #require(try CoreDataImporter.importBundle(at: url.path, history: false).first)
        let post = try #require(version.result.schema.entity(named: "Post"))
        #expect(post.attributes.map(\.name) == ["identifier", "authorIDValue"])
        #expect(post.attributes.first?.column == "id_value" && post.attributes.last?.isUnique == true)
        #expect(validated(version.result.schema).diagnostics.isEmpty, "\(validated(version.result.schema).diagnostics)")
    }

    @Test func brokenBundlesGetAClearErrorAndExitStatus() throws {
        let good = Self.model("<entity name=\"A\"><attribute name=\"x\" attributeType=\"String\"/></entity>")
        let truncated = try bundle(["Model": String(good.prefix(good.count - 30))])
        let notModel = try bundle(["Model": "<?xml version=\"1.0\"?>\n<plist version=\"1.0\"><dict/></plist>\n"])
        let binary = try bundle(["Model": "\u{0}\u{1}bplist00 garbage"])
        let wrongCurrent = try bundle(["Model": good], current: "Model 7.xcdatamodel")
        let empty = temporaryFolder().appendingPathComponent("Empty.xcdatamodeld")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let noContents = temporaryFolder().appendingPathComponent("Bare.xcdatamodeld/Bare.xcdatamodel")
        try FileManager.default.createDirectory(at: noContents, withIntermediateDirectories: true)
        let xcode3 = temporaryFolder().appendingPathComponent("Old.xcdatamodeld/Old.xcdatamodel")
        try FileManager.default.createDirectory(at: xcode3, withIntermediateDirectories: true)
        try Data([0x62, 0x70, 0x6C, 0x69, 0x73, 0x74]).write(to: xcode3.appendingPathComponent("elements"))
        let file = temporaryFolder().appendingPathComponent("model.xml")
        try Data(good.utf8).write(to: file)

        let cases: [(path: String, status: Int32, message: String)] = [
            (truncated.path, 1, "Model.xcdatamodeld/Model.xcdatamodel/contents:3:"),
            (truncated.path, 1, "error: not well-formed XML: the file ends inside <attribute> (line 3); it is truncated"),
            (notModel.path, 1, "contents:2:1: error: not a Core Data model: the root element is <plist>, not <model>"),
            (binary.path, 1, "error: not well-formed XML"),
            (wrongCurrent.path, 1, "Model.xcdatamodeld/.xccurrentversion: error: names the version 'Model 7.xcdatamodel', which the bundle does not hold"),
            (empty.path, 1, "error: not a Core Data model bundle: it holds no .xcdatamodel version folder"),
            (noContents.deletingLastPathComponent().path, 1, "Bare.xcdatamodeld/Bare.xcdatamodel/contents: error: cannot read the model file"),
            (xcode3.deletingLastPathComponent().path, 1, "Old.xcdatamodeld/Old.xcdatamodel/contents: error: this version is in Xcode 3's format"),
            (file.path, 2, "error: not a folder; a model bundle (.xcdatamodeld) is a folder"),
            (file.path + ".missing", 2, "error: cannot read it"),
        ]
        for (path, status, message) in cases {
            let run = try ImportFixtures.schemagen.run(["import", "coredata", path, "-o", temporaryFolder().path], in: temporaryFolder())
            #expect(run.status == status, "\(path): \(run.error)")
            #expect(run.error.contains(message), "\(path): \(run.error)")
        }
    }
}
