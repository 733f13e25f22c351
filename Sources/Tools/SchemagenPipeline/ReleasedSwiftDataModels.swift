import CodeGeneration
import Diagnostics
import Foundation
import MigrationFiles
import SchemaKit

/// Released SwiftData versions stay as devices have them. Each migration's
/// `NNNN_name.swiftdata.sum` (listed in `migrations.sum`) holds the digest of the version files
/// its version brought (`FlightsSchemaV4.swift`, and `FlightsSchemaV3_1.swift` where a type
/// change put a step before it), as `generate --target swiftdata` first wrote them. A later run
/// that would write one differently (a newer schemagen's templates, another deployment target)
/// stops with an error naming the file, unless changes are allowed. The generated header, which
/// names the newest version, is not part of the digest.
///
/// A file that differs from its record only in `originalName:` arguments, as earlier releases
/// wrote them from `renamedFrom` alone, is unchanged: renaming identifiers are outside the
/// version hash, so devices' stores open the same, and the carried ones
/// (`RenamingIdentifiers`) are what lets them migrate across renames.
struct ReleasedSwiftDataModels {
    enum Code: String, DiagnosticCode {
        /// A released version's models would change.
        case changed = "swiftdata-released-version-changed"
    }

    /// Problems, and the records to write (a first run, or changes allowed).
    var diagnostics: [Diagnostic] = []
    var records: [(directory: MigrationDirectory, file: String, contents: String)] = []

    /// `declaredIdentifierFiles`: the same files with `originalName:` as earlier releases wrote it.
    init(files: [GeneratedFile], declaredIdentifierFiles: [GeneratedFile], history: SchemaHistory, schema: Schema, directory: MigrationDirectory, allowChanges: Bool) {
        func byFileName(_ files: [GeneratedFile]) -> [String: String] {
            Dictionary(files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) }, uniquingKeysWith: { first, _ in first })
        }
        let byName = byFileName(files)
        let declared = byFileName(declaredIdentifierFiles)
        var previous: Int?
        for version in history.versions {
            defer { previous = version.schema.version }
            guard let entry = version.migration else { continue }
            // Its own file, and the step a type change put before it (`...V3_1` before `...V4`).
            var names = ["\(schema.name)SchemaV\(version.schema.version).swift"]
            if let previous { names.insert("\(schema.name)SchemaV\(previous)_1.swift", at: 0) }
            let digests = names.compactMap { name in byName[name].map { (name, Self.digest($0)) } }
            guard !digests.isEmpty else { continue }
            let text = digests.map { "\($0.0) \($0.1)\n" }.joined()
            let file = entry.releasedModelsFile
            guard let recorded = directory.contents(of: file) else {
                records.append((directory, file, text))
                continue
            }
            let listed = Dictionary(
                recorded.split(separator: "\n").compactMap { line -> (String, String)? in
                    let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                    return parts.count == 2 ? (parts[0], parts[1]) : nil
                }, uniquingKeysWith: { first, _ in first })
            let changed = digests.filter { name, digest in
                guard let recorded = listed[name], recorded != digest else { return false }
                return declared[name].map(Self.digest) != recorded
            }.map(\.0)
            guard !changed.isEmpty else { continue }
            let at = SourceLocation(file: directory.path + "/" + file, line: 1, column: 1)
            let message =
                "\(changed.joined(separator: " and ")), the models of released version \(version.schema.version), would change (this schemagen, or these options, write it differently than when it was recorded in \(file)); devices with a store of that version need it as it was, so keep the earlier output, or, if none has shipped, generate with --allow-released-version-changes to record the new one"
            diagnostics.append(Diagnostic(allowChanges ? .warning : .error, code: Code.changed, message: message, at: at))
            if allowChanges { records.append((directory, file, text)) }
        }
    }

    /// SHA-256 of a version file without its first line when that is the generated header.
    static func digest(_ contents: String) -> String {
        var text = Substring(contents)
        if text.hasPrefix(TemplateContext.headerPrefix), let end = text.firstIndex(of: "\n") { text = text[text.index(after: end)...] }
        return SHA256.hex(Array(text.utf8))
    }
}
