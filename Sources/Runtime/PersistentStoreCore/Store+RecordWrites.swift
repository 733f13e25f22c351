import Foundation
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
    /// The entity whose relationship it is: the deleted record's, or one a cascade reaches.
    public let source: String
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
        var changes = changes
        for name in names {
            guard entity.recordColumns.contains(name) else { throw .notSupported("\(entity.name) has no column '\(name)'") }
            guard !entity.primaryKey.contains(name) else { throw .notSupported("\(entity.name)'s key (\(name)) cannot change; insert a new record instead") }
            changes[name] = try Self.checkedValue(changes[name]!, column: name, of: entity)
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
        var given = given
        for name in names {
            guard entity.recordColumns.contains(name) else { throw .notSupported("\(entity.name) has no column '\(name)'") }
            given[name] = try Self.checkedValue(given[name]!, column: name, of: entity)
        }
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
                ? "INSERT INTO \(identifier: entity.table) DEFAULT VALUES" + database.dialect.returning(SQL.identifiers(entity.primaryKey))
                : "INSERT INTO \(identifier: entity.table) (\(SQL.identifiers(columns))) VALUES (\(SQL.parameters(values)))" + database.dialect.returning(SQL.identifiers(entity.primaryKey))
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
        // Walked as `deleteRow` walks it: cascades followed to the records they delete, each
        // record once; a nullify or no-action only where the other side holds the link (a
        // to-one this record holds is dropped with the record and changes nothing there).
        var reached: [(source: String, relationship: RelationshipDescriptor, target: String, keys: Set<[StoredValue]>)] = []
        var visited: Set<String> = []
        func walk(_ entity: EntityDescriptor, _ key: [StoredValue]) throws(StoreError) {
            guard visited.insert("\(entity.name)|\(key)").inserted else { return }
            for relationship in entity.relationships {
                if relationship.deleteRule != .deny, relationship.deleteRule != .cascade, !relationship.foreignKeyColumns.isEmpty { continue }
                let (target, keys) = try relatedKeys(of: entity, key: key, via: relationship)
                if let index = reached.firstIndex(where: { $0.source == entity.name && $0.relationship.name == relationship.name }) {
                    reached[index].keys.formUnion(keys)
                } else {
                    reached.append((entity.name, relationship, target.name, Set(keys)))
                }
                if relationship.deleteRule == .cascade {
                    for key in keys { try walk(target, key) }
                }
            }
        }
        try walk(entity, key)
        return reached.map { RecordDeleteEffect(source: $0.source, relationship: $0.relationship.name, target: $0.target, count: $0.keys.count, rule: $0.relationship.deleteRule) }
    }

    // MARK: - Helpers

    /// A value for a column as the schema types it, in the form the store writes it (a date as
    /// its UTC text with milliseconds, a day as `YYYY-MM-DD`, a UUID in lowercase), or
    /// `StoreError.invalidValue` naming the column and what it takes: a tool without compiled
    /// models cannot write what the app then fails to read.
    static func checkedValue(_ value: StoredValue, column name: String, of entity: EntityDescriptor) throws(StoreError) -> StoredValue {
        guard let column = entity.columns.first(where: { $0.column == name }) else {
            // A foreign key column: the key's type is the database's to check.
            return value
        }
        func refuse(_ expected: String) -> StoreError {
            .invalidValue("\(entity.name).\(column.property) takes \(expected), not \(value)")
        }
        if value == .null {
            guard column.isOptional else { throw .invalidValue("\(entity.name).\(column.property) is required (\(column.swiftType)); it cannot be nil") }
            return value
        }
        if column.isEncrypted {
            // Stored sealed (bytes); written as the value it seals.
            switch (column.swiftType, value) {
            case ("String", .text), ("Data", .blob): return value
            case ("String", _): throw refuse("text")
            case ("Data", _): throw refuse("bytes")
            default: return value
            }
        }
        switch column.storage {
        case .integer:
            guard case .integer(let number) = value else { throw refuse("a whole number") }
            if let range = integerRange(column.swiftType), !range.contains(number) { throw refuse("a whole number from \(range.lowerBound) to \(range.upperBound) (\(column.swiftType))") }
            return value
        case .real:
            switch value {
            case .real(let number) where number.isFinite: return value
            case .integer(let number): return .real(Double(number))
            default: throw refuse("a finite number")
            }
        case .boolean:
            guard case .integer(let number) = value, number == 0 || number == 1 else { throw refuse("true or false") }
            return value
        case .date:
            guard case .text(let text) = value, let date = StoredDate.date(text) else { throw refuse("a date (ISO 8601: 2024-03-01T09:30:00Z)") }
            return .text(StoredDate.text(date))
        case .day:
            guard case .text(let text) = value, let date = StoredDate.date(text) else { throw refuse("a day (2024-03-01)") }
            // `2024-02-30` must not become March the first.
            if text.utf8.count == 10, StoredDate.day(date) != text { throw refuse("a day of the calendar (2024-03-01)") }
            return .text(StoredDate.day(date))
        case .uuid:
            guard case .text(let text) = value, let uuid = UUID(uuidString: text) else { throw refuse("a UUID") }
            return .text(uuid.uuidString.lowercased())
        case .url:
            guard case .text(let text) = value, !text.isEmpty, URL(string: text) != nil else { throw refuse("a URL") }
            return value
        case .decimal:
            let text: String
            switch value {
            case .text(let given): text = given.trimmingCharacters(in: .whitespaces)
            case .integer(let number): text = String(number)
            case .real(let number) where number.isFinite: text = String(number)
            default: throw refuse("a decimal number")
            }
            guard text.wholeMatch(of: /[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/) != nil, Decimal(string: text) != nil else { throw refuse("a decimal number (12.50)") }
            return .text(text)
        case .json:
            guard case .text(let text) = value, (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil else {
                throw refuse("JSON (\(column.swiftType))")
            }
            return value
        case .text:
            guard case .text = value else { throw refuse("text") }
            return value
        case .blob:
            guard case .blob = value else { throw refuse("bytes") }
            return value
        }
    }

    /// The values a Swift integer type holds, where narrower than the column's 64 bits.
    private static func integerRange(_ swiftType: String) -> ClosedRange<Int64>? {
        switch swiftType {
        case "Int8": Int64(Int8.min)...Int64(Int8.max)
        case "Int16": Int64(Int16.min)...Int64(Int16.max)
        case "Int32": Int64(Int32.min)...Int64(Int32.max)
        case "UInt8": 0...Int64(UInt8.max)
        case "UInt16": 0...Int64(UInt16.max)
        case "UInt32": 0...Int64(UInt32.max)
        default: nil
        }
    }

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
