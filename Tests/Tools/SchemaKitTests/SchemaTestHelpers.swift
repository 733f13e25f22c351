import Diagnostics
import Foundation
@_exported import TestSupport

@testable import SchemaKit

/// Loads YAML text as if it were the file `name`.
func load(_ yaml: String, name: String = "test.yaml") -> SchemaLoader.FileResult {
    SchemaLoader.load(source: SourceFile(path: name, text: yaml))
}

/// "line:column code" of each diagnostic, for compact assertions.
func codes(_ result: SchemaLoader.FileResult, severity: Severity? = nil) -> [String] {
    result.diagnostics
        .filter { severity == nil || $0.severity == severity }
        .map { "\($0.location.map { "\($0.line):\($0.column)" } ?? "-") \($0.code)" }
}

/// Renders diagnostics as the text format, quoting source lines.
func renderText(_ result: SchemaLoader.FileResult) -> String {
    let source = result.source
    return DiagnosticRenderer(format: .text, sources: { path in path == source?.path ? source : nil })
        .render(result.diagnostics)
}
