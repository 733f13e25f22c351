import ExampleModels
import Foundation
import SchemaMetadata
import Testing

/// `StoredForm` hands written models back as their row codec's round trip would, without the
/// round trip: the two must agree on every model, or the store must not use it.
@Suite struct StoredFormTests {
    /// Dates with sub-millisecond parts, before 1970, on rounding edges and outside the years
    /// the stored text writes by hand.
    static let dates: [Date] = [
        Date(timeIntervalSince1970: 1_700_000_000.123456), Date(timeIntervalSince1970: -1.0005), Date(timeIntervalSince1970: 0.0004999),
        Date(timeIntervalSince1970: -86_400.9996), Date(timeIntervalSinceReferenceDate: 0.0005), Date.distantPast, Date.distantFuture,
        Date(timeIntervalSince1970: -62_167_219_200.25), Date(timeIntervalSince1970: 253_402_300_799.9996), Date(timeIntervalSince1970: 1e11 + 0.777),
    ]

    @Test func flightsAgreeWithTheRowCodecsRoundTrip() throws {
        let form = try #require(StoredForm(sample: Flight(ident: "X", status: "s")), "a flight's round trip changes only its dates and key")
        var generator = SystemRandomNumberGenerator()
        for round in 0..<500 {
            func date() -> Date? { round % 7 == 0 ? nil : Self.dates.randomElement(using: &generator)!.addingTimeInterval(Double.random(in: -1...1, using: &generator)) }
            let flight = Flight(
                ident: "F\(round)", actualOff: date(), scheduledOff: date(), estimatedOff: date(), scheduledOn: date(),
                estimatedOn: date(), actualOn: date(), progressPercent: round % 3 == 0 ? nil : Double(round) / 7,
                status: "Scheduled", routeDistance: round, filedAirspeed: nil, filedAltitude: 350, aircraftType: "B738",
                originID: round % 2 == 0 ? nil : Int64(round), destinationID: 7, airlineID: nil)
            let key: Int64? = round % 5 == 0 ? nil : Int64(round * 3 + 1)
            var row = try flight.storedValues()
            if let key { row[0] = .integer(key) }
            let decoded = try Flight(storedValues: row)
            var formed = flight
            form.apply(to: &formed, key: key)
            #expect(formed == decoded, "round \(round)")
        }
        for date in Self.dates {
            #expect(StoredDate.rounded(date) == StoredDate.date(StoredDate.text(date)), "\(date.timeIntervalSince1970)")
        }
    }

    @Test func typesWhoseRoundTripChangesMoreHaveNone() {
        #expect(StoredForm(sample: airport("KSFO")) == nil, "a transient property comes back as its default")
        #expect(
            StoredForm(sample: Car(vin: "V", make: "M", model: "T", color: Color(red: 1, green: 0, blue: 0), mileage: 1)) == nil,
            "JSON values may hold dates, and URLs may be relative")
        #expect(StoredForm(sample: HandWrittenAirport(icao: "KSFO", name: "SFO", city: "San Francisco", countryCode: "US", latitude: 1, longitude: 2)) == nil, "no listed key paths")
    }

    @Test func theStoreReturnsWhatItWouldFetch() async throws {
        let store = try flightsStore()
        let base = Date(timeIntervalSince1970: 1_700_000_000.123456)
        let inserted = try await store.insert([
            Flight(ident: "UAL1", scheduledOff: base, status: "Scheduled"),
            Flight(ident: "UAL2", actualOff: base.addingTimeInterval(0.0007), status: "Landed"),
        ])
        #expect(inserted.map(\.id) == [1, 2])
        #expect(inserted[0].scheduledOff != base, "cut to milliseconds, as stored")
        #expect(try await store.fetch(Flight.self, sortBy: [SortDescriptor(\.ident)]) == inserted)
        // An upsert through the unique ident: the stored row's key, the stored dates.
        let updated = try await store.insert(Flight(ident: "UAL1", scheduledOff: base.addingTimeInterval(1.0004), status: "Departed"))
        #expect(updated.id == 1)
        #expect(try await store.fetch(Flight.self, where: #Predicate { $0.ident == "UAL1" }) == [updated])
        // A transient property: decoded, so it comes back as its default, as a fetch gives it.
        var favourite = airport("KSFO")
        favourite.isFavorite = true
        let stored = try await store.insert(favourite)
        #expect(!stored.isFavorite)
        #expect(try await store.fetch(Airport.self) == [stored])
    }
}
