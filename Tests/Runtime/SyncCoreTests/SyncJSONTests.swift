import Foundation
import SchemaMetadata
import Testing

@testable import SyncCore

/// Sync messages read back as they were written, and a message that is not one is refused
/// saying where, never crashing the reader.
@Suite struct SyncJSONTests {
    static func clock(_ milliseconds: Int64, _ node: String = "ipad-7") -> SyncClock { SyncClock(milliseconds: milliseconds, counter: 3, node: node) }

    static let everyKindOfValue: [String: StoredValue] = [
        "nothing": .null, "count": .integer(.min), "big": .integer(.max), "ratio": .real(-0.1), "tiny": .real(.leastNonzeroMagnitude),
        "title": .text("Oat \"milk\" — 2 l\n\\"), "empty": .text(""), "photo": .blob([0, 255, 7]), "none": .blob([]),
    ]

    static var push: SyncPush {
        let values = everyKindOfValue
        let change = SyncChange(
            values: values, clocks: values.mapValues { _ in clock(10) }, seen: ["title": clock(5, "server")],
            counters: ["likes": CounterTotal(total: -4, clock: clock(11))], deleted: clock(12))
        return SyncPush(
            device: "ipad-7", schemaVersion: 3, sequence: 42,
            changes: [SyncRecordChange(entity: "TodoItem", key: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", change: change), SyncRecordChange(entity: "TodoList", key: "k", change: SyncChange())])
    }

    @Test func everyMessageReadsBackAsWritten() throws {
        #expect(try SyncJSON.decode(SyncPush.self, from: SyncJSON.encode(Self.push)) == Self.push)
        var record = SyncRecord()
        for change in Self.push.changes { record.merge(change.change, rules: SyncRules(counters: ["likes"])) }
        let current = SyncRecordState(entity: "TodoItem", key: "k1", record: record)
        let answer = SyncPushAnswer(
            acknowledged: 42, rejected: [SyncRejection(entity: "TodoItem", key: "k1", attributes: ["title"], reason: .conflict, current: record)], clock: Self.clock(20, "server"))
        #expect(try SyncJSON.decode(SyncPushAnswer.self, from: SyncJSON.encode(answer)) == answer)
        let pull = SyncPull(device: "ipad-7", schemaVersion: 1, after: nil, limit: 500)
        #expect(try SyncJSON.decode(SyncPull.self, from: SyncJSON.encode(pull)) == pull)
        let removal = SyncRecordState(entity: "TodoList", key: "k3", record: SyncRecord(), removed: true)
        let page = SyncPullAnswer(
            records: [current, SyncRecordState(entity: "TodoList", key: "k2", record: SyncRecord()), removal], next: "4711", hasMore: true, clock: Self.clock(21, "server"))
        #expect(try SyncJSON.decode(SyncPullAnswer.self, from: SyncJSON.encode(page)) == page)
        // A removal says so; a record does not (a client of an earlier release reads it as an empty record).
        let pageText = String(decoding: try SyncJSON.encode(page), as: UTF8.self)
        #expect(pageText.contains(#"{"entity":"TodoList","key":"k3","record":{},"removed":true}"#) && pageText.components(separatedBy: "removed").count == 2, "\(pageText)")
        #expect(try JSONDecoder().decode(SyncRecordState.self, from: JSONEncoder().encode(removal)) == removal)
        #expect(try SyncJSON.encode(Self.push) == SyncJSON.encode(Self.push), "equal messages are equal bytes")
        let text = String(decoding: try SyncJSON.encode(pull), as: UTF8.self)
        #expect(text == #"{"message":{"device":"ipad-7","limit":500,"schemaVersion":1},"protocol":1}"#)
    }

    /// The message `json` spells, or the error reading it gives.
    func reading<Message: SyncMessage>(_ type: Message.Type, _ json: String, limits: SyncJSON.Limits = .init()) -> String {
        do {
            return "read: \(try SyncJSON.decode(type, from: Array(json.utf8), limits: limits))"
        } catch {
            return "\(error)"
        }
    }

    @Test func aMessageThatIsNotOneSaysWhereAndWhy() {
        let change = #"{"values":{"title":{"text":"Milk"}},"clocks":{"title":"001796069700125-00000002-ipad-7"}}"#
        func push(_ changes: String, sequence: String = "1") -> String {
            #"{"protocol":1,"message":{"device":"d","schemaVersion":1,"sequence":\#(sequence),"changes":[\#(changes)]}}"#
        }
        #expect(reading(SyncPush.self, push(#"{"entity":"Item","key":"k","change":\#(change)}"#)).hasPrefix("read: "))
        #expect(
            reading(SyncPush.self, push(#"{"entity":"Item","key":"k","change":\#(change)},{"entity":"Item","key":"k","change":{"values":{"a":null},"clocks":{"a":"2024"}}}"#))
                == "the sync message's message.changes[1].change.clocks.a '2024' is not a sync clock (15 digits, 8 hexadecimal digits, a node: 001796069700125-00000002-server)")
        #expect(
            reading(SyncPush.self, push(#"{"entity":"Item","key":"k","change":{"values":{"a":null}}}"#))
                == "the sync message's message.changes[0].change.clocks must name the same attributes as values, each with its clock")
        #expect(
            reading(SyncPush.self, push(#"{"entity":"Item","key":"k","change":{"values":{"a":{"number":3}},"clocks":{"a":"001796069700125-00000002-d"}}}"#))
                .hasPrefix("the sync message's message.changes[0].change.values.a is not a value"))
        #expect(reading(SyncPush.self, push(#"{"entity":"","key":"k","change":{}}"#)) == "the sync message's message.changes[0].entity must be 1 to 200 bytes long")
        #expect(reading(SyncPush.self, push("", sequence: "-1")) == "the sync message's message.sequence must not be negative")
        #expect(reading(SyncPush.self, push("", sequence: "\"1\"")) == "the sync message's message.sequence is not an integer")
        #expect(reading(SyncPush.self, #"{"protocol":1,"message":{"schemaVersion":1,"sequence":1,"changes":[]}}"#) == "the sync message's message.device is missing")
        #expect(reading(SyncPull.self, #"{"protocol":1,"message":{"device":"d","schemaVersion":1,"limit":0}}"#) == "the sync message's message.limit must be at least 1")
        #expect(
            reading(SyncPush.self, #"{"protocol":2,"message":{}}"#)
                == "the sync message's protocol is 2, but this side speaks sync protocol 1: this side is older; update it")
        #expect(reading(SyncPush.self, #"{"protocol":1,"message":"#) == "the sync message is not JSON")
        #expect(reading(SyncPush.self, push(""), limits: .init(maximumBytes: 20)) == "the sync message is 83 bytes, over the limit of 20: send fewer changes at a time")
        let two = push(#"{"entity":"Item","key":"a","change":{}},{"entity":"Item","key":"b","change":{}}"#)
        #expect(reading(SyncPush.self, two, limits: .init(maximumRecords: 1)) == "the sync message holds 2 records, over the limit of 1")
    }

    @Test func aNumberThatIsNotFiniteIsRefused() {
        for number in [Double.nan, .infinity, -.infinity] {
            let change = SyncChange(values: ["ratio": .real(number)], clocks: ["ratio": Self.clock(1)])
            let push = SyncPush(device: "d", schemaVersion: 1, sequence: 1, changes: [SyncRecordChange(entity: "Item", key: "k", change: change)])
            #expect { _ = try SyncJSON.encode(push) } throws: { "\($0)".contains("is not a finite number") }
        }
        let written =
            #"{"protocol":1,"message":{"device":"d","schemaVersion":1,"sequence":1,"changes":[{"entity":"Item","key":"k","change":{"values":{"r":{"real":"nan"}},"clocks":{"r":"000000000000001-00000000-d"}}}]}}"#
        #expect(reading(SyncPush.self, written) == "the sync message's message.changes[0].change.values.r.real is not a number")
    }

    /// JSON nested far deeper than any message is refused, not read until the stack runs out.
    @Test func deeplyNestedJSONIsRefused() {
        let depth = 200_000
        let nested =
            #"{"protocol":1,"message":{"device":"d","schemaVersion":1,"sequence":1,"changes":"# + String(repeating: "[", count: depth)
            + String(repeating: "]", count: depth) + "}}"
        #expect(reading(SyncPush.self, nested).hasPrefix("the sync message"))
    }

    /// 3,000 copies of `valid`, each with a few bytes changed, removed, or inserted from `inserting`, at random.
    static func damaged(_ valid: [UInt8], seed: UInt64, edits: ClosedRange<Int>, inserting: String) -> [[UInt8]] {
        var generator = SeededGenerator(seed: seed)
        return (0..<3_000).map { _ in
            var bytes = valid
            for _ in 0..<Int.random(in: edits, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.remove(at: position)
                default: bytes.insert(Array(inserting.utf8).randomElement(using: &generator)!, at: position)
                }
            }
            return bytes
        }
    }

    /// Bytes of a valid push changed at random: each either reads as a push or is refused with
    /// a `SyncMessageError`; none crashes the reader.
    @Test func damagedMessagesAreRefusedNotFatal() throws {
        var refused = 0
        for bytes in Self.damaged(try SyncJSON.encode(Self.push), seed: 11, edits: 1...4, inserting: #"{}[]",:0-9e"#) {
            do {
                _ = try SyncJSON.decode(SyncPush.self, from: bytes)
            } catch {
                refused += 1
            }
        }
        #expect(refused > 2_000, "most damaged messages are refused")
    }

    /// What the Codable decoders make of a page, to hold the fast readers to.
    struct PageEnvelope: Decodable {
        let `protocol`: Int
        let message: SyncPullAnswer
    }

    /// A page with every kind of value, counters and deletes, text with escapes and beyond ASCII.
    static var page: SyncPullAnswer {
        var record = SyncRecord()
        for change in push.changes { record.merge(change.change, rules: SyncRules(counters: ["likes"])) }
        var plain = SyncRecord()
        plain.merge(SyncChange(values: ["title": .text("Crème brûlée 🍮 \t tab\u{7F}")], clocks: ["title": clock(30)]), rules: SyncRules())
        return SyncPullAnswer(
            records: [
                SyncRecordState(entity: "TodoItem", key: "k1", record: record), SyncRecordState(entity: "TodoItem", key: "k2", record: plain),
                SyncRecordState(entity: "TodoList", key: "k3", record: SyncRecord(), removed: true),
            ], next: "4711", hasMore: true, clock: clock(31, "server"))
    }

    /// The fast readers of pages and kept states take exactly what the Codable decoders take,
    /// as they take it: the page as written, spelled otherwise (whitespace, members reordered,
    /// a `\u` escape, a member twice or unknown), and damaged at random.
    @Test func pagesAndStatesReadFastAsTheDecodersReadThem() throws {
        let written = try SyncJSON.encode(Self.page)
        #expect(try SyncJSON.decode(SyncPullAnswer.self, from: written) == Self.page)
        #expect(SyncJSONScanner.pullAnswer(written) == Self.page, "the scanner reads the page as written")
        let text = String(decoding: written, as: UTF8.self)
        let respelled = [
            text.replacingOccurrences(of: ",", with: " ,\n\t").replacingOccurrences(of: ":", with: " : "),
            text.replacingOccurrences(of: #"{"message":"#, with: #"{"protocol":1,"message":"#).replacingOccurrences(of: #","protocol":1}"#, with: "}"),
            text.replacingOccurrences(of: "Cr", with: #"\u0043r"#), text.replacingOccurrences(of: #""next":"4711""#, with: #""next":"4711","next":"4712""#),
            text.replacingOccurrences(of: #""hasMore":true"#, with: #""hasMore":true,"extra":[1,{"a":null}]"#),
            text.replacingOccurrences(of: #"{"integer":"#, with: #"{"integer":0"#), text.replacingOccurrences(of: "brûlée", with: #"br\"ûl\\ée\/"#),
            // Too small for a Double: it would read as zero, which Codable refuses.
            text.replacingOccurrences(of: "5e-324", with: "5e-3240"), text.replacingOccurrences(of: "5e-324", with: "0.0e-3240"),
        ]
        let damaged = Self.damaged(written, seed: 12, edits: 1...3, inserting: #"{}[]",:0123456789e.\ u"#)
        var read = 0
        for bytes in respelled.map({ Array($0.utf8) }) + damaged {
            let fast = try? SyncJSON.decode(SyncPullAnswer.self, from: bytes)
            let decoded = try? JSONDecoder().decode(PageEnvelope.self, from: Data(bytes))
            let reference = decoded?.protocol == SyncJSON.protocolVersion ? decoded?.message : nil
            #expect(fast == reference, "\(String(decoding: bytes, as: UTF8.self))")
            if fast != nil { read += 1 }
            // A record's kept state: the first record of the page, cut out as the page spells it.
            if let start = bytes.firstRange(of: Array(#""record":"#.utf8))?.upperBound, let end = bytes[start...].firstRange(of: Array(#"},{"entity""#.utf8))?.lowerBound {
                let state = Array(bytes[start..<end])
                #expect((try? SyncJSON.decode(record: state)) == (try? JSONDecoder().decode(SyncRecord.self, from: Data(state))), "\(String(decoding: state, as: UTF8.self))")
            }
        }
        #expect(read > respelled.count, "some damaged pages still read")
    }
}
