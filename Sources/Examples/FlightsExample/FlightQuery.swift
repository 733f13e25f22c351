import ExampleModels
import Foundation
import PersistentStore

/// The SwiftData article's dynamic query: filters chosen at run time become one predicate.
public struct FlightQuery: Sendable {
    public var origin: String?
    public var destination: String?
    public var airline: String?
    public var enRouteOnly = false
    public var longestFirst = false
    public var limit: Int?

    public init(origin: String? = nil, destination: String? = nil, airline: String? = nil, enRouteOnly: Bool = false, longestFirst: Bool = false, limit: Int? = nil) {
        self.origin = origin
        self.destination = destination
        self.airline = airline
        self.enRouteOnly = enRouteOnly
        self.longestFirst = longestFirst
        self.limit = limit
    }

    /// One line per flight: ident, origin code, destination code, airline code, route distance
    /// (each empty when unknown). Sorted by distance, then ident; flights without a distance
    /// come first in ascending order and last in descending order, as `nil` sorts in Swift.
    public func lines(in store: Store) async throws -> [String] {
        let airports = Dictionary(try await store.fetch(Airport.self).compactMap { airport in airport.id.map { ($0, airport.icao) } }, uniquingKeysWith: { a, _ in a })
        let airlines = Dictionary(try await store.fetch(Airline.self).compactMap { airline in airline.id.map { ($0, airline.code) } }, uniquingKeysWith: { a, _ in a })
        // Unset filters match everything; flags and plain strings keep the macro's type-checking fast.
        let (anyOrigin, originCode) = (origin == nil, origin ?? "")
        let (anyDestination, destinationCode) = (destination == nil, destination ?? "")
        let (anyAirline, airlineCode) = (airline == nil, airline ?? "")
        let enRoute = enRouteOnly
        // Conditions on the related airports and airline run in the same SQL statement, as joins.
        let predicate = #Predicate<Flight.Joined> { flight in
            (anyOrigin || flight.origin?.icao == originCode)
                && (anyDestination || flight.destination?.icao == destinationCode)
                && (anyAirline || flight.airline?.code == airlineCode)
                && (!enRoute || (flight.actualOff != nil && flight.actualOn == nil))
        }
        let flights = try await store.fetch(
            Flight.self, joining: predicate,
            sortBy: [SortDescriptor(\.routeDistance, order: longestFirst ? .reverse : .forward), SortDescriptor(\.ident)],
            limit: limit)
        return flights.map { flight in
            let origin = flight.originID.flatMap { airports[$0] } ?? ""
            let destination = flight.destinationID.flatMap { airports[$0] } ?? ""
            let airline = flight.airlineID.flatMap { airlines[$0] } ?? ""
            let distance = flight.routeDistance.map(String.init) ?? ""
            return [flight.ident, origin, destination, airline, distance].joined(separator: "\t")
        }
    }
}
