import ExampleModels
import Foundation
import PersistentStoreSQLite
import SchemaMetadata
import Testing

@testable import PersistentStoreCore

func store(_ schema: SchemaDescriptor, _ migrations: [EmbeddedMigration]) throws -> Store {
    try Store(path: storePath(), schema: schema, migrations: migrations, configuration: .init(keys: testKeys))
}

func flight(_ ident: String, origin: Int64?, destination: Int64? = nil, airline: Int64? = nil, distance: Int = 100) -> Flight {
    Flight(
        ident: ident, scheduledOff: Date(timeIntervalSince1970: 0), estimatedOff: Date(timeIntervalSince1970: 0),
        scheduledOn: Date(timeIntervalSince1970: 3600), estimatedOn: Date(timeIntervalSince1970: 3600), status: "Scheduled",
        routeDistance: distance, filedAirspeed: 400, filedAltitude: 300, aircraftType: "A320",
        originID: origin, destinationID: destination, airlineID: airline)
}

@Suite struct RelationshipTests {
    @Test(arguments: StoreEngine.available)
    func bothSidesOfAToManyReadTheSameLink(_ engine: StoreEngine) async throws {
        let store = try engine.flightsStore()
        let sfo = try await store.insert(airport("KSFO")), lax = try await store.insert(airport("KLAX"))
        let one = try await store.insert(flight("UA1", origin: sfo.id, destination: lax.id))
        let two = try await store.insert(flight("UA2", origin: sfo.id))
        #expect(try await store.related(Airport.flightsFrom, of: sfo).map(\.ident) == ["UA1", "UA2"])
        #expect(try await store.related(Airport.flightsTo, of: lax).map(\.ident) == ["UA1"])
        #expect(try await store.target(Flight.origin, of: one) == sfo)
        #expect(try await store.target(Flight.destination, of: two) == nil)

        // Setting one side is enough: link from the airport, read from the flight.
        try await store.link(Airport.flightsTo, lax, two)
        let reloaded = try #require(try await store.model(Flight.self, key: two.id!))
        #expect(reloaded.destinationID == lax.id)
        try await store.unlink(Airport.flightsTo, lax, reloaded)
        #expect(try await store.related(Airport.flightsTo, of: lax).map(\.ident) == ["UA1"])
    }

    @Test(arguments: StoreEngine.available)
    func manyToManyGoesThroughTheJoinTable(_ engine: StoreEngine) async throws {
        let garage = try engine.store(GarageSchema.descriptor, GarageSchema.migrations)
        let car = try await garage.insert(Car(vin: "V1", make: "Honda", model: "Civic"))
        let ada = try await garage.insert(Mechanic(name: "Ada")), bob = try await garage.insert(Mechanic(name: "Bob"))
        try await garage.link(Car.mechanics, car, ada)
        try await garage.link(Mechanic.cars, bob, car)  // from the other side
        try await garage.link(Car.mechanics, car, ada)  // twice is once
        #expect(try await garage.related(Car.mechanics, of: car).map(\.name) == ["Ada", "Bob"])
        #expect(try await garage.related(Mechanic.cars, of: ada).map(\.vin) == ["V1"])
        try await garage.unlink(Car.mechanics, car, ada)
        #expect(try await garage.related(Car.mechanics, of: car).map(\.name) == ["Bob"])
        // Deleting a car removes its links, not the mechanics (nullify).
        try await garage.delete(car)
        #expect(try await garage.related(Mechanic.cars, of: bob).isEmpty)
        #expect(try await garage.count(Mechanic.self) == 2)
    }

    @Test(arguments: StoreEngine.available)
    func nullifyClearsTheReferences(_ engine: StoreEngine) async throws {
        let store = try engine.flightsStore()
        let sfo = try await store.insert(airport("KSFO"))
        let one = try await store.insert(flight("UA1", origin: sfo.id))
        try await store.delete(sfo)
        #expect(try await store.model(Flight.self, key: one.id!)?.originID == nil)
        #expect(try await store.count(Flight.self) == 1)
    }

    @Test(arguments: StoreEngine.available)
    func denyBlocksTheDeleteAndNamesWhatBlocks(_ engine: StoreEngine) async throws {
        let garage = try engine.store(GarageSchema.descriptor, GarageSchema.migrations)
        let person = try await garage.insert(Person(name: "Ada"))
        let car = try await garage.insert(Car(vin: "V1", make: "Honda", model: "Civic", ownerID: person.id))
        do {
            try await garage.delete(person)
            Issue.record("expected deny")
        } catch {
            #expect(error.description.contains("Person 1 is still referenced by 1 Car through 'cars' (delete rule deny)"))
        }
        #expect(try await garage.count(Person.self) == 1, "nothing was deleted")
        try await garage.unlink(Person.cars, person, car)
        try await garage.delete(person)
        #expect(try await garage.count(Person.self) == 0)
    }

    @Test(arguments: StoreEngine.available)
    func cascadeThreeLevelsDeep(_ engine: StoreEngine) async throws {
        let tasks = try engine.store(TasksSchema.descriptor, TasksSchema.migrations)
        let home = try await tasks.insert(TaskList(name: "Home")), work = try await tasks.insert(TaskList(name: "Work"))
        let paint = try await tasks.insert(Task(name: "Paint", listID: home.id!))
        let report = try await tasks.insert(Task(name: "Report", listID: work.id!))
        try await tasks.insert([
            ChecklistItem(title: "Buy paint", position: 1, taskID: paint.id!), ChecklistItem(title: "Tape", position: 2, taskID: paint.id!),
            ChecklistItem(title: "Draft", position: 1, taskID: report.id!),
        ])
        try await tasks.delete(home)
        #expect(try await tasks.fetch(TaskList.self).map(\.name) == ["Work"])
        #expect(try await tasks.fetch(Task.self).map(\.name) == ["Report"])
        #expect(try await tasks.fetch(ChecklistItem.self).map(\.title) == ["Draft"])
    }

    @Test(arguments: StoreEngine.available)
    func cascadeThroughAOneToOneHeldByTheOtherSide(_ engine: StoreEngine) async throws {
        let users = try engine.store(UsersSchema.descriptor, UsersSchema.migrations)
        let ada = try await users.insert(User(identifier: "u1", name: "Ada"))
        try await users.insert(Image(url: URL(string: "https://example.com/a.png")!, ownerID: ada.identifier))
        #expect(try await users.target(User.image, of: ada)?.url.absoluteString == "https://example.com/a.png")
        try await users.delete(ada)
        #expect(try await users.count(Image.self) == 0)
    }

    @Test(arguments: StoreEngine.available)
    func aDeleteInsideAFailedTransactionIsUndone(_ engine: StoreEngine) async throws {
        let tasks = try engine.store(TasksSchema.descriptor, TasksSchema.migrations)
        let home = try await tasks.insert(TaskList(name: "Home"))
        try await tasks.insert(Task(name: "Paint", listID: home.id!))
        struct Abort: Error {}
        let aborted = await #expect(throws: StoreError.self) {
            try await tasks.transaction { store in
                try store.delete(home)
                throw Abort()
            }
        }
        #expect(aborted?.bodyError is Abort, "the body's error, carried by StoreError.body")
        #expect(try await tasks.count(Task.self) == 1)
    }
}

@Suite struct ExternalStorageTests {
    func files(_ store: Store) async -> [String] {
        let folder = await store.externalFolder
        let enumerator = FileManager.default.enumerator(atPath: folder.path)
        return (enumerator?.allObjects as? [String] ?? []).filter { $0.hasPrefix("image/data/") }.sorted()
    }

    @Test func valuesLiveInFilesThatFollowTheirRows() async throws {
        let path = storePath()
        let users = try Store(path: path, schema: UsersSchema.descriptor, migrations: UsersSchema.migrations, configuration: .init(keys: testKeys))
        let ada = try await users.insert(User(identifier: "u1", name: "Ada"))
        let bytes = Data((0..<100_000).map { UInt8($0 % 251) })
        let image = try await users.insert(Image(url: URL(string: "https://example.com/a.png")!, data: bytes, ownerID: ada.identifier))
        #expect(image.data == bytes)
        #expect(try await users.fetch(Image.self).first?.data == bytes, "decoding brings the bytes back")
        let stored = await files(users)
        #expect(stored.count == 1)
        #expect(FileManager.default.fileExists(atPath: path + ".external/image/data/" + stored[0].dropFirst("image/data/".count)))

        // Replacing the value replaces the file.
        var updated = try #require(try await users.fetch(Image.self).first)
        updated.data = Data("new".utf8)
        try await users.insert(updated)
        let replaced = await files(users)
        #expect(replaced.count == 1 && replaced != stored)
        #expect(try await users.fetch(Image.self).first?.data == Data("new".utf8))

        // A rolled-back transaction leaves no row and no file.
        struct Abort: Error {}
        let aborted2 = await #expect(throws: StoreError.self) {
            try await users.transaction { store in
                try store.insert(Image(url: URL(string: "https://example.com/b.png")!, data: Data("b".utf8), ownerID: nil))
                throw Abort()
            }
        }
        #expect(aborted2?.bodyError is Abort, "the body's error, carried by StoreError.body")
        #expect(await files(users) == replaced)
        #expect(try await users.count(Image.self) == 1)

        // Deleting the owner cascades to the image and its file.
        try await users.delete(ada)
        #expect(await files(users).isEmpty)
    }
}
