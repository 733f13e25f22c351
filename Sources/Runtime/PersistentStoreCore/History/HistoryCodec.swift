import Foundation
import JSONDocument
import SchemaMetadata
import TextEscaping

/// The `changes` column of `schemagen_history` as JSON, documented in docs/runtime.md
/// ("The history table") so other programs can read it:
///
///     [{"entity":"TodoItem","kind":"insert","keys":["7f0c…"]},
///      {"entity":"TodoItem","kind":"insert","keys":["8a1d…"],"changed":["taskName","isCompleted"],"values":{"taskName":"Buy milk","isCompleted":0}},
///      {"entity":"TodoItem","kind":"update","keys":["7f0c…"],"changed":["isCompleted"],"values":{"isCompleted":1}},
///      {"entity":"User","kind":"delete","keys":["u1"],"tombstone":{"lastSeen":"2026-11-30T09:00:00.000Z"}},
///      {"entity":"Flight","kind":"insert","keys":[{"from":1,"through":500000}]}]
///
/// An insert lists its values as an update does, unless the schema says `history:
/// {insertValues: false}`. Consecutive changes of one entity and kind without values share a group. A key is its value
/// (an array for a composite key); a run of consecutive integer keys is `{"from":a,"through":b}`.
/// Values are JSON numbers (integers without a decimal point, reals with one), strings,
/// `null`, `{"blob":"hex"}`, or `{"real":"inf"}` / `{"real":"-inf"}`.
enum HistoryCodec {
    /// Written as UTF-8 bytes, one String made at the end: a transaction of a thousand inserts
    /// writes tens of thousands of names and values.
    static func encode(_ changes: [ChangeRecorder.Change], entities: [String], names: [String]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64 + changes.count * 16)
        out.append(UInt8(ascii: "["))
        var index = 0
        var firstGroup = true
        while index < changes.count {
            let head = changes[index]
            if !firstGroup { out.append(UInt8(ascii: ",")) }
            firstGroup = false
            out.append(contentsOf: #"{"entity":"#.utf8)
            TextEscaping.appendJSON(entities[Int(head.entity)], to: &out)
            out.append(contentsOf: #","kind":""#.utf8)
            out.append(contentsOf: head.kind.rawValue.utf8)
            out.append(contentsOf: #"","keys":["#.utf8)
            if !head.payload.isEmpty || head.kind == .update {
                writeKey(head.key, to: &out)
                out.append(UInt8(ascii: "]"))
                writePayload(head, names: names, to: &out)
                out.append(UInt8(ascii: "}"))
                index += 1
                continue
            }
            // A group: following changes of the same entity and kind, without payload.
            var end = index + 1
            while end < changes.count, changes[end].entity == head.entity, changes[end].kind == head.kind, changes[end].payload.isEmpty {
                end += 1
            }
            var position = index
            var firstKey = true
            while position < end {
                if !firstKey { out.append(UInt8(ascii: ",")) }
                firstKey = false
                if case .integer(let start) = changes[position].key {
                    var last = start
                    var next = position + 1
                    while next < end, case .integer(let value) = changes[next].key, value == last &+ 1 {
                        last = value
                        next += 1
                    }
                    if next - position >= 3 {
                        out.append(contentsOf: #"{"from":"#.utf8)
                        writeInteger(start, to: &out)
                        out.append(contentsOf: #","through":"#.utf8)
                        writeInteger(last, to: &out)
                        out.append(UInt8(ascii: "}"))
                        position = next
                        continue
                    }
                }
                writeKey(changes[position].key, to: &out)
                position += 1
            }
            out.append(contentsOf: "]}".utf8)
            index = end
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    private static func writeKey(_ key: ChangeRecorder.Key, to out: inout [UInt8]) {
        switch key {
        case .integer(let value): writeInteger(value, to: &out)
        case .values(let values):
            if values.count == 1 {
                writeValue(values[0], to: &out)
            } else {
                out.append(UInt8(ascii: "["))
                for (offset, value) in values.enumerated() {
                    if offset > 0 { out.append(UInt8(ascii: ",")) }
                    writeValue(value, to: &out)
                }
                out.append(UInt8(ascii: "]"))
            }
        }
    }

    private static func writePayload(_ change: ChangeRecorder.Change, names: [String], to out: inout [UInt8]) {
        if change.kind != .delete {
            out.append(contentsOf: #","changed":["#.utf8)
            for (offset, item) in change.payload.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                TextEscaping.appendJSON(names[Int(item.name)], to: &out)
            }
            out.append(contentsOf: #"],"values":{"#.utf8)
        } else {
            out.append(contentsOf: #","tombstone":{"#.utf8)
        }
        var first = true
        for item in change.payload {
            guard let value = item.value else { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            TextEscaping.appendJSON(names[Int(item.name)], to: &out)
            out.append(UInt8(ascii: ":"))
            writeValue(value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// An integer's decimal digits, without making a String.
    static func writeInteger(_ value: Int64, to out: inout [UInt8]) {
        if value == 0 { return out.append(UInt8(ascii: "0")) }
        if value < 0 { out.append(UInt8(ascii: "-")) }
        // The magnitude as unsigned: Int64.min has none as an Int64.
        var magnitude = value.magnitude
        let start = out.count
        while magnitude > 0 {
            out.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        }
        out[start...].reverse()
    }

    static func writeValue(_ value: StoredValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .integer(let number): writeInteger(number, to: &out)
        case .real(let number):
            if number.isInfinite {
                out.append(contentsOf: (number > 0 ? #"{"real":"inf"}"# : #"{"real":"-inf"}"#).utf8)
            } else if number.isNaN {
                out.append(contentsOf: "null".utf8)
            } else {
                let text = "\(number)"
                out.append(contentsOf: text.utf8)
                if !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) { out.append(contentsOf: ".0".utf8) }
            }
        case .text(let text): TextEscaping.appendJSON(text, to: &out)
        case .blob(let bytes):
            out.append(contentsOf: #"{"blob":""#.utf8)
            let digits = Array("0123456789abcdef".utf8)
            for byte in bytes {
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0xF)])
            }
            out.append(contentsOf: #""}"#.utf8)
        }
    }

    static func encodeNames(_ names: [String]) -> String {
        var out = "["
        for (offset, name) in names.enumerated() {
            if offset > 0 { out += "," }
            TextEscaping.appendJSON(name, to: &out)
        }
        return out + "]"
    }

    // MARK: - Reading

    struct DecodingError: Error, CustomStringConvertible {
        let description: String
    }

    static func decodeNames(_ text: String) throws(DecodingError) -> [String] {
        let node = try parse(text)
        guard case .array(let items) = node.value else { throw DecodingError(description: "expected an array of names") }
        return try items.map { item throws(DecodingError) in
            guard let name = item.string else { throw DecodingError(description: "\(item.line):\(item.column): expected a name") }
            return name
        }
    }

    static func decode(_ text: String) throws(DecodingError) -> [HistoryChange] {
        let node = try parse(text)
        guard case .array(let groups) = node.value else { throw DecodingError(description: "expected an array of changes") }
        var changes: [HistoryChange] = []
        for group in groups {
            guard let entity = group["entity"]?.string, let kind = group["kind"]?.string.flatMap(HistoryChange.Kind.init(rawValue:)),
                case .array(let keys)? = group["keys"]?.value
            else {
                throw DecodingError(description: "\(group.line):\(group.column): a change needs entity, kind and keys")
            }
            let changed =
                try group["changed"].map { node throws(DecodingError) -> [String] in
                    guard case .array(let items) = node.value else { throw DecodingError(description: "\(node.line):\(node.column): 'changed' is not a list") }
                    return items.compactMap(\.string)
                } ?? []
            let values = try group["values"].map(members) ?? [:]
            let tombstone = try group["tombstone"].map(members)
            for key in keys {
                if let from = key["from"], let through = key["through"],
                    case .integer(let first) = try value(from), case .integer(let last) = try value(through), first <= last
                {
                    changes.reserveCapacity(changes.count + Int(last - first + 1))
                    for number in first...last {
                        changes.append(HistoryChange(entity: entity, kind: kind, key: [.integer(number)]))
                    }
                    continue
                }
                let parts: [StoredValue]
                if case .array(let items) = key.value {
                    parts = try items.map { item throws(DecodingError) in try value(item) }
                } else {
                    parts = [try value(key)]
                }
                changes.append(
                    HistoryChange(
                        entity: entity, kind: kind, key: parts, changedAttributes: changed, values: values,
                        tombstone: kind == .delete ? (tombstone ?? [:]) : nil))
            }
        }
        return changes
    }

    private static func parse(_ text: String) throws(DecodingError) -> JSONNode {
        do { return try JSONParser.parse(Array(text.utf8)) } catch { throw DecodingError(description: error.description) }
    }

    private static func members(_ node: JSONNode) throws(DecodingError) -> [String: StoredValue] {
        guard case .object(let items) = node.value else { throw DecodingError(description: "\(node.line):\(node.column): expected an object") }
        var result: [String: StoredValue] = [:]
        for item in items { result[item.key] = try value(item.value) }
        return result
    }

    static func value(_ node: JSONNode) throws(DecodingError) -> StoredValue {
        switch node.value {
        case .null: return .null
        case .bool(let flag): return .integer(flag ? 1 : 0)
        case .string(let text): return .text(text)
        case .number(let text):
            if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let integer = Int64(text) { return .integer(integer) }
            guard let real = Double(text) else { throw DecodingError(description: "\(node.line):\(node.column): '\(text)' is not a number") }
            return .real(real)
        case .object:
            if let hex = node["blob"]?.string {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(hex.utf8.count / 2)
                var high: UInt8?
                for character in hex.utf8 {
                    guard let nibble = hexValue(character) else { throw DecodingError(description: "\(node.line):\(node.column): bad hex in a blob") }
                    if let first = high {
                        bytes.append(first << 4 | nibble)
                        high = nil
                    } else {
                        high = nibble
                    }
                }
                return .blob(bytes)
            }
            if let real = node["real"]?.string { return .real(real == "-inf" ? -.infinity : .infinity) }
            throw DecodingError(description: "\(node.line):\(node.column): unknown value object")
        case .array:
            throw DecodingError(description: "\(node.line):\(node.column): a value cannot be a list")
        }
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
