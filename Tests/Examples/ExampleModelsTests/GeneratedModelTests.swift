import ExampleModels
import Foundation
import MigratorCore
import MigratorPostgres
import MigratorSQLite
import PostgresKit
import SQLiteKit
import SchemaMetadata
import TestSupport
import Testing

/// The example schemas' generated models, compiled by the build, used as an app would.
@Suite struct GeneratedModelTests {
    @Test func airportsDecodeFromAeroAPIJSONWithCustomKeys() throws {
        let json = Data(
            """
            [{"airport_code": "KSFO", "name": "San Francisco Intl", "city": "San Francisco", "state": "CA",
              "country_code": "US", "latitude": 37.6188, "longitude": -122.3754, "timezone": "America/Los_Angeles"},
             {"airport_code": "EGLL", "name": "London Heathrow", "city": "London", "state": null,
              "country_code": "GB", "latitude": 51.4706, "longitude": -0.4619, "timezone": "Europe/London"}]
            """.utf8)
        let airports = try JSONDecoder().decode([Airport].self, from: json)
        #expect(airports.map(\.icao) == ["KSFO", "EGLL"])
        #expect(airports[0].countryCode == "US")
        #expect(airports[1].state == nil)
        #expect(airports[0].id == nil, "the implicit key is absent until the store assigns it")
        #expect(airports[0].isFavorite == false, "transient values take their default")
    }

    @Test func encodingUsesJSONKeysAndLeavesTransientValuesOut() throws {
        var airport = Airport(icao: "KSFO", name: "SFO", city: "San Francisco", countryCode: "US", latitude: 1, longitude: 2)
        airport.isFavorite = true
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(airport)) as? [String: Any])
        #expect(object["airport_code"] as? String == "KSFO")
        #expect(object["icao"] == nil)
        #expect(object["isFavorite"] == nil)
        #expect(object["timezone"] == nil, "nil optionals are left out")
        #expect(Airport(icao: "KBZN").name == nil, "optional attributes default to nil in the memberwise initializer")
    }

    @Test func modelsRoundTripThroughJSON() throws {
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        let flight = Flight(
            ident: "UAL123", scheduledOff: Date(timeIntervalSince1970: 1_700_000_000), estimatedOff: Date(timeIntervalSince1970: 1_700_000_100),
            scheduledOn: Date(timeIntervalSince1970: 1_700_010_000), estimatedOn: Date(timeIntervalSince1970: 1_700_010_100),
            status: "Scheduled", routeDistance: 2_400, filedAirspeed: 450, filedAltitude: 350, aircraftType: "B738", originID: 7)
        #expect(try decoder.decode(Flight.self, from: encoder.encode(flight)) == flight)

        let car = Car(vin: "1HGCM82633A004352", make: "Honda", model: "Accord", manual: URL(string: "https://example.com/manual.pdf"))
        #expect(car.color == Color(red: 1, green: 0, blue: 0, alpha: 1, label: nil))
        #expect(car.price == Decimal(0))
        #expect(try decoder.decode(Car.self, from: encoder.encode(car)) == car)

        let color = Color(red: 0.5, green: 0.5, blue: 0.5, label: "grey")
        let colorObject = try #require(try JSONSerialization.jsonObject(with: encoder.encode(color)) as? [String: Any])
        #expect(colorObject["name"] as? String == "grey", "value types honour jsonKey")

        let task = Task(name: "Write tests", priority: .high, listID: 1)
        let decodedTask = try decoder.decode(Task.self, from: encoder.encode(task))
        #expect(decodedTask == task)
        #expect(decodedTask.tags == [])
        #expect(Priority.high.rawValue == 2)
        #expect(UserType.allCases == [.admin, .member, .guest])
    }

    @Test func identifiableKeys() {
        let user = User(identifier: "u-1", name: "Ada", isOnline: true)
        #expect(user.id == "u-1")
        #expect(user.type == .member)
        let day = Date(timeIntervalSince1970: 86_400)
        let visit = ServiceVisit(day: day, carID: 42)
        #expect(visit.id == ServiceVisit.ID(carID: 42, day: day))
        let item = TodoItem(taskName: "Buy milk")
        #expect(item.id != TodoItem(taskName: "Buy milk").id, "uuid defaults generate a new value per model")
        #expect(item.isCompleted == false)
    }

    @Test func metadataDescribesTablesKeysAndLinks() throws {
        let flights = FlightsSchema.descriptor
        #expect(flights.version == 5)
        #expect(Flight.entity.table == "flights")
        #expect(Flight.entity.relationship(named: "origin")?.foreignKeyColumns == ["origin_id"])
        #expect(Airport.entity.column(forProperty: "countryCode")?.column == "country_code")
        #expect(Airport.entity.column(forProperty: "isFavorite") == nil, "transient attributes have no column")
        #expect(Airport.entity.indexes.map(\.name).contains("airports_icao_key"))
        #expect(Airport.entity.indexes.contains { $0.kind == .fullText && $0.columns == ["name"] })
        #expect(Airport.flightsFrom.descriptor?.inverse == "origin")
        #expect(Car.entity.relationship(named: "mechanics")?.joinTable == "car_mechanics")
        #expect(ServiceVisit.entity.primaryKey == ["car_id", "day"])
        #expect(User.entity.column(forProperty: "type")?.defaultValue == .literal("member"))
        #expect(Task.entity.column(forProperty: "priority")?.defaultValue == .literal("1"), "enum defaults are stored as raw values")
        #expect(Car.entity.column(forProperty: "color")?.defaultValue == .literal(#"{"red":1.0,"green":0.0,"blue":0.0,"alpha":1.0,"name":null}"#))
        #expect(TodoItem.entity.column(forProperty: "id")?.defaultValue == .generatedUUID)
    }
}

/// Migrations compiled into the generated code bring a database to the current version.
@Suite struct EmbeddedMigrationTests {
    @Test func anApplicationMigratesFromGeneratedCodeAlone() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        let migrator = Migrator(connection: connection, schema: FlightsSchema.name, embedded: FlightsSchema.migrations)
        #expect(FlightsSchema.migrations.map(\.version) == [1, 2, 3, 4, 5])
        var finished: [Int] = []
        try migrator.up { event in
            if case .finished(let script, _, _) = event { finished.append(script.version) }
        }
        #expect(finished == [1, 2, 3, 4, 5])
        // The tables match the metadata the models carry.
        for entity in FlightsSchema.descriptor.entities {
            let columns = try connection.query("SELECT name FROM pragma_table_info(?)", [.text(entity.table)]).map { row -> String in
                if case .text(let name) = row[0] { return name } else { return "" }
            }
            let expected = entity.columns.map(\.column) + (entity.hasImplicitKey ? ["id"] : []) + entity.relationships.flatMap(\.foreignKeyColumns)
            #expect(Set(columns) == Set(expected), "\(entity.table)")
        }
        #expect(try migrator.up().isEmpty)
    }
}

/// Generated code embeds every dialect's committed migrations, so the same
/// `<Schema>Schema.migrations` migrates a PostgreSQL database too.
@Suite(.blocking, .serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct EmbeddedDialectMigrationTests {
    /// Each schema's embedded PostgreSQL SQL is its committed `postgres` folder, byte for byte; a
    /// schema without that folder embeds none.
    static let embedded: [String: [EmbeddedMigration]] = [
        FlightsSchema.name: FlightsSchema.migrations, TasksSchema.name: TasksSchema.migrations, TodoSchema.name: TodoSchema.migrations,
    ]

    @Test(arguments: ["Flights", "Tasks", "Todo"])
    func theEmbeddedSQLIsTheCommittedFolder(schema: String) throws {
        let migrations = try #require(Self.embedded[schema])
        let folder = repositoryRoot.appendingPathComponent("Migrations/\(schema)/postgres")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for migration in migrations {
            let variant = migration.variant(for: "postgres")
            let upFile = migration.fileName.upFile
            guard files.contains(upFile) else {
                #expect(variant == nil, "\(schema) \(migration.label) embeds PostgreSQL SQL without a committed file")
                continue
            }
            let committedUp = try String(contentsOf: folder.appendingPathComponent(upFile), encoding: .utf8)
            let committedDown = try String(contentsOf: folder.appendingPathComponent(migration.fileName.downFile), encoding: .utf8)
            #expect(variant?.up == committedUp, "\(schema) \(migration.label) up")
            #expect(variant?.down == committedDown, "\(schema) \(migration.label) down")
            #expect(variant?.upFile == "postgres/" + upFile)
            #expect(variant?.up != migration.up, "the PostgreSQL SQL is not SQLite's")
        }
        #expect(migrations.contains { $0.variant(for: "postgres") != nil } == !files.isEmpty)
    }

    /// The embedded variants bring a real PostgreSQL database to the schema's version, and
    /// down again.
    @Test func theEmbeddedPostgreSQLMigrationsApplyToARealServer() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let connection = try PostgresConnection(try server.createDatabase())
        let scripts = FlightsSchema.migrations.compactMap { $0.variant(for: "postgres") }
        #expect(scripts.map(\.version) == FlightsSchema.migrations.map(\.version))
        let migrator = Migrator(database: PostgresMigrationDatabase(connection), schema: FlightsSchema.name, scripts: scripts)
        #expect(try migrator.up().count == scripts.count)
        for entity in FlightsSchema.descriptor.entities {
            let columns = try connection.query("SELECT column_name FROM information_schema.columns WHERE table_name = $1", [.text(entity.table)])
            #expect(!columns.isEmpty, "\(entity.table) exists")
        }
        #expect(try migrator.up().isEmpty)
        _ = try migrator.down(.version(0), options: .init(allowDestructive: true))
        #expect(try connection.query("SELECT count(*) FROM information_schema.tables WHERE table_name = 'flights'").first?.first == .integer(0))
    }
}
