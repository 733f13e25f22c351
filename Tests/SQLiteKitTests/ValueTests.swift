import Testing
import TestSupport
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
