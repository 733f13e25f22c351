import ExampleModels
import Foundation
import PersistentStore
import Testing
@testable import FlightsExample

let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/Flights").path

func loadedStore() async throws -> Store {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("flights-\(UUID().uuidString).sqlite").path
    let store = try Store(path: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
    _ = try await FlightLoader(store: store).load(directory: fixtures)
    return store
}

@Suite struct FlightsExampleTests {
    @Test func loadingDecodesThroughTheGeneratedModels() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("flights-\(UUID().uuidString).sqlite").path
        let store = try Store(path: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
        let reports = try await FlightLoader(store: store).load(directory: fixtures)
        #expect(reports.map(\.file) == ["AIRLINES.json", "AIRPORTS.json", "page1.json", "page2.json"])
        #expect(reports.map(\.flights) == [0, 0, 26, 12])
        #expect(try await store.count(Flight.self) == 37, "one ident appears on both pages: the last record wins")
        #expect(try await store.first(Airport.self, where: #Predicate { $0.icao == "EGLL" })?.state == nil)
        #expect(try await store.first(Airline.self, where: #Predicate { $0.code == "UAL" })?.shortName == "United")

        // Referenced but not listed: created by code (find or create).
        #expect(try await store.first(Airport.self, where: #Predicate { $0.icao == "KDEN" })?.name == "KDEN")
        // No operator: the airline comes from the ident's letters.
        let jetBlue = try #require(try await store.first(Airline.self, where: #Predicate { $0.code == "JBU" }))
        #expect(try await store.count(Flight.self, where: #Predicate { $0.airlineID == jetBlue.id }) > 0)

        // Loading again changes nothing: every record upserts.
        _ = try await FlightLoader(store: store).load(directory: fixtures)
        #expect(try await store.count(Flight.self) == 37)
        #expect(try await store.count(Airport.self) == 7)
    }

    @Test func theLastRecordOfAnIdentWins() async throws {
        let store = try await loadedStore()
        let page1 = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: fixtures + "/page1.json"))) as? [String: [[String: Any]]]
        let ident = try #require(page1?["departures"]?.first?["ident"] as? String)
        let flight = try #require(try await store.first(Flight.self, where: #Predicate { $0.ident == ident }))
        #expect(flight.status == "Arrived / Gate Arrival", "page 2 updated it")
        #expect(flight.actualOn != nil)
    }

    @Test func queriesCombineTheGivenFilters() async throws {
        let store = try await loadedStore()
        let all = try await FlightQuery().lines(in: store)
        #expect(all.count == 37)
        let distances = all.map { Int($0.split(separator: "\t")[4])! }
        #expect(distances == distances.sorted(), "distance ascending by default")

        let fromSFO = try await FlightQuery(origin: "KSFO", longestFirst: true).lines(in: store)
        #expect(!fromSFO.isEmpty && fromSFO.allSatisfy { $0.split(separator: "\t")[1] == "KSFO" })
        let sfoDistances = fromSFO.map { Int($0.split(separator: "\t")[4])! }
        #expect(sfoDistances == sfoDistances.sorted(by: >))

        let enRoute = try await FlightQuery(enRouteOnly: true).lines(in: store)
        let enRouteCount = try await store.count(Flight.self, where: #Predicate { $0.actualOff != nil && $0.actualOn == nil })
        #expect(enRoute.count == enRouteCount && enRouteCount > 0)

        let united = try await FlightQuery(airline: "UAL", limit: 2).lines(in: store)
        #expect(united.count == 2 && united.allSatisfy { $0.split(separator: "\t")[3] == "UAL" })
        #expect(try await FlightQuery(origin: "ZZZZ").lines(in: store).isEmpty, "an unknown code matches nothing")
        let route = try await FlightQuery(origin: "KSFO", destination: "KSEA").lines(in: store)
        #expect(route.allSatisfy { $0.contains("\tKSFO\tKSEA\t") })
    }

    @Test func theExecutablePrintsTabSeparatedLines() throws {
        var folder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: folder.appendingPathComponent("flights").path), folder.path != "/" {
            folder = folder.deletingLastPathComponent()
        }
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("flights-cli-\(UUID().uuidString).sqlite").path
        func run(_ arguments: [String]) throws -> (Int32, String) {
            let process = Process()
            process.executableURL = folder.appendingPathComponent("flights")
            process.arguments = arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = Pipe()
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        let load = try run(["load", fixtures, "--database", database])
        #expect(load.0 == 0)
        #expect(load.1.hasSuffix("stored: 5 airlines, 7 airports, 37 flights\n"))
        let query = try run(["query", "--database", database, "--origin", "KSFO", "--sort", "-distance", "--limit", "1"])
        #expect(query.0 == 0)
        #expect(query.1.split(separator: "\t").count == 5)
        #expect(try run(["query"]).0 == 2, "no database")
    }
}
