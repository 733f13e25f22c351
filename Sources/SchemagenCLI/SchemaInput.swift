import CommandLineKit
import Diagnostics
import SchemaKit

/// How commands find schema files and quote them in diagnostics.
enum SchemaInput {
    /// The schema files among `paths`, or nil after printing why there are none (exit 2).
    static func files(_ paths: [String], io: CommandIO) -> [String]? {
        switch SchemaDiscovery.files(in: paths) {
        case .success(let found):
            return found
        case .failure(let failure):
            io.writeError("schemagen: error: \(failure)\n")
            return nil
        }
    }

    /// Each loaded file's text by path, for quoting lines in diagnostics.
    static func sources(_ result: SchemaLoader.Result) -> [String: SourceFile] {
        Dictionary(result.files.compactMap { file in file.source.map { (file.path, $0) } }, uniquingKeysWith: { first, _ in first })
    }
}
