import Foundation
import SchemaMetadata
import Testing

@testable import PostgresKit

/// PostgreSQL's timestamps (ISO DateStyle, session in UTC) become the text the toolkit writes,
/// so `StoredDate` reads them on its fast path, and any other spelling still reads right.
@Suite struct PostgresTimestampTests {
    @Test(arguments: [
        ("2026-12-01 18:00:00+00", "2026-12-01T18:00:00.000Z"), ("2026-12-01 18:00:00.5+00", "2026-12-01T18:00:00.500Z"),
        ("2026-12-01 18:00:00.123+00", "2026-12-01T18:00:00.123Z"), ("2026-12-01 18:00:00.123456+00", "2026-12-01T18:00:00.123456Z"),
        ("2026-12-01 20:00:00+02", "2026-12-01T20:00:00+02:00"), ("2026-12-01 13:30:00-04:30", "2026-12-01T13:30:00-04:30"),
    ])
    func timestampsBecomeISOText(postgres: String, iso: String) {
        #expect(PostgresConnection.isoTimestamp(postgres) == iso)
        #expect(StoredDate.date(iso) != nil, "\(iso) reads as a date")
    }

    @Test func everySpellingNamesTheSameInstant() throws {
        let instant = try #require(StoredDate.date("2026-12-01T18:00:00.500Z"))
        #expect(StoredDate.date(PostgresConnection.isoTimestamp("2026-12-01 18:00:00.5+00")) == instant)
        #expect(StoredDate.date(PostgresConnection.isoTimestamp("2026-12-01 20:00:00.5+02")) == instant)
    }
}
