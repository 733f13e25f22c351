/// Mermaid `erDiagram` text, which GitHub and most Markdown viewers render.
public enum MermaidWriter {
    public static func diagram(_ model: ERModel) -> String {
        var out = "erDiagram\n"
        for box in model.boxes {
            out += "    \(box.name) {\n"
            for row in box.rows {
                var line = "        \(type(row.type)) \(row.name)"
                let keys = [row.isKey ? "PK" : nil, row.isForeignKey ? "FK" : nil, row.isUnique ? "UK" : nil].compactMap { $0 }
                if !keys.isEmpty { line += " " + keys.joined(separator: ", ") }
                let comment = [row.isOptional ? "optional" : nil, row.note].compactMap { $0 }.joined(separator: "; ")
                if !comment.isEmpty { line += " \"\(text(comment))\"" }
                out += line + "\n"
            }
            out += "    }\n"
        }
        for edge in model.edges {
            // The left end is how many `from` objects one `to` has, the right end the reverse.
            let left: String =
                switch edge.fromCardinality {
                case .zeroOrOne: "|o"
                case .exactlyOne: "||"
                case .zeroOrMore: "}o"
                case .oneOrMore: "}|"
                }
            let right: String =
                switch edge.toCardinality {
                case .zeroOrOne: "o|"
                case .exactlyOne: "||"
                case .zeroOrMore: "o{"
                case .oneOrMore: "|{"
                }
            out += "    \(edge.from) \(left)\(edge.isIdentifying ? "--" : "..")\(right) \(edge.to) : \"\(text(edge.label))\"\n"
        }
        return out
    }

    /// Mermaid types are words: `[String]` is written `String[]`.
    static func type(_ type: String) -> String {
        type.hasPrefix("[") && type.hasSuffix("]") ? String(type.dropFirst().dropLast()) + "[]" : type
    }

    /// Mermaid strings have no escapes: double quotes become single ones, line breaks spaces.
    static func text(_ text: String) -> String {
        String(text.map { $0 == "\"" ? "'" : $0.isNewline ? " " : $0 })
    }
}
