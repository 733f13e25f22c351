import Foundation
import SQLDialects
import SchemaMetadata

/// What an insert does when a stored row already has the model's primary key or one of its
/// unique values.
///
///     try await store.insert(job, onConflict: .ignore)                               // insert if absent
///     try await store.insert(job, onConflict: .update(only: [\.payload, \.priority])) // keep the rest
public struct OnConflict<Model: PersistentModel>: Sendable {
    enum Action: Sendable {
        case updateAll
        case ignore
        case updateOnly(Result<Set<String>, StoreError>)
    }

    let action: Action

    /// Update every stored column with the model's values: what `insert(_:)` does.
    public static var update: OnConflict { OnConflict(action: .updateAll) }

    /// Leave the stored row as it is: the model is inserted only when no stored row has its key
    /// or any of its unique values, and the call returns the stored model either way.
    public static var ignore: OnConflict { OnConflict(action: .ignore) }

    /// Update only these stored properties of the stored row; every other column keeps its
    /// stored value. A new row is inserted whole.
    ///
    ///     .update(only: [\.payload, \.priority])
    public static func update(only properties: [PartialKeyPath<Model>]) -> OnConflict {
        var columns: Set<String> = []
        for property in properties {
            guard let column = Model.column(for: property) else {
                return OnConflict(action: .updateOnly(.failure(.unsupportedPredicate("\(property) is not a stored property of \(Model.entity.name)"))))
            }
            columns.insert(column)
        }
        return OnConflict(action: .updateOnly(.success(columns)))
    }
}

extension Store {
    /// Inserts a model, and says what happens when a stored row already has its primary key or
    /// one of its unique values: `.update` (every column, as `insert(_:)`), `.ignore` (the
    /// stored row stays as it is) or `.update(only:)` (those properties, the rest kept).
    /// Returns the model as stored.
    ///
    ///     let job = try await store.insert(Job(name: "report-42", payload: body), onConflict: .ignore)
    ///     job.state   // "done" if it ran before: a rerun of enqueue does not queue it again
    @discardableResult
    public func insert<M: PersistentModel>(_ model: M, onConflict policy: OnConflict<M>) throws(StoreError) -> M {
        if case .updateAll = policy.action { return try insert(model) }
        return try write { () throws(StoreError) in try insertResolving(model, policy) }
    }

    /// `insert(_:onConflict:)` for many models, in one transaction; returns them as stored.
    ///
    ///     let jobs = try await store.insert(batch, onConflict: .update(only: [\.priority]))
    @discardableResult
    public func insert<M: PersistentModel>(_ models: [M], onConflict policy: OnConflict<M>) throws(StoreError) -> [M] {
        if case .updateAll = policy.action { return try insert(models) }
        return try write { () throws(StoreError) in
            var stored: [M] = []
            stored.reserveCapacity(models.count)
            for model in models { stored.append(try insertResolving(model, policy)) }
            return stored
        }
    }

    /// One model under `.ignore` or `.update(only:)`, inside a write. The stored row is looked
    /// up first; a new row is inserted with `ON CONFLICT DO NOTHING`, so a row another
    /// connection inserted meanwhile (PostgreSQL; SQLite's write lock excludes it) is never
    /// overwritten: it is treated as found.
    private func insertResolving<M: PersistentModel>(_ model: M, _ policy: OnConflict<M>) throws(StoreError) -> M {
        let entity = M.entity
        let row: [String: StoredValue]
        do { row = try RowEncoder.encode(model) } catch { throw .coding("\(error)") }
        let pairs = columns(of: entity, row: row)
        for attempt in 0..<2 {
            if let key = try storedKey(entity, pairs) {
                guard let stored = try storedModel(M.self, key: key) else { continue }
                switch policy.action {
                case .updateAll, .ignore: return stored
                case .updateOnly(let columns): return try upsert(try merging(try columns.get(), of: model, into: stored))
                }
            }
            if attempt == 0, let key = try insertIfAbsent(entity, pairs), let stored = try storedModel(M.self, key: key) { return stored }
        }
        throw .coding("\(entity.name): the row that conflicted with the insert could not be read back")
    }

    /// The primary key of the stored row with the same primary key or unique value, if any.
    /// Deterministically encrypted values are compared as the ciphertexts stored.
    private func storedKey(_ entity: EntityDescriptor, _ pairs: [(column: String, value: StoredValue)]) throws(StoreError) -> [StoredValue]? {
        var values = Dictionary(pairs.map { ($0.column, $0.value) }, uniquingKeysWith: { first, _ in first })
        for (column, cipher) in encryption[entity.table] ?? [:] where cipher.mode == .deterministic {
            guard let plain = values[column], plain != .null else { continue }
            do { values[column] = try cipher.seal(plain, rowKey: []) } catch { throw .encryption(error) }
        }
        let condition = conflictCondition(entity, values: values)
        return try query("SELECT \(SQL.identifiers(entity.primaryKey)) FROM \(identifier: entity.table) WHERE \(condition) LIMIT 1").first
    }

    /// The stored model with this primary key.
    private func storedModel<M: PersistentModel>(_ type: M.Type, key: [StoredValue]) throws(StoreError) -> M? {
        try rows("SELECT \(selection(M.self)) FROM \(identifier: M.entity.table) WHERE \(Self.condition(M.entity.primaryKey, key)) LIMIT 1", as: M.self).first
    }

    /// Inserts the row unless its key or a unique value is taken; the new row's primary key,
    /// or nil when nothing was inserted (what it wrote aside, external values, is undone).
    private func insertIfAbsent(_ entity: EntityDescriptor, _ pairs: [(column: String, value: StoredValue)]) throws(StoreError) -> [StoredValue]? {
        var names = pairs.map(\.column)
        var values = pairs.map(\.value)
        let prepared = try prepareRow(entity, columns: &names, values: &values)
        let returning: SQL = entity.hasImplicitKey && !capabilities.lastInsertedKey ? " RETURNING \(identifier: "id")" : ""
        let returned = try query("INSERT INTO \(identifier: entity.table) (\(SQL.identifiers(names))) VALUES (\(SQL.parameters(values))) ON CONFLICT DO NOTHING\(returning)")
        let inserted = returning == "" ? database.changedRowCount > 0 : !returned.isEmpty
        guard inserted else {
            try removeOnCommit(prepared.writtenExternalValues, of: entity)
            return nil
        }
        if entity.hasImplicitKey {
            if let id = returned.first?.first { return [id] }
            if let at = names.firstIndex(of: "id"), values[at] != .null { return [values[at]] }
            return [.integer(lastInsertedRowID)]
        }
        return entity.primaryKey.map { column in names.firstIndex(of: column).map { values[$0] } ?? .null }
    }

    /// The stored model with `columns` taken from `model`: what `.update(only:)` writes.
    private func merging<M: PersistentModel>(_ columns: Set<String>, of model: M, into stored: M) throws(StoreError) -> M {
        let entity = M.entity
        do {
            let new = try RowEncoder.encode(model)
            var merged = try RowEncoder.encode(stored)
            for attribute in entity.columns where columns.contains(attribute.column) {
                merged[attribute.jsonKey] = new[attribute.jsonKey] ?? .null
            }
            for relationship in entity.relationships {
                guard let property = relationship.keyProperty, relationship.foreignKeyColumns.count == 1, columns.contains(relationship.foreignKeyColumns[0]) else { continue }
                merged[property] = new[property] ?? .null
            }
            return try RowDecoder.decode(M.self, from: merged)
        } catch {
            throw .coding("\(error)")
        }
    }
}
