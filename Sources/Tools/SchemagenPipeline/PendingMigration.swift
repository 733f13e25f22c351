import Diagnostics
import Foundation
import MigrationFiles
import MigrationPlanner
import RelationalModel
import SQLDialects
import SchemaKit
import SchemaMetadata

/// Diagnostic codes of planning a migration for a schema.
public enum PlanningCode: String, DiagnosticCode {
    case versionNotBumped = "version-not-bumped"
    case migrationNotPlanned = "migration-not-planned"
    case nameTooLong = "name-too-long"
}

/// The migration part of `generate` and `diff`: what changed since the newest migration of a
/// schema, and the migration that would record it.
public struct PendingMigration: Sendable {
    public var schema: Schema
    public var directory: MigrationDirectory
    public var migration: Migration
    public var entry: MigrationDirectory.Entry
    public var findings: [Diagnostic]
    /// The schema file's text at this version, written beside the migration (`sourceFile`).
    public var source: String? = nil
    /// The migration's SQL, rendered once: the files written and the scripts embedded in the
    /// generated code are the same text.
    public let sql: MigrationScript.DialectSQL

    public init(schema: Schema, directory: MigrationDirectory, migration: Migration, entry: MigrationDirectory.Entry, findings: [Diagnostic], source: String? = nil) {
        self.schema = schema
        self.directory = directory
        self.migration = migration
        self.entry = entry
        self.findings = findings
        self.source = source
        sql = MigrationScript.DialectSQL(up: migration.upSQL(), down: migration.downSQL(), contract: migration.contractSQL())
    }

    public var hasBlockingFindings: Bool { findings.contains { $0.severity == .error } }

    public enum Outcome: Sendable {
        case upToDate
        /// The migrations to write: a dialect folder's missing history first, then the new one.
        case pending([PendingMigration])
        /// Problems that stop the run: a tampered folder, a version not bumped.
        case failed([Diagnostic])
    }

    /// A schema's migration folder for a dialect (`MigrationDirectory.folder`).
    public static func directory(_ schema: String, root: String, dialect: SQLDialectName, files: any MigrationFileReading = DiskFiles()) -> MigrationDirectory {
        MigrationDirectory.folder(schema: schema, root: root, dialect: dialect, files: files)
    }

    public static func renderer(_ dialect: SQLDialectName) -> any MigrationRenderer { MigrationRenderers.renderer(for: dialect) }

    /// Compares the schema's relational model with the snapshot of the newest migration in the
    /// dialect's folder. A folder that lags behind `reference` (the first dialect's folder) first
    /// gets the reference's history re-planned for its dialect, with the same numbers and names
    /// from the same snapshots, so every dialect's folder numbers alike.
    public static func plan(
        for schema: Schema, model: SchemaSnapshot? = nil, root: String, dialect: SQLDialectName = .default,
        reference: MigrationDirectory? = nil, name: String?, allowDestructive: Bool, online: Bool = false, sourceText: String? = nil,
        files: any MigrationFileReading = DiskFiles()
    ) -> Outcome {
        let directory = directory(schema.name, root: root, dialect: dialect, files: files)
        let renderer = renderer(dialect)
        let problems = directory.verify()
        if !problems.isEmpty { return .failed(problems) }
        func unreadable(_ directory: MigrationDirectory, _ file: String, _ error: any Error) -> Outcome {
            .failed([Diagnostic(.error, code: MigrationDirectory.Code.unreadable, message: "cannot read \(file): \(error)", at: SourceLocation(file: directory.path + "/" + file, line: 1, column: 1))])
        }
        var pending: [PendingMigration] = []
        var latest: SchemaSnapshot?
        do {
            latest = try directory.latestSnapshot()
        } catch {
            return unreadable(directory, directory.entries().last?.snapshotFile ?? "snapshot", error)
        }
        var lastNumber = directory.entries().last?.number ?? 0
        if let reference, reference.path != directory.path {
            var previous: SchemaSnapshot?
            for entry in reference.entries() {
                let snapshot: SchemaSnapshot
                do {
                    snapshot = try reference.snapshot(of: entry)
                } catch {
                    return unreadable(reference, entry.snapshotFile, error)
                }
                defer { previous = snapshot }
                guard entry.number > lastNumber else { continue }
                let migration = Migration(from: previous, to: snapshot, renderer: renderer, online: online)
                // History already reviewed where it was planned first: no findings again.
                pending.append(
                    PendingMigration(
                        schema: schema, directory: directory, migration: migration, entry: entry, findings: [], source: reference.contents(of: entry.sourceFile)))
                latest = snapshot
                lastNumber = entry.number
            }
        }
        let snapshot = model ?? SnapshotBuilder.snapshot(of: schema)
        // Names the engine would cut are refused: two could become one, silently.
        if let limit = renderer.dialect.capabilities.maximumIdentifierBytes {
            let long = snapshot.tables.flatMap { table in [table.name].filter { $0.utf8.count > limit } + table.columns.map(\.name).filter { $0.utf8.count > limit }.map { "\(table.name).\($0)" } }
            if !long.isEmpty {
                return .failed(
                    long.map { name in
                        Diagnostic(
                            .error, code: PlanningCode.nameTooLong, message: "'\(name)' is longer than the \(limit) bytes \(dialect.rawValue) keeps of a name; set a shorter 'table' or 'column'",
                            at: SourceLocation(file: schema.sourcePath, line: 1, column: 1))
                    })
            }
        }
        // A newer version that changes no table is recorded all the same, as a migration with no
        // statements: each version's schema text is a model SwiftData and Core Data keep, and one
        // left out would be a version an app shipped and the chain no longer knows.
        let recorded = recordedSchema(since: pending, in: directory), sealing = recorded.map { MigrationLint.encryptionFindings(previous: $0, schema: schema) } ?? []
        if let latest, latest.matches(snapshot), schema.version <= latest.version {
            // A change to how values are sealed changes no table, version bumped or not.
            if sealing.contains(where: { $0.severity == .error }) { return .failed(sealing) }
            return pending.isEmpty ? .upToDate : .pending(pending)
        }
        if let latest, schema.version <= latest.version {
            return .failed([
                Diagnostic(
                    .error, code: PlanningCode.versionNotBumped,
                    message: "schema '\(schema.name)' changed since its migration for version \(latest.version), but its version is still \(schema.version); set 'version: \(latest.version + 1)'",
                    at: SourceLocation(file: schema.sourcePath, line: 1, column: 1))
            ])
        }
        let migration = Migration(from: latest, to: snapshot, renderer: renderer, online: online)
        let entry = MigrationDirectory.Entry(number: lastNumber + 1, name: slug(name ?? derivedName(migration, schema: schema)))
        pending.append(
            PendingMigration(
                schema: schema, directory: directory, migration: migration, entry: entry,
                findings: lintFindings(migration, schema: schema, allowDestructive: allowDestructive, previous: recorded)
                    + sealing,
                source: sourceText ?? (try? String(contentsOfFile: schema.sourcePath, encoding: .utf8))))
        return .pending(pending)
    }

    /// Findings of one schema planned for several dialects, each said once: a finding every
    /// dialect reports is kept (untagged) with the first dialect's; one only some dialects
    /// report says which, as `[postgres] ...`. The result lists each dialect's findings.
    public static func merge(_ perDialect: [(dialect: SQLDialectName, findings: [Diagnostic])]) -> [(dialect: SQLDialectName, findings: [Diagnostic])] {
        guard perDialect.count > 1 else { return perDialect }
        let shared = perDialect.dropFirst().reduce(Set(perDialect[0].findings)) { $0.intersection($1.findings) }
        return perDialect.enumerated().map { offset, entry in
            let findings = entry.findings.compactMap { finding -> Diagnostic? in
                if shared.contains(finding) { return offset == 0 ? finding : nil }
                var tagged = finding
                tagged.message = "[\(entry.dialect.rawValue)] " + finding.message
                return tagged
            }
            return (entry.dialect, findings)
        }
    }

    /// The general lint, and the lock lint for engines whose DDL blocks other sessions.
    /// `previous`: the schema of the version migrated from, where it is known.
    public static func lintFindings(_ migration: Migration, schema: Schema, allowDestructive: Bool, previous: Schema? = nil) -> [Diagnostic] {
        var findings = MigrationLint.findings(for: migration, schema: schema, allowDestructive: allowDestructive, previous: previous)
        if let online = migration.online {
            // Planned online: what still blocks writers is what the plan could not make online.
            findings += online.offline.map {
                Diagnostic(.warning, code: MigrationLint.Code.notOnline, message: "not online: \($0)", at: SourceLocation(file: schema.sourcePath, line: 1, column: 1))
            }
            findings += online.refused.map {
                Diagnostic(.error, code: MigrationLint.Code.onlineRefused, message: "cannot be planned online: \($0)", at: SourceLocation(file: schema.sourcePath, line: 1, column: 1))
            }
        } else if migration.renderer.dialect.capabilities.lockingDDL {
            findings += MigrationLint.lockFindings(for: migration, schema: schema)
        }
        return findings
    }

    /// The schema text the newest migration recorded (`pending`'s, re-planned from the
    /// reference folder, else the folder's; a hand-written one records none: the one before it),
    /// which the lint reads what a snapshot does not say from (`MigrationLint.encryptionFindings`,
    /// `sealed-name-changed`). Nil where no migration recorded one, or it does not load
    /// (`SchemaHistory` reports those).
    static func recordedSchema(since pending: [PendingMigration], in directory: MigrationDirectory) -> Schema? {
        let recorded = pending.reversed().lazy.compactMap(\.source).first ?? directory.entries().reversed().lazy.compactMap { directory.contents(of: $0.sourceFile) }.first
        guard let recorded else { return nil }
        return SchemaLoader.load(source: SourceFile(path: directory.path, bytes: Array(recorded.utf8))).schema
    }

    /// Where the build-tool path stops: the schema is ahead of its committed migrations, and a
    /// build must not run with a stale history. Says which command plans the missing migration.
    public static func notPlanned(_ pending: PendingMigration, root: String) -> Diagnostic {
        let what =
            pending.migration.from.map { "differs from its newest migration (version \($0.version)) in \(pending.directory.path)" }
            ?? "has no migrations in \(pending.directory.path)"
        // The command plugin builds schemagen as the build-tool plugin does (for the host), so
        // planning costs no second build of the tool; `swift run schemagen` would build another.
        let command = "swift package --allow-writing-to-package-directory schemagen generate --migrations-only --schema \(pending.schema.sourcePath) --migrations \(root)"
        return Diagnostic(
            .error, code: PlanningCode.migrationNotPlanned,
            message: "schema '\(pending.schema.name)' version \(pending.schema.version) \(what); plan it with `\(command)`, review and commit the new files, then build again",
            at: SourceLocation(file: pending.schema.sourcePath, line: 1, column: 1))
    }

    /// The schema's migrations as templates see them: those on disk, then the ones about to be
    /// written, in the default dialect, each with its SQL in every other dialect whose folder
    /// holds it (`MigrationScript.dialects`).
    public static func scripts(for schema: Schema, root: String, pending: [PendingMigration], files: any MigrationFileReading = DiskFiles()) -> [MigrationScript] {
        func sql(in dialect: SQLDialectName) -> [Int: (name: String, sql: MigrationScript.DialectSQL)] {
            let directory = directory(schema.name, root: root, dialect: dialect, files: files)
            var found: [Int: (String, MigrationScript.DialectSQL)] = [:]
            for entry in directory.entries() {
                guard let up = directory.contents(of: entry.upFile), let down = directory.contents(of: entry.downFile) else { continue }
                found[entry.number] = (entry.name, MigrationScript.DialectSQL(up: up, down: down, contract: directory.contents(of: entry.contractFile)))
            }
            for migration in pending where migration.directory.path == directory.path {
                found[migration.entry.number] = (migration.entry.name, migration.sql)
            }
            return found
        }
        let others = SQLDialectName.allCases.filter { $0 != .default }.map { ($0.rawValue, sql(in: $0)) }
        return sql(in: .default).sorted { $0.key < $1.key }.map { number, migration in
            MigrationScript(
                version: number, name: migration.name, up: migration.sql.up, down: migration.sql.down,
                dialects: Dictionary(uniqueKeysWithValues: others.compactMap { dialect, scripts in scripts[number].map { (dialect, $0.sql) } }))
        }
    }

    /// `create_flights`, `add_flights_status`, `rename_airports_state_to_region`, ... from the
    /// first change; `_and_more` when there are others.
    static func derivedName(_ migration: Migration, schema: Schema) -> String {
        guard migration.from != nil else { return "create_\(Naming.snakeCase(schema.name))" }
        let meaningful = migration.steps.filter {
            switch $0 {
            case .createIndex, .dropIndex, .comment: false
            case .createTable(let table): !migration.steps.contains { if case .fillTable(let fill) = $0 { fill.target == table.name } else { false } }
            default: true
            }
        }
        guard let first = meaningful.first ?? migration.steps.first else {
            // Grants, which only some engines render, name the migration in every dialect.
            let roles = migration.changes.compactMap { if case .grant(nil, let role, _, _) = $0 { role } else { nil } }
            return roles.isEmpty ? "v\(schema.version)" : "grant_" + roles.joined(separator: "_")
        }
        let name: String =
            switch first {
            case .createTable(let table): "create_\(table.name)"
            case .dropTable(let table): "drop_\(table.name)"
            case .renameTable(let from, let to): "rename_\(from)_to_\(to)"
            case .addColumn(let table, let column): "add_\(table)_\(column.name)"
            case .dropColumn(let table, let column): "drop_\(table)_\(column.name)"
            case .renameColumn(let table, let from, let to): "rename_\(table)_\(from)_to_\(to)"
            case .rebuildTable(let change): "change_\(change.to.name)"
            case .createIndex(let table, let index): "index_\(table)_\(index.columns.joined(separator: "_"))"
            case .dropIndex(let table, let index): "drop_index_\(table)_\(index.columns.joined(separator: "_"))"
            case .alterColumn(let table, _, let column): "change_\(table)_\(column.name)"
            case .addForeignKey(let table, let key): "link_\(table)_\(key.table)"
            case .dropForeignKey(let table, let key): "unlink_\(table)_\(key.table)"
            case .dropPrimaryKey(let table, _), .addPrimaryKey(let table, _): "rekey_\(table)"
            case .renameConstraints(let table, _, _, _): "rename_\(table)_constraints"
            case .comment(let table, _, _, _): "comment_\(table)"
            case .fillTable(let fill), .unfillTable(let fill): "split_\(fill.source)_into_\(fill.target)"
            case .grant(_, let role, _, _): "grant_\(role)"
            }
        return meaningful.count > 1 ? name + "_and_more" : name
    }

    /// Lowercase letters, digits and `_`, at most 60 characters.
    static func slug(_ text: String) -> String {
        var out = ""
        for character in Naming.snakeCase(text) {
            if character.isASCII, character.isLetter || character.isNumber { out.append(character) } else if out.last != "_" { out.append("_") }
        }
        let trimmed = out.trimmingCharacters(in: CharacterSet(charactersIn: "_"))
        return String((trimmed.isEmpty ? "migration" : trimmed).prefix(60))
    }
}
