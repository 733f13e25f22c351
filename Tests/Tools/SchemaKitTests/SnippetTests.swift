import TestSupport
import Testing

@testable import SchemaKit

/// Small schemas in, the diagnostics expected out: one rule per case.
@Suite struct SnippetTests {
    static let header = "schema: S\nversion: 1\n"

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let yaml: String
        let expected: [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "valid minimal schema", yaml: "entities:\n  A:\n    attributes:\n      x: Int\n", expected: []),
        Case(
            name: "a backfill value or SQL per dialect",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: Int, backfill: 0}\n      y: {type: String, backfill: {sqlite: \"'a'\", postgres: \"'a'\"}}\n", expected: []),
        Case(
            name: "a backfill is checked against the type",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: Int, backfill: many}\n", expected: ["6:32 invalid-default"]),
        Case(
            name: "a backfill names dialects",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: Int, backfill: {mysql: \"0\"}}\n", expected: ["6:33 unknown-key"]),
        Case(
            name: "a backfill on an optional attribute is never used",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: Int?, backfill: 0}\n", expected: ["6:23 redundant"]),
        Case(
            name: "a decimal's precision and scale",
            yaml: "entities:\n  A:\n    attributes:\n      price: {type: Decimal, precision: 12, scale: 2}\n      rate: {type: Decimal?, precision: 5}\n", expected: []),
        Case(
            name: "a day (dateOnly), today or a fixed one by default",
            yaml: "entities:\n  A:\n    attributes:\n      day: {type: Date, dateOnly: true, default: now}\n      since: {type: Date?, dateOnly: true, default: 2024-01-31}\n", expected: []),
        Case(
            name: "a schema that keeps CloudKit's rules",
            yaml:
                "cloudKit: true\nentities:\n  A:\n    attributes:\n      x: Int?\n      y: {type: String, default: a}\n    relationships:\n      bs: {to: \"[B]\", inverse: a, deleteRule: cascade}\n  B:\n    attributes:\n      z: {type: Bool, default: false}\n    relationships:\n      a: {to: A?, inverse: bs}\n",
            expected: []),
        Case(
            name: "CloudKit: every attribute optional or defaulted, none unique",
            yaml: "cloudKit: true\nentities:\n  A:\n    attributes:\n      x: Int\n      y: {type: Int?, unique: true}\n    uniques: [[x, y]]\n",
            expected: ["7:7 cloudkit", "8:23 cloudkit", "9:14 cloudkit"]),
        Case(
            name: "CloudKit: relationships optional, with an inverse, never Deny",
            yaml: "cloudKit: true\nentities:\n  A:\n    attributes:\n      x: Int?\n    relationships:\n      b: {to: B, deleteRule: deny}\n  B:\n    attributes:\n      y: Int?\n",
            expected: ["9:7 cloudkit", "9:15 cloudkit", "9:30 cloudkit"]),
        Case(
            name: "CloudKit: what coreData gives counts too",
            yaml:
                "cloudKit: true\nentities:\n  A:\n    attributes:\n      x: Int?\n    relationships:\n      bs: {to: \"[B]\", inverse: a, coreData: {ordered: YES}}\n  B:\n    attributes:\n      y: Int?\n    relationships:\n      a: {to: A?, inverse: bs}\n",
            expected: ["9:45 cloudkit"]),
        Case(
            name: "dateOnly applies to Date only",
            yaml: "entities:\n  A:\n    attributes:\n      name: {type: String, dateOnly: true}\n", expected: ["6:28 conflicting-options"]),
        Case(
            name: "a dateOnly default has no time of day",
            yaml: "entities:\n  A:\n    attributes:\n      day: {type: Date, dateOnly: true, default: 2024-01-31T08:00:00Z}\n", expected: ["6:50 invalid-default"]),
        Case(
            name: "precision applies to Decimal only",
            yaml: "entities:\n  A:\n    attributes:\n      price: {type: Double, precision: 12}\n", expected: ["6:29 conflicting-options"]),
        Case(
            name: "scale cannot exceed precision",
            yaml: "entities:\n  A:\n    attributes:\n      price: {type: Decimal, precision: 2, scale: 3}\n", expected: ["6:51 invalid-value"]),
        Case(
            name: "scale needs precision",
            yaml: "entities:\n  A:\n    attributes:\n      price: {type: Decimal, scale: 3}\n", expected: ["6:30 missing-key"]),
        Case(
            name: "precision from 1 to 1000",
            yaml: "entities:\n  A:\n    attributes:\n      price: {type: Decimal, precision: 1001}\n", expected: ["6:41 invalid-value"]),
        Case(
            name: "movedFrom with the link it fills through",
            yaml:
                "entities:\n  User:\n    attributes:\n      name: String\n    relationships:\n      address: {to: Address?, inverse: user, deleteRule: cascade}\n  Address:\n    attributes:\n      street: {type: String?, movedFrom: User.street}\n    relationships:\n      user: {to: User, inverse: address}\n",
            expected: []),
        Case(
            name: "movedFrom needs a to-one relationship holding the key",
            yaml: "entities:\n  User:\n    attributes:\n      name: String\n  Address:\n    attributes:\n      street: {type: String?, movedFrom: User.street}\n",
            expected: ["9:42 invalid-value"]),
        Case(
            name: "movedFrom names Entity.attribute",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: String?, movedFrom: street}\n", expected: ["6:37 invalid-value"]),
        Case(
            name: "movedFrom an unknown entity",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: String?, movedFrom: Gone.street}\n", expected: ["6:37 unknown-entity"]),
        Case(
            name: "swift keywords and SQL reserved words are legal names",
            yaml: "entities:\n  Order:\n    attributes:\n      default: String\n      select: Int\n      class: Bool\n      where: String?\n", expected: []),
        Case(
            name: "unknown key suggests the closest",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: Int, uniqe: true}\n", expected: ["6:22 unknown-key"]),
        Case(name: "unknown type", yaml: "entities:\n  A:\n    attributes:\n      x: Integer\n", expected: ["6:10 unknown-type"]),
        Case(
            name: "non-optional to-one with nullify from the other side",
            yaml: "entities:\n  A:\n    relationships:\n      bs: {to: \"[B]\", inverse: a, deleteRule: nullify}\n  B:\n    relationships:\n      a: A\n",
            expected: ["6:47 delete-rule"]),
        Case(
            name: "cascade makes a required to-one fine",
            yaml: "entities:\n  A:\n    relationships:\n      bs: {to: \"[B]\", inverse: a, deleteRule: cascade}\n  B:\n    relationships:\n      a: A\n",
            expected: []),
        Case(
            name: "deny also makes a required to-one fine",
            yaml: "entities:\n  A:\n    relationships:\n      bs: {to: \"[B]\", inverse: a, deleteRule: deny}\n  B:\n    relationships:\n      a: A\n",
            expected: []),
        Case(
            name: "many-to-many needs no warning",
            yaml: "entities:\n  A:\n    relationships:\n      bs: {to: \"[B]\", inverse: as}\n  B:\n    relationships:\n      as: \"[A]\"\n",
            expected: []),
        Case(
            name: "self-referential many-to-many",
            yaml: "entities:\n  Person:\n    relationships:\n      friends: {to: \"[Person]\", inverse: friendOf}\n      friendOf: \"[Person]\"\n",
            expected: []),
        Case(
            name: "an inverse declared identically on both sides is fine",
            yaml: "entities:\n  A:\n    relationships:\n      b: {to: B?, inverse: a}\n  B:\n    relationships:\n      a: {to: A?, inverse: b}\n",
            expected: []),
        Case(
            name: "a preserved value cannot live in an external file",
            yaml: "entities:\n  A:\n    attributes:\n      photo: {type: Data?, externalStorage: true, preserveValueOnDeletion: true}\n",
            expected: ["6:51 conflicting-options"]),
        Case(
            name: "history off makes preserveValueOnDeletion pointless",
            yaml: "history: false\nentities:\n  A:\n    attributes:\n      name: {type: String, preserveValueOnDeletion: true}\n",
            expected: ["3:10 redundant"]),
        Case(
            name: "history expects true or false", yaml: "history: no\nentities:\n  A:\n    attributes:\n      x: Int\n",
            expected: ["3:10 wrong-kind"]),
        Case(
            name: "randomized encryption cannot back a unique index",
            yaml: "entities:\n  A:\n    attributes:\n      email: {type: String, encrypt: true, unique: true}\n",
            expected: ["6:29 conflicting-options"]),
        Case(
            name: "deterministic encryption can",
            yaml: "entities:\n  A:\n    attributes:\n      email: {type: String, encrypt: deterministic, unique: true}\n", expected: []),
        Case(
            name: "nor the entity's uniques or indexes",
            yaml: "entities:\n  A:\n    attributes:\n      name: String\n      email: {type: String, encrypt: true}\n    uniques: [[email], [name, email]]\n    indexes: [email]\n",
            expected: ["8:16 conflicting-options", "8:31 conflicting-options", "9:15 conflicting-options"]),
        Case(
            name: "deterministic members can",
            yaml: "entities:\n  A:\n    attributes:\n      name: String\n      email: {type: String, encrypt: deterministic}\n    uniques: [[name, email]]\n", expected: []),
        Case(
            name: "encrypt expects true, false or deterministic",
            yaml: "entities:\n  A:\n    attributes:\n      email: {type: String, encrypt: always}\n", expected: ["6:38 wrong-kind"]),
        Case(
            name: "an encrypted value is not kept in a tombstone",
            yaml: "entities:\n  A:\n    attributes:\n      email: {type: String, encrypt: true, preserveValueOnDeletion: true}\n",
            expected: ["6:44 conflicting-options"]),
        Case(
            name: "a primary key cannot be encrypted",
            yaml: "entities:\n  A:\n    attributes:\n      code: {type: String, primaryKey: true, encrypt: deterministic}\n",
            expected: ["6:28 conflicting-options"]),
        Case(
            name: "externalStorage on String is allowed",
            yaml: "entities:\n  A:\n    attributes:\n      body: {type: String?, externalStorage: true}\n", expected: []),
        Case(
            name: "primary key over an array",
            yaml: "entities:\n  A:\n    attributes:\n      tags: {type: \"[String]\", primaryKey: true}\n", expected: ["6:32 primary-key"]),
        Case(
            name: "unique and transient", yaml: "entities:\n  A:\n    attributes:\n      x: {type: Int, unique: true, transient: true, default: 0}\n",
            expected: ["6:22 conflicting-options"]),
        Case(
            name: "a required transient attribute needs a default",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: Int, transient: true}\n      y: {type: Int?, transient: true}\n      z: {type: Int, transient: true, default: 1}\n",
            expected: ["6:22 conflicting-options"]),
        Case(
            name: "column collision after snake_case",
            yaml: "entities:\n  A:\n    attributes:\n      countryCode: String\n      country_code: String\n", expected: ["7:7 name-collision"]),
        Case(
            name: "table collision with a join table",
            yaml: "entities:\n  A:\n    relationships:\n      bs: {to: \"[B]\", inverse: as}\n  B:\n    relationships:\n      as: \"[A]\"\n  AB:\n    table: a_bs\n    attributes:\n      x: Int\n",
            expected: ["6:7 name-collision"]),
        Case(
            name: "case-insensitive type collision",
            yaml: "enums:\n  Kind: [a]\nentities:\n  KIND:\n    attributes:\n      k: Kind\n", expected: ["6:3 name-collision"]),
        Case(name: "version must be positive", yaml: "entities:\n  A:\n    attributes:\n      x: Int\n", expected: ["2:10 invalid-version"]),
        Case(
            name: "integer defaults are range-checked per type",
            yaml: "entities:\n  A:\n    attributes:\n      a: {type: Int16, default: 32767}\n      b: {type: Int16, default: 32768}\n      c: {type: Int8, default: -129}\n",
            expected: ["7:33 invalid-default", "8:32 invalid-default"]),
        Case(
            name: "date defaults",
            yaml:
                "entities:\n  A:\n    attributes:\n      a: {type: Date, default: 2024-02-30}\n      b: {type: Date, default: 2024-13-01}\n      c: {type: Date, default: \"2024-01-31 08:00:00+02:00\"}\n",
            expected: ["6:32 invalid-default", "7:32 invalid-default"]),
        Case(
            name: "YAML merge keys share attribute options",
            yaml: "entities:\n  A:\n    attributes:\n      x: &opts {type: String, unique: true}\n      y: {<<: *opts, type: String?}\n", expected: []),
        Case(
            name: "a value type nesting itself",
            yaml: "values:\n  Node: {next: Node?}\nentities:\n  A:\n    attributes:\n      n: Node\n", expected: ["4:3 invalid-type"]),
        Case(
            name: "value types nesting each other in a ring",
            yaml: "values:\n  A: {b: B}\n  B: {c: C?}\n  C: {a: A, n: Int}\nentities:\n  E:\n    attributes:\n      a: A\n", expected: ["4:3 invalid-type"]),
        Case(
            name: "arrays of a value type may nest",
            yaml: "values:\n  Node: {children: \"[Node]\"}\nentities:\n  A:\n    attributes:\n      n: Node\n", expected: []),
        Case(
            name: "composite key over a relationship with a custom column",
            yaml:
                "entities:\n  A:\n    primaryKey: [code]\n    attributes:\n      code: String\n  B:\n    primaryKey: [a, n]\n    attributes:\n      n: Int\n    relationships:\n      a: {to: A, column: a_code}\n",
            expected: []),
        Case(
            name: "column on a relationship to a composite key",
            yaml: "entities:\n  A:\n    primaryKey: [x, y]\n    attributes:\n      x: Int\n      y: Int\n  B:\n    relationships:\n      a: {to: A?, column: a_ref}\n",
            expected: ["11:27 conflicting-options"]),
        // Each clash of member names, including those a quick screen of each entity must not pass.
        Case(
            name: "columns compare case-insensitively",
            yaml: "entities:\n  A:\n    attributes:\n      title: String\n      heading: {type: String, column: Title}\n",
            expected: ["7:31 name-collision"]),
        Case(
            name: "two attributes with one JSON key",
            yaml: "entities:\n  A:\n    attributes:\n      a: {type: Int, jsonKey: b}\n      b: Int\n", expected: ["7:7 name-collision"]),
        Case(
            name: "JSON keys outside ASCII compare too",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: Int, jsonKey: \"größe\"}\n      y: {type: Int, jsonKey: \"größe\"}\n",
            expected: ["7:22 name-collision"]),
        Case(
            name: "a column longer than PostgreSQL keeps",
            yaml: "entities:\n  A:\n    attributes:\n      x: {type: Int, column: \(String(repeating: "c", count: 64))}\n", expected: ["6:22 long-identifier"]),
        Case(
            name: "a transient attribute still claims its Swift property",
            yaml: "entities:\n  A:\n    attributes:\n      b: {type: Int?, transient: true}\n    relationships:\n      b: B?\n  B:\n    attributes:\n      y: Int\n",
            expected: ["8:7 name-collision"]),
        Case(
            name: "an attribute on a to-one's key column",
            yaml: "entities:\n  A:\n    attributes:\n      ownerId: {type: Int, column: owner_id}\n    relationships:\n      owner: B?\n  B:\n    attributes:\n      y: Int\n",
            expected: ["8:7 name-collision"]),
    ]

    @Test(arguments: cases)
    func diagnosticsForSnippet(_ testCase: Case) {
        let header = testCase.name == "version must be positive" ? "schema: S\nversion: 0\n" : Self.header
        let result = load(header + testCase.yaml)
        #expect(codes(result) == testCase.expected, "\n\(renderText(result))")
    }

    @Test func dateDefaultAcceptsOffsetsAndRejectsImpossibleMonths() {
        #expect(SchemaParser.isISO8601("2024-01-31"))
        #expect(SchemaParser.isISO8601("2024-01-31T08:00:00Z"))
        #expect(SchemaParser.isISO8601("2024-01-31T08:00:00.123+02:00"))
        #expect(SchemaParser.isISO8601("2024-01-31T08:00"))
        #expect(!SchemaParser.isISO8601("2024-13-01"))
        #expect(!SchemaParser.isISO8601("2023-02-29"))
        #expect(SchemaParser.isISO8601("2024-02-29"))
        #expect(!SchemaParser.isISO8601("2024-01-31T25:00:00Z"))
        #expect(!SchemaParser.isISO8601("31/01/2024"))
    }

    @Test func literalFormats() {
        #expect(SchemaParser.isUUID("0b9e2b9c-3c1e-4a57-9d49-1b7f0e8d9a10"))
        #expect(!SchemaParser.isUUID("0b9e2b9c3c1e4a579d491b7f0e8d9a10"))
        #expect(SchemaParser.isBase64("aGVsbG8="))
        #expect(!SchemaParser.isBase64("aGVsbG8"))
        #expect(SchemaParser.isAbsoluteURL("https://example.com/a"))
        #expect(!SchemaParser.isAbsoluteURL("example.com"))
        #expect(SchemaParser.isDecimalLiteral("-12.50"))
        #expect(!SchemaParser.isDecimalLiteral("1."))
    }

    @Test(arguments: [
        ("countryCode", "country_code"), ("URLString", "url_string"), ("userID", "user_id"),
        ("TodoItem", "todo_item"), ("icao", "icao"), ("already_snake", "already_snake"), ("HTTPServer2", "http_server2"),
    ])
    func snakeCase(_ input: String, _ expected: String) {
        #expect(Naming.snakeCase(input) == expected)
    }

    @Test func schemaNamesMustBeUniqueAcrossFiles() throws {
        let directory = temporaryFolder().path
        let a = directory + "/a.yaml", b = directory + "/b.yaml"
        try FileManagerHelpers.write("schema: Same\nversion: 1\nentities:\n  A:\n    attributes:\n      x: Int\n", to: a)
        try FileManagerHelpers.write("schema: Same\nversion: 1\nentities:\n  B:\n    attributes:\n      x: Int\n", to: b)
        let result = SchemaLoader.load(files: [a, b])
        #expect(result.files[0].schema != nil)
        #expect(result.files[1].schema == nil)
        #expect(result.files[1].diagnostics.map(\.code) == ["name-collision"])
    }
}
