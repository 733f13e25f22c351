/// How schema text is spelled where a program writes it (imported schemas, Core Data user info).
public enum YAMLText {
    /// A double-quoted YAML scalar; control characters, quotes and backslashes escaped. Not
    /// JSON's writer: YAML also forbids raw C1 controls, U+2028/2029 and a BOM inside quotes.
    ///
    ///     let value = YAMLText.quoted("key: value")   // the text in double quotes, safe as any YAML scalar
    public static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                let value = scalar.value
                if value < 0x20 || (value >= 0x7F && value <= 0x9F) || value == 0x2028 || value == 0x2029 || value == 0xFEFF {
                    out += value <= 0xFF ? "\\x" + hex(value, width: 2) : "\\u" + hex(value, width: 4)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    private static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
