import Foundation
import SchemaMetadata
import TestSupport
import Testing

@testable import PostgresKit

/// Values the history's drain reads as text (an image's columns cast to text, in an array)
/// must equal the same values read as columns.
@Suite struct PostgresTextFormatTests {
    @Test(arguments: [
        ("{}", [String?]()),
        ("{1,2,3}", ["1", "2", "3"]),
        ("{NULL,null,\"NULL\"}", [nil, nil, "NULL"]),
        ("{\"\",\"a b\",\"x,y\",\"{}\"}", ["", "a b", "x,y", "{}"]),
        (#"{"say \"hi\"","back\\slash"}"#, ["say \"hi\"", "back\\slash"]),
        ("{\"2026-12-01 18:00:00.5+00\",\\\\x00ff}", ["2026-12-01 18:00:00.5+00", "\\\\x00ff"]),
        ("{été,\"日本 語\"}", ["été", "日本 語"]),
    ])
    func arraysSplitIntoTheirElements(literal: String, elements: [String?]) {
        #expect(PostgresTextFormat.arrayElements(literal) == elements)
    }

    @Test(arguments: ["", "1,2", "{1,2", "{\"open}", "{\"a\"b}", "{\"a\\"])
    func whatIsNotAnArrayIsRefused(literal: String) {
        #expect(PostgresTextFormat.arrayElements(literal) == nil)
    }

    /// Every type the store maps, with the values whose text is awkward (quotes, commas,
    /// braces, backslashes, the word NULL, infinities, fractions of seconds), read both ways
    /// on a real server.
    @Test(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
    func castValuesReadAsTheirColumnsDo() throws {
        let url = try #require(PostgresServer.shared).createDatabase()
        let connection = try PostgresConnection(url)
        try connection.execute("SET TIME ZONE 'UTC'")
        try connection.execute(
            """
            CREATE TABLE sample (t text, b boolean, i bigint, s smallint, n integer, d double precision, r real, x bytea, ts timestamptz, num numeric, u uuid, day date);
            INSERT INTO sample VALUES
              ('say "hi", {x} \\ NULL', true, 9223372036854775807, -3, 42, 'Infinity', '-Infinity', '\\x00ff22', '2026-12-01 18:00:00.123456+00', 1.50, 'e6c40cf8-a93b-4b73-9e40-9a4d6ed70516', '2026-12-01'),
              ('NULL', false, -1, 0, 0, 1e-300, 0.5, '\\x', '2026-12-01 18:00:00.5+00', -0.0001, NULL, NULL),
              ('', NULL, NULL, NULL, NULL, 'NaN', NULL, NULL, NULL, NULL, NULL, NULL);
            """)
        let types = try connection.query("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'sample' ORDER BY ordinal_position")
        let columns = types.map { row -> (name: String, type: String) in
            guard case .text(let name) = row[0], case .text(let type) = row[1] else { return ("", "") }
            return (name, type)
        }
        let casts = columns.map { "r.\"\($0.name)\"::text" }.joined(separator: ", ")
        let direct = try connection.query("SELECT * FROM sample ORDER BY t")
        let cast = try connection.query("SELECT (SELECT ARRAY[\(casts)]::text[] FROM jsonb_populate_record(NULL::sample, to_jsonb(whole)) r) FROM sample whole ORDER BY t")
        #expect(direct.count == 3 && cast.count == 3)
        for (row, image) in zip(direct, cast) {
            guard case .text(let literal)? = image.first, let elements = PostgresTextFormat.arrayElements(literal) else {
                Issue.record("not an array: \(image)")
                continue
            }
            let values = zip(elements, columns).map { element, column in element.map { PostgresTextFormat.value($0, dataType: column.type) } ?? .null }
            for (index, column) in columns.enumerated() {
                if case .real(let expected) = row[index], expected.isNaN, case .real(let read) = values[index] {
                    #expect(read.isNaN, "\(column.name)")
                } else {
                    #expect(values[index] == row[index], "\(column.name): \(literal)")
                }
            }
        }
    }
}
