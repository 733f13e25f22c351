import Diagnostics
import Foundation
import RelationalModel
import SQLDialects
import SchemaExport
import SchemaKit
import SchemagenPipeline
import TestSupport
import Testing

@testable import SchemaImport

/// `export coredata` then `import coredata --history` gives back schemas that build the same
/// tables, version by version: what Core Data cannot say travels in user info and comes back.
@Suite struct CoreDataExportTests {
    /// Writes the bundle of `versions` and imports it back, each version as a validated schema.
    func roundTrip(_ versions: [Schema], name: String) throws -> [Schema] {
        let folder = temporaryFolder()
        let bundle = folder.appendingPathComponent("\(name).xcdatamodeld")
        for file in CoreDataExporter.bundle(versions, name: name) {
            let url = bundle.appendingPathComponent(file.path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(file.contents.utf8).write(to: url)
        }
        let imported = try CoreDataImporter.importBundle(at: bundle.path, name: name, history: true)
        return try imported.map { version in
            let text = SchemaYAMLWriter.yaml(version.result.schema)
            let loaded = SchemaLoader.load(source: SourceFile(path: "\(version.name).yaml", bytes: Array(text.utf8)))
            guard let schema = loaded.schema else {
                throw ExportFailure(description: "\(version.name) does not validate: \(loaded.diagnostics.map(\.message))\n\(text)")
            }
            return schema
        }
    }

    struct ExportFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// The tables a schema builds, without what only guides the migration into its version
    /// (renames, backfills, moves: checked where they happen), indexes by name.
    static func tables(_ schema: Schema) -> [TableSnapshot] {
        SnapshotBuilder.snapshot(of: schema).tables.map { table in
            var table = table
            table.renamedFrom = nil
            // The order indexes are declared in builds the same indexes.
            table.indexes.sort { $0.name < $1.name }
            for index in table.columns.indices {
                table.columns[index].backfill = nil
                table.columns[index].renamedFrom = nil
                table.columns[index].movedFrom = nil
            }
            return table
        }
    }

    func expectSameTables(_ original: [Schema], _ back: [Schema]) {
        #expect(back.map(\.version) == original.map(\.version))
        for (before, after) in zip(original, back) {
            let expected = Self.tables(before), actual = Self.tables(after)
            #expect(Self.difference(expected, actual).isEmpty, "version \(before.version) of \(before.name): \(Self.difference(expected, actual))")
            #expect(actual == expected)
            func cases(_ schema: Schema) -> [String] { schema.enums.map { "\($0.name): \($0.rawType) \($0.cases.map { "\($0.name)=\($0.rawValue)" }) \($0.doc ?? "")" } }
            #expect(cases(after) == cases(before))
            #expect(after.values.map(\.name) == before.values.map(\.name))
            #expect(after.dialects == before.dialects && after.recordsHistory == before.recordsHistory && after.recordsInsertValues == before.recordsInsertValues && after.online == before.online)
            #expect(after.doc == before.doc)
            #expect(after.cloudKit == before.cloudKit)
            #expect(Self.guidance(after) == Self.guidance(before), "version \(before.version) of \(before.name)")
        }
    }

    /// What guides the migration into a version: each attribute's backfill and move.
    static func guidance(_ schema: Schema) -> [String] {
        schema.entities.flatMap { entity in
            entity.attributes.compactMap { attribute in
                guard attribute.backfill != nil || attribute.movedFromText != nil else { return nil }
                let backfill: String =
                    switch attribute.backfill {
                    case nil: "-"
                    case .value(let value)?: "\(value)"
                    // A dictionary's order is not its contents'.
                    case .sql(let expressions)?: expressions.map { "\($0.key.rawValue): \($0.value)" }.sorted().joined(separator: ", ")
                    }
                return "\(entity.name).\(attribute.name): \(backfill) \(attribute.movedFromText ?? "-")"
            }
        }
    }

    static func difference(_ expected: [TableSnapshot], _ actual: [TableSnapshot]) -> String {
        var lines: [String] = []
        for table in expected {
            guard let other = actual.first(where: { $0.name == table.name }) else {
                lines.append("missing table \(table.name)")
                continue
            }
            if other != table {
                for column in table.columns where other.column(named: column.name) != column {
                    lines.append("\(table.name).\(column.name): \(column) vs \(String(describing: other.column(named: column.name)))")
                }
                if other.indexes != table.indexes { lines.append("\(table.name) indexes: \(table.indexes) vs \(other.indexes)") }
                if other.foreignKeys != table.foreignKeys { lines.append("\(table.name) foreign keys: \(table.foreignKeys) vs \(other.foreignKeys)") }
                if other.primaryKey != table.primaryKey { lines.append("\(table.name) key: \(table.primaryKey) vs \(other.primaryKey)") }
                if other.doc != table.doc { lines.append("\(table.name) doc") }
            }
        }
        for table in actual where !expected.contains(where: { $0.name == table.name }) { lines.append("extra table \(table.name)") }
        return lines.joined(separator: "\n")
    }

    /// Every example schema with its whole committed history.
    @Test(arguments: ["Flights", "Garage", "Notes", "Tasks", "Todo", "Users"])
    func exampleSchemaRoundTrips(_ name: String) throws {
        let schema = try #require(SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/\(name).yaml").path).schema)
        let history = SchemaHistory.load(for: schema, root: repositoryRoot.appendingPathComponent("Migrations").path, dialects: schema.dialects ?? [.sqlite])
        #expect(history.diagnostics.isEmpty, "\(history.diagnostics.map(\.message))")
        let versions = history.versions.map(\.schema)
        #expect(versions.count >= 1)
        let back = try roundTrip(versions, name: name)
        expectSameTables(versions, back)
        // Every option of every attribute comes back as written: the examples use every key
        // of the language (`ExampleSchemaTests`), so a new option is checked here too.
        for (written, read) in zip(versions, back) {
            let before = Self.attributes(written), after = Self.attributes(read)
            #expect(before.keys.sorted() == after.keys.sorted(), "\(name) v\(written.version)")
            for (member, attribute) in before.sorted(by: { $0.key < $1.key }) {
                guard let other = after[member] else { continue }
                for option in AttributeOption.allCases where !Self.respelled.contains(option) && option.value(of: other) != option.value(of: attribute) {
                    Issue.record("\(name) v\(written.version): \(member).\(option.key) came back as \(option.value(of: other) ?? "nil"), written as \(option.value(of: attribute) ?? "nil")")
                }
            }
        }
        if name == "Tasks" {
            // Its history has both kinds: an SQL backfill per dialect and a table split.
            let guidance = versions.flatMap(Self.guidance).joined(separator: "\n")
            #expect(guidance.contains("sqlite") && guidance.contains("Task.notes"), "\(guidance)")
        }
    }

    /// Four versions with renamed attributes, a renamed entity and a renamed relationship: the
    /// renaming identifiers bring the renames back, so migrations planned from the imported
    /// versions rename instead of dropping.
    @Test func aFourVersionHistoryWithRenamesRoundTrips() throws {
        let versions = try (1...4).map { version in
            try #require(SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Tests/Fixtures/LibraryHistory/v\(version).yaml").path).schema)
        }
        let back = try roundTrip(versions, name: "Library")
        expectSameTables(versions, back)
        #expect(back[1].entity(named: "Book")?.attribute(named: "name")?.renamedFrom == "title")
        #expect(back[3].entity(named: "Author")?.renamedFrom == "Writer")
        #expect(back[3].entity(named: "Book")?.relationship(named: "author")?.renamedFrom == "writer")
    }

    /// CloudKit refuses a model with a required attribute that has no default. Notes'
    /// `createdAt` defaults to `now`, which Core Data cannot compute: its model holds 2001-01-01
    /// (as SwiftData's holds the value `= .now` gave once), with a warning at the attribute;
    /// every required attribute of the exported model has a default.
    @Test func cloudKitModelsGiveEveryRequiredAttributeADefault() throws {
        let schema = try #require(SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/Notes.yaml").path).schema)
        let contents = CoreDataExporter.model(schema)
        guard case .success(let root) = XMLTree.parse(Array(contents.utf8)) else {
            Issue.record("not XML")
            return
        }
        var required = 0
        for entity in root.children(named: "entity") {
            for attribute in entity.children(named: "attribute") where attribute["optional"] != "YES" && attribute["transient"] != "YES" {
                required += 1
                #expect(attribute["defaultValueString"] != nil || attribute["defaultDateTimeInterval"] != nil, "\(entity["name"] ?? "").\(attribute["name"] ?? "") has no default")
            }
        }
        #expect(required >= 4)
        #expect(contents.contains("<attribute name=\"createdAt\" attributeType=\"Date\" defaultDateTimeInterval=\"0\""), "\(contents)")
        let warning = try #require(CoreDataLightweightCheck.findings([schema], bundle: "Notes").first { $0.code == "coredata-placeholder-default" })
        #expect(warning.message.contains("Note.createdAt") && warning.message.contains("2001-01-01") && warning.location?.line != nil)

        // Outside CloudKit a required attribute may go without a model default: the app sets it.
        let plain = try #require(
            SchemaLoader.load(source: SourceFile(path: "Log.yaml", text: "schema: Log\nversion: 1\nentities:\n  Line:\n    attributes:\n      at: {type: Date, default: now}\n")).schema)
        #expect(!CoreDataExporter.model(plain).contains("defaultDateTimeInterval"))
        #expect(CoreDataLightweightCheck.findings([plain], bundle: "Log").isEmpty)
    }

    /// Xcode sorts properties by the names the model gives them: an attribute whose Core Data
    /// name differs from the schema's (`serial` is `zid` in the model) goes where Xcode would
    /// put it, so a re-save in Xcode moves nothing; the schema's order comes back on import.
    @Test func propertiesAreSortedByTheirCoreDataNames() throws {
        let text = "schema: Shelf\nversion: 1\nentities:\n  Book:\n    attributes:\n      serial: {type: String, coreData: {name: zid}}\n      title: String\n"
        let schema = try #require(SchemaLoader.load(source: SourceFile(path: "Shelf.yaml", text: text)).schema)
        let contents = CoreDataExporter.model(schema)
        let title = try #require(contents.range(of: "<attribute name=\"title\""))
        let zid = try #require(contents.range(of: "<attribute name=\"zid\""))
        #expect(title.lowerBound < zid.lowerBound, "\(contents)")
        let back = try roundTrip([schema], name: "Shelf")
        #expect(back.first?.entity(named: "Book")?.attributes.map(\.name) == ["serial", "title"])
    }

    /// Folders an existing bundle gives versions are kept only where each version keeps a
    /// folder of its own: Xcode's "Add Model Version" copies `userDefinedModelVersionIdentifier`,
    /// so two folders may claim one version, and a folder may hold another version than its name.
    @Test func existingFolderNamesNeverMakeTwoVersionsShareAFolder() throws {
        let versions = try (1...3).map { version in
            try #require(SchemaLoader.load(source: SourceFile(path: "Shelf.yaml", text: "schema: Shelf\nversion: \(version)\nentities:\n  Book:\n    attributes:\n      title: String\n")).schema)
        }
        let bundle = temporaryFolder().appendingPathComponent("Shelf.xcdatamodeld")
        func folder(_ name: String, holding version: Int) throws {
            let url = bundle.appendingPathComponent("\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try Data("<model userDefinedModelVersionIdentifier=\"\(version)\"/>".utf8).write(to: url.appendingPathComponent("contents"))
        }
        try folder("Shelf 1", holding: 1)
        try folder("Shelf 2", holding: 2)
        try folder("Shelf copy", holding: 2)
        let names = CoreDataExporter.existingFolderNames(of: bundle.path)
        #expect(names == [1: "Shelf 1"], "version 2 is claimed twice: \(names)")
        let paths = CoreDataExporter.bundle(versions, name: "Shelf", folderNames: names).map(\.path).sorted()
        #expect(paths == [".xccurrentversion", "Shelf 1.xcdatamodel/contents", "Shelf 2.xcdatamodel/contents", "Shelf 3.xcdatamodel/contents"])
        // `Shelf` holds version 3, where version 1 would go by default: the defaults are used.
        let clash = CoreDataExporter.bundle(versions, name: "Shelf", folderNames: [3: "Shelf"]).map(\.path)
        #expect(Set(clash).count == clash.count && clash.contains("Shelf.xcdatamodel/contents") && clash.contains("Shelf 3.xcdatamodel/contents"), "\(clash)")
    }

    /// A renaming identifier no rename inside the bundle explains (the first version's, naming a
    /// version no longer shipped; one a later version changed by hand) is kept as the model says
    /// it, in `coreData: {elementID: …}`, and later versions carry it on; SwiftData's
    /// `originalName:` says the same.
    @Test func identifiersNoRenameExplainsAreKept() throws {
        let bundle = temporaryFolder().appendingPathComponent("Shelf.xcdatamodeld")
        func version(_ folder: String, _ number: Int, _ members: String) throws {
            let url = bundle.appendingPathComponent("\(folder).xcdatamodel")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            let model =
                "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<model type=\"com.apple.IDECoreDataModeler.DataModel\" documentVersion=\"1.0\" minimumToolsVersion=\"Automatic\" sourceLanguage=\"Swift\" userDefinedModelVersionIdentifier=\"\(number)\">\n"
                + "    <entity name=\"Book\" representedClassName=\"Book\" elementID=\"Volume\" syncable=\"YES\" codeGenerationType=\"class\">\n\(members)    </entity>\n</model>\n"
            try Data(model.utf8).write(to: url.appendingPathComponent("contents"))
        }
        try version("Shelf", 1, "        <attribute name=\"title\" optional=\"YES\" attributeType=\"String\" elementID=\"name\"/>\n")
        try version(
            "Shelf 2", 2,
            "        <attribute name=\"heading\" optional=\"YES\" attributeType=\"String\" elementID=\"name\"/>\n        <attribute name=\"pages\" optional=\"YES\" attributeType=\"Integer 64\" usesScalarValueType=\"YES\" elementID=\"leaves\"/>\n"
        )
        let imported = try CoreDataImporter.importBundle(at: bundle.path, name: "Shelf", history: true)
        let texts = imported.map { SchemaYAMLWriter.yaml($0.result.schema) }
        #expect(texts[0].contains("coreData: {elementID: Volume}") && texts[0].contains("title: {type: String?, coreData: {elementID: name}}"), "\(texts[0])")
        #expect(texts[1].contains("heading: {type: String?, renamedFrom: title}") && texts[1].contains("coreData: {elementID: leaves}"), "\(texts[1])")
        let versions = try texts.map { text in try #require(SchemaLoader.load(source: SourceFile(path: "Shelf.yaml", text: text)).schema, "\(text)") }
        let exported = Dictionary(uniqueKeysWithValues: CoreDataExporter.bundle(versions, name: "Shelf").map { ($0.path, $0.contents) })
        let second = try #require(exported["Shelf 2.xcdatamodel/contents"])
        #expect(second.contains("<entity name=\"Book\" representedClassName=\"Book\" elementID=\"Volume\""), "\(second)")
        #expect(second.contains("<attribute name=\"heading\" optional=\"YES\" attributeType=\"String\" elementID=\"name\"/>"), "\(second)")
        #expect(second.contains("elementID=\"leaves\""))
        #expect(RenamingIdentifiers.chain(versions).identifiers[1].member("heading", of: "Book") == "name", "SwiftData's originalName says the same")
    }

    /// A one-attribute primary key is a uniqueness constraint, as `@Attribute(.unique)` makes it
    /// in SwiftData. Constraints are in the version hash, so over a bundle whose versions lack it
    /// (what earlier exports wrote) those versions keep their hash, the next version adds it, and
    /// the step says that duplicates would fail it.
    @Test func aOneAttributeKeyIsConstrainedWhereNoShippedHashChanges() throws {
        let versions = try (1...2).map { version in
            try #require(
                SchemaLoader.load(
                    source: SourceFile(
                        path: "Crew.yaml",
                        text: "schema: Crew\nversion: \(version)\nentities:\n  Member:\n    primaryKey: [badge]\n    attributes:\n      badge: String\n      name: String\n"
                            + (version == 2 ? "      rank: String?\n" : ""))
                ).schema)
        }
        let bundle = temporaryFolder().appendingPathComponent("Crew.xcdatamodeld")
        func write(_ files: [(path: String, contents: String)]) throws {
            for file in files {
                let url = bundle.appendingPathComponent(file.path)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(file.contents.utf8).write(to: url)
            }
        }
        let key = "<constraint value=\"badge\"/>"
        let fresh = CoreDataExporter.bundle(versions, name: "Crew")
        #expect(fresh.filter { $0.path.hasSuffix("/contents") }.allSatisfy { $0.contents.contains(key) }, "\(fresh)")
        #expect(!CoreDataLightweightCheck.findings(versions, bundle: "Crew").contains { $0.code == "coredata-new-uniqueness-constraint" })

        // Version 1 as an earlier export wrote it: no constraint.
        try write(
            CoreDataExporter.bundle([versions[0]], name: "Crew").map { file in
                (
                    file.path,
                    file.contents.replacingOccurrences(
                        of: "        <uniquenessConstraints>\n            <uniquenessConstraint>\n                \(key)\n            </uniquenessConstraint>\n        </uniquenessConstraints>\n",
                        with: "")
                )
            })
        let kept = CoreDataImporter.uniquenessConstraints(inBundle: bundle.path)
        #expect(kept == [1: ["Member": []]], "\(kept)")
        let over = Dictionary(
            uniqueKeysWithValues: CoreDataExporter.bundle(versions, name: "Crew", folderNames: CoreDataExporter.existingFolderNames(of: bundle.path), keptUniqueness: kept).map {
                ($0.path, $0.contents)
            })
        #expect(over["Crew.xcdatamodel/contents"]?.contains(key) == false, "the shipped version keeps its hash")
        #expect(over["Crew 2.xcdatamodel/contents"]?.contains(key) == true)
        let warning = try #require(CoreDataLightweightCheck.findings(versions, bundle: "Crew", keptUniqueness: kept).first { $0.code == "coredata-new-uniqueness-constraint" })
        #expect(warning.message.contains("[badge] is new in the step from 'Crew' to 'Crew 2'"), "\(warning.message)")
        #expect(warning.location?.line == 7)
    }

    /// A value type is a composite attribute, which Core Data has from iOS 17: export says so at
    /// the attribute, for apps that support earlier systems.
    @Test func compositesAreWarnedAsIOS17() throws {
        let schema = try #require(SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/Users.yaml").path).schema)
        #expect(CoreDataExporter.model(schema).contains("composite=\"ImageSize\""))
        let warning = try #require(CoreDataLightweightCheck.findings([schema], bundle: "Users").first { $0.code == "coredata-composite-ios17" })
        #expect(warning.message.contains("ImageSize") && warning.message.contains("iOS 17") && warning.location?.line != nil)
        let plain = try #require(SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/Todo.yaml").path).schema)
        #expect(!CoreDataLightweightCheck.findings([plain], bundle: "Todo").contains { $0.code == "coredata-composite-ios17" })
    }

    /// The schema the language reference opens with comes back through Core Data with every
    /// option of every attribute as written: an option it shows is carried.
    @Test func theLanguageReferencesSchemaRoundTrips() throws {
        let markdown = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/schema-language.md"), encoding: .utf8)
        let start = try #require(markdown.range(of: "```yaml\n"))
        let end = try #require(markdown.range(of: "```", range: start.upperBound..<markdown.endIndex))
        let schema = try #require(SchemaLoader.load(source: SourceFile(path: "schema-language.md", text: String(markdown[start.upperBound..<end.lowerBound]))).schema)
        let back = try roundTrip([schema], name: schema.name)
        #expect(schema.sync != nil && back.first?.sync == schema.sync, "the sync block comes back as written")
        let written = Self.attributes(schema), read = Self.attributes(try #require(back.first))
        #expect(written.keys.sorted() == read.keys.sorted())
        for (member, attribute) in written.sorted(by: { $0.key < $1.key }) {
            guard let other = read[member] else { continue }
            for option in AttributeOption.allCases where !Self.respelled.contains(option) && option.value(of: other) != option.value(of: attribute) {
                Issue.record("\(member).\(option.key) came back as \(option.value(of: other) ?? "nil"), written as \(option.value(of: attribute) ?? "nil")")
            }
        }
    }

    /// Options that may come back in another spelling of the same thing: an entity's key or a
    /// one-column index as the attribute's flag, a rename as its renaming identifier
    /// (`coreData: {elementID: ...}`). The tables and the renames tests check what they mean.
    static let respelled: Set<AttributeOption> = [.primaryKey, .indexed, .renamedFrom]

    /// Each attribute of a schema by `Entity.attribute`, without where it was written.
    static func attributes(_ schema: Schema) -> [String: Attribute] {
        var found: [String: Attribute] = [:]
        for entity in schema.entities {
            for var attribute in entity.attributes {
                attribute.location = nil
                found["\(entity.name).\(attribute.name)"] = attribute
            }
        }
        return found
    }

    /// Literal backfills come back as written, text quoted where YAML would read it otherwise.
    @Test func literalBackfillsRoundTrip() throws {
        let texts = [
            "schema: Shelf\nversion: 1\nentities:\n  Book:\n    attributes:\n      title: String\n",
            "schema: Shelf\nversion: 2\nentities:\n  Book:\n    attributes:\n      title: String\n      copies: {type: Int, backfill: 1}\n"
                + "      shelf: {type: String, backfill: \"yes: no\"}\n      price: {type: Decimal, backfill: 0.5}\n",
        ]
        let versions = try texts.enumerated().map { index, text in
            try #require(SchemaLoader.load(source: SourceFile(path: "v\(index + 1).yaml", text: text)).schema)
        }
        #expect(Self.guidance(versions[1]).count == 3)
        expectSameTables(versions, try roundTrip(versions, name: "Shelf"))
    }

    /// Every option of the schema language's table (`AttributeOption`), all in one schema,
    /// comes back as written through export and import: the writer, the user info and the
    /// reader all follow the table, so an option added to it is carried without code of its
    /// own there (the examples' round trip checks a new one).
    @Test func everyAttributeOptionOfTheTableRoundTrips() throws {
        let texts = [
            "schema: Shelf\nversion: 1\nentities:\n  Book:\n    attributes:\n      isbn: String\n      name: String\n"
                + "  Reader:\n    attributes:\n      street: String?\n",
            """
            schema: Shelf
            version: 2
            entities:
              Book:
                attributes:
                  isbn: {type: String, unique: true, column: isbn_code, jsonKey: ISBN, doc: "The book's ISBN: 13 digits."}
                  title: {type: String, searchable: true, default: "yes", renamedFrom: name}
                  price: {type: Decimal, optional: true, precision: 12, scale: 2}
                  published: {type: Date?, dateOnly: true, indexed: true}
                  cover: {type: Data?, externalStorage: true}
                  notes: {type: String?, preserveValueOnDeletion: true}
                  secret: {type: String?, encrypt: deterministic}
                  draft: {type: String?, transient: true}
                  copies: {type: Int, backfill: 1}
              Shelf:
                attributes:
                  code: {type: String, primaryKey: true, coreData: {versionHashModifier: v2}}
              Reader:
                attributes:
                  name: {type: String, default: ""}
                relationships:
                  address: {to: Address?, inverse: reader, deleteRule: cascade}
              Address:
                attributes:
                  street: {type: String?, movedFrom: Reader.street}
                relationships:
                  reader: {to: Reader, inverse: address}

            """,
        ]
        let versions = try texts.enumerated().map { index, text in
            let loaded = SchemaLoader.load(source: SourceFile(path: "v\(index + 1).yaml", text: text))
            return try #require(loaded.schema, "\(loaded.diagnostics.map(\.message))")
        }
        let back = try roundTrip(versions, name: "Shelf")
        let written = Self.attributes(versions[1]), read = Self.attributes(back[1])
        #expect(written.keys.sorted() == read.keys.sorted())
        for (name, attribute) in written.sorted(by: { $0.key < $1.key }) {
            #expect(read[name] == attribute, "\(name) came back as \(String(describing: read[name]))")
        }
        for option in AttributeOption.coreDataUserInfoOrder {
            let key = try #require(option.coreDataUserInfoKey)
            #expect(key.hasPrefix("schemagen.") && key != CoreDataUserInfo.type && key != CoreDataUserInfo.schemaName)
        }
        #expect(AttributeOption.default.coreDataUserInfoKey == CoreDataUserInfo.defaultValue && AttributeOption.dateOnly.coreDataUserInfoKey == CoreDataUserInfo.dateOnly)
    }

    /// What the bundle says in Core Data's own terms, as Xcode reads it.
    @Test func theBundleSaysWhatCoreDataCan() throws {
        let schemas = try ["Garage", "Tasks", "Todo", "Users"].map { name in
            try #require(SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/\(name).yaml").path).schema)
        }
        let garage = CoreDataExporter.model(schemas[0])
        #expect(
            garage.contains("<relationship name=\"cars\" optional=\"YES\" toMany=\"YES\" maxCount=\"10\" deletionRule=\"Deny\" destinationEntity=\"Car\" inverseName=\"owner\" inverseEntity=\"Car\""))
        #expect(garage.contains("<attribute name=\"photo\" optional=\"YES\" attributeType=\"Binary\" allowsExternalBinaryDataStorage=\"YES\"/>"))
        #expect(garage.contains("<composite name=\"Color\">"))
        #expect(garage.contains("attributeType=\"Composite\" composite=\"Color\""))
        #expect(garage.contains("<entry key=\"schemagen.table\" value=\"people\"/>"))
        #expect(garage.contains("<entry key=\"schemagen.column\" value=\"full_name\"/>"))
        #expect(garage.contains("<entry key=\"schemagen.uniques\" value=\"make, model, owner\"/>"))
        #expect(garage.contains("<entry key=\"schemagen.primaryKey\" value=\"car, day\"/>"))
        let tasks = CoreDataExporter.model(schemas[1])
        #expect(tasks.contains("<attribute name=\"priority\" attributeType=\"Integer 64\" defaultValueString=\"1\" usesScalarValueType=\"YES\">"))
        #expect(tasks.contains("<entry key=\"schemagen.type\" value=\"Priority\"/>"))
        #expect(tasks.contains("<fetchIndexElement property=\"createdAt\"") || tasks.contains("<attribute name=\"createdAt\" attributeType=\"Date\" indexed=\"YES\""))
        #expect(tasks.contains("<entry key=\"schemagen.indexes\" value=\"list, isCompleted\"/>"))
        let todo = CoreDataExporter.model(schemas[2])
        #expect(todo.contains("preservesValueInHistoryOnDeletion=\"YES\" spotlightIndexingEnabled=\"YES\""))
        #expect(todo.contains("allowsCloudEncryption=\"YES\""))
        #expect(todo.contains("<entry key=\"schemagen.encrypt\" value=\"true\"/>"))
        #expect(todo.contains("<entry key=\"schemagen.default\" value=\"uuid\"/>"))
        let users = CoreDataExporter.model(schemas[3])
        #expect(users.contains("<entry key=\"schemagen.encrypt\" value=\"deterministic\"/>"))
        // As Xcode saves a model: entities, attributes and relationships sorted (ignoring case),
        // Class Definition code generation, the renaming identifier as elementID.
        #expect(garage.contains("<entity name=\"Person\" representedClassName=\"Person\" elementID=\"Owner\" syncable=\"YES\" codeGenerationType=\"class\">"))
        #expect(!garage.contains("renamingIdentifier"))
        #expect(garage.contains("deletionRule=\"Nullify\" destinationEntity=\"Person\" inverseName=\"cars\" inverseEntity=\"Person\" elementID=\"driver\"/>"))
        let entityNames = garage.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "<entity name=\"") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "\"" })
        }
        #expect(entityNames == ["Car", "Mechanic", "Person", "ServiceVisit"])
        #expect(garage.contains("<entry key=\"schemagen.schema.entities\" value=\"Person, Car, Mechanic, ServiceVisit\"/>"))
        #expect(garage.contains("<entry key=\"schemagen.order\" value=\"vin, make, model, color, price, mileage, manual, photo, owner, mechanics, visits\"/>"))
        #expect(tasks.contains("valueTransformerName=\"NSSecureUnarchiveFromData\""), "the name Xcode writes")
        // Every contents file is well-formed XML with a <model> root.
        for schema in schemas {
            guard case .success(let root) = XMLTree.parse(Array(CoreDataExporter.model(schema).utf8)) else {
                Issue.record("\(schema.name)'s model is not well-formed XML")
                continue
            }
            #expect(root.name == "model")
        }
    }

    /// Flights' step from version 3 to 4 turns `progressPercent` from Int to Double: Core Data's
    /// inferred mapping cannot convert it, so export warns at the attribute's line and names the
    /// mapping model the step needs; steps it can infer are not warned about.
    @Test func stepsLightweightMigrationCannotDoAreWarnedAtTheirLine() throws {
        let schema = try #require(SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/Flights.yaml").path).schema)
        let history = SchemaHistory.load(for: schema, root: repositoryRoot.appendingPathComponent("Migrations").path, dialects: [.sqlite])
        let findings = CoreDataLightweightCheck.findings(history.versions.map(\.schema), bundle: "Flights")
        let typeChange = try #require(findings.first { $0.message.contains("progressPercent: its type changes from Integer 64 to Double") }, "\(findings.map(\.message))")
        #expect(typeChange.message.contains("the step from 'Flights 3' to 'Flights 4' needs a mapping model"))
        #expect(typeChange.code == "coredata-needs-mapping-model" && typeChange.severity == .warning)
        let location = try #require(typeChange.location)
        let lines = try String(contentsOfFile: location.file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[location.line - 1].contains("progressPercent"), "\(location)")
        #expect(!findings.contains { $0.message.contains("'Flights 1' to 'Flights 2'") }, "adding an optional attribute is inferred")
    }

    /// Xcode re-sorts entities when it saves a model, so the one that carries the schema's
    /// settings and enums may come anywhere: a bundle whose entities were reversed imports the
    /// same, settings, enums and order included.
    @Test(arguments: ["Flights", "Tasks", "Garage"])
    func aBundleWhoseEntitiesWereReorderedImportsTheSame(_ name: String) throws {
        let schema = try #require(SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/\(name).yaml").path).schema)
        let folder = temporaryFolder()
        let bundle = folder.appendingPathComponent("\(name).xcdatamodeld")
        for file in CoreDataExporter.bundle([schema], name: name) {
            var contents = file.contents
            if file.path.hasSuffix("contents") {
                // The entity elements in reverse order, the rest where it was.
                let lines = contents.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                var blocks: [[String]] = [], head: [String] = [], tail: [String] = []
                for line in lines {
                    if line.hasPrefix("    <entity ") {
                        blocks.append([line])
                    } else if !blocks.isEmpty, blocks[blocks.count - 1].last != "    </entity>" {
                        blocks[blocks.count - 1].append(line)
                    } else if blocks.isEmpty {
                        head.append(line)
                    } else {
                        tail.append(line)
                    }
                }
                contents = (head + blocks.reversed().flatMap { $0 } + tail).joined(separator: "\n")
            }
            let url = bundle.appendingPathComponent(file.path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: url)
        }
        let imported = try #require(try CoreDataImporter.importBundle(at: bundle.path, name: name, history: false).first).result.schema
        let text = SchemaYAMLWriter.yaml(imported)
        let back = try #require(SchemaLoader.load(source: SourceFile(path: "\(name).yaml", bytes: Array(text.utf8))).schema, "\(text)")
        expectSameTables([schema], [back])
        #expect(back.entities.map(\.name) == schema.entities.map(\.name))
    }

    /// The renaming identifier as Xcode saves it: Mastodon's version 3 renames `Status.visibility`
    /// to `visibilityRaw` (`elementID="visibility"`); imported with its history and exported
    /// again, the attribute is written exactly as Mastodon's file has it.
    @Test func aRenameIsWrittenAsXcodeWritesIt() throws {
        let bundle = ImportFixtures.folder.appendingPathComponent("CoreData/Mastodon/CoreData.xcdatamodeld").path
        let versions = try CoreDataImporter.importBundle(at: bundle, name: "Mastodon", history: true)
        let third = try #require(versions.first { $0.name == "CoreData 3" }, "\(versions.map(\.name))")
        let text = SchemaYAMLWriter.yaml(third.result.schema)
        let schema = try #require(SchemaLoader.load(source: SourceFile(path: "v3.yaml", bytes: Array(text.utf8))).schema, "\(text)")
        #expect(schema.entity(named: "Status")?.attribute(named: "visibilityRaw")?.renamedFrom == "visibility")
        let original = try String(contentsOfFile: bundle + "/CoreData 3.xcdatamodel/contents", encoding: .utf8)
        func line(_ model: String) -> String? {
            model.split(separator: "\n").first { $0.contains("<attribute name=\"visibilityRaw\"") }.map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let written = try #require(line(original))
        #expect(written == "<attribute name=\"visibilityRaw\" optional=\"YES\" attributeType=\"String\" elementID=\"visibility\"/>")
        #expect(line(CoreDataExporter.model(schema)) == written)
    }

    /// The command: a bundle with `.xccurrentversion`, replaced on a second run (which clears what a
    /// killed run left), refused over a folder that is not a bundle; the import of it validates
    /// and builds the same tables.
    @Test func exportAndImportCommands() async throws {
        // Processes waited for on a thread of their own, not the cooperative pool's.
        try await offThePool { try Self.exportAndImport() }
    }

    static func exportAndImport() throws {
        let folder = temporaryFolder()
        let bundle = folder.appendingPathComponent("Tasks.xcdatamodeld").path
        let schemagen = ImportFixtures.schemagen
        let export = try schemagen.run(["export", "coredata", "--schema", "Schemas/Tasks.yaml", "-o", bundle])
        #expect(export.status == 0, "\(export.error)")
        // Named as Xcode names them: the first version without a number.
        #expect(export.error.contains("3 versions (Tasks, Tasks 2, Tasks 3), current Tasks 3"), "\(export.error)")
        #expect(FileManager.default.fileExists(atPath: bundle + "/Tasks.xcdatamodel/contents"))
        let current = try String(contentsOfFile: bundle + "/.xccurrentversion", encoding: .utf8)
        #expect(current.contains("<string>Tasks 3.xcdatamodel</string>"))
        // A bundle whose folders are named otherwise (as an earlier release wrote them, `Tasks 1`)
        // keeps them: the Xcode project refers to them.
        try FileManager.default.moveItem(atPath: bundle + "/Tasks.xcdatamodel", toPath: bundle + "/Tasks 1.xcdatamodel")
        let kept = try schemagen.run(["export", "coredata", "--schema", "Schemas/Tasks.yaml", "-o", bundle])
        #expect(kept.status == 0 && kept.error.contains("3 versions (Tasks 1, Tasks 2, Tasks 3)"), "\(kept.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: bundle).sorted() == [".xccurrentversion", "Tasks 1.xcdatamodel", "Tasks 2.xcdatamodel", "Tasks 3.xcdatamodel"])
        // Again, over what a killed run left beside it: that is cleared and said.
        let killed = folder.appendingPathComponent(".Tasks.xcdatamodeld.\(try FolderReplacementTests.deadProcessID()).new")
        try FileManager.default.createDirectory(at: killed, withIntermediateDirectories: true)
        let again = try schemagen.run(["export", "coredata", "--schema", "Schemas/Tasks.yaml", "-o", bundle])
        #expect(again.status == 0 && again.error.contains("removed what interrupted exports left: \(killed.lastPathComponent)"), "\(again.error)")
        #expect(!FileManager.default.fileExists(atPath: killed.path))
        let imported = folder.appendingPathComponent("imported").path
        let back = try schemagen.run(["import", "coredata", bundle, "--history", "-o", imported])
        #expect(back.status == 0, "\(back.error)")
        let v3 = try #require(SchemaLoader.load(file: imported + "/v3.yaml").schema)
        let original = try #require(SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/Tasks.yaml").path).schema)
        #expect(Self.difference(Self.tables(original), Self.tables(v3)).isEmpty, "\(Self.difference(Self.tables(original), Self.tables(v3)))")
        // Not over something else.
        let other = folder.appendingPathComponent("Notes.xcdatamodeld")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: other.appendingPathComponent("notes.txt"))
        let refused = try schemagen.run(["export", "coredata", "--schema", "Schemas/Tasks.yaml", "-o", other.path])
        #expect(refused.status == 2 && refused.error.contains("is not a model bundle"), "\(refused.error)")
        #expect(FileManager.default.fileExists(atPath: other.appendingPathComponent("notes.txt").path))
        let wrongName = try schemagen.run(["export", "coredata", "--schema", "Schemas/Tasks.yaml", "-o", folder.appendingPathComponent("Tasks.model").path])
        #expect(wrongName.status == 2 && wrongName.error.contains(".xcdatamodeld"))
        // A recorded version edited behind migrations.sum is not exported.
        let project = folder.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        for item in ["Schemas", "Migrations"] {
            try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent(item), to: project.appendingPathComponent(item))
        }
        let recorded = project.appendingPathComponent("Migrations/Tasks/0001_create_tasks.schema.yaml")
        try (try String(contentsOf: recorded, encoding: .utf8) + "# edited\n").write(to: recorded, atomically: true, encoding: .utf8)
        let tampered = try schemagen.run(["export", "coredata", "--schema", "Schemas/Tasks.yaml", "-o", "Tasks.xcdatamodeld"], in: project)
        #expect(tampered.status == 1 && tampered.error.contains("0001_create_tasks.schema.yaml changed after it was generated"), "\(tampered.error)")
        #expect(!FileManager.default.fileExists(atPath: project.appendingPathComponent("Tasks.xcdatamodeld").path))
    }
}

/// `schemagen generate --target swiftdata` as a user runs it: the files, the warnings on
/// standard error, exit 0; a second run changes nothing.
@Suite struct SwiftDataTargetCommandTests {
    @Test func generateWritesTheVersionChainAndWarns() async throws {
        try await offThePool { try Self.generate() }
    }

    static func generate() throws {
        let folder = temporaryFolder()
        let output = folder.appendingPathComponent("AppModels").path
        let arguments = ["generate", "--target", "swiftdata", "-o", output, "--schema", "Schemas/Garage.yaml", "--cache-dir", folder.appendingPathComponent("cache").path]
        let run = try ImportFixtures.schemagen.run(arguments)
        #expect(run.status == 0, "\(run.error)")
        // Version 2 was released in an earlier release's form: the warning says what its file says.
        #expect(run.error.contains("warning: version 2, Car: the unique constraint [make, model, owner] includes the relationship 'owner'"), "\(run.error)")
        let kept = try String(contentsOfFile: output + "/Garage/GarageSchemaV2.swift", encoding: .utf8)
        #expect(kept.contains("// No SwiftData equivalent: the unique constraint [make, model, owner] includes the relationship 'owner'"))
        #expect(run.error.contains("warning: version 2, Mechanic.hiredOn: 'dateOnly' is not enforced"), "\(run.error)")
        #expect(run.error.contains("[swiftdata-no-equivalent]"))
        for file in ["Garage/GarageSchemaV1.swift", "Garage/GarageSchemaV2.swift", "Garage/Garage.swift", "Garage/Garage+MigrationPlan.swift"] {
            #expect(FileManager.default.fileExists(atPath: output + "/" + file), "\(file)")
        }
        let model = try String(contentsOfFile: output + "/Garage/GarageSchemaV1.swift", encoding: .utf8)
        #expect(model.contains("public struct Color: Codable, Hashable, Sendable {"))
        #expect(model.contains("@Relationship(deleteRule: .deny, maximumModelCount: 10, inverse: \\Car.owner)"))
        let again = try ImportFixtures.schemagen.run(arguments)
        #expect(again.status == 0 && again.output.contains("nothing changed"), "\(again.output)")
        let unknown = try ImportFixtures.schemagen.run(["generate", "--target", "swiftui", "-o", output])
        #expect(unknown.status == 2, "\(unknown.error)")
    }
}
