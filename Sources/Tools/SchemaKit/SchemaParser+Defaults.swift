import Diagnostics
import YAMLReader

/// Checks `default:` literals against their type; a default that does not fit is an error.
extension SchemaParser {
    mutating func checkDefault(_ node: YAMLNode, type: AttributeType, isOptional: Bool, what: some CustomStringConvertible) -> DefaultValue? {
        if node.isNull {
            guard isOptional else {
                error(.invalidDefault, "\(what) is not optional, so its default cannot be null", at: node)
                return nil
            }
            return .null
        }
        return checkValue(node, type: type, what: what)
    }

    private mutating func checkValue(_ node: YAMLNode, type: AttributeType, what: some CustomStringConvertible) -> DefaultValue? {
        switch type {
        case .unresolved: nil
        case .array(let element): checkArray(node, element: element, what: what)
        case .enumeration(let name): checkEnumCase(node, enumName: name, what: what)
        case .value(let name): checkValueFields(node, valueName: name, what: what)
        case .scalar(let scalar): checkScalar(node, scalar, what: what)
        }
    }

    /// Reports that a default is not the kind of value its type needs; always nil.
    private mutating func mismatch(_ node: YAMLNode, expected: String, what: some CustomStringConvertible) -> DefaultValue? {
        let found = node.scalarText.map { "'\($0)'" } ?? node.kindDescription
        error(.invalidDefault, "the default of \(what) must be \(expected), found \(found)", at: node)
        return nil
    }

    private mutating func checkArray(_ node: YAMLNode, element: AttributeType, what: some CustomStringConvertible) -> DefaultValue? {
        guard let items = node.items else { return mismatch(node, expected: "a list (e.g. [])", what: what) }
        var result: [DefaultValue] = []
        for item in items {
            guard !item.isNull else {
                error(.invalidDefault, "array elements in the default of \(what) cannot be null", at: item)
                return nil
            }
            guard let value = checkValue(item, type: element, what: what) else { return nil }
            result.append(value)
        }
        return .array(result)
    }

    private mutating func checkEnumCase(_ node: YAMLNode, enumName name: String, what: some CustomStringConvertible) -> DefaultValue? {
        guard let index = enumIndexByName[name] else { return nil }
        let enumType = enums[index].model
        let caseNames = enumType.cases.map(\.name)
        guard let text = node.stringValue, node.items == nil else { return mismatch(node, expected: "a case of \(name)", what: what) }
        if caseNames.contains(text) { return .enumCase(text) }
        let byRaw = enumType.cases.first { c in
            switch c.rawValue {
            case .string(let raw): raw == text
            case .int(let raw): String(raw) == text
            }
        }
        let hint =
            byRaw.map { "; write the case name '\($0.name)', not its raw value" }
            ?? Suggestion.hint(for: text, in: caseNames)
        error(.invalidDefault, "'\(text)' is not a case of \(name) (the default of \(what))\(hint)", at: node)
        return nil
    }

    private mutating func checkValueFields(_ node: YAMLNode, valueName name: String, what: some CustomStringConvertible) -> DefaultValue? {
        guard let index = valueIndexByName[name] else { return nil }
        let valueType = values[index].model
        guard let pairs = node.pairs else { return mismatch(node, expected: "a mapping of \(name)'s fields", what: what) }
        var given: [String: YAMLNode] = [:]
        for pair in pairs {
            let key = pair.key.scalarText ?? ""
            guard valueType.fields.contains(where: { $0.name == key }) else {
                error(.invalidDefault, "\(name) has no field '\(key)' (the default of \(what))\(Suggestion.hint(for: key, in: valueType.fields.map(\.name)))", at: pair.key)
                return nil
            }
            given[key] = pair.value
        }
        var fields: [DefaultValue.Field] = []
        for field in valueType.fields {
            if let fieldNode = given[field.name] {
                guard let value = checkDefault(fieldNode, type: field.type, isOptional: field.isOptional, what: "field '\(field.name)' in the default of \(what)") else { return nil }
                fields.append(.init(name: field.name, value: value))
            } else if let fallback = field.defaultValue {
                fields.append(.init(name: field.name, value: fallback))
            } else if field.isOptional {
                fields.append(.init(name: field.name, value: .null))
            } else {
                error(.invalidDefault, "the default of \(what) lacks \(name)'s required field '\(field.name)'", at: node)
                return nil
            }
        }
        return .value(fields)
    }

    private mutating func checkScalar(_ node: YAMLNode, _ scalar: ScalarType, what: some CustomStringConvertible) -> DefaultValue? {
        guard node.items == nil, node.pairs == nil, let text = node.stringValue else {
            return mismatch(node, expected: "a single \(scalar.rawValue)", what: what)
        }
        switch scalar {
        case .string:
            return .string(text)
        case .int, .int8, .int16, .int32, .int64:
            return checkInteger(node, text: text, scalar, what: what)
        case .double, .float:
            guard let value = node.doubleValue else { return mismatch(node, expected: "a number", what: what) }
            return .double(value)
        case .bool:
            guard let value = node.boolValue else {
                let hint = ["yes", "no", "on", "off"].contains(text.lowercased()) ? " (YAML 1.2 reads yes/no as text; write true or false)" : ""
                error(.invalidDefault, "the default of \(what) must be true or false, found '\(text)'\(hint)", at: node)
                return nil
            }
            return .bool(value)
        case .decimal:
            guard node.scalarText.map(Self.isDecimalLiteral) == true else { return mismatch(node, expected: "a decimal number such as 9.99", what: what) }
            return .decimal(text)
        case .date:
            if text == "now", isPlain(node) { return .now }
            guard Self.isISO8601(text) else {
                return mismatch(node, expected: "'now' or an ISO 8601 date such as 2024-01-31 or 2024-01-31T08:00:00Z", what: what)
            }
            return .date(text)
        case .uuid:
            if text == "uuid", isPlain(node) { return .generatedUUID }
            guard Self.isUUID(text) else { return mismatch(node, expected: "'uuid' (a new one per row) or a UUID such as 0b9e2b9c-3c1e-4a57-9d49-1b7f0e8d9a10", what: what) }
            return .uuid(text)
        case .url:
            guard Self.isAbsoluteURL(text) else { return mismatch(node, expected: "an absolute URL such as https://example.com", what: what) }
            return .url(text)
        case .data:
            guard Self.isBase64(text) else { return mismatch(node, expected: "base64 text", what: what) }
            return .data(text)
        }
    }

    private mutating func checkInteger(_ node: YAMLNode, text: String, _ scalar: ScalarType, what: some CustomStringConvertible) -> DefaultValue? {
        let range = scalar.integerRange ?? Int64.min...Int64.max
        if let value = node.integerValue {
            guard range.contains(value) else {
                error(.invalidDefault, "the default \(value) of \(what) is out of range for \(scalar.rawValue) (\(range.lowerBound)...\(range.upperBound))", at: node)
                return nil
            }
            return .integer(value)
        }
        if node.looksLikeInteger {
            error(.invalidDefault, "the default '\(text)' of \(what) is out of range for \(scalar.rawValue) (\(range.lowerBound)...\(range.upperBound))", at: node)
            return nil
        }
        return mismatch(node, expected: "a whole number", what: what)
    }

    private func isPlain(_ node: YAMLNode) -> Bool {
        if case .scalar(_, .plain) = node.content { return true }
        return false
    }

    // MARK: - Literal formats

    static func isDecimalLiteral(_ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        let digit: (UInt8) -> Bool = { $0 >= 48 && $0 <= 57 }
        let integer = bytes.prefix(while: digit)
        guard !integer.isEmpty else { return false }
        bytes = bytes.dropFirst(integer.count)
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            let fraction = bytes.prefix(while: digit)
            guard !fraction.isEmpty else { return false }
            bytes = bytes.dropFirst(fraction.count)
        }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
            let exponent = bytes.prefix(while: digit)
            guard !exponent.isEmpty else { return false }
            bytes = bytes.dropFirst(exponent.count)
        }
        return bytes.isEmpty
    }

    /// `YYYY-MM-DD`, optionally followed by `THH:MM[:SS[.fraction]]` and `Z` or `±HH:MM`.
    static func isISO8601(_ text: String) -> Bool {
        let b = Array(text.utf8)
        func digits(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= b.count else { return nil }
            var value = 0
            for i in range {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                value = value * 10 + Int(b[i] - 48)
            }
            return value
        }
        guard b.count >= 10, let year = digits(0..<4), b[4] == UInt8(ascii: "-"), let month = digits(5..<7),
            b[7] == UInt8(ascii: "-"), let day = digits(8..<10), (1...12).contains(month)
        else { return false }
        let isLeapYear = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let daysInMonth = [31, isLeapYear ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...daysInMonth).contains(day) else { return false }
        if b.count == 10 { return true }
        guard b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: " "), let hour = digits(11..<13), b.count > 13,
            b[13] == UInt8(ascii: ":"), let minute = digits(14..<16), hour < 24, minute < 60
        else { return false }
        var i = 16
        if i < b.count, b[i] == UInt8(ascii: ":") {
            guard let second = digits(i + 1..<i + 3), second <= 60 else { return false }
            i += 3
            if i < b.count, b[i] == UInt8(ascii: ".") {
                i += 1
                let start = i
                while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
                guard i > start else { return false }
            }
        }
        if i == b.count { return true }
        if b[i] == UInt8(ascii: "Z") { return i + 1 == b.count }
        guard b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), let offsetHours = digits(i + 1..<i + 3), offsetHours < 24 else { return false }
        if i + 3 == b.count { return true }
        guard b[i + 3] == UInt8(ascii: ":"), let offsetMinutes = digits(i + 4..<i + 6), offsetMinutes < 60 else { return false }
        return i + 6 == b.count
    }

    static func isUUID(_ text: String) -> Bool {
        let b = Array(text.utf8)
        guard b.count == 36 else { return false }
        for (i, byte) in b.enumerated() {
            if [8, 13, 18, 23].contains(i) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                let isHex = (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 70) || (byte >= 97 && byte <= 102)
                guard isHex else { return false }
            }
        }
        return true
    }

    /// A scheme (`letter *(letter / digit / + - .)`), a colon and text without spaces.
    static func isAbsoluteURL(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return false }
        let scheme = text[..<colon]
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
        guard scheme.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)) }) else { return false }
        let rest = text[text.index(after: colon)...]
        return !rest.isEmpty && !rest.contains(" ") && !rest.contains("\n")
    }

    static func isBase64(_ text: String) -> Bool {
        let b = Array(text.utf8)
        guard b.count % 4 == 0 else { return false }
        var padding = 0
        for (i, byte) in b.enumerated() {
            if byte == UInt8(ascii: "=") {
                padding += 1
                guard i >= b.count - 2 else { return false }
                continue
            }
            guard padding == 0 else { return false }
            let ok =
                (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || (byte >= 48 && byte <= 57)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
            guard ok else { return false }
        }
        return true
    }
}
