import CommandLineKit
import Diagnostics
import Foundation
import MigrationFiles
import RelationalModel
import SchemaKit

/// `schemagen restore-versions`: the schema text of migrations planned before each migration
/// recorded it (`NNNN_name.schema.yaml`), taken from version control.
public enum RestoreVersionsCommand: Command {
    public static let spec = CommandSpec(
        name: "restore-versions",
        abstract: "Recover the schema text of older migrations from git, for the Apple targets' version history.",
        discussion: """
            Migrations planned before schemagen recorded each version's schema beside its migration
            lack NNNN_name.schema.yaml, so generate --target swiftdata and export coredata leave those
            versions out. For each such migration of the schema, in every dialect folder, this takes
            the schema file as it was in the commit that added the migration's snapshot (git log, git
            show), checks that it is that version and builds that snapshot's tables, writes it and
            rehashes migrations.sum. A text that fails the check is not written. Exit status: 0
            every missing text restored (or none missing), 1 some could not be (each is named with
            the reason), 2 usage error, not a git work tree, or a file that cannot be written.
            """,
        options: [
            .value("schema", short: "s", valueName: "file", help: "The schema file, as git knows it."),
            .value("migrations", short: "m", valueName: "dir", help: "Where each schema's migration folder is.", defaultValue: "Migrations"),
        ])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let schemaPath = arguments.value("schema") else {
            io.writeError("schemagen: error: restore-versions needs --schema FILE\n")
            return .usageOrIO
        }
        let (loaded, failure) = SchemaInput.oneSchema(schemaPath, io: io)
        guard let schema = loaded else { return failure ?? .failure }
        let root = arguments.value("migrations") ?? "Migrations"
        guard let top = git(["rev-parse", "--show-toplevel"]).map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }), !top.isEmpty else {
            io.writeError("schemagen: error: not in a git work tree: the older versions can only come from version control\n")
            return .usageOrIO
        }
        guard let schemaInRepository = relative(schemaPath, to: top) else {
            io.writeError("schemagen: error: '\(schemaPath)' is not inside the git work tree at \(top)\n")
            return .usageOrIO
        }
        var restored = 0, missed = 0
        for (_, directory) in MigrationDirectory.dialectFolders(schema: schema.name, root: root) {
            var wrote = false
            for entry in directory.entries() where directory.contents(of: entry.sourceFile) == nil {
                let target = directory.path + "/" + entry.sourceFile
                switch restore(entry, in: directory, schemaInRepository: schemaInRepository, top: top) {
                case .success(let (text, commit)):
                    do {
                        try Data(text.utf8).write(to: URL(fileURLWithPath: target), options: .atomic)
                    } catch {
                        io.writeError("\(target): error: cannot write it: \(error.localizedDescription)\n")
                        return .usageOrIO
                    }
                    io.writeOutput("restored \(target) from \(commit.prefix(12))\n")
                    restored += 1
                    wrote = true
                case .failure(let reason):
                    io.writeError("\(target): error: not restored: \(reason.description)\n")
                    missed += 1
                }
            }
            if wrote {
                do { try directory.rehash() } catch {
                    io.writeError("schemagen: error: cannot write '\(directory.path)/\(MigrationDirectory.sumFile)': \(error.localizedDescription)\n")
                    return .usageOrIO
                }
            }
        }
        io.writeOutput("\(restored) restored, \(missed) not restored\n")
        return missed == 0 ? .success : .failure
    }

    struct Reason: Error, CustomStringConvertible {
        let description: String
    }

    /// The schema text at the commit that added the entry's snapshot, checked against it.
    static func restore(_ entry: MigrationDirectory.Entry, in directory: MigrationDirectory, schemaInRepository: String, top: String) -> Result<(String, String), Reason> {
        let snapshotPath = directory.path + "/" + entry.snapshotFile
        guard let snapshotInRepository = relative(snapshotPath, to: top),
            let log = git(["log", "--diff-filter=A", "--format=%H", "--", snapshotInRepository], in: top),
            let commit = log.split(separator: "\n").last.map(String.init)
        else {
            return .failure(Reason(description: "git has no commit that added \(entry.snapshotFile); write the schema as it was at this version by hand and run `\(directory.rehashCommand)`"))
        }
        guard let text = git(["show", "\(commit):\(schemaInRepository)"], in: top) else {
            return .failure(Reason(description: "\(schemaInRepository) did not exist in \(commit.prefix(12)), which added \(entry.snapshotFile) (was the schema file moved?)"))
        }
        guard let version = SchemaLoader.load(source: SourceFile(path: schemaInRepository, bytes: Array(text.utf8))).schema else {
            return .failure(Reason(description: "the schema in \(commit.prefix(12)) does not load with this schemagen"))
        }
        guard let snapshot = try? directory.snapshot(of: entry) else {
            return .failure(Reason(description: "cannot read \(entry.snapshotFile)"))
        }
        guard version.version == snapshot.version else {
            return .failure(
                Reason(
                    description:
                        "the schema in \(commit.prefix(12)) is version \(version.version), but \(entry.snapshotFile) is version \(snapshot.version) (the migration was planned before that commit's schema was)"
                ))
        }
        if snapshot.format == SchemaSnapshot.currentFormat, !snapshot.matches(SnapshotBuilder.snapshot(of: version)) {
            return .failure(Reason(description: "the schema in \(commit.prefix(12)) does not build the tables of \(entry.snapshotFile)"))
        }
        return .success((text, commit))
    }

    /// `path` relative to the work tree's top folder, or nil when it is outside it.
    static func relative(_ path: String, to top: String) -> String? {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        let base = URL(fileURLWithPath: top).standardizedFileURL.resolvingSymlinksInPath().path
        guard absolute.hasPrefix(base + "/") else { return nil }
        return String(absolute.dropFirst(base.count + 1))
    }

    /// What git printed, or nil when it failed (or is not installed).
    static func git(_ arguments: [String], in folder: String? = nil) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["git"] + arguments
        if let folder { process.currentDirectoryURL = URL(fileURLWithPath: folder) }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        try? output.fileHandleForReading.close()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
