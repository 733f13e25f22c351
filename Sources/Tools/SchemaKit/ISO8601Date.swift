import Foundation

/// Reads the ISO 8601 forms a schema default may use: a date, or a date and time with or
/// without seconds, fraction and zone (no zone means UTC), with `T` or a space between.
public enum ISO8601Date {
    /// `YYYY-MM-DD` alone, with no time of day: a `dateOnly` default.
    public static func isCalendarDay(_ text: String) -> Bool {
        text.utf8.count == 10 && parse(text) != nil
    }

    public static func parse(_ text: String) -> Date? {
        var normalized = text.replacingOccurrences(of: " ", with: "T")
        if normalized.count > 10 {
            let time = normalized.dropFirst(11)
            if !(time.hasSuffix("Z") || time.contains("+") || time.contains("-")) { normalized += "Z" }
            // HH:MM without seconds.
            if time.count >= 5, time.dropFirst(5).first != ":" {
                normalized.insert(contentsOf: ":00", at: normalized.index(normalized.startIndex, offsetBy: 16))
            }
        }
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime], [.withFullDate]] {
            formatter.formatOptions = options
            if let date = formatter.date(from: normalized) { return date }
        }
        return nil
    }

    /// `2024-01-31T08:00:00.000Z`: UTC with milliseconds, which sorts by time as text.
    public static func canonical(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
