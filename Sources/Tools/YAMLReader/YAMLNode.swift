/// A 1-based position in a YAML document, as libyaml reports it.
public struct YAMLMark: Sendable, Hashable {
    // Stored narrow: every node keeps two marks, and a schema holds hundreds of thousands of
    // nodes that the parser copies around (files are limited to 16 MiB, far below 2^32 lines).
    private var storedLine: UInt32
    private var storedColumn: UInt32

    public var line: Int {
        get { Int(storedLine) }
        set { storedLine = UInt32(clamping: newValue) }
    }

    public var column: Int {
        get { Int(storedColumn) }
        set { storedColumn = UInt32(clamping: newValue) }
    }

    public init(line: Int, column: Int) {
        storedLine = UInt32(clamping: line)
        storedColumn = UInt32(clamping: column)
    }
}

/// How a scalar was written; only plain scalars are resolved to null, booleans and numbers.
public enum YAMLScalarStyle: Sendable, Hashable {
    case plain, singleQuoted, doubleQuoted, literal, folded
}

/// One node of a YAML document with the place it came from.
public struct YAMLNode: Sendable {
    public enum Content: Sendable {
        case scalar(String, YAMLScalarStyle)
        case sequence([YAMLNode])
        case mapping([YAMLPair])
    }

    public var content: Content
    public var start: YAMLMark
    public var end: YAMLMark
    /// An explicit tag such as `!!str`, if the document gave one.
    public var tag: String?

    public init(content: Content, start: YAMLMark, end: YAMLMark, tag: String? = nil) {
        self.content = content
        self.start = start
        self.end = end
        self.tag = tag
    }

    /// The kind of node, for messages such as "expected a mapping, found a sequence".
    public var kindDescription: String {
        switch content {
        case .scalar: isNull ? "null" : "a scalar"
        case .sequence: "a sequence"
        case .mapping: "a mapping"
        }
    }

    /// How many characters the node spans on its first line, for underlining.
    public var length: Int {
        if end.line == start.line { return max(1, end.column - start.column) }
        return 1
    }
}

/// A key and its value in a mapping.
public struct YAMLPair: Sendable {
    public var key: YAMLNode
    public var value: YAMLNode

    public init(key: YAMLNode, value: YAMLNode) {
        self.key = key
        self.value = value
    }
}

// MARK: - Scalar resolution (YAML 1.2 core schema)

extension YAMLNode {
    /// The scalar's text, or nil for sequences and mappings.
    public var scalarText: String? {
        if case .scalar(let text, _) = content { return text }
        return nil
    }

    /// The text of a scalar that is not null; quoted scalars count as strings whatever they hold.
    public var stringValue: String? {
        guard case .scalar(let text, _) = content, !isNull else { return nil }
        return text
    }

    private var plainText: String? {
        guard case .scalar(let text, .plain) = content, tag == nil else { return nil }
        return text
    }

    /// `~`, `null` or an empty plain scalar.
    public var isNull: Bool {
        guard let text = plainText else { return tag == "tag:yaml.org,2002:null" }
        return text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL"
    }

    /// `true` or `false` (any YAML 1.2 capitalisation); `yes`/`no` are strings, as in YAML 1.2.
    public var boolValue: Bool? {
        switch plainText {
        case "true", "True", "TRUE": true
        case "false", "False", "FALSE": false
        default: nil
        }
    }

    /// A decimal, `0x` hexadecimal or `0o` octal integer that fits in 64 bits.
    public var integerValue: Int64? {
        guard var text = plainText, !text.isEmpty else { return nil }
        var negative = false
        if text.hasPrefix("-") || text.hasPrefix("+") {
            negative = text.hasPrefix("-")
            text.removeFirst()
        }
        var radix = 10
        if text.hasPrefix("0x") {
            radix = 16
            text.removeFirst(2)
        } else if text.hasPrefix("0o") {
            radix = 8
            text.removeFirst(2)
        }
        guard !text.isEmpty, let magnitude = UInt64(text, radix: radix) else { return nil }
        if negative {
            if magnitude == UInt64(Int64.max) + 1 { return Int64.min }
            return magnitude <= UInt64(Int64.max) ? -Int64(magnitude) : nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// Whether the plain scalar reads as an integer of any size (to tell "too large" from "not a number").
    public var looksLikeInteger: Bool {
        guard let text = plainText, !text.isEmpty else { return false }
        let digits = text.drop { $0 == "-" || $0 == "+" }
        return !digits.isEmpty && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber)
    }

    /// A floating-point number, including integers and `.inf`/`.nan`.
    public var doubleValue: Double? {
        guard let text = plainText, !text.isEmpty else { return nil }
        switch text {
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .infinity
        case "-.inf", "-.Inf", "-.INF": return -.infinity
        case ".nan", ".NaN", ".NAN": return .nan
        default: break
        }
        if let integer = integerValue { return Double(integer) }
        // Double(String) accepts "inf" and "nan" spelled C's way; YAML does not.
        guard text.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }) else { return nil }
        return Double(text)
    }

    /// The pairs of a mapping, or nil.
    public var pairs: [YAMLPair]? {
        if case .mapping(let pairs) = content { return pairs }
        return nil
    }

    /// The items of a sequence, or nil.
    public var items: [YAMLNode]? {
        if case .sequence(let items) = content { return items }
        return nil
    }
}
