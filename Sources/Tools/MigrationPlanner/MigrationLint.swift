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
        case lockCheck = "lock-check-constraint"
        case lockBackfill = "lock-backfill"
        case lockOrder = "lock-order"
        case notOnline = "not-online"
        case onlineRefused = "online-refused"
        case splitOfRenamedTable = "split-of-renamed-table"
        case sealedNameChanged = "sealed-name-changed"
        case encryptionChanged = "encryption-changed"
    }

    /// `previous`: the schema of the version migrated from, where it is known (the one the
    /// newest migration recorded): what a snapshot does not say, as which attributes were
    /// encrypted, is taken from it.
    public static func findings(for migration: Migration, schema: Schema, allowDestructive: Bool, previous: Schema? = nil) -> [Diagnostic] {
        guard let old = migration.from else { return [] }
        let changes = migration.changes
        var lint = DestructiveLint(migration: migration, old: old, schema: schema, allowDestructive: allowDestructive, changes: changes)
        lint.previous = previous
        for change in changes {
            switch change {
            case .createTable, .grant: break
            case .fillTable(let fill): lint.fill(fill)
            case .dropTable(let table): lint.drop(table)
            case .alterTable(let tableChange):
                lint.sealedColumnsRenamed(tableChange)
                lint.droppedAndAddedColumns(tableChange)
                for (before, after) in tableChange.changedColumns { lint.changedColumn(before, after, in: tableChange.to) }
                lint.removedEnumValuesAndNewUniques(tableChange)
            }
        }
        let lost = migration.stepsLosingDataOnDown
        if !lost.isEmpty {
            lint.findings.append(
                Diagnostic(
                    .warning, code: Code.downLosesData,
                    message: "the down migration loses data it cannot restore: \(lost.map { $0.reversed.summary(for: migration.renderer) }.joined(separator: "; "))", at: lint.fileStart))
        }
        return lint.findings
    }

    /// The destructive-change rules of one migration, each kind of change a step, gathering
    /// findings that point at the schema line responsible.
    struct DestructiveLint {
        let migration: Migration
        let old: SchemaSnapshot
        let schema: Schema
        let allowDestructive: Bool
        let fileStart: SourceLocation
        let created: [TableSnapshot]
        /// Columns whose values a split moves to a new table: dropping them loses nothing.
        let moved: Set<String>
        /// The tables this migration renames: each old name's new one.
        let renamedTables: [String: String]
        /// The schema of the version migrated from, where it is known.
        var previous: Schema?
        var findings: [Diagnostic] = []

        init(migration: Migration, old: SchemaSnapshot, schema: Schema, allowDestructive: Bool, changes: [SchemaChange]) {
            self.migration = migration
            self.old = old
            self.schema = schema
            self.allowDestructive = allowDestructive
            fileStart = SourceLocation(file: schema.sourcePath, line: 1, column: 1)
            created = changes.compactMap { if case .createTable(let table) = $0 { table } else { nil } }
            moved = Set(
                changes.flatMap { change -> [String] in
                    guard case .fillTable(let fill) = change else { return [] }
                    return fill.sourceColumns.map { "\(fill.source).\($0)" }
                })
            renamedTables = Dictionary(
                changes.compactMap { change -> (String, String)? in
                    guard case .alterTable(let table) = change, table.isRename else { return nil }
                    return (table.from.name, table.to.name)
                }, uniquingKeysWith: { first, _ in first })
        }

        func entity(_ table: TableSnapshot) -> Entity? { table.entity.flatMap(schema.entity(named:)) }

        func attribute(of column: ColumnSnapshot, in table: TableSnapshot) -> Attribute? { column.property.flatMap { entity(table)?.attribute(named: $0) } }

        func location(_ table: TableSnapshot, column: ColumnSnapshot? = nil) -> SourceLocation {
            let owner = entity(table)
            if let property = column?.property,
                let found = owner?.attribute(named: property)?.location ?? owner?.relationship(named: property)?.location
            {
                return found
            }
            return owner?.location ?? fileStart
        }

        mutating func report(_ severity: Severity, _ code: Code, _ message: String, at place: SourceLocation) {
            findings.append(Diagnostic(severity, code: code, message: message, at: place))
        }

        mutating func destructive(_ code: Code, _ message: String, at place: SourceLocation) {
            let suffix = allowDestructive ? "" : "; pass --allow-destructive if that is intended"
            findings.append(Diagnostic(allowDestructive ? .warning : .error, code: code, message: message + suffix, at: place))
        }

        mutating func fill(_ fill: TableFill) {
            guard let target = created.first(where: { $0.name == fill.target }) else { return }
            if let renamed = renamedTables[fill.source] {
                // The new table's key points at the new name before the old table takes it.
                report(
                    .error, .splitOfRenamedTable,
                    "the new table '\(target.name)' is filled from '\(fill.source)', which this version also renames to '\(renamed)'; rename it in one version and split it in the next",
                    at: location(target))
            }
            for (targetColumn, sourceColumn) in zip(fill.targetColumns, fill.sourceColumns) {
                guard let column = target.column(named: targetColumn),
                    let bound = boundToNames(old.table(named: fill.source)?.column(named: sourceColumn), of: old.table(named: fill.source), attribute: attribute(of: column, in: target))
                else { continue }
                report(
                    .error, .sealedNameChanged,
                    "'\(target.entity ?? target.name).\(column.property ?? column.name)' would be copied from '\(fill.source).\(sourceColumn)', and \(bound): in '\(target.name).\(targetColumn)' they would not be found or would not decrypt; leave it in its entity, or add it to the new one and copy its values through the store in the app",
                    at: location(target, column: column))
            }
            let filledColumns = Set(fill.targetKey + fill.targetColumns)
            for column in target.columns where !column.isNullable && column.defaultValue == nil && !column.isAutoIncrement && !filledColumns.contains(column.name) {
                report(
                    .error, .requiredWithoutDefault,
                    "the new table '\(target.name)' is filled from '\(fill.source)', but its required column '\(column.name)' gets no value for those rows; give it a default, make it optional, or move its values too ('movedFrom')",
                    at: location(target, column: column))
            }
        }

        /// What ties an old column's stored values to its table's and column's names, judged
        /// from its kind then and its attribute now, and from whether its attribute was
        /// encrypted then where the previous schema is known (a snapshot does not record
        /// encryption): an encrypted value is sealed under them and opens under no others; an
        /// external value's file is kept in a folder named after them. Nil for values stored by
        /// value alone.
        func boundToNames(_ old: ColumnSnapshot?, of oldTable: TableSnapshot?, attribute: Attribute?) -> String? {
            guard let old, let attribute else { return nil }
            if attribute.usesExternalStorage, old.kind == .text {
                return attribute.isEncrypted ? "its files are sealed under them and kept in a folder named after them" : "its files are kept in a folder named after them"
            }
            // Clear bytes then (a `Data` attribute encrypted in this version): values like any other.
            if let was = previousAttribute(old, of: oldTable), !was.isEncrypted, let previous, SnapshotBuilder.kind(of: was, in: previous) == .blob { return nil }
            // Bytes where the attribute's clear values are not bytes, or an encrypted attribute's bytes.
            guard old.kind == .blob, attribute.isEncrypted || SnapshotBuilder.kind(of: attribute, in: schema) != .blob else { return nil }
            return "its values are sealed under them"
        }

        /// The attribute an old column held in the previous schema, where it is known.
        func previousAttribute(_ old: ColumnSnapshot, of table: TableSnapshot?) -> Attribute? {
            guard let previous, let entity = table?.entity, let property = old.property else { return nil }
            return previous.entity(named: entity)?.attribute(named: property)
        }

        /// A table or column renamed under values bound to their names (`boundToNames`) would
        /// leave every one unreadable: always an error, naming how to rename the property or
        /// entity alone.
        mutating func sealedColumnsRenamed(_ change: TableChange) {
            for column in change.to.columns {
                guard let oldColumn = change.columnSources[column.name], change.isRename || oldColumn != column.name,
                    let bound = boundToNames(change.from.column(named: oldColumn), of: change.from, attribute: attribute(of: column, in: change.to))
                else { continue }
                var keep: [String] = []
                if oldColumn != column.name { keep.append("its column name ('column: \(oldColumn)')") }
                if change.isRename { keep.append("its entity's table name ('table: \(change.from.name)')") }
                report(
                    .error, .sealedNameChanged,
                    "'\(change.to.entity ?? change.to.name).\(column.property ?? column.name)' is stored under the names '\(change.from.name).\(oldColumn)', and \(bound): as '\(change.to.name).\(column.name)' they would not be found or would not decrypt; keep \(keep.joined(separator: " and ")), which renames the model alone and migrates nothing",
                    at: location(change.to, column: column))
            }
        }

        mutating func drop(_ table: TableSnapshot) {
            destructive(Code.dropTable, "dropping table '\(table.name)' deletes its rows", at: fileStart)
            let shape = Set(table.columns.map { "\($0.name):\($0.kind)" })
            if let twin = created.first(where: { Set($0.columns.map { "\($0.name):\($0.kind)" }) == shape }), let name = twin.entity {
                report(.warning, .possibleRename, "'\(name)' looks like '\(table.entity ?? table.name)' renamed; add 'renamedFrom: \(table.entity ?? table.name)' to keep its rows", at: location(twin))
            }
        }

        /// Whether a backfill covers the dialect being planned; a message when it does not.
        func backfillGap(_ column: ColumnSnapshot) -> String? {
            let dialect = migration.renderer.dialect.name
            guard case .sql(let expressions)? = column.backfill, expressions[dialect] == nil else { return nil }
            return "its 'backfill' gives SQL for \(expressions.keys.sorted().joined(separator: ", ")) but not for \(dialect); add '\(dialect): <expression>'"
        }

        mutating func droppedAndAddedColumns(_ tableChange: TableChange) {
            let table = tableChange.to
            for column in tableChange.droppedColumns where !moved.contains("\(tableChange.from.name).\(column.name)") {
                destructive(Code.dropColumn, "dropping column '\(table.name).\(column.name)' deletes its values", at: location(table))
                if let twin = tableChange.addedColumns.first(where: { $0.kind == column.kind && $0.renamedFrom == nil }) {
                    report(
                        .warning, .possibleRename,
                        "'\(twin.property ?? twin.name)' looks like '\(column.property ?? column.name)' renamed; add 'renamedFrom: \(column.property ?? column.name)' to keep its values",
                        at: location(table, column: twin))
                }
            }
            for column in tableChange.addedColumns where !column.isNullable && column.defaultValue == nil && !column.isAutoIncrement {
                if column.backfill == nil {
                    report(
                        .error, .requiredWithoutDefault,
                        "new required column '\(table.name).\(column.name)' has no value for the existing rows; give it a default, a 'backfill' (for the existing rows only) or make it optional",
                        at: location(table, column: column))
                } else if let gap = backfillGap(column) {
                    report(.error, .requiredWithoutDefault, "new required column '\(table.name).\(column.name)': \(gap)", at: location(table, column: column))
                }
            }
        }

        mutating func changedColumn(_ before: ColumnSnapshot, _ after: ColumnSnapshot, in table: TableSnapshot) {
            if before.isNullable, !after.isNullable, (after.defaultValue == nil || after.defaultValue == .null) && after.backfill == nil {
                report(
                    .error, .requiredWithoutDefault,
                    "'\(table.name).\(after.name)' becomes required but has no value for rows where it is empty; add a 'backfill' (fills those rows only) or a default (used as the backfill value too)",
                    at: location(table, column: after))
            } else if before.isNullable, !after.isNullable, let gap = backfillGap(after) {
                report(.error, .requiredWithoutDefault, "'\(table.name).\(after.name)' becomes required: \(gap)", at: location(table, column: after))
            }
            if !before.isNullable, after.isNullable, before.defaultValue == nil || before.defaultValue == .null {
                report(
                    .warning, .downMayFail,
                    "'\(table.name).\(after.name)' becomes optional; the down migration fails once a row holds null in it, because version \(old.version) requires a value and has no default to fill in",
                    at: location(table, column: after))
            }
            if before.kind == .decimal, after.kind == .decimal, MigrationLint.hasFewerDigits(before, after) {
                destructive(
                    Code.narrowing,
                    "'\(table.name).\(after.name)' keeps fewer digits (\(MigrationLint.digits(before)) to \(MigrationLint.digits(after))), so values that no longer fit are rejected or rounded",
                    at: location(table, column: after))
            }
            if isNarrowing(from: before.kind, to: after.kind) {
                destructive(Code.narrowing, "converting '\(table.name).\(after.name)' from \(before.kind) to \(after.kind) can lose or reject values", at: location(table, column: after))
            }
            if (before.kind == .blob) != (after.kind == .blob), before.kind == .blob || after.kind == .blob {
                report(
                    .warning, .dataMigration,
                    "'\(table.name).\(after.name)' moves between the row and external storage; the migration converts the column but the bytes must be moved by a data migration you add to it",
                    at: location(table, column: after))
            }
        }

        mutating func removedEnumValuesAndNewUniques(_ tableChange: TableChange) {
            let table = tableChange.to
            // Stored enum values that no case has any more.
            for column in table.columns {
                guard let source = tableChange.columnSources[column.name], let before = tableChange.from.column(named: source),
                    let oldValues = before.enumValues, let newValues = column.enumValues
                else { continue }
                let removed = oldValues.filter { !newValues.contains($0) }
                guard !removed.isEmpty else { continue }
                report(
                    .warning, .enumCasesRemoved,
                    "'\(table.name).\(column.name)' can no longer hold \(removed.map { "'\($0)'" }.joined(separator: ", ")); add a data migration that updates rows holding them (they would fail to decode)",
                    at: location(table, column: column))
            }
            // A unique index that only changed its name (a renamed table or column) is not new.
            let oldUniques = Set(tableChange.from.indexes.filter(\.isUnique).map(\.columns))
            for index in tableChange.addedIndexes
            where index.isUnique
                && !oldUniques.contains(index.columns.map { tableChange.columnSources[$0] ?? "" })
            {
                destructive(Code.newUnique, "the new unique index '\(index.name)' fails if existing rows of '\(table.name)' have duplicates", at: location(table))
            }
        }
    }

    /// How an attribute's stored values are sealed, against the version the newest migration
    /// recorded (`previous`; a snapshot does not record encryption). Values sealed in one mode
    /// open in no other, a value no longer encrypted would be read as its ciphertext, and a
    /// randomized value is bound to its row's key: each is an error at the attribute (or
    /// entity), whatever `--allow-destructive` says. Encrypting a clear attribute is not:
    /// `reencrypt` seals the values it holds.
    public static func encryptionFindings(previous: Schema, schema: Schema) -> [Diagnostic] {
        var findings: [Diagnostic] = []
        let fileStart = SourceLocation(file: schema.sourcePath, line: 1, column: 1)
        let claimedEntities = Set(schema.entities.compactMap(\.renamedFrom))
        for entity in schema.entities {
            guard let before = earlier(entity.name, renamedFrom: entity.renamedFrom, claimed: claimedEntities, in: previous.entity(named:)) else { continue }
            let claimed = Set(entity.attributes.compactMap(\.renamedFrom))
            var boundToKey: [String] = []
            for attribute in entity.attributes where !attribute.isTransient {
                guard let old = earlier(attribute.name, renamedFrom: attribute.renamedFrom, claimed: claimed, in: before.attribute(named:)), old.isEncrypted, !old.isTransient
                else { continue }
                if let message = sealingChanged("'\(entity.name).\(attribute.name)'", from: old, to: attribute, version: previous.version) {
                    findings.append(Diagnostic(.error, code: Code.encryptionChanged, message: message, at: attribute.location ?? entity.location ?? fileStart))
                } else if !old.encryptsDeterministically {
                    boundToKey.append(attribute.name)
                }
            }
            // Randomized values (and sealed files) are bound to their row's key values, each
            // encoded with its type.
            let (keyBefore, keyNow) = (keyShape(before, earlier: nil), keyShape(entity, earlier: before))
            if !boundToKey.isEmpty, keyBefore != keyNow {
                findings.append(
                    Diagnostic(
                        .error, code: Code.encryptionChanged,
                        message:
                            "'\(entity.name)' changes its primary key (\(keyBefore.joined(separator: ", ")) in version \(previous.version); \(keyNow.joined(separator: ", ")) now), and its randomized encrypted attributes (\(boundToKey.joined(separator: ", "))) are sealed under each row's key: they would not open. Keep the primary key; to change it, move the values to a new entity from the app",
                        at: entity.location ?? fileStart))
            }
        }
        return findings
    }

    /// Why values sealed as `old` would not open as `new`; nil where they would.
    private static func sealingChanged(_ name: String, from old: Attribute, to new: Attribute, version: Int) -> String? {
        func mode(_ attribute: Attribute) -> String { attribute.encryptsDeterministically ? "deterministic" : "true" }
        let was = "was 'encrypt: \(mode(old))' in version \(version)"
        if !new.isEncrypted {
            return
                "\(name) \(was), so its stored values are sealed: without 'encrypt' they would be read as their ciphertext. Keep 'encrypt: \(mode(old))'; to keep the values in clear, add a new attribute, copy them into it from the app, then remove this one"
        }
        guard new.encryptsDeterministically != old.encryptsDeterministically else { return nil }
        return
            "\(name) \(was) and is 'encrypt: \(mode(new))' now: values sealed in one mode open in no other, and 'reencrypt' cannot read them. Keep 'encrypt: \(mode(old))'; to change the mode, add a new attribute with it, copy the values into it from the app, then remove this one"
    }

    /// The earlier version's member of a name: the one it was renamed from, else the one of
    /// its own name, unless another member was renamed from that one (`claimed`).
    private static func earlier<Member>(_ name: String, renamedFrom: String?, claimed: Set<String>, in lookup: (String) -> Member?) -> Member? {
        if let renamedFrom, let found = lookup(renamedFrom) { return found }
        return claimed.contains(name) ? nil : lookup(name)
    }

    /// A primary key as its rows' values are encoded: each member by its name in the `earlier`
    /// version (where it was renamed from one there) and its type.
    private static func keyShape(_ entity: Entity, earlier: Entity?) -> [String] {
        guard case .members(let members) = entity.primaryKey else { return ["\(Entity.implicitKeyName) (implicit integer)"] }
        return members.map { member in
            if let attribute = entity.attribute(named: member) {
                let name = attribute.renamedFrom.flatMap { earlier?.attribute(named: $0) == nil ? nil : $0 } ?? member
                return "\(name) (\(attribute.type))"
            }
            let relationship = entity.relationship(named: member)
            let name = relationship?.renamedFrom.flatMap { earlier?.relationship(named: $0) == nil ? nil : $0 } ?? member
            return "\(name) (relationship)"
        }
    }

    /// The rules of squawk and strong_migrations for engines whose DDL blocks other sessions:
    /// each names the schema line, what the lock blocks while it is held, and the safe recipe.
    /// Warnings: on a table nobody uses yet, the plain statement is right.
    public static func lockFindings(for migration: Migration, schema: Schema) -> [Diagnostic] {
        guard let old = migration.from else { return [] }
        var lint = LockLint(migration: migration, old: old, schema: schema)
        lint.run()
        return lint.findings
    }

    /// The lock rules of one migration, step by step: the tables it locks so far, in order,
    /// and the findings, each naming the schema line responsible.
    struct LockLint {
        let migration: Migration
        let old: SchemaSnapshot
        let schema: Schema
        let existing: Set<String>
        let fileStart: SourceLocation
        /// A table renamed in this migration counts as existing under its new name.
        var renamed: [String: String] = [:]
        var findings: [Diagnostic] = []
        // Existing tables this migration has taken ACCESS EXCLUSIVE on so far, and every table it
        // locks, in order: the transaction holds each lock until it commits.
        var exclusive: Set<String> = []
        var lockOrder: [String] = []

        init(migration: Migration, old: SchemaSnapshot, schema: Schema) {
            self.migration = migration
            self.old = old
            self.schema = schema
            existing = Set(old.tables.map(\.name))
            fileStart = SourceLocation(file: schema.sourcePath, line: 1, column: 1)
            for step in migration.steps { if case .renameTable(let from, let to) = step { renamed[to] = from } }
        }

        func table(_ name: String) -> TableSnapshot? { migration.to.table(named: name) ?? old.table(named: name) }

        func location(_ tableName: String, column: String? = nil) -> SourceLocation {
            guard let entityName = table(tableName)?.entity, let entity = schema.entity(named: entityName) else { return fileStart }
            if let column, let property = table(tableName)?.column(named: column)?.property,
                let found = entity.attribute(named: property)?.location ?? entity.relationship(named: property)?.location
            {
                return found
            }
            return entity.location ?? fileStart
        }

        func existed(_ name: String) -> Bool { existing.contains(renamed[name] ?? name) }

        mutating func warn(_ code: Code, _ message: String, at place: SourceLocation) { findings.append(Diagnostic(.warning, code: code, message: message, at: place)) }

        mutating func locks(_ name: String, exclusively: Bool) {
            guard existed(name) else { return }
            if !lockOrder.contains(name) { lockOrder.append(name) }
            if exclusively { exclusive.insert(name) }
        }

        mutating func run() {
            for step in migration.steps {
                switch step {
                case .createIndex(let name, let index) where existed(name):
                    createdIndex(index, on: name)
                case .addColumn(let name, let column) where existed(name):
                    addedColumn(column, to: name)
                case .alterColumn(let name, let from, let to) where existed(name):
                    alteredColumn(from, to, in: name)
                case .addForeignKey(let name, let key) where existed(name):
                    warn(
                        .lockForeignKey,
                        "adding the foreign key '\(name)' (\(key.columns.joined(separator: ", "))) -> '\(key.table)' checks every row while holding SHARE ROW EXCLUSIVE locks on both tables, blocking their writes; add it with NOT VALID, then VALIDATE CONSTRAINT in a later migration",
                        at: location(name, column: key.columns.first))
                    locks(name, exclusively: false)
                    locks(key.table, exclusively: false)
                case .renameColumn(let name, let from, let to):
                    warn(
                        .lockRename,
                        "renaming '\(name).\(from)' to '\(to)' breaks running code that still uses the old name the moment it commits; deploy code that copes with both names first, or add the new column, write to both and drop the old one later",
                        at: location(name, column: to))
                    locks(name, exclusively: true)
                case .renameTable(let from, let to):
                    warn(
                        .lockRename,
                        "renaming table '\(from)' to '\(to)' breaks running code that still uses the old name the moment it commits; deploy code that copes with both first, or keep a view under the old name for a release",
                        at: location(to))
                    locks(to, exclusively: true)
                case .createTable:
                    break
                case .dropTable(let table):
                    locks(table.name, exclusively: true)
                case .dropColumn(let name, _), .dropPrimaryKey(let name, _), .addPrimaryKey(let name, _), .dropForeignKey(let name, _), .dropIndex(let name, _),
                    .renameConstraints(let name, _, _, _):
                    locks(name, exclusively: true)
                case .rebuildTable(let change):
                    locks(change.to.name, exclusively: true)
                default:
                    break
                }
            }
            if lockOrder.count > 1 {
                warn(
                    .lockOrder,
                    "this migration locks \(lockOrder.count) tables in turn (\(lockOrder.joined(separator: ", "))) and holds each lock until it commits; a transaction of the application that locks them in another order (writing '\(lockOrder[lockOrder.count - 1])', then '\(lockOrder[0])') can deadlock with it, and PostgreSQL then aborts one of the two; split the migration per table, or keep lock_timeout short so it gives up and can be run again",
                    at: fileStart)
            }
        }

        mutating func createdIndex(_ index: IndexSnapshot, on name: String) {
            if index.isFullText {
                warn(
                    .lockIndex,
                    "making '\(index.columns.joined(separator: ", "))' of '\(name)' searchable adds a stored generated tsvector column, which rewrites the table under an ACCESS EXCLUSIVE lock (reads and writes wait), then builds its GIN index; for a large table run it when the table is quiet, or add a plain tsvector column kept by a trigger and filled in batches, then index it CONCURRENTLY",
                    at: location(name))
                locks(name, exclusively: true)
            } else if index.isUnique {
                warn(
                    .lockIndex,
                    "adding the unique constraint '\(index.name)' on '\(name)' builds its index under an ACCESS EXCLUSIVE lock, blocking reads and writes until it is built; to keep them going, build CREATE UNIQUE INDEX CONCURRENTLY in a migration of its own whose header says 'transaction: no', then ALTER TABLE ... ADD CONSTRAINT ... UNIQUE USING INDEX",
                    at: location(name))
                locks(name, exclusively: true)
            } else {
                warn(
                    .lockIndex,
                    "creating index '\(index.name)' on '\(name)' takes a SHARE lock that blocks every write to the table until the index is built; to keep writes going, build it with CREATE INDEX CONCURRENTLY in a migration of its own whose header says 'transaction: no'",
                    at: location(name))
                locks(name, exclusively: false)
            }
        }

        mutating func addedColumn(_ column: ColumnSnapshot, to name: String) {
            // PostgreSQL 11+ stores a constant default, or a stable one such as now(), in the
            // catalogue without touching rows; only a volatile one (a random UUID) rewrites.
            if column.defaultValue == .uuid {
                warn(
                    .lockRewriteColumn,
                    "adding '\(name).\(column.name)' with a random default (uuid, a volatile function) rewrites the whole table under an ACCESS EXCLUSIVE lock, blocking reads and writes; add it without the default, backfill in batches, then set the default",
                    at: location(name, column: column.name))
            }
            if !column.isNullable, column.defaultValue == nil, column.backfill != nil {
                warn(
                    .lockBackfill,
                    "the backfill of the new column '\(name).\(column.name)' (an UPDATE of every row) runs under the ACCESS EXCLUSIVE lock ADD COLUMN took, so reads and writes of '\(name)' wait for the whole update; for a large table add it optional, backfill in batches, then make it required in a later migration",
                    at: location(name, column: column.name))
            }
            if column.enumValues != nil, column.defaultValue != nil || !column.isNullable {
                warn(
                    .lockCheck,
                    "adding '\(name).\(column.name)' with its CHECK of allowed values validates every row under an ACCESS EXCLUSIVE lock; for a large table add the check NOT VALID and VALIDATE CONSTRAINT in a later migration (which locks only against other schema changes)",
                    at: location(name, column: column.name))
            }
            locks(name, exclusively: true)
        }

        mutating func alteredColumn(_ from: ColumnSnapshot, _ to: ColumnSnapshot, in name: String) {
            // The backfill of a column made required runs after the ALTER statements before it
            // in this transaction, which hold ACCESS EXCLUSIVE on the table.
            let altersFirst =
                exclusive.contains(name) || MigrationLint.type(from, migration) != MigrationLint.type(to, migration) || from.defaultValue != to.defaultValue || from.enumValues != to.enumValues
            if from.isNullable, !to.isNullable, let value = to.defaultValue, value != .null, altersFirst {
                warn(
                    .lockBackfill,
                    "the backfill of '\(name).\(to.name)' (an UPDATE of every row that is empty) runs under the ACCESS EXCLUSIVE lock this migration already holds on '\(name)', so reads and writes wait for the whole update; backfill in batches in an earlier migration, while the column is still optional, then make it required",
                    at: location(name, column: to.name))
            }
            if from.isNullable, !to.isNullable {
                warn(
                    .lockSetNotNull,
                    "SET NOT NULL on '\(name).\(to.name)' scans the whole table under an ACCESS EXCLUSIVE lock, blocking reads and writes; instead add CHECK (\(to.name) IS NOT NULL) NOT VALID, VALIDATE CONSTRAINT in a later migration, then SET NOT NULL (PostgreSQL 12+ then skips the scan) and drop the check",
                    at: location(name, column: to.name))
            }
            if MigrationLint.type(from, migration) != MigrationLint.type(to, migration) {
                warn(
                    .lockTypeChange,
                    "changing the type of '\(name).\(to.name)' (\(migration.renderer.typeName(from)) to \(migration.renderer.typeName(to))) rewrites the table under an ACCESS EXCLUSIVE lock, blocking reads and writes; for a large table, add a new column, backfill it in batches, move reads to it, then drop the old one",
                    at: location(name, column: to.name))
            }
            if let values = to.enumValues, values != from.enumValues {
                warn(
                    .lockCheck,
                    "re-adding the CHECK of '\(name).\(to.name)' (its allowed values changed) validates every row under an ACCESS EXCLUSIVE lock; for a large table add it NOT VALID, then VALIDATE CONSTRAINT in a later migration",
                    at: location(name, column: to.name))
            }
            locks(name, exclusively: true)
        }
    }

    static func type(_ column: ColumnSnapshot, _ migration: Migration) -> String { migration.renderer.typeName(column) }

    /// A decimal's digits shrink: fewer before the point, or fewer after it.
    static func hasFewerDigits(_ before: ColumnSnapshot, _ after: ColumnSnapshot) -> Bool {
        guard let precision = after.precision else { return false }
        guard let old = before.precision else { return true }
        let (oldScale, newScale) = (before.scale ?? 0, after.scale ?? 0)
        return newScale < oldScale || precision - newScale < old - oldScale
    }

    static func digits(_ column: ColumnSnapshot) -> String {
        column.precision.map { "precision \($0)" + (column.scale.map { ", scale \($0)" } ?? "") } ?? "any number of digits"
    }

    /// Conversions that can lose values: anything to a number from text, real to integer, a
    /// date to its day (the time of day), ...
    static func isNarrowing(from old: StorageKind, to new: StorageKind) -> Bool {
        if old == new { return false }
        switch (old, new) {
        case (.integer, .real), (.boolean, .integer), (_, .text), (_, .json), (.boolean, .real), (.day, .date): return false
        default: return true
        }
    }
}
