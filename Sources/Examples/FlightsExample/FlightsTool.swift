import CommandLineKit
import DatabaseLocation
import ExampleModels
import Foundation
import PersistentStore
import PersistentStorePostgres

/// `flights`: the SwiftData article's app on the command line.
public enum FlightsTool {
    public static var tool: CommandLineTool {
        CommandLineTool(
            name: "flights", version: "0.2.0", abstract: "Load FlightAware-shaped JSON into a store and query it.",
            commands: [LoadCommand.self, QueryCommand.self])
    }

    /// The store `--database` names, or why not: 2 for usage (no --database, a URL of no known
    /// engine), 1 for a database that failed (a server out of reach, a database newer than this
    /// app).
    static func open(_ arguments: ParsedArguments, io: CommandIO) -> Result<Store, CommandFailure> {
        guard let path = arguments.value("database") else {
            io.writeError("flights: error: pass --database PATH (a SQLite file) or --database postgres://...\n")
            return .failure(CommandFailure(.usageOrIO))
        }
        do {
            // Either engine, by what the value names: the store's modules open one each.
            if case .postgres? = try? DatabaseLocation.parse(path) {
                var configuration = Store.Configuration()
                // Behind a transaction pooler (`?pgbouncer=true`), the server's own URL.
                if let direct = io.environment["DIRECT_URL"], !direct.isEmpty { configuration.postgres.directURL = direct }
                return .success(try Store(url: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: configuration))
            }
            return .success(try Store(path: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations))
        } catch {
            io.writeError("flights: error: \(error)\n")
            if case .unsupportedDatabase = error { return .failure(CommandFailure(.usageOrIO)) }
            return .failure(CommandFailure(.failure))
        }
    }
}

enum LoadCommand: Command {
    /// Some records or files were rejected (each reported on standard error); the rest were stored.
    static let someRejected = ExitCode(3)

    static let spec = CommandSpec(
        name: "load", abstract: "Load AeroAPI airlines, airports and pages of flights from a folder of JSON files.",
        discussion: """
            Exit status: 0 every record stored; 3 some records or files rejected (each named on
            standard error with its file, array and index, ident, key and reason), the rest stored;
            1 nothing stored (--strict with a rejection, or a database error); 2 usage or I/O error.
            """,
        options: [
            .value(
                "database", short: "d", valueName: "path|url",
                help: "The SQLite file (created when missing), sqlite:path, or a postgres:// URL (migrated when behind); a URL of another scheme is refused."),
            .flag("strict", help: "Store nothing unless every record of every file can be stored (one transaction)."),
        ],
        arguments: [ArgumentSpec("DIR", help: "The folder of JSON files.", isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let directory = arguments.arguments[0]
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isFolder), isFolder.boolValue else {
            io.writeError("flights: error: '\(directory)' is not a folder of JSON files\n")
            return .usageOrIO
        }
        let opening = FlightsTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        let strict = arguments.flag("strict")
        do {
            let report = try runToCompletion { try await FlightLoader(store: store).load(directory: directory, strict: strict) }
            for rejection in report.rejections { io.writeError("\(rejection)\n") }
            guard report.stored else {
                io.writeError("flights: error: --strict: \(Self.count(report.rejections.count, "rejection")); nothing was stored\n")
                return .failure
            }
            for file in report.files { io.writeOutput(Self.line(file)) }
            let totals = try runToCompletion { (try await store.count(Airline.self), try await store.count(Airport.self), try await store.count(Flight.self)) }
            io.writeOutput("stored: \(totals.0) airlines, \(totals.1) airports, \(totals.2) flights\n")
            guard report.rejections.isEmpty else {
                let files = Set(report.rejections.map(\.file)).count
                io.writeError(
                    "flights: \(Self.count(report.rejections.count, "record or file", "records or files")) rejected in \(Self.count(files, "file")), listed above; everything else was stored\n")
                return someRejected
            }
            return .success
        } catch {
            io.writeError("flights: error: \(error)\n")
            return .failure
        }
    }

    static func count(_ number: Int, _ one: String, _ many: String? = nil) -> String {
        "\(number) \(number == 1 ? one : many ?? one + "s")"
    }

    static func line(_ file: FlightLoader.FileReport) -> String {
        var parts: [String] = []
        if file.airlines > 0 { parts.append(count(file.airlines, "airline")) }
        if file.airports > 0 { parts.append(count(file.airports, "airport")) }
        if file.flights > 0 || parts.isEmpty {
            parts.append(count(file.flights, "flight") + (file.replacedFlights > 0 ? " (\(file.replacedFlights) replacing an earlier record with the same ident)" : ""))
        }
        var created: [String] = []
        if file.airportsCreated > 0 { created.append(count(file.airportsCreated, "airport")) }
        if file.airlinesCreated > 0 { created.append(count(file.airlinesCreated, "airline")) }
        if !created.isEmpty { parts.append("created from codes: " + created.joined(separator: " and ")) }
        if file.rejected > 0 { parts.append(count(file.rejected, "rejected", "rejected")) }
        return "\(file.file): \(parts.joined(separator: ", "))\n"
    }
}

enum QueryCommand: Command {
    static let spec = CommandSpec(
        name: "query", abstract: "Print flights matching the filters: ident, origin, destination, airline, distance.",
        options: [
            .value("database", short: "d", valueName: "path|url", help: "The SQLite file, sqlite:path, or a postgres:// URL; a URL of another scheme is refused."),
            .value("origin", valueName: "icao", help: "Only flights from this airport."),
            .value("destination", valueName: "icao", help: "Only flights to this airport."),
            .value("airline", valueName: "code", help: "Only this airline's flights."),
            .flag("enroute", help: "Only flights in the air (off, not on)."),
            .value("sort", valueName: "order", help: "By route distance.", allowed: ["distance", "-distance"], defaultValue: "distance"),
            .value("limit", valueName: "n", help: "At most this many flights."),
        ])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let opening = FlightsTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        var limit: Int?
        if let text = arguments.value("limit") {
            guard let number = Int(text), number >= 0 else {
                io.writeError("flights: error: --limit expects a number, found '\(text)'\n")
                return .usageOrIO
            }
            limit = number
        }
        let query = FlightQuery(
            origin: arguments.value("origin"), destination: arguments.value("destination"), airline: arguments.value("airline"),
            enRouteOnly: arguments.flag("enroute"), longestFirst: arguments.value("sort") == "-distance", limit: limit)
        do {
            let lines = try runToCompletion { try await query.lines(in: store) }
            io.writeOutput(lines.map { $0 + "\n" }.joined())
            return .success
        } catch {
            io.writeError("flights: error: \(error)\n")
            return .failure
        }
    }
}
