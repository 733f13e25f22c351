import TestSupport
import Testing

@testable import SQLiteKit

@Suite struct ValueTests {
    /// Text is bound and read by byte count: a NUL inside it, empty text and every script survive.
    @Test func textRoundTripsByteForByte() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        try connection.execute("CREATE TABLE t (value TEXT)")
        let texts = ["", "a\u{0}b", "\u{0}", "trailing\u{0}", "ünïcödé ✓ 🎨", String(repeating: "x", count: 100_000)]
        for text in texts {
            _ = try connection.query("INSERT INTO t VALUES (?)", [.text(text)])
        }
        let read = try connection.query("SELECT value, length(CAST(value AS BLOB)) FROM t ORDER BY rowid")
        #expect(read.map { $0[0] } == texts.map(SQLiteValue.text))
        #expect(read.map { $0[1] } == texts.map { .integer(Int64($0.utf8.count)) })
        #expect(try connection.query("SELECT count(*) FROM t WHERE value IS NULL") == [[.integer(0)]], "empty text is not NULL")
    }
}

@Suite struct BorrowedColumnTests {
    /// The opened columns' blobs are handed over where SQLite holds them, after the rest of the
    /// row is read; other values come as values; what the opener returns is the column's value.
    @Test func openedColumnsSeeTheirBlobAndTheRestOfTheRow() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        try connection.execute("CREATE TABLE t (secret BLOB, id INTEGER, other TEXT)")
        _ = try connection.query("INSERT INTO t VALUES (x'0102ff', 1, 'one'), (NULL, 2, 'two'), (x'', 3, 'three'), ('text', 4, 'four')")
        var seen: [String] = []
        var rows: [[SQLiteValue]] = []
        try connection.forEachRowInPlace(
            "SELECT secret, id, other FROM t ORDER BY id", opening: [0],
            with: { column, content, row in
                #expect(column == 0)
                #expect(row[0] == .null, "the opened column is not read twice")
                switch content {
                case .blob(let bytes):
                    seen.append("blob \(Array(bytes)) for \(row[1]) \(row[2])")
                    return .integer(Int64(bytes.count))
                case .value(let value):
                    seen.append("value \(value) for \(row[1])")
                    return value
                }
            }
        ) { row in rows.append(row) }
        #expect(seen == ["blob [1, 2, 255] for 1 'one'", "value NULL for 2", "blob [] for 3 'three'", "value 'text' for 4"])
        #expect(rows == [[.integer(3), .integer(1), .text("one")], [.null, .integer(2), .text("two")], [.integer(0), .integer(3), .text("three")], [.text("text"), .integer(4), .text("four")]])
    }

    @Test func anOpenersErrorStopsTheQueryAndReachesTheCaller() throws {
        struct Refused: Error {}
        let connection = try SQLiteConnection(path: ":memory:")
        try connection.execute("CREATE TABLE t (secret BLOB); INSERT INTO t VALUES (x'01'), (x'02')")
        var bodies = 0
        #expect(throws: Refused.self) {
            try connection.forEachRowInPlace("SELECT secret FROM t", opening: [0], with: { _, _, _ in throw Refused() }) { _ in bodies += 1 }
        }
        #expect(bodies == 0)
        // The cached statement was reset: the connection goes on.
        #expect(try connection.query("SELECT count(*) FROM t") == [[.integer(2)]])
    }
}
