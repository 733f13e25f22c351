import Foundation
import MigrationFiles
import RelationalModel
import SQLDialects

/// A PostgreSQL migration planned in two phases, so the app version before it and the one after
/// it run side by side against one database while instances roll over:
///
/// - **expand** only adds: new tables and columns, a column beside each one whose type or
///   nullability changes with triggers keeping the two in step both ways, batched backfills,
///   indexes built `CONCURRENTLY`, constraints added `NOT VALID` then validated; and a schema of
///   views per version (`VersionSchema`) under which each version finds its names;
/// - **contract** removes what only the old version used and gives the tables the new names;
/// - **rollback** undoes an expand, keeping rows either version wrote.
///
/// Physical tables keep the old version's names until contract, so the old version's views are
/// the tables as they are, and the new version's views rename and pick columns over them.
/// Changes that cannot be made without blocking writers are planned the ordinary way, in the
/// expand phase, and listed in `offline` with the reason.
public struct OnlinePlan: Sendable {
    public var expand: OnlinePhase
    public var contract: OnlinePhase
    public var rollback: OnlinePhase
    /// Changes made with locks that block writers for as long as they take, each with why.
    public var offline: [String]
    /// Changes that cannot be made online without losing writes of one version, each with why:
    /// planning fails with them (`online-refused`) rather than plan them and warn.
    public var refused: [String]

    /// Rows per backfill batch.
    public static let backfillBatch = 1000

    /// Plans `from` -> `to` (a first migration, from nil, creates the tables and the first
    /// version's views) from the migration's `changes` (the differ's, diffed once by
    /// `Migration`) and its `steps`.
    ///
    ///     let plan = OnlinePlan(from: v1, to: v2, changes: migration.changes, steps: migration.steps)
    public init(from: SchemaSnapshot?, to: SchemaSnapshot, changes: [SchemaChange], steps: [MigrationStep]) {
        var planner = OnlinePlanner(from: from, to: to)
        planner.plan(changes: changes, steps: steps)
        expand = OnlinePhase(sections: planner.expand)
        contract = OnlinePhase(sections: planner.contract)
        rollback = OnlinePhase(sections: planner.rollback)
        offline = planner.offline
        refused = planner.refused
    }

    /// Plans `from` -> `to`, diffing the two again.
    ///
    ///     let plan = OnlinePlan(from: v1, to: v2, steps: steps)
    @available(*, deprecated, message: "use init(from:to:changes:steps:) with Migration.changes: the diff is made once")
    public init(from: SchemaSnapshot?, to: SchemaSnapshot, steps: [MigrationStep]) {
        self.init(from: from, to: to, changes: SchemaDiffer.diff(from: from, to: to), steps: steps)
    }

    /// The physical name of the column that replaces `column` while version `version` expands.
    static func replacementColumn(_ column: String, version: Int) -> String {
        PostgresRenderer.identifier("schemagen_\(version)_\(column)")
    }
}

/// A statement an online phase runs outside a transaction: whether it works on an index
/// concurrently is said where it is made, not read back from its text.
struct OutsideStatement {
    var sql: SQL
    /// It builds or drops an index `CONCURRENTLY`.
    var concurrently: Bool

    static func concurrently(_ sql: SQL) -> OutsideStatement { OutsideStatement(sql: sql, concurrently: true) }
    /// `VALIDATE CONSTRAINT`, `ANALYZE`: an ordinary statement.
    static func validation(_ sql: SQL) -> OutsideStatement { OutsideStatement(sql: sql, concurrently: false) }
}

struct OnlinePlanner {
    let from: SchemaSnapshot?
    let to: SchemaSnapshot
    let renderer = PostgresRenderer()
    var expand: [OnlinePhase.Section] = []
    var contract: [OnlinePhase.Section] = []
    var rollback: [OnlinePhase.Section] = []
    var offline: [String] = []
    var refused: [String] = []
    /// Tables rebuilt by copying (`OnlineCopy`): new name -> the copy's name until contract.
    var copiedTables: [String: String] = [:]
    /// What the changes put into each phase, kept by kind until the phases are assembled in
    /// their order (`OnlinePhaseLists`).
    var toExpand = ExpandLists()
    var toContract = ContractLists()
    var toRollBack = RollbackLists()
    /// How each new table's view reads the physical tables until contract.
    var views = ViewSources()

    /// A foreign key of a new table as the physical tables hold it until contract.
    func physical(_ key: ForeignKeySnapshot, columns: [String]) -> ForeignKeySnapshot {
        var key = key
        key.referencedColumns = key.referencedColumns.map { views.physicalColumns[key.table]?[$0] ?? $0 }
        key.table = views.physicalTable[key.table] ?? key.table
        key.columns = columns
        return key
    }

    init(from: SchemaSnapshot?, to: SchemaSnapshot) {
        self.from = from
        self.to = to
    }

    /// Statements as a section's text, one per line.
    func text(_ statements: [SQL]) -> String { DDL.script(statements, for: PostgresRenderer.dialect) }
    func text(_ statement: SQL) -> String { statement.text(for: PostgresRenderer.dialect) }

    /// Statements run in one transaction, with the names they quote for the migrator.
    func transaction(_ statements: [SQL]) -> OnlinePhase.Section {
        .transaction(text(statements), OnlinePhase.SectionFacts(relations: Self.names(statements)))
    }
    func transaction(_ statement: SQL) -> OnlinePhase.Section {
        .transaction(text(statement), OnlinePhase.SectionFacts(relations: statement.identifierNames))
    }

    /// A statement run outside a transaction, with what the migrator must know of it.
    func statement(_ statement: OutsideStatement) -> OnlinePhase.Section {
        .statement(text(statement.sql), OnlinePhase.SectionFacts(relations: statement.sql.identifierNames, concurrently: statement.concurrently))
    }

    static func names(_ statements: [SQL]) -> [String] {
        var names: [String] = []
        for name in statements.flatMap(\.identifierNames) where !names.contains(name) { names.append(name) }
        return names
    }

    var oldSchema: String? { from.map { VersionSchema.name(schema: $0.schema, version: $0.version) } }
    var newSchema: String { VersionSchema.name(schema: to.schema, version: to.version) }

    mutating func plan(changes: [SchemaChange], steps: [MigrationStep]) {
        guard let from else {
            // A first migration: the tables as usual, on an empty database, and its views.
            let created = steps.flatMap { renderer.statements(for: $0) }
            for table in to.tables { views.physicalTable[table.name] = table.name }
            expand.append(transaction(created + views(of: to, schema: newSchema, mapping: nil) + versionGrants(to, schema: newSchema)))
            rollback.append(transaction(["DROP SCHEMA IF EXISTS \(identifier: newSchema) CASCADE;"] + steps.reversed().map(\.reversed).flatMap { renderer.statements(for: $0) }))
            return
        }
        // The old version's views, for a database whose schema turned online at this version.
        // Each is created only where it is missing: an existing view (the usual case, made by the
        // migration before) is left alone, so this section takes no lock on views the old
        // version's apps are using, and cannot deadlock with their transactions.
        expand.append(transaction(views(of: from, schema: oldSchema!, mapping: nil, onlyWhereMissing: true)))

        planChanges(changes, steps: steps)
        assembleExpand()
        assembleContract(oldSchema: oldSchema!)
        rollback.append(transaction("DROP SCHEMA IF EXISTS \(identifier: newSchema) CASCADE;"))
        // Undone in the reverse order of expand (a split's rows go back before its table goes).
        rollback += toRollBack.tables.reversed().filter { !$0.isEmpty }.map { transaction($0) }
        rollback += toRollBack.statements.map { statement($0) }
    }

    /// Each change's statements, sorted into the phases' lists.
    private mutating func planChanges(_ changes: [SchemaChange], steps: [MigrationStep]) {
        // Where each new table's rows are until contract: under the old table's name.
        for case .alterTable(let change) in changes {
            views.physicalTable[change.to.name] = change.from.name
            views.physicalColumns[change.to.name] = change.columnSources
        }
        var splitTables = Set<String>()
        for case .fillTable(let fill) in changes { splitTables.formUnion([fill.source, fill.target]) }
        for change in changes {
            let pieces = phasePieces {
                switch change {
                case .createTable(let table): $0.createTable(table, steps: steps)
                case .dropTable(let table): $0.dropTable(table)
                case .alterTable(let change) where $0.rebuildsByCopy(change, splitTables: splitTables): $0.copyTable(change)
                case .alterTable(let change): $0.alterTable(change)
                case .fillTable(let fill): $0.splitTable(fill)
                case .grant: break
                }
            }
            toExpand.join(pieces.expand)
            toContract.join(pieces.contract)
            toRollBack.join(pieces.rollback)
        }
        for table in to.tables where views.physicalTable[table.name] == nil { views.physicalTable[table.name] = table.name }
        // Grants follow the tables' physical names; a dropped table's go with it at contract.
        for case .grant(let table, let role, let from, let to) in changes {
            guard let table else {
                toExpand.tables.append(renderer.statements(for: .grant(table: nil, role: role, from: from, to: to)))
                continue
            }
            guard self.to.table(named: table) != nil else { continue }
            let physical = SQL.identifier(views.physicalTable[table] ?? table)
            toExpand.tables.append(PostgresRenderer.grantChange(on: physical, role: role, from: from, to: to))
            toRollBack.tables.append(PostgresRenderer.grantChange(on: physical, role: role, from: to, to: from))
            if let copy = copiedTables[table] { toExpand.tables.append(PostgresRenderer.grantChange(on: .identifier(copy), role: role, from: from, to: to)) }
        }
    }

    /// What one change puts into each phase, as values: `plan` runs on lists of the change's
    /// own, which then join the migration's (`ExpandLists.join`), so no change appends to what
    /// another planned. What the planner learns about tables and views carries over.
    private mutating func phasePieces(_ plan: (inout OnlinePlanner) -> Void) -> (expand: ExpandLists, contract: ContractLists, rollback: RollbackLists) {
        let migration = (toExpand, toContract, toRollBack)
        (toExpand, toContract, toRollBack) = (ExpandLists(), ContractLists(), RollbackLists())
        plan(&self)
        let pieces = (expand: toExpand, contract: toContract, rollback: toRollBack)
        (toExpand, toContract, toRollBack) = migration
        return pieces
    }

    /// Expand's sections in order: tables, index builds, copies, backfills, the index builds of
    /// backfilled tables, what waits for the backfills, validations, then the new version's views.
    private mutating func assembleExpand() {
        let backfilled = Set(toExpand.backfills.map(\.table))
        expand += toExpand.copyChecks.map { .check(text($0)) }
        expand += toExpand.tables.filter { !$0.isEmpty }.map { transaction($0) }
        expand += toExpand.indexBuilds.filter { !backfilled.contains($0.table) }.map { statement(.concurrently($0.statement)) }
        expand += toExpand.splitCopies
        expand += toExpand.backfills.map { backfill in
            self.backfill(table: backfill.table, key: backfill.key, set: SQL.list(backfill.set), where: SQL.list(backfill.conditions, separator: " OR "))
        }
        // A backfilled table's indexes are built after its backfill: each row it rewrites would
        // otherwise be entered in every index again (the table has no room for HOT updates), and
        // the backfill of 1,000,000 rows measured twice as long.
        expand += toExpand.indexBuilds.filter { backfilled.contains($0.table) }.map { statement(.concurrently($0.statement)) }
        expand += toExpand.tableCopies
        expand += toExpand.copyIndexes.map { statement($0) }
        expand += toExpand.afterCopy.filter { !$0.isEmpty }.map { transaction($0) }
        for table in Set(toExpand.afterBackfill.map(\.table)).sorted() {
            expand.append(transaction(toExpand.afterBackfill.filter { $0.table == table }.map(\.statement)))
        }
        expand += toExpand.validations.map { statement(.validation($0)) }
        expand.append(transaction(newViews() + versionGrants(to, schema: newSchema)))
    }

    /// Contract's sections in order.
    private mutating func assembleContract(oldSchema: String) {
        // Contract: the old version's views go first (they read columns about to go). The new
        // version's views stay: they name columns by position, so drops and renames of other
        // columns leave them as they are, and no app of the new version ever misses them.
        // One object per transaction where it can be (a foreign key locks its two tables), so
        // the new version's multi-table transactions never meet a contract holding a lock
        // while it waits for another.
        contract.append(transaction("DROP SCHEMA IF EXISTS \(identifier: oldSchema) CASCADE;"))
        contract += toContract.syncDrops.map { transaction($0) }
        contract += toContract.keys.map { transaction($0) }
        contract += toContract.tables.filter { !$0.isEmpty }.map { transaction($0) }
        contract += toContract.drops.map { transaction($0) }
        contract += toContract.swaps.map { transaction($0) }
        contract += toContract.keysAdded.map { transaction($0) }
        // The tables now have the new version's names: its views read them as they are.
        // A copied table's comment goes in its swap.
        let mapped = to.tables.filter { table in
            copiedTables[table.name] == nil && (views.physicalTable[table.name] != table.name || (views.columns[table.name] ?? []).contains { $0.physical != $0.name })
        }
        if !mapped.isEmpty {
            contract.append(transaction(mapped.map { "COMMENT ON VIEW \(SQL.identifier($0.name, in: newSchema)) IS NULL;" }))
        }
        contract += toContract.statements.map { statement($0) }
    }

    // MARK: - Views

    /// `CREATE SCHEMA` and one view per table: each column read from its physical column
    /// (`mapping`, or the same name), full-text columns included.
    func views(
        of snapshot: SchemaSnapshot, schema: String, mapping: [String: (table: String, columns: [(name: String, physical: String)])]?, onlyWhereMissing: Bool = false
    ) -> [SQL] {
        var statements: [SQL] = ["CREATE SCHEMA IF NOT EXISTS \(identifier: schema);"]
        for table in snapshot.tables {
            let mapped = mapping?[table.name]
            let columns = mapped?.columns ?? table.columns.map { ($0.name, $0.name) }
            var list: [SQL] = columns.map { $0.physical == $0.name ? .identifier($0.physical) : "\(identifier: $0.physical) AS \(identifier: $0.name)" }
            list += table.indexes.filter(\.isFullText).map { .identifier(PostgresRenderer.searchColumn($0)) }
            let view = SQL.identifier(table.name, in: schema)
            let create: SQL = "CREATE VIEW \(view) AS SELECT \(SQL.list(list)) FROM \(identifier: mapped?.table ?? table.name);"
            guard onlyWhereMissing else {
                statements.append(create)
                continue
            }
            // Its grants with it: an existing view keeps its own, and takes no lock.
            let grants = (snapshot.grants ?? []).flatMap { PostgresRenderer.grantChange(on: view, role: $0.role, from: nil, to: $0.access) }
            statements.append(
                "DO $schemagen$ BEGIN IF to_regclass(\(literal: text(view))) IS NULL THEN \(SQL.list([create] + grants, separator: " ")) END IF; END $schemagen$;")
        }
        if onlyWhereMissing { statements += (snapshot.grants ?? []).map { "GRANT USAGE ON SCHEMA \(identifier: schema) TO \(identifier: $0.role);" } }
        return statements
    }

    /// The grants of a version's schema of views: what the schema's roles have on its tables,
    /// on each view, and USAGE of the schema so they can name them.
    func versionGrants(_ snapshot: SchemaSnapshot, schema: String) -> [SQL] {
        (snapshot.grants ?? []).flatMap { grant in
            ["GRANT USAGE ON SCHEMA \(identifier: schema) TO \(identifier: grant.role);" as SQL]
                + snapshot.tables.flatMap { PostgresRenderer.grantChange(on: SQL.identifier($0.name, in: schema), role: grant.role, from: nil, to: grant.access) }
        }
    }

    /// The new version's views over the tables as expand leaves them.
    func newViews() -> [SQL] {
        var mapping: [String: (table: String, columns: [(name: String, physical: String)])] = [:]
        for table in to.tables {
            mapping[table.name] = (
                copiedTables[table.name] ?? views.physicalTable[table.name] ?? table.name,
                copiedTables[table.name] != nil ? table.columns.map { ($0.name, $0.name) } : views.columns[table.name] ?? table.columns.map { ($0.name, $0.name) }
            )
        }
        var statements: [SQL] = ["DROP SCHEMA IF EXISTS \(identifier: newSchema) CASCADE;"] + views(of: to, schema: newSchema, mapping: mapping)
        for (table, defaults) in views.defaults.sorted(by: { $0.key < $1.key }) {
            statements += defaults.map { "ALTER VIEW \(SQL.identifier(table, in: newSchema)) ALTER COLUMN \(identifier: $0.column) SET DEFAULT \($0.value);" }
        }
        // Where a view reads other names, it says which (`ViewMapping`): the store records
        // changes from the table's rows, under the table's names, and reads them back by these.
        for table in to.tables {
            guard let (physical, columns) = mapping[table.name] else { continue }
            let renamed = columns.filter { $0.physical != $0.name }
            guard physical != table.name || !renamed.isEmpty else { continue }
            let comment = ViewMapping(
                table: physical,
                columns: Dictionary(renamed.map { ($0.name, $0.physical) }, uniquingKeysWith: { a, _ in a })
            ).comment
            statements.append("COMMENT ON VIEW \(SQL.identifier(table.name, in: newSchema)) IS \(literal: comment);")
        }
        return statements
    }

    // MARK: - Tables

    mutating func createTable(_ table: TableSnapshot, steps: [MigrationStep]) {
        // An empty table: created whole, keys and indexes at once, nobody waits on it.
        var bare = table
        bare.foreignKeys = []
        var statements = renderer.statements(for: .createTable(bare))
        statements += table.foreignKeys.map { key in
            "ALTER TABLE \(identifier: table.name) ADD \(PostgresRenderer.foreignKey(table.name, physical(key, columns: key.columns)));"
        }
        statements += table.indexes.flatMap { renderer.statements(for: .createIndex(table: table.name, $0)) }
        statements += steps.compactMap { step -> [SQL]? in
            if case .comment(let name, _, _, _) = step, name == table.name { return renderer.statements(for: step) }
            return nil
        }.flatMap { $0 }
        toExpand.tables.append(statements)
        toRollBack.tables.append(["DROP TABLE IF EXISTS \(identifier: table.name) CASCADE;"])
    }

    mutating func dropTable(_ table: TableSnapshot) {
        // The old version keeps using it until contract. A required column the new version
        // does not know stays writable by it: nothing writes it through the new version.
        toContract.keys += table.foreignKeys.map { "ALTER TABLE \(identifier: table.name) DROP CONSTRAINT IF EXISTS \(identifier: PostgresRenderer.foreignKeyName(table.name, $0));" }
        toContract.drops.append("DROP TABLE IF EXISTS \(identifier: table.name);")
    }

    mutating func alterTable(_ change: TableChange) {
        var phases = TablePhases()
        alterColumns(change, &phases)
        dropAndRenameColumns(change, &phases)
        alterKeys(change, &phases)
        alterIndexes(change, &phases)
        toExpand.tables.append(phases.expanding)
        toContract.tables.append(toContract.triggers + phases.contracting + phases.contractAfterRename)
        toContract.triggers = []
        toRollBack.tables.append(phases.rollingBack)
    }

    /// The statements one table's change adds to each phase, gathered as `alterTable` goes.
    struct TablePhases {
        var expanding: [SQL] = [], contracting: [SQL] = [], rollingBack: [SQL] = []
        /// Contract statements that name the table and its columns by their new names.
        var contractAfterRename: [SQL] = []
        /// Kept column -> the replacement column that stands in for it until contract.
        var replaced: [String: String] = [:]
    }

    /// Each column of the new version: kept, added, replaced (a new type or required), or
    /// changed in place; the view's columns and defaults follow.
    mutating func alterColumns(_ change: TableChange, _ phases: inout TablePhases) {
        let old = change.from.name, new = change.to.name
        var columns: [(name: String, physical: String)] = []
        var defaults: [(column: String, value: SQL)] = []
        let changed = Dictionary(change.changedColumns.map { ($0.to.name, $0) }, uniquingKeysWith: { a, _ in a })
        for column in change.to.columns {
            guard let source = change.columnSources[column.name] else {
                columns.append((column.name, column.name))
                addColumn(column, table: old, newTable: new, expanding: &phases.expanding, rollingBack: &phases.rollingBack, contracting: &phases.contractAfterRename)
                continue
            }
            guard let (was, now) = changed[column.name], renderer.needsChange(from: was, to: now) else {
                columns.append((column.name, source))
                continue
            }
            let typeChanges = PostgresRenderer.type(of: was) != PostgresRenderer.type(of: now) || was.isAutoIncrement != now.isAutoIncrement
            let becomesRequired = was.isNullable && !now.isNullable
            if now.defaultValue != was.defaultValue, let value = now.defaultValue {
                defaults.append((column.name, PostgresRenderer.expression(value, kind: now.kind)))
            }
            if typeChanges || becomesRequired {
                if let reason = replacementBlocked(source, in: change.from, was: was, now: now) {
                    offline.append("\(old).\(source): \(reason)")
                    columns.append((column.name, source))
                    var renamedNow = now
                    renamedNow.name = source
                    phases.expanding += note("not online: \(reason)") + renderer.alterColumn(old, was, renamedNow)
                    continue
                }
                let replacement = OnlinePlan.replacementColumn(source, version: to.version)
                phases.replaced[source] = replacement
                columns.append((column.name, replacement))
                replaceColumn(
                    table: old, source: source, replacement: replacement, was: was, now: now, newTable: new, finalName: column.name,
                    expanding: &phases.expanding, rollingBack: &phases.rollingBack, contracting: &phases.contractAfterRename)
                continue
            }
            columns.append((column.name, source))
            if was.isNullable != now.isNullable {
                // Optional again: the old version never writes NULL, so allowing it changes nothing for it.
                phases.expanding.append("ALTER TABLE \(identifier: old) ALTER COLUMN \(identifier: source) DROP NOT NULL;")
                phases.rollingBack.append(Self.restoreNotNull(old, source))
            }
            if was.enumValues != now.enumValues {
                enumChange(
                    table: old, column: source, was: was, now: now, newTable: new, finalName: column.name, expanding: &phases.expanding, rollingBack: &phases.rollingBack,
                    contracting: &phases.contractAfterRename)
            }
            if was.defaultValue != now.defaultValue {
                let value = now.defaultValue.map { PostgresRenderer.expression($0, kind: now.kind) }
                phases.contractAfterRename.append("ALTER TABLE \(identifier: new) ALTER COLUMN \(identifier: column.name) \(value.map { "SET DEFAULT \($0)" } ?? "DROP DEFAULT");")
            }
        }
        views.columns[new] = columns
        if !defaults.isEmpty { views.defaults[new] = defaults }

    }

    /// Dropped columns stay until contract; replaced ones give way to their replacement; then
    /// the table's and columns' renames.
    mutating func dropAndRenameColumns(_ change: TableChange, _ phases: inout TablePhases) {
        let old = change.from.name, new = change.to.name
        // Dropped columns stay until contract; a required one the new version cannot write is
        // made optional now.
        for column in change.droppedColumns {
            if !column.isNullable, column.defaultValue == nil, !column.isAutoIncrement {
                phases.expanding.append("ALTER TABLE \(identifier: old) ALTER COLUMN \(identifier: column.name) DROP NOT NULL;")
                phases.rollingBack.append(Self.restoreNotNull(old, column.name))
            }
            phases.contracting.append("ALTER TABLE \(identifier: old) DROP COLUMN IF EXISTS \(identifier: column.name);")
        }
        // Replaced columns: the old one goes, the replacement takes the new name (after the
        // renames below, which rename the others).
        for (source, replacement) in phases.replaced.sorted(by: { $0.key < $1.key }) {
            phases.contracting.append("ALTER TABLE \(identifier: old) DROP COLUMN \(identifier: source);")
            let final = change.columnSources.first { $0.value == source }?.key ?? source
            phases.contractAfterRename.insert("ALTER TABLE \(identifier: new) RENAME COLUMN \(identifier: replacement) TO \(identifier: final);", at: 0)
        }
        if change.isRename { phases.contracting.append("ALTER TABLE \(identifier: old) RENAME TO \(identifier: new);") }
        for (was, now) in change.renamedColumns where phases.replaced[was] == nil {
            phases.contracting.append("ALTER TABLE \(identifier: new) RENAME COLUMN \(identifier: was) TO \(identifier: now);")
        }
        if change.isRename || !change.renamedColumns.isEmpty {
            // A phases.replaced column's check went with it.
            var before = change.from
            for index in before.columns.indices where phases.replaced[before.columns[index].name] != nil { before.columns[index].enumValues = nil }
            phases.contracting += renderer.statements(for: .renameConstraints(table: new, from: before, to: change.to, columnSources: change.columnSources))
        }

    }

    /// Foreign keys, compared in the new names, and a changed primary key.
    mutating func alterKeys(_ change: TableChange, _ phases: inout TablePhases) {
        let old = change.from.name, new = change.to.name
        let back = Dictionary(change.columnSources.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        // Foreign keys, compared in the new names.
        let renamedOld = change.from.foreignKeys.map { key in (key, key.columns.map { column in back[column] ?? "" }) }
        let kept = change.to.foreignKeys.filter { key in
            renamedOld.contains { $0.1 == key.columns && $0.0.table == key.table && $0.0.referencedColumns == key.referencedColumns && $0.0.onDelete == key.onDelete }
        }
        for (key, mapped) in renamedOld where !kept.contains(where: { $0.columns == mapped && $0.table == key.table }) {
            toContract.keys.append("ALTER TABLE \(identifier: old) DROP CONSTRAINT IF EXISTS \(identifier: PostgresRenderer.foreignKeyName(old, key));")
        }
        for key in change.to.foreignKeys where !kept.contains(key) && renamedOld.contains(where: { $0.1 == key.columns }) {
            // Another delete rule on the same columns: the old version's rule holds until contract.
            let name = PostgresRenderer.foreignKeyName(new, key)
            toContract.keysAdded.append("ALTER TABLE \(identifier: new) ADD \(PostgresRenderer.foreignKey(new, key)) NOT VALID;")
            toContract.statements.append(.validation("ALTER TABLE \(identifier: new) VALIDATE CONSTRAINT \(identifier: name);"))
        }
        for key in change.to.foreignKeys where !kept.contains(key) && !renamedOld.contains(where: { $0.1 == key.columns }) {
            // Added NOT VALID (checked for new rows at once, without scanning), validated later.
            let physicalKey = physical(key, columns: key.columns.map { column in change.columnSources[column].map { phases.replaced[$0] ?? $0 } ?? column })
            let name = PostgresRenderer.foreignKeyName(new, key)
            phases.expanding.append(
                "ALTER TABLE \(identifier: old) ADD CONSTRAINT \(identifier: name) FOREIGN KEY (\(SQL.identifiers(physicalKey.columns))) REFERENCES \(identifier: physicalKey.table) (\(SQL.identifiers(key.referencedColumns))) ON DELETE \(SQL(verbatim: key.onDelete.rawValue)) NOT VALID;"
            )
            toExpand.validations.append("ALTER TABLE \(identifier: old) VALIDATE CONSTRAINT \(identifier: name);")
            phases.rollingBack.append("ALTER TABLE \(identifier: old) DROP CONSTRAINT IF EXISTS \(identifier: name);")
        }
        if change.keyChanged {
            offline.append("\(old): a new primary key rebuilds its index while holding the table")
            phases.expanding += note("not online: a new primary key")
            phases.expanding.append("ALTER TABLE \(identifier: old) DROP CONSTRAINT IF EXISTS \(identifier: PostgresRenderer.primaryKeyName(old));")
            phases.rollingBack.append("ALTER TABLE \(identifier: old) DROP CONSTRAINT IF EXISTS \(identifier: PostgresRenderer.primaryKeyName(old));")
            phases.rollingBack.append("ALTER TABLE \(identifier: old) ADD CONSTRAINT \(identifier: PostgresRenderer.primaryKeyName(old)) PRIMARY KEY (\(SQL.identifiers(change.from.primaryKey)));")
            let keyColumns = change.to.primaryKey.map { column in change.columnSources[column].map { phases.replaced[$0] ?? $0 } ?? column }
            phases.expanding.append("ALTER TABLE \(identifier: old) ADD CONSTRAINT \(identifier: PostgresRenderer.primaryKeyName(old)) PRIMARY KEY (\(SQL.identifiers(keyColumns)));")
        }

    }

    /// Indexes built CONCURRENTLY (a unique one then becomes its constraint), dropped ones at
    /// contract, and comments.
    mutating func alterIndexes(_ change: TableChange, _ phases: inout TablePhases) {
        let old = change.from.name, new = change.to.name
        // Indexes: built CONCURRENTLY (a unique one then becomes its constraint); the ones the
        // new version drops go at contract.
        for index in change.droppedIndexes {
            // Before the table's rename below: they name it as it was.
            if index.isFullText {
                phases.contracting.insert(contentsOf: renderer.statements(for: .dropIndex(table: old, index)), at: 0)
            } else if index.isUnique {
                phases.contracting.insert("ALTER TABLE \(identifier: old) DROP CONSTRAINT IF EXISTS \(identifier: PostgresRenderer.indexName(index));", at: 0)
            } else {
                toContract.statements.append(.concurrently("DROP INDEX CONCURRENTLY IF EXISTS \(identifier: PostgresRenderer.indexName(index));"))
            }
        }
        for index in change.addedIndexes {
            let indexedColumns = index.columns.map { column in change.columnSources[column].map { phases.replaced[$0] ?? $0 } ?? column }
            let name = PostgresRenderer.indexName(index)
            if index.isFullText {
                offline.append("\(new): a new full-text index adds a generated column, which rewrites the table")
                var physical = index
                physical.columns = indexedColumns
                phases.expanding += note("not online: a generated column rewrites the table") + renderer.statements(for: .createIndex(table: old, physical))
                phases.rollingBack += renderer.statements(for: .dropIndex(table: old, physical))
                continue
            }
            // A build that was killed or failed leaves an invalid index behind: the section drops it
            // first, so resuming it (which runs the whole section again) builds it afresh.
            toExpand.indexBuilds.append(
                (
                    old,
                    "DROP INDEX CONCURRENTLY IF EXISTS \(identifier: name);\nCREATE \(index.isUnique ? "UNIQUE " : "")INDEX CONCURRENTLY \(identifier: name) ON \(identifier: old) (\(SQL.identifiers(indexedColumns)));"
                ))
            if index.isUnique {
                toExpand.afterBackfill.append((old, "ALTER TABLE \(identifier: old) ADD CONSTRAINT \(identifier: name) UNIQUE USING INDEX \(identifier: name);"))
                phases.rollingBack.append("ALTER TABLE \(identifier: old) DROP CONSTRAINT IF EXISTS \(identifier: name);")
            }
            toRollBack.statements.append(.concurrently("DROP INDEX CONCURRENTLY IF EXISTS \(identifier: name);"))
        }
        for comment in change.changedComments {
            phases.contractAfterRename += renderer.statements(for: .comment(table: new, column: comment.column, from: comment.from, to: comment.to))
        }

    }

    // MARK: - Table splits

    /// The trigger function that carries a split's writes from one table to the other.
    func syncFunction(_ table: String, to other: String) -> String { PostgresRenderer.identifier("schemagen_\(to.version)_\(table)_to_\(other)") }

    /// A table split (`movedFrom`) while both versions run: the old version keeps writing the
    /// moved columns in the source table, the new one writes them in the target table. Triggers
    /// carry each version's writes to the other place, both ways, from the moment expand
    /// creates them; existing rows are then copied in batches that never overwrite a row a
    /// trigger already wrote (`ON CONFLICT DO NOTHING`). So neither version's writes are lost,
    /// and rollback and contract copy nothing: both places agree. Needs one target row per
    /// source row (a unique key on the target's link) and a single-column source key;
    /// otherwise the split is refused online, with why.
    mutating func splitTable(_ fill: TableFill) {
        let target = to.table(named: fill.target)
        let uniqueLink =
            target.map { table in table.primaryKey == fill.targetKey || table.indexes.contains { $0.isUnique && Set($0.columns) == Set(fill.targetKey) } } ?? false
        guard uniqueLink else {
            refused.append(
                "\(fill.target) takes \(fill.sourceColumns.joined(separator: ", ")) from \(fill.source), but several \(fill.target) rows may point at one \(fill.source) row, so a write through either version cannot be carried to exactly one row of the other: make the relationship to-one (a unique link), or plan this migration without `online: true`"
            )
            return
        }
        guard let key = singleKey(of: fill.source), fill.sourceKey == [key.name] else {
            refused.append(
                "\(fill.target) takes columns from \(fill.source), which has no single-column key to copy its rows by in batches: plan this migration without `online: true`")
            return
        }
        let (source, targetTable) = (SQL.identifier(fill.source), SQL.identifier(fill.target))
        let link = fill.targetKey.map(SQL.identifier), sourceKey = SQL.identifier(key.name)
        let pairs = zip(fill.sourceColumns.map(SQL.identifier), fill.targetColumns.map(SQL.identifier)).map { (source: $0, target: $1) }
        // A target column that takes the source's key (a new entity keyed as its source row,
        // so that every database splits to the same keys) is copied, never cleared or written
        // back: the source's key does not change.
        let moved = pairs.filter { $0.source != sourceKey }
        guard !moved.isEmpty else {
            refused.append("\(fill.target) takes only the key of \(fill.source): move a value with it, or plan this migration without `online: true`")
            return
        }
        let keyType = SQL(verbatim: key.type)
        let (toTarget, toSource) = (syncFunction(fill.source, to: fill.target), syncFunction(fill.target, to: fill.source))
        toExpand.tables.append(
            note(
                "the old version's writes of \(fill.sourceColumns.joined(separator: ", ")) reach \(fill.target), and the new version's come back, by these triggers; creating them takes each table's lock briefly, within the lock budget, and then each write also locks the row it copies to"
            ) + Self.splitTriggers(source: source, target: targetTable, link: link, sourceKey: sourceKey, pairs: pairs, moved: moved, names: (toTarget, toSource)))
        // Existing rows in batches of the source's key; a row a trigger wrote first is newer.
        let filter = SQL.list(moved.map { "\($0.source) IS NOT NULL" }, separator: " OR ")
        toExpand.splitCopies.append(
            .backfill(
                OnlinePhase.Backfill(table: fill.source, key: key.name, type: key.type, batch: OnlinePlan.backfillBatch, bounds: "inclusive", copies: false),
                update:
                    text(
                        "INSERT INTO \(targetTable) (\(SQL.list(link + pairs.map(\.target)))) SELECT \(SQL.list([sourceKey] + pairs.map(\.source))) FROM \(source) WHERE \(sourceKey) >= $1::\(keyType) AND \(sourceKey) <= $2::\(keyType) AND (\(filter)) ON CONFLICT (\(SQL.list(link))) DO NOTHING;"
                    )
            ))
        let drops: [SQL] = [
            "DROP TRIGGER IF EXISTS \(identifier: toTarget) ON \(source);", "DROP FUNCTION IF EXISTS \(identifier: toTarget)();",
            "DROP TRIGGER IF EXISTS \(identifier: toSource) ON \(targetTable);", "DROP FUNCTION IF EXISTS \(identifier: toSource)();",
        ]
        // Contract: the triggers go before the moved columns do (one table's at a time).
        toContract.syncDrops += [Array(drops[..<2]), Array(drops[2...])]
        // Rollback: both places agree, so nothing is copied back; the target table goes.
        toRollBack.tables.append(Array(drops[2...]))
        toRollBack.tables.append(Array(drops[..<2]))
    }

    /// The two triggers that keep a split's places in step: the old version's writes of the moved
    /// columns reach the new table, and the new version's come back. `moved` leaves out a
    /// column that takes the source's key.
    static func splitTriggers(
        source: SQL, target: SQL, link: [SQL], sourceKey: SQL, pairs: [(source: SQL, target: SQL)], moved: [(source: SQL, target: SQL)], names: (toTarget: String, toSource: String)
    ) -> [SQL] {
        let (toTarget, toSource) = names
        let allNull = SQL.list(moved.map { "NEW.\($0.source) IS NULL" }, separator: " AND ")
        // The functions name the tables as the migration does, whatever search path the app
        // writing has (a version's views come first in it). Nested writes (the other
        // direction's, a cascade) and backfill batches carry nothing back.
        let guardClause: SQL = "IF pg_trigger_depth() > 1 OR current_setting('schemagen.backfill', true) = 'on' THEN RETURN NULL; END IF;"
        return [
            """
            CREATE OR REPLACE FUNCTION \(identifier: toTarget)() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $schemagen$
            BEGIN
                \(guardClause)
                IF \(allNull) THEN
                    UPDATE \(target) SET \(SQL.list(moved.map { "\($0.target) = NULL" })) WHERE \(link[0]) = NEW.\(sourceKey);
                ELSE
                    INSERT INTO \(target) (\(SQL.list(link + pairs.map(\.target)))) VALUES (NEW.\(sourceKey), \(SQL.list(pairs.map { "NEW.\($0.source)" })))
                    ON CONFLICT (\(SQL.list(link))) DO UPDATE SET \(SQL.list(moved.map { "\($0.target) = excluded.\($0.target)" }));
                END IF;
                RETURN NULL;
            END $schemagen$;
            """,
            "DROP TRIGGER IF EXISTS \(identifier: toTarget) ON \(source);",
            "CREATE TRIGGER \(identifier: toTarget) AFTER INSERT OR UPDATE OF \(SQL.list(pairs.map(\.source))) ON \(source) FOR EACH ROW EXECUTE FUNCTION \(identifier: toTarget)();",
            """
            CREATE OR REPLACE FUNCTION \(identifier: toSource)() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $schemagen$
            BEGIN
                \(guardClause)
                IF TG_OP = 'DELETE' OR TG_OP = 'UPDATE' AND OLD.\(link[0]) IS DISTINCT FROM NEW.\(link[0]) THEN
                    UPDATE \(source) SET \(SQL.list(moved.map { "\($0.source) = NULL" })) WHERE \(sourceKey) = OLD.\(link[0]);
                END IF;
                IF TG_OP <> 'DELETE' THEN
                    UPDATE \(source) SET \(SQL.list(moved.map { "\($0.source) = NEW.\($0.target)" })) WHERE \(sourceKey) = NEW.\(link[0]);
                END IF;
                RETURN NULL;
            END $schemagen$;
            """,
            "DROP TRIGGER IF EXISTS \(identifier: toSource) ON \(target);",
            "CREATE TRIGGER \(identifier: toSource) AFTER INSERT OR UPDATE OR DELETE ON \(target) FOR EACH ROW EXECUTE FUNCTION \(identifier: toSource)();",
        ]
    }

    // MARK: - Columns

    mutating func addColumn(_ column: ColumnSnapshot, table: String, newTable: String, expanding: inout [SQL], rollingBack: inout [SQL], contracting: inout [SQL]) {
        rollingBack.append("ALTER TABLE \(identifier: table) DROP COLUMN IF EXISTS \(identifier: column.name);")
        var nullable = column
        nullable.isNullable = true
        var check = PostgresRenderer.check(table, column).map { $0 + " NOT VALID" }
        defer {
            if let check {
                expanding.append("ALTER TABLE \(identifier: table) ADD \(check);")
                toExpand.validations.append("ALTER TABLE \(identifier: table) VALIDATE CONSTRAINT \(identifier: PostgresRenderer.checkName(table, column.name));")
            }
        }
        if column.isAutoIncrement {
            offline.append("\(newTable).\(column.name): a new identity column numbers every row, rewriting the table")
            expanding += note("not online: an identity column rewrites the table") + ["ALTER TABLE \(identifier: table) ADD COLUMN \(PostgresRenderer.columnDefinition(column));"]
            return
        }
        let given = column.defaultValue == .null ? nil : column.defaultValue
        let backfillValue: ColumnDefault? = {
            if case .value(let value)? = column.backfill, value.isConstant, value != .null { return value }
            return nil
        }()
        if given?.isConstant ?? true, column.isNullable || given != nil || backfillValue != nil {
            // A constant default is a catalogue change (PostgreSQL 11+): every existing row reads
            // it, and the old version's inserts get it. A required column's constant backfill is
            // its default until contract.
            nullable.defaultValue = given ?? (column.isNullable ? nil : backfillValue)
            expanding.append("ALTER TABLE \(identifier: table) ADD COLUMN IF NOT EXISTS \(PostgresRenderer.columnDefinition(nullable));")
            guard !column.isNullable else { return }
            requireLater(table: table, column: column.name, newTable: newTable, expanding: &expanding, contracting: &contracting)
            if given == nil { contracting.append("ALTER TABLE \(identifier: newTable) ALTER COLUMN \(identifier: column.name) DROP DEFAULT;") }
            return
        }
        if let value = given, let key = singleKey(of: table) {
            // A default per row (now, a UUID): new rows get it at once, old rows in batches.
            expanding.append("ALTER TABLE \(identifier: table) ADD COLUMN IF NOT EXISTS \(PostgresRenderer.columnDefinition(PostgresRenderer.withoutDefault(nullable)));")
            expanding.append("ALTER TABLE \(identifier: table) ALTER COLUMN \(identifier: column.name) SET DEFAULT \(PostgresRenderer.expression(value, kind: column.kind));")
            addBackfill(table: table, key: key, set: "\(identifier: column.name) = \(PostgresRenderer.expression(value, kind: column.kind))", where: "\(identifier: column.name) IS NULL")
            if !column.isNullable { requireLater(table: table, column: column.name, newTable: newTable, expanding: &expanding, contracting: &contracting) }
            return
        }
        offline.append("\(newTable).\(column.name): required, and filled by SQL the old version's inserts do not run; give it a default or a constant backfill to add it online")
        expanding += note("not online: a required column filled by SQL") + renderer.statements(for: .addColumn(table: table, column))
        check = nil
    }

    /// A required column checked by a NOT VALID constraint now (validated after the backfills,
    /// without blocking writers), and made NOT NULL at contract, where the valid check spares
    /// the scan.
    mutating func requireLater(table: String, column: String, newTable: String, expanding: inout [SQL], contracting: inout [SQL]) {
        let check = notNullCheck(table, column)
        // After the backfills: a NOT VALID check still applies to every row a batch updates.
        toExpand.afterBackfill.append((table, "ALTER TABLE \(identifier: table) ADD CONSTRAINT \(identifier: check) CHECK (\(identifier: column) IS NOT NULL) NOT VALID;"))
        toExpand.validations.append("ALTER TABLE \(identifier: table) VALIDATE CONSTRAINT \(identifier: check);")
        contracting.append("ALTER TABLE \(identifier: newTable) ALTER COLUMN \(identifier: column) SET NOT NULL;")
        contracting.append("ALTER TABLE \(identifier: newTable) DROP CONSTRAINT IF EXISTS \(identifier: check);")
    }

    func notNullCheck(_ table: String, _ column: String) -> String {
        PostgresRenderer.identifier("\(table)_\(column)_not_null")
    }

    /// Why a column cannot get a replacement: keys and indexes would have to move with it.
    func replacementBlocked(_ column: String, in table: TableSnapshot, was: ColumnSnapshot, now: ColumnSnapshot) -> String? {
        if table.primaryKey.contains(column) { return "its type changes and it is part of the primary key, which other tables refer to" }
        if table.foreignKeys.contains(where: { $0.columns.contains(column) }) { return "its type changes and it holds a foreign key" }
        if table.indexes.contains(where: { $0.columns.contains(column) }) { return "it is indexed, and its index would have to be rebuilt on the new column" }
        if singleKey(of: table.name) == nil { return "its table has no single-column key to backfill it by" }
        if now.isNullable == false, now.defaultValue == nil, PostgresRenderer.backfillExpression(now) == nil, was.isNullable {
            return "it becomes required without a default or backfill value for the rows that lack one"
        }
        return nil
    }

    /// The physical table's single-column key (for batched backfills), with its PostgreSQL type.
    func singleKey(of table: String) -> (name: String, type: String)? {
        guard let snapshot = from?.table(named: table), snapshot.primaryKey.count == 1, let column = snapshot.column(named: snapshot.primaryKey[0]) else { return nil }
        return (column.name, PostgresRenderer.type(of: column))
    }

    mutating func addBackfill(table: String, key: (name: String, type: String), set: SQL, where condition: SQL) {
        if let index = toExpand.backfills.firstIndex(where: { $0.table == table }) {
            toExpand.backfills[index].set.append(set)
            toExpand.backfills[index].conditions.append(condition)
        } else {
            toExpand.backfills.append((table, key, [set], [condition]))
        }
    }

    /// A batched backfill: each range's rows that still need it, taken `FOR UPDATE SKIP LOCKED` so
    /// a row an app holds is passed by (and revisited at the end) instead of waited for. The
    /// range is two plain bounds, so a generic plan (a pooler, `plan_cache_mode`) still reads
    /// the key's index for it.
    func backfill(table: String, key: (name: String, type: String), set: SQL, where condition: SQL) -> OnlinePhase.Section {
        let k = SQL.identifier(key.name)
        let type = SQL(verbatim: key.type)
        let range: SQL = "\(k) >= $1::\(type) AND \(k) <= $2::\(type)"
        // The range outside the subquery too: without it the planner joins the locked keys with
        // a scan of the whole table, once per batch.
        // The rows a range still needs, without the row locks: looked for again at the end.
        let pending: SQL = "SELECT \(k) FROM \(identifier: table) WHERE \(range) AND (\(condition))"
        return .backfill(
            OnlinePhase.Backfill(table: table, key: key.name, type: key.type, batch: OnlinePlan.backfillBatch, bounds: "inclusive", pending: text(pending), copies: false),
            update: text("UPDATE \(identifier: table) SET \(set) WHERE \(range) AND \(k) IN (\(pending) FOR UPDATE SKIP LOCKED);"))
    }

    /// The column beside `source`: its values converted by a trigger on every write through
    /// either version, existing rows converted in batches. A write through the old version
    /// sets `source`, one through the new version the replacement; the trigger tells them
    /// apart by which one the write changed.
    mutating func replaceColumn(
        table: String, source: String, replacement: String, was: ColumnSnapshot, now: ColumnSnapshot, newTable: String, finalName: String,
        expanding: inout [SQL], rollingBack: inout [SQL], contracting: inout [SQL]
    ) {
        var column = now
        column.name = replacement
        column.isNullable = true
        column.defaultValue = nil
        column.isAutoIncrement = false
        func forward(_ value: SQL) -> SQL { PostgresRenderer.carried(value, from: was, to: now) }
        func backward(_ value: SQL) -> SQL { PostgresRenderer.converted(value, from: now, to: was) }
        let function = PostgresRenderer.identifier("schemagen_\(to.version)_\(table)_\(source)_sync")
        let (o, n): (SQL, SQL) = ("NEW.\(identifier: source)", "NEW.\(identifier: replacement)")
        // A write through the new version's views (its search path names them): the value it
        // gives is the value, NULL included, so a NULL the new version forbids is refused by
        // its check, as its table would refuse it; only the old version's writes are filled in.
        let newVersionWrite: SQL = "current_setting('search_path') ~ \(SQL.literal("(^|[\\s,\"])\(newSchema)($|[\\s,\"])"))"
        expanding.append("ALTER TABLE \(identifier: table) ADD COLUMN IF NOT EXISTS \(PostgresRenderer.columnDefinition(column));")
        expanding.append(
            """
            CREATE OR REPLACE FUNCTION \(identifier: function)() RETURNS trigger LANGUAGE plpgsql AS $schemagen$
            BEGIN
                IF current_setting('schemagen.backfill', true) = 'on' THEN RETURN NEW; END IF;
                IF TG_OP = 'INSERT' THEN
                    IF \(n) IS NOT NULL OR \(newVersionWrite) THEN \(o) := \(backward(n)); ELSE \(n) := \(forward(o)); END IF;
                ELSIF \(n) IS DISTINCT FROM OLD.\(identifier: replacement) THEN
                    \(o) := \(backward(n));
                ELSIF \(o) IS DISTINCT FROM OLD.\(identifier: source) OR \(n) IS NULL THEN
                    \(n) := \(forward(o));
                END IF;
                RETURN NEW;
            END $schemagen$;
            """)
        expanding.append("DROP TRIGGER IF EXISTS \(identifier: function) ON \(identifier: table);")
        expanding.append("CREATE TRIGGER \(identifier: function) BEFORE INSERT OR UPDATE ON \(identifier: table) FOR EACH ROW EXECUTE FUNCTION \(identifier: function)();")
        if !now.isNullable {
            requireReplacement(table: table, replacement: replacement, expanding: &expanding)
        }
        if let check = PostgresRenderer.check(table, column) {
            toExpand.afterBackfill.append((table, "ALTER TABLE \(identifier: table) ADD \(check) NOT VALID;"))
            toExpand.validations.append("ALTER TABLE \(identifier: table) VALIDATE CONSTRAINT \(identifier: PostgresRenderer.checkName(table, replacement));")
        }
        if let key = singleKey(of: table) {
            addBackfill(
                table: table, key: key, set: "\(identifier: replacement) = \(forward(.identifier(source)))", where: "\(identifier: replacement) IS DISTINCT FROM \(forward(.identifier(source)))")
        }
        rollingBack.append("DROP TRIGGER IF EXISTS \(identifier: function) ON \(identifier: table);")
        rollingBack.append("DROP FUNCTION IF EXISTS \(identifier: function)();")
        rollingBack.append("ALTER TABLE \(identifier: table) DROP COLUMN IF EXISTS \(identifier: replacement);")
        // Contract: the trigger before anything else, then (after the replacement took the
        // final name) its constraints.
        toContract.triggers.append("DROP TRIGGER IF EXISTS \(identifier: function) ON \(identifier: table);")
        toContract.triggers.append("DROP FUNCTION IF EXISTS \(identifier: function)();")
        if !now.isNullable {
            contracting.append("ALTER TABLE \(identifier: newTable) ALTER COLUMN \(identifier: finalName) SET NOT NULL;")
            contracting.append("ALTER TABLE \(identifier: newTable) DROP CONSTRAINT IF EXISTS \(identifier: notNullCheck(table, replacement));")
        }
        if let value = now.defaultValue {
            contracting.append("ALTER TABLE \(identifier: newTable) ALTER COLUMN \(identifier: finalName) SET DEFAULT \(PostgresRenderer.expression(value, kind: now.kind));")
        }
        if now.enumValues != nil {
            contracting.append(
                "ALTER TABLE \(identifier: newTable) RENAME CONSTRAINT \(identifier: PostgresRenderer.checkName(table, replacement)) TO \(identifier: PostgresRenderer.checkName(newTable, finalName));"
            )
        }
    }

    mutating func requireReplacement(table: String, replacement: String, expanding: inout [SQL]) {
        let check = notNullCheck(table, replacement)
        toExpand.afterBackfill.append((table, "ALTER TABLE \(identifier: table) ADD CONSTRAINT \(identifier: check) CHECK (\(identifier: replacement) IS NOT NULL) NOT VALID;"))
        toExpand.validations.append("ALTER TABLE \(identifier: table) VALIDATE CONSTRAINT \(identifier: check);")
    }

    /// Allowed values: while both versions write, the column accepts either version's values;
    /// contract narrows it to the new ones, rollback to the old ones.
    mutating func enumChange(
        table: String, column: String, was: ColumnSnapshot, now: ColumnSnapshot, newTable: String, finalName: String,
        expanding: inout [SQL], rollingBack: inout [SQL], contracting: inout [SQL]
    ) {
        var union = now
        union.name = column
        union.enumValues = (was.enumValues ?? []) + (now.enumValues ?? []).filter { !(was.enumValues ?? []).contains($0) }
        let name = PostgresRenderer.checkName(table, column)
        func swap(_ table: String, _ target: ColumnSnapshot) -> (statements: [SQL], validations: [SQL]) {
            var statements: [SQL] = ["ALTER TABLE \(identifier: table) DROP CONSTRAINT IF EXISTS \(identifier: PostgresRenderer.checkName(table, target.name));"]
            guard let check = PostgresRenderer.check(table, target) else { return (statements, []) }
            statements.append("ALTER TABLE \(identifier: table) ADD \(check) NOT VALID;")
            return (statements, ["ALTER TABLE \(identifier: table) VALIDATE CONSTRAINT \(identifier: PostgresRenderer.checkName(table, target.name));"])
        }
        if union.enumValues == now.enumValues {
            // Only values added: the new version's check is the union, nothing left to narrow.
            let (statements, validations) = swap(table, union)
            expanding += statements
            toExpand.validations += validations
            var oldColumn = was
            oldColumn.name = column
            let undo = swap(table, oldColumn)
            rollingBack += undo.statements
            toRollBack.statements += undo.validations.map(OutsideStatement.validation)
            return
        }
        if now.enumValues != nil {
            let (statements, validations) = swap(table, union)
            expanding += statements
            toExpand.validations += validations
        } else {
            expanding.append("ALTER TABLE \(identifier: table) DROP CONSTRAINT IF EXISTS \(identifier: name);")
        }
        var oldColumn = was
        oldColumn.name = column
        let undo = swap(table, oldColumn)
        rollingBack += undo.statements
        toRollBack.statements += undo.validations.map(OutsideStatement.validation)
        var final = now
        final.name = finalName
        let narrow = swap(newTable, final)
        contracting += narrow.statements
        toContract.statements += narrow.validations.map(OutsideStatement.validation)
    }

    /// NOT NULL again on rollback, unless the new version wrote rows without the value: those
    /// are kept, and the column stays optional (a notice says so).
    static func restoreNotNull(_ table: String, _ column: String) -> SQL {
        """
        DO $schemagen$ BEGIN
            IF EXISTS (SELECT 1 FROM \(identifier: table) WHERE \(identifier: column) IS NULL) THEN
                RAISE WARNING 'schemagen: %.% stays optional: rows written during the rollout lack it', \(SQL.literal(table)), \(SQL.literal(column));
            ELSE
                ALTER TABLE \(identifier: table) ALTER COLUMN \(identifier: column) SET NOT NULL;
            END IF;
        END $schemagen$;
        """
    }
}

/// A comment line inside a phase's SQL, as the one statement list it joins.
private func note(_ text: String) -> [SQL] { [SQL(verbatim: SQLComment.line(text))] }

extension PostgresRenderer {
    /// A value of a column as `from` holds it, as `to` holds it: converted where the type
    /// changes (`conversion`), as it is otherwise.
    static func converted(_ value: SQL, from: ColumnSnapshot, to: ColumnSnapshot) -> SQL {
        type(of: from) == type(of: to) ? value : conversion(value, from: from, to: to)
    }

    /// The same, for the version a column becomes required in: a NULL filled (`filler`).
    static func carried(_ value: SQL, from: ColumnSnapshot, to: ColumnSnapshot) -> SQL {
        let value = converted(value, from: from, to: to)
        guard from.isNullable, !to.isNullable, let filler = filler(to) else { return value }
        return "coalesce(\(value), \(filler))"
    }

    static func withoutDefault(_ column: ColumnSnapshot) -> ColumnSnapshot {
        var column = column
        column.defaultValue = nil
        return column
    }
}
