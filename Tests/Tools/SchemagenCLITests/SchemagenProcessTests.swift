import Foundation
import TestSupport
import Testing

/// Runs the built `schemagen` executable as users do and checks its output and exit status.
@Suite(.blocking) struct SchemagenProcessTests {
    static var repositoryRoot: URL { TestSupport.repositoryRoot }

    static let tool = BuiltTool("schemagen")
    static var executable: URL { tool.url }

    func schemagen(_ arguments: [String], in directory: URL = repositoryRoot) throws -> BuiltTool.Run {
        try Self.tool.run(arguments, in: directory)
    }

    func invalid(_ name: String) -> String { "Tests/Tools/SchemaKitTests/Invalid/\(name)" }

    @Test func validatesTheExampleSchemasByDefault() throws {
        let run = try schemagen(["validate"])
        #expect(run.status == 0)
        #expect(run.output == "Checked 8 schema files: no problems.\n")
        #expect(run.error.isEmpty)
    }

    /// Each run of a tool closes its pipes: a suite that leaked two per run reached 1,800
    /// descriptors, and `Process.run` then crashed reading `/proc/self/fd` (a Foundation bug).
    /// Other tests open pipes meanwhile, so the bound is half of what a leak would leave.
    @Test func runsOfTheToolLeaveNoPipeOpen() throws {
        let before = openPipeCount()
        for _ in 0..<60 { #expect(try schemagen(["validate", "Schemas/Notes.yaml"]).status == 0) }
        #expect(openPipeCount() - before < 60, "pipes open before: \(before), after: \(openPipeCount())")
    }

    @Test func errorsExitWithOneAndPrintCompilerStyleLines() throws {
        let run = try schemagen(["validate", invalid("unknown-keys.yaml")])
        #expect(run.status == 1)
        #expect(
            run.output.contains(
                "Tests/Tools/SchemaKitTests/Invalid/unknown-keys.yaml:14:30: error: unknown key 'uniqe' in attribute 'number'; did you mean 'unique'? [unknown-key]\n      number: {type: String, uniqe: true}\n                             ^~~~~\n"
            ))
        #expect(run.output.hasSuffix("Checked 1 schema file: 6 errors in 1 file.\n"))
    }

    @Test func reportsEveryFileInOneRun() throws {
        let run = try schemagen(["validate", "Schemas", invalid("names.yaml"), invalid("defaults.yaml")])
        #expect(run.status == 1)
        #expect(run.output.contains("names.yaml:"))
        #expect(run.output.contains("defaults.yaml:"))
        #expect(run.output.hasSuffix("Checked 10 schema files: 28 errors and 1 warning in 2 files.\n"))
    }

    @Test func jsonFormatIsMachineReadable() throws {
        let run = try schemagen(["validate", "--format", "json", invalid("inverses.yaml")])
        #expect(run.status == 1)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [[String: Any]])
        #expect(array.count == 5)
        let first = try #require(array.first)
        #expect(Set(first.keys) == ["file", "line", "column", "severity", "code", "message"])
        #expect(first["file"] as? String == invalid("inverses.yaml"))
        #expect(first["line"] as? Int == 9)
        #expect(first["column"] as? Int == 44)
        #expect(first["severity"] as? String == "error")
        #expect(first["code"] as? String == "unknown-member")
    }

    @Test func jsonForACleanRunIsAnEmptyArray() throws {
        let run = try schemagen(["validate", "-f", "json", "Schemas"])
        #expect(run.status == 0)
        #expect(run.output == "[]\n")
    }

    @Test func githubFormatEmitsWorkflowCommands() throws {
        let run = try schemagen(["validate", "--format=github", invalid("tabs.yaml")])
        #expect(run.status == 1)
        #expect(
            run.output
                == "::error file=Tests/Tools/SchemaKitTests/Invalid/tabs.yaml,line=5,col=1,endColumn=2,title=yaml-syntax::YAML syntax error: a tab character here is not allowed in YAML indentation; indent with spaces\n"
        )
    }

    @Test func warningsPassUnlessTreatedAsErrors() throws {
        let lenient = try schemagen(["validate", invalid("warnings.yaml")])
        #expect(lenient.status == 0)
        #expect(lenient.output.contains("warning:"))
        let strict = try schemagen(["validate", "--warnings-as-errors", invalid("warnings.yaml")])
        #expect(strict.status == 1)
        #expect(!strict.output.contains("warning:"))
        #expect(strict.output.contains("12 errors"))
    }

    @Test func usageErrorsExitWithTwo() throws {
        let run = try schemagen(["validate", "--formt", "json"])
        #expect(run.status == 2)
        #expect(run.output.isEmpty)
        #expect(run.error == "schemagen: error: unknown option '--formt'; did you mean '--format'?\nUsage: schemagen validate [options] [PATH ...]\nSee 'schemagen validate --help'.\n")
        #expect(try schemagen(["validate", "--format"]).status == 2)
        #expect(try schemagen(["validate", "--format", "xml"]).status == 2)
        #expect(try schemagen(["frobnicate"]).status == 2)
    }

    @Test func missingPathsAndEmptyDirectoriesExitWithTwo() throws {
        let missing = try schemagen(["validate", "no/such/dir"])
        #expect(missing.status == 2)
        #expect(missing.error == "schemagen: error: no such file or directory: 'no/such/dir'\n")
        let empty = temporaryFolder().appendingPathComponent("schemagen-empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let run = try schemagen(["validate", empty.path])
        #expect(run.status == 2)
        #expect(run.error.contains("no schema files (*.yaml, *.yml) in directory"))
    }

    @Test func doubleDashEndsOptions() throws {
        let directory = temporaryFolder().appendingPathComponent("schemagen-dash")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Self.repositoryRoot.appendingPathComponent("Schemas/Todo.yaml"),
            to: directory.appendingPathComponent("--format.yaml"))
        let run = try schemagen(["validate", "--", "--format.yaml"], in: directory)
        #expect(run.status == 0)
        #expect(run.output == "Checked 1 schema file: no problems.\n")
    }

    @Test func helpAndVersion() throws {
        let help = try schemagen(["validate", "--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("--warnings-as-errors"))
        #expect(help.output.contains("-f, --format <format>"))
        let version = try schemagen(["--version"])
        #expect(version.status == 0)
        #expect(version.output == "schemagen 0.2.0\n")
        let root = try schemagen(["--help"])
        #expect(root.output.contains("validate"))
    }

    @Test func hostileFilesNeverCrashTheProcess() throws {
        let directory = temporaryFolder().appendingPathComponent("schemagen-hostile")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var generator = SeededGenerator(seed: SeededGenerator.seed(default: 0x6A_4B_A6E2))
        let garbage = Data((0..<65_536).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try garbage.write(to: directory.appendingPathComponent("garbage.yaml"))
        try Data(String(repeating: "[", count: 100_000).utf8).write(to: directory.appendingPathComponent("deep.yaml"))
        try Data().write(to: directory.appendingPathComponent("empty.yaml"))
        let run = try schemagen(["validate", directory.path])
        #expect(run.status == 1)
        #expect(run.output.contains("deep.yaml:1:"))
        #expect(run.output.contains("empty.yaml:1:1: error: the schema file is empty"))
        #expect(run.output.contains("garbage.yaml:"))
    }
}
