import Diagnostics
import Foundation
import TestSupport
import Testing

@testable import SchemaKit

/// Each invalid schema in `Invalid/` has the exact text diagnostics expected for it in a
/// `.expected` file beside it. Run with `UPDATE_GOLDEN=1` to rewrite them after a deliberate
/// change, then review the diff.
@Suite struct GoldenDiagnosticsTests {
    static let folder = repositoryRoot.appendingPathComponent("Tests/Tools/SchemaKitTests/Invalid")

    static var cases: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted()
    }

    /// The exact set, so a case deleted or renamed by accident is noticed.
    static let expectedCases = [
        "defaults", "duplicate-keys", "empty", "hostile-names", "inverses", "missing-keys", "names", "options",
        "references", "syntax-error", "tabs", "unknown-keys", "warnings", "wrong-kinds",
    ]

    @Test func everyInvalidSchemaHasAGoldenFile() throws {
        #expect(Self.cases == Self.expectedCases.map { $0 + ".yaml" })
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path)
        #expect(files.filter { $0.hasSuffix(".expected") }.sorted() == Self.expectedCases.map { $0 + ".expected" })
    }

    @Test(arguments: cases)
    func diagnosticsMatchGoldenFile(_ name: String) throws {
        let yamlURL = Self.folder.appendingPathComponent(name)
        let expectedURL = yamlURL.deletingPathExtension().appendingPathExtension("expected")
        let bytes = try [UInt8](Data(contentsOf: yamlURL))
        let result = SchemaLoader.load(source: SourceFile(path: "Invalid/\(name)", bytes: bytes))
        let actual = renderText(result)

        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] != nil {
            try actual.write(to: expectedURL, atomically: true, encoding: .utf8)
            return
        }
        let expected = try String(contentsOf: expectedURL, encoding: .utf8)
        #expect(result.schema == nil || name == "warnings.yaml", "an invalid schema must not produce a schema")
        #expect(actual == expected, "\(name) differs from its golden file:\n\(firstDifference(expected, actual))")
    }

    private func firstDifference(_ expected: String, _ actual: String) -> String {
        let e = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let a = actual.split(separator: "\n", omittingEmptySubsequences: false)
        for index in 0..<max(e.count, a.count) {
            let left = index < e.count ? String(e[index]) : "<end>"
            let right = index < a.count ? String(a[index]) : "<end>"
            if left != right { return "line \(index + 1):\n- \(left)\n+ \(right)" }
        }
        return "(no difference)"
    }
}
