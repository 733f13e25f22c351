/// The data a template renders: JSON's shapes, with an explicit type instead of reflection.
public indirect enum MustacheValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral
{
    case null
    case bool(Bool)
    case string(String)
    case number(Double)
    case array([MustacheValue])
    case object([String: MustacheValue])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: MustacheValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, MustacheValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(nilLiteral: ()) { self = .null }

    /// `false`, null and empty lists are falsey; everything else (even "" and 0) is truthy.
    public var isFalsey: Bool {
        switch self {
        case .null, .bool(false): true
        case .array(let items): items.isEmpty
        default: false
        }
    }

    /// The text an interpolation tag writes.
    public var interpolated: String {
        switch self {
        case .null: ""
        case .bool(let value): value ? "true" : "false"
        case .string(let text): text
        case .number(let number):
            if number.rounded() == number, abs(number) < 1e15 { String(Int64(number)) } else { String(number) }
        case .array, .object: ""
        }
    }

    /// A key of an object, or nil.
    public subscript(key: String) -> MustacheValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }
}
