import Foundation
import SchemaMetadata

/// Reads the JSON a first sync is made of (pages of records, and each record's kept state)
/// straight from its bytes, with no tree of values between: building and freeing that tree
/// was a sixth of a first sync. It takes only the plain spelling `SyncJSONWriter` writes (any
/// member order and whitespace, no `\u` escape, no member it does not know, no name twice) and
/// gives nil for anything else, which `SyncJSONReader` then reads as before.
struct SyncJSONScanner {
    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// A record's state, the whole of `bytes`.
    static func record(_ bytes: [UInt8]) -> SyncRecord? {
        var scanner = SyncJSONScanner(bytes)
        guard let record = scanner.record(), scanner.atEnd() else { return nil }
        return record
    }

    /// A page of a pull in its envelope, the whole of `bytes`.
    static func pullAnswer(_ bytes: [UInt8]) -> SyncPullAnswer? {
        var scanner = SyncJSONScanner(bytes)
        var answer: SyncPullAnswer?
        var version: Int?
        let read = scanner.members { scanner, name in
            switch name {
            case "protocol":
                version = scanner.integer(Int.self)
                return version != nil
            case "message":
                answer = scanner.pullAnswerMessage()
                return answer != nil
            default: return false
            }
        }
        guard read, scanner.atEnd(), version == SyncJSON.protocolVersion else { return nil }
        return answer
    }

    // MARK: - The messages' shapes

    private mutating func pullAnswerMessage() -> SyncPullAnswer? {
        var records: [SyncRecordState]?, next: String?, hasMore: Bool?, clock: SyncClock?
        let read = members { scanner, name in
            switch name {
            case "records":
                records = scanner.list { scanner in scanner.recordState() }
                return records != nil
            case "next":
                next = scanner.string()
                return next != nil
            case "hasMore":
                hasMore = scanner.bool()
                return hasMore != nil
            case "clock":
                clock = scanner.clock()
                return clock != nil
            default: return false
            }
        }
        guard read, let records, let next, let hasMore, let clock else { return nil }
        return SyncPullAnswer(records: records, next: next, hasMore: hasMore, clock: clock)
    }

    private mutating func recordState() -> SyncRecordState? {
        var entity: String?, key: String?, record: SyncRecord?, removed = false
        let read = members { scanner, name in
            switch name {
            case "entity":
                entity = scanner.named()
                return entity != nil
            case "key":
                key = scanner.named()
                return key != nil
            case "record":
                record = scanner.record()
                return record != nil
            case "removed":
                guard let flag = scanner.bool() else { return false }
                removed = flag
                return true
            default: return false
            }
        }
        guard read, let entity, let key, let record else { return nil }
        return SyncRecordState(entity: entity, key: key, record: record, removed: removed)
    }

    private mutating func record() -> SyncRecord? {
        var values: [String: StoredValue] = [:], clocks: [String: SyncClock] = [:]
        var totals: [String: [String: CounterTotal]] = [:], deleted: SyncClock?
        var complete = true
        let read = members { scanner, name in
            switch name {
            case "values": complete = scanner.map(into: &values) { scanner in scanner.value() }
            case "clocks": complete = scanner.map(into: &clocks) { scanner in scanner.clock() }
            case "counters":
                complete = scanner.map(into: &totals) { scanner in
                    var byNode: [String: CounterTotal] = [:]
                    return scanner.map(into: &byNode) { scanner in scanner.counterTotal() } ? byNode : nil
                }
            case "deleted":
                if scanner.null() { return true }
                deleted = scanner.clock()
                complete = deleted != nil
            default: return false
            }
            return complete
        }
        guard read else { return nil }
        return SyncRecord(values: values, clocks: clocks, counterTotals: totals, deleted: deleted)
    }

    private mutating func counterTotal() -> CounterTotal? {
        var total: Int64?, clock: SyncClock?
        let read = members { scanner, name in
            switch name {
            case "total":
                total = scanner.integer(Int64.self)
                return total != nil
            case "clock":
                clock = scanner.clock()
                return clock != nil
            default: return false
            }
        }
        guard read, let total, let clock else { return nil }
        return CounterTotal(total: total, clock: clock)
    }

    /// A tagged value: null, or one of `{"integer": …}`, `{"real": …}`, `{"text": …}`,
    /// `{"blob": "<base64>"}`.
    private mutating func value() -> StoredValue? {
        if null() { return .null }
        var value: StoredValue?
        var tags = 0
        let read = members { scanner, tag in
            tags += 1
            switch tag {
            case "integer": value = scanner.integer(Int64.self).map(StoredValue.integer)
            case "real": value = scanner.real().map(StoredValue.real)
            case "text": value = scanner.string().map(StoredValue.text)
            case "blob": value = scanner.string().flatMap { Data(base64Encoded: $0) }.map { .blob([UInt8]($0)) }
            default: return false
            }
            return value != nil
        }
        return read && tags == 1 ? value : nil
    }

    // MARK: - JSON, as far as these shapes need it

    /// Whether only whitespace is left.
    private mutating func atEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }

    /// Whether the next byte (after whitespace) is `byte`, taken if it is.
    private mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// An object: each member's name handed to `member`, which reads its value and says
    /// whether it did. False for a name given twice, or one `member` did not take.
    private mutating func members(_ member: (inout SyncJSONScanner, String) -> Bool) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return true }
        var names: [String] = []
        repeat {
            guard let name = string(), !names.contains(name), take(UInt8(ascii: ":")), member(&self, name) else { return false }
            names.append(name)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}"))
    }

    /// An object of names to `read`'s values, added to `map`; false for a name given twice.
    private mutating func map<Value>(into map: inout [String: Value], _ read: (inout SyncJSONScanner) -> Value?) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return true }
        // A record's few attributes, without growing the map one by one.
        map.reserveCapacity(8)
        repeat {
            guard let name = string(), take(UInt8(ascii: ":")), let value = read(&self), map.updateValue(value, forKey: name) == nil else { return false }
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}"))
    }

    private mutating func list<Element>(_ read: (inout SyncJSONScanner) -> Element?) -> [Element]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var elements: [Element] = []
        if take(UInt8(ascii: "]")) { return elements }
        repeat {
            guard let element = read(&self) else { return nil }
            elements.append(element)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? elements : nil
    }

    private mutating func null() -> Bool { word("null") }

    private mutating func bool() -> Bool? {
        if word("true") { return true }
        return word("false") ? false : nil
    }

    private mutating func word(_ word: StaticString) -> Bool {
        skipWhitespace()
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
        index += count
        return true
    }

    /// A string's text: its bytes checked as UTF-8, the one-letter escapes decoded; nil for a
    /// `\u` escape (left to the full reader) and for anything JSON refuses.
    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return Self.text(bytes[start..<index - 1], ascii: ascii)
            }
            guard byte >= 0x20 else { return nil }
            if byte >= 0x80 { ascii = false }
            if byte == UInt8(ascii: "\\") {
                var text = Array(bytes[start..<index])
                return escapedRest(&text)
            }
            index += 1
        }
        return nil
    }

    /// The rest of a string from its first escape on, its bytes gathered in `text`.
    private mutating func escapedRest(_ text: inout [UInt8]) -> String? {
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\"") { return Self.text(text[...], ascii: false) }
            guard byte >= 0x20 else { return nil }
            guard byte == UInt8(ascii: "\\") else {
                text.append(byte)
                continue
            }
            guard index < bytes.count, let unescaped = Self.unescaped(bytes[index]) else { return nil }
            text.append(unescaped)
            index += 1
        }
        return nil
    }

    /// The string of UTF-8 `bytes`, or nil where they are not well formed: decoding repairs
    /// what is not, so a string whose bytes differ from them was not. (`String(validating:)`
    /// took five times as long as the rest of the scan.)
    private static func text(_ bytes: ArraySlice<UInt8>, ascii: Bool) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        return ascii || text.utf8.elementsEqual(bytes) ? text : nil
    }

    private static func unescaped(_ letter: UInt8) -> UInt8? {
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): letter
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }

    /// 1 to 200 bytes, as names and keys are.
    private mutating func named() -> String? {
        guard let text = string(), !text.isEmpty, text.utf8.count <= 200 else { return nil }
        return text
    }

    /// A clock, read from the string's bytes (a clock has nothing to escape).
    private mutating func clock() -> SyncClock? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") { index += 1 }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        return SyncClock(utf8: bytes[start..<index - 1])
    }

    /// A number's text as JSON spells one (no leading zero, digits after `.` and in the exponent).
    private mutating func number() -> Substring? {
        skipWhitespace()
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - from
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let leadingZero = index < bytes.count && bytes[index] == UInt8(ascii: "0")
        let integerDigits = digits()
        guard integerDigits > 0, !(leadingZero && integerDigits > 1) else { return nil }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return nil }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
        }
        return Substring(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func integer<Number: FixedWidthInteger>(_ type: Number.Type) -> Number? { number().flatMap { Number($0) } }

    private mutating func real() -> Double? { number().flatMap(SyncJSONReader.real) }
}
