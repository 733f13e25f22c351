import SQLDialects
import Testing

@testable import MigrationPlanner

/// Each change plans into lists of its own, joined to the migration's in the changes' order.
@Suite struct OnlinePhaseListsTests {
    @Test func aChangesListsJoinInOrderAndBackfillsOfOneTableBecomeOne() {
        var migration = ExpandLists()
        migration.tables = [["ALTER TABLE a ADD COLUMN x int;"]]
        migration.backfills = [(table: "a", key: (name: "id", type: "bigint"), set: ["x = 1"], conditions: ["x IS NULL"])]
        var change = ExpandLists()
        change.tables = [["ALTER TABLE b ADD COLUMN y int;"]]
        change.backfills = [
            (table: "a", key: (name: "id", type: "bigint"), set: ["z = 2"], conditions: ["z IS NULL"]),
            (table: "b", key: (name: "id", type: "bigint"), set: ["y = 3"], conditions: ["y IS NULL"]),
        ]
        migration.join(change)
        #expect(migration.tables.map { $0.map { $0.statement(for: SQLDialectName.postgres.dialect).statement.text } } == [["ALTER TABLE a ADD COLUMN x int;"], ["ALTER TABLE b ADD COLUMN y int;"]])
        // One UPDATE per table: a's two assignments together, so each row is written once.
        #expect(migration.backfills.map(\.table) == ["a", "b"])
        #expect(migration.backfills[0].set.count == 2 && migration.backfills[0].conditions.count == 2)
        var contract = ContractLists()
        contract.join(ContractLists(keys: ["k1"]))
        contract.join(ContractLists(keys: ["k2"], drops: ["d"]))
        #expect(contract.keys.count == 2 && contract.drops.count == 1)
    }
}
