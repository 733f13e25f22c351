/// Text made safe inside the languages the toolkit writes: one function per language, each
/// escaping what that language's specification requires, so no module writes its own.
///
///     let attribute = "name=\"" + TextEscaping.xml(name) + "\""
public enum TextEscaping {
    /// A JSON string literal, quotes included: `"`, `\` and the control characters escaped, as
    /// RFC 8259 requires.
    ///
    ///     TextEscaping.json("a \"b\"")   // "\"a \\\"b\\\"\""
    public static func json(_ text: String) -> String {
        var out = ""
        appendJSON(text, to: &out)
        return out
    }

    /// `json(_:)`, appended to `out` (writers that build one large text).
    public static func appendJSON(_ text: String, to out: inout String) {
        out += "\""
        // Runs of bytes that need no escape are appended whole (most text is one run): what
        // needs one is an ASCII byte, so a run's ends are always between scalars.
        let utf8 = text.utf8
        var runStart = utf8.startIndex
        var index = runStart
        while index != utf8.endIndex {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
                index = utf8.index(after: index)
                continue
            }
            out += Substring(text.unicodeScalars[runStart..<index])
            switch byte {
            case UInt8(ascii: "\""): out += "\\\""
            case UInt8(ascii: "\\"): out += "\\\\"
            case UInt8(ascii: "\n"): out += "\\n"
            case UInt8(ascii: "\r"): out += "\\r"
            case UInt8(ascii: "\t"): out += "\\t"
            default: out += "\\u" + hex(UInt32(byte), width: 4, uppercase: false)
            }
            index = utf8.index(after: index)
            runStart = index
        }
        out += Substring(text.unicodeScalars[runStart..<index])
        out += "\""
    }

    /// `json(_:)`, appended to UTF-8 bytes (writers that build their text as bytes, such as the
    /// store's history rows).
    public static func appendJSON(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case UInt8(ascii: "\t"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                default: out.append(contentsOf: ("\\u" + hex(UInt32(byte), width: 4, uppercase: false)).utf8)
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// A double-quoted YAML scalar: quotes, backslashes and control characters escaped. Not
    /// JSON's: YAML also forbids raw C1 controls, U+2028/2029 and a byte order mark inside
    /// quotes.
    ///
    ///     TextEscaping.yaml("key: value")   // "\"key: value\"", safe as any YAML scalar
    public static func yaml(_ text: String) -> String {
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

    /// XML element content or a quoted attribute value: `&`, `<`, `>` and `"` as entities, and
    /// line breaks and tabs as character references, which an attribute would otherwise lose to
    /// XML's attribute-value normalization.
    ///
    ///     TextEscaping.xml("a < b\n")   // "a &lt; b&#10;"
    public static func xml(_ text: String) -> String {
        replacing(text) { scalar in
            switch scalar {
            case "&": "&amp;"
            case "<": "&lt;"
            case ">": "&gt;"
            case "\"": "&quot;"
            case "\n": "&#10;"
            case "\r": "&#13;"
            case "\t": "&#9;"
            default: nil
            }
        }
    }

    /// HTML text or a quoted attribute value (either quote): `&`, `<`, `>`, `"` and `'` as
    /// references. Also what Mustache's `{{name}}` writes.
    ///
    ///     TextEscaping.html("Tom & Jerry's")   // "Tom &amp; Jerry&#39;s"
    public static func html(_ text: String) -> String {
        replacing(text) { scalar in
            switch scalar {
            case "&": "&amp;"
            case "<": "&lt;"
            case ">": "&gt;"
            case "\"": "&quot;"
            case "'": "&#39;"
            default: nil
            }
        }
    }

    /// A Graphviz dot string, quotes included: `"` and `\` escaped.
    ///
    ///     TextEscaping.dot("say \"hi\"")   // "\"say \\\"hi\\\"\""
    public static func dot(_ text: String) -> String {
        "\"" + replacing(text) { $0 == "\"" ? "\\\"" : $0 == "\\" ? "\\\\" : nil } + "\""
    }

    /// `text` with each scalar `replacement` names replaced, scalar by scalar (a quote followed
    /// by a combining mark is one `Character`, and must still be escaped).
    private static func replacing(_ text: String, _ replacement: (Unicode.Scalar) -> String?) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if let replaced = replacement(scalar) { out += replaced } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    private static func hex(_ value: UInt32, width: Int, uppercase: Bool = true) -> String {
        let digits = String(value, radix: 16, uppercase: uppercase)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
