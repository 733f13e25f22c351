import Foundation

/// Dates as UTC ISO 8601 text with milliseconds (`2024-01-31T08:00:00.000Z`), which sorts by
/// time. Written and read by hand: a date formatter per value costs more than the whole insert.
public enum StoredDate {
    /// The stored form of a date, rounded to the millisecond: `2024-01-31T08:00:00.000Z`.
    public static func text(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var days = milliseconds / 86_400_000
        var rest = milliseconds % 86_400_000
        if rest < 0 {
            rest += 86_400_000
            days -= 1
        }
        // Civil date from days since 1970 (Howard Hinnant's days_from_civil, inverted).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        guard (0...9999).contains(year) else {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: date)
        }
        var bytes = [UInt8](repeating: 0, count: 24)
        func put(_ value: Int64, _ width: Int, at offset: Int) {
            var value = value
            for index in stride(from: offset + width - 1, through: offset, by: -1) {
                bytes[index] = UInt8(48 + value % 10)
                value /= 10
            }
        }
        put(year, 4, at: 0)
        bytes[4] = 45
        put(month, 2, at: 5)
        bytes[7] = 45
        put(day, 2, at: 8)
        bytes[10] = 84
        put(rest / 3_600_000, 2, at: 11)
        bytes[13] = 58
        put(rest / 60_000 % 60, 2, at: 14)
        bytes[16] = 58
        put(rest / 1000 % 60, 2, at: 17)
        bytes[19] = 46
        put(rest % 1000, 3, at: 20)
        bytes[23] = 90
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The stored form of a calendar day (`dateOnly`): the date's day in UTC, `2024-01-31`.
    ///
    ///     StoredDate.day(Date(timeIntervalSince1970: 1_706_720_400))   // "2024-01-31"
    public static func day(_ date: Date) -> String {
        let text = text(date)
        return text.firstIndex(of: "T").map { String(text[..<$0]) } ?? text
    }

    /// The date `date(day(date))` gives: the start of its day in UTC.
    ///
    ///     StoredDate.startOfDay(evening) == StoredDate.date("2024-01-31")
    public static func startOfDay(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (rounded(date).timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
    }

    /// A stored value as a day column keeps it: stored date text cut to its day; anything else
    /// as it is.
    ///
    ///     StoredDate.dayValue(.text("2024-01-31T22:30:00.000Z"))   // .text("2024-01-31")
    public static func dayValue(_ value: StoredValue) -> StoredValue {
        guard case .text(let text) = value, text.utf8.count != 10, let date = date(text) else { return value }
        return .text(day(date))
    }

    /// The date `date(text(date))` gives, without the text.
    public static func rounded(_ date: Date) -> Date {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        // Years 0 to 9999, which `text` writes by hand; others go through the formatter.
        guard milliseconds >= -62_167_219_200_000, milliseconds < 253_402_300_800_000 else { return self.date(text(date)) ?? date }
        return Date(timeIntervalSince1970: Double(Int64(milliseconds)) / 1000)
    }

    /// The date stored text names (`Z` or an offset; milliseconds optional), or nil.
    public static func date(_ text: String) -> Date? {
        // Read in place: `withUTF8` would need a mutable copy, a retain and release per date read.
        if let fast = text.utf8.withContiguousStorageIfAvailable({ parse($0) })
            ?? {
                var copy = text
                return copy.withUTF8 { parse($0) }
            }()
        {
            return fast
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        return sqliteText(text).flatMap {
            formatter.formatOptions = $0.hasFraction ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
            return formatter.date(from: $0.iso)
        }
    }

    /// SQLite's own spellings, which adopted databases hold (`CURRENT_TIMESTAMP`, `date('now')`):
    /// `YYYY-MM-DD`, `YYYY-MM-DD HH:MM`, `YYYY-MM-DD HH:MM:SS[.SSS]`, with a space or `T`, UTC
    /// unless a zone is given. As ISO 8601 with a zone.
    static func sqliteText(_ text: String) -> (iso: String, hasFraction: Bool)? {
        var bytes = Array(text.utf8)
        func digits(_ range: Range<Int>) -> Bool { range.allSatisfy { $0 < bytes.count && bytes[$0] >= 48 && bytes[$0] <= 57 } }
        guard bytes.count >= 10, digits(0..<4), bytes[4] == 45, digits(5..<7), bytes[7] == 45, digits(8..<10) else { return nil }
        if bytes.count == 10 { return (text + "T00:00:00Z", false) }
        guard bytes[10] == 32 || bytes[10] == 84, bytes.count >= 16, digits(11..<13), bytes[13] == 58, digits(14..<16) else { return nil }
        bytes[10] = 84
        if bytes.count == 16 || bytes[16] != 58 { bytes.insert(contentsOf: Array(":00".utf8), at: 16) }
        let last = bytes[bytes.count - 1]
        let hasZone = last == 90 || (bytes.count > 19 && bytes[19...].contains { $0 == 43 || $0 == 45 })
        if !hasZone { bytes.append(90) }
        let iso = String(decoding: bytes, as: UTF8.self)
        return (iso, bytes.count > 19 && bytes[19] == 46)
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` exactly, as `text` writes it, or `YYYY-MM-DD` as `day` does.
    private static func parse(_ b: UnsafeBufferPointer<UInt8>) -> Date? {
        let isDay = b.count == 10
        guard isDay || (b.count == 24 && b[10] == 84 && b[13] == 58 && b[16] == 58 && b[19] == 46 && b[23] == 90), b[4] == 45, b[7] == 45 else { return nil }
        func number(_ offset: Int, _ width: Int) -> Int64? {
            var value: Int64 = 0
            for index in offset..<offset + width {
                let digit = b[index] &- 48
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = isDay ? 0 : number(11, 2),
            let minute = isDay ? 0 : number(14, 2), let second = isDay ? 0 : number(17, 2), let millisecond = isDay ? 0 : number(20, 3),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        // Days since 1970 from a civil date (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let milliseconds = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millisecond
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
