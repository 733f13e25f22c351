#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
/// The text of one input file, kept so diagnostics can quote the offending line.
public struct SourceFile: Sendable {
    /// The path as shown to users (as given on the command line, or relative to it).
    public let path: String
    /// The file's raw contents.
    public let bytes: [UInt8]
    /// Byte offset at which each line starts; line N (1-based) starts at `lineStarts[N - 1]`.
    private let lineStarts: [Int]

    /// Wraps a file's contents and indexes where each line starts.
    ///
    ///     let source = SourceFile(path: "Schemas/Flights.yaml", bytes: Array(data))
    public init(path: String, bytes: [UInt8]) {
        self.path = path
        self.bytes = bytes
        // Found with memchr: a large schema has tens of thousands of lines, and this runs
        // before anything else can.
        var starts = [0]
        starts.reserveCapacity(bytes.count / 32)
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count, let found = memchr(base + offset, Int32(UInt8(ascii: "\n")), buffer.count - offset) {
                let index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                starts.append(index + 1)
                offset = index + 1
            }
        }
        self.lineStarts = starts
    }

    /// Wraps text, stored as its UTF-8 bytes.
    ///
    ///     let source = SourceFile(path: "Flights.yaml", text: "entities:\n  Flight: {}\n")
    public init(path: String, text: String) {
        self.init(path: path, bytes: Array(text.utf8))
    }

    /// The number of lines; text after the last line break counts as a line, even when empty.
    public var lineCount: Int { lineStarts.count }

    /// The text of a 1-based line without its line break; invalid UTF-8 is replaced, never fatal.
    public func line(_ number: Int) -> String? {
        guard number >= 1, number <= lineStarts.count else { return nil }
        let start = lineStarts[number - 1]
        var end = number < lineStarts.count ? lineStarts[number] - 1 : bytes.count
        if end > start, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        guard end >= start else { return "" }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
