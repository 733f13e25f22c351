import Diagnostics
import Foundation
import SQLDialects
import SchemaMetadata

/// A schema's migration folder (`Migrations/<Schema>/`): for each migration
/// `NNNN_name.up.sql`, `NNNN_name.down.sql` and `NNNN_name.schema.json` (the snapshot after it),
/// and `migrations.sum`, the SHA-256 of every file plus a total, like atlas.sum.
public struct MigrationDirectory: Sendable {
    /// The folder's path, as given.
    public let path: String
    /// Where its files are read from: the disk each time, unless a caller keeps what it read.
    public let files: any MigrationFileReading

    /// The manifest's file name.
    public static let sumFile = "migrations.sum"

    /// A folder at a path; nothing is read until a method asks.
    ///
    ///     let directory = MigrationDirectory(path: "Migrations/Flights")
    public init(path: String) {
        self.init(path: path, files: DiskFiles())
    }

    /// A folder whose files are read through `files`.
    ///
    ///     let directory = MigrationDirectory(path: "Migrations/Flights", files: DiskFiles())
    public init(path: String, files: any MigrationFileReading) {
        self.path = path
        self.files = files
    }

    /// One numbered migration's files.
    /// A migration the folder lists: its number and name, which name its files.
    public typealias Entry = MigrationFileName

    /// Diagnostic codes about migration folders.
    public enum Code: String, DiagnosticCode {
        /// A schema's dialect folders disagree: one number names two migrations (an error), or one folder lacks a migration (a warning).
        case dialectsDiffer = "migration-dialects-differ"
        /// A file changed after `migrations.sum` was written, or the manifest was edited by hand or is out of order.
        case checksum = "migration-checksum"
        /// A migration lacks one of its files, `migrations.sum` is missing, or a listed file was deleted.
        case missingFile = "migration-missing-file"
        /// Two migrations share a number, usually from two branches.
        case duplicateNumber = "migration-duplicate-number"
        /// A migration file is not listed in `migrations.sum`.
        case unlisted = "migration-unlisted"
        /// A listed file exists but cannot be read.
        case unreadable = "migration-unreadable"
    }

    // MARK: - Reading

    /// The migrations in number order, from the files present.
    public func entries() -> [Entry] {
        let names = files.names(inFolder: path)
        var entries: Set<Entry> = []
        for file in names {
            guard let entry = Self.entry(forFile: file) else { continue }
            entries.insert(entry)
        }
        return entries.sorted { ($0.number, $0.name) < ($1.number, $1.name) }
    }

    static func entry(forFile file: String) -> Entry? {
        for suffix in [".up.sql", ".down.sql", ".schema.json", ".contract.sql", ".schema.yaml", ".swiftdata.sum"] where file.hasSuffix(suffix) {
            let stem = file.dropLast(suffix.count)
            guard let underscore = stem.firstIndex(of: "_"), let number = Int(stem[..<underscore]), number > 0 else { return nil }
            return Entry(number: number, name: String(stem[stem.index(after: underscore)...]))
        }
        return nil
    }

    /// The text of one of the folder's files, or nil when it cannot be read.
    public func contents(of file: String) -> String? {
        bytes(of: file).flatMap { String(validating: $0, as: UTF8.self) }
    }

    /// The bytes of one of the folder's files, or nil when it cannot be read.
    public func bytes(of file: String) -> [UInt8]? {
        files.bytes(atPath: path + "/" + file)
    }

    // MARK: - Checking

    /// Everything wrong with the folder: missing files, two migrations with one number (two
    /// branches), and files edited, deleted, added or reordered since `migrations.sum` was written.
    public func verify() -> [Diagnostic] {
        var problems: [Diagnostic] = []
        let entries = entries()
        guard !entries.isEmpty else { return [] }
        func location(_ file: String, line: Int = 1) -> SourceLocation {
            SourceLocation(file: path + "/" + file, line: line, column: 1)
        }
        let present = Set(files.names(inFolder: path))
        for entry in entries {
            for file in entry.files where !present.contains(file) {
                problems.append(Diagnostic(.error, code: Code.missingFile, message: "migration \(entry.prefix) has no \(file); restore it from version control", at: location(entry.upFile)))
            }
        }
        let byNumber = Dictionary(grouping: entries, by: \.number)
        for (number, group) in byNumber.sorted(by: { $0.key < $1.key }) where group.count > 1 {
            let names = group.map { "'\($0.prefix)'" }.joined(separator: " and ")
            problems.append(
                Diagnostic(
                    .error, code: Code.duplicateNumber,
                    message: "two migrations are numbered \(String(format: "%04d", number)): \(names), probably from two branches; renumber yours after the other and run `\(rehashCommand)`",
                    at: location(group[1].upFile)))
        }

        guard let sum = contents(of: Self.sumFile) else {
            problems.append(Diagnostic(.error, code: Code.missingFile, message: "\(Self.sumFile) is missing; run `\(rehashCommand)` if these migrations are as intended", at: location(Self.sumFile)))
            return problems
        }
        let lines = sum.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        var listed: [String: (hash: String, line: Int)] = [:]
        var listedOrder: [String] = []
        var total: String?
        for (index, line) in lines.enumerated() {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            if index == 0, parts[0] == "total" {
                total = parts[1]
                continue
            }
            listed[parts[0]] = (parts[1], index + 1)
            listedOrder.append(parts[0])
        }
        if total != Self.total(of: listedOrder.map { ($0, listed[$0]?.hash ?? "") }) {
            problems.append(
                Diagnostic(
                    .error, code: Code.checksum, message: "\(Self.sumFile) was edited by hand (its total does not match its lines); restore it or run `\(rehashCommand)`", at: location(Self.sumFile)))
        }
        for file in listedOrder {
            guard let (hash, line) = listed[file] else { continue }
            guard present.contains(file) else {
                problems.append(
                    Diagnostic(
                        .error, code: Code.missingFile, message: "\(file) is listed in \(Self.sumFile) but was deleted or renamed; restore it, or run `\(rehashCommand)` if that was deliberate",
                        at: location(Self.sumFile, line: line)))
                continue
            }
            guard let data = bytes(of: file) else {
                problems.append(Diagnostic(.error, code: Code.unreadable, message: "cannot read \(file)", at: location(file)))
                continue
            }
            if SHA256.hex(data) != hash {
                problems.append(
                    Diagnostic(
                        .error, code: Code.checksum, message: "\(file) changed after it was generated; if the edit is deliberate (a data migration, say) run `\(rehashCommand)`, else restore it",
                        at: location(file)))
            }
        }
        for entry in entries {
            for file in entry.files + entry.optionalFiles where present.contains(file) && listed[file] == nil {
                problems.append(
                    Diagnostic(
                        .error, code: Code.unlisted, message: "\(file) is not in \(Self.sumFile): a migration added by hand or from another branch; run `\(rehashCommand)` if it belongs here",
                        at: location(file)))
            }
        }
        if listedOrder != listedOrder.sorted() {
            problems.append(Diagnostic(.error, code: Code.checksum, message: "migrations in \(Self.sumFile) are out of order; run `\(rehashCommand)`", at: location(Self.sumFile)))
        }
        return problems
    }

    // MARK: - Writing

    /// How `write` brings `migrations.sum` up to date.
    public enum ManifestUpdate: Sendable {
        /// From every file present, read and hashed again (`rehash`).
        case rehash
        /// The written files' lines added, the others kept as they are (`recordInManifest`):
        /// for a folder verified just before, whose other files need not be read again.
        case addWritten
    }

    /// Writes a new migration's files (the contract phase and the schema's text when given),
    /// then brings the manifest up to date.
    ///
    ///     try directory.write(up: up, down: down, snapshot: snapshot, as: .init(number: 3, name: "add_notes_tag"), manifest: .addWritten)
    public func write(
        up: String, down: String, contract: String? = nil, snapshot: Data, source: String? = nil, as entry: Entry, manifest: ManifestUpdate = .rehash
    ) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let folder = URL(fileURLWithPath: path)
        var written: [(file: String, bytes: [UInt8])] = []
        if let source { written.append((entry.sourceFile, Array(source.utf8))) }
        if let contract { written.append((entry.contractFile, Array(contract.utf8))) }
        written += [(entry.upFile, Array(up.utf8)), (entry.downFile, Array(down.utf8)), (entry.snapshotFile, [UInt8](snapshot))]
        for (file, bytes) in written { try Data(bytes).write(to: folder.appendingPathComponent(file), options: .atomic) }
        switch manifest {
        case .rehash: try rehash()
        case .addWritten: try recordInManifest(written)
        }
    }

    /// Records files just written in `migrations.sum`, adding or replacing their lines and
    /// keeping every other line as it is: the folder was verified before it was written to, so
    /// its other files are not read and hashed again (and an edit the manifest does not know
    /// stays reported). A folder without a manifest gets one from all its files (`rehash`).
    public func recordInManifest(_ written: [(file: String, bytes: [UInt8])]) throws {
        guard let sum = contents(of: Self.sumFile) else { return try rehash() }
        var hashes: [String: String] = [:]
        for (index, line) in sum.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, !(index == 0 && parts[0] == "total") else { continue }
            hashes[parts[0]] = parts[1]
        }
        for (file, bytes) in written { hashes[file] = SHA256.hex(bytes) }
        try writeManifest(hashes.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// Rewrites `migrations.sum` from the files present: after a deliberate edit. Read from the
    /// disk, as they are now, whatever reader the folder was given.
    public func rehash() throws {
        var lines: [(String, String)] = []
        for entry in MigrationDirectory(path: path).entries() {
            for file in (entry.files + entry.optionalFiles).sorted() {
                guard let data = FileManager.default.contents(atPath: path + "/" + file) else { continue }
                lines.append((file, SHA256.hex([UInt8](data))))
            }
        }
        try writeManifest(lines)
    }

    /// `migrations.sum`: the total, then a line per file, in file order.
    private func writeManifest(_ lines: [(String, String)]) throws {
        var text = "total \(Self.total(of: lines))\n"
        for (file, hash) in lines { text += "\(file) \(hash)\n" }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path).appendingPathComponent(Self.sumFile), options: .atomic)
    }

    // MARK: - A schema's folders, one per dialect

    /// The dialect whose migrations sit in the schema's folder itself; every other dialect has
    /// a subfolder named after it (`SQLDialectName.migrationSubfolder`).
    public static let rootDialect = SQLDialectName.default.rawValue

    /// A schema's folder for a dialect: `<root>/<Schema>/` for the default dialect,
    /// `<root>/<Schema>/<dialect>/` for the others (a name the registry does not know is taken
    /// as a subfolder).
    public static func folder(schema: String, root: String, dialect: String, files: any MigrationFileReading = DiskFiles()) -> MigrationDirectory {
        let subfolder = SQLDialectName(rawValue: dialect).map(\.migrationSubfolder) ?? dialect
        return MigrationDirectory(path: root + "/" + schema + (subfolder.map { "/" + $0 } ?? ""), files: files)
    }

    /// The same, for a dialect of the registry.
    public static func folder(schema: String, root: String, dialect: SQLDialectName, files: any MigrationFileReading = DiskFiles()) -> MigrationDirectory {
        folder(schema: schema, root: root, dialect: dialect.rawValue, files: files)
    }

    /// Every dialect folder of a schema that holds migrations or a manifest, the schema's own
    /// folder first, then its subfolders by name.
    public static func dialectFolders(schema: String, root: String) -> [(dialect: String, directory: MigrationDirectory)] {
        let base = root + "/" + schema
        var result: [(String, MigrationDirectory)] = []
        let own = MigrationDirectory(path: base)
        if own.holdsMigrations { result.append((rootDialect, own)) }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).sorted()
        for name in names where !name.hasPrefix(".") {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: base + "/" + name, isDirectory: &isFolder), isFolder.boolValue else { continue }
            let folder = MigrationDirectory(path: base + "/" + name)
            if folder.holdsMigrations { result.append((name, folder)) }
        }
        return result
    }

    /// Where a schema's dialect folders disagree: one number with two names is an error (the
    /// migrations were planned from different histories); a number one folder lacks is a
    /// warning (`schemagen generate` plans a folder that lags).
    public static func compareNumbering(_ folders: [(dialect: String, directory: MigrationDirectory)]) -> [Diagnostic] {
        guard let first = folders.first, folders.count > 1 else { return [] }
        var problems: [Diagnostic] = []
        let reference = Dictionary(first.directory.entries().map { ($0.number, $0) }, uniquingKeysWith: { a, _ in a })
        for (dialect, directory) in folders.dropFirst() {
            let entries = Dictionary(directory.entries().map { ($0.number, $0) }, uniquingKeysWith: { a, _ in a })
            for (number, entry) in entries.sorted(by: { $0.key < $1.key }) {
                let location = SourceLocation(file: directory.path + "/" + entry.upFile, line: 1, column: 1)
                if let twin = reference[number] {
                    if twin.name != entry.name {
                        problems.append(
                            Diagnostic(
                                .error, code: Code.dialectsDiffer,
                                message:
                                    "[\(dialect)] migration \(entry.prefix) is \(twin.prefix) in \(first.directory.path); each number must name the same migration in every dialect folder: rename one (all three files) and run `\(directory.rehashCommand)`",
                                at: location))
                    }
                } else {
                    problems.append(Diagnostic(.warning, code: Code.dialectsDiffer, message: "[\(dialect)] migration \(entry.prefix) has no counterpart in \(first.directory.path)", at: location))
                }
            }
            for (number, entry) in reference.sorted(by: { $0.key < $1.key }) where entries[number] == nil {
                problems.append(
                    Diagnostic(
                        .warning, code: Code.dialectsDiffer,
                        message: "[\(dialect)] \(directory.path) has no migration \(String(format: "%04d", number)) (\(entry.prefix) of \(first.dialect)); run `schemagen generate` to plan it",
                        at: SourceLocation(file: first.directory.path + "/" + entry.upFile, line: 1, column: 1)))
            }
        }
        return problems
    }

    /// Whether the folder has a migration file or a manifest.
    public var holdsMigrations: Bool {
        !entries().isEmpty || files.names(inFolder: path).contains(Self.sumFile)
    }

    /// The schema this folder belongs to and the migrations root above it, read from the path:
    /// `Migrations/Flights` and `Migrations/Flights/postgres` both belong to Flights.
    public var schemaAndRoot: (schema: String, root: String, dialect: String) {
        let name = (path as NSString).lastPathComponent
        let parent = (path as NSString).deletingLastPathComponent
        if Self.knownSubfolderNames.contains(name) || MigrationDirectory(path: parent).holdsMigrations {
            return ((parent as NSString).lastPathComponent, (parent as NSString).deletingLastPathComponent, name)
        }
        return (name, parent, Self.rootDialect)
    }

    /// Names a dialect subfolder has, for folders whose parent holds no migrations yet.
    static let knownSubfolderNames = Set(SQLDialectName.allCases.compactMap(\.migrationSubfolder))

    /// The command that accepts this folder's files as they are: `schemagen rehash Flights`,
    /// with `--migrations` when the root is not the default.
    public var rehashCommand: String {
        let (schema, root, _) = schemaAndRoot
        let normalizedRoot = root.hasSuffix("/") ? String(root.dropLast()) : root
        return "schemagen rehash \(schema)" + (normalizedRoot == "Migrations" || normalizedRoot.isEmpty ? "" : " --migrations \(normalizedRoot)")
    }

    static func total(of lines: [(String, String)]) -> String {
        SHA256.hex(lines.map { "\($0.0) \($0.1)\n" }.joined())
    }

}
