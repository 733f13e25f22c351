import Foundation
import JSONDocument
import SchemaMetadata

/// The sync messages as JSON, and read back with limits. A message that is not one says where
/// and why (`SyncMessageError`), and one too large or of another protocol version is refused
/// before it is read.
///
///     let body = try SyncJSON.encode(push)
///     let push = try SyncJSON.decode(SyncPush.self, from: body)
public enum SyncJSON {
    /// The protocol version this build speaks, written into every message.
    public static let protocolVersion = 1

    /// The largest message read, and the most records one may hold.
    public struct Limits: Sendable, Hashable {
        /// The most bytes a message may have.
        public var maximumBytes: Int
        /// The most changes a push, or records a pull answer, may hold.
        public var maximumRecords: Int

        /// Limits; the defaults suit a phone's push and a page of a first sync.
        ///
        ///     let limits = SyncJSON.Limits(maximumBytes: 1 << 20, maximumRecords: 1_000)
        public init(maximumBytes: Int = 16 << 20, maximumRecords: Int = 10_000) {
            self.maximumBytes = maximumBytes
            self.maximumRecords = maximumRecords
        }
    }

    /// The message as compact JSON, with sorted keys so equal messages are equal bytes.
    ///
    ///     let body = try SyncJSON.encode(push)
    public static func encode<Message: SyncMessage>(_ message: Message) throws(SyncMessageError) -> [UInt8] {
        var writer = SyncJSONWriter(capacity: 1_024)
        try writer.envelope { (writer: inout SyncJSONWriter) throws(SyncMessageError) in
            switch message {
            case let push as SyncPush: try writer.push(push)
            case let answer as SyncPushAnswer: try writer.pushAnswer(answer)
            case let pull as SyncPull: writer.pull(pull)
            case let answer as SyncPullAnswer: try writer.pullAnswer(answer)
            default: throw SyncMessageError(path: "", problem: "\(Message.self) is no message of the sync protocol")
            }
        }
        return writer.bytes
    }

    /// A record from its JSON (a record's state as a node keeps it).
    ///
    ///     let record = try SyncJSON.decode(record: Array(text.utf8))
    package static func decode(record bytes: [UInt8]) throws(SyncMessageError) -> SyncRecord {
        if let record = SyncJSONScanner.record(bytes) { return record }
        if let node = try? JSONParser.parse(bytes), let record = SyncJSONReader.record(node) { return record }
        do {
            return try JSONDecoder().decode(SyncRecord.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw SyncMessageError(error)
        } catch {
            throw SyncMessageError(path: "", problem: "is not JSON: \(error)")
        }
    }

    /// A record as JSON, as messages spell it: a record's state as a node keeps it.
    ///
    ///     let text = try SyncJSON.encode(record: record)
    package static func encode(record: SyncRecord) throws(SyncMessageError) -> [UInt8] {
        var writer = SyncJSONWriter()
        try writer.record(record)
        return writer.bytes
    }

    /// The message `bytes` hold; refuses one over `limits`, of another protocol version, or not
    /// one at all, saying where.
    public static func decode<Message: SyncMessage>(_ type: Message.Type, from bytes: [UInt8], limits: Limits = Limits()) throws(SyncMessageError) -> Message {
        guard bytes.count <= limits.maximumBytes else {
            throw SyncMessageError(path: "", problem: "is \(bytes.count) bytes, over the limit of \(limits.maximumBytes): send fewer changes at a time")
        }
        // The large messages (a push, a page) read fast when well formed; anything else, and
        // anything the fast reader does not take, is read by the decoders that say what is wrong.
        if let message = SyncJSONReader.read(type, from: bytes) {
            if message.recordCount > limits.maximumRecords {
                throw SyncMessageError(path: "", problem: "holds \(message.recordCount) records, over the limit of \(limits.maximumRecords)")
            }
            return message
        }
        let decoder = JSONDecoder()
        let envelope: Envelope<Message>
        do {
            envelope = try decoder.decode(Envelope<Message>.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw SyncMessageError(error)
        } catch let error as SyncMessageError {
            throw error
        } catch {
            throw SyncMessageError(path: "", problem: "is not JSON: \(error)")
        }
        if envelope.message.recordCount > limits.maximumRecords {
            throw SyncMessageError(path: "", problem: "holds \(envelope.message.recordCount) records, over the limit of \(limits.maximumRecords)")
        }
        return envelope.message
    }

    /// A message with the protocol version beside it, checked before the message is read.
    struct Envelope<Message: SyncMessage>: Codable {
        var message: Message

        enum Keys: String, CodingKey { case `protocol`, message }

        init(message: Message) { self.message = message }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            let version = try container.decode(Int.self, forKey: .protocol)
            guard version == SyncJSON.protocolVersion else {
                let older = version > SyncJSON.protocolVersion ? "this side" : "the side that sent it"
                throw SyncMessageError(
                    path: "protocol", problem: "is \(version), but this side speaks sync protocol \(SyncJSON.protocolVersion): \(older) is older; update it")
            }
            message = try container.decode(Message.self, forKey: .message)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(SyncJSON.protocolVersion, forKey: .protocol)
            try container.encode(message, forKey: .message)
        }
    }
}

/// A message of the sync protocol.
public protocol SyncMessage: Codable, Sendable {
    /// How many records it holds, for the limit.
    var recordCount: Int { get }
}

/// A message that is not what it should be: where (a path such as `changes[2].change.clocks.title`)
/// and what is wrong there.
public struct SyncMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where, from the message's root; empty for the whole message.
    public var path: String
    /// What is wrong there.
    public var problem: String

    /// An error at a path.
    ///
    ///     throw SyncMessageError(path: "sequence", problem: "is negative")
    public init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }

    init(_ error: DecodingError) {
        func spelled(_ path: [any CodingKey]) -> String {
            path.reduce(into: "") { text, key in
                if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
            }
        }
        switch error {
        case .keyNotFound(let key, let context): self.init(path: spelled(context.codingPath + [key]), problem: "is missing")
        case .typeMismatch(let type, let context): self.init(path: spelled(context.codingPath), problem: "is not \(Self.kind(type))")
        case .valueNotFound(let type, let context): self.init(path: spelled(context.codingPath), problem: "is null, where \(Self.kind(type)) belongs")
        case .dataCorrupted(let context):
            self.init(path: spelled(context.codingPath), problem: context.codingPath.isEmpty ? "is not JSON" : context.debugDescription)
        @unknown default: self.init(path: "", problem: "\(error)")
        }
    }

    /// A type as the error names it.
    private static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "text"
        case is Int.Type, is Int64.Type: "an integer"
        case is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: "what belongs there (\(type))"
        }
    }

    /// The error as one sentence: where, then what.
    public var description: String { path.isEmpty ? "the sync message \(problem)" : "the sync message's \(path) \(problem)" }
}
