import Diagnostics
import Foundation
import TestSupport
import Testing
import YAMLReader

@testable import SchemaKit

/// The example schemas in `Schemas/` are valid, use every key of the language, and resolve
/// to the tables, keys and links the documentation promises.
@Suite struct ExampleSchemaTests {
    /// Every example schema in `Schemas/`.
    static let files = ((try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("Schemas").path)) ?? [])
        .filter { $0.hasSuffix(".yaml") }.sorted().map { repositoryRoot.appendingPathComponent("Schemas/\($0)").path }

    func schema(_ name: String) throws -> Schema {
        let result = SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/\(name).yaml").path)
        return try #require(result.schema, "\(result.diagnostics)")
    }

    @Test func allExamplesAreValidWithoutWarnings() {
        let result = SchemaLoader.load(files: Self.files)
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics.map(\.message))")
        #expect(result.schemas.map(\.name) == ["Dispatch", "Flights", "Garage", "Inbox", "Notes", "Tasks", "Todo", "Users"])
    }

    /// The schema the language reference (docs/schema-language.md) opens with.
    static func languageReferenceSchema() throws -> String {
        let markdown = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/schema-language.md"), encoding: .utf8)
        let start = try #require(markdown.range(of: "```yaml\n"))
        let end = try #require(markdown.range(of: "```", range: start.upperBound..<markdown.endIndex))
        return String(markdown[start.upperBound..<end.lowerBound])
    }

    /// Between them, the examples and the language reference's schema use every key: an
    /// option is shown where it is described, and the examples show it in use.
    @Test func examplesUseEveryKeyOfTheLanguage() throws {
        var used: [String: Set<String>] = [:]
        let sources =
            try Self.files.map { path in SourceFile(path: path, bytes: try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) }
            + [SourceFile(path: "docs/schema-language.md", bytes: Array(try Self.languageReferenceSchema().utf8))]
        for source in sources {
            var bag = DiagnosticBag()
            guard case .document(let root) = YAMLLoader.load(source, diagnostics: &bag) else {
                Issue.record("cannot read \(source.path)")
                continue
            }
            func keys(_ node: YAMLNode?) -> Set<String> { Set((node?.pairs ?? []).compactMap(\.key.scalarText)) }
            func children(_ node: YAMLNode?) -> [YAMLNode] { (node?.pairs ?? []).map(\.value) }
            used["root", default: []].formUnion(keys(root))
            let top = Dictionary((root.pairs ?? []).map { ($0.key.scalarText ?? "", $0.value) }, uniquingKeysWith: { a, _ in a })
            for enumNode in children(top["enums"]) { used["enum", default: []].formUnion(keys(enumNode)) }
            for valueNode in children(top["values"]) {
                let valueKeys = keys(valueNode)
                if valueKeys.contains("fields") {
                    used["value", default: []].formUnion(valueKeys)
                    for field in children(valueNode.pairs?.first { $0.key.scalarText == "fields" }?.value) {
                        used["field", default: []].formUnion(keys(field))
                    }
                } else {
                    for field in children(valueNode) { used["field", default: []].formUnion(keys(field)) }
                }
            }
            for entity in children(top["entities"]) {
                used["entity", default: []].formUnion(keys(entity))
                let entityMap = Dictionary((entity.pairs ?? []).map { ($0.key.scalarText ?? "", $0.value) }, uniquingKeysWith: { a, _ in a })
                for attribute in children(entityMap["attributes"]) { used["attribute", default: []].formUnion(keys(attribute)) }
                for relationship in children(entityMap["relationships"]) { used["relationship", default: []].formUnion(keys(relationship)) }
            }
        }
        let language: [String: [String]] = [
            "root": SchemaParser.rootKeys, "enum": SchemaParser.enumKeys, "value": SchemaParser.valueKeys,
            "field": SchemaParser.fieldKeys, "entity": SchemaParser.entityKeys,
            "attribute": SchemaParser.attributeKeys, "relationship": SchemaParser.relationshipKeys,
        ]
        for (level, keys) in language {
            let missing = Set(keys).subtracting(used[level] ?? [])
            #expect(missing.isEmpty, "neither an example schema nor the language reference's uses these \(level) keys: \(missing.sorted())")
        }
    }

    /// Every option an example or the language reference writes reaches the attribute it is
    /// written on (`AttributeOption.value(of:)`): a key the parser accepts but never reads fails
    /// here.
    @Test func everyOptionWrittenIsRead() throws {
        let texts = try Self.files.map { try String(contentsOfFile: $0, encoding: .utf8) } + [try Self.languageReferenceSchema()]
        var checked: Set<String> = []
        for text in texts {
            var bag = DiagnosticBag()
            let result = SchemaLoader.load(source: SourceFile(path: "schema.yaml", text: text))
            let schema = try #require(result.schema, "\(result.diagnostics.map(\.message))")
            guard case .document(let root) = YAMLLoader.load(SourceFile(path: "schema.yaml", text: text), diagnostics: &bag) else { continue }
            let entities = root.pairs?.first { $0.key.scalarText == "entities" }?.value.pairs ?? []
            for entityPair in entities {
                let entity = try #require(schema.entity(named: entityPair.key.scalarText ?? ""))
                let attributes = entityPair.value.pairs?.first { $0.key.scalarText == "attributes" }?.value.pairs ?? []
                for attributePair in attributes {
                    let attribute = try #require(entity.attribute(named: attributePair.key.scalarText ?? ""))
                    for option in attributePair.value.pairs ?? [] {
                        guard let key = option.key.scalarText, let known = AttributeOption(rawValue: key), known != .coreData, option.value.scalarText != "false" else { continue }
                        #expect(known.value(of: attribute) != nil, "\(entity.name).\(attribute.name) writes '\(key)', which the attribute does not hold")
                        checked.insert(key)
                    }
                }
            }
        }
        let unchecked = Set(AttributeOption.allCases.map(\.key)).subtracting(checked).subtracting(["coreData"])
        #expect(unchecked.isEmpty, "no attribute writes \(unchecked.sorted()) for this check to read")
    }

    @Test func theLanguageReferenceOpensWithAValidSchema() throws {
        let result = load(try Self.languageReferenceSchema(), name: "schema-language.md")
        #expect(result.diagnostics.isEmpty, "\(renderText(result))")
        #expect(result.schema?.entity(named: "Flight")?.attribute(named: "status")?.defaultValue == .enumCase("scheduled"))
    }

    @Test func theReadmeExampleIsValid() throws {
        let markdown = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(markdown.range(of: "```yaml\nschema: Tasks\n"))
        let body = markdown[markdown.index(start.lowerBound, offsetBy: 8)...]
        let end = try #require(body.range(of: "```"))
        let result = load(String(body[..<end.lowerBound]), name: "README.md")
        #expect(result.diagnostics.isEmpty, "\(renderText(result))")
        #expect(result.schema?.name == "Tasks")
    }

    @Test func flightsResolveInversesTablesAndForeignKeys() throws {
        let flights = try schema("Flights")
        let flight = try #require(flights.entity(named: "Flight"))
        let airport = try #require(flights.entity(named: "Airport"))
        let airline = try #require(flights.entity(named: "Airline"))
        #expect(flight.tableName == "flights")
        #expect(flight.primaryKey == .implicit)
        #expect(flight.primaryKeyColumns == ["id"])
        // Inverses declared on one side are filled in on the other.
        #expect(flight.relationship(named: "airline")?.inverse == "flights")
        #expect(airline.relationship(named: "flights")?.inverse == "airline")
        #expect(airport.relationship(named: "flightsTo")?.inverse == "destination")
        // The to-one side stores the key; the to-many side stores nothing.
        #expect(flight.relationship(named: "origin")?.foreignKeyColumns == ["origin_id"])
        #expect(airport.relationship(named: "flightsFrom")?.foreignKeyColumns == [])
        #expect(airport.attribute(named: "countryCode")?.columnName == "country_code")
        #expect(airport.attribute(named: "icao")?.jsonKey == "airport_code")
        #expect(airport.attribute(named: "isFavorite")?.isTransient == true)
        #expect(airport.attribute(named: "elevationFeet")?.jsonKey == "elevation", "AeroAPI's key for the renamed attribute")
        #expect(airport.attribute(named: "isFavorite")?.defaultValue == .bool(false))
        #expect(flight.indexes == [["origin", "scheduledOff"], ["destination", "scheduledOn"], ["routeDistance"]])
    }

    @Test func keysDefaultsAndLinksOfTheOtherExamples() throws {
        let todo = try #require(try schema("Todo").entity(named: "TodoItem"))
        #expect(todo.tableName == "todo_item")
        #expect(todo.primaryKey == .members(["id"]))
        #expect(todo.attribute(named: "id")?.defaultValue == .generatedUUID)
        #expect(todo.attribute(named: "startDate")?.defaultValue == .now)

        let tasks = try schema("Tasks")
        let priority = try #require(tasks.enumType(named: "Priority"))
        #expect(priority.rawType == .int)
        #expect(priority.cases.map(\.rawValue) == [.int(0), .int(1), .int(2)])
        let task = try #require(tasks.entity(named: "Task"))
        #expect(task.relationship(named: "list")?.foreignKeyColumns == ["list_id"])
        #expect(task.relationship(named: "list")?.isOptional == false)
        #expect(task.attribute(named: "tags")?.type == .array(.scalar(.string)))
        #expect(task.attribute(named: "tags")?.defaultValue == .array([]))
        #expect(task.attribute(named: "dueDate")?.isOptional == true)
        #expect(tasks.entity(named: "TaskList")?.relationship(named: "tasks")?.deleteRule == .cascade)

        let users = try schema("Users")
        let user = try #require(users.entity(named: "User"))
        let image = try #require(users.entity(named: "Image"))
        // One-to-one: the side with an explicit column stores the key.
        #expect(image.relationship(named: "owner")?.foreignKeyColumns == ["owner_identifier"])
        #expect(user.relationship(named: "image")?.foreignKeyColumns == [])
        #expect(user.attribute(named: "type")?.defaultValue == .enumCase("member"))
        #expect(user.attribute(named: "name")?.renamedFrom == "fullName")

        let garage = try schema("Garage")
        let car = try #require(garage.entity(named: "Car"))
        let mechanic = try #require(garage.entity(named: "Mechanic"))
        let visit = try #require(garage.entity(named: "ServiceVisit"))
        #expect(car.relationship(named: "mechanics")?.joinTableName == "car_mechanics")
        #expect(mechanic.relationship(named: "cars")?.joinTableName == "car_mechanics")
        #expect(visit.primaryKeyColumns == ["car_id", "day"])
        #expect(garage.entity(named: "Person")?.tableName == "people")
        #expect(garage.entity(named: "Person")?.attribute(named: "name")?.columnName == "full_name")
        #expect(
            car.attribute(named: "color")?.defaultValue
                == .value([
                    .init(name: "red", value: .double(1)),
                    .init(name: "green", value: .double(0)), .init(name: "blue", value: .double(0)),
                    .init(name: "alpha", value: .double(1)), .init(name: "label", value: .null),
                ]))
        #expect(garage.valueType(named: "Color")?.fields.last?.jsonKey == "name")
    }
}
