import Foundation
import Testing

@testable import Diagnostics

/// Codes for these tests.
enum TestCode: String, DiagnosticCode {
    case unknownKey = "unknown-key"
    case c
}

@Suite struct DiagnosticRendererTests {
    let source = SourceFile(path: "Schemas/A.yaml", text: "schema: A\n\tkey: {uniqe: true}\n")
    var diagnostic: Diagnostic {
        Diagnostic(
            .error, code: TestCode.unknownKey, message: "unknown key 'uniqe'; did you mean 'unique'?",
            at: SourceLocation(file: "Schemas/A.yaml", line: 2, column: 8, length: 5))
    }

    @Test func textQuotesTheLineWithACaretThatKeepsTabs() {
        let source = self.source
        let text = DiagnosticRenderer(format: .text, sources: { _ in source }).render([diagnostic])
        #expect(
            text == """
                Schemas/A.yaml:2:8: error: unknown key 'uniqe'; did you mean 'unique'? [unknown-key]
                \tkey: {uniqe: true}
                \t      ^~~~~

                """)
    }

    @Test func textWithoutSourceIsOneLine() {
        let text = DiagnosticRenderer(format: .text).render([diagnostic])
        #expect(text == "Schemas/A.yaml:2:8: error: unknown key 'uniqe'; did you mean 'unique'? [unknown-key]\n")
    }

    @Test func colouredTextUsesANSIEscapes() {
        let text = DiagnosticRenderer(format: .text, colored: true).render([diagnostic])
        #expect(text.contains("\u{1B}[31m"))
    }

    @Test func longLinesAreShownAsAWindow() {
        let long = String(repeating: "x", count: 500) + "ERR" + String(repeating: "y", count: 500)
        let file = SourceFile(path: "l.yaml", text: long)
        let d = Diagnostic(.error, code: TestCode.c, message: "m", at: SourceLocation(file: "l.yaml", line: 1, column: 501, length: 3))
        let lines = DiagnosticRenderer(format: .text, sources: { _ in file }).render([d]).split(separator: "\n")
        #expect(lines[1].count <= 200)
        let caretColumn = lines[2].firstIndex(of: "^").map { lines[2].distance(from: lines[2].startIndex, to: $0) }
        let errColumn = lines[1].range(of: "ERR").map { lines[1].distance(from: lines[1].startIndex, to: $0.lowerBound) }
        #expect(caretColumn == errColumn)
    }

    @Test func jsonIsAnArrayOfObjectsWithEscapedStrings() {
        var d = diagnostic
        d.message = "quote \" backslash \\ newline \n control \u{01}"
        let json = DiagnosticRenderer(format: .json).render([d])
        #expect(
            json == """
                [
                  {"file": "Schemas/A.yaml", "line": 2, "column": 8, "severity": "error", "code": "unknown-key", "message": "quote \\" backslash \\\\ newline \\n control \\u0001"}
                ]

                """)
        #expect(DiagnosticRenderer(format: .json).render([]) == "[]\n")
    }

    @Test func githubEscapesDataAndProperties() {
        var d = diagnostic
        d.message = "100% sure\nnext"
        d.location?.file = "dir,with:odd.yaml"
        let line = DiagnosticRenderer(format: .github).render([d])
        #expect(line == "::error file=dir%2Cwith%3Aodd.yaml,line=2,col=8,endColumn=13,title=unknown-key::100%25 sure%0Anext\n")
    }

    @Test func notesFollowTheirDiagnostic() {
        var d = diagnostic
        d.notes = [.init("first defined here", at: SourceLocation(file: "Schemas/A.yaml", line: 1, column: 1))]
        let text = DiagnosticRenderer(format: .text).render([d])
        #expect(text.hasSuffix("Schemas/A.yaml:1:1: note: first defined here\n"))
    }
}

@Suite struct SuggestionTests {
    @Test(arguments: [
        ("uniqe", "unique"), ("Uniqe", "unique"), ("atributes", "attributes"), ("tpye", "type"),
        ("invers", "inverse"), ("relationship", "relationships"),
    ])
    func suggestsTypos(_ word: String, _ expected: String) {
        let keys = ["type", "unique", "attributes", "relationships", "inverse", "default"]
        #expect(Suggestion.closest(to: word, in: keys) == expected)
    }

    @Test func staysQuietForUnrelatedWords() {
        #expect(Suggestion.closest(to: "banana", in: ["type", "unique"]) == nil)
        #expect(Suggestion.hint(for: "x", in: []) == "")
    }
}
