import Foundation
import TestSupport
import Testing

/// The pages stay readable: no line over 200 characters outside code blocks (tables included),
/// a heading at least every 60 lines, and no project log (issue numbers mean nothing to a reader).
@Suite struct ReadablePagesTests {
    static let pages: [String] =
        ["README.md", "CHANGELOG.md"]
        + ((try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.path + "/docs")) ?? []).filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }

    /// Each line outside fenced code, with its 1-based number.
    static func proseLines(of page: String) throws -> [(number: Int, text: String)] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent(page), encoding: .utf8)
        var inCode = false
        var lines: [(Int, String)] = []
        for (offset, line) in text.components(separatedBy: "\n").enumerated() {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inCode.toggle()
                continue
            }
            if !inCode { lines.append((offset + 1, line)) }
        }
        return lines
    }

    @Test(arguments: pages) func linesAreShort(_ page: String) throws {
        let long = try Self.proseLines(of: page).filter { $0.text.count > 200 }.map { "\(page):\($0.number) (\($0.text.count) characters)" }
        #expect(long.isEmpty, "lines over 200 characters outside code: \(long)")
    }

    @Test(arguments: pages) func headingsComeOften(_ page: String) throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent(page), encoding: .utf8)
        let count = text.components(separatedBy: "\n").count
        let headings = try Self.proseLines(of: page).filter { $0.text.hasPrefix("#") }.map(\.number)
        var gaps: [String] = []
        for (previous, next) in zip([0] + headings, headings + [count]) where next - previous > 60 {
            gaps.append("\(page):\(previous)-\(next)")
        }
        #expect(gaps.isEmpty, "more than 60 lines without a heading: \(gaps)")
    }

    @Test(arguments: pages) func noIssueNumbers(_ page: String) throws {
        let found = try Self.proseLines(of: page).filter { line in
            line.text.range(of: #"\b[Ii]ssues? #?\d+"#, options: .regularExpression) != nil || line.text.contains("the issue's")
        }.map { "\(page):\($0.number)" }
        #expect(found.isEmpty, "references to issues: \(found)")
    }
}
