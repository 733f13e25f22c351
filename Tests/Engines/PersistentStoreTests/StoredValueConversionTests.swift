import Foundation
import SchemaMetadata
import Testing

/// The conversions between Swift values and stored column values read borrowed values (no
/// copy per column of every fetched row); they must still read what they write and refuse the
/// wrong kind of value with a message that shows it.
@Suite struct StoredValueConversionTests {
    /// A type of the user's own, conforming with a plain (owned) initializer: the borrowing
    /// requirement accepts it.
    struct Celsius: StoredValueConvertible, Equatable {
        var degrees: Double
        init(degrees: Double) { self.degrees = degrees }
        var storedValue: StoredValue { .real(degrees) }
        init(storedValue: StoredValue) throws { degrees = try Double(storedValue: storedValue) }
    }

    enum Level: Int, StoredValueConvertible { case low = 1, high = 2 }

    func roundTrip<T: StoredValueConvertible & Equatable>(_ value: T) throws -> Bool {
        try T(storedValue: value.storedValue) == value
    }

    func refusal<T: StoredValueConvertible>(_ type: T.Type, _ value: StoredValue) -> String? {
        do {
            _ = try T(storedValue: value)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func eachTypeReadsWhatItWrites() throws {
        #expect(try roundTrip("a text longer than fifteen bytes"))
        #expect(try roundTrip(true))
        #expect(try roundTrip(Int16(-12)))
        #expect(try roundTrip(2.5))
        #expect(try roundTrip(UUID()))
        #expect(try roundTrip(URL(string: "https://example.com/a?b=c")!))
        #expect(try roundTrip(Date(timeIntervalSince1970: 1_700_000_000.25)))
        #expect(try roundTrip(Optional<Date>.none))
        #expect(try roundTrip(Optional(Date(timeIntervalSince1970: -1.5))))
        #expect(try roundTrip(Level.high))
        #expect(try roundTrip(Celsius(degrees: -40)))
        #expect(try Double(storedValue: .integer(3)) == 3, "a number stored as an integer")
    }

    @Test func datesInEverySpellingTheReaderKnows() throws {
        // The stored form, read in place; SQLite's own spellings (short enough to be kept
        // inline in the string) go through the slower readers.
        #expect(try Date(storedValue: .text("2026-11-30T20:15:00.125Z")) == Date(timeIntervalSince1970: 1_796_069_700.125))
        #expect(try Date(storedValue: .text("2026-11-30")) == Date(timeIntervalSince1970: 1_795_996_800))
        #expect(try Date(storedValue: .text("2026-11-30 20:15:00")) == Date(timeIntervalSince1970: 1_796_069_700))
    }

    @Test func wrongKindsAreRefusedNamingTheValue() {
        #expect(refusal(String.self, .integer(7)) == "expected text, found 7")
        #expect(refusal(Bool.self, .text("yes")) == "expected a boolean, found 'yes'")
        #expect(refusal(Int8.self, .integer(300)) == "expected an integer that fits Int8, found 300")
        #expect(refusal(Int.self, .real(1.5)) == "expected an integer that fits Int, found 1.5")
        #expect(refusal(UUID.self, .text("not-a-uuid")) == "expected a UUID, found 'not-a-uuid'")
        #expect(refusal(UUID.self, .null) == "expected a UUID, found NULL")
        #expect(refusal(URL.self, .integer(1)) == "expected a URL, found 1")
        #expect(refusal(Date.self, .text("someday")) == "expected a date, found 'someday'")
        #expect(refusal(Date.self, .real(0)) == "expected a date, found 0.0")
        #expect(refusal(Level.self, .integer(9)) == "9 is not a case of Level")
        #expect(refusal(Date?.self, .text("someday")) == "expected a date, found 'someday'", "only NULL reads as nil")
        #expect(refusal(Date?.self, .null) == nil)
    }
}
