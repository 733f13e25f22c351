import Foundation
import SQLDialects
import SchemaMetadata

/// Queries with Foundation predicates and sort descriptors, run as SQL.
extension Store {
    /// The WHERE clause and its arguments for a predicate (none: every row).
    func whereClause<M: PersistentModel>(_ predicate: Predicate<M>?, for type: M.Type) throws(StoreError) -> SQL {
        guard let predicate else { return "" }
        var builder = SQLBuilder(dialect: database.dialect, column: { M.column(for: $0) })
        let ciphers = encryption
        builder.cipher = { table, column in ciphers[table ?? M.entity.table]?[column] }
        let schema = self.schema
        builder.isDayColumn = { table, column in Self.holdsDays(table.flatMap(schema.entity(forTable:)) ?? M.entity, column) }
        do {
            return " WHERE \(try translateExpression(predicate.expression, &builder))"
        } catch {
            throw .unsupportedPredicate(error.description)
        }
    }

    /// Whether an entity's column is a day column (`dateOnly`).
    static func holdsDays(_ entity: EntityDescriptor, _ column: String) -> Bool {
        entity.columns.contains { $0.column == column && $0.storage == .day }
    }

    /// ORDER BY from sort descriptors, ties broken by the primary key so results are stable.
    func orderClause<M: PersistentModel>(_ sortBy: [SortDescriptor<M>], for type: M.Type, alias: String? = nil) throws(StoreError) -> SQL {
        func qualified(_ column: String) -> SQL { alias.map { "\(identifier: $0).\(identifier: column)" } ?? .identifier(column) }
        var terms: [SQL] = []
        var sorted: Set<String> = []
        for descriptor in sortBy {
            guard let keyPath = descriptor.keyPath, let column = M.column(for: keyPath) else {
                throw .unsupportedPredicate("cannot sort by \(descriptor.keyPath.map { "\($0)" } ?? "a comparator"); sort by a stored property")
            }
            if let attribute = M.entity.columns.first(where: { $0.column == column && $0.isEncrypted }) {
                throw .unsupportedPredicate("cannot sort by \(M.entity.name).\(attribute.property): it is encrypted, so the database sees only ciphertext")
            }
            var term = qualified(column) + (descriptor.order == .reverse ? " DESC" : "")
            // nil sorts first going up, as Swift orders optionals and SQLite orders NULL.
            let nullable = M.entity.columns.first { $0.column == column }?.isOptional ?? !M.entity.primaryKey.contains(column)
            if capabilities.nullsSortLast, nullable { term += descriptor.order == .reverse ? " NULLS LAST" : " NULLS FIRST" }
            terms.append(term)
            sorted.insert(column)
        }
        for column in M.entity.primaryKey where !sorted.contains(column) {
            terms.append(qualified(column))
        }
        return " ORDER BY \(SQL.list(terms))"
    }

    /// Models matching a predicate, sorted, with limit and offset.
    ///
    ///     let early = try await store.fetch(Flight.self, where: #Predicate { $0.routeDistance > 2000 },
    ///                                       sortBy: [SortDescriptor(\.scheduledOff)], limit: 10)
    public func fetch<M: PersistentModel>(
        _ type: M.Type, where predicate: Predicate<M>? = nil, sortBy: [SortDescriptor<M>] = [], limit: Int? = nil, offset: Int = 0
    ) throws(StoreError) -> [M] {
        let condition = try whereClause(predicate, for: M.self)
        let sql: SQL = "SELECT \(selection(M.self)) FROM \(identifier: M.entity.table)\(condition)\(try orderClause(sortBy, for: M.self))\(page(limit: limit, offset: offset))"
        // Fetching a whole table from an engine that steps through rows (SQLite): counting it
        // first (cheap) saves regrowing a large array. A server's rows arrive whole, and a count
        // would cost a round trip and a second scan.
        let expected = predicate == nil && limit == nil && abilities.bulk.steppedRows ? max(0, try count(M.self) - offset) : 0
        return try rows(sql, as: M.self, expectedCount: expected)
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
        let condition = try whereClause(predicate, for: M.self)
        try eachRow("SELECT \(selection(M.self)) FROM \(identifier: M.entity.table)\(condition)\(try orderClause(sortBy, for: M.self))", as: M.self, body)
    }

    /// The first model matching a predicate in the given order.
    public func first<M: PersistentModel>(_ type: M.Type, where predicate: Predicate<M>? = nil, sortBy: [SortDescriptor<M>] = []) throws(StoreError) -> M? {
        try fetch(M.self, where: predicate, sortBy: sortBy, limit: 1).first
    }

    /// How many models match a predicate.
    ///
    ///     let longHaul = try await store.count(Flight.self, where: #Predicate { $0.routeDistance > 5000 })
    public func count<M: PersistentModel>(_ type: M.Type, where predicate: Predicate<M>?) throws(StoreError) -> Int {
        let condition = try whereClause(predicate, for: M.self)
        guard case .integer(let count)? = try query("SELECT count(*) FROM \(identifier: M.entity.table)\(condition)").first?.first else { return 0 }
        return Int(count)
    }

    /// Deletes every model matching a predicate, applying delete rules to each, in one
    /// transaction. Returns how many were deleted.
    ///
    ///     let removed = try await store.delete(Flight.self, where: #Predicate { $0.status == "Cancelled" })
    @discardableResult
    public func delete<M: PersistentModel>(_ type: M.Type, where predicate: Predicate<M>) throws(StoreError) -> Int {
        let entity = M.entity
        let condition = try whereClause(predicate, for: M.self)
        return try deleteRows(of: entity, selectingKeys: "SELECT \(SQL.identifiers(entity.primaryKey)) FROM \(identifier: entity.table)\(condition)")
    }

    /// Deletes the rows whose keys a query selects, applying delete rules, in one transaction.
    private func deleteRows(of entity: EntityDescriptor, selectingKeys sql: SQL) throws(StoreError) -> Int {
        try write { () throws(StoreError) in
            let keys = try query(sql)
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
        try update(M.self, set: [.set(keyPath, to: value)], where: predicate)
    }

    /// LIMIT and OFFSET; an offset without a limit reads to the end (SQLite wants `LIMIT -1`
    /// before it).
    func page(limit: Int?, offset: Int) -> SQL {
        var clause: SQL = ""
        if let limit { clause += " LIMIT \(value: .integer(Int64(max(0, limit))))" }
        if offset > 0 {
            if limit == nil, capabilities.offsetNeedsLimit { clause += " LIMIT -1" }
            clause += " OFFSET \(value: .integer(Int64(offset)))"
        }
        return clause
    }

    // MARK: - Predicates that follow relationships

    /// A WHERE clause, with its joins, for a predicate over a `Joined` view; the main table is `t0`.
    func joinedClause<M: Joinable>(_ predicate: Predicate<M.Joined>, for type: M.Type) throws(StoreError) -> (joins: SQL, condition: SQL) {
        let clause = try joinedQuery(predicate, for: M.self)
        return (clause.joins, clause.condition)
    }

    /// The same, with every entity the query reads.
    func joinedQuery<M: Joinable>(_ predicate: Predicate<M.Joined>, for type: M.Type) throws(StoreError) -> (joins: SQL, condition: SQL, entities: Set<String>) {
        var builder = SQLBuilder(dialect: database.dialect, column: { _ in nil })
        let schema = self.schema
        builder.entityNamed = { schema.entity(named: $0) }
        builder.rows[predicate.variable.key] = ("t0", M.entity)
        let ciphers = encryption
        builder.cipher = { table, column in ciphers[table ?? M.entity.table]?[column] }
        builder.isDayColumn = { table, column in Self.holdsDays(table.flatMap(schema.entity(forTable:)) ?? M.entity, column) }
        do throws(PredicateTranslationError) {
            let condition = try translateExpression(predicate.expression, &builder)
            return (SQL.list(builder.levels[0].clauses, separator: " "), condition, builder.entitiesRead.union([M.entity.name]))
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
        let (joins, condition) = try joinedClause(predicate, for: M.self)
        let order = try orderClause(sortBy, for: M.self, alias: "t0")
        return try rows(
            "SELECT \(selection(M.self, alias: "t0")) FROM \(identifier: M.entity.table) AS t0 \(joins) WHERE \(condition)\(order)\(page(limit: limit, offset: offset))", as: M.self)
    }

    /// How many models match a predicate that may follow relationships.
    public func count<M: Joinable>(_ type: M.Type, joining predicate: Predicate<M.Joined>) throws(StoreError) -> Int {
        let (joins, condition) = try joinedClause(predicate, for: M.self)
        guard case .integer(let count)? = try query("SELECT count(*) FROM \(identifier: M.entity.table) AS t0 \(joins) WHERE \(condition)").first?.first else { return 0 }
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
        let (joins, condition) = try joinedClause(predicate, for: M.self)
        let keys = SQL.list(entity.primaryKey.map { "t0.\(identifier: $0)" })
        return try deleteRows(of: entity, selectingKeys: "SELECT DISTINCT \(keys) FROM \(identifier: entity.table) AS t0 \(joins) WHERE \(condition)")
    }
}
