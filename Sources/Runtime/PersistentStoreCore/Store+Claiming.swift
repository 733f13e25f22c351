import Foundation
import SQLDialects
import SchemaMetadata

/// One column set by a bulk `update` or a `claim`: a value, or an integer increased in place.
///
///     let claimed = try await store.claim(Job.self, where: #Predicate { $0.state == "queued" }, limit: 10,
///                                         set: [.set(\.state, to: "running"), .set(\.lockedBy, to: worker), .increment(\.attempts)])
public struct Assignment<Model: PersistentModel>: Sendable {
    enum Change: Sendable {
        case value(StoredValue)
        case increment(Int64)
    }

    /// The column, or why the key path names none (checked when the store runs it).
    let column: Result<String, StoreError>
    let change: Change

    /// Sets a stored property to a value (nil clears an optional one).
    ///
    ///     .set(\.state, to: "running")
    public static func set<Value: Encodable & Sendable>(_ keyPath: KeyPath<Model, Value>, to value: Value) -> Assignment {
        let column = Self.column(of: keyPath)
        do {
            let descriptor = (try? column.get()).flatMap { name in Model.entity.columns.first { $0.column == name } }
            return Assignment(column: column, change: .value(try RowEncoder.value(value, for: descriptor)))
        } catch {
            return Assignment(column: .failure(.coding("\(keyPath): \(error)")), change: .value(.null))
        }
    }

    /// Adds `amount` to a stored integer property in the database (`attempts = attempts + 1`),
    /// whatever value each row holds.
    ///
    ///     .increment(\.attempts)
    public static func increment<Value: BinaryInteger & Sendable>(_ keyPath: KeyPath<Model, Value>, by amount: Value = 1) -> Assignment {
        guard let step = Int64(exactly: amount) else {
            return Assignment(column: .failure(.coding("\(keyPath): \(amount) does not fit a 64-bit integer")), change: .increment(0))
        }
        return Assignment(column: column(of: keyPath), change: .increment(step))
    }

    /// The column a key path names, when the database can set it in place: not an encrypted
    /// value (sealed per row) and not external storage (a file or side-table row per value).
    static func column(of keyPath: AnyKeyPath) -> Result<String, StoreError> {
        guard let column = Model.column(for: keyPath) else { return .failure(.unsupportedPredicate("\(keyPath) is not a stored property")) }
        guard let attribute = Model.entity.columns.first(where: { $0.column == column }) else { return .success(column) }
        if attribute.usesExternalStorage { return .failure(.unsupportedPredicate("\(keyPath) is in external storage; save the models instead")) }
        if attribute.isEncrypted {
            return .failure(.unsupportedPredicate("\(Model.entity.name).\(attribute.property) is encrypted, each value under its own row; save the models instead"))
        }
        return .success(column)
    }
}

extension Store {
    /// Claims up to `limit` models matching a predicate, in the given order, and sets their
    /// columns, atomically: each model is claimed by one caller only, however many claim at
    /// once, and none waits for another or fails for it. Returns the claimed models as stored
    /// after the change, in the given order; fewer than `limit` (or none) when fewer are free.
    ///
    ///     let jobs = try await store.claim(Job.self, where: #Predicate { $0.state == "queued" },
    ///                                      sortBy: [SortDescriptor(\.priority, order: .reverse), SortDescriptor(\.createdAt)], limit: 5,
    ///                                      set: [.set(\.state, to: "running"), .set(\.lockedBy, to: worker)])
    ///
    /// On PostgreSQL it is one statement: the rows are picked with `FOR UPDATE SKIP LOCKED`, so
    /// rows another transaction is claiming are passed over instead of waited for, and updated
    /// and returned at once; it runs at READ COMMITTED, so claims never fail with serialization
    /// conflicts. On SQLite, the write lock (`BEGIN IMMEDIATE`) makes the pick and the update
    /// one step. The history records the change as any other update.
    @discardableResult
    public func claim<M: PersistentModel>(
        _ type: M.Type, where predicate: Predicate<M>? = nil, sortBy: [SortDescriptor<M>] = [], limit: Int, set assignments: [Assignment<M>]
    ) throws(StoreError) -> [M] {
        guard limit > 0 else { return [] }
        guard !assignments.isEmpty else { throw .unsupportedPredicate("a claim sets at least one property (set: [.set(\\.state, to: ...)])") }
        let entity = M.entity
        let changes = try setClause(assignments)
        let condition = try whereClause(predicate, for: M.self)
        let order = try orderClause(sortBy, for: M.self)
        let keys = SQL.identifiers(entity.primaryKey)
        let locking: SQL = capabilities.skipsLockedRows ? " FOR UPDATE SKIP LOCKED" : ""
        let picked: SQL = "SELECT \(keys) FROM \(identifier: entity.table)\(condition)\(order) LIMIT \(value: .integer(Int64(limit)))\(locking)"
        let update: SQL = "UPDATE \(identifier: entity.table) SET \(changes) WHERE (\(keys)) IN (\(picked))"
        return try write { () throws(StoreError) -> [M] in
            if capabilities.updatesInsideWith {
                return try rows("WITH claimed AS (\(update + database.dialect.returning(selection(M.self)))) SELECT \(selection(M.self)) FROM claimed\(order)", as: M.self)
            }
            // One writer at a time holds the lock: the keys updated, then their rows in order.
            let claimed = try query(update + database.dialect.returning(keys))
            guard !claimed.isEmpty else { return [] }
            return try rows("SELECT \(selection(M.self)) FROM \(identifier: entity.table) WHERE (\(keys)) IN (\(Self.rowValues(claimed)))\(order)", as: M.self)
        }
    }

    /// Sets several stored properties on every model matching a predicate: one UPDATE. Returns
    /// how many rows changed.
    ///
    ///     let released = try await store.update(Job.self, set: [.set(\.state, to: "queued"), .set(\.lockedBy, to: nil)],
    ///                                           where: #Predicate { $0.lockedBy == "worker-3" })
    @discardableResult
    public func update<M: PersistentModel>(_ type: M.Type, set assignments: [Assignment<M>], where predicate: Predicate<M>? = nil) throws(StoreError) -> Int {
        guard !assignments.isEmpty else { return 0 }
        let changes = try setClause(assignments)
        let condition = try whereClause(predicate, for: M.self)
        return try write { () throws(StoreError) in
            _ = try query("UPDATE \(identifier: M.entity.table) SET \(changes)\(condition)")
            return database.changedRowCount
        }
    }

    /// `a = $1, attempts = attempts + $2`.
    func setClause<M: PersistentModel>(_ assignments: [Assignment<M>]) throws(StoreError) -> SQL {
        var terms: [SQL] = []
        for assignment in assignments {
            let column = try assignment.column.get()
            switch assignment.change {
            case .value(let value): terms.append("\(identifier: column) = \(value: value)")
            case .increment(let step): terms.append("\(identifier: column) = \(identifier: column) + \(value: .integer(step))")
            }
        }
        return .list(terms)
    }

    /// `(1), (2)` or `(1, 'a'), (2, 'b')`: keys as row values for `IN`.
    static func rowValues(_ keys: [[StoredValue]]) -> SQL {
        .list(keys.map { "(\(SQL.parameters($0)))" })
    }
}
