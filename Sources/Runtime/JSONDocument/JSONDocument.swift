import TextEscaping

/// A JSON text read into values that remember where they stood, so a loader can name the line
/// of a bad record and the line and column where a broken file stops being JSON. Foundation's
/// parsers give neither.
public indirect enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// The number as written, so it is passed on exactly.
    case number(String)
    /// A string, with its escapes decoded.
    case string(String)
    /// Elements in file order.
    case array([JSONNode])
    /// Members in file order.
    case object([(key: String, value: JSONNode)])

    /// Structural equality; nested nodes compare their positions too, and object members must match in order.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }
}

/// A value and the position of its first character (1-based).
public struct JSONNode: Sendable, Equatable {
    /// The value found at this position.
    public var value: JSONValue
    /// The 1-based line of the value's first character.
    public var line: Int
    /// The 1-based column of the value's first character, counted in characters.
    public var column: Int

    /// Creates a node; the position defaults to the start of the text.
    ///
    ///     let node = JSONNode(value: .string("Flight"), line: 3, column: 12)
    public init(value: JSONValue, line: Int = 1, column: Int = 1) {
        self.value = value
        self.line = line
        self.column = column
    }

    /// An object member (the last one, when a key repeats), or nil.
    public subscript(key: String) -> JSONNode? {
        guard case .object(let members) = value else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// The text of a string value, or nil for any other kind.
    public var string: String? {
        if case .string(let text) = value { return text }
        return nil
    }

    /// Whether the value is `null`.
    public var isNull: Bool { value == .null }

    /// The value as JSON text, as compact as it can be written.
    public var jsonText: String {
        var out = ""
        write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): TextEscaping.appendJSON(text, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                TextEscaping.appendJSON(member.key, to: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
    }
}

/// Where and why a text is not JSON.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line where the text stops being JSON.
    public var line: Int
    /// The 1-based column where the text stops being JSON, counted in characters.
    public var column: Int
    /// What was expected, or what was found instead.
    public var message: String
    /// `line:column: message`.
    public var description: String { "\(line):\(column): \(message)" }
}

/// RFC 8259 JSON, read byte by byte with line and column kept.
public struct JSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var lineStart = 0
    private var depth = 0
    /// Deeper nesting is refused rather than risk the stack on hostile input.
    static let maximumDepth = 512

    /// Reads one JSON value from the whole text; a leading byte order mark is skipped, and anything but whitespace after the value is an error.
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONNode {
        var parser = JSONParser(bytes: bytes)
        // A byte order mark is allowed before the text.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            parser.index = 3
            parser.lineStart = 3
        }
        parser.skipWhitespace()
        guard parser.index < bytes.count else { throw parser.error("the file is empty; expected a JSON value") }
        let root = try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected \(parser.describeCurrent()) after the JSON value") }
        return root
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// The column of the last position asked for, and that position: columns are counted on
    /// from there, since positions only move forward. Counting from the line's start each time
    /// made a long single-line document (the history's changes) quadratic.
    private var counted = (line: 1, index: 0, column: 1)

    private var column: Int {
        mutating get {
            let end = min(index, bytes.count)
            if counted.line != line || counted.index < lineStart || counted.index > end { counted = (line, lineStart, 1) }
            // Columns count characters, not bytes.
            var column = counted.column
            for byte in bytes[counted.index..<end] where byte & 0xC0 != 0x80 { column += 1 }
            counted = (line, end, column)
            return column
        }
    }

    private mutating func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(line: line, column: column, message: message)
    }

    private func describeCurrent() -> String {
        guard index < bytes.count else { return "end of file" }
        let byte = bytes[index]
        if byte >= 0x20, byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0D: index += 1
            case 0x0A:
                index += 1
                line += 1
                lineStart = index
            default: return
            }
        }
    }

    private mutating func value() throws(JSONSyntaxError) -> JSONNode {
        let (startLine, startColumn) = (line, column)
        func node(_ value: JSONValue) -> JSONNode { JSONNode(value: value, line: startLine, column: startColumn) }
        guard index < bytes.count else { throw error("unexpected end of file; expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return node(try object())
        case UInt8(ascii: "["): return node(try array())
        case UInt8(ascii: "\""): return node(.string(try string()))
        case UInt8(ascii: "t"):
            try literal("true")
            return node(.bool(true))
        case UInt8(ascii: "f"):
            try literal("false")
            return node(.bool(false))
        case UInt8(ascii: "n"):
            try literal("null")
            return node(.null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return node(.number(try number()))
        default: throw error("unexpected \(describeCurrent()); expected a value")
        }
    }

    private mutating func literal(_ word: String) throws(JSONSyntaxError) {
        let expected = Array(word.utf8)
        guard bytes.count - index >= expected.count, Array(bytes[index..<(index + expected.count)]) == expected else {
            throw error("unexpected \(describeCurrent()); expected a value")
        }
        index += expected.count
    }

    private mutating func number() throws(JSONSyntaxError) -> String {
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - from
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let leadingZero = index < bytes.count && bytes[index] == UInt8(ascii: "0")
        let integerDigits = digits()
        guard integerDigits > 0 else { throw error("a number needs digits after '-'") }
        if leadingZero, integerDigits > 1 { throw error("numbers may not start with 0") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("a number needs digits after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw error("a number needs digits in its exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        index += 1
        let start = index
        var escaped = false
        var scalars = String.UnicodeScalarView()
        var runStart = index
        func flushRun() {
            if runStart < index { scalars.append(contentsOf: String(decoding: bytes[runStart..<index], as: UTF8.self).unicodeScalars) }
        }
        while true {
            guard index < bytes.count else { throw error("unterminated string: add a closing '\"'") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                // Most strings have no escape: their bytes (checked UTF-8) are the string.
                guard escaped else {
                    index += 1
                    return String(decoding: bytes[start..<index - 1], as: UTF8.self)
                }
                flushRun()
                index += 1
                return String(scalars)
            }
            if byte < 0x20 {
                throw error(byte == 0x0A ? "a line break inside a string: write it as \\n" : "control character 0x\(String(byte, radix: 16)) inside a string")
            }
            if byte >= 0x80 {
                guard let length = Self.validUTF8Length(bytes, at: index) else { throw error("invalid UTF-8 (byte 0x\(String(byte, radix: 16, uppercase: true)))") }
                index += length
                continue
            }
            guard byte == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            escaped = true
            flushRun()
            index += 1
            guard index < bytes.count else { throw error("unterminated string: add a closing '\"'") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800...0xDBFF).contains(code) {
                    guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw error("a \\u escape of a high surrogate must be followed by its low surrogate")
                    }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("\\u\(String(low, radix: 16)) is not a low surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("\\u escape \(String(code, radix: 16)) is not a character") }
                scalars.append(scalar)
            default:
                index -= 1
                throw error("unknown escape \\\(describeCurrent())")
            }
            runStart = index
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("a \\u escape needs four hexadecimal digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - 48
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - 87
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - 55
            default: throw error("a \\u escape needs four hexadecimal digits")
            }
            value = value * 16 + UInt32(digit)
            index += 1
        }
        return value
    }

    /// The length of the well-formed UTF-8 sequence at `index`, or nil.
    static func validUTF8Length(_ bytes: [UInt8], at index: Int) -> Int? {
        let lead = bytes[index]
        let (length, minimum): (Int, UInt32) =
            switch lead {
            case 0xC2...0xDF: (2, 0x80)
            case 0xE0...0xEF: (3, 0x800)
            case 0xF0...0xF4: (4, 0x10000)
            default: (0, 0)
            }
        guard length > 0, index + length <= bytes.count else { return nil }
        var value = UInt32(lead) & (0xFF >> (length + 1))
        for offset in 1..<length {
            let byte = bytes[index + offset]
            guard byte & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        guard value >= minimum, value <= 0x10FFFF, !(0xD800...0xDFFF).contains(value) else { return nil }
        return length
    }

    private mutating func array() throws(JSONSyntaxError) -> JSONValue {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
        index += 1
        var items: [JSONNode] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try value())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of file; expected ',' or ']'") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw error("unexpected \(describeCurrent()); expected ',' or ']'") }
            index += 1
            return .array(items)
        }
    }

    private mutating func object() throws(JSONSyntaxError) -> JSONValue {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
        index += 1
        var members: [(key: String, value: JSONNode)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("unexpected \(describeCurrent()); expected a member name in double quotes")
            }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("unexpected \(describeCurrent()); expected ':' after the member name") }
            index += 1
            skipWhitespace()
            members.append((key, try value()))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of file; expected ',' or '}'") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw error("unexpected \(describeCurrent()); expected ',' or '}'") }
            index += 1
            return .object(members)
        }
    }
}
