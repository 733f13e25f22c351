import Foundation
import MigrationFiles
import SchemaKit

/// Lets `schemagen generate` skip a run whose inputs and outputs are exactly as its last
/// successful run left them, the way a build system skips an up-to-date step: what the output
/// depends on (the schemagen executable, the options, every schema file, the templates folder
/// and the migrations folder, by content) is summed up in one digest, and every file the run
/// wrote is remembered by size and modification time. Any difference, including a generated
/// file edited or deleted by hand, means a full run. The record lives outside the output folder,
/// in the cache folder (`.build/schemagen` by default, or `--cache-dir`), one file per output
/// folder, so generated output holds generated code only; the warnings the run printed are kept
/// with it and printed again.
public struct GenerationCache: Codable, Sendable, Equatable {
    /// Where the record of one output folder is kept.
    public struct Location: Sendable {
        public let output: String
        /// `<cache folder>/generate-<digest of the output folder's absolute path>.json`.
        public let path: String

        public init(output: String, cacheFolder: String) {
            self.output = output
            let absolute = URL(fileURLWithPath: output).standardizedFileURL.path
            path = cacheFolder + "/generate-" + String(SHA256.hex(absolute).prefix(16)) + ".json"
        }
    }

    /// Where earlier releases kept the record, inside the output folder; removed when found.
    static let legacyFileName = ".schemagen-cache"
    static let formatVersion = 1

    var format: Int
    var inputs: String
    var outputs: [Output]
    /// Each schema folder's file names, so an extra generated file is noticed too.
    var folders: [String: [String]]
    public var schemaCount: Int
    /// What the run printed to standard error (warnings), to print again.
    public var warnings: String

    struct Output: Codable, Sendable, Equatable {
        var path: String
        var size: Int64
        var modified: Double
    }

    /// The digest of everything generation reads, or nil when something cannot be read (then
    /// there is no caching, only a full run, which reports the problem properly).
    /// Files are read through `files`, so the stages after a stale digest read none again.
    public static func inputsDigest(_ configuration: GenerationPipeline.Configuration, schemaFiles: [String], files: InputFiles = InputFiles()) -> String? {
        var lines: [String] = ["format \(formatVersion)"]
        guard let executable = Bundle.main.executablePath, let tool = stamp(executable) else { return nil }
        lines.append("tool \(tool.size) \(tool.modified)")
        lines.append("options \(configuration.cacheDescription)")
        // The files are read and summed on all cores: the migrations folder of a large schema
        // holds megabytes of SQL and snapshots.
        var inputs = schemaFiles.map { (label: "schema \($0)", path: $0) }
        if let templates = configuration.templatesFolder {
            guard let files = folderFiles(templates) else { return nil }
            inputs += files.map { (label: "template \($0)", path: templates + "/" + $0) }
        }
        // A missing migrations folder is an input too: its absence.
        let migrations = configuration.migrationsRoot
        inputs += (folderFiles(migrations) ?? []).map { (label: "migration \($0)", path: migrations + "/" + $0) }
        let digests = inputs.parallelMap { input in files.bytes(atPath: input.path).map { SHA256.hex($0) } }
        for (input, digest) in zip(inputs, digests) {
            guard let digest else { return nil }
            lines.append("\(input.label) \(digest)")
        }
        return SHA256.hex(lines.joined(separator: "\n"))
    }

    /// The record of the output folder's last run, if there is a readable one.
    public static func load(_ location: Location) -> GenerationCache? {
        guard let data = FileManager.default.contents(atPath: location.path),
            let cache = try? JSONDecoder().decode(GenerationCache.self, from: data), cache.format == formatVersion
        else { return nil }
        return cache
    }

    /// True when the inputs are the same and every output is as it was written.
    public func isFresh(output: String, inputs: String) -> Bool {
        guard inputs == self.inputs else { return false }
        for recorded in outputs {
            guard let now = Self.stamp(output + "/" + recorded.path), now.size == recorded.size, now.modified == recorded.modified else { return false }
        }
        for (folder, names) in folders {
            let present = ((try? FileManager.default.contentsOfDirectory(atPath: output + "/" + folder)) ?? []).sorted()
            guard present == names else { return false }
        }
        return true
    }

    /// Records a successful run: the generated files as they are now on disk.
    public static func record(_ location: Location, inputs: String, files: [String], folders: [String], schemaCount: Int, warnings: String) {
        let output = location.output
        try? FileManager.default.removeItem(atPath: output + "/" + legacyFileName)
        var outputs: [Output] = []
        for path in files {
            // A file that cannot be stat'ed makes the next run a full one: record nothing.
            guard let now = stamp(output + "/" + path) else {
                forget(location)
                return
            }
            outputs.append(Output(path: path, size: now.size, modified: now.modified))
        }
        var listing: [String: [String]] = [:]
        for folder in folders {
            listing[folder] = ((try? FileManager.default.contentsOfDirectory(atPath: output + "/" + folder)) ?? []).sorted()
        }
        let cache = GenerationCache(format: formatVersion, inputs: inputs, outputs: outputs, folders: listing, schemaCount: schemaCount, warnings: warnings)
        guard let data = try? JSONEncoder().encode(cache) else { return }
        // Best effort: without a record the next run is simply a full one.
        try? FileManager.default.createDirectory(atPath: (location.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try? data.write(to: URL(fileURLWithPath: location.path), options: .atomic)
    }

    /// Removes the record, so the next run is a full one.
    public static func forget(_ location: Location) {
        try? FileManager.default.removeItem(atPath: location.path)
    }

    static func stamp(_ path: String) -> (size: Int64, modified: Double)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let modified = Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
        #else
        let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        #endif
        return (Int64(info.st_size), modified)
    }

    /// Every file below `folder` by relative path, sorted; nil when it is not a folder.
    static func folderFiles(_ folder: String) -> [String]? {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue,
            let enumerator = FileManager.default.enumerator(atPath: folder)
        else { return nil }
        var result: [String] = []
        while let relative = enumerator.nextObject() as? String {
            var isSubfolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder + "/" + relative, isDirectory: &isSubfolder), !isSubfolder.boolValue else { continue }
            result.append(relative)
        }
        return result.sorted()
    }
}

extension GenerationPipeline.Configuration {
    /// Every option that changes what a run writes, for the cache's digest.
    var cacheDescription: String {
        [
            schemaPaths.joined(separator: ","), "named=\(schemasWereNamed)", output, templatesFolder ?? "-", migrationsRoot,
            migrationName ?? "-", "destructive=\(allowDestructive)", "single=\(singleFile)",
            (dialects ?? []).map(\.rawValue).joined(separator: ","), defaultDialects.map(\.rawValue).joined(separator: ","), "online=\(onlineByDefault)", "target=\(target.rawValue)",
            "deployment=\(deploymentTarget.rawValue)", "aliases=\(typeAliases.description)", "incomplete=\(allowIncompleteStages)", "strict=\(strictStages)", "released=\(allowReleasedVersionChanges)",
        ].joined(separator: "|")
    }
}
