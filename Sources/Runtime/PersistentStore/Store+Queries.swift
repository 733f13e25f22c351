import Foundation
import SQLiteKit
import SchemaMetadata

/// Queries with Foundation predicates and sort descriptors, run as SQL.
extension Store {
    /// The WHERE clause and its arguments for a predicate (none: every row).
    func whereClause<M: PersistentModel>(_ predicate: Predicate<M>?, for type: M.Type) throws(StoreError) -> (sql: String, arguments: [SQLiteValue]) {
        guard let predicate else { return ("", []) }
        var builder = SQLBuilder(column: { M.column(for: $0) })
        let ciphers = encryption
        builder.cipher = { table, column in ciphers[table ?? M.entity.table]?[column] }
        do {
            let condition = try translate(predicate.expression, &builder)
            try builder.checkEncryptedUse(condition)
            return (" WHERE " + condition, builder.arguments)
        } catch {
            throw .unsupportedPredicate(error.description)
        }
    }

    /// ORDER BY from sort descriptors, ties broken by the primary key so results are stable.
    func orderClause<M: PersistentModel>(_ sortBy: [SortDescriptor<M>], for type: M.Type, alias: String? = nil) throws(StoreError) -> String {
        let prefix = alias.map { $0 + "." } ?? ""
        var terms: [String] = []
        for descriptor in sortBy {
            guard let keyPath = descriptor.keyPath, let column = M.column(for: keyPath) else {
                throw .unsupportedPredicate("cannot sort by \(descriptor.keyPath.map { "\($0)" } ?? "a comparator"); sort by a stored property")
            }
            if let attribute = M.entity.columns.first(where: { $0.column == column && $0.isEncrypted }) {
                throw .unsupportedPredicate("cannot sort by \(M.entity.name).\(attribute.property): it is encrypted, so the database sees only ciphertext")
            }
            terms.append(prefix + Self.quote(column) + (descriptor.order == .reverse ? " DESC" : ""))
        }
        for column in M.entity.primaryKey where !terms.contains(where: { $0.hasPrefix(prefix + Self.quote(column)) }) {
            terms.append(prefix + Self.quote(column))
        }
        return " ORDER BY " + terms.joined(separator: ", ")
    }

    /// Models matching a predicate, sorted, with limit and offset.
    ///
    ///     let early = try await store.fetch(Flight.self, where: #Predicate { $0.routeDistance > 2000 },
    ///                                       sortBy: [SortDescriptor(\.scheduledOff)], limit: 10)
    public func fetch<M: PersistentModel>(
        _ type: M.Type, where predicate: Predicate<M>? = nil, sortBy: [SortDescriptor<M>] = [], limit: Int? = nil, offset: Int = 0
    ) throws(StoreError) -> [M] {
        let (condition, arguments) = try whereClause(predicate, for: M.self)
        var sql = "SELECT \(selection(M.self)) FROM \(Self.quote(M.entity.table))" + condition + (try orderClause(sortBy, for: M.self))
        if let limit { sql += " LIMIT \(max(0, limit))" }
        if offset > 0 { sql += (limit == nil ? " LIMIT -1" : "") + " OFFSET \(offset)" }
        // Fetching a whole table: counting it first (cheap) saves regrowing a large array.
        let expected = predicate == nil && limit == nil ? max(0, try count(M.self) - offset) : 0
        return try rows(sql, arguments, as: M.self, expectedCount: expected)
    }

    /// Hands every model matching a predicate, in the given order, to `body` as its row is
    /// read, keeping none: memory stays flat however many rows match (GRDB's cursors are the
    /// model). Call it inside `read { store in ... }` (a snapshot, without the write lock) or
    /// `transaction`, and return what you computed; an error thrown by `body` stops the
    /// iteration and comes out unchanged.
    ///
    ///     let delayed = try await store.read { store in
    ///         var count = 0
    ///         try store.forEach(Flight.self, where: #Predicate { $0.status == "Delayed" }) { _ in count += 1 }
    ///         return count
    ///     }
    public func forEach<M: PersistentModel>(
        _ type: M.Type, where predicate: Predicate<M>? = nil, sortBy: [SortDescriptor<M>] = [], _ body: (M) throws -> Void
    ) throws {
        let (condition, arguments) = try whereClause(predicate, for: M.self)
        let sql = "SELECT \(selection(M.self)) FROM \(Self.quote(M.entity.table))" + condition + (try orderClause(sortBy, for: M.self))
        try eachRow(sql, arguments, as: M.self, body)
    }

    /// The first model matching a predicate in the given order.
    public func first<M: PersistentModel>(_ type: M.Type, where predicate: Predicate<M>? = nil, sortBy: [SortDescriptor<M>] = []) throws(StoreError) -> M? {
        try fetch(M.self, where: predicate, sortBy: sortBy, limit: 1).first
    }

    /// How many models match a predicate.
    ///
    ///     let longHaul = try await store.count(Flight.self, where: #Predicate { $0.routeDistance > 5000 })
    public func count<M: PersistentModel>(_ type: M.Type, where predicate: Predicate<M>?) throws(StoreError) -> Int {
        let (condition, arguments) = try whereClause(predicate, for: M.self)
        guard case .integer(let count)? = try query("SELECT count(*) FROM \(Self.quote(M.entity.table))" + condition, arguments).first?.first else { return 0 }
        return Int(count)
    }

    /// Deletes every model matching a predicate, applying delete rules to each, in one
    /// transaction. Returns how many were deleted.
    ///
    ///     let removed = try await store.delete(Flight.self, where: #Predicate { $0.status == "Cancelled" })
    @discardableResult
    public func delete<M: PersistentModel>(_ type: M.Type, where predicate: Predicate<M>) throws(StoreError) -> Int {
        let entity = M.entity
        let (condition, arguments) = try whereClause(predicate, for: M.self)
        return try deleteRows(of: entity, selectingKeys: "SELECT \(entity.primaryKey.map(Self.quote).joined(separator: ", ")) FROM \(Self.quote(entity.table))" + condition, arguments)
    }

    /// Deletes the rows whose keys a query selects, applying delete rules, in one transaction.
    private func deleteRows(of entity: EntityDescriptor, selectingKeys sql: String, _ arguments: [SQLiteValue]) throws(StoreError) -> Int {
        try write { () throws(StoreError) in
            let keys = try query(sql, arguments)
            var visited: Set<String> = []
            for key in keys { try deleteRow(of: entity, key: key, visited: &visited) }
            return keys.count
        }
    }

    /// Sets one stored property on every model matching a predicate (Realm's setValue on a
    /// query): one UPDATE. Returns how many rows changed.
    ///
    ///     let changed = try await store.update(Flight.self, set: \.status, to: "Delayed", where: #Predicate { $0.ident == "UAL123" })
    @discardableResult
    public func update<M: PersistentModel, Value: Encodable & Sendable>(
        _ type: M.Type, set keyPath: KeyPath<M, Value>, to value: Value, where predicate: Predicate<M>? = nil
    ) throws(StoreError) -> Int {
        guard let column = M.column(for: keyPath) else { throw .unsupportedPredicate("\(keyPath) is not a stored property") }
        if M.entity.columns.first(where: { $0.column == column })?.usesExternalStorage == true {
            throw .unsupportedPredicate("\(keyPath) is in external storage; save the models instead")
        }
        if let attribute = M.entity.columns.first(where: { $0.column == column && $0.isEncrypted }) {
            throw .unsupportedPredicate("\(M.entity.name).\(attribute.property) is encrypted, each value under its own row; save the models instead")
        }
        let stored: SQLiteValue
        do { stored = try RowEncoder.value(value) } catch { throw .coding("\(error)") }
        let (condition, arguments) = try whereClause(predicate, for: M.self)
        return try write { () throws(StoreError) in
            _ = try query("UPDATE \(Self.quote(M.entity.table)) SET \(Self.quote(column)) = ?" + condition, [stored] + arguments)
            guard case .integer(let changed)? = try query("SELECT changes()", []).first?.first else { return 0 }
            return Int(changed)
        }
    }

    // MARK: - Predicates that follow relationships

    /// A WHERE clause, with its joins, for a predicate over a `Joined` view; the main table is `t0`.
    func joinedClause<M: Joinable>(_ predicate: Predicate<M.Joined>, for type: M.Type) throws(StoreError) -> (joins: String, condition: String, arguments: [SQLiteValue]) {
        let clause = try joinedQuery(predicate, for: M.self)
        return (clause.joins, clause.condition, clause.arguments)
    }

    /// The same, with every entity the query reads.
    func joinedQuery<M: Joinable>(_ predicate: Predicate<M.Joined>, for type: M.Type) throws(StoreError) -> (joins: String, condition: String, arguments: [SQLiteValue], entities: Set<String>) {
        var builder = SQLBuilder(column: { _ in nil })
        let schema = self.schema
        builder.entityNamed = { schema.entity(named: $0) }
        builder.rows[predicate.variable.key] = ("t0", M.entity)
        let ciphers = encryption
        builder.cipher = { table, column in ciphers[table ?? M.entity.table]?[column] }
        do {
            let condition = try translate(predicate.expression, &builder)
            try builder.checkEncryptedUse(condition + builder.levels.flatMap(\.clauses).joined())
            return (builder.levels[0].clauses.joined(separator: " "), condition, builder.arguments, builder.entitiesRead.union([M.entity.name]))
        } catch {
            throw .unsupportedPredicate(error.description)
        }
    }

    /// Models matching a predicate that may follow relationships, in one SQL statement:
    /// `fetch(Flight.self, joining: #Predicate { $0.origin?.icao == "KSFO" && $0.airline?.code == "UAL" })`.
    /// To-one relationships become joins; to-many ones support `contains(where:)`,
    /// `allSatisfy`, `count` and `isEmpty`.
    ///
    ///     let fromSFO = try await store.fetch(Flight.self, joining: #Predicate<Flight.Joined> { $0.origin?.icao == "KSFO" })
    public func fetch<M: Joinable>(
        _ type: M.Type, joining predicate: Predicate<M.Joined>, sortBy: [SortDescriptor<M>] = [], limit: Int? = nil, offset: Int = 0
    ) throws(StoreError) -> [M] {
        let (joins, condition, arguments) = try joinedClause(predicate, for: M.self)
        let order = try orderClause(sortBy, for: M.self, alias: "t0")
        var sql = "SELECT \(selection(M.self, alias: "t0")) FROM \(Self.quote(M.entity.table)) AS t0 \(joins) WHERE \(condition)\(order)"
        if let limit { sql += " LIMIT \(max(0, limit))" }
        if offset > 0 { sql += (limit == nil ? " LIMIT -1" : "") + " OFFSET \(offset)" }
        return try rows(sql, arguments, as: M.self)
    }

    /// How many models match a predicate that may follow relationships.
    public func count<M: Joinable>(_ type: M.Type, joining predicate: Predicate<M.Joined>) throws(StoreError) -> Int {
        let (joins, condition, arguments) = try joinedClause(predicate, for: M.self)
        guard case .integer(let count)? = try query("SELECT count(*) FROM \(Self.quote(M.entity.table)) AS t0 \(joins) WHERE \(condition)", arguments).first?.first else { return 0 }
        return Int(count)
    }

    /// The first model matching a predicate that may follow relationships, in the given order.
    public func first<M: Joinable>(_ type: M.Type, joining predicate: Predicate<M.Joined>, sortBy: [SortDescriptor<M>] = []) throws(StoreError) -> M? {
        try fetch(M.self, joining: predicate, sortBy: sortBy, limit: 1).first
    }

    /// Deletes every model matching a predicate that may follow relationships, applying
    /// delete rules to each, in one transaction. Returns how many were deleted.
    @discardableResult
    public func delete<M: Joinable>(_ type: M.Type, joining predicate: Predicate<M.Joined>) throws(StoreError) -> Int {
        let entity = M.entity
        let (joins, condition, arguments) = try joinedClause(predicate, for: M.self)
        let keys = entity.primaryKey.map { "t0." + Self.quote($0) }.joined(separator: ", ")
        return try deleteRows(of: entity, selectingKeys: "SELECT DISTINCT \(keys) FROM \(Self.quote(entity.table)) AS t0 \(joins) WHERE \(condition)", arguments)
    }
}
