import Foundation

/// Every benchmark figure the docs show, kept in one file (`bench/figures.json`): docs/benchmarks.md
/// and the README's excerpt are written from it (`bench/run --record`), and a test checks they
/// still are, so a figure is written once and cannot differ between pages.
public struct FigureRecord: Codable, Equatable, Sendable {
    /// One measured figure.
    public struct Figure: Codable, Equatable, Sendable {
        /// The `bench <name> ...` line of `bench/run` that measures it, when one does.
        public var bench: String?
        /// What was measured, in a sentence.
        public var what: String
        /// The figure, with its unit.
        public var value: String
        /// What it is compared with, measured in the same run, with that figure.
        public var baseline: String
        /// The figure against the baseline.
        public var ratio: String
        /// The commit measured, and the day.
        public var commit: String
        public var date: String

        public init(bench: String?, what: String, value: String, baseline: String, ratio: String, commit: String, date: String) {
            self.bench = bench
            self.what = what
            self.value = value
            self.baseline = baseline
            self.ratio = ratio
            self.commit = commit
            self.date = date
        }
    }

    /// A benchmark's figures, under one heading.
    public struct Group: Codable, Equatable, Sendable {
        public var name: String
        public var figures: [Figure]

        public init(name: String, figures: [Figure]) {
            self.name = name
            self.figures = figures
        }
    }

    /// A line of the README's excerpt: one or more figures, with what they are compared with.
    public struct Headline: Codable, Equatable, Sendable {
        public var what: String
        /// The figures' `bench` names, or `group:index` (1-based) for figures without one.
        public var figures: [String]
        public var against: String

        public init(what: String, figures: [String], against: String) {
            self.what = what
            self.figures = figures
            self.against = against
        }
    }

    public var groups: [Group]
    public var headlines: [Headline]

    public init(groups: [Group], headlines: [Headline]) {
        self.groups = groups
        self.headlines = headlines
    }

    /// Why a record or a document cannot be used.
    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    /// The record in `bench/figures.json`'s bytes, or a `Problem` saying why not.
    ///
    ///     let record = try FigureRecord.read(Data(contentsOf: URL(fileURLWithPath: "bench/figures.json")))
    public static func read(_ data: Data) throws -> FigureRecord {
        do {
            return try JSONDecoder().decode(FigureRecord.self, from: data)
        } catch {
            throw Problem(description: "bench/figures.json cannot be read: \(error)")
        }
    }

    /// The record as `bench/figures.json` keeps it: sorted keys, pretty-printed.
    ///
    ///     try record.encoded().write(to: URL(fileURLWithPath: "bench/figures.json"))
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self) + Data("\n".utf8)
    }

    /// The figure a headline names.
    func figure(_ reference: String) throws -> Figure {
        for group in groups {
            if let found = group.figures.first(where: { $0.bench == reference }) { return found }
            if reference.hasPrefix(group.name + ":"), let index = Int(reference.dropFirst(group.name.count + 1)), group.figures.indices.contains(index - 1) {
                return group.figures[index - 1]
            }
        }
        throw Problem(description: "a headline names \(reference), which no figure of bench/figures.json is")
    }

    // MARK: - Recording a run

    /// A `bench <name> <value> <unit> ratio=<r> baseline=<what>` line of `bench/run`.
    public struct BenchLine: Equatable, Sendable {
        public let name: String
        public let value: String
        public let ratio: String?

        public init?(_ line: String) {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard words.count >= 3, words[0] == "bench" else { return nil }
            name = String(words[1])
            let plain = words.dropFirst(2).prefix { !$0.contains("=") }
            guard !plain.isEmpty else { return nil }
            value = plain.joined(separator: " ")
            ratio = words.first { $0.hasPrefix("ratio=") }.map { String($0.dropFirst("ratio=".count)) }
        }
    }

    /// The record with a run's figures in: each line updates the figure of its `bench` name
    /// (value, ratio, commit and day). Lines that no figure names are returned, to be described.
    ///
    ///     let unnamed = record.record(output, commit: "d4a4572", date: "2026-12-06")
    public mutating func record(_ output: String, commit: String, date: String) -> [BenchLine] {
        var unmatched: [BenchLine] = []
        for line in output.split(separator: "\n").compactMap({ BenchLine(String($0)) }) {
            var found = false
            for g in groups.indices {
                for f in groups[g].figures.indices where groups[g].figures[f].bench == line.name {
                    groups[g].figures[f].value = line.value
                    if let ratio = line.ratio { groups[g].figures[f].ratio = ratio }
                    groups[g].figures[f].commit = commit
                    groups[g].figures[f].date = date
                    found = true
                }
            }
            if !found { unmatched.append(line) }
        }
        return unmatched
    }

    // MARK: - Writing the documents

    /// The comments around a generated block.
    ///
    ///     let start = page.range(of: FigureRecord.opening("figures"))
    public static func opening(_ block: String) -> String { "<!-- \(block): written by bench/run --record from bench/figures.json; do not edit -->" }
    public static let closing = "<!-- end of the figures -->"

    /// docs/benchmarks.md's block: each benchmark under its heading, each figure one fact a line.
    ///
    ///     let page = try FigureRecord.splice(page, block: "figures", with: record.figuresBlock())
    public func figuresBlock() -> String {
        var lines: [String] = []
        for group in groups {
            lines += ["### \(group.name)", ""]
            var sinceHeading = 2
            for figure in group.figures {
                var item = Self.wrapped("**\(figure.what)**", first: "- ", indent: "  ")
                item += Self.wrapped("figure: \(figure.value)", first: "  - ", indent: "    ")
                item += Self.wrapped("baseline, same run: \(figure.baseline)", first: "  - ", indent: "    ")
                item += Self.wrapped("ratio: \(figure.ratio)", first: "  - ", indent: "    ")
                item.append("  - measured: \(figure.date), \(figure.commit)\(figure.bench.map { " (`\($0)`)" } ?? "")")
                // A heading at least every 60 lines, as every page has.
                if sinceHeading + item.count > 58 {
                    lines += ["", "#### \(group.name), continued", ""]
                    sinceHeading = 2
                }
                lines += item
                sinceHeading += item.count
            }
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    /// The README's excerpt: a table of the headline ratios.
    ///
    ///     let readme = try FigureRecord.splice(readme, block: "headline figures", with: record.headlinesBlock())
    public func headlinesBlock() throws -> String {
        var lines = ["| benchmark | ratio | to what, same run | measured at |", "|---|---|---|---|"]
        for headline in headlines {
            let figures = try headline.figures.map(figure)
            let ratios = figures.map { Self.times($0.ratio) }.joined(separator: ", ")
            var measured: [String] = []
            for figure in figures where !measured.contains("\(figure.commit), \(figure.date)") { measured.append("\(figure.commit), \(figure.date)") }
            lines.append("| \(headline.what) | \(ratios) | \(headline.against) | \(measured.joined(separator: "; ")) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A ratio as the README shows it: `0.94x`; a count (`20 of 20`) as it is.
    static func times(_ ratio: String) -> String { Double(ratio) != nil ? ratio + "x" : ratio }

    /// `document` with the text between `name`'s opening and the closing comment replaced.
    ///
    ///     let written = try FigureRecord.splice(page, block: "figures", with: record.figuresBlock())
    public static func splice(_ document: String, block name: String, with content: String) throws -> String {
        let open = opening(name)
        guard let start = document.range(of: open), let end = document.range(of: closing, range: start.upperBound..<document.endIndex) else {
            throw Problem(description: "no block '\(name)' (its comment lines \(open) and \(closing)) to write into")
        }
        return String(document[..<start.upperBound]) + "\n\n" + content + "\n" + String(document[end.lowerBound...])
    }

    /// The text between `name`'s comments, as `splice` writes it.
    ///
    ///     let shown = FigureRecord.block(page, named: "figures")
    public static func block(_ document: String, named name: String) -> String? {
        guard let start = document.range(of: opening(name)), let end = document.range(of: closing, range: start.upperBound..<document.endIndex) else { return nil }
        return String(document[start.upperBound..<end.lowerBound])
    }

    /// Text wrapped near 100 characters after `first`; later lines start with `indent`.
    static func wrapped(_ text: String, first: String, indent: String) -> [String] {
        var lines: [String] = []
        var line = first
        var empty = true
        for word in text.split(separator: " ") {
            if !empty, line.count + 1 + word.count > 100 {
                lines.append(line)
                line = indent + word
            } else {
                line += (empty ? "" : " ") + word
            }
            empty = false
        }
        lines.append(line)
        return lines
    }
}
