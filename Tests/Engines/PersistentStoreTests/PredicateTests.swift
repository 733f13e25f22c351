import ExampleModels
import Foundation
import Testing

@testable import PersistentStoreCore

/// Foundation's #Predicate run as SQL WHERE clauses on real files.
@Suite struct PredicateTests {
    /// Three airports and five flights with varied nulls, distances and idents.
    func seeded(_ engine: StoreEngine) async throws -> (Store, sfo: Airport, lax: Airport, jfk: Airport) {
        let store = try engine.flightsStore()
        let sfo = try await store.insert(airport("KSFO", "San Francisco International"))
        let lax = try await store.insert(airport("KLAX", "Los Angeles International"))
        let jfk = try await store.insert(airport("KJFK", "John F. Kennedy"))
        var enroute = flight("UAL100", origin: sfo.id, destination: jfk.id, distance: 2_500)
        enroute.actualOff = Date(timeIntervalSince1970: 100)
        var landed = flight("UAL200", origin: sfo.id, destination: lax.id, distance: 340)
        landed.actualOff = Date(timeIntervalSince1970: 100)
        landed.actualOn = Date(timeIntervalSince1970: 5_000)
        try await store.insert([
            enroute, landed, flight("DAL300", origin: lax.id, destination: jfk.id, distance: 2_470),
            flight("AAL400", origin: jfk.id, destination: sfo.id, distance: 2_580), flight("SWA500", origin: nil, distance: 90),
        ])
        return (store, sfo, lax, jfk)
    }

    func idents(_ store: Store, _ predicate: Predicate<Flight>, sortBy: [SortDescriptor<Flight>] = [SortDescriptor(\.ident)]) async throws -> [String] {
        try await store.fetch(Flight.self, where: predicate, sortBy: sortBy).map(\.ident)
    }

    @Test(arguments: StoreEngine.available)
    func comparisonsAndLogic(_ engine: StoreEngine) async throws {
        let (store, sfo, _, _) = try await seeded(engine)
        let origin = sfo.id
        #expect(try await idents(store, #Predicate { ($0.routeDistance ?? 0) > 2_000 }) == ["AAL400", "DAL300", "UAL100"])
        #expect(try await idents(store, #Predicate { ($0.routeDistance ?? 0) >= 340 && ($0.routeDistance ?? 0) <= 2_470 }) == ["DAL300", "UAL200"])
        #expect(try await idents(store, #Predicate { $0.originID == origin || ($0.routeDistance ?? 0) < 100 }) == ["SWA500", "UAL100", "UAL200"])
        #expect(try await idents(store, #Predicate { !(($0.routeDistance ?? 0) > 1_000) }) == ["SWA500", "UAL200"])
        #expect(try await idents(store, #Predicate { $0.ident != "UAL100" && $0.originID != nil }) == ["AAL400", "DAL300", "UAL200"])
    }

    @Test(arguments: StoreEngine.available)
    func nilChecksFindFlightsEnRoute(_ engine: StoreEngine) async throws {
        let (store, _, _, _) = try await seeded(engine)
        #expect(try await idents(store, #Predicate { $0.actualOn == nil && $0.actualOff != nil }) == ["UAL100"])
        #expect(try await idents(store, #Predicate { $0.originID == nil }) == ["SWA500"])
    }

    @Test(arguments: StoreEngine.available)
    func stringOperationsAndMembership(_ engine: StoreEngine) async throws {
        let (store, _, _, _) = try await seeded(engine)
        let codes = ["DAL300", "SWA500", "XXX"]
        #expect(try await idents(store, #Predicate { $0.ident.contains("AL") }) == ["AAL400", "DAL300", "UAL100", "UAL200"])
        #expect(try await idents(store, #Predicate { $0.ident.starts(with: "UAL") }) == ["UAL100", "UAL200"])
        #expect(try await idents(store, #Predicate { $0.ident.localizedStandardContains("ual") }) == ["UAL100", "UAL200"])
        #expect(try await idents(store, #Predicate { codes.contains($0.ident) }) == ["DAL300", "SWA500"])
        let airports = try await store.fetch(Airport.self, where: #Predicate { $0.state?.contains("C") == true })
        #expect(airports.isEmpty, "no airport has a state; optional chaining sees NULL as false")
    }

    @Test(arguments: StoreEngine.available)
    func predicatesComposedAtRunTimeFromOptionalFilters(_ engine: StoreEngine) async throws {
        let (store, sfo, lax, _) = try await seeded(engine)
        func query(origin: Int64?, destination: Int64?, enRouteOnly: Bool) async throws -> [String] {
            let predicate = #Predicate<Flight> { flight in
                (origin == nil || flight.originID == origin)
                    && (destination == nil || flight.destinationID == destination)
                    && (!enRouteOnly || (flight.actualOff != nil && flight.actualOn == nil))
            }
            return try await idents(store, predicate)
        }
        #expect(try await query(origin: nil, destination: nil, enRouteOnly: false).count == 5)
        #expect(try await query(origin: sfo.id, destination: nil, enRouteOnly: false) == ["UAL100", "UAL200"])
        #expect(try await query(origin: sfo.id, destination: lax.id, enRouteOnly: false) == ["UAL200"])
        #expect(try await query(origin: sfo.id, destination: nil, enRouteOnly: true) == ["UAL100"])
    }

    @Test(arguments: StoreEngine.available)
    func sortingLimitsFirstAndCount(_ engine: StoreEngine) async throws {
        let (store, _, _, _) = try await seeded(engine)
        let byDistance = try await store.fetch(Flight.self, sortBy: [SortDescriptor(\.routeDistance, order: .reverse)], limit: 2)
        #expect(byDistance.map(\.ident) == ["AAL400", "UAL100"])
        #expect(try await store.first(Flight.self, where: #Predicate { ($0.routeDistance ?? 0) < 1_000 }, sortBy: [SortDescriptor(\.routeDistance)])?.ident == "SWA500")
        #expect(try await store.count(Flight.self, where: #Predicate { ($0.routeDistance ?? 0) > 2_000 }) == 3)
        #expect(try await store.fetch(Flight.self, sortBy: [SortDescriptor(\.ident)], limit: 2, offset: 3).map(\.ident) == ["UAL100", "UAL200"])
    }

    @Test(arguments: StoreEngine.available)
    func deleteWhereAndBulkUpdate(_ engine: StoreEngine) async throws {
        let (store, _, _, _) = try await seeded(engine)
        #expect(try await store.update(Flight.self, set: \.status, to: "Cancelled", where: #Predicate { $0.ident.starts(with: "UAL") }) == 2)
        #expect(try await idents(store, #Predicate { $0.status == "Cancelled" }) == ["UAL100", "UAL200"])
        #expect(try await store.delete(Flight.self, where: #Predicate { $0.status == "Cancelled" }) == 2)
        #expect(try await store.count(Flight.self) == 3)
    }

    @Test(arguments: StoreEngine.available)
    func anUntranslatableExpressionIsAnErrorNamingIt(_ engine: StoreEngine) async throws {
        let (store, _, _, _) = try await seeded(engine)
        do throws(StoreError) {
            _ = try await store.fetch(Flight.self, where: #Predicate { ($0.routeDistance ?? 0) % 2 == 0 })
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("cannot translate IntRemainder"))
        }
    }
}
