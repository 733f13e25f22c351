import Diagnostics
import Foundation
import MigrationFiles
import RelationalModel
import SQLDialects
import SchemaKit

/// A migration for SQL the schema language does not express (extensions, views, triggers,
/// grants, row-level security, data fixes): an empty numbered up/down pair in every dialect
/// folder of a schema, numbered after the newest migration, recorded in each manifest. Its
/// snapshot is the one before it (the schema's tables do not change), so the next planned
/// migration follows it.
public enum HandWrittenMigration {
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// A folder does not match its manifest, or the folders are out of step.
        case folders([Diagnostic])
        case io(String)

        public var description: String {
            switch self {
            case .folders(let problems): problems.map(\.message).joined(separator: "\n")
            case .io(let message): message
            }
        }
    }

    /// Writes the pair into the folder of each dialect; the folders' paths and the new entry.
    public static func create(
        name: String, schema: Schema, dialects: [SQLDialectName], root: String,
        runsInTransaction: Bool = true
    ) throws(Failure) -> (folders: [MigrationDirectory], entry: MigrationDirectory.Entry) {
        let folders = dialects.map { PendingMigration.directory(schema.name, root: root, dialect: $0) }
        let problems = folders.flatMap { $0.verify() }
        guard problems.isEmpty else { throw .folders(problems) }
        // The folders must be in step: the same numbers, so the new one is the same everywhere.
        let numbers = folders.map { $0.entries().map(\.number) }
        if let lagging = zip(folders, numbers).first(where: { $0.1 != numbers.max(by: { $0.count < $1.count }) }) {
            throw .folders([
                Diagnostic(
                    .error, code: MigrationDirectory.Code.dialectsDiffer,
                    message: "\(lagging.0.path) is behind the schema's other migration folders; run `schemagen generate` first so every dialect has the same migrations",
                    at: SourceLocation(file: lagging.0.path, line: 1, column: 1))
            ])
        }
        let entry = MigrationDirectory.Entry(number: (numbers.first?.last ?? 0) + 1, name: PendingMigration.slug(name))
        for (dialect, folder) in zip(dialects, folders) {
            let snapshot: SchemaSnapshot
            do {
                snapshot = try folder.latestSnapshot() ?? SchemaSnapshot(schema: schema.name, version: 0, tables: [])
            } catch {
                throw .io("cannot read the newest snapshot in \(folder.path): \(error)")
            }
            func file(_ direction: MigrationHeader.Direction) -> String {
                let header = MigrationHeader(
                    schema: schema.name, dialect: dialect.rawValue, direction: direction,
                    fromVersion: snapshot.version, toVersion: snapshot.version, runsInTransaction: runsInTransaction)
                return header.text + """
                    -- \(schema.name): \(entry.prefix) (\(direction.rawValue)), written by hand for \(dialect.rawValue) (`schemagen new-migration`).
                    -- Write the \(direction == .up ? "SQL to apply" : "SQL that undoes the up file") below, then run `\(folder.rehashCommand)`.
                    -- The header above tells the migrator how to run it: set 'transaction: no' for a
                    -- statement no transaction may hold (CREATE INDEX CONCURRENTLY), 'loses-data: yes' when
                    -- \(direction == .up ? "it" : "going down") loses data. The schema's tables are the same before and after.

                    """
            }
            do {
                try folder.write(up: file(.up), down: file(.down), snapshot: snapshot.canonicalJSON(), as: entry)
            } catch {
                throw .io("cannot write \(entry.prefix) to \(folder.path): \(error.localizedDescription)")
            }
        }
        return (folders, entry)
    }
}
