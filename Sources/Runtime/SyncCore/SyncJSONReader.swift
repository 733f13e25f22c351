import Foundation
import JSONDocument
import SchemaMetadata

/// Reads well-formed sync JSON fast, from a parsed tree: nil for anything it does not take as it
/// is, and then the Codable decoders read it again, to take what they take and to say exactly
/// where and why what they refuse is wrong. So this reader checks all that they check, and may
/// leave to them what it does not know.
enum SyncJSONReader {
    typealias Members = [(key: String, value: JSONNode)]

    /// An object's members, found by name by scanning them: a record's few members cost no
    /// hashing (hashing names was a tenth of a first sync).
    struct Fields {
        let members: Members
        subscript(name: String) -> JSONNode? { members.first { $0.key == name }?.value }
    }

    /// An object's members; nil for anything else, and for a name given twice (the Codable
    /// reader decides which one counts).
    static func object(_ node: JSONNode?) -> Fields? {
        guard case .object(let members)? = node?.value else { return nil }
        if members.count <= 16 {
            for index in members.indices.dropFirst() where members[..<index].contains(where: { $0.key == members[index].key }) { return nil }
        } else {
            var seen = Set<String>(minimumCapacity: members.count)
            for member in members where !seen.insert(member.key).inserted { return nil }
        }
        return Fields(members: members)
    }

    static func string(_ node: JSONNode?) -> String? {
        if case .string(let text)? = node?.value { return text }
        return nil
    }

    /// 1 to 200 bytes, as names and keys are.
    static func named(_ node: JSONNode?) -> String? {
        guard let text = string(node), !text.isEmpty, text.utf8.count <= 200 else { return nil }
        return text
    }

    static func integer<Number: FixedWidthInteger>(_ node: JSONNode?, as type: Number.Type) -> Number? {
        guard case .number(let text)? = node?.value else { return nil }
        return Number(text)
    }

    static func natural<Number: FixedWidthInteger>(_ node: JSONNode?, as type: Number.Type) -> Number? {
        guard let number = integer(node, as: type), number >= 0 else { return nil }
        return number
    }

    static func clock(_ node: JSONNode?) -> SyncClock? { string(node).flatMap(SyncClock.init(text:)) }

    static func value(_ node: JSONNode) -> StoredValue? {
        if case .null = node.value { return .null }
        guard case .object(let members) = node.value, members.count == 1, let (kind, inner) = members.first else { return nil }
        switch kind {
        case "integer": return integer(inner, as: Int64.self).map(StoredValue.integer)
        case "real":
            guard case .number(let text) = inner.value, let number = real(text) else { return nil }
            return .real(number)
        case "text": return string(inner).map(StoredValue.text)
        case "blob": return string(inner).flatMap { Data(base64Encoded: $0) }.map { .blob([UInt8]($0)) }
        default: return nil
        }
    }

    /// A JSON number's text as a finite `Double`; nil for one too large, and for one too small
    /// that would read as zero (Codable refuses both rather than change the value).
    static func real(_ text: some StringProtocol) -> Double? {
        guard let number = Double(text), number.isFinite else { return nil }
        if number == 0, text.prefix(while: { $0 != "e" && $0 != "E" }).contains(where: { ("1"..."9").contains($0) }) { return nil }
        return number
    }

    /// A map of `read`'s values; an absent one is empty.
    static func map<Value>(_ node: JSONNode?, _ read: (JSONNode) -> Value?) -> [String: Value]? {
        guard let node else { return [:] }
        guard case .object(let members) = node.value else { return nil }
        var map = [String: Value](minimumCapacity: members.count)
        for (key, value) in members {
            // A key given twice: left to the Codable reader, as in `object`.
            guard let read = read(value), map.updateValue(read, forKey: key) == nil else { return nil }
        }
        return map
    }

    static func list<Element>(_ node: JSONNode?, _ read: (JSONNode) -> Element?) -> [Element]? {
        guard case .array(let elements)? = node?.value else { return nil }
        var list: [Element] = []
        list.reserveCapacity(elements.count)
        for element in elements {
            guard let read = read(element) else { return nil }
            list.append(read)
        }
        return list
    }

    static func total(_ node: JSONNode) -> CounterTotal? {
        guard let members = object(node), let total = integer(members["total"], as: Int64.self), let clock = clock(members["clock"]) else { return nil }
        return CounterTotal(total: total, clock: clock)
    }

    /// An optional clock: absent or null is none.
    static func optionalClock(_ node: JSONNode?) -> SyncClock?? {
        guard let node, node.value != .null else { return .some(nil) }
        return clock(node).map { .some($0) }
    }

    static func record(_ node: JSONNode) -> SyncRecord? {
        guard let members = object(node), let values = map(members["values"], value), let clocks = map(members["clocks"], clock),
            let counters = map(members["counters"], { map($0, total) }), let deleted = optionalClock(members["deleted"])
        else { return nil }
        return SyncRecord(values: values, clocks: clocks, counterTotals: counters, deleted: deleted)
    }

    static func change(_ node: JSONNode) -> SyncChange? {
        guard let members = object(node), let values = map(members["values"], value), let clocks = map(members["clocks"], clock),
            SyncRecord.sameKeys(values, clocks), let seen = map(members["seen"], clock), let counters = map(members["counters"], total),
            let deleted = optionalClock(members["deleted"])
        else { return nil }
        return SyncChange(values: values, clocks: clocks, seen: seen, counters: counters, deleted: deleted)
    }

    /// The message of an envelope of this protocol version.
    static func message(_ bytes: [UInt8]) -> Fields? {
        guard let root = try? JSONParser.parse(bytes), let envelope = object(root), integer(envelope["protocol"], as: Int.self) == SyncJSON.protocolVersion else { return nil }
        return object(envelope["message"])
    }

    static func push(_ message: Fields) -> SyncPush? {
        guard let device = named(message["device"]), let version = natural(message["schemaVersion"], as: Int.self), let sequence = natural(message["sequence"], as: Int64.self),
            let changes = list(
                message["changes"],
                { node -> SyncRecordChange? in
                    guard let members = object(node), let entity = named(members["entity"]), let key = named(members["key"]), let change = members["change"].flatMap(change)
                    else { return nil }
                    return SyncRecordChange(entity: entity, key: key, change: change)
                })
        else { return nil }
        return SyncPush(device: device, schemaVersion: version, sequence: sequence, changes: changes)
    }

    static func pullAnswer(_ message: Fields) -> SyncPullAnswer? {
        guard case .bool(let hasMore)? = message["hasMore"]?.value, let next = string(message["next"]), let clock = clock(message["clock"]),
            let records = list(
                message["records"],
                { node -> SyncRecordState? in
                    guard let members = object(node), let entity = named(members["entity"]), let key = named(members["key"]), let record = members["record"].flatMap(record)
                    else { return nil }
                    let removed: Bool
                    switch members["removed"]?.value {
                    case nil: removed = false
                    case .bool(let flag)?: removed = flag
                    default: return nil
                    }
                    return SyncRecordState(entity: entity, key: key, record: record, removed: removed)
                })
        else { return nil }
        return SyncPullAnswer(records: records, next: next, hasMore: hasMore, clock: clock)
    }

    /// A message of `type` read fast, or nil to leave it to the Codable decoders.
    static func read<Message: SyncMessage>(_ type: Message.Type, from bytes: [UInt8]) -> Message? {
        if Message.self == SyncPullAnswer.self, let answer = SyncJSONScanner.pullAnswer(bytes) { return answer as? Message }
        guard Message.self == SyncPush.self || Message.self == SyncPullAnswer.self, let message = message(bytes) else { return nil }
        if Message.self == SyncPush.self { return push(message) as? Message }
        return pullAnswer(message) as? Message
    }
}
