import Foundation
import TestSupport
import Testing

/// Functions a person can hold in their head: none in Sources is longer than 80 lines, outside
/// generated code.
@Suite struct FunctionLengthTests {
    static let limit = 80

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
        for file in swiftFiles(under: sources.path) where !file.hasPrefix("Examples/ExampleModels/") && !file.hasSuffix("EmbeddedTemplates.swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for function in Self.functions(in: text) where function.length > Self.limit {
                Issue.record("\(file):\(function.line): \(function.name) is \(function.length) lines, over \(Self.limit); split it")
            }
        }
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
