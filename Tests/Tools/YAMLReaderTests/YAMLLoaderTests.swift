import Diagnostics
import Testing

@testable import YAMLReader

@Suite struct YAMLLoaderTests {
    func document(_ yaml: String) -> (YAMLNode?, [Diagnostic]) {
        var bag = DiagnosticBag()
        let outcome = YAMLLoader.load(SourceFile(path: "t.yaml", text: yaml), diagnostics: &bag)
        if case .document(let root) = outcome { return (root, bag.diagnostics) }
        return (nil, bag.diagnostics)
    }

    func value(_ root: YAMLNode?, _ key: String) -> YAMLNode? {
        root?.pairs?.first { $0.key.scalarText == key }?.value
    }

    @Test func marksAreOneBasedLineAndCharacterColumn() throws {
        let (root, diagnostics) = document("a: 1\nbé: {c: x}\n")
        #expect(diagnostics.isEmpty)
        let pairs = try #require(root?.pairs)
        #expect(pairs[1].key.start.line == 2)
        #expect(pairs[1].key.start.column == 1)
        let inner = try #require(pairs[1].value.pairs?.first)
        // Columns count characters, so the accented letter counts once.
        #expect(inner.key.start.column == 6)
        #expect(inner.value.start.column == 9)
    }

    @Test func scalarsResolveByTheYAML12CoreSchema() throws {
        let (root, _) = document(
            """
            t: true
            f: False
            y: yes
            n: ~
            e:
            q: "true"
            i: -42
            h: 0x1F
            o: 0o17
            d: 1.5e3
            inf: .inf
            big: 99999999999999999999
            """)
        #expect(value(root, "t")?.boolValue == true)
        #expect(value(root, "f")?.boolValue == false)
        #expect(value(root, "y")?.boolValue == nil)
        #expect(value(root, "y")?.stringValue == "yes")
        #expect(value(root, "n")?.isNull == true)
        #expect(value(root, "e")?.isNull == true)
        #expect(value(root, "q")?.boolValue == nil, "quoted scalars are strings")
        #expect(value(root, "q")?.stringValue == "true")
        #expect(value(root, "i")?.integerValue == -42)
        #expect(value(root, "h")?.integerValue == 31)
        #expect(value(root, "o")?.integerValue == 15)
        #expect(value(root, "d")?.doubleValue == 1500)
        #expect(value(root, "inf")?.doubleValue == .infinity)
        #expect(value(root, "big")?.integerValue == nil)
        #expect(value(root, "big")?.looksLikeInteger == true)
    }

    @Test func duplicateKeysAreReportedAndTheFirstKept() throws {
        let (root, diagnostics) = document("a: 1\nb: 2\na: 3\n")
        #expect(diagnostics.map(\.code) == ["duplicate-key"])
        #expect(diagnostics.first?.location?.line == 3)
        #expect(diagnostics.first?.notes.first?.location?.line == 1)
        #expect(root?.pairs?.count == 2)
        #expect(value(root, "a")?.integerValue == 1)
    }

    /// Mappings without a repeated or merge key are taken whole; the others are filtered. Both
    /// ways must keep document order and report each repeat, in small and large mappings.
    @Test func keysAreCheckedInMappingsOfEverySize() throws {
        let many = (1...20).map { "k\($0): \($0)" }.joined(separator: ", ")
        let (root, diagnostics) = document(
            """
            large: {\(many)}
            largeRepeat: {\(many), k7: 0}
            quoted: {a: 1, "a": 2}
            notMerge: {"<<": 1, x: 2}
            complex: {? [1, 2]: a, ? [1, 2]: b}
            nested: [[1, [2, 3]], {p: [4]}, 5]
            """)
        #expect(diagnostics.map(\.code) == ["duplicate-key", "duplicate-key"])
        #expect(diagnostics.map { $0.location?.line } == [2, 3])
        #expect(value(root, "large")?.pairs?.map { $0.key.scalarText } == (1...20).map { "k\($0)" })
        #expect(value(root, "largeRepeat")?.pairs?.count == 20)
        #expect(value(value(root, "largeRepeat"), "k7")?.integerValue == 7, "the first of a repeated key is kept")
        #expect(value(value(root, "quoted"), "a")?.integerValue == 1, "a quoted spelling repeats the plain key")
        #expect(value(root, "notMerge")?.pairs?.count == 2, "a quoted << is an ordinary key")
        #expect(value(root, "complex")?.pairs?.count == 2, "keys that are not scalars are not compared")
        let nested = try #require(value(root, "nested")?.items)
        #expect(nested.count == 3)
        #expect(nested[0].items?[1].items?.map(\.integerValue) == [2, 3])
        #expect(value(nested[1], "p")?.items?.first?.integerValue == 4)
        #expect(nested[2].integerValue == 5)
    }

    @Test func mergeKeysCopyMissingKeys() throws {
        let (root, diagnostics) = document("base: &b {x: 1, y: 2}\nother: {<<: *b, y: 3, z: 4}\nlist: {<<: [*b, {w: 5}]}\n")
        #expect(diagnostics.isEmpty)
        let other = value(root, "other")
        #expect(value(other, "x")?.integerValue == 1)
        #expect(value(other, "y")?.integerValue == 3, "explicit keys win over merged ones")
        #expect(value(value(root, "list"), "w")?.integerValue == 5)
    }

    @Test func mergeOfAScalarIsAnError() {
        let (_, diagnostics) = document("a: {<<: 3}\n")
        #expect(diagnostics.map(\.code) == ["invalid-merge"])
    }

    @Test func aliasesCopyTheAnchoredNode() throws {
        let (root, diagnostics) = document("a: &x [1, 2]\nb: *x\n")
        #expect(diagnostics.isEmpty)
        #expect(value(root, "b")?.items?.count == 2)
    }

    @Test func syntaxErrorPointsAtTheProblem() {
        let (root, diagnostics) = document("a: [1, 2\nb: 3\n")
        #expect(root == nil)
        #expect(diagnostics.map(\.code) == ["yaml-syntax"])
        #expect(diagnostics.first?.location?.line == 2)
    }

    @Test func emptyInputHasNoDocument() {
        var bag = DiagnosticBag()
        let outcome = YAMLLoader.load(SourceFile(path: "e.yaml", bytes: []), diagnostics: &bag)
        guard case .empty = outcome else {
            Issue.record("expected .empty, got \(outcome)")
            return
        }
        #expect(bag.diagnostics.isEmpty)
    }

    @Test func limitsAreConfigurable() {
        var bag = DiagnosticBag()
        _ = YAMLLoader.load(SourceFile(path: "d.yaml", text: "[[[[1]]]]"), limits: .init(maximumDepth: 3), diagnostics: &bag)
        #expect(bag.diagnostics.map(\.code) == ["nesting-too-deep"])
    }
}
