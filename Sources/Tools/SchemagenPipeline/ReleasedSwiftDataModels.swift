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
/// A released version that another deployment target or an earlier release's form
/// (`SwiftDataEarlierForms`) wrote keeps that output: raising the target, or a newer
/// schemagen, changes only the versions not released yet. Renaming identifiers are the
/// exception: they are outside the version hash, so devices' stores open the same, and the
/// carried ones (`RenamingIdentifiers`) are what lets them migrate across renames, so a version
/// whose record has earlier ones is written with the carried ones.
struct ReleasedSwiftDataModels {
    enum Code: String, DiagnosticCode {
        /// A released version's models would change.
        case changed = "swiftdata-released-version-changed"
    }

    /// One way to write the models: a deployment target and earlier forms.
    struct Form: Hashable {
        var target: DeploymentTarget
        var earlier: SwiftDataEarlierForms
    }

    /// Problems, and the records to write (a first run, or changes allowed).
    var diagnostics: [Diagnostic] = []
    var records: [(directory: MigrationDirectory, file: String, contents: String)] = []
    /// Released versions' files as they were recorded, by file name, to write instead of the new text.
    var kept: [String: String] = [:]
    /// The form each released file in another form was recorded in, by file name.
    var keptForms: [String: Form] = [:]

    /// `otherForms` generates the same files in another form, asked only for a version whose
    /// files differ from their record. `target` is this run's: a form that uses API it lacks
    /// (`#Unique` and `#Index` when lowered from iOS 18 to 17) is no way out, since the app
    /// would not compile.
    init(
        files: [GeneratedFile], target: DeploymentTarget, otherForms: (Form) -> [GeneratedFile], history: SchemaHistory, schema: Schema, directory: MigrationDirectory,
        allowChanges: Bool
    ) {
        func byFileName(_ files: [GeneratedFile]) -> [String: String] {
            Dictionary(files.map { (URL(fileURLWithPath: $0.path).lastPathComponent, $0.contents) }, uniquingKeysWith: { first, _ in first })
        }
        let byName = byFileName(files)
        var forms: [Form: [String: String]] = [:]
        func form(_ form: Form) -> [String: String] {
            if let made = forms[form] { return made }
            let made = byFileName(otherForms(form))
            forms[form] = made
            return made
        }
        /// The text a released file is written with: the form its record matches, with the
        /// carried renaming identifiers; nil when no form matches.
        func released(_ name: String, recorded: String) -> String? {
            for recordedTarget in DeploymentTarget.allCases where target.hasConstraintMacros || !recordedTarget.hasConstraintMacros {
                for earlier in Generator.everyEarlierForm {
                    guard let text = form(Form(target: recordedTarget, earlier: earlier))[name], Self.digest(text) == recorded else { continue }
                    keptForms[name] = Form(target: recordedTarget, earlier: earlier)
                    return form(Form(target: recordedTarget, earlier: earlier.subtracting(.declaredRenamingIdentifiers)))[name]
                }
            }
            return nil
        }
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
            var changed: [String] = []
            for (name, digest) in digests {
                guard let recorded = listed[name], recorded != digest else { continue }
                if !allowChanges, let text = released(name, recorded: recorded) {
                    if text != byName[name] { kept[name] = text }
                    continue
                }
                changed.append(name)
            }
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
