import Foundation
import TestSupport
import Testing

/// docs/commands.md shows each command's usage, options and exit status as the tool itself
/// declares them (`<tool> help --markdown`, the text of `--help`): a block that differs, is
/// missing, or names a command no tool has fails here. `docs/command-reference.sh` writes them.
@Suite struct CommandReferenceTests {
    static let closing = "<!-- end of generated text -->"

    /// The generated blocks of a text, by the command each names.
    static func blocks(_ text: String) -> [String: String] {
        var found: [String: String] = [:]
        var rest = Substring(text)
        while let start = rest.range(of: "<!-- generated from `"), let end = rest[start.upperBound...].range(of: closing) {
            let block = rest[start.lowerBound..<end.upperBound]
            let command = block.dropFirst("<!-- generated from `".count).prefix { $0 != "`" }.replacing(" --help", with: "")
            found[String(command)] = String(block)
            rest = rest[end.upperBound...]
        }
        return found
    }

    @Test func theCommandReferenceIsWhatTheToolsDeclare() throws {
        let document = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/commands.md"), encoding: .utf8)
        let shown = Self.blocks(document)
        var declared: [String: String] = [:]
        for tool in ["schemagen", "migrate", "flights", "todo"] {
            let run = try BuiltTool(tool).run(["help", "--markdown"])
            #expect(run.status == 0, "\(tool) help --markdown: \(run.error)")
            let blocks = Self.blocks(run.output)
            #expect(!blocks.isEmpty, "\(tool) declares no command")
            declared.merge(blocks) { first, _ in first }
        }
        for (command, block) in declared.sorted(by: { $0.key < $1.key }) {
            #expect(shown[command] == block, "docs/commands.md: `\(command)` is missing or differs from its --help; run docs/command-reference.sh")
        }
        let stale = Set(shown.keys).subtracting(declared.keys)
        #expect(stale.isEmpty, "docs/commands.md shows commands no tool has: \(stale.sorted())")
    }

    /// The reference is made from the declarations themselves: an option the tool accepts is in
    /// it, with its default, so the test above cannot pass on a reference that lost one.
    @Test func theGeneratedReferenceHoldsEveryOptionAndDefault() throws {
        let run = try BuiltTool("migrate").run(["help", "--markdown"])
        let up = try #require(Self.blocks(run.output)["migrate up"])
        for option in ["`--idle-in-transaction-timeout <seconds>`", "`--max-replica-lag <ms>`", "`--failover-timeout <seconds>`", "`-d`, `--database <path|url>`"] {
            #expect(up.contains(option), "\(option) is missing from migrate up's reference")
        }
        #expect(up.contains("Default: `1000`.") && up.contains("Exit status: 0 done"))
        let help = try BuiltTool("migrate").run(["up", "--help"]).output
        #expect(help.contains("--idle-in-transaction-timeout <seconds>"))
    }
}
