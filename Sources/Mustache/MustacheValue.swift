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
    /// An item of a list with its `first` and `last` flags laid over it, without copying it:
    /// the same object often appears in several lists.
    case listItem(MustacheValue, isFirst: Bool, isLast: Bool)

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
        case .listItem(let item, _, _): item.isFalsey
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
        case .listItem(let item, _, _): item.interpolated
        }
    }

    /// A key of an object, or nil.
    public subscript(key: String) -> MustacheValue? {
        switch self {
        case .object(let fields): return fields[key]
        case .listItem(let item, let isFirst, let isLast):
            if key == "first" { return .bool(isFirst) }
            if key == "last" { return .bool(isLast) }
            return item[key]
        default: return nil
        }
    }
}
