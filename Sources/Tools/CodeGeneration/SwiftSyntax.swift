import Foundation
import SchemaKit

/// How schema names and values are spelled in Swift source.
enum SwiftSyntax {
    /// Words that must be quoted with backticks to be used as names.
    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
        "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows",
        "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default",
        "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch",
        "where", "while", "Any", "as", "await", "false", "is", "nil", "self", "Self", "super", "throws", "true",
        "try", "Type", "Protocol", "_",
    ]

    /// The name as an identifier, quoted when it is a keyword: `default` -> `` `default` ``.
    static func identifier(_ name: String) -> String {
        keywords.contains(name) ? "`\(name)`" : name
    }

    /// A string literal with everything escaped that Swift requires; the standard library's
    /// debug description is exactly that.
    static func stringLiteral(_ text: String) -> String {
        // Printable ASCII with the usual escapes is written byte by byte (migration scripts run
        // to megabytes); anything else goes through the standard library's escaping.
        var text = text
        return text.withUTF8 { bytes -> String in
            var escapes = 0
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "'"), UInt8(ascii: "\n"), UInt8(ascii: "\t"), UInt8(ascii: "\r"): escapes += 1
                case 0x20...0x7E: break
                default: return String(decoding: bytes, as: UTF8.self).debugDescription
                }
            }
            return String(unsafeUninitializedCapacity: bytes.count + escapes + 2) { out in
                var position = 0
                func put(_ byte: UInt8) {
                    out[position] = byte
                    position += 1
                }
                put(UInt8(ascii: "\""))
                for byte in bytes {
                    switch byte {
                    // As the standard library writes them, single quotes included.
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "'"):
                        put(UInt8(ascii: "\\"))
                        put(byte)
                    case UInt8(ascii: "\n"):
                        put(UInt8(ascii: "\\"))
                        put(UInt8(ascii: "n"))
                    case UInt8(ascii: "\t"):
                        put(UInt8(ascii: "\\"))
                        put(UInt8(ascii: "t"))
                    case UInt8(ascii: "\r"):
                        put(UInt8(ascii: "\\"))
                        put(UInt8(ascii: "r"))
                    default: put(byte)
                    }
                }
                put(UInt8(ascii: "\""))
                return position
            }
        }
    }

    /// The Swift type of an attribute type (without optionality).
    static func typeName(_ type: AttributeType) -> String {
        switch type {
        case .scalar(let scalar): scalar.rawValue
        case .enumeration(let name), .value(let name), .unresolved(let name): identifier(name)
        case .array(let element): "[\(typeName(element))]"
        }
    }

    /// The Swift type of an attribute, with `?` when it is optional: `String?`, `[Tag]`.
    static func typeName(of attribute: Attribute) -> String {
        typeName(attribute.type) + (attribute.isOptional ? "?" : "")
    }

    /// Documentation as `///` comment lines (empty when there is none).
    static func docLines(_ doc: String?) -> [String] {
        guard let doc, !doc.isEmpty else { return [] }
        return doc.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            let trimmed = String(line).trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty ? "///" : "/// \(trimmed)"
        }
    }

    // MARK: - Defaults as Swift expressions

    /// A Swift expression for a checked default; `schema` resolves enum and value types.
    static func expression(for value: DefaultValue, type: AttributeType, schema: Schema) -> String {
        switch value {
        case .null: return "nil"
        case .string(let text): return stringLiteral(text)
        case .integer(let number): return String(number)
        case .double(let number):
            if number.isNaN { return ".nan" }
            if number.isInfinite { return number < 0 ? "-.infinity" : ".infinity" }
            var text = String(number)
            if text.hasSuffix(".0") { text.removeLast(2) }
            return text
        case .bool(let flag): return flag ? "true" : "false"
        case .decimal(let text): return decimalExpression(text)
        case .date(let text): return dateExpression(text)
        case .now: return "Date()"
        case .uuid(let text): return uuidExpression(text)
        case .generatedUUID: return "UUID()"
        case .url(let text):
            // Validated as an absolute URL by the schema loader.
            return "URL(string: \(stringLiteral(text)))!"
        case .data(let base64):
            let bytes = Data(base64Encoded: base64).map { Array($0) } ?? []
            return "Data([\(bytes.map { "0x" + String(format: "%02x", $0) }.joined(separator: ", "))])"
        case .enumCase(let name): return "." + identifier(name)
        case .array(let items):
            let element: AttributeType = if case .array(let inner) = type { inner } else { type }
            return "[" + items.map { expression(for: $0, type: element, schema: schema) }.joined(separator: ", ") + "]"
        case .value(let fields):
            guard case .value(let name) = type, let valueType = schema.valueType(named: name) else { return "nil" }
            let arguments = zip(fields, valueType.fields).map { field, declared in
                "\(field.name): \(expression(for: field.value, type: declared.type, schema: schema))"
            }
            return "\(identifier(name))(\(arguments.joined(separator: ", ")))"
        }
    }

    /// `9.99` -> `Decimal(sign: .plus, exponent: -2, significand: 999)`: exact, no parsing at run time.
    static func decimalExpression(_ text: String) -> String {
        var digits = text
        var sign = ".plus"
        if digits.hasPrefix("-") {
            sign = ".minus"
            digits.removeFirst()
        } else if digits.hasPrefix("+") {
            digits.removeFirst()
        }
        var exponent = 0
        if let e = digits.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(digits[digits.index(after: e)...]) ?? 0
            digits = String(digits[..<e])
        }
        if let dot = digits.firstIndex(of: ".") {
            exponent -= digits.distance(from: dot, to: digits.endIndex) - 1
            digits.remove(at: dot)
        }
        let significand = digits.drop { $0 == "0" }
        return "Decimal(sign: \(sign), exponent: \(exponent), significand: \(significand.isEmpty ? "0" : String(significand)))"
    }

    /// An ISO 8601 date as seconds since 1970, computed now so the generated code does no parsing.
    /// A date and time without a zone is read as UTC, as a date alone is.
    static func dateExpression(_ text: String) -> String {
        let seconds = ISO8601Date.parse(text)?.timeIntervalSince1970 ?? 0
        let literal = seconds.rounded() == seconds ? String(Int64(seconds)) : String(seconds)
        return "Date(timeIntervalSince1970: \(literal)) /* \(text) */"
    }

    /// A UUID literal as its 16 bytes.
    static func uuidExpression(_ text: String) -> String {
        let hex = text.replacingOccurrences(of: "-", with: "")
        var bytes: [String] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append("0x" + hex[index..<next].lowercased())
            index = next
        }
        return "UUID(uuid: (\(bytes.joined(separator: ", "))))"
    }
}
