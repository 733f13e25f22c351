import BenchmarkFigures
import Foundation

/// `bench-record [RUN-OUTPUT]`: records a `bench/run` output's figures in bench/figures.json
/// (those whose `bench` name a line gives: value, ratio, this commit and today), then writes the
/// figures into docs/benchmarks.md and the README's excerpt. With no output file it only writes.
/// Run from the package's root; `bench/run --record` calls it.
func main() -> Int32 {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard arguments.count <= 1, arguments.first.map({ !$0.hasPrefix("-") }) ?? true else {
        FileHandle.standardError.write(Data("usage: bench-record [RUN-OUTPUT]\n".utf8))
        return 2
    }
    do {
        let recordURL = URL(fileURLWithPath: "bench/figures.json")
        var record = try FigureRecord.read(try Data(contentsOf: recordURL))
        if let output = arguments.first {
            let text = try String(contentsOfFile: output, encoding: .utf8)
            let commit = try git(["rev-parse", "--short", "HEAD"])
            let formatter = DateFormatter()
            formatter.dateFormat = "yyyy-MM-dd"
            formatter.timeZone = TimeZone(identifier: "UTC")
            let unmatched = record.record(text, commit: commit, date: formatter.string(from: Date()))
            for line in unmatched {
                FileHandle.standardError.write(Data("bench-record: no figure of bench/figures.json is `\(line.name)` (\(line.value)): add one with its description to keep it\n".utf8))
            }
            try record.encoded().write(to: recordURL)
        }
        for (file, block, content) in [("docs/benchmarks.md", "figures", record.figuresBlock()), ("README.md", "headline figures", try record.headlinesBlock())] {
            let document = try String(contentsOfFile: file, encoding: .utf8)
            try FigureRecord.splice(document, block: block, with: content).write(toFile: file, atomically: true, encoding: .utf8)
        }
        print("bench-record: wrote docs/benchmarks.md and the README's excerpt from bench/figures.json")
        return 0
    } catch {
        FileHandle.standardError.write(Data("bench-record: error: \(error)\n".utf8))
        return 1
    }
}

/// The output of a git command, trimmed.
func git(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/git")
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

exit(main())
