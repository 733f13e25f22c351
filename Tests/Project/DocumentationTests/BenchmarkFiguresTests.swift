import BenchmarkFigures
import Foundation
import TestSupport
import Testing

/// Every figure is written once, in bench/figures.json: docs/benchmarks.md and the README's
/// excerpt must be what `bench/run --record` writes from it, and each figure names the commit and
/// day it was measured at.
@Suite struct BenchmarkFiguresTests {
    static func text(_ file: String) throws -> String {
        try String(contentsOf: repositoryRoot.appendingPathComponent(file), encoding: .utf8)
    }

    static func record() throws -> FigureRecord {
        try FigureRecord.read(try Data(contentsOf: repositoryRoot.appendingPathComponent("bench/figures.json")))
    }

    @Test func thePagesShowTheRecordedFigures() throws {
        let record = try Self.record()
        let benchmarks = try #require(FigureRecord.block(try Self.text("docs/benchmarks.md"), named: "figures"), "docs/benchmarks.md has no figures block")
        #expect(benchmarks == "\n\n" + record.figuresBlock() + "\n", "docs/benchmarks.md differs from bench/figures.json: run .build/debug/bench-record (bench/run --record does)")
        let readme = try #require(FigureRecord.block(try Self.text("README.md"), named: "headline figures"), "README.md has no headline figures block")
        #expect(readme == "\n\n" + (try record.headlinesBlock()) + "\n", "the README's figures differ from bench/figures.json: run .build/debug/bench-record")
    }

    @Test func eachFigureSaysWhenItWasMeasured() throws {
        let record = try Self.record()
        let figures = record.groups.flatMap(\.figures)
        #expect(figures.count >= 60)
        for figure in figures {
            #expect(figure.date.range(of: #"^\d{4}-\d{2}-\d{2}$"#, options: .regularExpression) != nil, "\(figure.what): date \(figure.date)")
            #expect(figure.commit.range(of: #"^[0-9a-f]{7,40}$"#, options: .regularExpression) != nil, "\(figure.what): commit \(figure.commit)")
        }
        // The commits are this history's, where the checkout has it.
        if FileManager.default.fileExists(atPath: repositoryRoot.appendingPathComponent(".git").path) {
            for commit in Set(figures.map(\.commit)) {
                let known = try runProgram("/usr/bin/git", ["cat-file", "-e", commit + "^{commit}"], in: repositoryRoot)
                #expect(known.status == 0, "bench/figures.json names commit \(commit), which this history does not have")
            }
        }
        #expect(throws: Never.self) { try record.headlinesBlock() }
    }

    /// A run's lines update the figures they name, and only those; a line nobody names is said.
    @Test func aRunIsRecordedIntoTheFiguresItNames() throws {
        let figure = FigureRecord.Figure(bench: "store_insert_1000000_flights", what: "insert", value: "1 rows/s", baseline: "raw", ratio: "0.50", commit: "aaaaaaa", date: "2026-01-01")
        var other = figure
        other.bench = nil
        other.what = "by hand"
        var record = FigureRecord(groups: [.init(name: "`store`", figures: [figure, other])], headlines: [.init(what: "insert", figures: ["store_insert_1000000_flights"], against: "raw")])
        let output = """
            Building release binaries...
            bench store_insert_1000000_flights 127699 rows/s ratio=0.94 baseline=raw_c_api_from_swift(136253rows/s)
            bench store_new_figure 3 ms ratio=1.10 baseline=something
            """
        let unmatched = record.record(output, commit: "bbbbbbb", date: "2026-12-06")
        #expect(unmatched.map(\.name) == ["store_new_figure"])
        #expect(record.groups[0].figures[0].value == "127699 rows/s" && record.groups[0].figures[0].ratio == "0.94")
        #expect(record.groups[0].figures[0].commit == "bbbbbbb" && record.groups[0].figures[0].date == "2026-12-06")
        #expect(record.groups[0].figures[1] == other)
        #expect(try record.headlinesBlock().contains("| insert | 0.94x | raw | bbbbbbb, 2026-12-06 |"))
        let page = "# B\n\n" + FigureRecord.opening("figures") + "\nold\n" + FigureRecord.closing + "\n\nprose\n"
        let written = try FigureRecord.splice(page, block: "figures", with: record.figuresBlock())
        #expect(written.contains("  - ratio: 0.94") && written.hasSuffix(FigureRecord.closing + "\n\nprose\n") && !written.contains("old"))
        #expect(throws: FigureRecord.Problem.self) { try FigureRecord.splice("no block here", block: "figures", with: "x") }
    }
}
