import ExampleModels
import Foundation
import PersistentStore

/// Loads FlightAware AeroAPI-shaped JSON into a store through the generated Codable models.
public struct FlightLoader: Sendable {
    public let store: Store

    public init(store: Store) {
        self.store = store
    }

    /// What one file contributed.
    public struct FileReport: Sendable, Equatable {
        public var file: String
        public var airlines = 0
        public var airports = 0
        public var flights = 0
        /// Airports and airlines referenced but absent from the files, created with their code.
        public var createdByCode = 0
        /// Records whose required fields were null or malformed.
        public var skipped = 0
    }

    /// `AIRLINES.json`, then `AIRPORTS.json`, then every other `*.json` file by name as a page of
    /// flights; one transaction per file. Flights upsert on `ident`: the last record wins.
    public func load(directory: String) async throws -> [FileReport] {
        let folder = URL(fileURLWithPath: directory)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted()
        var reports: [FileReport] = []
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601

        if names.contains("AIRLINES.json") {
            let airlines = try decoder.decode([Airline].self, from: Data(contentsOf: folder.appendingPathComponent("AIRLINES.json")))
            try await store.insert(airlines)
            reports.append(FileReport(file: "AIRLINES.json", airlines: airlines.count))
        }
        if names.contains("AIRPORTS.json") {
            let airports = try decoder.decode([Airport].self, from: Data(contentsOf: folder.appendingPathComponent("AIRPORTS.json")))
            try await store.insert(airports)
            reports.append(FileReport(file: "AIRPORTS.json", airports: airports.count))
        }
        var codes = try await knownCodes()
        for name in names where name != "AIRLINES.json" && name != "AIRPORTS.json" {
            let page = try decoder.decode(FlightPage.self, from: Data(contentsOf: folder.appendingPathComponent(name)))
            let records = page.records
            let (report, updated) = try await store.transaction { [codes] store in
                var codes = codes
                var report = FileReport(file: name, skipped: records.filter { $0.flight == nil }.count)
                for record in records {
                    guard var flight = record.flight else { continue }
                    flight.originID = try record.origin.flatMap { try Self.airportID($0, &codes, &report, store) }
                    flight.destinationID = try record.destination.flatMap { try Self.airportID($0, &codes, &report, store) }
                    let airline = record.operatorCode ?? String(flight.ident.prefix { $0.isLetter })
                    flight.airlineID = airline.isEmpty ? nil : try Self.airlineID(airline, &codes, &report, store)
                    try store.insert(flight)
                    report.flights += 1
                }
                return (report, codes)
            }
            codes = updated
            reports.append(report)
        }
        return reports
    }

    /// Airport and airline ids by code, so pages can link without a query per flight.
    struct Codes: Sendable {
        var airports: [String: Int64] = [:]
        var airlines: [String: Int64] = [:]
    }

    private func knownCodes() async throws -> Codes {
        var codes = Codes()
        for airport in try await store.fetch(Airport.self) { codes.airports[airport.icao] = airport.id }
        for airline in try await store.fetch(Airline.self) { codes.airlines[airline.code] = airline.id }
        return codes
    }

    /// Find or create, as the SwiftData article does.
    private static func airportID(_ code: String, _ codes: inout Codes, _ report: inout FileReport, _ store: isolated Store) throws -> Int64? {
        if let id = codes.airports[code] { return id }
        let created = try store.insert(Airport(icao: code, name: code, city: "", countryCode: "", latitude: 0, longitude: 0))
        codes.airports[code] = created.id
        report.createdByCode += 1
        return created.id
    }

    private static func airlineID(_ code: String, _ codes: inout Codes, _ report: inout FileReport, _ store: isolated Store) throws -> Int64? {
        if let id = codes.airlines[code] { return id }
        let created = try store.insert(Airline(code: code, name: code, shortName: code))
        codes.airlines[code] = created.id
        report.createdByCode += 1
        return created.id
    }
}

/// A page of flights: four arrays of records, read in this order.
struct FlightPage: Decodable {
    var arrivals: [FlightRecord]?
    var departures: [FlightRecord]?
    var scheduledArrivals: [FlightRecord]?
    var scheduledDepartures: [FlightRecord]?

    enum CodingKeys: String, CodingKey {
        case arrivals, departures
        case scheduledArrivals = "scheduled_arrivals"
        case scheduledDepartures = "scheduled_departures"
    }

    var records: [FlightRecord] { (arrivals ?? []) + (departures ?? []) + (scheduledArrivals ?? []) + (scheduledDepartures ?? []) }
}

/// One flight record: the generated `Flight` decoded through its jsonKeys, and the links
/// AeroAPI gives as codes.
struct FlightRecord: Decodable, Sendable {
    /// Nil when a required field is null or malformed; the record is skipped and counted.
    var flight: Flight?
    var operatorCode: String?
    var origin: String?
    var destination: String?

    struct Code: Decodable { var code: String? }
    enum Links: String, CodingKey {
        case operatorCode = "operator", origin, destination
    }

    init(from decoder: any Decoder) throws {
        flight = try? Flight(from: decoder)
        let links = try decoder.container(keyedBy: Links.self)
        operatorCode = try links.decodeIfPresent(String.self, forKey: .operatorCode)
        origin = try links.decodeIfPresent(Code.self, forKey: .origin)?.code
        destination = try links.decodeIfPresent(Code.self, forKey: .destination)?.code
    }
}
