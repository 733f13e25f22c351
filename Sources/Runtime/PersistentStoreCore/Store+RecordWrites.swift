import SQLDialects
import SchemaMetadata

/// What became of a record's update: written, refused because the record is no longer as the
/// caller saw it (another writer changed it: both versions are at hand), or gone.
public enum RecordUpdate: Sendable, Hashable {
    /// Written; the record as stored now.
    case updated(StoredRecord)
    /// Not written: the record changed since the caller read it; as it is now.
    case changedMeanwhile(current: StoredRecord)
    /// No record has that key (deleted meanwhile).
    case missing
}

/// What deleting a record would do to the records its relationships reach, by its delete
/// rules, before anything is deleted.
public struct RecordDeleteEffect: Sendable, Hashable {
    /// The relationship, as the schema names it.
    public let relationship: String
    /// The related entity.
    public let target: String
    /// How many related records it reaches now.
    public let count: Int
    /// What the delete does to them: cascade deletes them, nullify clears their link, deny
    /// refuses the delete while there are any, noAction leaves them.
    public let rule: DeleteRule
}

/// Writes to records of entities known only at run time (the studio's edits), through the
/// store's own paths: encrypted values sealed and external values stored as a model's would
/// be, delete rules applied, every change recorded in the history under the store's author.
extension Store {
    /// Sets columns of one record, in one transaction, if the record is still as `expected`
    /// (the record the caller read; nil to write whatever it is now). Key columns cannot change.
    ///
    ///     let outcome = try await store.updateRecord(of: airports, key: [.integer(7)], set: ["name": .text("Oakland")], expecting: shown)
    public func updateRecord(of entity: EntityDescriptor, key: [StoredValue], set changes: [String: StoredValue], expecting expected: StoredRecord? = nil) throws(StoreError)
        -> RecordUpdate
    {
        let entity = try writableEntity(entity)
        guard key.count == entity.primaryKey.count else { throw .notSupported("\(entity.name)'s key has \(entity.primaryKey.count) columns, not \(key.count)") }
        let names = changes.keys.sorted()
        for name in names {
            guard entity.recordColumns.contains(name) else { throw .notSupported("\(entity.name) has no column '\(name)'") }
            guard !entity.primaryKey.contains(name) else { throw .notSupported("\(entity.name)'s key (\(name)) cannot change; insert a new record instead") }
        }
        return try write { () throws(StoreError) -> RecordUpdate in
            guard let current = try record(of: entity, key: key) else { return .missing }
            if let expected, expected.values != current.values { return .changedMeanwhile(current: current) }
            guard !names.isEmpty else { return .updated(current) }
            // The key goes with the values, so sealing and external storage know the row.
            var columns = entity.primaryKey + names
            var values = key + names.map { changes[$0]! }
            try prepareRow(entity, columns: &columns, values: &values)
            let assignments = zip(columns, values).filter { !entity.primaryKey.contains($0.0) }.map { column, value -> SQL in "\(identifier: column) = \(value: value)" }
            do throws(DatabaseFailure) {
                _ = try database.query("UPDATE \(identifier: entity.table) SET \(SQL.list(assignments)) WHERE \(Self.condition(entity.primaryKey, key))" as SQL)
            } catch {
                throw .database(error)
            }
            guard let written = try record(of: entity, key: key) else { return .missing }
            return .updated(written)
        }
    }

    /// Inserts one record from column values (the rest take the database's defaults), in one
    /// transaction; the record as stored, its key included.
    ///
    ///     let added = try await store.insertRecord(of: airports, values: ["icao": .text("KOAK"), "name": .text("Oakland")])
    public func insertRecord(of entity: EntityDescriptor, values given: [String: StoredValue]) throws(StoreError) -> StoredRecord {
        let entity = try writableEntity(entity)
        let names = given.keys.sorted()
        for name in names where !entity.recordColumns.contains(name) { throw .notSupported("\(entity.name) has no column '\(name)'") }
        return try write { () throws(StoreError) -> StoredRecord in
            var columns = names
            var values = names.map { given[$0]! }
            if entity.hasImplicitKey, !columns.contains(implicitKeyColumn) {
                columns.insert(implicitKeyColumn, at: 0)
                values.insert(.null, at: 0)
            }
            try prepareRow(entity, columns: &columns, values: &values, replacing: false)
            // An implicit key the store did not choose is the database's: left out, read back.
            if entity.hasImplicitKey, let position = columns.firstIndex(of: implicitKeyColumn), values[position] == .null {
                columns.remove(at: position)
                values.remove(at: position)
            }
            let sql: SQL =
                columns.isEmpty
                ? "INSERT INTO \(identifier: entity.table) DEFAULT VALUES RETURNING \(SQL.identifiers(entity.primaryKey))"
                : "INSERT INTO \(identifier: entity.table) (\(SQL.identifiers(columns))) VALUES (\(SQL.parameters(values))) RETURNING \(SQL.identifiers(entity.primaryKey))"
            let returned: [[StoredValue]]
            do throws(DatabaseFailure) {
                returned = try database.query(sql)
            } catch {
                throw .database(error)
            }
            guard let key = returned.first else { throw .notSupported("the insert into \(entity.table) returned no key") }
            guard let inserted = try record(of: entity, key: key) else { throw .notSupported("the inserted \(entity.name) cannot be read back") }
            return inserted
        }
    }

    /// Deletes one record, applying every delete rule as `delete(_:)` does for a model; false
    /// when no record had the key. A deny rule refuses with `StoreError.deleteDenied`.
    ///
    ///     try await store.deleteRecord(of: airports, key: [.integer(7)])
    @discardableResult
    public func deleteRecord(of entity: EntityDescriptor, key: [StoredValue]) throws(StoreError) -> Bool {
        let entity = try writableEntity(entity)
        return try write { () throws(StoreError) -> Bool in
            guard try record(of: entity, key: key) != nil else { return false }
            var visited: Set<String> = []
            try deleteRow(of: entity, key: key, visited: &visited)
            return true
        }
    }

    /// What deleting the record would do, relationship by relationship, without deleting it:
    /// how many related records each reaches and its delete rule.
    ///
    ///     for effect in try await store.deleteEffects(of: airports, key: [.integer(7)]) { print(effect.relationship, effect.rule, effect.count) }
    public func deleteEffects(of entity: EntityDescriptor, key: [StoredValue]) throws(StoreError) -> [RecordDeleteEffect] {
        let entity = try knownRecordEntity(entity)
        return try entity.relationships.map { relationship throws(StoreError) -> RecordDeleteEffect in
            let (target, keys) = try relatedKeys(of: entity, key: key, via: relationship)
            return RecordDeleteEffect(relationship: relationship.name, target: target.name, count: keys.count, rule: relationship.deleteRule)
        }
    }

    // MARK: - Helpers

    /// The record with this key, read through the row pipeline.
    private func record(of entity: EntityDescriptor, key: [StoredValue]) throws(StoreError) -> StoredRecord? {
        try records(of: entity, where: zip(entity.primaryKey, key).map { RecordFilter($0, .equals($1)) }, limit: 1).records.first
    }

    private func knownRecordEntity(_ entity: EntityDescriptor) throws(StoreError) -> EntityDescriptor {
        guard let known = schema.entity(forTable: entity.table) else { throw .unknownEntity(entity.name) }
        return known
    }

    /// The store's entity, for a write: one whose encrypted columns the store can seal.
    private func writableEntity(_ entity: EntityDescriptor) throws(StoreError) -> EntityDescriptor {
        try knownRecordEntity(entity)
    }
}

/// The implicit key's column (`EntityDescriptor.rowColumns` names it so).
private let implicitKeyColumn = "id"
