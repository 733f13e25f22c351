import ExampleModels
import Foundation
import SchemaMetadata
import Testing

@testable import PersistentStoreCore

/// Predicates over generated `Joined` views, run against a real SQLite file as joins and subqueries.
@Suite struct JoinedPredicateTests {
    /// SFO and LAX, United and Delta, and four flights between them.
    func flightsWithRoutes(_ engine: StoreEngine) async throws -> Store {
        let store = try engine.flightsStore()
        let sfo = try await store.insert(airport("KSFO")), lax = try await store.insert(airport("KLAX"))
        _ = try await store.insert(airport("KJFK"))
        let united = try await store.insert(Airline(code: "UAL", name: "United", shortName: "United"))
        let delta = try await store.insert(Airline(code: "DAL", name: "Delta", shortName: "Delta"))
        try await store.insert([
            flight("UA1", origin: sfo.id, destination: lax.id, airline: united.id, distance: 337),
            flight("UA2", origin: sfo.id, destination: nil, airline: united.id, distance: 2586),
            flight("DL1", origin: lax.id, destination: sfo.id, airline: delta.id, distance: 337),
            flight("XX1", origin: nil, destination: lax.id, airline: nil, distance: 50),
        ])
        return store
    }

    @Test(arguments: StoreEngine.available)
    func toOneRelationshipsBecomeJoins(_ engine: StoreEngine) async throws {
        let store = try await flightsWithRoutes(engine)
        let united = try await store.fetch(Flight.self, joining: #Predicate { $0.origin?.icao == "KSFO" && $0.airline?.code == "UAL" })
        #expect(united.map(\.ident) == ["UA1", "UA2"])
        // Two joins to the same table (origin and destination) keep their own aliases.
        let roundTrip = try await store.fetch(Flight.self, joining: #Predicate { $0.origin?.icao == "KLAX" && $0.destination?.icao == "KSFO" })
        #expect(roundTrip.map(\.ident) == ["DL1"])
        #expect(try await store.count(Flight.self, joining: #Predicate { $0.airline?.name == "Delta" }) == 1)
    }

    @Test(arguments: StoreEngine.available)
    func aMissingToOneIsNil(_ engine: StoreEngine) async throws {
        let store = try await flightsWithRoutes(engine)
        #expect(try await store.fetch(Flight.self, joining: #Predicate { $0.destination == nil }).map(\.ident) == ["UA2"])
        #expect(try await store.fetch(Flight.self, joining: #Predicate { $0.airline != nil && $0.origin == nil }).isEmpty)
        #expect(try await store.fetch(Flight.self, joining: #Predicate { $0.airline == nil }).map(\.ident) == ["XX1"])
        // Through a missing relationship the value is nil, as with Swift's optional chaining: nil != "KSFO".
        #expect(try await store.fetch(Flight.self, joining: #Predicate { $0.origin?.icao != "KSFO" }).map(\.ident) == ["DL1", "XX1"])
        #expect(try await store.fetch(Flight.self, joining: #Predicate { $0.origin?.icao == nil }).map(\.ident) == ["XX1"])
    }

    @Test(arguments: StoreEngine.available)
    func aRelationshipFollowedTwiceIsJoinedOnce(_ engine: StoreEngine) async throws {
        let store = try await flightsWithRoutes(engine)
        let predicate = #Predicate<Flight.Joined> { $0.origin?.icao == "KLAX" || $0.origin?.city == "Nowhere" }
        let clause = try await store.joinedClause(predicate, for: Flight.self)
        #expect(clause.joins.description.components(separatedBy: "LEFT JOIN").count == 2, "one join: \(clause.joins)")
        #expect(try await store.fetch(Flight.self, joining: predicate).map(\.ident) == ["DL1"])
    }

    @Test(arguments: StoreEngine.available)
    func sortLimitAndOffsetStillApply(_ engine: StoreEngine) async throws {
        let store = try await flightsWithRoutes(engine)
        let fetched = try await store.fetch(
            Flight.self, joining: #Predicate { $0.airline != nil },
            sortBy: [SortDescriptor(\.routeDistance, order: .reverse), SortDescriptor(\.ident)], limit: 2, offset: 1)
        #expect(fetched.map(\.ident) == ["DL1", "UA1"])
    }

    @Test(arguments: StoreEngine.available)
    func toManyRelationshipsBecomeSubqueries(_ engine: StoreEngine) async throws {
        let store = try await flightsWithRoutes(engine)
        let longHaul = try await store.fetch(Airport.self, joining: #Predicate { $0.flightsFrom.contains { ($0.routeDistance ?? 0) > 2000 } })
        #expect(longHaul.map(\.icao) == ["KSFO"])
        #expect(try await store.fetch(Airport.self, joining: #Predicate { $0.flightsFrom.count > 1 }).map(\.icao) == ["KSFO"])
        #expect(try await store.fetch(Airport.self, joining: #Predicate { $0.flightsTo.isEmpty }).map(\.icao) == ["KJFK"])
        // allSatisfy is true for an airport without flights, as in Swift.
        let shortOnly = try await store.fetch(Airport.self, joining: #Predicate { $0.flightsFrom.allSatisfy { ($0.routeDistance ?? 0) < 1000 } })
        #expect(shortOnly.map(\.icao) == ["KLAX", "KJFK"])
        // Nesting: airports with a departure flown by United.
        let unitedHubs = try await store.fetch(Airport.self, joining: #Predicate { $0.flightsFrom.contains { $0.airline?.code == "UAL" } })
        #expect(unitedHubs.map(\.icao) == ["KSFO"])
        #expect(try await store.count(Airline.self, joining: #Predicate { $0.flights.contains { $0.destination?.icao == "KSFO" } }) == 1)
    }

    @Test(arguments: StoreEngine.available)
    func aRequiredToOneNeedsNoOptionalChaining(_ engine: StoreEngine) async throws {
        let tasks = try engine.store(TasksSchema.descriptor, TasksSchema.migrations)
        let home = try await tasks.insert(TaskList(name: "Home")), work = try await tasks.insert(TaskList(name: "Work"))
        let paint = try await tasks.insert(Task(name: "Paint", listID: home.id!))
        try await tasks.insert(Task(name: "Report", listID: work.id!))
        try await tasks.insert([ChecklistItem(title: "Buy paint", position: 1, taskID: paint.id!), ChecklistItem(title: "Tape", position: 2, taskID: paint.id!)])
        #expect(try await tasks.fetch(Task.self, joining: #Predicate { $0.list.name == "Home" }).map(\.name) == ["Paint"])
        let listed = try await tasks.fetch(TaskList.self, joining: #Predicate { $0.tasks.contains { $0.checklist.count >= 2 } })
        #expect(listed.map(\.name) == ["Home"])
        #expect(try await tasks.fetch(ChecklistItem.self, joining: #Predicate { $0.task.list.name == "Home" }).count == 2)
    }

    @Test(arguments: StoreEngine.available)
    func manyToManyGoesThroughTheJoinTable(_ engine: StoreEngine) async throws {
        let garage = try engine.store(GarageSchema.descriptor, GarageSchema.migrations)
        let civic = try await garage.insert(Car(vin: "V1", make: "Honda", model: "Civic"))
        let golf = try await garage.insert(Car(vin: "V2", make: "VW", model: "Golf"))
        _ = try await garage.insert(Car(vin: "V3", make: "Fiat", model: "Panda"))
        let ada = try await garage.insert(Mechanic(name: "Ada")), bob = try await garage.insert(Mechanic(name: "Bob"))
        try await garage.link(Car.mechanics, civic, ada)
        try await garage.link(Car.mechanics, golf, bob)
        try await garage.link(Car.mechanics, golf, ada)
        #expect(try await garage.fetch(Car.self, joining: #Predicate { $0.mechanics.contains { $0.name == "Bob" } }).map(\.vin) == ["V2"])
        #expect(try await garage.fetch(Car.self, joining: #Predicate { $0.mechanics.count == 2 }).map(\.vin) == ["V2"])
        #expect(try await garage.fetch(Car.self, joining: #Predicate { $0.mechanics.isEmpty }).map(\.vin) == ["V3"])
        #expect(try await garage.fetch(Mechanic.self, joining: #Predicate { $0.cars.contains { $0.make == "Honda" } }).map(\.name) == ["Ada"])
        // To-many into an entity with a composite primary key ([car, day]) goes through its foreign key.
        try await garage.insert(ServiceVisit(day: Date(timeIntervalSince1970: 86_400), notes: "brakes", carID: golf.id!))
        #expect(try await garage.fetch(Car.self, joining: #Predicate { $0.visits.contains { $0.notes == "brakes" } }).map(\.vin) == ["V2"])
        #expect(try await garage.fetch(ServiceVisit.self, joining: #Predicate { $0.car.make == "VW" }).count == 1)
    }

    @Test(arguments: StoreEngine.available)
    func firstAndDeleteFollowRelationshipsToo(_ engine: StoreEngine) async throws {
        let store = try await flightsWithRoutes(engine)
        let longest = try await store.first(Flight.self, joining: #Predicate { $0.airline?.code == "UAL" }, sortBy: [SortDescriptor(\.routeDistance, order: .reverse)])
        #expect(longest?.ident == "UA2")
        #expect(try await store.delete(Flight.self, joining: #Predicate { $0.origin?.icao == "KSFO" }) == 2)
        #expect(try await store.fetch(Flight.self).map(\.ident) == ["DL1", "XX1"])
        // Delete rules still apply: deleting airports through a to-many nullifies their flights.
        #expect(try await store.delete(Airport.self, joining: #Predicate { $0.flightsFrom.contains { $0.ident == "DL1" } }) == 1)
        #expect(try await store.first(Flight.self, where: #Predicate { $0.ident == "DL1" })?.originID == nil)
    }

    @Test(arguments: StoreEngine.available)
    func aToOneHeldByTheOtherSideNeverDuplicatesTheOwner(_ engine: StoreEngine) async throws {
        let users = try engine.store(UsersSchema.descriptor, UsersSchema.migrations)
        let ada = try await users.insert(User(identifier: "u1", name: "Ada"))
        _ = try await users.insert(User(identifier: "u2", name: "Bob"))
        // Nothing in the database stops a second image for the same owner.
        try await users.insert([
            Image(url: URL(string: "https://example.com/a.png")!, ownerID: ada.identifier),
            Image(url: URL(string: "https://example.com/b.png")!, ownerID: ada.identifier),
        ])
        #expect(try await users.fetch(User.self, joining: #Predicate { $0.image != nil }).map(\.name) == ["Ada"])
        #expect(try await users.fetch(User.self, joining: #Predicate { $0.image == nil }).map(\.name) == ["Bob"])
        let first = try await users.target(User.image, of: ada)?.url.absoluteString
        #expect(first == "https://example.com/a.png")
        let second = URL(string: "https://example.com/b.png")!
        // Only the first image counts as Ada's, as `target` reads it.
        #expect(try await users.count(User.self, joining: #Predicate { $0.image?.url == second }) == 0)
    }

    @Test(arguments: StoreEngine.available)
    func capturedValuesAndPlainColumnsMix(_ engine: StoreEngine) async throws {
        let store = try await flightsWithRoutes(engine)
        let code = "UAL", minimum = 1000
        let fetched = try await store.fetch(Flight.self, joining: #Predicate { $0.airline?.code == code && ($0.routeDistance ?? 0) >= minimum })
        #expect(fetched.map(\.ident) == ["UA2"])
    }
}

@Suite struct JoinedPredicateErrorTests {
    @Test(arguments: StoreEngine.available)
    func anUnsupportedToManyMemberIsAClearError(_ engine: StoreEngine) async throws {
        let store = try engine.flightsStore()
        await #expect {
            _ = try await store.fetch(Airport.self, joining: #Predicate { $0.flightsFrom.first?.ident == "UA1" })
        } throws: { error in
            "\(error)".contains("to-many relationship (count, isEmpty, contains(where:) and allSatisfy work)")
        }
    }
}
