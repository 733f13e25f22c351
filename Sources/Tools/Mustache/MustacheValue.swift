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
    /// An object whose keys live in a shape shared with many like it (see `MustacheShape`).
    case record(MustacheRecord)
    /// An object whose fields are worked out when a template first reads them.
    case lazy(MustacheLazyObject)
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
        case .array, .object, .record, .lazy: ""
        case .listItem(let item, _, _): item.interpolated
        }
    }

    /// A key of an object, or nil.
    public subscript(key: String) -> MustacheValue? {
        switch self {
        case .object(let fields): return fields[key]
        case .record(let record): return record.shape.position(of: key).map { record.values[$0] }
        case .lazy(let object): return object[key]
        case .listItem(let item, let isFirst, let isLast):
            if key == "first" { return .bool(isFirst) }
            if key == "last" { return .bool(isLast) }
            // After each item of a list written one item per line, as swift-format writes
            // such a list: a comma after every item, none after the only one.
            if key == "comma" { return .string(isFirst && isLast ? "" : ",") }
            return item[key]
        default: return nil
        }
    }
}

/// The keys of many objects alike (every attribute's context, say), hashed once: each object
/// then holds only its values, and building one costs an array instead of a dictionary. The
/// shape learns its keys from the first object built with it.
public final class MustacheShape: @unchecked Sendable {
    // Written once, under the lock, by the first `object`; read-only afterwards.
    private var keys: [String] = []
    private var positions: [String: Int] = [:]
    private var isSet = false
    private let lock = ShapeLock()

    public init() {}

    /// An object of `fields`. Fields that differ from the shape's keys, in names or order,
    /// make a plain object instead: always correct, only slower.
    public func object(_ fields: KeyValuePairs<String, MustacheValue>) -> MustacheValue {
        lock.withLock {
            if !isSet {
                keys = fields.map(\.key)
                positions = Dictionary(keys.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
                isSet = true
            }
        }
        // Literal keys compare in a few instructions each: small strings by their bits,
        // others by their shared storage.
        guard fields.count == keys.count, positions.count == keys.count,
            zip(fields, keys).allSatisfy({ $0.key == $1 })
        else {
            return .object(Dictionary(fields.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last }))
        }
        return .record(MustacheRecord(shape: self, values: fields.map(\.value)))
    }

    func position(of key: String) -> Int? { positions[key] }
    var fieldNames: [String] { keys }
}

/// An object laid out by a `MustacheShape`.
public struct MustacheRecord: Sendable, Hashable {
    let shape: MustacheShape
    let values: [MustacheValue]

    /// The fields by name, as a plain object would hold them.
    public var fields: [String: MustacheValue] {
        Dictionary(zip(shape.fieldNames, values).map { ($0, $1) }, uniquingKeysWith: { first, _ in first })
    }

    public static func == (lhs: MustacheRecord, rhs: MustacheRecord) -> Bool { lhs.fields == rhs.fields }
    public func hash(into hasher: inout Hasher) { hasher.combine(fields) }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain mutex (the standard library's `Mutex` needs newer Apple systems than this package).
private final class ShapeLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }
}

/// The field names of a kind of lazy object, in the order its source numbers them.
public final class MustacheFieldNames: Sendable {
    public let names: [String]
    let positions: [String: Int]

    public init(_ names: [String]) {
        self.names = names
        positions = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }
}

/// Works out one field of a lazy object; `object` gives the other fields, already worked out
/// ones from memory.
public protocol MustacheFieldSource: Sendable {
    func value(ofField index: Int, in object: MustacheLazyObject) -> MustacheValue
}

/// An object whose fields are computed on first read and kept: templates read a handful of
/// the many fields a context offers, so the rest is never built. Safe to read from several
/// threads (entity contexts are shared by the files rendered in parallel).
public final class MustacheLazyObject: @unchecked Sendable {
    public let fieldNames: MustacheFieldNames
    private let source: any MustacheFieldSource
    private var computed: [MustacheValue?]
    private let lock = ShapeLock()

    public init(fieldNames: MustacheFieldNames, source: any MustacheFieldSource) {
        self.fieldNames = fieldNames
        self.source = source
        computed = Array(repeating: nil, count: fieldNames.names.count)
    }

    public subscript(key: String) -> MustacheValue? {
        fieldNames.positions[key].map { value(ofField: $0) }
    }

    /// The field numbered `index`. Computed outside the lock, so a field may read others; two
    /// threads may both compute a field, and the values are equal.
    public func value(ofField index: Int) -> MustacheValue {
        if let known = lock.withLock({ computed[index] }) { return known }
        let value = source.value(ofField: index, in: self)
        lock.withLock { computed[index] = value }
        return value
    }

    /// Every field, computed: for comparing and hashing.
    public var fields: [String: MustacheValue] {
        Dictionary(fieldNames.names.indices.map { (fieldNames.names[$0], value(ofField: $0)) }, uniquingKeysWith: { first, _ in first })
    }
}

extension MustacheLazyObject: Hashable {
    public static func == (lhs: MustacheLazyObject, rhs: MustacheLazyObject) -> Bool { lhs === rhs || lhs.fields == rhs.fields }
    public func hash(into hasher: inout Hasher) { hasher.combine(fields) }
}
