import Foundation
import SchemaMetadata
import TextEscaping

/// Writes the sync types as `SyncJSON` spells them (compact, keys sorted, values tagged), straight
/// into bytes: the Codable encoders give the same JSON, several times slower, and a first sync
/// writes every record twice (on the wire, and as its state).
struct SyncJSONWriter {
    var bytes: [UInt8] = []
    /// Where the writer is, kept only to name a value that cannot be written: a list's
    /// element as its position, spelled only then.
    private var path: [(name: String, index: Int?)] = []

    /// `records[3].record.values.title`: the path, as an error names it.
    private var pathText: String { path.map { step in step.index.map { "\(step.name)[\($0)]" } ?? step.name }.joined(separator: ".") }

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    private mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func string(_ text: String) { TextEscaping.appendJSON(text, to: &bytes) }

    private mutating func number<Number: BinaryInteger>(_ value: Number) { bytes.append(contentsOf: String(value).utf8) }

    /// `"key":`, after a comma unless it is the object's first.
    private mutating func key(_ name: StaticString, first: Bool = false) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        raw("\":")
    }

    /// A map of strings to `write`'s values, its keys sorted.
    private mutating func map<Value>(_ map: [String: Value], _ write: (inout SyncJSONWriter, Value) throws(SyncMessageError) -> Void) throws(SyncMessageError) {
        bytes.append(UInt8(ascii: "{"))
        for (index, entry) in map.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            string(entry.key)
            bytes.append(UInt8(ascii: ":"))
            path.append((entry.key, nil))
            try write(&self, entry.value)
            path.removeLast()
        }
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func list<Element>(_ elements: [Element], named name: String, _ write: (inout SyncJSONWriter, Element) throws(SyncMessageError) -> Void) throws(SyncMessageError) {
        bytes.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            path.append((name, index))
            try write(&self, element)
            path.removeLast()
        }
        bytes.append(UInt8(ascii: "]"))
    }

    mutating func value(_ value: StoredValue) throws(SyncMessageError) {
        switch value {
        case .null: raw("null")
        case .integer(let number):
            raw("{\"integer\":")
            self.number(number)
            raw("}")
        case .real(let number):
            // SQLite keeps NaN as NULL where PostgreSQL keeps NaN: such a value would not read
            // the same on both sides.
            guard number.isFinite else {
                throw SyncMessageError(path: pathText, problem: "cannot be written: \(number) is not a finite number, which SQLite and PostgreSQL keep differently")
            }
            raw("{\"real\":")
            bytes.append(contentsOf: "\(number)".utf8)
            raw("}")
        case .text(let text):
            raw("{\"text\":")
            string(text)
            raw("}")
        case .blob(let data):
            raw("{\"blob\":")
            string(Data(data).base64EncodedString())
            raw("}")
        }
    }

    /// A clock's text (`SyncClock.text`), quoted, written digit by digit: a page has thousands.
    mutating func clock(_ clock: SyncClock) {
        bytes.append(UInt8(ascii: "\""))
        // Fifteen digits, zero-padded, written in place (no array of digits for each clock).
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: 15))
        var milliseconds = clock.milliseconds
        var position = start + 14
        while milliseconds > 0, position >= start {
            bytes[position] = UInt8(ascii: "0") + UInt8(milliseconds % 10)
            milliseconds /= 10
            position -= 1
        }
        bytes.append(UInt8(ascii: "-"))
        let hex: StaticString = "0123456789abcdef"
        for shift in stride(from: 28, through: 0, by: -4) {
            bytes.append(hex.utf8Start[Int((clock.counter >> UInt32(shift)) & 0xF)])
        }
        bytes.append(UInt8(ascii: "-"))
        // Node names are checked ASCII letters, digits and `._:-`: nothing to escape.
        bytes.append(contentsOf: clock.node.utf8)
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func total(_ total: CounterTotal) {
        raw("{\"clock\":")
        clock(total.clock)
        key("total")
        number(total.total)
        raw("}")
    }

    /// `"name":` inside an object, after a comma unless nothing came before (`first`).
    private mutating func member(_ name: StaticString, _ first: inout Bool) {
        key(name, first: first)
        first = false
    }

    /// The members a record and a change share: `clocks`, then (after the caller's `counters`)
    /// `deleted`, and last `values`; each left out when empty.
    private mutating func clocksMember(_ clocks: [String: SyncClock], _ first: inout Bool) throws(SyncMessageError) {
        guard !clocks.isEmpty else { return }
        member("clocks", &first)
        try map(clocks) { writer, clock throws(SyncMessageError) in writer.clock(clock) }
    }

    private mutating func deletedMember(_ deleted: SyncClock?, _ first: inout Bool) {
        guard let deleted else { return }
        member("deleted", &first)
        clock(deleted)
    }

    private mutating func valuesMember(_ values: [String: StoredValue], _ first: inout Bool) throws(SyncMessageError) {
        guard !values.isEmpty else { return }
        member("values", &first)
        path.append(("values", nil))
        try map(values) { writer, value throws(SyncMessageError) in try writer.value(value) }
        path.removeLast()
    }

    mutating func record(_ record: SyncRecord) throws(SyncMessageError) {
        var first = true
        bytes.append(UInt8(ascii: "{"))
        try clocksMember(record.clocks, &first)
        if !record.counterTotals.isEmpty {
            member("counters", &first)
            try map(record.counterTotals) { writer, totals throws(SyncMessageError) in try writer.map(totals) { writer, total throws(SyncMessageError) in writer.total(total) } }
        }
        deletedMember(record.deleted, &first)
        try valuesMember(record.values, &first)
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func change(_ change: SyncChange) throws(SyncMessageError) {
        var first = true
        bytes.append(UInt8(ascii: "{"))
        try clocksMember(change.clocks, &first)
        if !change.counters.isEmpty {
            member("counters", &first)
            try map(change.counters) { writer, total throws(SyncMessageError) in writer.total(total) }
        }
        deletedMember(change.deleted, &first)
        if !change.seen.isEmpty {
            member("seen", &first)
            try map(change.seen) { writer, clock throws(SyncMessageError) in writer.clock(clock) }
        }
        try valuesMember(change.values, &first)
        bytes.append(UInt8(ascii: "}"))
    }

    /// `{"message":…,"protocol":1}` around what `message` writes.
    mutating func envelope(_ message: (inout SyncJSONWriter) throws(SyncMessageError) -> Void) throws(SyncMessageError) {
        raw("{\"message\":")
        path.append(("message", nil))
        try message(&self)
        path.removeLast()
        raw(",\"protocol\":")
        number(SyncJSON.protocolVersion)
        raw("}")
    }

    mutating func push(_ push: SyncPush) throws(SyncMessageError) {
        raw("{\"changes\":")
        try list(push.changes, named: "changes") { writer, change throws(SyncMessageError) in
            writer.raw("{\"change\":")
            writer.path.append(("change", nil))
            try writer.change(change.change)
            writer.path.removeLast()
            writer.key("entity")
            writer.string(change.entity)
            writer.key("key")
            writer.string(change.key)
            writer.raw("}")
        }
        key("device")
        string(push.device)
        key("schemaVersion")
        number(push.schemaVersion)
        key("sequence")
        number(push.sequence)
        raw("}")
    }

    mutating func pushAnswer(_ answer: SyncPushAnswer) throws(SyncMessageError) {
        raw("{\"acknowledged\":")
        number(answer.acknowledged)
        key("clock")
        clock(answer.clock)
        if !answer.rejected.isEmpty {
            key("rejected")
            try list(answer.rejected, named: "rejected") { writer, rejection throws(SyncMessageError) in try writer.rejection(rejection) }
        }
        raw("}")
    }

    mutating func rejection(_ rejection: SyncRejection) throws(SyncMessageError) {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        if !rejection.attributes.isEmpty {
            member("attributes", &first)
            try list(rejection.attributes, named: "attributes") { writer, name throws(SyncMessageError) in writer.string(name) }
        }
        if let current = rejection.current {
            member("current", &first)
            path.append(("current", nil))
            try record(current)
            path.removeLast()
        }
        if let detail = rejection.detail {
            member("detail", &first)
            string(detail)
        }
        key("entity", first: first)
        string(rejection.entity)
        key("key")
        string(rejection.key)
        key("reason")
        string(rejection.reason.rawValue)
        raw("}")
    }

    mutating func pull(_ pull: SyncPull) {
        bytes.append(UInt8(ascii: "{"))
        if let after = pull.after {
            key("after", first: true)
            string(after)
            key("device")
        } else {
            key("device", first: true)
        }
        string(pull.device)
        key("limit")
        number(pull.limit)
        key("schemaVersion")
        number(pull.schemaVersion)
        raw("}")
    }

    mutating func pullAnswer(_ answer: SyncPullAnswer) throws(SyncMessageError) {
        raw("{\"clock\":")
        clock(answer.clock)
        key("hasMore")
        if answer.hasMore { raw("true") } else { raw("false") }
        key("next")
        string(answer.next)
        key("records")
        try list(answer.records, named: "records") { writer, state throws(SyncMessageError) in
            writer.raw("{\"entity\":")
            writer.string(state.entity)
            writer.key("key")
            writer.string(state.key)
            writer.key("record")
            writer.path.append(("record", nil))
            try writer.record(state.record)
            writer.path.removeLast()
            if state.removed {
                writer.key("removed")
                writer.raw("true")
            }
            writer.raw("}")
        }
        raw("}")
    }
}
