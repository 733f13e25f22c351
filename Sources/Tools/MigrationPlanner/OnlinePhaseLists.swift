import MigrationFiles
import SQLDialects

// What the online planner's changes put into each phase, kept by kind until the phases are
// assembled in the order they run (`OnlinePlanner.plan`): each phase's lists in a type of its
// own. Each change plans into lists of its own, which `join` adds to the migration's.

/// Expand, in order: the copies' checks, each table's changes in a transaction of its own (so
/// no lock waits behind another table's), then index builds and validations, then backfills,
/// then the new version's views.
struct ExpandLists {
    /// Each table's changes, in a transaction of its own.
    var tables: [[SQL]] = []
    /// Index builds (`CONCURRENTLY`, outside transactions), by the table they index.
    var indexBuilds: [(table: String, statement: SQL)] = []
    /// Backfills, one UPDATE per table (its assignments together, so each row is written once).
    var backfills: [(table: String, key: (name: String, type: String), set: [SQL], conditions: [SQL])] = []
    /// Statements after the backfills, by the table they lock: each table's in a transaction of
    /// its own, tables by name, so no transaction holds one table's lock while waiting for another's.
    var afterBackfill: [(table: String, statement: SQL)] = []
    var validations: [SQL] = []
    /// Copies of a split's existing rows, batched: after the triggers that keep both places in step.
    var splitCopies: [OnlinePhase.Section] = []
    /// The `check` queries of tables rebuilt by copying: what each carries, run first.
    var copyChecks: [SQL] = []
    /// Tables rebuilt by copying: their batched copies, index builds, and what follows the
    /// copies (in a transaction per table).
    var tableCopies: [OnlinePhase.Section] = []
    var copyIndexes: [OutsideStatement] = []
    var afterCopy: [[SQL]] = []

    /// A change's lists joined after the others': each list in order, and a backfill of a
    /// table that already has one joined into it, so each row is written once.
    mutating func join(_ other: ExpandLists) {
        tables += other.tables
        indexBuilds += other.indexBuilds
        for backfill in other.backfills {
            if let index = backfills.firstIndex(where: { $0.table == backfill.table }) {
                backfills[index].set += backfill.set
                backfills[index].conditions += backfill.conditions
            } else {
                backfills.append(backfill)
            }
        }
        afterBackfill += other.afterBackfill
        validations += other.validations
        splitCopies += other.splitCopies
        copyChecks += other.copyChecks
        tableCopies += other.tableCopies
        copyIndexes += other.copyIndexes
        afterCopy += other.afterCopy
    }
}

/// Contract, in order: foreign keys first, then each table, then dropped tables, then statements.
struct ContractLists {
    var keys: [SQL] = []
    var tables: [[SQL]] = []
    var drops: [SQL] = []
    /// Foreign keys that replace one on the same columns (another delete rule), added once every
    /// table has its new name.
    var keysAdded: [SQL] = []
    var statements: [OutsideStatement] = []
    /// The current table's sync triggers, dropped first in its contract.
    var triggers: [SQL] = []
    /// Each copy taking its table's place, in a transaction of its own.
    var swaps: [[SQL]] = []
    /// A split's triggers, each table's in a transaction of its own.
    var syncDrops: [[SQL]] = []

    /// A change's lists joined after the others'.
    mutating func join(_ other: ContractLists) {
        keys += other.keys
        tables += other.tables
        drops += other.drops
        keysAdded += other.keysAdded
        statements += other.statements
        triggers += other.triggers
        swaps += other.swaps
        syncDrops += other.syncDrops
    }
}

/// Rollback: each table's undoing in a transaction of its own, then statements outside one.
struct RollbackLists {
    var tables: [[SQL]] = []
    var statements: [OutsideStatement] = []

    /// A change's lists joined after the others'.
    mutating func join(_ other: RollbackLists) {
        tables += other.tables
        statements += other.statements
    }
}

/// How each new table's view reads the physical tables until contract.
struct ViewSources {
    /// New-version column -> the physical column its view reads, per new table name.
    var columns: [String: [(name: String, physical: String)]] = [:]
    var defaults: [String: [(column: String, value: SQL)]] = [:]
    /// The physical table each new table's view reads.
    var physicalTable: [String: String] = [:]
    /// New column -> physical column, per new table name (kept tables).
    var physicalColumns: [String: [String: String]] = [:]
}
