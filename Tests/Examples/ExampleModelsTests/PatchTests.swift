import ExampleModels
import Foundation
import SchemaMetadata
import Testing

/// `Patch<Model>` on the generated example models: JSON in and out by the models' own keys,
/// typed changes by key path, and applying them all or nothing.
@Suite struct PatchTests {
    @Test func decodedPatchesKeepAbsentNullAndValueApart() throws {
        var user = User(identifier: "u-1", name: "Ada", isOnline: true, email: "ada@example.com")
        let patch = try JSONDecoder().decode(Patch<User>.self, from: Data(#"{"name": "Ada Lovelace", "isOnline": null, "unknown": 1}"#.utf8))
        #expect(patch[\.name] == .set("Ada Lovelace"))
        #expect(patch[\.isOnline] == .null)
        #expect(patch[\.email] == .absent)
        try patch.apply(to: &user)
        #expect(user.name == "Ada Lovelace", "a value replaces")
        #expect(user.isOnline == nil, "null clears an optional field")
        #expect(user.email == "ada@example.com", "an absent field is left alone")

        let encoded = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(patch)) as? [String: Any])
        #expect(Set(encoded.keys) == ["name", "isOnline"], "absent and unknown fields are not encoded; null ones are")
        #expect(encoded["isOnline"] is NSNull)
        #expect(try JSONDecoder().decode(Patch<User>.self, from: JSONEncoder().encode(patch)) == patch, "a patch survives its own JSON")
    }

    @Test func customJSONKeysEnumsDatesAndForeignKeysDecode() throws {
        let airportPatch = try JSONDecoder().decode(Patch<Airport>.self, from: Data(#"{"airport_code": "KOAK", "elevation": 9, "icao": "ignored"}"#.utf8))
        #expect(airportPatch[\.icao] == .set("KOAK"), "fields are found by the model's JSON key, not the property name")
        #expect(airportPatch[\.elevationFeet] == .set(9))

        let userPatch = try JSONDecoder().decode(Patch<User>.self, from: Data(#"{"type": "admin", "lastSeen": 86400}"#.utf8))
        var user = User(identifier: "u-1", name: "Ada")
        try userPatch.apply(to: &user)
        #expect(user.type == .admin)
        #expect(user.lastSeen == Date(timeIntervalSinceReferenceDate: 86_400), "values decode as the model's own Codable does")

        var flight = Flight(ident: "UAL1", status: "Scheduled", originID: 1, destinationID: 2)
        try JSONDecoder().decode(Patch<Flight>.self, from: Data(#"{"originID": 7, "destinationID": null}"#.utf8)).apply(to: &flight)
        #expect(flight.originID == 7, "the key properties of to-one relationships are fields too")
        #expect(flight.destinationID == nil)
    }

    @Test func aWrongTypeIsADecodingErrorNamingTheKey() throws {
        #expect {
            try JSONDecoder().decode(Patch<User>.self, from: Data(#"{"name": 12}"#.utf8))
        } throws: { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["name"]
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Patch<User>.self, from: Data(#"{"type": "owner"}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Patch<User>.self, from: Data(#"["name"]"#.utf8)) }
    }

    @Test func nullForARequiredFieldFailsWithoutChangingTheModel() throws {
        var airport = Airport(icao: "KSFO", name: "SFO", city: "San Francisco", countryCode: "US", latitude: 1, longitude: 2)
        let original = airport
        let patch = try JSONDecoder().decode(Patch<Airport>.self, from: Data(#"{"city": "Millbrae", "airport_code": null}"#.utf8))
        #expect(throws: PatchError.nullForRequiredField("icao")) { try patch.apply(to: &airport) }
        #expect(airport == original, "the city before the failing field is not applied either")
    }

    @Test func patchesBuiltInCode() throws {
        var patch = Patch<TodoItem>()
        #expect(patch.isEmpty)
        patch[\.taskName] = .set("Buy oat milk")
        patch[\.isCompleted] = .set(true)
        #expect(!patch.isEmpty)
        let built = Patch<TodoItem>().setting(\.taskName, to: .set("Buy oat milk")).setting(\.isCompleted, to: .set(true))
        #expect(built == patch, "subscripts and setting build the same patch")
        patch[\.isCompleted] = .absent
        #expect(patch != built, "absent removes a change")

        var airport = Airport(icao: "KSFO", city: "San Francisco")
        var airportPatch = Patch<Airport>()
        airportPatch[\.city] = .null
        airportPatch[\.name] = .set("San Francisco Intl")
        airportPatch[\.isFavorite] = .set(true)
        #expect(airportPatch[\.name] == .set("San Francisco Intl"), "an optional property's change reads back unwrapped")
        try airportPatch.apply(to: &airport)
        #expect(airport.city == nil && airport.name == "San Francisco Intl")
        #expect(airport.isFavorite, "transient properties apply in code")
        let encoded = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(airportPatch)) as? [String: Any])
        #expect(Set(encoded.keys) == ["city", "name"], "but, as in the model's coding, are never encoded")

        let decoded = try JSONDecoder().decode(Patch<Airport>.self, from: Data(#"{"name": "San Francisco Intl", "city": null}"#.utf8))
        var withoutTransient = airportPatch
        withoutTransient[\.isFavorite] = .absent
        #expect(decoded == withoutTransient, "decoded and built patches compare equal")
    }

    @Test func keyPathsGiveColumnsAndJoinedMembers() {
        #expect(Airport.column(for: \Airport.countryCode) == "country_code")
        #expect(Airport.column(for: \Airport.id) == "id")
        #expect(Airport.column(for: \Airport.isFavorite) == nil, "transient properties have no column")
        #expect(User.column(for: \User.id) == "identifier", "a computed id over a one-column key reads that column")
        #expect(ServiceVisit.column(for: \ServiceVisit.id) == nil, "a composite key has no one column")
        #expect(ServiceVisit.column(for: \ServiceVisit.carID) == "car_id")
        #expect(Flight.Joined.member(for: \Flight.Joined.originID) == .column("origin_id"))
        #expect(Flight.Joined.member(for: \Flight.Joined.origin) == .relationship("origin"))
    }

    @Test func keysSpanningSeveralColumnsArePatchFieldsToo() throws {
        var part = Part(id: 1, label: "bolt", carID: Part.CarKey(make: "VW", serial: 3))
        let patch = try JSONDecoder().decode(Patch<Part>.self, from: Data(#"{"part_label": "nut", "carID": {"make": "BMW", "serial": 7}, "id": 9}"#.utf8))
        try patch.apply(to: &part)
        #expect(part == Part(id: 1, label: "nut", carID: Part.CarKey(make: "BMW", serial: 7)), "the implicit id is never patched")
        try JSONDecoder().decode(Patch<Part>.self, from: Data(#"{"carID": null}"#.utf8)).apply(to: &part)
        #expect(part.carID == nil)
        #expect(Part.column(for: \Part.carID) == nil, "a key over two columns has no one column")
        #expect(Part.column(for: \Part.label) == "label")
    }
}

/// A model whose to-one key spans two columns, written as the templates generate one (the
/// example schemas have none).
private struct Part: PatchableModel {
    struct CarKey: Codable, Hashable, Sendable {
        var make: String
        var serial: Int
    }

    var id: Int64?
    var label: String
    var carID: CarKey?

    enum CodingKeys: String, CodingKey {
        case id, label = "part_label", carID
    }

    static var entity: EntityDescriptor {
        EntityDescriptor(
            name: "Part", table: "parts", primaryKey: ["id"], hasImplicitKey: true,
            columns: [ColumnDescriptor(property: "label", column: "label", jsonKey: "part_label", storage: .text, swiftType: "String", isOptional: false)],
            relationships: [RelationshipDescriptor(name: "car", target: "Car", isOptional: true, foreignKeyColumns: ["car_make", "car_serial"], keyProperty: "carID")],
            indexes: [])
    }

    static var keyPaths: [PartialKeyPath<Part>] { [\.id, \.label, \.carID] }
}
