import Foundation
import TestSupport
import Testing

/// A client pins a release: CHANGELOG.md names each one (`## [0.2.0] - date`), the tools print the
/// newest with `--version`, the docs show `from:` it (never a branch), and each is a Git tag.
@Suite struct ReleaseVersionTests {
    /// The released versions CHANGELOG.md lists, newest first.
    static func releases() throws -> [String] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        return text.components(separatedBy: "\n").compactMap { line in
            guard line.hasPrefix("## ["), !line.hasPrefix("## [Unreleased]") else { return nil }
            return String(line.dropFirst("## [".count).prefix { $0 != "]" })
        }
    }

    /// The tags of this checkout; empty when it has none (a clone made without them).
    static let tags: [String] = {
        guard let run = try? runProgram("/usr/bin/git", ["tag", "--list"], in: repositoryRoot), run.status == 0 else { return [] }
        return run.output.split(separator: "\n").map(String.init)
    }()

    @Test func theToolsPrintTheNewestRelease() throws {
        let newest = try #require(try Self.releases().first, "CHANGELOG.md lists no release")
        #expect(newest.split(separator: ".").count == 3 && newest.allSatisfy { $0.isNumber || $0 == "." }, "\(newest) is not MAJOR.MINOR.PATCH")
        for tool in ["schemagen", "migrate", "flights", "todo"] {
            let run = try BuiltTool(tool).run(["--version"])
            #expect(run.output == "\(tool) \(newest)\n", "\(tool) --version: \(run.output)")
        }
    }

    @Test func theDocsPinARelease() throws {
        let newest = try #require(try Self.releases().first)
        let pages = ["README.md", "CHANGELOG.md"] + ((try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.path + "/docs")) ?? []).filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        var pins = 0
        for page in pages {
            let text = try String(contentsOf: repositoryRoot.appendingPathComponent(page), encoding: .utf8)
            #expect(!text.contains("branch: \"main\""), "\(page) depends on a branch; show `from:` a release")
            for line in text.components(separatedBy: "\n") where line.contains(".package(url:") {
                pins += 1
                #expect(line.contains("from: \"\(newest)\""), "\(page): \(line.trimmingCharacters(in: .whitespaces)) does not pin \(newest)")
            }
        }
        #expect(pins >= 1, "no page shows how to depend on a release")
    }

    /// Each released version is a tag on this history. A checkout without tags cannot say.
    @Test(.enabled(if: !tags.isEmpty, "SKIPPED: this checkout has no Git tags (cloned without them), so the release tags cannot be checked"))
    func eachReleaseIsATagOfThisHistory() throws {
        for version in try Self.releases() {
            #expect(Self.tags.contains(version), "CHANGELOG.md releases \(version), which is not a tag: git tag \(version) <commit>")
            let ancestor = try runProgram("/usr/bin/git", ["merge-base", "--is-ancestor", version, "HEAD"], in: repositoryRoot)
            #expect(ancestor.status == 0, "tag \(version) is not on this branch's history")
        }
    }
}
