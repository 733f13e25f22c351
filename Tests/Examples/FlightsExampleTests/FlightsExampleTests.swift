import ExampleModels
import Foundation
import JSONDocument
import PersistentStoreCore
import PersistentStoreSQLite
import TestSupport
import Testing

@testable import FlightsExample

let fixturesRoot = repositoryRoot.appendingPathComponent("Tests/Fixtures")
let fixtures = fixturesRoot.appendingPathComponent("Flights").path
let malformedFixtures = fixturesRoot.appendingPathComponent("FlightsMalformed").path

func temporaryDatabase() -> String {
    temporaryFolder().appendingPathComponent("flights.sqlite").path
}

func loadedStore() async throws -> Store {
    let store = try Store(path: temporaryDatabase(), schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
    _ = try await FlightLoader(store: store).load(directory: fixtures)
    return store
}

/// The fixture read the plainest way, with Foundation's JSON reader and none of the loader's
/// code: what `flights query` must agree with.
struct PlainReading {
    /// Flight records by ident: files in name order, arrays in AeroAPI's order, the last record winning.
    var flights: [String: [String: Any]] = [:]
    var listedAirports: Set<String> = []
    var airlines: [[String: Any]] = []
    var recordCount = 0

    init(_ folder: String) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: folder).filter({ $0.hasSuffix(".json") }).sorted() {
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder + "/" + name)))
            if let list = json as? [[String: Any]] {
                if list.first?["airport_code"] != nil { listedAirports.formUnion(list.compactMap { $0["airport_code"] as? String }) } else { airlines += list }
                continue
            }
            guard let page = json as? [String: Any] else { continue }
            for array in ["arrivals", "departures", "scheduled_arrivals", "scheduled_departures"] {
                for record in page[array] as? [[String: Any]] ?? [] {
                    recordCount += 1
                    flights[record["ident"] as! String] = record
                }
            }
        }
    }

    static func code(_ record: [String: Any], _ key: String) -> String? { (record[key] as? [String: Any])?["code"] as? String }

    func lines(origin: String? = nil, destination: String? = nil, airline: String? = nil, enRoute: Bool = false, longestFirst: Bool = false, limit: Int? = nil) -> [String] {
        let chosen = flights.values.filter { record in
            (origin == nil || Self.code(record, "origin") == origin)
                && (destination == nil || Self.code(record, "destination") == destination)
                && (airline == nil || record["operator"] as? String == airline)
                && (!enRoute || (!(record["actual_off"] is NSNull) && record["actual_on"] is NSNull))
        }
        // Unknown distances sort as nil does in Swift: first going up, last going down.
        let sorted = chosen.sorted { a, b in
            let (x, y) = (a["route_distance"] as? Int, b["route_distance"] as? Int)
            if x != y {
                guard let x else { return !longestFirst }
                guard let y else { return longestFirst }
                return longestFirst ? x > y : x < y
            }
            return (a["ident"] as! String) < (b["ident"] as! String)
        }
        return sorted.prefix(limit ?? .max).map { record in
            [
                record["ident"] as! String, Self.code(record, "origin") ?? "", Self.code(record, "destination") ?? "",
                record["operator"] as? String ?? "", (record["route_distance"] as? Int).map(String.init) ?? "",
            ].joined(separator: "\t")
        }
    }
}

@Suite(.blocking) struct FlightsExampleTests {
    /// The shipped dataset keeps the quirks of real AeroAPI responses, so the tests below meet them.
    @Test func theFixtureHasTheQuirksOfRealResponses() throws {
        let plain = try PlainReading(fixtures)
        let records = Array(plain.flights.values)
        for key in ["filed_airspeed", "filed_altitude", "aircraft_type", "estimated_on", "route_distance", "progress_percent", "operator", "destination"] {
            #expect(records.contains { $0[key] is NSNull }, "no flight has a null \(key)")
        }
        #expect(plain.airlines.contains { $0["shortname"] is NSNull }, "no airline has a null shortname")
        let destinations = Set(records.compactMap { PlainReading.code($0, "destination") })
        #expect(!destinations.isSubset(of: plain.listedAirports), "every destination is in the airports file")
        #expect(plain.recordCount > plain.flights.count, "no ident repeats across pages")
    }

    @Test func everyRecordOfRealShapesIsStored() async throws {
        let plain = try PlainReading(fixtures)
        let store = try Store(path: temporaryDatabase(), schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
        let report = try await FlightLoader(store: store).load(directory: fixtures)
        #expect(report.rejections.isEmpty, "\(report.rejections)")
        #expect(report.files.map(\.file) == ["AIRLINES.json", "AIRPORTS.json", "ORD1.json", "SFO1.json", "SFO2.json"])
        #expect(report.files.reduce(0) { $0 + $1.flights } == plain.recordCount)
        #expect(report.files.reduce(0) { $0 + $1.replacedFlights } == plain.recordCount - plain.flights.count)
        #expect(try await store.count(Flight.self) == plain.flights.count)

        // Nulls are stored as nulls.
        let british = try #require(try await store.first(Flight.self, where: #Predicate { $0.ident == "BAW285" }))
        #expect(british.filedAirspeed == nil && british.filedAltitude == nil && british.routeDistance == 5367)
        let lufthansa = try #require(try await store.first(Flight.self, where: #Predicate { $0.ident == "DLH455" }))
        #expect(lufthansa.aircraftType == nil)
        #expect(try await store.first(Airline.self, where: #Predicate { $0.code == "SKW" })?.shortName == nil)
        #expect(try await store.first(Airline.self, where: #Predicate { $0.code == "UAL" })?.shortName == "United")

        // A position-only general-aviation flight: no operator, no destination, no distance.
        let private_ = try #require(try await store.first(Flight.self, where: #Predicate { $0.ident == "N88RV" }))
        #expect(private_.airlineID == nil && private_.destinationID == nil && private_.routeDistance == nil && private_.progressPercent == nil)

        // An airport no list named is stored with what the flight says of it, and nothing made up.
        let bozeman = try #require(try await store.first(Airport.self, where: #Predicate { $0.icao == "KBZN" }))
        #expect(bozeman.name == "Bozeman Yellowstone Intl" && bozeman.city == "Bozeman" && bozeman.timezone == "America/Denver")
        #expect(bozeman.latitude == nil && bozeman.countryCode == nil)
        let listed = try #require(try await store.first(Airport.self, where: #Predicate { $0.icao == "KSFO" }))
        #expect(listed.elevationFeet == 13 && listed.countryCode == "US")

        // Loading again changes nothing: every record upserts.
        let counts = (try await store.count(Flight.self), try await store.count(Airport.self), try await store.count(Airline.self))
        _ = try await FlightLoader(store: store).load(directory: fixtures)
        #expect(try await (store.count(Flight.self), store.count(Airport.self), store.count(Airline.self)) == counts)
    }

    @Test func queriesGiveTheAnswersOfAPlainReading() async throws {
        let plain = try PlainReading(fixtures)
        let store = try await loadedStore()
        #expect(try await FlightQuery().lines(in: store) == plain.lines())
        #expect(try await FlightQuery(longestFirst: true).lines(in: store) == plain.lines(longestFirst: true))
        #expect(try await FlightQuery(enRouteOnly: true).lines(in: store) == plain.lines(enRoute: true))
        #expect(!plain.lines(enRoute: true).isEmpty)
        let records = Array(plain.flights.values)
        for code in Set(records.compactMap { PlainReading.code($0, "origin") }) {
            #expect(try await FlightQuery(origin: code).lines(in: store) == plain.lines(origin: code), "origin \(code)")
        }
        for code in Set(records.compactMap { PlainReading.code($0, "destination") }) {
            #expect(try await FlightQuery(destination: code, longestFirst: true).lines(in: store) == plain.lines(destination: code, longestFirst: true), "destination \(code)")
        }
        for code in Set(records.compactMap { $0["operator"] as? String }) {
            #expect(try await FlightQuery(airline: code).lines(in: store) == plain.lines(airline: code), "airline \(code)")
        }
        #expect(
            try await FlightQuery(origin: "KSFO", enRouteOnly: true, longestFirst: true, limit: 3).lines(in: store)
                == plain.lines(origin: "KSFO", enRoute: true, longestFirst: true, limit: 3))
        #expect(try await FlightQuery(origin: "KSFO", destination: "KORD", airline: "UAL").lines(in: store) == plain.lines(origin: "KSFO", destination: "KORD", airline: "UAL"))
        #expect(try await FlightQuery(origin: "ZZZZ").lines(in: store).isEmpty, "an unknown code matches nothing")
    }
}

/// The `flights` executable as a user runs it.
@Suite(.blocking) struct FlightsToolTests {
    static let tool = BuiltTool("flights")

    static func run(_ arguments: [String]) throws -> BuiltTool.Run { try tool.run(arguments) }

    @Test(arguments: FlightsEngine.available)
    func loadAndQueryPrintWhatAPlainReadingGives(_ engine: FlightsEngine) throws {
        let plain = try PlainReading(fixtures)
        let database = try engine.freshDatabase()
        let load = try Self.run(["load", fixtures, "--database", database])
        #expect(load.status == 0, "\(load.error)")
        #expect(load.error.isEmpty)
        #expect(load.output.hasSuffix("flights\n") && load.output.contains("stored: 13 airlines, 16 airports, \(plain.flights.count) flights\n"), "\(load.output)")
        let query = try Self.run(["query", "--database", database, "--origin", "KSFO", "--sort", "-distance", "--limit", "4"])
        #expect(query.status == 0)
        #expect(query.output == plain.lines(origin: "KSFO", longestFirst: true, limit: 4).map { $0 + "\n" }.joined())
        let all = try Self.run(["query", "--database", database])
        #expect(all.output == plain.lines().map { $0 + "\n" }.joined())
        #expect(try Self.run(["query"]).status == 2, "no database")
        #expect(try Self.run(["load", "/nonexistent", "--database", database]).status == 2)
    }

    /// An app observing flights by their origin airport's name hears of it when another process
    /// renames the airport: the joined table changed, the flights did not.
    @Test func anObservedJoinedQueryFiresWhenAnotherProcessChangesTheJoinedTable() async throws {
        let plain = try PlainReading(fixtures)
        let database = temporaryDatabase()
        #expect(try Self.run(["load", fixtures, "--database", database]).status == 0)
        let store = try Store(path: database, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
        var results = await store.observe(Flight.self, joining: #Predicate { $0.origin?.name == "Renamed Field" }).makeAsyncIterator()
        #expect(try await results.next()?.isEmpty == true)
        // AIRPORTS.json again, with San Francisco renamed: only airports change.
        let folder = temporaryFolder().appendingPathComponent("renamed")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let airports = try String(contentsOfFile: fixtures + "/AIRPORTS.json", encoding: .utf8)
        try airports.replacingOccurrences(of: "\"San Francisco Int'l\"", with: "\"Renamed Field\"").write(to: folder.appendingPathComponent("AIRPORTS.json"), atomically: true, encoding: .utf8)
        let load = try Self.run(["load", folder.path, "--database", database])
        #expect(load.status == 0, "\(load.error)")
        let renamed = try await results.next()
        #expect(renamed?.count == plain.lines(origin: "KSFO").count)
        #expect(renamed?.isEmpty == false)
    }

    @Test(arguments: FlightsEngine.available)
    func rejectedRecordsAreNamedAndTheRestLoad(_ engine: FlightsEngine) throws {
        let database = try engine.freshDatabase()
        let load = try Self.run(["load", malformedFixtures, "--database", database])
        #expect(load.status == 3, "\(load.error)")
        let rejections = load.error.split(separator: "\n").map(String.init)
        #expect(
            rejections == [
                "AIRLINES.json: [3] (Nameless Air): icao: null, but a value is required",
                "AIRLINES.json: [4] (XYZ): shortname: 5 is not text",
                "AIRPORTS.json: [2] (KXXX): latitude: \"north\" is not a number",
                "BROKEN.json:4:2: not JSON: unexpected ']'; expected a value; nothing in this file was loaded",
                "NOTES.json:1:1: not an AeroAPI response this loader knows: expected airline (operator) or airport records, or a page with arrivals, departures, scheduled_arrivals, scheduled_departures, flights arrays; nothing in this file was loaded",
                "ORD1.json: arrivals[3] (UAL123): scheduled_off: \"not a date\" is not an ISO 8601 date",
                "ORD1.json: departures[0] (UAL456): status: null, but a value is required",
                "ORD1.json: departures[1] (AAL789): route_distance: 12.5 is not a whole number",
                "ORD1.json: departures[2]: ident: missing, but a value is required",
                "ORD1.json: departures[3] (SWA42): origin: \"KORD\" is not an airport object with a code",
                "flights: 10 records or files rejected in 5 files, listed above; everything else was stored",
            ])
        // Everything else of those files was stored.
        #expect(load.output.contains("ORD1.json: 4 flights"), "\(load.output)")
        #expect(load.output.contains("stored: 5 airlines, 5 airports, 4 flights"), "\(load.output)")
    }

    @Test(arguments: FlightsEngine.available)
    func strictStoresNothingWhenARecordIsRejected(_ engine: FlightsEngine) throws {
        let database = try engine.freshDatabase()
        let load = try Self.run(["load", malformedFixtures, "--database", database, "--strict"])
        #expect(load.status == 1)
        #expect(load.error.hasSuffix("flights: error: --strict: 10 rejections; nothing was stored\n"), "\(load.error)")
        #expect(load.output.isEmpty)
        let query = try Self.run(["query", "--database", database])
        #expect(query.status == 0 && query.output.isEmpty, "no flight was stored")
        // A clean folder loads whole under --strict.
        #expect(try Self.run(["load", fixtures, "--database", database, "--strict"]).status == 0)
    }
}

@Suite struct JSONParserTests {
    func parse(_ text: String) throws(JSONSyntaxError) -> JSONNode { try JSONParser.parse(Array(text.utf8)) }

    func failure(_ text: String) -> JSONSyntaxError? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func valuesKeepTheirPositions() throws {
        let root = try parse("{\n  \"a\": [1, 2.5e3, -0],\n  \"b\": {\"c\": null, \"d\": true}\n}")
        #expect(root["a"]?.line == 2 && root["a"]?.column == 8)
        #expect(root["b"]?["c"]?.isNull == true && root["b"]?["c"]?.line == 3)
        #expect(root["a"]?.jsonText == "[1,2.5e3,-0]", "numbers pass through as written")
    }

    @Test func stringsDecodeEveryEscape() throws {
        let node = try parse(#""q\" s\\ /\/ \b\f\n\r\t \u00e9 \ud83d\ude00 é""#)
        #expect(node.string == "q\" s\\ // \u{08}\u{0C}\n\r\t é 😀 é")
        #expect(try parse(node.jsonText).string == node.string, "written back, it reads the same")
    }

    @Test func errorsNameLineAndColumn() {
        #expect(failure("[1,\n 2,\n]")?.description == "3:1: unexpected ']'; expected a value")
        #expect(failure("{\"a\" 1}")?.description == "1:6: unexpected '1'; expected ':' after the member name")
        #expect(failure("\"open")?.message == "unterminated string: add a closing '\"'")
        #expect(failure("\"a\nb\"")?.message.hasPrefix("a line break inside a string") == true)
        #expect(failure("01")?.message == "numbers may not start with 0")
        #expect(failure("{\"é\": x}")?.column == 7, "columns count characters, not bytes")
        #expect(failure("")?.message == "the file is empty; expected a JSON value")
        #expect(failure("[1] 2")?.message == "unexpected '2' after the JSON value")
        #expect(failure("\"\\ud800\"")?.message.contains("low surrogate") == true)
        #expect(failure("tru")?.message == "unexpected 't'; expected a value")
    }

    @Test func hostileInputIsAnErrorNotACrash() {
        #expect(failure(String(repeating: "[", count: 100_000))?.message == "nesting deeper than 512 levels")
        let invalidUTF8: [UInt8] = [0x22, 0xC3, 0x28, 0x22]
        #expect((try? JSONParser.parse(invalidUTF8)) == nil)
        let seed = SeededGenerator.seed(default: 0x15_0_7)
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            let bytes = (0..<64).map { _ in [UInt8]("{}[]\",:0123456789.eE+-tfnrul \\\n".utf8).randomElement(using: &generator)! }
            _ = try? JSONParser.parse(bytes)
        }
    }
}

/// Where `flights` loads: a SQLite file, or a database on the PostgreSQL server the tests start
/// (where its binaries are missing, those cases are skipped, and say so).
enum FlightsEngine: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    static var available: [FlightsEngine] {
        if !PostgresServer.available { print("◇ \(PostgresServer.skipReason): the flights process tests run on SQLite only") }
        return PostgresServer.available ? allCases : [.sqlite]
    }

    func freshDatabase() throws -> String {
        switch self {
        case .sqlite: return temporaryDatabase()
        case .postgres: return try #require(PostgresServer.shared, "the PostgreSQL test server did not start").createDatabase()
        }
    }
}
