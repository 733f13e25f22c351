import Testing

@testable import CommandLineKit

@Suite struct ArgumentParserTests {
    let spec = CommandSpec(
        name: "check", abstract: "Check things.",
        options: [
            .value("format", short: "f", valueName: "format", help: "Format.", allowed: ["text", "json"]),
            .value("schema", short: "s", valueName: "path", help: "Schema.", repeatable: true),
            .flag("verbose", short: "v", help: "Talk more."),
            .flag("quiet", short: "q", help: "Talk less."),
        ],
        arguments: [ArgumentSpec("PATH", help: "Paths.", isVariadic: true)])

    @Test func tokenizerKeepsOriginalText() {
        #expect(
            Token.tokenize(["--a=b", "-xy", "v", "--", "--z"]) == [
                .long(name: "a", value: "b", original: "--a=b"),
                .short(letters: ["x", "y"], original: "-xy"),
                .value("v"), .terminator, .value("--z"),
            ])
        #expect(Token.tokenize(["-"]) == [.value("-")])
    }

    @Test func longShortAttachedAndBundledForms() throws {
        let parsed = try ArgumentParser.parse(["--format=json", "-vq", "-sA", "--schema", "B", "x", "--", "-not-an-option"], for: spec)
        #expect(parsed.value("format") == "json")
        #expect(parsed.flag("verbose") && parsed.flag("quiet"))
        #expect(parsed.values("schema") == ["A", "B"])
        #expect(parsed.arguments == ["x", "-not-an-option"])
    }

    @Test func aValueMayStartWithADashWhenItIsNoOption() throws {
        #expect(try ArgumentParser.parse(["--schema", "-distance"], for: spec).value("schema") == "-distance")
        #expect(throws: UsageError("missing value for '--schema' (expected <path>)")) { try ArgumentParser.parse(["--schema", "-v"], for: spec) }
    }

    @Test func shortOptionWithSeparateValue() throws {
        #expect(try ArgumentParser.parse(["-f", "text"], for: spec).value("format") == "text")
    }

    @Test(arguments: [
        (["--formt", "json"], "unknown option '--formt'; did you mean '--format'?"),
        (["--format"], "missing value for '--format' (expected <format>)"),
        (["-f"], "missing value for '-f' (expected <format>)"),
        (["--format", "xml"], "invalid value 'xml' for '--format'; expected one of: text, json"),
        (["--format", "jsn"], "invalid value 'jsn' for '--format'; expected one of: text, json; did you mean 'json'?"),
        (["--format", "json", "-f", "text"], "option '-f' is given more than once"),
        (["--verbose=yes"], "option '--verbose' takes no value"),
        (["-vz"], "unknown option '-z' in '-vz'"),
    ])
    func usageErrors(_ arguments: [String], _ message: String) {
        #expect(throws: UsageError(message)) { try ArgumentParser.parse(arguments, for: spec) }
    }

    @Test func extraAndMissingPositionals() throws {
        let one = CommandSpec(name: "one", abstract: "", arguments: [ArgumentSpec("NAME", help: "", isRequired: true)])
        #expect(throws: UsageError("missing argument <NAME>")) { try ArgumentParser.parse([], for: one) }
        #expect(throws: UsageError("unexpected argument 'b'")) { try ArgumentParser.parse(["a", "b"], for: one) }
        #expect(try ArgumentParser.parse(["--help"], for: one).flag("help"), "--help wins over a missing argument")
    }

    @Test func helpListsEveryOptionAndArgument() {
        let help = spec.help(toolName: "tool")
        #expect(help.contains("USAGE: tool check [options] [PATH ...]"))
        for text in ["-f, --format <format>", "-s, --schema <path>", "-v, --verbose", "-h, --help", "One of: text, json.", "May be repeated."] {
            #expect(help.contains(text), "help lacks \(text)")
        }
    }
}

@Suite struct CommandLineToolTests {
    enum Echo: Command {
        static let spec = CommandSpec(
            name: "echo", abstract: "Print the arguments.",
            options: [.flag("loud", help: "Upper-case.")],
            arguments: [ArgumentSpec("WORD", help: "Words.", isVariadic: true)])
        static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
            let text = arguments.arguments.joined(separator: " ")
            io.writeOutput((arguments.flag("loud") ? text.uppercased() : text) + "\n")
            return .success
        }
    }

    final class Capture: @unchecked Sendable {
        var output = ""
        var error = ""
    }

    func run(_ arguments: [String]) -> (ExitCode, String, String) {
        let capture = Capture()
        let io = CommandIO(writeOutput: { capture.output += $0 }, writeError: { capture.error += $0 })
        let tool = CommandLineTool(name: "tool", version: "1.2.3", abstract: "A tool.", commands: [Echo.self])
        let code = tool.main(arguments: arguments, io: io)
        return (code, capture.output, capture.error)
    }

    @Test func dispatchesToTheCommand() {
        let (code, output, _) = run(["echo", "--loud", "hi", "there"])
        #expect(code == .success)
        #expect(output == "HI THERE\n")
    }

    @Test func versionAndHelp() {
        #expect(run(["--version"]).1 == "tool 1.2.3\n")
        #expect(run(["--help"]).1.contains("echo"))
        #expect(run(["help", "echo"]).1.contains("USAGE: tool echo [options] [WORD ...]"))
        #expect(run(["echo", "-h"]).0 == .success)
    }

    @Test func unknownCommandIsAUsageErrorWithASuggestion() {
        let (code, output, error) = run(["ecko"])
        #expect(code == .usageOrIO)
        #expect(output.isEmpty)
        #expect(error == "tool: error: unknown command 'ecko'; did you mean 'echo'?\nUsage: tool <command> [options]\nSee 'tool --help'.\n")
    }

    @Test func unknownOptionPrintsOneLineAndTheUsage() {
        let (code, _, error) = run(["echo", "--lowd"])
        #expect(code == .usageOrIO)
        #expect(error == "tool: error: unknown option '--lowd'; did you mean '--loud'?\nUsage: tool echo [options] [WORD ...]\nSee 'tool echo --help'.\n")
    }

    @Test func noArgumentsPrintsHelpToStandardError() {
        let (code, output, error) = run([])
        #expect(code == .usageOrIO)
        #expect(output.isEmpty)
        #expect(error.contains("COMMANDS:"))
    }
}
