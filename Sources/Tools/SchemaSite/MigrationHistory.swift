import Diagnostics
import Foundation
import MigrationFiles
import MigrationPlanner
import RelationalModel
import SchemaKit

/// A schema's applied history as the site shows it: each migration's SQL, and the lint
/// findings of the change it made (from its snapshot and the one before).
enum MigrationHistory {
    struct Finding: Equatable {
        var severity: String
        var code: String
        var message: String
    }

    struct Entry: Equatable {
        var version: Int
        var name: String
        var up: String
        var down: String
        var findings: [Finding]
    }

    static func read(_ directory: MigrationDirectory, schema: Schema) -> [Entry] {
        var previous: SchemaSnapshot?
        var entries: [Entry] = []
        for entry in directory.entries() {
            let snapshot = directory.contents(of: entry.snapshotFile).flatMap { try? SchemaSnapshot.decode(Data($0.utf8)) }
            var findings: [Finding] = []
            if let snapshot {
                // The findings as warnings: the migration was accepted when it was written.
                let migration = Migration(from: previous, to: snapshot)
                findings = MigrationLint.findings(for: migration, schema: schema, allowDestructive: true).map {
                    Finding(severity: $0.severity == .error ? "error" : "warning", code: $0.code, message: $0.message)
                }
            } else {
                findings = [Finding(severity: "warning", code: "snapshot-unreadable", message: "\(entry.snapshotFile) is missing or unreadable, so this change was not linted")]
            }
            entries.append(
                Entry(
                    version: entry.number, name: entry.name,
                    up: directory.contents(of: entry.upFile) ?? "(missing)", down: directory.contents(of: entry.downFile) ?? "(missing)",
                    findings: findings))
            previous = snapshot ?? previous
        }
        return entries
    }
}
