import Foundation
import SQLDialects
import SchemaMetadata

/// One changed row as a recorder reads it: from SQLite's pre-update hook, or from the row images
/// the change triggers of engines without one (`RowImage`).

/// Collects the rows one transaction changes, as SQLite's pre-update hook reports them (so rows
/// changed by cascades and foreign-key actions count too), and writes them to the history table
/// in that same transaction just before it commits.
final class ChangeRecorder: RowChangeSink {
    /// What the recorder knows of one table of the schema.
    struct Table {
        let name: String
        let nameBytes: [CChar]
        let role: Role
    }

    enum Role {
        case entity(EntityTable)
        /// A many-to-many join table: a row added or removed updates both sides' relationship.
        case link([LinkSide])
    }

    struct EntityTable {
        let entity: Int
        /// Positions of the primary key's columns; empty when the key is the rowid itself.
        let keyPositions: [Int]
        /// Every column but the key, with the attribute or relationship name it stores; a
        /// relationship over several columns has no single value to show.
        let tracked: [(position: Int, name: Int, hasValue: Bool)]
        /// Columns of attributes marked `preserveValueOnDeletion`.
        let preserved: [(position: Int, name: Int)]
    }

    struct LinkSide {
        let entity: Int
        let relationship: Int
        let keyPositions: [Int]
    }

    /// One changed row. Names are indexes into `names`, entities into `entities`.
    struct Change {
        let entity: Int32
        let kind: HistoryChange.Kind
        let key: Key
        /// Update: changed names and their new values (nil for a link). Delete: the tombstone.
        var payload: [(name: Int32, value: StoredValue?)]
    }

    enum Key {
        case integer(Int64)
        case values([StoredValue])
    }

    let schema: String
    /// Whether inserts carry their values (`history: {insertValues: false}` turns it off).
    let recordsInsertValues: Bool
    private(set) var entities: [String] = []
    private(set) var names: [String] = []
    private var tables: [Table] = []
    /// The table matched last, by the pointer SQLite passed: bulk writes hit one table.
    private var lastMatch: (pointer: UnsafePointer<CChar>, index: Int)?
    private(set) var pending: [Change] = []

    init(schema: SchemaDescriptor, database: any StoreDatabase) throws(StoreError) {
        self.schema = schema.name
        recordsInsertValues = schema.recordsInsertValues
        var nameIndex: [String: Int] = [:]
        func name(_ text: String) -> Int {
            if let index = nameIndex[text] { return index }
            names.append(text)
            nameIndex[text] = names.count - 1
            return names.count - 1
        }
        var links: [String: [LinkSide]] = [:]
        for (entityIndex, entity) in schema.entities.enumerated() {
            entities.append(entity.name)
            let columns = try Self.columns(of: entity.table, database)
            let position = Dictionary(columns.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
            let keyIsRowID =
                entity.hasImplicitKey
                || (entity.primaryKey.count == 1 && columns.first { $0.name == entity.primaryKey[0] }?.type.uppercased() == "INTEGER")
            var tracked: [(Int, Int, Bool)] = []
            var preserved: [(Int, Int)] = []
            for column in entity.columns where !entity.primaryKey.contains(column.column) {
                guard let at = position[column.column] else { continue }
                // A file name (external storage) or ciphertext tells a reader nothing: the
                // change is listed without its value.
                tracked.append((at, name(column.property), !column.usesExternalStorage && !column.isEncrypted))
                if column.preservesValueOnDeletion, !column.usesExternalStorage { preserved.append((at, name(column.property))) }
            }
            for relationship in entity.relationships {
                let relationshipName = name(relationship.name)
                for column in relationship.foreignKeyColumns where !entity.primaryKey.contains(column) {
                    if let at = position[column] { tracked.append((at, relationshipName, relationship.foreignKeyColumns.count == 1)) }
                }
                if let joinTable = relationship.joinTable, !relationship.joinColumns.isEmpty {
                    // Both ends of the link: this side, and the target's inverse.
                    let linkColumns = try Self.columns(of: joinTable, database).map(\.name)
                    var ends = [(entityIndex, relationshipName, relationship.joinColumns)]
                    if let inverse = relationship.inverse, let target = schema.entities.firstIndex(where: { $0.name == relationship.target }) {
                        ends.append((target, name(inverse), relationship.joinTargetColumns))
                    }
                    for (end, endName, columns) in ends {
                        let positions = columns.compactMap { linkColumns.firstIndex(of: $0) }
                        guard positions.count == columns.count, !positions.isEmpty,
                            !(links[joinTable] ?? []).contains(where: { $0.entity == end && $0.relationship == endName })
                        else { continue }
                        links[joinTable, default: []].append(LinkSide(entity: end, relationship: endName, keyPositions: positions))
                    }
                }
            }
            for column in entity.columns where entity.primaryKey.contains(column.column) && column.preservesValueOnDeletion {
                if let at = position[column.column] { preserved.append((at, name(column.property))) }
            }
            let keyPositions = keyIsRowID ? [] : entity.primaryKey.compactMap { position[$0] }
            tables.append(
                Table(
                    name: entity.table, nameBytes: Array(entity.table.utf8CString),
                    role: .entity(EntityTable(entity: entityIndex, keyPositions: keyPositions, tracked: tracked, preserved: preserved))))
        }
        for (joinTable, sides) in links.sorted(by: { $0.key < $1.key }) {
            tables.append(Table(name: joinTable, nameBytes: Array(joinTable.utf8CString), role: .link(sides)))
        }
    }

    static func columns(of table: String, _ database: any StoreDatabase) throws(StoreError) -> [(name: String, type: String)] {
        do { return try database.columns(of: table) } catch { throw .database(error) }
    }

    // MARK: - Recording

    /// Set while the store rewrites values without changing them (re-encryption).
    var paused = false

    /// The row-change hook's handler.
    func record<Row: ChangedRow>(_ change: Row, table name: UnsafePointer<CChar>) {
        guard !paused, let index = table(name) else { return }
        record(change, table: index)
    }

    /// A row of the table named `name` (the trigger fallback).
    func record(_ change: some ChangedRow, tableNamed name: String) {
        guard !paused, let index = tables.firstIndex(where: { $0.name == name }) else { return }
        record(change, table: index)
    }

    private func record(_ change: some ChangedRow, table index: Int) {
        switch tables[index].role {
        case .entity(let table):
            recordEntity(change, table)
        case .link(let sides):
            for side in sides {
                let read = change.operation == .delete ? change.old : change.new
                pending.append(
                    Change(
                        entity: Int32(side.entity), kind: .update, key: .values(side.keyPositions.map(read)),
                        payload: [(Int32(side.relationship), nil)]))
            }
        }
    }

    private func recordEntity(_ change: some ChangedRow, _ table: EntityTable) {
        let entity = Int32(table.entity)
        switch change.operation {
        case .insert:
            let key: Key = table.keyPositions.isEmpty ? .integer(change.newRowID) : .values(table.keyPositions.map(change.new))
            pending.append(Change(entity: entity, kind: .insert, key: key, payload: insertedValues(change, table)))
        case .update:
            var payload: [(Int32, StoredValue?)] = []
            for (position, name, hasValue) in table.tracked where change.changes(position) {
                if payload.contains(where: { $0.0 == Int32(name) }) { continue }
                payload.append((Int32(name), hasValue ? change.new(position) : nil))
            }
            let keyChanged = table.keyPositions.isEmpty ? change.oldRowID != change.newRowID : table.keyPositions.contains { change.changes($0) }
            if keyChanged {
                // A new key is a different row: the old one goes, the new one arrives.
                let old: Key = table.keyPositions.isEmpty ? .integer(change.oldRowID) : .values(table.keyPositions.map(change.old))
                let new: Key = table.keyPositions.isEmpty ? .integer(change.newRowID) : .values(table.keyPositions.map(change.new))
                pending.append(Change(entity: entity, kind: .delete, key: old, payload: table.preserved.map { (Int32($0.name), change.old($0.position)) }))
                pending.append(Change(entity: entity, kind: .insert, key: new, payload: insertedValues(change, table)))
                return
            }
            // Writing a row back unchanged (an upsert of the same values) is not a change. One
            // that changed only another version's columns is, with no attribute of this one:
            // the other version's readers find it under its own names.
            guard !payload.isEmpty || change.changesColumnsNotShown else { return }
            let key: Key = table.keyPositions.isEmpty ? .integer(change.oldRowID) : .values(table.keyPositions.map(change.old))
            pending.append(Change(entity: entity, kind: .update, key: key, payload: payload))
        case .delete:
            let key: Key = table.keyPositions.isEmpty ? .integer(change.oldRowID) : .values(table.keyPositions.map(change.old))
            pending.append(Change(entity: entity, kind: .delete, key: key, payload: table.preserved.map { (Int32($0.name), change.old($0.position)) }))
        }
    }

    /// An insert's values as an update lists them: every stored attribute and relationship,
    /// a file name (external storage) or ciphertext listed without its value.
    private func insertedValues(_ change: some ChangedRow, _ table: EntityTable) -> [(name: Int32, value: StoredValue?)] {
        guard recordsInsertValues else { return [] }
        var payload: [(name: Int32, value: StoredValue?)] = []
        payload.reserveCapacity(table.tracked.count)
        for (position, name, hasValue) in table.tracked where !payload.contains(where: { $0.name == Int32(name) }) {
            payload.append((Int32(name), hasValue ? change.new(position) : nil))
        }
        return payload
    }

    /// An insert of `table`'s row with implicit key `rowID` that the store made itself and no
    /// trigger captured (`OwnInsertRecording`): recorded as a captured one would be, where
    /// inserts carry no values.
    func recordOwnInsert(table name: String, rowID: Int64) {
        guard !paused, !recordsInsertValues, let index = tables.firstIndex(where: { $0.name == name }), case .entity(let table) = tables[index].role,
            table.keyPositions.isEmpty
        else { return }
        pending.append(Change(entity: Int32(table.entity), kind: .insert, key: .integer(rowID), payload: []))
    }

    private func table(_ pointer: UnsafePointer<CChar>) -> Int? {
        if let lastMatch, lastMatch.pointer == pointer, strcmp(pointer, tables[lastMatch.index].nameBytes) == 0 { return lastMatch.index }
        for (index, table) in tables.enumerated() where strcmp(pointer, table.nameBytes) == 0 {
            lastMatch = (pointer, index)
            return index
        }
        return nil
    }

    // MARK: - Transactions

    var mark: Int { pending.count }

    /// Forgets what was recorded after `mark` (a nested write that rolled back to its savepoint).
    func rollback(to mark: Int) {
        if mark < pending.count { pending.removeSubrange(mark...) }
    }

    func discard() { pending.removeAll(keepingCapacity: pending.count < 100_000) }

    /// Drops what the change triggers wrote in this transaction (a rewrite that changes no value).
    func forgetFallbackRows() throws(DatabaseFailure) {
        try triggers?.discardChangedRows()
    }

    /// The names of the tables recorded, for the trigger fallback.
    var tableNames: [String] { tables.map(\.name) }

    /// Set when changes come from the engine's change triggers instead of a hook.
    var triggers: (any ChangeTriggers)?

    /// The transaction's history row (schema, author, time, entities, changes), with the
    /// images the change triggers hold taken out; nil when nothing changed. Runs inside the
    /// transaction, just before COMMIT.
    func historyRow(author: String?) throws(DatabaseFailure) -> [StoredValue]? {
        try triggers?.drainChangedRows { table, row in record(row, tableNamed: table) }
        guard !pending.isEmpty else { return nil }
        defer { discard() }
        let touched = Set(pending.map(\.entity)).sorted().map { entities[Int($0)] }
        return [
            .text(schema), author.map(StoredValue.text) ?? .null, .real(Date().timeIntervalSince1970), .text(HistoryCodec.encodeNames(touched)),
            .text(HistoryCodec.encode(pending, entities: entities, names: names)),
        ]
    }

    /// Appends `row` to the history table; returns its token, and whether the commit was
    /// announced with it (in the same round trip, where the engine can).
    func write(_ row: [StoredValue], _ database: any StoreDatabase, _ abilities: StoreAbilities) throws(DatabaseFailure) -> (token: Int64?, announced: Bool) {
        try abilities.history.ordering?.orderHistoryWrites()
        let insert: SQL = "INSERT INTO schemagen_history (schema, author, committed_at, entities, changes) VALUES (\(SQL.parameters(row)))"
        if let announcing = abilities.history.announcing {
            let rendered = insert.statement(for: database.dialect)
            return (try announcing.announceCommit(insertingHistory: rendered.statement, rendered.arguments), true)
        }
        if database.dialect.capabilities.lastInsertedKey, let rowIDs = abilities.bulk.rowIDs {
            _ = try database.query(insert)
            return (rowIDs.lastInsertedRowID, false)
        }
        guard case .integer(let token)? = try database.query(insert + database.dialect.returning("token")).first?.first else { return (nil, false) }
        return (token, false)
    }
}
