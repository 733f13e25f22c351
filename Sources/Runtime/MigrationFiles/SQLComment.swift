/// The one way the planner writes a comment into SQL: a `--` line that data cannot end early.
///
/// Both SQLite and PostgreSQL end a `--` comment at a line break, so any name or text that
/// reached a comment with a line break in it would put what follows outside the comment, as
/// SQL. Every control character (line feed, carriage return, NUL, and the rest of C0 and C1), and
/// the Unicode line and paragraph separators, are written as `\u{…}` escapes instead.
public enum SQLComment {
    /// `-- text`, on one line whatever `text` holds.
    public static func line(_ text: String) -> String {
        var out = "-- "
        out.reserveCapacity(text.utf8.count + 3)
        for scalar in text.unicodeScalars {
            if isLineBreaking(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Control characters and the characters some readers treat as line ends.
    public static func isLineBreaking(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}
