import Diagnostics
import Foundation
import MigrationFiles
import RelationalModel
import SQLDialects
import SchemaKit

/// Every version of a schema as it was written: the text committed beside each migration
/// (`NNNN_name.schema.yaml`), then the schema as it is now. Targets that keep a model per version
/// (SwiftData's `VersionedSchema` chain, a Core Data model bundle) are generated from it.
public struct SchemaHistory: Sendable {
    /// One version: its schema, and the migration that recorded it (nil for a version not
    /// planned yet, the schema as it is now).
    public struct Version: Sendable {
        public var schema: Schema
        public var migration: MigrationDirectory.Entry?
    }

    public enum Code: String, DiagnosticCode {
        /// A migration has no copy of its schema: planned before versions were recorded.
        case sourceMissing = "history-source-missing"
        /// A version's schema does not load, or does not build its migration's tables.
        case sourceInvalid = "history-source-invalid"
        /// The schema changed its models after its version was recorded, without a new version.
        case versionChanged = "history-version-changed"
    }

    /// Oldest first; each schema version once.
    public var versions: [Version]
    /// Versions left out, and why (warnings); a tampered folder's problems (errors).
    public var diagnostics: [Diagnostic]
    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

    /// The history of `schema` in its reference migration folder (SQLite's, else its first
    /// dialect's): each migration's recorded schema, checked against the migration's snapshot,
    /// then `schema` itself when it is newer (or the same version, whose text it updates).
    ///
    ///     let history = SchemaHistory.load(for: schema, root: "Migrations", dialects: [.sqlite])
    ///     for version in history.versions { print(version.schema.version, version.migration?.prefix ?? "not planned yet") }
    public static func load(for schema: Schema, root: String, dialects: [SQLDialectName], files: any MigrationFileReading = DiskFiles()) -> SchemaHistory {
        let reference = dialects.contains(.default) || dialects.isEmpty ? SQLDialectName.default : dialects[0]
        let directory = PendingMigration.directory(schema.name, root: root, dialect: reference, files: files)
        var versions: [Version] = []
        // A folder edited behind its manifest holds versions nobody reviewed: its errors stop the caller.
        var diagnostics: [Diagnostic] = directory.verify()
        for entry in directory.entries() {
            let path = directory.path + "/" + entry.sourceFile
            let at = SourceLocation(file: path, line: 1, column: 1)
            guard let text = directory.contents(of: entry.sourceFile) else {
                // A hand-written migration keeps the version before it: nothing to record.
                if let snapshot = try? directory.snapshot(of: entry), versions.contains(where: { $0.schema.version == snapshot.version }) { continue }
                diagnostics.append(
                    Diagnostic(
                        .warning, code: Code.sourceMissing,
                        message:
                            "migration \(entry.prefix) has no copy of the schema it was planned from, so its version is left out of the version history; restore the schema file as it was then (for example `git show <commit>:\(schema.sourcePath) > \(path)`, the commit that added \(entry.snapshotFile)) and run `\(directory.rehashCommand)`",
                        at: at))
                continue
            }
            let loaded = SchemaLoader.load(source: SourceFile(path: path, bytes: Array(text.utf8)))
            guard let version = loaded.schema else {
                let first = loaded.diagnostics.first { $0.severity == .error }
                diagnostics.append(
                    Diagnostic(
                        .warning, code: Code.sourceInvalid,
                        message: "the schema recorded with migration \(entry.prefix) does not load (\(first?.message ?? "invalid")); its version is left out of the version history",
                        at: first?.location ?? at))
                continue
            }
            // A snapshot of an older format was written by a tool that built some tables
            // differently (encrypted text, say): only the current format can be compared.
            if let snapshot = try? directory.snapshot(of: entry), snapshot.format == SchemaSnapshot.currentFormat,
                !snapshot.matches(SnapshotBuilder.snapshot(of: version))
            {
                diagnostics.append(
                    Diagnostic(
                        .warning, code: Code.sourceInvalid,
                        message: "the schema recorded with migration \(entry.prefix) does not build the tables of \(entry.snapshotFile); its version is left out of the version history",
                        at: at))
                continue
            }
            if let last = versions.last, last.schema.version == version.version { versions.removeLast() }
            versions.append(Version(schema: version, migration: entry))
        }
        if let last = versions.last, last.schema.version == schema.version {
            // The same version: the schema as it is now (its docs, say). A released model that
            // changes in place is what makes SwiftData refuse a store as of an unknown version.
            if modelShape(last.schema) != modelShape(schema), let entry = last.migration {
                diagnostics.append(
                    Diagnostic(
                        .warning, code: Code.versionChanged,
                        message:
                            "schema '\(schema.name)' version \(schema.version) differs from the schema recorded with migration \(entry.prefix) in its entities, attributes or options, though no table changed; a released SwiftData or Core Data model must not change, so bump 'version' and generate again",
                        at: SourceLocation(file: schema.sourcePath, line: 1, column: 1)))
            }
            versions[versions.count - 1].schema = schema
        } else if versions.last.map({ $0.schema.version < schema.version }) ?? true {
            versions.append(Version(schema: schema, migration: nil))
        }
        return SchemaHistory(versions: versions, diagnostics: diagnostics)
    }

    /// The schema without what no model sees: docs, source positions, the file's path, and the
    /// settings of its migrations, store and sync (dialects, online, history, the `sync:` block,
    /// which Core Data keeps in user info, outside its version hashes).
    static func modelShape(_ schema: Schema) -> Schema {
        var shape = schema
        shape.doc = nil
        shape.sync = nil
        shape.sourcePath = ""
        shape.dialects = nil
        shape.online = nil
        shape.recordsHistory = true
        shape.recordsInsertValues = true
        for index in shape.enums.indices {
            shape.enums[index].doc = nil
            shape.enums[index].location = nil
            for item in shape.enums[index].cases.indices { shape.enums[index].cases[item].location = nil }
        }
        for index in shape.values.indices {
            shape.values[index].doc = nil
            shape.values[index].location = nil
            for field in shape.values[index].fields.indices {
                shape.values[index].fields[field].doc = nil
                shape.values[index].fields[field].location = nil
            }
        }
        for index in shape.entities.indices {
            shape.entities[index].doc = nil
            shape.entities[index].location = nil
            for member in shape.entities[index].attributes.indices {
                shape.entities[index].attributes[member].doc = nil
                shape.entities[index].attributes[member].location = nil
            }
            for member in shape.entities[index].relationships.indices {
                shape.entities[index].relationships[member].doc = nil
                shape.entities[index].relationships[member].location = nil
            }
        }
        return shape
    }
}
