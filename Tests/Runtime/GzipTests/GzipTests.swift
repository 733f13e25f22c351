import CZlib
import Foundation
import Gzip
import Testing

/// gzip against zlib's own format and the system's `gzip`: round trips, and damaged, cut or
/// swollen input refused with the reason, never a crash or a body past its limit.
struct GzipTests {
    @Test func roundTripsAnySizeAndMatchesTheSystemsGzip() throws {
        var generator = SystemRandomNumberGenerator()
        for size in [0, 1, 100, 65_535, 65_536, 300_000] {
            let bytes = (0..<size).map { index in UInt8(truncatingIfNeeded: index % 7 == 0 ? Int.random(in: 0..<256, using: &generator) : index / 3) }
            let packed = try Gzip.compress(bytes)
            #expect(packed.starts(with: [0x1f, 0x8b]), "a gzip header")
            #expect(try Gzip.decompress(packed, limit: size) == bytes, "size \(size)")
        }
        // The system's gzip reads what this writes, and this reads what it writes.
        let text = Array(String(repeating: "{\"title\":\"Milk\"},", count: 2_000).utf8)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gzip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body.json")
        try Data(Gzip.compress(text)).write(to: file.appendingPathExtension("gz"))
        let gunzip = try run("/bin/gzip", ["-dkf", file.path + ".gz"])
        let unpacked = try Data(contentsOf: file)
        #expect(gunzip == 0 && unpacked == Data(text))
        try Data("system".utf8).write(to: file)
        #expect(try run("/bin/gzip", ["-f", file.path]) == 0)
        #expect(try Gzip.decompress(Array(Data(contentsOf: file.appendingPathExtension("gz"))), limit: 100) == Array("system".utf8))
        #expect(text.count > 10 * (try Gzip.compress(text)).count, "JSON this repetitive shrinks tenfold")
    }

    @Test func damagedCutOrSwollenInputIsRefused() throws {
        let body = Array(String(repeating: "sync ", count: 5_000).utf8)
        let packed = try Gzip.compress(body)
        #expect(throws: GzipError.truncated) { try Gzip.decompress(Array(packed.dropLast(10)), limit: 1 << 20) }
        #expect(throws: GzipError.tooLarge(limit: 1_000)) { try Gzip.decompress(packed, limit: 1_000) }
        #expect(throws: GzipError.self) { try Gzip.decompress(Array("not gzip at all".utf8), limit: 1 << 20) }
        #expect(throws: GzipError.self) { try Gzip.decompress(packed + [1, 2, 3], limit: 1 << 20) }
        // A bomb: 50 MB of zeros packs into about 50 kB, and is refused at the limit.
        let bomb = try Gzip.compress([UInt8](repeating: 0, count: 50 << 20))
        #expect(bomb.count < 100_000)
        #expect(throws: GzipError.tooLarge(limit: 1 << 20)) { try Gzip.decompress(bomb, limit: 1 << 20) }
        // Random damage: every result is the body, or an error; none crashes or passes the limit.
        var refused = 0
        for round in 0..<3_000 {
            var damaged = packed
            for _ in 0...(round % 4) { damaged[Int.random(in: 0..<damaged.count)] = UInt8.random(in: 0...255) }
            if round % 5 == 0 { damaged = Array(damaged.prefix(Int.random(in: 0..<damaged.count))) }
            do {
                let read = try Gzip.decompress(damaged, limit: body.count)
                #expect(read.count <= body.count)
            } catch {
                refused += 1
            }
        }
        #expect(refused > 2_500, "the CRC catches damage: \(refused) of 3000 refused")
    }

    private func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
