import SQLDialects
import SchemaMetadata

/// Relationships and delete rules, worked from the generated metadata.
extension Store {
    // MARK: - Keys

    /// A model's primary-key values, in key-column order.
    func keyValues<M: PersistentModel>(of model: M) throws(StoreError) -> [StoredValue] {
        let entity = M.entity
        let encoded: [StoredValue]?
        do { encoded = try model.encodeStored() } catch { throw .coding("\(error)") }
        if let values = encoded {
            let byColumn = Dictionary(zip(rowColumns(entity), values).map { ($0, $1) }, uniquingKeysWith: { a, _ in a })
            return entity.primaryKey.map { byColumn[$0] ?? .null }
        }
        let row: [String: StoredValue]
        do { row = try RowEncoder.encode(model) } catch { throw .coding("\(error)") }
        return entity.primaryKey.map { column -> StoredValue in
            if entity.hasImplicitKey, column == "id" { return row["id"] ?? .null }
            if let attribute = entity.columns.first(where: { $0.column == column }) { return row[attribute.jsonKey] ?? .null }
            if let relationship = entity.relationships.first(where: { $0.foreignKeyColumns == [column] }), let property = relationship.keyProperty {
                return row[property] ?? .null
            }
            return .null
        }
    }

    /// `"a" = ? AND "b" = ?`: each column equal to its value (NULL placeholders, when a cached
    /// statement binds the values later).
    static func condition(_ columns: [String], _ values: [StoredValue]) -> SQL {
        .list(zip(columns, values).map { column, value in "\(identifier: column) = \(value: value)" }, separator: " AND ")
    }

    func entity(named name: String) throws(StoreError) -> EntityDescriptor {
        guard let entity = schema.entity(named: name) else { throw .unknownEntity(name) }
        return entity
    }

    /// Runs a statement and returns its rows.
    func query(_ sql: SQL) throws(StoreError) -> [[StoredValue]] {
        do { return try database.query(sql) } catch { throw .database(error) }
    }

    /// The keys of the rows a relationship of one row points to.
    func relatedKeys(of entity: EntityDescriptor, key: [StoredValue], via relationship: RelationshipDescriptor) throws(StoreError) -> (EntityDescriptor, [[StoredValue]]) {
        let target = try self.entity(named: relationship.target)
        if let joinTable = relationship.joinTable {
            let keys = try query("SELECT \(SQL.identifiers(relationship.joinTargetColumns)) FROM \(identifier: joinTable) WHERE \(Self.condition(relationship.joinColumns, key))")
            return (target, keys)
        }
        if !relationship.foreignKeyColumns.isEmpty {
            let rows = try query("SELECT \(SQL.identifiers(relationship.foreignKeyColumns)) FROM \(identifier: entity.table) WHERE \(Self.condition(entity.primaryKey, key))")
            return (target, rows.filter { !$0.contains(.null) })
        }
        guard let inverseName = relationship.inverse, let inverse = target.relationship(named: inverseName), !inverse.foreignKeyColumns.isEmpty else {
            return (target, [])
        }
        let keys = try query("SELECT \(SQL.identifiers(target.primaryKey)) FROM \(identifier: target.table) WHERE \(Self.condition(inverse.foreignKeyColumns, key))")
        return (target, keys)
    }

    // MARK: - Following relationships

    /// The models a relationship of `model` points to: the target of a to-one (zero or one),
    /// the members of a to-many, through a foreign key on either side or a join table.
    public func related<S: PersistentModel, T: PersistentModel>(_ path: RelationshipPath<S, T>, of model: S) throws(StoreError) -> [T] {
        guard let relationship = S.entity.relationship(named: path.name) else { throw .unknownEntity("\(S.entity.name).\(path.name)") }
        let (target, keys) = try relatedKeys(of: S.entity, key: try keyValues(of: model), via: relationship)
        var result: [T] = []
        for key in keys {
            result += try rows("SELECT \(selection(T.self)) FROM \(identifier: target.table) WHERE \(Self.condition(target.primaryKey, key))", as: T.self)
        }
        return result
    }

    /// The target of a to-one relationship, or nil.
    public func target<S: PersistentModel, T: PersistentModel>(_ path: RelationshipPath<S, T>, of model: S) throws(StoreError) -> T? {
        try related(path, of: model).first
    }

    /// Adds `target` to a to-many relationship of `source`: a row in the join table, or the
    /// target's foreign key set to the source. The inverse reads the same afterwards.
    public func link<S: PersistentModel, T: PersistentModel>(_ path: RelationshipPath<S, T>, _ source: S, _ target: T) throws(StoreError) {
        try changeLink(path, source, target, linked: true)
    }

    /// Removes `target` from a to-many relationship of `source`.
    public func unlink<S: PersistentModel, T: PersistentModel>(_ path: RelationshipPath<S, T>, _ source: S, _ target: T) throws(StoreError) {
        try changeLink(path, source, target, linked: false)
    }

    private func changeLink<S: PersistentModel, T: PersistentModel>(_ path: RelationshipPath<S, T>, _ source: S, _ target: T, linked: Bool) throws(StoreError) {
        guard let relationship = S.entity.relationship(named: path.name) else { throw .unknownEntity("\(S.entity.name).\(path.name)") }
        let sourceKey = try keyValues(of: source), targetKey = try keyValues(of: target)
        try write { () throws(StoreError) in
            if let joinTable = relationship.joinTable {
                let columns = relationship.joinColumns + relationship.joinTargetColumns
                if linked {
                    _ = try query("INSERT INTO \(identifier: joinTable) (\(SQL.identifiers(columns))) VALUES (\(SQL.parameters(sourceKey + targetKey)))" + database.dialect.onConflict(nil, set: nil))
                } else {
                    _ = try query("DELETE FROM \(identifier: joinTable) WHERE \(Self.condition(columns, sourceKey + targetKey))")
                }
                return
            }
            let targetEntity = T.entity
            guard let inverseName = relationship.inverse, let inverse = targetEntity.relationship(named: inverseName), !inverse.foreignKeyColumns.isEmpty else {
                throw .coding("\(S.entity.name).\(path.name) is not a to-many relationship; set the key property instead")
            }
            let values: [StoredValue] = linked ? sourceKey : sourceKey.map { _ in .null }
            let assignment = SQL.list(zip(inverse.foreignKeyColumns, values).map { column, value in "\(identifier: column) = \(value: value)" })
            _ = try query("UPDATE \(identifier: targetEntity.table) SET \(assignment) WHERE \(Self.condition(targetEntity.primaryKey, targetKey))")
        }
    }

    // MARK: - Delete rules

    /// Deletes a model and applies every delete rule of its relationships: cascade deletes the
    /// related models (and theirs, recursively), deny refuses while related models exist (naming
    /// them), nullify clears their references, noAction leaves them.
    ///
    ///     try await store.delete(airport)   // its flights follow their relationship's delete rule
    public func delete<M: PersistentModel>(_ model: M) throws(StoreError) {
        let key = try keyValues(of: model)
        try write { () throws(StoreError) in
            var visited: Set<String> = []
            try deleteRow(of: M.entity, key: key, visited: &visited)
        }
    }

    func deleteRow(of entity: EntityDescriptor, key: [StoredValue], visited: inout Set<String>) throws(StoreError) {
        // A cycle of cascades stops at rows already being deleted.
        guard visited.insert("\(entity.name)|\(key)").inserted else { return }
        // Rows to delete with this one; `heldHere` when this row holds their key (a to-one).
        var cascades: [(target: EntityDescriptor, key: [StoredValue], heldHere: Bool)] = []
        for relationship in entity.relationships {
            switch relationship.deleteRule {
            case .deny:
                let (target, keys) = try relatedKeys(of: entity, key: key, via: relationship)
                if !keys.isEmpty {
                    throw .deleteDenied(
                        "\(entity.name) \(Self.describe(key)) is still referenced by \(keys.count) \(target.name) through '\(relationship.name)' (delete rule deny); delete or unlink them first")
                }
            case .cascade:
                let (target, keys) = try relatedKeys(of: entity, key: key, via: relationship)
                cascades += keys.map { (target, $0, !relationship.foreignKeyColumns.isEmpty) }
            case .nullify, .noAction:
                break
            }
        }
        // Rows that point here go first, so their own rules apply; then this row, with the
        // database clearing references (ON DELETE SET NULL) and join rows (ON DELETE CASCADE);
        // then the rows this one pointed to.
        for cascade in cascades where !cascade.heldHere {
            try deleteRow(of: cascade.target, key: cascade.key, visited: &visited)
        }
        try removeOnCommit(try externalNames(of: entity, where: Self.condition(entity.primaryKey, key)), of: entity)
        do {
            _ = try database.query("DELETE FROM \(identifier: entity.table) WHERE \(Self.condition(entity.primaryKey, key))" as SQL)
        } catch {
            throw .database(error)
        }
        for cascade in cascades where cascade.heldHere {
            try deleteRow(of: cascade.target, key: cascade.key, visited: &visited)
        }
    }

    static func describe(_ key: [StoredValue]) -> String {
        key.count == 1 ? "\(key[0])" : "(\(key.map(\.description).joined(separator: ", ")))"
    }
}
