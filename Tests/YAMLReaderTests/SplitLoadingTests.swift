import Diagnostics
import Foundation
import Testing

@testable import YAMLReader

/// A large document is read in two halves on two cores; the tree must be exactly the one a
/// whole read gives, and anything a cut could change must make the reader read it whole.
@Suite struct SplitLoadingTests {
    /// A schema-like document of `count` entities with the quirks real files have: comments,
    /// blank lines, flow and block styles, quoted and multi-line scalars, non-ASCII text, and
    /// top-level keys after the big mapping.
    static func document(_ count: Int, lineEnding: String = "\n", entity: (Int) -> String = Self.entity) -> String {
        var text = "# A generated document.\nschema: Big\nversion: 3\nenums:\n  Status: [a, b]\n\nentities:\n"
        for index in 0..<count { text += entity(index) }
        text += "# after the entities\ndialects: [sqlite]\nhistory: false\n"
        return lineEnding == "\n" ? text : text.replacingOccurrences(of: "\n", with: lineEnding)
    }

    static func entity(_ index: Int) -> String {
        """
          Entity\(index):
            doc: "Entity number \(index), \\"quoted\\" and é"
            attributes:
              name: {type: String, unique: true}
              note: |
                A block scalar
                of two lines.
              folded: >
                folded text
              plain: a plain scalar
                that goes on
              count: {type: Int, default: \(index)}
            # a comment inside

            relationships:
              next: {to: Entity\(index + 1)?, inverse: previous}

        """
    }

    func whole(_ text: String) -> (YAMLNode?, Int) {
        var builder = TreeBuilder(source: SourceFile(path: "big.yaml", text: text), limits: .init())
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBufferPointer { builder.run($0) }
        return (builder.root, builder.diagnostics.diagnostics.count)
    }

    func split(_ text: String) -> YAMLNode? {
        YAMLSplitLoading.load(SourceFile(path: "big.yaml", text: text), limits: .init())
    }

    /// Every node's content, style, tag and both marks, as text to compare.
    func describe(_ node: YAMLNode, into out: inout [String]) {
        let place = "\(node.start.line):\(node.start.column)-\(node.end.line):\(node.end.column) \(node.tag ?? "")"
        switch node.content {
        case .scalar(let text, let style): out.append("scalar \(place) \(style) \(text.debugDescription)")
        case .sequence(let items):
            out.append("sequence \(place) \(items.count)")
            for item in items { describe(item, into: &out) }
        case .mapping(let pairs):
            out.append("mapping \(place) \(pairs.count)")
            for pair in pairs {
                describe(pair.key, into: &out)
                describe(pair.value, into: &out)
            }
        }
    }

    func lines(_ node: YAMLNode?) -> [String] {
        var out: [String] = []
        if let node { describe(node, into: &out) }
        return out
    }

    @Test(arguments: ["\n", "\r\n"])
    func theJoinedTreeIsTheWholeTree(_ lineEnding: String) throws {
        let text = Self.document(900, lineEnding: lineEnding)
        #expect(text.utf8.count >= YAMLSplitLoading.minimumSize)
        let cut = try #require(YAMLSplitLoading.cut(in: Array(text.utf8)))
        #expect(cut.key == "entities")
        let (whole, problems) = whole(text)
        #expect(problems == 0)
        let joined = try #require(split(text), "the document should have been read in two")
        let expected = lines(whole), found = lines(joined)
        #expect(found.count == expected.count)
        #expect(found == expected, "first difference: \(zip(found, expected).first { $0 != $1 }.map { "\($0) vs \($1)" } ?? "none")")
    }

    /// Entities that end in a block scalar, a block sequence or a plain scalar over two lines:
    /// what the cut closes must end where a whole read ends it.
    @Test(arguments: ["literal", "sequence", "plain", "empty"])
    func entitiesEndingInAnyStyleJoinAsAWhole(_ ending: String) throws {
        let text = Self.document(6000) { i in
            let tail =
                switch ending {
                case "literal": "    notes: |\n      one\n      two\n\n"
                case "sequence": "    uniques:\n      - [a, b]\n      - - c\n        - d\n"
                case "plain": "    doc: a plain text\n      over two lines\n# a comment before the next\n"
                default: ""
                }
            return "  Entity\(i):\n    attributes:\n      name: String\n" + tail
        }
        let joined = try #require(split(text))
        let (whole, problems) = whole(text)
        #expect(problems == 0)
        let expected = lines(whole), found = lines(joined)
        #expect(found == expected, "first difference: \(zip(found, expected).first { $0 != $1 }.map { "\($0) vs \($1)" } ?? "none")")
    }

    @Test func smallDocumentsAreReadWhole() {
        #expect(split(Self.document(3)) == nil)
    }

    /// Each of these reads whole: the cut would break it, or could change what it means.
    @Test(arguments: [
        "an anchor used across the cut", "the same entity on both sides", "a flow mapping over the cut",
        "a quoted scalar over the cut", "a merge key",
    ])
    func riskyDocumentsAreReadWhole(_ risk: String) {
        let text = Self.document(900) { i in
            switch (risk, i) {
            case ("an anchor used across the cut", 10): "  Base: &base {x: 1}\n"
            case ("an anchor used across the cut", 700): "  Uses: *base\n"
            case ("the same entity on both sides", 700): Self.entity(5)
            case ("a flow mapping over the cut", 449): "  Open: {a: 1,\n"
            case ("a quoted scalar over the cut", 449): "  Open: \"text\n"
            case ("a merge key", 10): "  Base: &b {x: 1}\n  <<: *b\n"
            default: Self.entity(i)
            }
        }
        #expect(split(text) == nil, "\(risk)")
    }

    @Test func directivesSeveralDocumentsAndTabsAreNeverCut() {
        let body = Self.document(900)
        #expect(YAMLSplitLoading.cut(in: Array(("%YAML 1.2\n---\n" + body).utf8)) == nil)
        #expect(YAMLSplitLoading.cut(in: Array((body + "---\nother: 1\n").utf8)) == nil)
        #expect(YAMLSplitLoading.cut(in: Array(body.replacingOccurrences(of: "dialects:", with: "\tdialects:").utf8)) == nil)
        #expect(YAMLSplitLoading.cut(in: Array(("---\n" + body).utf8)) != nil, "a leading document marker is fine")
    }

    /// Through the public loader: a document with a problem past the cut gets the whole
    /// read's diagnostics, at the right line.
    @Test func problemsAreReportedAsAWholeReadReportsThem() throws {
        let text = Self.document(900) { i in i == 800 ? "  Broken: {a: 1\n" : Self.entity(i) }
        var bag = DiagnosticBag()
        let outcome = YAMLLoader.load(SourceFile(path: "big.yaml", text: text), diagnostics: &bag)
        if case .document = outcome { Issue.record("a broken document loaded") }
        let diagnostic = try #require(bag.diagnostics.first)
        let brokenLine = text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.hasPrefix("  Broken:") }! + 1
        #expect(diagnostic.location?.line ?? 0 >= brokenLine)
    }
}
