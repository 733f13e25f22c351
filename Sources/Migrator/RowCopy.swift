/// Recognises the row copy of a table rebuild, `INSERT INTO "new" (...) SELECT ... FROM "old";`,
/// the statement the planner writes for step 5 of SQLite's rebuild procedure. Only progress
/// display depends on it: a statement it misses runs the same, with a spinner instead of a count.
enum RowCopy {
    /// The quoted table the statement copies from, unquoted; nil for any other statement.
    static func sourceTable(of statement: String) -> String? {
        guard statement.hasPrefix("INSERT INTO "), statement.contains(" SELECT ") else { return nil }
        var scalars = Array(statement.unicodeScalars)
        guard scalars.last == ";" else { return nil }
        scalars.removeLast()
        guard scalars.last == "\"" else { return nil }
        // Walk back over the quoted name: a doubled quote is a quote inside it.
        var index = scalars.count - 2
        var name: [Unicode.Scalar] = []
        while index >= 0 {
            if scalars[index] == "\"" {
                if index > 0, scalars[index - 1] == "\"" {
                    name.append("\"")
                    index -= 2
                    continue
                }
                break
            }
            name.append(scalars[index])
            index -= 1
        }
        guard index >= 6, String(String.UnicodeScalarView(scalars[(index - 6)..<index])) == " FROM " else { return nil }
        return String(String.UnicodeScalarView(name.reversed()))
    }
}
