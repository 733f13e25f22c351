import ExampleModels
import Foundation
import JSONDocument
import PersistentStore
import SchemaMetadata

/// Loads FlightAware AeroAPI responses into a store through the generated Codable models.
///
/// A folder may hold, in any file names: operator (airline) and airport records, as a JSON array
/// or wrapped as AeroAPI wraps them (`{"operators": [...]}`, `{"airports": [...]}`, or one record
/// alone), and pages of flights (`arrivals`, `departures`, `scheduled_arrivals`,
/// `scheduled_departures` or `flights` arrays). Airlines load first, then airports, then flights,
/// each group in file-name order. A record that cannot be stored is rejected with its file,
/// array and index, ident, key and reason; the rest still load. Nothing is dropped silently.
public struct FlightLoader: Sendable {
    public let store: Store

    public init(store: Store) {
        self.store = store
    }

    /// A record or file that was not stored, and why.
    public struct Rejection: Sendable, Equatable, CustomStringConvertible {
        public var file: String
        /// `arrivals[3]`, or `[14]` in a top-level array; nil when the whole file was rejected.
        public var position: String?
        /// 1-based line and column of the record, or of the syntax error in a broken file.
        public var line: Int
        public var column: Int
        /// The record's ident, airport code or airline code, where it has one.
        public var ident: String?
        /// The JSON key at fault, where one is.
        public var key: String?
        public var reason: String

        /// `ORD1.json: arrivals[3] (UAL123): scheduled_off: "not a date" is not an ISO 8601 date`,
        /// or `BROKEN.json:7:12: not JSON: ...` for a whole file.
        public var description: String {
            guard let position else { return "\(file):\(line):\(column): \(reason)" }
            return "\(file): \(position)\(ident.map { " (\($0))" } ?? ""): \(key.map { "\($0): " } ?? "")\(reason)"
        }
    }

    /// What one file contributed.
    public struct FileReport: Sendable, Equatable {
        public var file: String
        public var airlines = 0
        public var airports = 0
        public var flights = 0
        /// Flights whose ident an earlier record of this load already had: the later record wins.
        public var replacedFlights = 0
        /// Airports and airlines referenced by flights but absent from the lists, stored with what
        /// the flight says of them.
        public var airportsCreated = 0
        public var airlinesCreated = 0
        public var rejected = 0
    }

    public struct Report: Sendable, Equatable {
        public var files: [FileReport] = []
        public var rejections: [Rejection] = []
        /// False when `strict` refused to store anything.
        public var stored = true
    }

    // MARK: - Reading

    enum Kind: Int, Comparable {
        case airlines, airports, flights
        static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
    }

    /// A file's records, decoded, with the rejections found while decoding.
    struct ReadFile {
        var name: String
        var kind: Kind
        var airlines: [Airline] = []
        var airports: [Airport] = []
        var flights: [FlightRecord] = []
        var rejections: [Rejection] = []
    }

    /// One flight and the codes AeroAPI links it by.
    struct FlightRecord: Sendable {
        var flight: Flight
        var operatorCode: String?
        var origin: AirportReference?
        var destination: AirportReference?
    }

    /// What a flight says of an airport (`origin`, `destination`).
    struct AirportReference: Sendable {
        var code: String
        var name: String?
        var city: String?
        var timezone: String?
    }

    static let flightArrays = ["arrivals", "departures", "scheduled_arrivals", "scheduled_departures", "flights"]

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = StoredDate.date(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "is not an ISO 8601 date")
            }
            return date
        }
        return decoder
    }()

    /// Reads and decodes one file; a file that is not JSON, or not an AeroAPI shape, is one rejection.
    static func read(name: String, bytes: [UInt8]) -> ReadFile {
        let root: JSONNode
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            var file = ReadFile(name: name, kind: .flights)
            file.rejections.append(
                Rejection(file: name, position: nil, line: error.line, column: error.column, ident: nil, key: nil, reason: "not JSON: \(error.message); nothing in this file was loaded"))
            return file
        }
        // Which records the file holds, by shape: AeroAPI's wrappers, a bare array, or one record.
        var lists: [(name: String, items: [JSONNode])] = []
        var kind: Kind?
        if case .object(let members) = root.value {
            let keys = Set(members.map(\.key))
            if !keys.isDisjoint(with: flightArrays) {
                kind = .flights
                for array in flightArrays {
                    guard let node = root[array], !node.isNull else { continue }
                    guard case .array(let items) = node.value else {
                        return rejectedFile(name, root: node, "'\(array)' is \(node.jsonText.prefix(40)), not an array of flights")
                    }
                    lists.append((array, items))
                }
            } else if let node = root["airports"], case .array(let items) = node.value {
                (kind, lists) = (.airports, [("airports", items)])
            } else if let node = root["operators"], case .array(let items) = node.value {
                (kind, lists) = (.airlines, [("operators", items)])
            } else if keys.contains("airport_code") {
                (kind, lists) = (.airports, [("", [root])])
            } else if keys.contains("icao"), keys.contains("name") || keys.contains("shortname") {
                (kind, lists) = (.airlines, [("", [root])])
            }
        } else if case .array(let items) = root.value {
            lists = [("", items)]
            if let first = items.first(where: { if case .object = $0.value { true } else { false } }) {
                if first["airport_code"] != nil {
                    kind = .airports
                } else if first["ident"] != nil {
                    kind = .flights
                } else if first["icao"] != nil || first["shortname"] != nil || first["callsign"] != nil {
                    kind = .airlines
                }
            } else if items.isEmpty {
                kind = .flights
            }
        }
        guard let kind else {
            return rejectedFile(
                name, root: root, "not an AeroAPI response this loader knows: expected airline (operator) or airport records, or a page with \(flightArrays.joined(separator: ", ")) arrays")
        }

        var file = ReadFile(name: name, kind: kind)
        for (array, items) in lists {
            for (index, item) in items.enumerated() {
                let position = "\(array)[\(index)]"
                do throws(RecordError) {
                    switch kind {
                    case .airlines: file.airlines.append(try decode(Airline.self, normalised(item, code: "icao")))
                    case .airports: file.airports.append(try decode(Airport.self, normalised(item, code: "airport_code")))
                    case .flights: file.flights.append(try flightRecord(item))
                    }
                } catch {
                    let candidates = kind == .flights ? ["ident"] : kind == .airports ? ["airport_code", "code"] : ["icao", "code", "name"]
                    let ident = candidates.lazy.compactMap { item[$0]?.string }.first
                    file.rejections.append(Rejection(file: name, position: position, line: item.line, column: item.column, ident: ident, key: error.key, reason: error.reason))
                }
            }
        }
        return file
    }

    static func rejectedFile(_ name: String, root: JSONNode, _ reason: String) -> ReadFile {
        var file = ReadFile(name: name, kind: .flights)
        file.rejections.append(Rejection(file: name, position: nil, line: root.line, column: root.column, ident: nil, key: nil, reason: reason + "; nothing in this file was loaded"))
        return file
    }

    /// AeroAPI's short list forms name the code `code`; the full records name it `icao` or `airport_code`.
    static func normalised(_ node: JSONNode, code key: String) -> JSONNode {
        guard case .object(var members) = node.value, node[key] == nil, let code = node["code"] else { return node }
        members.append((key, code))
        return JSONNode(value: .object(members), line: node.line, column: node.column)
    }

    /// Why a record cannot be stored: the key at fault and a reason a person can act on.
    struct RecordError: Error {
        var key: String?
        var reason: String
    }

    static func decode<T: PersistentModel>(_ type: T.Type, _ node: JSONNode) throws(RecordError) -> T {
        guard case .object = node.value else { throw RecordError(key: nil, reason: "\(node.jsonText.prefix(40)) is not a JSON object") }
        // Foundation's decoder reports a fraction in a whole-number field as invalid JSON, naming
        // no key: check those fields first, from the model's metadata.
        for column in T.entity.columns where column.storage == .integer {
            guard let value = node[column.jsonKey], case .number(let text) = value.value else { continue }
            if Int64(text) == nil {
                throw RecordError(key: column.jsonKey, reason: "\(text) is not a whole number\(text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? "" : " that fits in 64 bits")")
            }
        }
        do {
            return try decoder.decode(T.self, from: Data(node.jsonText.utf8))
        } catch let error as DecodingError {
            throw describe(error, in: node)
        } catch {
            throw RecordError(key: nil, reason: "\(error)")
        }
    }

    static func describe(_ error: DecodingError, in record: JSONNode) -> RecordError {
        func shown(_ key: String?) -> String {
            guard let key, let value = record[key] else { return "the value" }
            let text = value.jsonText
            return text.count > 60 ? String(text.prefix(57)) + "..." : text
        }
        switch error {
        case .keyNotFound(let key, _):
            return RecordError(key: key.stringValue, reason: "missing, but a value is required")
        case .valueNotFound(_, let context):
            return RecordError(key: context.codingPath.first?.stringValue, reason: "null, but a value is required")
        case .typeMismatch(let type, let context):
            let key = context.codingPath.first?.stringValue
            return RecordError(key: key, reason: "\(shown(key)) is not \(expectation(type))")
        case .dataCorrupted(let context):
            let key = context.codingPath.first?.stringValue
            if context.debugDescription == "is not an ISO 8601 date" { return RecordError(key: key, reason: "\(shown(key)) is not an ISO 8601 date") }
            if case .number? = key.flatMap({ record[$0]?.value }) { return RecordError(key: key, reason: "\(shown(key)) is not a whole number that fits") }
            return RecordError(key: key, reason: "\(shown(key)) cannot be read: \(context.debugDescription)")
        @unknown default:
            return RecordError(key: nil, reason: "\(error)")
        }
    }

    static func expectation(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "text"
        case is Int.Type, is Int64.Type, is Int32.Type: "a whole number"
        case is Double.Type, is Float.Type: "a number"
        case is Bool.Type: "true or false"
        case is Date.Type: "an ISO 8601 date"
        default: "a \(type)"
        }
    }

    static func flightRecord(_ node: JSONNode) throws(RecordError) -> FlightRecord {
        let flight = try decode(Flight.self, node)
        func reference(_ key: String) throws(RecordError) -> AirportReference? {
            guard let value = node[key] else { return nil }
            switch value.value {
            case .null: return nil
            // Position-only flights have an origin or destination without a code.
            case .object: return value["code"]?.string.map { AirportReference(code: $0, name: value["name"]?.string, city: value["city"]?.string, timezone: value["timezone"]?.string) }
            default: throw RecordError(key: key, reason: "\(value.jsonText.prefix(40)) is not an airport object with a code")
            }
        }
        var operatorCode: String?
        if let value = node["operator"], !value.isNull {
            guard let code = value.string else { throw RecordError(key: "operator", reason: "\(value.jsonText.prefix(40)) is not an operator code") }
            operatorCode = code
        }
        return FlightRecord(flight: flight, operatorCode: operatorCode, origin: try reference("origin"), destination: try reference("destination"))
    }

    // MARK: - Loading

    /// Reads every `*.json` file of `directory`, then stores what it can. Each file is one
    /// transaction; with `strict`, any rejection stores nothing, and otherwise the whole load is
    /// one transaction.
    public func load(directory: String, strict: Bool = false) async throws -> Report {
        let folder = URL(fileURLWithPath: directory)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted()
        var files: [ReadFile] = []
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(name)))
            files.append(Self.read(name: name, bytes: bytes))
        }
        // Airlines, then airports, then flights: links resolve to listed records when there are any.
        files.sort { ($0.kind, $0.name) < ($1.kind, $1.name) }
        var report = Report()
        report.rejections = files.flatMap(\.rejections)
        if strict, !report.rejections.isEmpty {
            report.stored = false
            report.files = files.map { FileReport(file: $0.name, rejected: $0.rejections.count) }
            return report
        }
        let prepared = files
        let knownCodes = try await knownCodes()
        let reports: [FileReport]
        if strict {
            reports = try await store.transaction { store in
                var codes = knownCodes
                var seen: Set<String> = []
                return try prepared.map { try Self.store($0, &codes, &seen, store) }
            }
        } else {
            var codes = knownCodes
            var seen: Set<String> = []
            var done: [FileReport] = []
            for file in prepared {
                let (fileReport, newCodes, newSeen) = try await store.transaction { [codes, seen] store in
                    var codes = codes, seen = seen
                    let fileReport = try Self.store(file, &codes, &seen, store)
                    return (fileReport, codes, seen)
                }
                (codes, seen) = (newCodes, newSeen)
                done.append(fileReport)
            }
            reports = done
        }
        report.files = reports
        return report
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

    static func store(_ file: ReadFile, _ codes: inout Codes, _ seen: inout Set<String>, _ store: isolated Store) throws -> FileReport {
        var report = FileReport(file: file.name, rejected: file.rejections.count)
        for airline in file.airlines {
            codes.airlines[airline.code] = try store.insert(airline).id
            report.airlines += 1
        }
        for airport in file.airports {
            codes.airports[airport.icao] = try store.insert(airport).id
            report.airports += 1
        }
        for record in file.flights {
            var flight = record.flight
            flight.originID = try record.origin.flatMap { try airportID($0, &codes, &report, store) }
            flight.destinationID = try record.destination.flatMap { try airportID($0, &codes, &report, store) }
            flight.airlineID = try record.operatorCode.flatMap { code in
                if let id = codes.airlines[code] { return id }
                let created = try store.insert(Airline(code: code))
                codes.airlines[code] = created.id
                report.airlinesCreated += 1
                return created.id
            }
            if !seen.insert(flight.ident).inserted { report.replacedFlights += 1 }
            try store.insert(flight)
            report.flights += 1
        }
        return report
    }

    /// Find or create, as the SwiftData article does: an airport no list named is stored with
    /// what the flight says of it.
    private static func airportID(_ reference: AirportReference, _ codes: inout Codes, _ report: inout FileReport, _ store: isolated Store) throws -> Int64? {
        if let id = codes.airports[reference.code] { return id }
        let created = try store.insert(Airport(icao: reference.code, name: reference.name, city: reference.city, timezone: reference.timezone))
        codes.airports[reference.code] = created.id
        report.airportsCreated += 1
        return created.id
    }
}
