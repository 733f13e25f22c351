import Diagnostics
import SchemaKit

/// libFuzzer entry point: every input goes through loading, validation and rendering of the
/// diagnostics in all formats. Any crash, hang or runaway allocation is a bug.
@_cdecl("LLVMFuzzerTestOneInput")
public func schemaFuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let source = SourceFile(path: "fuzz.yaml", bytes: bytes)
    let result = SchemaLoader.load(source: source)
    for format in DiagnosticFormat.allCases {
        _ = DiagnosticRenderer(format: format, sources: { _ in source }).render(result.diagnostics)
    }
    return 0
}
