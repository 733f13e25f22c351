import Foundation
import TestSupport
import Testing

/// The README stays a front page, the docs index lists every guide, and every relative link of
/// README.md and docs/ reaches a file (and, with `#anchor`, a heading of it) that exists.
@Suite struct DocumentationLinksTests {
    static let pages: [String] =
        ["README.md"]
        + ((try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.path + "/docs")) ?? [])
        .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }

    static func text(_ page: String) throws -> String {
        try String(contentsOf: repositoryRoot.appendingPathComponent(page), encoding: .utf8)
    }

    /// The README says what the toolkit is, shows the two commands and one example of each
    /// tool, and links to the guides: the rest lives in docs/.
    @Test func theReadmeIsAFrontPage() throws {
        let lines = try Self.text("README.md").components(separatedBy: "\n")
        #expect(lines.count <= 300, "README.md has \(lines.count) lines; move detail to docs/ (docs/README.md lists the guides)")
        let quickStart = try #require(lines.firstIndex(of: "## Quick start"))
        let commands = lines[quickStart...].drop { $0 != "```sh" }.dropFirst().prefix { $0 != "```" }
        #expect(commands.count == 2, "the quick start is exactly two commands: \(Array(commands))")
    }

    @Test func theDocsIndexListsEveryGuide() throws {
        let index = try Self.text("docs/README.md")
        let guides = Self.pages.filter { $0.hasPrefix("docs/") && $0 != "docs/README.md" }.map { String($0.dropFirst("docs/".count)) }
        let missing = guides.filter { !index.contains("](\($0))") }
        #expect(missing.isEmpty, "docs/README.md does not list: \(missing)")
    }

    /// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
    /// spaces as hyphens.
    static func anchor(_ heading: String) -> String {
        String(
            heading.lowercased().unicodeScalars.compactMap { scalar -> Character? in
                if scalar == " " { return "-" }
                if CharacterSet.alphanumerics.contains(scalar) || scalar == "-" || scalar == "_" { return Character(scalar) }
                return nil
            })
    }

    static func anchors(of page: String) throws -> Set<String> {
        var inCode = false
        var found: Set<String> = []
        for line in try text(page).components(separatedBy: "\n") {
            if line.hasPrefix("```") { inCode.toggle() }
            guard !inCode, line.hasPrefix("#") else { continue }
            found.insert(anchor(String(line.drop { $0 == "#" }.dropFirst())))
        }
        return found
    }

    @Test func relativeLinksResolve() throws {
        let link = /\]\(([^)\s]+)\)/
        var broken: [String] = []
        for page in Self.pages {
            let folder = (page as NSString).deletingLastPathComponent
            var inCode = false
            for (number, line) in try Self.text(page).components(separatedBy: "\n").enumerated() {
                if line.hasPrefix("```") { inCode.toggle() }
                guard !inCode else { continue }
                for match in line.matches(of: link) {
                    let target = String(match.output.1)
                    guard !target.contains("://"), !target.hasPrefix("mailto:") else { continue }
                    let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                    let file = parts[0].isEmpty ? page : ((folder as NSString).appendingPathComponent(parts[0]) as NSString).standardizingPath
                    guard FileManager.default.fileExists(atPath: repositoryRoot.path + "/" + file) else {
                        broken.append("\(page):\(number + 1): \(target) (no file \(file))")
                        continue
                    }
                    if parts.count == 2, file.hasSuffix(".md"), try !Self.anchors(of: file).contains(parts[1]) {
                        broken.append("\(page):\(number + 1): \(target) (no heading #\(parts[1]) in \(file))")
                    }
                }
            }
        }
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }
}
