import Foundation
import TestSupport
import Testing

/// Functions a person can hold in their head: none in Sources is longer than 80 lines, outside
/// generated code. The functions that were longer when the rule came are listed with their
/// length; each may only shrink, and one that fits is taken off the list (a ratchet), so the
/// list only gets shorter.
@Suite struct FunctionLengthTests {
    static let limit = 80

    /// Longer than the limit when the rule came (file, function: lines). Shorten, never add.
    static let knownLong: [String: Int] = [
        "Tools/SchemaKit/SchemaParser+Defaults.swift checkValue": 119,
        "Tools/SchemaImport/PostgresCatalogue.swift read": 119,
        "Tools/CodeGeneration/Generator.swift generateSwiftData": 110,
        "Runtime/MigratorCore/Migrator+Online.swift runBackfill": 102,
        "Tools/CodeGeneration/SwiftDataStages.swift carryRenamedEntity": 99,
        "Tools/SchemaImport/CoreDataSchemaBuilder.swift build": 97,
        "Tools/SchemagenPipeline/GenerationPipeline+Run.swift stages": 96,
        "Tools/SchemaImport/CoreDataImporter.swift readModel": 95,
        "Engines/PostgresKit/PostgresConnection.swift statements": 95,
        "Tools/Mustache/Parser.swift tokenize": 90,
        "Benchmarks/store-benchmark/StoreBenchmark.swift raw": 89,
        "Tools/SchemaKit/SchemaParser+Validation.swift checkMemberNames": 87,
        "Tools/SchemaKit/SchemaParser+Entities.swift checkAttributeOptions": 87,
        "Tools/SchemaImport/CoreDataSchemaBuilder.swift attribute": 86,
        "Tools/SchemaImport/SchemaYAMLWriter.swift yaml": 85,
        "Runtime/PersistentStoreCore/Store+Encryption.swift prepareRow": 85,
        "Tools/ProjectConfig/ProjectConfig.swift load": 84,
        "Tools/CommandLineKit/ArgumentParser.swift parse": 83,
        "Runtime/PersistentStoreCore/Store+Pipelining.swift pipelineUpserts": 82,
        "Tools/MigrationPlanner/OnlinePlan.swift plan": 81,
    ]

    /// Every function and initializer of a file with its first line and length in lines, from
    /// its declaration to its closing brace. Braces in strings and comments are not counted.
    static func functions(in text: String) -> [(name: String, line: Int, length: Int)] {
        let lines = text.components(separatedBy: "\n")
        var found: [(String, Int, Int)] = []
        var index = 0
        while index < lines.count {
            guard let name = declaredFunction(lines[index]) else {
                index += 1
                continue
            }
            var depth = 0, opened = false, end = index, inMultilineString = false
            scan: while end < lines.count {
                let line = lines[end]
                if line.components(separatedBy: "\"\"\"").count % 2 == 0 { inMultilineString.toggle() }
                if !inMultilineString || line.contains("\"\"\"") {
                    for character in codeOnly(line) {
                        if character == "{" {
                            depth += 1
                            opened = true
                        } else if character == "}" {
                            depth -= 1
                        }
                        if opened && depth == 0 { break scan }
                    }
                }
                // A requirement without a body ends at its line.
                if !opened && end > index + 8 { break }
                end += 1
            }
            if opened { found.append((name, index + 1, end - index + 1)) }
            index = opened ? end + 1 : index + 1
        }
        return found
    }

    /// The name of the function or initializer a line declares, if it declares one.
    static func declaredFunction(_ line: String) -> String? {
        guard line.contains("func ") || line.contains("init") else { return nil }
        let code = line.trimmingCharacters(in: .whitespaces)
        guard
            let match = code.firstMatch(
                of: /^(?:@[\w()]+\s+)*(?:(?:public|private|fileprivate|internal|static|mutating|override|final|nonisolated|class|@discardableResult)\s+)*(func\s+([^\s(<]+)|init)[?!]?[(<]/)
        else {
            return nil
        }
        return match.2.map(String.init) ?? "init"
    }

    /// A line without its string literals and its comment.
    static func codeOnly(_ line: String) -> String {
        var out = "", inString = false, escaped = false, previous: Character = " "
        for character in line {
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
            } else if character == "\"" {
                inString = true
            } else if character == "/" && previous == "/" {
                out.removeLast()
                break
            } else {
                out.append(character)
            }
            previous = character
        }
        return out
    }

    @Test func noFunctionIsLongerThanTheLimit() throws {
        let sources = repositoryRoot.appendingPathComponent("Sources")
        var measured: [String: Int] = [:]
        for file in swiftFiles(under: sources.path) where !file.hasPrefix("Examples/ExampleModels/") && !file.hasSuffix("EmbeddedTemplates.swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for function in Self.functions(in: text) where function.length > Self.limit {
                let key = "\(file) \(function.name)"
                measured[key] = max(measured[key] ?? 0, function.length)
                if let known = Self.knownLong[key] {
                    #expect(function.length <= known, "\(file):\(function.line): \(function.name) grew to \(function.length) lines (it was \(known)); split it")
                } else {
                    #expect(Bool(false), "\(file):\(function.line): \(function.name) is \(function.length) lines, over \(Self.limit); split it")
                }
            }
        }
        for key in Self.knownLong.keys.sorted() where measured[key] == nil {
            Issue.record("\(key) fits in \(Self.limit) lines now (or is gone): take it off FunctionLengthTests.knownLong")
        }
        #expect(Self.knownLong.count <= 20, "the list only shrinks")
    }

    /// The measure itself: a function's length runs from its declaration to its closing
    /// brace, and braces in strings and comments do not count.
    @Test func lengthsAreMeasuredFromDeclarationToClosingBrace() {
        let text = """
            struct S {
                func short() {
                    let text = "{ not a brace"  // } nor this
                }

                public static func longer(_ x: Int) -> Int {
                    if x > 0 {
                        return 1
                    }
                    return 0
                }
                func requirement()
            }
            """
        let found = Self.functions(in: text)
        #expect(found.map(\.name) == ["short", "longer"])
        #expect(found.map(\.length) == [3, 6])
    }
}
