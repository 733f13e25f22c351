import CommandLineKit
import Diagnostics
import Foundation
import ProjectConfig
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

    /// `--config FILE`, else `.schemagen.yaml` when present, else the defaults; after printing
    /// why the file cannot be used, the exit status instead (2 unreadable, 1 invalid).
    static func config(_ arguments: ParsedArguments, io: CommandIO) -> (ProjectConfig?, failure: ExitCode) {
        let path = arguments.value("config") ?? ProjectConfig.defaultFile
        guard arguments.value("config") != nil || FileManager.default.fileExists(atPath: path) else { return (ProjectConfig(), .success) }
        let (loaded, diagnostics, source) = ProjectConfig.load(path: path)
        if !diagnostics.isEmpty {
            io.writeError(DiagnosticRenderer(format: .text, sources: { _ in source }).render(diagnostics))
        }
        return (loaded, diagnostics.contains { $0.has(ProjectConfig.Code.fileUnreadable) } ? .usageOrIO : .failure)
    }
}

extension SchemaInput {
    /// The one valid schema in a file (a command's `--schema FILE`), or the exit status after
    /// printing why not.
    static func oneSchema(_ path: String, io: CommandIO) -> (schema: Schema?, failure: ExitCode?) {
        let (schemas, failure) = validSchemas([path], io: io)
        if let failure { return (nil, failure) }
        guard schemas.count == 1, let schema = schemas.first else {
            io.writeError("schemagen: error: --schema must name one schema file; '\(path)' holds \(schemas.count)\n")
            return (nil, .usageOrIO)
        }
        return (schema, nil)
    }

    /// Loads the schemas under `paths` (default: Schemas); after printing the problems, the exit
    /// status instead: 2 when nothing could be read, 1 when a schema has errors.
    static func validSchemas(_ paths: [String], io: CommandIO) -> (schemas: [Schema], failure: ExitCode?) {
        guard let files = files(paths.isEmpty ? ["Schemas"] : paths, io: io) else { return ([], .usageOrIO) }
        let loaded = SchemaLoader.load(files: files)
        guard !loaded.hasErrors else {
            let sources = sources(loaded)
            io.writeError(DiagnosticRenderer(format: .text, sources: { sources[$0] }).render(loaded.diagnostics.filter { $0.severity == .error }))
            let unreadable = loaded.diagnostics.contains { $0.has(SchemaDiagnosticCode.fileUnreadable) }
            return ([], unreadable ? .usageOrIO : .failure)
        }
        return (loaded.schemas, nil)
    }
}
