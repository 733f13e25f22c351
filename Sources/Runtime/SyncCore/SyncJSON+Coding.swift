import Foundation
import SchemaMetadata

// How each sync type is spelled in JSON. Values are tagged by kind ({"text": "Milk"},
// {"integer": 3}, {"real": 1.5} (finite), {"blob": "<base64>"}, null), clocks are their sorting text,
// and whatever a type requires of itself (a clock for every value) is checked on reading.

extension SyncClock: Codable {
    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncClock = try JSONDecoder().decode(SyncClock.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let clock = SyncClock(text: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text.prefix(80))' is not a sync clock (15 digits, 8 hexadecimal digits, a node: 001796069700125-00000002-server)")
        }
        self = clock
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}

/// A stored value as JSON, tagged with its kind so that text and numbers stay apart.
struct WireValue: Codable {
    var value: StoredValue

    enum Keys: String, CodingKey { case integer, real, text, blob }

    init(_ value: StoredValue) { self.value = value }

    init(from decoder: any Decoder) throws {
        if try decoder.singleValueContainer().decodeNil() {
            value = .null
            return
        }
        let container = try decoder.container(keyedBy: Keys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "is not a value: one of {\"integer\": 3}, {\"real\": 1.5}, {\"text\": \"…\"}, {\"blob\": \"<base64>\"} or null"))
        }
        switch key {
        case .integer: value = .integer(try container.decode(Int64.self, forKey: key))
        case .real: value = .real(try container.decode(Double.self, forKey: key))
        case .text: value = .text(try container.decode(String.self, forKey: key))
        case .blob:
            let text = try container.decode(String.self, forKey: key)
            guard let bytes = Data(base64Encoded: text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "is not base64")
            }
            value = .blob([UInt8](bytes))
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch value {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .integer(let number):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(number, forKey: .integer)
        case .real(let number):
            // SQLite keeps NaN as NULL where PostgreSQL keeps NaN: such a value would not read
            // the same on both sides.
            guard number.isFinite else {
                throw EncodingError.invalidValue(
                    number, .init(codingPath: encoder.codingPath, debugDescription: "\(number) is not a finite number, which SQLite and PostgreSQL keep differently"))
            }
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(number, forKey: .real)
        case .text(let text):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(text, forKey: .text)
        case .blob(let bytes):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(Data(bytes).base64EncodedString(), forKey: .blob)
        }
    }
}

extension [String: StoredValue] {
    fileprivate var wire: [String: WireValue] { mapValues(WireValue.init) }
}

extension [String: WireValue] {
    fileprivate var stored: [String: StoredValue] { mapValues(\.value) }
}

extension CounterTotal: Codable {
    enum Keys: String, CodingKey { case total, clock }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let counterTotal = try JSONDecoder().decode(CounterTotal.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(total: try container.decode(Int64.self, forKey: .total), clock: try container.decode(SyncClock.self, forKey: .clock))
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(total, forKey: .total)
        try container.encode(clock, forKey: .clock)
    }
}

extension SyncChange: Codable {
    enum Keys: String, CodingKey { case values, clocks, seen, counters, deleted }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncChange = try JSONDecoder().decode(SyncChange.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let values = try container.decodeIfPresent([String: WireValue].self, forKey: .values)?.stored ?? [:]
        let clocks = try container.decodeIfPresent([String: SyncClock].self, forKey: .clocks) ?? [:]
        guard Set(values.keys) == Set(clocks.keys) else {
            throw DecodingError.dataCorruptedError(forKey: .clocks, in: container, debugDescription: "must name the same attributes as values, each with its clock")
        }
        self.init(
            values: values, clocks: clocks, seen: try container.decodeIfPresent([String: SyncClock].self, forKey: .seen) ?? [:],
            counters: try container.decodeIfPresent([String: CounterTotal].self, forKey: .counters) ?? [:],
            deleted: try container.decodeIfPresent(SyncClock.self, forKey: .deleted))
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        if !values.isEmpty { try container.encode(values.wire, forKey: .values) }
        if !clocks.isEmpty { try container.encode(clocks, forKey: .clocks) }
        if !seen.isEmpty { try container.encode(seen, forKey: .seen) }
        if !counters.isEmpty { try container.encode(counters, forKey: .counters) }
        try container.encodeIfPresent(deleted, forKey: .deleted)
    }
}

extension SyncRecord: Codable {
    enum Keys: String, CodingKey { case values, clocks, counters, deleted }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncRecord = try JSONDecoder().decode(SyncRecord.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let values = try container.decodeIfPresent([String: WireValue].self, forKey: .values)?.stored ?? [:]
        let clocks = try container.decodeIfPresent([String: SyncClock].self, forKey: .clocks) ?? [:]
        let counters = try container.decodeIfPresent([String: [String: CounterTotal]].self, forKey: .counters) ?? [:]
        guard let record = SyncRecord(values: values, clocks: clocks, counterTotals: counters, deleted: try container.decodeIfPresent(SyncClock.self, forKey: .deleted)) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "is not a record: each value needs its clock, and each counter total its own node's"))
        }
        self = record
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        if !values.isEmpty { try container.encode(values.wire, forKey: .values) }
        if !clocks.isEmpty { try container.encode(clocks, forKey: .clocks) }
        if !counterTotals.isEmpty { try container.encode(counterTotals, forKey: .counters) }
        try container.encodeIfPresent(deleted, forKey: .deleted)
    }
}

/// Reads a name that must not be empty (an entity, a key, a device).
private func named<Keys: CodingKey>(_ container: KeyedDecodingContainer<Keys>, _ key: Keys) throws -> String {
    let text = try container.decode(String.self, forKey: key)
    guard !text.isEmpty, text.utf8.count <= 200 else {
        throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "must be 1 to 200 bytes long")
    }
    return text
}

/// Reads a count or number that must not be negative.
private func natural<Keys: CodingKey, Number: FixedWidthInteger & Codable>(_ container: KeyedDecodingContainer<Keys>, _ key: Keys, as type: Number.Type) throws -> Number {
    let number = try container.decode(Number.self, forKey: key)
    guard number >= 0 else { throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "must not be negative") }
    return number
}

extension SyncRecordChange: Codable {
    enum Keys: String, CodingKey { case entity, key, change }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncRecordChange = try JSONDecoder().decode(SyncRecordChange.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(entity: try named(container, .entity), key: try named(container, .key), change: try container.decode(SyncChange.self, forKey: .change))
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(entity, forKey: .entity)
        try container.encode(key, forKey: .key)
        try container.encode(change, forKey: .change)
    }
}

extension SyncPush: SyncMessage {
    enum Keys: String, CodingKey { case device, schemaVersion, sequence, changes }

    /// How many records it holds, for `SyncJSON.Limits`.
    public var recordCount: Int { changes.count }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncPush = try JSONDecoder().decode(SyncPush.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            device: try named(container, .device), schemaVersion: try natural(container, .schemaVersion, as: Int.self),
            sequence: try natural(container, .sequence, as: Int64.self), changes: try container.decode([SyncRecordChange].self, forKey: .changes))
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(device, forKey: .device)
        try container.encode(schemaVersion, forKey: .schemaVersion)
        try container.encode(sequence, forKey: .sequence)
        try container.encode(changes, forKey: .changes)
    }
}

extension SyncRecordState: Codable {
    enum Keys: String, CodingKey { case entity, key, record, removed }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncRecordState = try JSONDecoder().decode(SyncRecordState.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            entity: try named(container, .entity), key: try named(container, .key), record: try container.decode(SyncRecord.self, forKey: .record),
            removed: try container.decodeIfPresent(Bool.self, forKey: .removed) ?? false)
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(entity, forKey: .entity)
        try container.encode(key, forKey: .key)
        try container.encode(record, forKey: .record)
        if removed { try container.encode(true, forKey: .removed) }
    }
}

extension SyncRejection.Reason: Codable {}

extension SyncRejection: Codable {
    enum Keys: String, CodingKey { case entity, key, attributes, reason, current, detail }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncRejection = try JSONDecoder().decode(SyncRejection.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            entity: try named(container, .entity), key: try named(container, .key), attributes: try container.decodeIfPresent([String].self, forKey: .attributes) ?? [],
            reason: try container.decode(Reason.self, forKey: .reason), current: try container.decodeIfPresent(SyncRecord.self, forKey: .current),
            detail: try container.decodeIfPresent(String.self, forKey: .detail))
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(entity, forKey: .entity)
        try container.encode(key, forKey: .key)
        if !attributes.isEmpty { try container.encode(attributes, forKey: .attributes) }
        try container.encode(reason, forKey: .reason)
        try container.encodeIfPresent(current, forKey: .current)
        try container.encodeIfPresent(detail, forKey: .detail)
    }
}

extension SyncPushAnswer: SyncMessage {
    enum Keys: String, CodingKey { case acknowledged, rejected, clock }

    /// How many records it holds, for `SyncJSON.Limits`.
    public var recordCount: Int { rejected.count }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncPushAnswer = try JSONDecoder().decode(SyncPushAnswer.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            acknowledged: try natural(container, .acknowledged, as: Int64.self), rejected: try container.decodeIfPresent([SyncRejection].self, forKey: .rejected) ?? [],
            clock: try container.decode(SyncClock.self, forKey: .clock))
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(acknowledged, forKey: .acknowledged)
        if !rejected.isEmpty { try container.encode(rejected, forKey: .rejected) }
        try container.encode(clock, forKey: .clock)
    }
}

extension SyncPull: SyncMessage {
    enum Keys: String, CodingKey { case device, schemaVersion, after, limit }

    /// How many records it holds, for `SyncJSON.Limits`.
    public var recordCount: Int { 0 }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncPull = try JSONDecoder().decode(SyncPull.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let limit = try container.decode(Int.self, forKey: .limit)
        guard limit >= 1 else { throw DecodingError.dataCorruptedError(forKey: .limit, in: container, debugDescription: "must be at least 1") }
        self.init(
            device: try named(container, .device), schemaVersion: try natural(container, .schemaVersion, as: Int.self),
            after: try container.decodeIfPresent(String.self, forKey: .after), limit: limit)
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(device, forKey: .device)
        try container.encode(schemaVersion, forKey: .schemaVersion)
        try container.encodeIfPresent(after, forKey: .after)
        try container.encode(limit, forKey: .limit)
    }
}

extension SyncPullAnswer: SyncMessage {
    enum Keys: String, CodingKey { case records, next, hasMore, clock }

    /// How many records it holds, for `SyncJSON.Limits`.
    public var recordCount: Int { records.count }

    /// Reads the JSON `SyncJSON` writes, checking what the type requires of itself.
    ///
    ///     let syncPullAnswer = try JSONDecoder().decode(SyncPullAnswer.self, from: data)
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            records: try container.decode([SyncRecordState].self, forKey: .records), next: try container.decode(String.self, forKey: .next),
            hasMore: try container.decode(Bool.self, forKey: .hasMore), clock: try container.decode(SyncClock.self, forKey: .clock))
    }

    /// Writes the JSON `SyncJSON` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(records, forKey: .records)
        try container.encode(next, forKey: .next)
        try container.encode(hasMore, forKey: .hasMore)
        try container.encode(clock, forKey: .clock)
    }
}
