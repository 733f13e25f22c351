import Foundation
import SchemaMetadata
import TestSupport
import Testing

@testable import RelationalModel

/// Snapshots are read by a reader made for their shape, with `JSONDecoder` deciding whatever
/// that reader does not expect: both must always agree.
@Suite struct SnapshotReaderTests {
    /// Every kind of value a snapshot holds, with strings that need escapes.
    static let everything = SchemaSnapshot(
        schema: "Everything", version: 12,
        tables: [
            TableSnapshot(
                name: "tricky \"name\" \\ / \u{1F600} é", entity: "Tricky", renamedFrom: "Old\nName",
                columns: [
                    ColumnSnapshot(name: "id", property: nil, renamedFrom: nil, kind: .integer, isNullable: false, defaultValue: nil, isAutoIncrement: true),
                    ColumnSnapshot(name: "a", property: "a", renamedFrom: "before", kind: .text, isNullable: true, defaultValue: .null, isAutoIncrement: false),
                    ColumnSnapshot(name: "b", property: "b", renamedFrom: nil, kind: .integer, isNullable: false, defaultValue: .integer(-9_223_372_036_854_775_808), isAutoIncrement: false, bits: 16),
                    ColumnSnapshot(name: "c", property: "c", renamedFrom: nil, kind: .real, isNullable: false, defaultValue: .real(-1.25e-7), isAutoIncrement: false, bits: 32),
                    ColumnSnapshot(
                        name: "d", property: "d", renamedFrom: nil, kind: .text, isNullable: false, defaultValue: .text("tab\tquote\"\u{0}\u{1F}end"), isAutoIncrement: false,
                        enumValues: ["x", "y z", ""]),
                    ColumnSnapshot(name: "e", property: "e", renamedFrom: nil, kind: .blob, isNullable: false, defaultValue: .blob("00ff10"), isAutoIncrement: false),
                    ColumnSnapshot(name: "f", property: "f", renamedFrom: nil, kind: .date, isNullable: false, defaultValue: .now, isAutoIncrement: false),
                    ColumnSnapshot(name: "g", property: "g", renamedFrom: nil, kind: .uuid, isNullable: false, defaultValue: .uuid, isAutoIncrement: false),
                    ColumnSnapshot(name: "h", property: "h", renamedFrom: nil, kind: .real, isNullable: false, defaultValue: .real(3), isAutoIncrement: false),
                ], primaryKey: ["id"],
                indexes: [
                    IndexSnapshot(name: "i1", columns: ["a", "b"], isUnique: true, isFullText: false),
                    IndexSnapshot(name: "i2", columns: ["d"], isUnique: false, isFullText: true),
                ],
                foreignKeys: [
                    ForeignKeySnapshot(columns: ["b"], table: "other", referencedColumns: ["id"], onDelete: .setNull),
                    ForeignKeySnapshot(columns: ["c"], table: "other", referencedColumns: ["id"], onDelete: .noAction),
                ]),
            TableSnapshot(name: "link", entity: nil, renamedFrom: nil, columns: [], primaryKey: [], indexes: [], foreignKeys: []),
        ])

    /// `everything` with every optional field set, both backfill forms and grants.
    static var allOptionals: SchemaSnapshot {
        var snapshot = everything
        snapshot.format = 2
        snapshot.grants = [GrantSnapshot(role: "app \"readers\"", access: .read), GrantSnapshot(role: "writer", access: .write)]
        snapshot.tables[0].doc = "A table\nwith a doc"
        snapshot.tables[0].columns[1].doc = "a column's doc"
        snapshot.tables[0].columns[1].movedFrom = "elsewhere"
        snapshot.tables[0].columns[1].backfill = .sql(["sqlite": "'x' || \"a\"", "postgres": "upper(a)"])
        snapshot.tables[0].columns[2].backfill = .value(.integer(7))
        snapshot.tables[0].columns[3].backfill = .value(.real(0.1))
        snapshot.tables[0].columns[3].precision = 10
        snapshot.tables[0].columns[3].scale = 2
        snapshot.tables[0].indexes[1].jsonColumns = ["d"]
        return snapshot
    }

    /// The same JSON value as `JSONEncoder` writes (keys, nesting, enum cases), only laid out
    /// otherwise; each column, index and key on a line of its own.
    @Test func canonicalJSONIsJSONEncodersValueOneColumnPerLine() throws {
        for snapshot in [Self.everything, Self.allOptionals] {
            let canonical = try snapshot.canonicalJSON()
            let encoded = try JSONEncoder().encode(snapshot)
            let tree = try #require(try JSONSerialization.jsonObject(with: canonical) as? NSDictionary)
            let encoderTree = try #require(try JSONSerialization.jsonObject(with: encoded) as? NSDictionary)
            #expect(tree == encoderTree)
            #expect(try JSONDecoder().decode(SchemaSnapshot.self, from: canonical) == snapshot)
            #expect(Self.fast(canonical) == snapshot)
            let lines = String(decoding: canonical, as: UTF8.self).components(separatedBy: "\n")
            let columnLines = lines.filter { $0.hasPrefix("        {") && $0.contains("\"isNullable\"") }
            #expect(columnLines.count == snapshot.tables.reduce(0) { $0 + $1.columns.count }, "one line per column")
            #expect(String(decoding: canonical, as: UTF8.self).hasSuffix("}\n"))
        }
        var infinite = Self.everything
        infinite.tables[0].columns[3].defaultValue = .real(.infinity)
        #expect(throws: EncodingError.self) { try infinite.canonicalJSON() }
    }

    static func fast(_ data: Data) -> SchemaSnapshot? {
        data.withUnsafeBytes { raw in
            var reader = SnapshotReader(bytes: raw.bindMemory(to: UInt8.self))
            return reader.snapshot()
        }
    }

    @Test func everyKindOfValueReadsBackAsJSONDecoderReadsIt() throws {
        for data in [try Self.everything.canonicalJSON(), try JSONEncoder().encode(Self.everything)] {
            let fast = try #require(Self.fast(data), "the reader took the fallback")
            #expect(fast == Self.everything)
            #expect(fast == (try JSONDecoder().decode(SchemaSnapshot.self, from: data)))
        }
    }

    @Test func everyCommittedSnapshotReadsTheSameBothWays() throws {
        let root = repositoryRoot.appendingPathComponent("Migrations")
        let files = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".schema.json") } ?? []
        #expect(files.count >= 10)
        for file in files {
            let data = try Data(contentsOf: root.appendingPathComponent(file))
            let fast = try #require(Self.fast(data), "\(file): the reader took the fallback")
            #expect(fast == (try JSONDecoder().decode(SchemaSnapshot.self, from: data)), "\(file)")
        }
    }

    /// Hand-edited and damaged files: the reader declines, and `decode` answers what
    /// `JSONDecoder` answers, a snapshot or an error.
    @Test func whatTheReaderDoesNotExpectGoesToJSONDecoder() throws {
        let canonical = String(decoding: try Self.everything.canonicalJSON(), as: UTF8.self)
        let edits: [String] = [
            canonical.replacingOccurrences(of: "\"schema\": \"Everything\"", with: "\"comment\": \"added by hand\",\n  \"schema\": \"Everything\""),
            canonical.replacingOccurrences(of: "\"version\": 12", with: "\"version\": 12, \"version\": 13"),
            canonical.replacingOccurrences(of: "\"version\": 12", with: "\"version\": 12.0"),
            canonical.replacingOccurrences(of: "\"kind\": \"blob\"", with: "\"kind\": \"bytes\""),
            String(canonical.dropLast(40)),
            canonical + "]",
            "",
            "null",
        ]
        for edit in edits {
            let data = Data(edit.utf8)
            #expect(Self.fast(data) == nil, "\(edit.prefix(80))")
            let viaDecode = Result { try SchemaSnapshot.decode(data) }
            let viaFoundation = Result { try JSONDecoder().decode(SchemaSnapshot.self, from: data) }
            switch (viaDecode, viaFoundation) {
            case (.success(let a), .success(let b)): #expect(a == b)
            case (.failure, .failure): break
            default: Issue.record("decode and JSONDecoder disagree on \(edit.prefix(80))")
            }
        }
        var invalid = Array(try Self.everything.canonicalJSON())
        let position = try #require(invalid.firstIndex(of: UInt8(ascii: "E")))
        invalid[position] = 0xFF
        #expect(Self.fast(Data(invalid)) == nil, "invalid UTF-8 is not read past")
        #expect(throws: (any Error).self) { try SchemaSnapshot.decode(Data(invalid)) }
    }

    /// Random bytes flipped in a real snapshot never crash the reader, and what it reads
    /// matches `JSONDecoder`.
    @Test func damagedSnapshotsNeverCrashAndAgree() throws {
        let original = Array(try Self.everything.canonicalJSON())
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            let data = Data(bytes)
            if let fast = Self.fast(data) {
                #expect(fast == (try? JSONDecoder().decode(SchemaSnapshot.self, from: data)))
            }
        }
    }
}
