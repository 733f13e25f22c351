import ExampleModels
import Foundation
import SQLDialects
import SQLiteKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

/// Records of entities known only at run time (what the studio reads): the same rows models
/// read, through the same pipeline, with filters, order and keyset pages the store renders.
@Suite(.serialized) struct RecordTests {
    @Test(arguments: StoreEngine.available)
    func recordsPageFilterAndSortAsTheStoreSays(_ engine: StoreEngine) async throws {
        let store = try engine.flights()
        let airports = try #require(FlightsSchema.descriptor.entity(named: "Airport"))
        var inserted: [Airport] = []
        for index in 0..<25 {
            inserted.append(try await store.insert(airport(String(format: "K%03d", index), index % 2 == 0 ? "Even \(index)" : "Odd \(index)")))
        }
        #expect(try await store.countRecords(of: airports) == 25)
        #expect(try await store.countRecords(of: airports, where: [RecordFilter("name", .contains("even"))]) == 13)
        // Pages of 10 by name, descending, each after the last one's cursor: every record once.
        var seen: [String] = []
        var cursor: RecordCursor?
        var pages = 0
        repeat {
            let page = try await store.records(of: airports, orderedBy: RecordOrder("name", ascending: false), after: cursor, limit: 10)
            seen += page.records.compactMap { record in if case .text(let name)? = record["name"] { name } else { nil } }
            cursor = page.next
            pages += 1
        } while cursor != nil && pages < 10
        #expect(pages == 3 && seen.count == 25 && Set(seen).count == 25, "\(seen)")
        #expect(seen == seen.sorted(by: >), "in the order asked")
        let typed = try await store.fetch(Airport.self, sortBy: [SortDescriptor(\.name, order: .reverse)]).map(\.name)
        #expect(seen == typed, "the order the typed API gives")
        // Filters: equals, a range, null checks; a LIKE wildcard matches only itself.
        let k007 = try await store.records(of: airports, where: [RecordFilter("icao", .equals(.text("K007")))], limit: 5).records
        #expect(k007.count == 1 && k007.first?["id"] == .integer(inserted[7].id!))
        let range = try await store.records(of: airports, where: [RecordFilter("icao", .between(lower: .text("K010"), upper: .text("K012")))], limit: 50)
        #expect(range.records.count == 3 && range.next == nil)
        #expect(try await store.countRecords(of: airports, where: [RecordFilter("name", .contains("%"))]) == 0)
        #expect(try await store.countRecords(of: airports, where: [RecordFilter("icao", .isNotNull)]) == 25)
        // A column the entity lacks, or an entity the store does not know, is refused.
        await #expect(throws: StoreError.self) { _ = try await store.records(of: airports, where: [RecordFilter("nope", .isNull)], limit: 1) }
        let stranger = EntityDescriptor(name: "Stranger", table: "strangers", primaryKey: ["id"], hasImplicitKey: true, columns: [], relationships: [], indexes: [])
        await #expect(throws: StoreError.self) { _ = try await store.countRecords(of: stranger) }
    }

    /// Encrypted values come opened, external values loaded, as models get them; an encrypted
    /// column cannot be searched or sorted by the database, and says so.
    @Test(arguments: StoreEngine.available)
    func encryptedAndExternalValuesReadAsModelsReadThem(_ engine: StoreEngine) async throws {
        let todo = try engine.store(TodoSchema.descriptor, TodoSchema.migrations)
        let item = try await todo.insert(TodoItem(taskName: "pay", notes: "the code is 4711"))
        let items = try #require(TodoSchema.descriptor.entity(named: "TodoItem"))
        let record = try #require(try await todo.records(of: items, limit: 5).records.first)
        #expect(record["notes"] == .text("the code is 4711") && record["task_name"] == .text("pay"), "\(record)")
        await #expect(throws: StoreError.self) { _ = try await todo.records(of: items, where: [RecordFilter("notes", .contains("4711"))], limit: 5) }
        await #expect(throws: StoreError.self) { _ = try await todo.records(of: items, orderedBy: RecordOrder("notes"), limit: 5) }
        #expect(try await todo.countRecords(of: items, where: [RecordFilter("notes", .isNotNull)]) == 1)
        _ = item

        // Full-text search, as models get it, narrowed by a filter.
        _ = try await todo.insert(TodoItem(taskName: "call the plumber"))
        _ = try await todo.insert(TodoItem(taskName: "plumber invoice", isCompleted: true))
        let found = try await todo.searchRecords(of: items, .words("plumber"))
        #expect(Set(found.compactMap { if case .text(let name)? = $0["task_name"] { name } else { nil } }) == ["call the plumber", "plumber invoice"])
        let open = try await todo.searchRecords(of: items, .words("plumber"), where: [RecordFilter("is_completed", .equals(.integer(0)))])
        #expect(open.count == 1 && open.first?["task_name"] == .text("call the plumber"), "\(open)")

        let garage = try engine.store(GarageSchema.descriptor, GarageSchema.migrations)
        let owner = try await garage.insert(Person(name: "Ann"))
        _ = try await garage.insert(Car(vin: "V1", make: "Ford", model: "T", photo: Data([9, 8, 7]), ownerID: owner.id))
        let cars = try #require(GarageSchema.descriptor.entity(named: "Car"))
        let car = try #require(try await garage.records(of: cars, limit: 5).records.first)
        #expect(car["photo"] == .blob([9, 8, 7]), "\(car)")
        #expect(car["owner_id"] == .integer(owner.id!))
    }

    /// Edits through the store's paths: an update recorded in the history under the store's
    /// author and refused when the record changed meanwhile, an encrypted value sealed as a
    /// model's would be, an insert with a key the database gives, and a delete whose rules are
    /// shown first and applied (a deny refuses).
    @Test(arguments: StoreEngine.available)
    func recordsAreEditedThroughTheStore(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let store = try engine.flights(at: url, history: true, author: "studio")
        let airports = try #require(FlightsSchema.descriptor.entity(named: "Airport"))
        let sfo = try await store.insert(airport("KSFO", "San Francisco"))
        _ = try await store.insert(flight("UA1", origin: sfo.id))
        let shown = try #require(try await store.records(of: airports, limit: 1).records.first)
        guard case .updated(let written) = try await store.updateRecord(of: airports, key: [.integer(sfo.id!)], set: ["name": .text("SFO Intl")], expecting: shown) else {
            Issue.record("the update was not written")
            return
        }
        #expect(written["name"] == .text("SFO Intl"))
        #expect(try await store.model(Airport.self, key: sfo.id!)?.name == "SFO Intl")
        let history = try await store.history()
        let change = try #require(history.last?.changes.first)
        #expect(history.last?.author == "studio" && change.kind == .update && change.changedAttributes == ["name"], "\(history)")
        // The form still shows the old record: refused, with the record as it is now.
        guard case .changedMeanwhile(let current) = try await store.updateRecord(of: airports, key: [.integer(sfo.id!)], set: ["name": .text("Mine")], expecting: shown) else {
            Issue.record("a stale edit was written")
            return
        }
        #expect(current["name"] == .text("SFO Intl"))
        #expect(try await store.updateRecord(of: airports, key: [.integer(999_999)], set: ["name": .text("x")]) == .missing)
        await #expect(throws: StoreError.self) { _ = try await store.updateRecord(of: airports, key: [.integer(sfo.id!)], set: ["id": .integer(5)]) }
        // Unique values stay unique.
        let lax = try await store.insertRecord(of: airports, values: ["icao": .text("KLAX"), "name": .text("Los Angeles")])
        guard case .integer(let laxID)? = lax["id"] else {
            Issue.record("the inserted airport has no key: \(lax)")
            return
        }
        #expect(try await store.model(Airport.self, key: laxID)?.icao == "KLAX")
        await #expect(throws: StoreError.self) { _ = try await store.insertRecord(of: airports, values: ["icao": .text("KLAX"), "name": .text("again")]) }
        // Deleting an airport nullifies its flights' origin.
        let effects = try await store.deleteEffects(of: airports, key: [.integer(sfo.id!)])
        #expect(effects.contains(RecordDeleteEffect(source: "Airport", relationship: "flightsFrom", target: "Flight", count: 1, rule: .nullify)), "\(effects)")
        #expect(try await store.deleteRecord(of: airports, key: [.integer(sfo.id!)]))
        #expect(try await store.fetch(Flight.self).first?.originID == nil)
        #expect(try await store.deleteRecord(of: airports, key: [.integer(sfo.id!)]) == false)

        let todo = try engine.store(TodoSchema.descriptor, TodoSchema.migrations)
        let item = try await todo.insert(TodoItem(taskName: "pay", notes: "old secret"))
        let items = try #require(TodoSchema.descriptor.entity(named: "TodoItem"))
        _ = try await todo.updateRecord(of: items, key: [.text(item.id.uuidString.lowercased())], set: ["notes": .text("new secret")])
        #expect(try await todo.model(TodoItem.self, key: item.id)?.notes == "new secret")
        let sealed = try await todo.read { store in try store.database.query("SELECT notes FROM todo_item" as SQL) }
        #expect(!"\(sealed)".contains("new secret"), "sealed at rest")

        let garage = try engine.store(GarageSchema.descriptor, GarageSchema.migrations)
        let owner = try await garage.insert(Person(name: "Ann"))
        _ = try await garage.insert(Car(vin: "V1", make: "Ford", model: "T", ownerID: owner.id))
        let people = try #require(GarageSchema.descriptor.entity(named: "Person"))
        #expect(try await garage.deleteEffects(of: people, key: [.integer(owner.id!)]).contains { $0.rule == .deny && $0.count == 1 })
        await #expect(throws: StoreError.self) { try await garage.deleteRecord(of: people, key: [.integer(owner.id!)]) }
    }

    /// A many-to-many relationship narrows a list to the records its join table links to one
    /// record, from either side; a page, a count and a search honour it alike.
    @Test(arguments: StoreEngine.available)
    func aManyToManyLinkNarrowsTheTargetsList(_ engine: StoreEngine) async throws {
        let garage = try engine.store(GarageSchema.descriptor, GarageSchema.migrations)
        let owner = try await garage.insert(Person(name: "Ann"))
        let civic = try await garage.insert(Car(vin: "C1", make: "Honda", model: "Civic", ownerID: owner.id))
        let golf = try await garage.insert(Car(vin: "G1", make: "VW", model: "Golf", ownerID: owner.id))
        let ada = try await garage.insert(Mechanic(name: "Ada"))
        let bob = try await garage.insert(Mechanic(name: "Bob"))
        _ = try await garage.insert(Mechanic(name: "Cy"))
        try await garage.link(Car.mechanics, civic, ada)
        try await garage.link(Car.mechanics, golf, ada)
        try await garage.link(Car.mechanics, golf, bob)
        let mechanics = try #require(GarageSchema.descriptor.entity(named: "Mechanic"))
        let cars = try #require(GarageSchema.descriptor.entity(named: "Car"))
        func names(_ records: [StoredRecord]) -> [String] { records.compactMap { if case .text(let name)? = $0["name"] { name } else { nil } } }
        let golfs = try await garage.records(of: mechanics, where: [.linked(through: "cars", to: .integer(golf.id!))], orderedBy: RecordOrder("name"), limit: 10)
        #expect(names(golfs.records) == ["Ada", "Bob"] && golfs.next == nil)
        let civics = try await garage.records(of: mechanics, where: [.linked(through: "cars", to: .integer(civic.id!)), RecordFilter("name", .contains("b"))], limit: 10)
        #expect(civics.records.isEmpty)
        #expect(try await garage.countRecords(of: cars, where: [.linked(through: "mechanics", to: .integer(ada.id!))]) == 2)
        #expect(try await garage.countRecords(of: cars, where: [.linked(through: "mechanics", to: .integer(bob.id!))]) == 1)
        // A relationship a join table does not hold, or none at all, is refused by name.
        await #expect(throws: StoreError.self) { _ = try await garage.countRecords(of: cars, where: [.linked(through: "owner", to: .integer(owner.id!))]) }
        await #expect(throws: StoreError.self) { _ = try await garage.countRecords(of: cars, where: [.linked(through: "drivers", to: .integer(1))]) }
    }

    /// A record write takes only what the schema's type allows, in the form the store keeps it:
    /// a date normalised to its stored text, a day checked against the calendar, a number within
    /// its width, a required value present; anything else is refused naming the property.
    @Test(arguments: StoreEngine.available)
    func recordWritesAreCheckedAsTheSchemaTypesThem(_ engine: StoreEngine) async throws {
        let store = try engine.flights(at: try engine.freshURL())
        let flights = try #require(FlightsSchema.descriptor.entity(named: "Flight"))
        let added = try await store.insertRecord(of: flights, values: ["ident": .text("UA1"), "status": .text("Scheduled"), "actual_off": .text("2024-03-01T06:37:00Z")])
        #expect(added["actual_off"] == .text("2024-03-01T06:37:00.000Z") || engine != .sqlite, "\(added)")
        let key = [added["id"] ?? .null]
        for (column, value) in [("actual_off", StoredValue.text("garbage")), ("ident", .null), ("route_distance", .text("far"))] {
            await #expect(throws: StoreError.self, "\(column) = \(value)") { _ = try await store.updateRecord(of: flights, key: key, set: [column: value]) }
        }
        let refusal = await #expect(throws: StoreError.self) { _ = try await store.updateRecord(of: flights, key: key, set: ["actual_off": .text("soon")]) }
        #expect("\(refusal.map { "\($0)" } ?? "")".contains("Flight.actualOff takes a date"), "\(String(describing: refusal))")
        let garage = try engine.store(GarageSchema.descriptor, GarageSchema.migrations)
        let cars = try #require(GarageSchema.descriptor.entity(named: "Car"))
        let mechanics = try #require(GarageSchema.descriptor.entity(named: "Mechanic"))
        await #expect(throws: StoreError.self) {
            _ = try await garage.insertRecord(of: cars, values: ["vin": .text("V"), "make": .text("M"), "model": .text("T"), "mileage": .integer(5_000_000_000)])
        }
        await #expect(throws: StoreError.self) { _ = try await garage.insertRecord(of: mechanics, values: ["name": .text("Ada"), "hired_on": .text("2024-02-30")]) }
        let ada = try await garage.insertRecord(of: mechanics, values: ["name": .text("Ada"), "hired_on": .text("2024-02-28T23:30:00Z")])
        #expect(ada["hired_on"] == .text("2024-02-28"), "\(ada)")
        // A filter's value is read the same way: a date in another spelling finds the record.
        #expect(try await store.countRecords(of: flights, where: [RecordFilter("actual_off", .equals(.text("2024-03-01T06:37:00+00:00")))]) == 1)
        await #expect(throws: StoreError.self) { _ = try await store.countRecords(of: flights, where: [RecordFilter("actual_off", .equals(.text("yesterday")))]) }
    }

    /// What a delete will do is what it does: a cascade is followed to the records it reaches
    /// and their own rules, a link this record holds is not an effect on its target, and a
    /// many-to-many link is removed, not its target.
    @Test(arguments: StoreEngine.available)
    func deleteEffectsFollowCascadesAndNameOnlyWhatChanges(_ engine: StoreEngine) async throws {
        let tasks = try engine.store(TasksSchema.descriptor, TasksSchema.migrations)
        let list = try await tasks.insert(TaskList(name: "home"))
        let first = try await tasks.insert(Task(name: "paint", listID: list.id!))
        let second = try await tasks.insert(Task(name: "sand", listID: list.id!))
        for (task, count) in [(first, 3), (second, 2)] {
            for position in 0..<count { _ = try await tasks.insert(ChecklistItem(title: "step \(position)", position: position, taskID: task.id!)) }
        }
        let lists = try #require(TasksSchema.descriptor.entity(named: "TaskList"))
        let effects = try await tasks.deleteEffects(of: lists, key: [.integer(list.id!)])
        #expect(effects.contains { $0.source == "TaskList" && $0.relationship == "tasks" && $0.count == 2 && $0.rule == .cascade }, "\(effects)")
        #expect(effects.contains { $0.source == "Task" && $0.relationship == "checklist" && $0.count == 5 && $0.rule == .cascade }, "\(effects)")
        #expect(!effects.contains { $0.relationship == "list" || $0.relationship == "task" }, "a link the deleted record holds changes nothing: \(effects)")

        let garage = try engine.store(GarageSchema.descriptor, GarageSchema.migrations)
        let owner = try await garage.insert(Person(name: "Ann"))
        let car = try await garage.insert(Car(vin: "C1", make: "Honda", model: "Civic", ownerID: owner.id))
        let ada = try await garage.insert(Mechanic(name: "Ada"))
        try await garage.link(Car.mechanics, car, ada)
        let cars = try #require(GarageSchema.descriptor.entity(named: "Car"))
        let carEffects = try await garage.deleteEffects(of: cars, key: [.integer(car.id!)])
        #expect(!carEffects.contains { $0.relationship == "owner" }, "\(carEffects)")
        #expect(carEffects.contains { $0.relationship == "mechanics" && $0.count == 1 && $0.rule == .nullify }, "\(carEffects)")
    }

    /// A record whose external file is gone reads with that value nil and the reason, instead
    /// of failing its page; it can still be deleted.
    @Test func aRecordWhoseExternalFileIsMissingStillReads() async throws {
        let url = try StoreEngine.sqlite.freshURL()
        let garage = try Store.open(url: url, schema: GarageSchema.descriptor, migrations: GarageSchema.migrations)
        let owner = try await garage.insert(Person(name: "Ann"))
        let car = try await garage.insert(Car(vin: "V1", make: "Ford", model: "T", photo: Data(repeating: 7, count: 200_000), ownerID: owner.id))
        _ = try await garage.insert(Car(vin: "V2", make: "Ford", model: "A", ownerID: owner.id))
        try SQLiteConnection(path: url).execute("UPDATE car SET photo = 'nonexistent-file' WHERE id = \(car.id!)")
        let cars = try #require(GarageSchema.descriptor.entity(named: "Car"))
        let page = try await garage.records(of: cars, limit: 10).records
        #expect(page.count == 2)
        let broken = try #require(page.first { $0["vin"] == .text("V1") })
        #expect(broken["photo"] == .null && broken.unreadable["photo"] != nil, "\(broken)")
        #expect(page.first { $0["vin"] == .text("V2") }?.unreadable.isEmpty == true)
        #expect(try await garage.deleteRecord(of: cars, key: [.integer(car.id!)]))
    }

    /// `recentHistory` reads back from now, newest first, only the transactions that touched
    /// an entity when asked: a tool shows a record's latest changes without the whole history.
    @Test(arguments: StoreEngine.available)
    func recentHistoryReadsBackFromNow(_ engine: StoreEngine) async throws {
        let store = try engine.flights(at: try engine.freshURL(), history: true)
        let airport = try await store.insert(airport("KSFO", "San Francisco"))
        for index in 0..<30 { _ = try await store.insert(flight("UA\(index)", origin: airport.id)) }
        let airports = try #require(FlightsSchema.descriptor.entity(named: "Airport"))
        _ = try await store.updateRecord(of: airports, key: [.integer(airport.id!)], set: ["name": .text("SFO")])
        let latest = try await store.recentHistory(touching: "Airport", limit: 5)
        #expect(latest.count == 2 && latest[0].token.value > latest[1].token.value, "\(latest.map(\.token))")
        #expect(latest.allSatisfy { $0.entities.contains("Airport") })
        let flights = try await store.recentHistory(touching: "Flight", limit: 10)
        #expect(flights.count == 10)
        let older = try await store.recentHistory(before: flights.last!.token, touching: "Flight", limit: 100)
        #expect(older.count == 20 && older.allSatisfy { $0.token.value < flights.last!.token.value })
    }

    /// A key of two columns (a car's visit on a day) pages as a row value: every record once,
    /// in key order, going up and down.
    @Test(arguments: StoreEngine.available)
    func aKeyOfTwoColumnsPagesEveryRecordOnce(_ engine: StoreEngine) async throws {
        let garage = try engine.store(GarageSchema.descriptor, GarageSchema.migrations)
        let owner = try await garage.insert(Person(name: "Ann"))
        var cars: [Int64] = []
        for index in 0..<3 { cars.append(try await garage.insert(Car(vin: "V\(index)", make: "Ford", model: "T\(index)", ownerID: owner.id)).id!) }
        let day = 86_400.0
        try await garage.insert(cars.flatMap { car in (0..<4).map { ServiceVisit(day: Date(timeIntervalSince1970: 1_700_000_000 + Double($0) * day), carID: car) } })
        let visits = try #require(GarageSchema.descriptor.entity(named: "ServiceVisit"))
        for ascending in [true, false] {
            var keys: [[StoredValue]] = []
            var cursor: RecordCursor?
            repeat {
                let page = try await garage.records(of: visits, orderedBy: ascending ? nil : RecordOrder("car_id", ascending: false), after: cursor, limit: 5)
                keys += page.records.map { [$0["car_id"] ?? .null, $0["day"] ?? .null] }
                cursor = page.next
            } while cursor != nil
            #expect(keys.count == 12 && Set(keys).count == 12, "\(keys)")
            let cars = keys.map { $0[0] }
            #expect(ascending ? cars == cars.sorted(by: { "\($0)" < "\($1)" }) : cars == cars.sorted(by: { "\($0)" > "\($1)" }))
        }
    }

    /// A page deep in the table is found by its cursor, not by skipping rows: the last page of
    /// 2,000 rows, reached from the cursor, holds exactly the rows after it.
    @Test func aCursorReachesTheRowsAfterItWithNullsInTheOrder() async throws {
        let store = try StoreEngine.sqlite.flights()
        let flights = try #require(FlightsSchema.descriptor.entity(named: "Flight"))
        let origin = try await store.insert(airport("KSFO"))
        // Some distances are nil: they sort first going up and last going down.
        try await store.insert(
            (0..<2000).map { index in
                var made = flight("F\(index)", origin: origin.id, distance: index)
                if index % 7 == 0 { made.routeDistance = nil }
                return made
            })
        for ascending in [true, false] {
            var all: [StoredRecord] = []
            var cursor: RecordCursor?
            repeat {
                let page = try await store.records(of: flights, orderedBy: RecordOrder("route_distance", ascending: ascending), after: cursor, limit: 333)
                all += page.records
                cursor = page.next
            } while cursor != nil
            #expect(all.count == 2000 && Set(all.map { $0["id"] }).count == 2000, "ascending \(ascending): \(all.count)")
            let distances = all.map { $0["route_distance"] ?? .null }
            let nulls = distances.filter { $0 == .null }.count
            #expect(nulls == 286)
            #expect(ascending ? distances.prefix(nulls).allSatisfy { $0 == .null } : distances.suffix(nulls).allSatisfy { $0 == .null })
        }
    }
}
