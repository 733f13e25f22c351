import CZlib

/// gzip (RFC 1952) through the system's zlib, for bodies sent over HTTP
/// (`Content-Encoding: gzip`). Reading is bounded: a small body that would inflate past the
/// limit (a "zip bomb") is refused before it takes the memory.
///
///     let packed = try Gzip.compress(Array(json.utf8))
///     let unpacked = try Gzip.decompress(packed, limit: 16 << 20)
public enum Gzip {
    /// Compresses `bytes` into one gzip member.
    ///
    ///     let packed = try Gzip.compress([UInt8](repeating: 65, count: 1_000))
    public static func compress(_ bytes: [UInt8], level: Int32 = Z_DEFAULT_COMPRESSION) throws(GzipError) -> [UInt8] {
        var stream = z_stream()
        // 15 + 16: the largest window, with a gzip header and trailer.
        var status = deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw .zlib("deflateInit2 returned \(status)") }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 32)
        var input = bytes
        status = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw .zlib("deflate returned \(status)") }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// Inflates gzip `bytes`; refuses what is not gzip, is cut short, fails its checksum, or would
    /// be larger than `limit` bytes.
    ///
    ///     let json = try Gzip.decompress(body, limit: 16 << 20)
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(GzipError) -> [UInt8] {
        var stream = z_stream()
        // 15 + 16: gzip only, so a raw or zlib stream is refused as not gzip.
        var status = inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw .zlib("inflateInit2 returned \(status)") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = bytes
        status = Z_OK
        try input.withUnsafeMutableBufferPointer { (source: inout UnsafeMutableBufferPointer<UInt8>) throws(GzipError) in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            while status != Z_STREAM_END {
                status = chunk.withUnsafeMutableBufferPointer { target in
                    stream.next_out = target.baseAddress
                    stream.avail_out = uInt(target.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                guard output.count + produced <= limit else { throw .tooLarge(limit: limit) }
                output.append(contentsOf: chunk[..<produced])
                switch status {
                case Z_OK, Z_STREAM_END: continue
                // No progress: the input ended before the stream did.
                case Z_BUF_ERROR where stream.avail_in == 0 || produced == 0: throw .truncated
                case Z_BUF_ERROR: continue
                default: throw .corrupt(stream.msg.map { String(cString: $0) } ?? "zlib error \(status)")
                }
            }
        }
        guard stream.avail_in == 0 else { throw .corrupt("\(stream.avail_in) bytes follow the gzip data") }
        return output
    }
}

/// Why gzip data could not be read or written.
public enum GzipError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not gzip, or damaged (a bad header, block or checksum).
    case corrupt(String)
    /// The data ends before the gzip stream does.
    case truncated
    /// It inflates past the limit given.
    case tooLarge(limit: Int)
    /// zlib itself failed (out of memory).
    case zlib(String)

    /// What went wrong.
    public var description: String {
        switch self {
        case .corrupt(let reason): "the gzip data is damaged or not gzip: \(reason)"
        case .truncated: "the gzip data is cut short"
        case .tooLarge(let limit): "the gzip data inflates past \(limit) bytes"
        case .zlib(let reason): "zlib failed: \(reason)"
        }
    }
}
