import CommandLineKit
import Diagnostics
import Foundation
import ProjectConfig
import SchemaExport
import SchemaImport
import SchemaKit
import SchemagenPipeline

/// `schemagen export coredata`: a Core Data model bundle with every version of a schema.
public enum ExportCommand: Command {
    public static let spec = CommandSpec(
        name: "export",
        abstract: "Write a schema as a Core Data model bundle (.xcdatamodeld) with every committed version.",
        discussion: """
            schemagen export coredata --schema FILE -o NAME.xcdatamodeld [--migrations DIR]

            One .xcdatamodel per version: each committed migration's recorded schema, then the schema
            as it is now when it is newer; .xccurrentversion names the newest. Renamed entities,
            attributes and relationships carry renaming identifiers, so Core Data's lightweight
            migration follows them. What Core Data cannot say (tables and columns, enums, encrypt,
            dialects, docs) is kept in each element's user info under schemagen.* keys, which
            `schemagen import coredata --history` reads back. An existing bundle at the output path
            is replaced whole: a run stopped anywhere leaves the new bundle, or the old one (put
            back by the next run if it was stopped between the two renames). Exit status: 0
            written, 1 invalid schema or a migration folder that does not match its
            migrations.sum, 2 usage error, or an output path that cannot be written or is not a
            model bundle.
            """,
        options: [
            .value("schema", short: "s", valueName: "file", help: "The schema file."),
            .value("output", short: "o", valueName: "path", help: "The bundle to write, ending in .xcdatamodeld."),
            .value("migrations", short: "m", valueName: "dir", help: "Where each schema's migration folder is.", defaultValue: "Migrations"),
            .value("config", valueName: "file", help: "A config file with defaults.", defaultValue: ProjectConfig.defaultFile),
        ],
        arguments: [ArgumentSpec("KIND", help: "coredata.", isRequired: true)])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard arguments.arguments == ["coredata"] else {
            io.writeError("schemagen: error: export writes one kind, coredata\nUsage: schemagen export coredata --schema FILE -o NAME.xcdatamodeld\n")
            return .usageOrIO
        }
        guard let schemaPath = arguments.value("schema"), let output = arguments.value("output") else {
            io.writeError("schemagen: error: export coredata needs --schema FILE and -o NAME.xcdatamodeld\n")
            return .usageOrIO
        }
        guard output.hasSuffix(".xcdatamodeld") else {
            io.writeError("schemagen: error: '\(output)' does not end in .xcdatamodeld, the extension Xcode opens as a model bundle\n")
            return .usageOrIO
        }
        let (loadedConfig, configFailure) = SchemaInput.config(arguments, io: io)
        guard let config = loadedConfig else { return configFailure }
        let (loaded, failure) = SchemaInput.oneSchema(schemaPath, io: io)
        guard let schema = loaded else { return failure ?? .failure }
        let configuration = GenerationPipeline.Configuration(config: config, schemas: [schemaPath], migrations: arguments.value("migrations"))
        let history = SchemaHistory.load(for: schema, root: configuration.migrationsRoot, dialects: configuration.dialects(of: schema))
        io.writeError(DiagnosticRenderer(format: .text, colored: false, sources: { _ in nil }).render(history.diagnostics))
        if history.hasErrors {
            io.writeError("schemagen: error: nothing exported: fix the migration folder first\n")
            return .failure
        }
        let bundleName = URL(fileURLWithPath: output).deletingPathExtension().lastPathComponent
        // Versions the bundle already has keep their folders: the Xcode project refers to them.
        let folderNames = CoreDataExporter.existingFolderNames(of: output)
        // Its versions' uniqueness constraints too: they are in the version hashes.
        let kept = CoreDataImporter.uniquenessConstraints(inBundle: output)
        if kept.isEmpty, history.versions.count > 1, history.versions.contains(where: { version in version.schema.entities.contains { CoreDataExporter.keyConstraint($0, kept: nil) } }) {
            io.writeError(
                "\(output): note: no bundle here, so every version gets its one-attribute keys' uniqueness constraints, which are in the version hash; if these versions shipped from an earlier export, export over that bundle instead, or the stores of those versions will not open\n"
            )
        }
        let versions = history.versions.map(\.schema)
        let files = CoreDataExporter.bundle(versions, name: bundleName, folderNames: folderNames, keptUniqueness: kept)
        io.writeError(
            DiagnosticRenderer(format: .text, colored: false, sources: { _ in nil }).render(CoreDataLightweightCheck.findings(versions, bundle: bundleName, keptUniqueness: kept)))
        do {
            let recovery = try replaceBundle(at: output, with: files)
            if recovery.restored { io.writeError("\(output): note: put back the bundle an interrupted export had moved aside\n") }
            if !recovery.removed.isEmpty {
                io.writeError("\(output): note: removed what interrupted exports left: \(recovery.removed.joined(separator: ", "))\n")
            }
        } catch {
            io.writeError("\(output): error: \(error)\n")
            return .usageOrIO
        }
        let written = CoreDataExporter.usableFolderNames(folderNames, versions: history.versions.map(\.schema), bundle: bundleName)
        let names = history.versions.map { CoreDataExporter.versionName($0.schema, bundle: bundleName, folderNames: written) }
        io.writeError("wrote \(output): \(VerbalCount.count(names.count, "version")) (\(names.joined(separator: ", "))), current \(names.last ?? "none")\n")
        return .success
    }

    struct NotABundle: Error, CustomStringConvertible {
        let description: String
    }

    /// Writes the bundle and swaps it in for the old one (`FolderReplacement`): a run stopped
    /// anywhere leaves a whole bundle, old or new, and the next run clears what it left. Only
    /// a folder holding model versions is replaced.
    static func replaceBundle(at output: String, with files: [(path: String, contents: String)]) throws -> FolderReplacement.Recovery {
        try FolderReplacement.replace(URL(fileURLWithPath: output), with: files) { target in
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: target.path, isDirectory: &isFolder) else { return }
            let entries = isFolder.boolValue ? ((try? FileManager.default.contentsOfDirectory(atPath: target.path)) ?? []) : ["(a file)"]
            guard isFolder.boolValue, entries.allSatisfy({ $0.hasSuffix(".xcdatamodel") || $0 == ".xccurrentversion" }) else {
                throw NotABundle(description: "exists and is not a model bundle (it holds \(entries.prefix(3).joined(separator: ", "))); choose another path or remove it")
            }
        }
    }
}
