import Diagnostics
import Foundation
import TestSupport
import Testing

@testable import SchemaKit

/// Hostile input gets a diagnostic, never a crash, a hang or runaway memory.
@Suite struct HostileInputTests {
    func firstError(_ result: SchemaLoader.FileResult) -> Diagnostic? {
        result.diagnostics.first { $0.severity == .error }
    }

    @Test func emptyFile() {
        #expect(codes(load("")) == ["1:1 empty-schema"])
        #expect(codes(load("# only a comment\n")) == ["1:1 empty-schema"])
    }

    @Test func binaryGarbage() {
        // Seeded, and the seed printed on failure: SCHEMAGEN_TEST_SEED=<seed> repeats the run.
        let seed = SeededGenerator.seed(default: 0x6A_4B_A6E)
        var generator = SeededGenerator(seed: seed)
        for round in 0..<50 {
            let bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let result = SchemaLoader.load(source: SourceFile(path: "garbage.bin", bytes: bytes))
            #expect(result.schema == nil, "seed \(seed), round \(round)")
            #expect(firstError(result) != nil, "seed \(seed), round \(round)")
        }
    }

    @Test func invalidUTF8NamesTheByte() {
        let bytes = Array("schema: S\nversion: 1\nentities:\n  A:\n    attributes:\n      na".utf8) + [0xC3, 0x28] + Array("me: String\n".utf8)
        let result = SchemaLoader.load(source: SourceFile(path: "latin1.yaml", bytes: bytes))
        let error = firstError(result)
        #expect(error?.code == "yaml-syntax")
        #expect(error?.message.contains("not valid UTF-8") == true)
        #expect(error?.location?.line == 6)
    }

    @Test func nulByte() {
        let result = SchemaLoader.load(source: SourceFile(path: "nul.yaml", bytes: Array("schema: S\n".utf8) + [0] + Array("version: 1\n".utf8)))
        #expect(firstError(result)?.message.contains("control character") == true)
    }

    @Test func tabsInIndentation() {
        let result = load("schema: S\nversion: 1\nentities:\n\tA: {}\n")
        #expect(firstError(result)?.message.contains("tab") == true)
    }

    @Test func deeplyNestedFlowDocument() {
        let depth = 100_000
        let yaml = "schema: S\nversion: 1\nentities: " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "\n"
        #expect(firstError(load(yaml))?.code == "nesting-too-deep")
    }

    @Test func deeplyNestedBlockDocument() {
        var yaml = "schema: S\nversion: 1\nentities:\n"
        for level in 0..<2_000 { yaml += String(repeating: " ", count: level + 1) + "k\(level):\n" }
        #expect(firstError(load(yaml))?.code == "nesting-too-deep")
    }

    @Test func aliasExpansionBomb() {
        var yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1..<12 {
            let previous = Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ")
            yaml += "a\(level): &a\(level) [\(previous)]\n"
        }
        let result = load(yaml)
        #expect(firstError(result)?.code == "alias-expansion-too-large")
    }

    @Test func unknownAnchor() {
        #expect(firstError(load("schema: *nothing\n"))?.code == "unknown-anchor")
    }

    @Test func multipleDocuments() {
        let yaml = "schema: S\nversion: 1\nentities: {A: {attributes: {x: Int}}}\n---\nschema: T\n"
        #expect(firstError(load(yaml))?.code == "multiple-documents")
    }

    @Test func fiftyMegabyteFileIsRefusedBeforeReading() throws {
        let path = temporaryFolder().path + "/huge.yaml"
        let handle = try FileManagerHelpers.create(path)
        let line = Data("# padding padding padding padding padding padding padding padding\n".utf8)
        var chunk = Data()
        for _ in 0..<16_384 { chunk.append(line) }
        while (try handle.offset()) < 50 * 1024 * 1024 { handle.write(chunk) }
        try handle.close()
        let result = SchemaLoader.load(file: path)
        #expect(result.diagnostics.map(\.code) == ["file-too-large"])
        #expect(result.source == nil)
    }

    @Test func largeValidSchemaLoads() {
        var yaml = "schema: Big\nversion: 1\nentities:\n"
        for entity in 0..<300 {
            yaml += "  E\(entity):\n    attributes:\n"
            for attribute in 0..<20 { yaml += "      a\(attribute): {type: String?, indexed: \(attribute == 0)}\n" }
        }
        let result = load(yaml)
        #expect(result.diagnostics.isEmpty)
        #expect(result.schema?.entities.count == 300)
    }

    /// Wide schemas stay linear: every lookup by name goes through an index, never a scan
    /// inside a loop (which would turn these into billions of comparisons).
    @Test func wideSchemasLoadInLinearTime() {
        let count = 20_000
        var yaml = "schema: Wide\nversion: 1\nvalues:\n"
        for i in 0..<count { yaml += "  V\(i): {next: \(i + 1 < count ? "V\(i + 1)" : "Int")}\n" }
        yaml += "entities:\n  E:\n    attributes:\n      v: V0\n"
        for i in 0..<count { yaml += "      a\(i): Int\n" }
        yaml += "    relationships:\n"
        for i in 0..<count / 2 { yaml += "      r\(i): {to: E?, inverse: s\(i)}\n      s\(i): \"[E]\"\n" }
        yaml += "    indexes: [[" + (0..<count).map { "a\($0)" }.joined(separator: ", ") + "]]\n"
        let result = load(yaml)
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics.prefix(3))")
        #expect(result.schema?.entities.first?.relationships.count == count)
    }

    /// Large schemas are read in slices on several cores; what is found, and in what order,
    /// must not depend on where the slices fall. Problems are spread over the whole file, and
    /// each is expected at its own line.
    @Test func slicedReadingReportsEveryProblemInSourceOrder() {
        let count = 400
        var yaml = "schema: Sliced\nversion: 1\nentities:\n"
        var line = 4
        var expected: [String] = []
        for i in 0..<count {
            yaml += "  E\(i):\n    attributes:\n      name: String\n"
            line += 3
            switch i % 50 {
            case 7:
                yaml += "      other: {type: Strin}\n"
                expected.append("\(line) unknown-type")
            case 19:
                yaml += "      title: {type: String, column: name}\n"
                expected.append("\(line) name-collision")
            case 33:
                yaml += "      flag: {type: Bool, unique: yes}\n"
                expected.append("\(line) wrong-kind")
            default:
                yaml += "      count: Int\n"
            }
            line += 1
            yaml += "    relationships:\n      next: {to: E\((i + 1) % count)?, inverse: previous}\n      previous: \"[E\((i + count - 1) % count)]\"\n"
            line += 3
        }
        let found = load(yaml).diagnostics.map { "\($0.location?.line ?? 0) \($0.code)" }
        #expect(found == expected)
    }

    @Test func directoryWithNoSchemas() throws {
        let directory = temporaryFolder().path
        try FileManagerHelpers.write("not a schema", to: directory + "/README.txt")
        #expect(SchemaDiscovery.files(in: [directory]) == .failure(.noSchemas(directory)))
        #expect(SchemaDiscovery.files(in: [directory + "/missing"]) == .failure(.missing(directory + "/missing")))
    }

    @Test func aDirectoryGivenAsAFile() {
        let directory = temporaryFolder().path
        #expect(SchemaLoader.load(file: directory).diagnostics.map(\.code) == ["file-unreadable"])
    }
}

enum FileManagerHelpers {
    static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func create(_ path: String) throws -> FileHandle {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    }
}
