import CommandLineKit
import ExampleModels
import Foundation
import PersistentStore

/// `flights`: the SwiftData article's app on the command line.
public enum FlightsTool {
    public static var tool: CommandLineTool {
        CommandLineTool(name: "flights", version: "0.1.0", abstract: "Load FlightAware-shaped JSON into a store and query it.",
                        commands: [LoadCommand.self, QueryCommand.self])
    }

    static func open(_ arguments: ParsedArguments, io: CommandIO) -> Store? {
        guard let path = arguments.value("database") else {
            io.writeError("flights: error: pass --database PATH\n")
            return nil
        }
        do {
            return try Store(path: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
        } catch {
            io.writeError("flights: error: \(error)\n")
            return nil
        }
    }

    /// Runs async work from a synchronous command.
    static func wait<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        // `Task` alone is the Tasks example's model here.
        _Concurrency.Task {
            do { box.result = .success(try await work()) } catch { box.result = .failure(error) }
            done.signal()
        }
        done.wait()
        guard let result = box.result else { throw CancellationError() }
        return try result.get()
    }

    final class ResultBox<T>: @unchecked Sendable {
        var result: Result<T, any Error>?
    }
}

enum LoadCommand: Command {
    static let spec = CommandSpec(
        name: "load", abstract: "Load AIRLINES.json, AIRPORTS.json and pages of flights from a folder.",
        options: [.value("database", short: "d", valueName: "path", help: "The SQLite file (created when missing).")],
        arguments: [ArgumentSpec("DIR", help: "The folder of JSON files.", isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let store = FlightsTool.open(arguments, io: io) else { return .usageOrIO }
        let directory = arguments.arguments[0]
        do {
            let reports = try FlightsTool.wait { try await FlightLoader(store: store).load(directory: directory) }
            for report in reports {
                var parts: [String] = []
                if report.airlines > 0 { parts.append("\(report.airlines) airlines") }
                if report.airports > 0 { parts.append("\(report.airports) airports") }
                if report.flights > 0 || (report.airlines == 0 && report.airports == 0) { parts.append("\(report.flights) flights") }
                if report.createdByCode > 0 { parts.append("\(report.createdByCode) airports or airlines created by code") }
                if report.skipped > 0 { parts.append("\(report.skipped) records skipped") }
                io.writeOutput("\(report.file): \(parts.joined(separator: ", "))\n")
            }
            let totals = try FlightsTool.wait { (try await store.count(Airline.self), try await store.count(Airport.self), try await store.count(Flight.self)) }
            io.writeOutput("stored: \(totals.0) airlines, \(totals.1) airports, \(totals.2) flights\n")
            return .success
        } catch {
            io.writeError("flights: error: \(error)\n")
            return .failure
        }
    }
}

enum QueryCommand: Command {
    static let spec = CommandSpec(
        name: "query", abstract: "Print flights matching the filters: ident, origin, destination, airline, distance.",
        options: [
            .value("database", short: "d", valueName: "path", help: "The SQLite file."),
            .value("origin", valueName: "icao", help: "Only flights from this airport."),
            .value("destination", valueName: "icao", help: "Only flights to this airport."),
            .value("airline", valueName: "code", help: "Only this airline's flights."),
            .flag("enroute", help: "Only flights in the air (off, not on)."),
            .value("sort", valueName: "order", help: "By route distance.", allowed: ["distance", "-distance"], defaultValue: "distance"),
            .value("limit", valueName: "n", help: "At most this many flights."),
        ])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let store = FlightsTool.open(arguments, io: io) else { return .usageOrIO }
        var limit: Int?
        if let text = arguments.value("limit") {
            guard let number = Int(text), number >= 0 else {
                io.writeError("flights: error: --limit expects a number, found '\(text)'\n")
                return .usageOrIO
            }
            limit = number
        }
        let query = FlightQuery(origin: arguments.value("origin"), destination: arguments.value("destination"), airline: arguments.value("airline"),
                                enRouteOnly: arguments.flag("enroute"), longestFirst: arguments.value("sort") == "-distance", limit: limit)
        do {
            let lines = try FlightsTool.wait { try await query.lines(in: store) }
            io.writeOutput(lines.map { $0 + "\n" }.joined())
            return .success
        } catch {
            io.writeError("flights: error: \(error)\n")
            return .failure
        }
    }
}
