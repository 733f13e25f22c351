import Diagnostics
import RelationalModel
import SchemaKit
import SchemaMetadata

/// Destructive or risky changes in a migration, pointed at the schema line responsible.
/// Destructive ones are errors unless allowed; a required column with no value for existing
/// rows is always an error.
public enum MigrationLint {
    public enum Code: String, DiagnosticCode {
        case dropTable = "drop-table"
        case dropColumn = "drop-column"
        case narrowing = "narrowing-conversion"
        case requiredWithoutDefault = "required-without-default"
        case newUnique = "new-unique"
        case possibleRename = "possible-rename"
        case dataMigration = "data-migration"
        case enumCasesRemoved = "enum-cases-removed"
        case downLosesData = "down-loses-data"
        case downMayFail = "down-may-fail"
        // Locks (PostgreSQL): what blocks other sessions while the migration runs.
        case lockIndex = "lock-create-index"
        case lockRewriteColumn = "lock-add-column-rewrite"
        case lockSetNotNull = "lock-set-not-null"
        case lockTypeChange = "lock-type-change"
        case lockForeignKey = "lock-foreign-key"
        case lockRename = "lock-rename"
    }

    public static func findings(for migration: Migration, schema: Schema, allowDestructive: Bool) -> [Diagnostic] {
        guard let old = migration.from else { return [] }
        let changes = SchemaDiffer.diff(from: old, to: migration.to)
        var findings: [Diagnostic] = []
        let fileStart = SourceLocation(file: schema.sourcePath, line: 1, column: 1)
        func entity(_ table: TableSnapshot) -> Entity? { table.entity.flatMap(schema.entity(named:)) }
        func location(_ table: TableSnapshot, column: ColumnSnapshot? = nil) -> SourceLocation {
            let owner = entity(table)
            if let property = column?.property,
               let found = owner?.attribute(named: property)?.location ?? owner?.relationship(named: property)?.location {
                return found
            }
            return owner?.location ?? fileStart
        }
        func destructive(_ code: Code, _ message: String, at place: SourceLocation) {
            let suffix = allowDestructive ? "" : "; pass --allow-destructive if that is intended"
            findings.append(Diagnostic(allowDestructive ? .warning : .error, code: code, message: message + suffix, at: place))
        }

        let created = changes.compactMap { if case .createTable(let table) = $0 { table } else { nil } }
        for change in changes {
            switch change {
            case .createTable:
                break
            case .dropTable(let table):
                destructive(Code.dropTable, "dropping table '\(table.name)' deletes its rows", at: fileStart)
                let shape = Set(table.columns.map { "\($0.name):\($0.kind)" })
                if let twin = created.first(where: { Set($0.columns.map { "\($0.name):\($0.kind)" }) == shape }), let name = twin.entity {
                    findings.append(Diagnostic(.warning, code: Code.possibleRename, message: "'\(name)' looks like '\(table.entity ?? table.name)' renamed; add 'renamedFrom: \(table.entity ?? table.name)' to keep its rows", at: location(twin)))
                }
            case .alterTable(let tableChange):
                let table = tableChange.to
                for column in tableChange.droppedColumns {
                    destructive(Code.dropColumn, "dropping column '\(table.name).\(column.name)' deletes its values", at: location(table))
                    if let twin = tableChange.addedColumns.first(where: { $0.kind == column.kind && $0.renamedFrom == nil }) {
                        findings.append(Diagnostic(.warning, code: Code.possibleRename, message: "'\(twin.property ?? twin.name)' looks like '\(column.property ?? column.name)' renamed; add 'renamedFrom: \(column.property ?? column.name)' to keep its values", at: location(table, column: twin)))
                    }
                }
                for column in tableChange.addedColumns where !column.isNullable && column.defaultValue == nil {
                    findings.append(Diagnostic(.error, code: Code.requiredWithoutDefault, message: "new required column '\(table.name).\(column.name)' has no value for the existing rows; give it a default or make it optional", at: location(table, column: column)))
                }
                for (before, after) in tableChange.changedColumns {
                    if before.isNullable, !after.isNullable, after.defaultValue == nil || after.defaultValue == .null {
                        findings.append(Diagnostic(.error, code: Code.requiredWithoutDefault, message: "'\(table.name).\(after.name)' becomes required but has no default for rows where it is empty; add a default (used as the backfill value)", at: location(table, column: after)))
                    }
                    if !before.isNullable, after.isNullable, before.defaultValue == nil || before.defaultValue == .null {
                        findings.append(Diagnostic(.warning, code: Code.downMayFail, message: "'\(table.name).\(after.name)' becomes optional; the down migration fails once a row holds null in it, because version \(old.version) requires a value and has no default to fill in", at: location(table, column: after)))
                    }
                    if isNarrowing(from: before.kind, to: after.kind) {
                        destructive(Code.narrowing, "converting '\(table.name).\(after.name)' from \(before.kind) to \(after.kind) can lose or reject values", at: location(table, column: after))
                    }
                    if (before.kind == .blob) != (after.kind == .blob), before.kind == .blob || after.kind == .blob {
                        findings.append(Diagnostic(.warning, code: Code.dataMigration, message: "'\(table.name).\(after.name)' moves between the row and external storage; the migration converts the column but the bytes must be moved by a data migration you add to it", at: location(table, column: after)))
                    }
                }
                // Stored enum values that no case has any more.
                for column in table.columns {
                    guard let source = tableChange.columnSources[column.name], let before = tableChange.from.column(named: source),
                          let oldValues = before.enumValues, let newValues = column.enumValues else { continue }
                    let removed = oldValues.filter { !newValues.contains($0) }
                    guard !removed.isEmpty else { continue }
                    findings.append(Diagnostic(.warning, code: Code.enumCasesRemoved, message: "'\(table.name).\(column.name)' can no longer hold \(removed.map { "'\($0)'" }.joined(separator: ", ")); add a data migration that updates rows holding them (they would fail to decode)", at: location(table, column: column)))
                }
                // A unique index that only changed its name (a renamed table or column) is not new.
                let oldUniques = Set(tableChange.from.indexes.filter(\.isUnique).map(\.columns))
                for index in tableChange.addedIndexes where index.isUnique
                    && !oldUniques.contains(index.columns.map { tableChange.columnSources[$0] ?? "" }) {
                    destructive(Code.newUnique, "the new unique index '\(index.name)' fails if existing rows of '\(table.name)' have duplicates", at: location(table))
                }
            }
        }
        let lost = migration.stepsLosingDataOnDown
        if !lost.isEmpty {
            findings.append(Diagnostic(.warning, code: Code.downLosesData, message: "the down migration loses data it cannot restore: \(lost.map { $0.reversed.summary(for: migration.renderer) }.joined(separator: "; "))", at: fileStart))
        }
        return findings
    }

    /// The rules of squawk and strong_migrations for engines whose DDL blocks other sessions:
    /// each names the schema line, what the lock blocks while it is held, and the safe recipe.
    /// Warnings: on a table nobody uses yet, the plain statement is right.
    public static func lockFindings(for migration: Migration, schema: Schema) -> [Diagnostic] {
        guard let old = migration.from else { return [] }
        let existing = Set(old.tables.map(\.name))
        let fileStart = SourceLocation(file: schema.sourcePath, line: 1, column: 1)
        func table(_ name: String) -> TableSnapshot? { migration.to.table(named: name) ?? old.table(named: name) }
        func location(_ tableName: String, column: String? = nil) -> SourceLocation {
            guard let entityName = table(tableName)?.entity, let entity = schema.entity(named: entityName) else { return fileStart }
            if let column, let property = table(tableName)?.column(named: column)?.property,
               let found = entity.attribute(named: property)?.location ?? entity.relationship(named: property)?.location {
                return found
            }
            return entity.location ?? fileStart
        }
        // A table renamed in this migration counts as existing under its new name.
        var renamed: [String: String] = [:]
        for step in migration.steps { if case .renameTable(let from, let to) = step { renamed[to] = from } }
        func existed(_ name: String) -> Bool { existing.contains(renamed[name] ?? name) }

        var findings: [Diagnostic] = []
        func warn(_ code: Code, _ message: String, at place: SourceLocation) { findings.append(Diagnostic(.warning, code: code, message: message, at: place)) }
        for step in migration.steps {
            switch step {
            case .createIndex(let name, let index) where existed(name):
                warn(.lockIndex, "creating index '\(index.name)' on '\(name)' takes a SHARE lock that blocks every write to the table until the index is built; to keep writes going, build it with CREATE INDEX CONCURRENTLY in a migration of its own whose header says 'transaction: no'", at: location(name))
            case .addColumn(let name, let column) where existed(name) && column.defaultValue.map { !$0.isConstant } == true:
                warn(.lockRewriteColumn, "adding '\(name).\(column.name)' with a per-row default rewrites the whole table under an ACCESS EXCLUSIVE lock, blocking reads and writes; add it without the default, backfill in batches, then set the default", at: location(name, column: column.name))
            case .alterColumn(let name, let from, let to) where existed(name):
                if from.isNullable, !to.isNullable {
                    warn(.lockSetNotNull, "SET NOT NULL on '\(name).\(to.name)' scans the whole table under an ACCESS EXCLUSIVE lock, blocking reads and writes; instead add CHECK (\(to.name) IS NOT NULL) NOT VALID, VALIDATE CONSTRAINT in a later migration, then SET NOT NULL (PostgreSQL 12+ then skips the scan) and drop the check", at: location(name, column: to.name))
                }
                if from.kind != to.kind || from.bits != to.bits {
                    warn(.lockTypeChange, "changing the type of '\(name).\(to.name)' (\(migration.renderer.typeName(from)) to \(migration.renderer.typeName(to))) rewrites the table under an ACCESS EXCLUSIVE lock, blocking reads and writes; for a large table, add a new column, backfill it in batches, move reads to it, then drop the old one", at: location(name, column: to.name))
                }
            case .addForeignKey(let name, let key) where existed(name):
                warn(.lockForeignKey, "adding the foreign key '\(name)' (\(key.columns.joined(separator: ", "))) -> '\(key.table)' checks every row while holding SHARE ROW EXCLUSIVE locks on both tables, blocking their writes; add it with NOT VALID, then VALIDATE CONSTRAINT in a later migration", at: location(name, column: key.columns.first))
            case .renameColumn(let name, let from, let to):
                warn(.lockRename, "renaming '\(name).\(from)' to '\(to)' breaks running code that still uses the old name the moment it commits; deploy code that copes with both names first, or add the new column, write to both and drop the old one later", at: location(name, column: to))
            case .renameTable(let from, let to):
                warn(.lockRename, "renaming table '\(from)' to '\(to)' breaks running code that still uses the old name the moment it commits; deploy code that copes with both first, or keep a view under the old name for a release", at: location(to))
            default:
                break
            }
        }
        return findings
    }

    /// Conversions that can lose values: anything to a number from text, real to integer, ...
    static func isNarrowing(from old: StorageKind, to new: StorageKind) -> Bool {
        if old == new { return false }
        switch (old, new) {
        case (.integer, .real), (.boolean, .integer), (_, .text), (_, .json), (.boolean, .real): return false
        default: return true
        }
    }
}
