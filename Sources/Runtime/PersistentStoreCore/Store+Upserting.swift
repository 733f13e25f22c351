import FieldEncryption
import Foundation
import SQLDialects
import SchemaMetadata

// How a model becomes a row and is written: the upsert statements by shape, the direct path
// for rows of one model type, and the stored row read back.
extension Store {
    /// Maps a model's Codable keys to columns: attributes through their `jsonKey`, key
    /// properties (`originID`) through their relationship, the implicit `id`.
    func columns(of entity: EntityDescriptor, row: [String: StoredValue]) -> [(column: String, value: StoredValue)] {
        var result: [(String, StoredValue)] = []
        if entity.hasImplicitKey, let id = row["id"], id != .null { result.append(("id", id)) }
        for column in entity.columns { result.append((column.column, row[column.jsonKey] ?? .null)) }
        for relationship in entity.relationships {
            guard let property = relationship.keyProperty, relationship.foreignKeyColumns.count == 1 else { continue }
            result.append((relationship.foreignKeyColumns[0], row[property] ?? .null))
        }
        return result
    }

    func upsert<M: PersistentModel>(_ model: M) throws(StoreError) -> M {
        let encoded: [StoredValue]?
        do { encoded = try model.encodeStored() } catch { throw .coding("\(error)") }
        if let encoded { return try upsertDirect(encoded, of: model) }
        let entity = M.entity
        let row: [String: StoredValue]
        do { row = try RowEncoder.encode(model) } catch { throw .coding("\(error)") }
        let pairs = columns(of: entity, row: row)
        var names = pairs.map(\.column)
        var values = pairs.map(\.value)
        try prepareRow(entity, columns: &names, values: &values)
        let hasKey = !entity.hasImplicitKey || names.contains("id")
        let statements = upsertSQL(entity, columns: names, hasKey: hasKey)
        do {
            let boundKey = names.firstIndex(of: "id").flatMap { if case .integer(let id) = values[$0] { id } else { nil } }
            guard let id = try runUpsert(statements, columns: names[...], values[...], entity, boundKey: boundKey) else { return model }
            var stored = row
            stored["id"] = .integer(id)
            return try RowDecoder.decode(M.self, from: stored)
        } catch let error as DatabaseFailure {
            throw .database(error)
        } catch {
            throw .coding("\(error)")
        }
    }

    /// What writing rows of one model type needs, worked out on its first write: bulk writes
    /// then find it by the type, without hashing the table name. A class, so that each row
    /// holds one reference instead of copying the descriptor's arrays.
    final class DirectWrite<M: PersistentModel> {
        let entity: EntityDescriptor
        let columns: [String]
        /// No encrypted or external-storage column: the row is written as the model encodes it.
        let isPlain: Bool
        /// With the row's own key, and without it (the database assigns the implicit key).
        let withKey: UpsertStatements
        let withoutKey: UpsertStatements
        /// The written model handed back without decoding its row, when the type allows.
        let storedForm: StoredForm<M>?
        /// A sealed row's upsert when the store chose its implicit key (no conflict on the key).
        let withChosenKey: UpsertStatements

        init(
            entity: EntityDescriptor, columns: [String], isPlain: Bool, withKey: UpsertStatements, withoutKey: UpsertStatements,
            withChosenKey: UpsertStatements, storedForm: StoredForm<M>?
        ) {
            self.entity = entity
            self.columns = columns
            self.isPlain = isPlain
            self.withKey = withKey
            self.withoutKey = withoutKey
            self.withChosenKey = withChosenKey
            self.storedForm = storedForm
        }
    }

    func directWrite<M: PersistentModel>(_ sample: M) -> DirectWrite<M> {
        // Keyed by the type, so the entry is a DirectWrite<M>.
        if let known = self.statements.directWrites[ObjectIdentifier(M.self)] { return unsafeDowncast(known, to: DirectWrite<M>.self) }
        let entity = M.entity
        let columns = rowColumns(entity)
        let withKey = upsertSQL(entity, columns: columns, hasKey: true)
        // Only an implicit key (the first column) is ever left for the database to assign.
        let write = DirectWrite<M>(
            entity: entity, columns: columns, isPlain: rowPlan(entity, columns: columns).isEmpty, withKey: withKey,
            withoutKey: entity.hasImplicitKey ? upsertSQL(entity, columns: columns.dropFirst(), hasKey: false) : withKey,
            withChosenKey: upsertSQL(entity, columns: columns, hasKey: false),
            storedForm: StoredForm(sample: sample))
        self.statements.directWrites[ObjectIdentifier(M.self)] = write
        return write
    }

    /// The upsert of a model with a generated row codec: values by position, no Codable.
    /// `encoded` is `model`'s row, consumed: the row bound is the row returned, its key set in
    /// place.
    private func upsertDirect<M: PersistentModel>(_ encoded: consuming [StoredValue], of model: M) throws(StoreError) -> M {
        let write = directWrite(model)
        var stored = encoded
        do {
            let id: Int64?
            if write.isPlain {
                id = try runDirect(write.withKey, orWithoutKey: write.withoutKey, columns: write.columns, values: stored, write.entity)
                if let form = write.storedForm {
                    var written = model
                    form.apply(to: &written, key: id)
                    return written
                }
            } else {
                let entity = write.entity
                // A row that is likely new is inserted as one (sealed under its own key, its
                // external values stored), with no stored row looked up first: only a conflict
                // sends it down the upsert below.
                if presumesNewRows(in: entity.table) {
                    if let inserted = try insertNew(model) { return inserted }
                    self.statements.lastConflict = (entity.table, 0)
                }
                // The row sealed and keyed by `prepareRow`; the model keeps its plain values.
                var columns = write.columns
                var values = stored
                let choseKey = try prepareRow(entity, columns: &columns, values: &values).choseKey
                // An implicit key (the first column) chosen for an encrypted row is the model's key too.
                if entity.hasImplicitKey, stored.first == .null, columns.count == write.columns.count, values[0] != .null {
                    stored[0] = values[0]
                }
                let statements =
                    columns.count != write.columns.count
                    ? upsertSQL(entity, columns: columns, hasKey: !choseKey)
                    : choseKey ? write.withChosenKey : write.withKey
                id = try runDirect(statements, orWithoutKey: write.withoutKey, columns: columns, values: values, entity)
                if let form = write.storedForm {
                    var written = model
                    let key: Int64? = if let id { id } else if case .integer(let chosen) = stored[0] { chosen } else { nil }
                    form.apply(to: &written, key: key)
                    return written
                }
            }
            if let id { stored[0] = .integer(id) }
            return try decodeDirect(stored, as: M.self)
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseFailure {
            throw .database(error)
        } catch {
            throw .coding("\(error)")
        }
    }

    /// Runs a row's upsert by position. Without an implicit key the database assigns one: the
    /// row is bound from its second value on, through `withoutKey`.
    private func runDirect(
        _ withKey: UpsertStatements, orWithoutKey withoutKey: @autoclosure () -> UpsertStatements,
        columns: [String], values: [StoredValue], _ entity: EntityDescriptor
    ) throws(DatabaseFailure) -> Int64? {
        if entity.hasImplicitKey, values.first == .null {
            return try runUpsert(withoutKey(), columns: columns.dropFirst(), values.dropFirst(), entity, boundKey: nil)
        }
        let boundKey: Int64? = if case .integer(let id)? = values.first { id } else { nil }
        return try runUpsert(withKey, columns: columns[...], values[...], entity, boundKey: boundKey)
    }

    func decodeDirect<M: PersistentModel>(_ values: [StoredValue], as type: M.Type) throws(StoreError) -> M {
        do {
            guard let model = try M.decodeStored(values) else { throw StoreError.coding("\(M.self) has no row codec") }
            return model
        } catch let error as StoreError {
            throw error
        } catch {
            throw .coding("\(error)")
        }
    }

    /// Runs an upsert built by `upsertSQL` and answers the row's implicit key (nil for entities
    /// whose key is their own).
    ///
    /// A plain INSERT goes first: SQLite's ON CONFLICT clause costs a third more even when
    /// nothing conflicts. Only when the key or a unique value is taken does the upsert run, and
    /// while conflicts are recent (bulk updates) it runs directly. Neither uses RETURNING, which
    /// costs SQLite a temporary table per statement (half of a small insert): the key is the
    /// bound one, or the row id the insert gave; only when a unique value turned the write into
    /// an update of a stored row is that row looked up by the value.
    private func runUpsert(_ statements: UpsertStatements, columns: ArraySlice<String>, _ values: ArraySlice<StoredValue>, _ entity: EntityDescriptor, boundKey: Int64?) throws(DatabaseFailure)
        -> Int64?
    {
        if capabilities.failedStatementAbortsTransaction {
            // A failed insert would abort the transaction: the upsert runs at once, and returns
            // the key of the row it wrote (none when it changed nothing). Where the history
            // keeps only an insert's key, the store records its own insert: the trigger leaves
            // it alone, and no image is written and read back.
            if let own = abilities.history.ownInserts, let recorder, !recorder.recordsInsertValues, entity.hasImplicitKey, own.ownInsertTables.contains(entity.table) {
                let (rows, updated) = try own.insertingOwnRow(into: entity.table) { () throws(DatabaseFailure) in try upsertOnEachTarget(statements, values) }
                guard case .integer(let id)? = rows.first?.first else { return try storedRowID(entity, columns: columns, values) ?? boundKey }
                if !updated.contains(id) { recorder.recordOwnInsert(table: entity.table, rowID: id) }
                return id
            }
            let rows = try upsertOnEachTarget(statements, values)
            guard entity.hasImplicitKey else { return nil }
            if case .integer(let id)? = rows.first?.first { return id }
            return try storedRowID(entity, columns: columns, values) ?? boundKey
        }
        if statements.canConflict, presumesNewRows(in: entity.table) {
            do {
                _ = try database.query(statements.insert, values)
                return entity.hasImplicitKey ? boundKey ?? lastInsertedRowID : nil
            } catch  where error.kind == .uniquenessConflict {
                self.statements.lastConflict = (entity.table, 0)
            }
        }
        guard entity.hasImplicitKey else {
            _ = try database.query(statements.upsert, values)
            return nil
        }
        guard statements.canConflict else {
            _ = try database.query(statements.upsert, values)
            return boundKey ?? lastInsertedRowID
        }
        abilities.bulk.rowIDs?.lastInsertedRowID = 0
        _ = try database.query(statements.upsert, values)
        let inserted = lastInsertedRowID
        if inserted != 0 { return inserted }
        return try storedRowID(entity, columns: columns, values) ?? boundKey
    }

    /// The upsert, and where its one conflict target was not the one taken (the key is new,
    /// but another unique value belongs to a stored row), the upsert on each other target in
    /// turn: what SQLite's several ON CONFLICT clauses do in one statement. Each try but the
    /// last runs in a savepoint, so a conflict does not abort the transaction; the savepoint
    /// travels in the statement's round trip.
    func upsertOnEachTarget(_ statements: UpsertStatements, _ values: ArraySlice<StoredValue>) throws(DatabaseFailure) -> [[StoredValue]] {
        guard !statements.alternatives.isEmpty else { return try database.query(statements.upsert, values) }
        let tries = [statements.upsert] + statements.alternatives
        for sql in tries.dropLast() {
            do {
                if let pipelining = abilities.server.pipelining {
                    return try pipelining.pipeline([(render("SAVEPOINT store_upsert"), []), (sql, values), (render("RELEASE store_upsert"), [])])[1]
                }
                try database.execute("SAVEPOINT store_upsert")
                let rows = try database.query(sql, values)
                try database.execute("RELEASE store_upsert")
                return rows
            } catch  where error.kind == .uniquenessConflict {
                try database.execute("ROLLBACK TO store_upsert; RELEASE store_upsert")
            }
        }
        return try database.query(tries[tries.count - 1], values)
    }

    /// How many writes after a conflict skip the plain insert.
    static let upsertRunLength = 256

    /// Whether a write to `table` tries the plain insert first: no insert into it met a taken
    /// key or unique value in the last `upsertRunLength` writes. Counts the write when not.
    func presumesNewRows(in table: String) -> Bool {
        guard let conflict = self.statements.lastConflict, conflict.table == table, conflict.rowsSince < Self.upsertRunLength else { return true }
        self.statements.lastConflict?.rowsSince += 1
        return false
    }

    /// The implicit key of the stored row whose key or unique values `values` hold.
    func storedRowID(_ entity: EntityDescriptor, columns: ArraySlice<String>, _ values: ArraySlice<StoredValue>) throws(DatabaseFailure) -> Int64? {
        // The lookups of a row shape are worked out once: bulk upserts ask per updated row.
        let shape = UpsertShape(table: entity.table, hasKey: columns.startIndex == 0, columnCount: columns.count)
        let lookups: [KeyLookup]
        if let cached = self.statements.keyLookups[shape] {
            lookups = cached
        } else {
            let targets = [entity.primaryKey] + entity.indexes.filter { $0.kind == .unique }.map(\.columns)
            lookups = targets.compactMap { target in
                let positions = target.compactMap { column in columns.firstIndex(of: column).map { $0 - columns.startIndex } }
                guard positions.count == target.count else { return nil }
                return KeyLookup(
                    positions: positions,
                    sql: render("SELECT \(identifier: "id") FROM \(identifier: entity.table) WHERE \(Self.condition(target, Array(repeating: .null, count: target.count))) LIMIT 1"))
            }
            self.statements.keyLookups[shape] = lookups
        }
        for lookup in lookups {
            // A one-column key is bound from the row itself.
            let arguments =
                lookup.positions.count == 1
                ? values[(values.startIndex + lookup.positions[0])...(values.startIndex + lookup.positions[0])]
                : ArraySlice(lookup.positions.map { values[values.startIndex + $0] })
            guard !arguments.contains(.null) else { continue }
            if let id = try database.firstInteger(lookup.sql, values: arguments) { return id }
        }
        return nil
    }

    /// Finding a stored row by one of its unique keys: where the key's values are in a row,
    /// and the query.
    struct KeyLookup {
        let positions: [Int]
        let sql: RenderedSQL
    }

    /// The statements that write one row of a shape: a plain INSERT, and INSERT ... ON
    /// CONFLICT ... DO UPDATE with one conflict clause per unique key (the primary key when
    /// given, then every unique index). Without a key or unique index the two are the same.
    struct UpsertStatements {
        let insert: RenderedSQL
        let upsert: RenderedSQL
        /// False without a key or unique index to conflict on: then the two are the same.
        let canConflict: Bool
        /// The insert of a row that may be new: the plain INSERT where a conflict fails that
        /// statement alone (SQLite), else INSERT ... ON CONFLICT DO NOTHING RETURNING the key,
        /// which returns no row when the key or a unique value is taken.
        let insertIfAbsent: RenderedSQL
        /// Where a statement takes one conflict target (PostgreSQL): the upserts on the other
        /// unique keys, tried in turn when `upsert` meets a taken value of another one.
        var alternatives: [RenderedSQL] = []
    }

    /// The statements for an entity and a set of columns, built once.
    func upsertSQL(_ entity: EntityDescriptor, columns: some Collection<String>, hasKey: Bool) -> UpsertStatements {
        let cacheKey = UpsertShape(table: entity.table, hasKey: hasKey, columnCount: columns.count)
        if let cached = self.statements.upserts[cacheKey] { return cached }
        let insert: SQL = "INSERT INTO \(identifier: entity.table) (\(SQL.identifiers(columns))) VALUES (\(SQL.placeholders(columns.count)))"
        var upsert = insert
        var targets: [[String]] = hasKey ? [entity.primaryKey] : []
        targets += entity.indexes.filter { $0.kind == .unique }.map(\.columns)
        let dialect = database.dialect
        func conflictClause(_ target: [String]) -> SQL { Self.conflictClause(target, entity: entity, columns: columns, dialect: dialect) }
        // Without a connection that reports the key its insert gave, the statement returns it.
        let returning: SQL = entity.hasImplicitKey && !capabilities.lastInsertedKey ? dialect.returning(.identifier("id")) : ""
        var alternatives: [RenderedSQL] = []
        if capabilities.failedStatementAbortsTransaction {
            // PostgreSQL takes one conflict target per statement: the key when the row has one,
            // then each other unique key in a statement of its own.
            alternatives = targets.dropFirst().map { render(insert + conflictClause($0) + returning) }
            targets = Array(targets.prefix(1))
        }
        for target in targets { upsert += conflictClause(target) }
        let insertIfAbsent: SQL =
            capabilities.failedStatementAbortsTransaction
            ? insert + dialect.onConflict(nil, set: nil) + dialect.returning(SQL.identifiers(entity.hasImplicitKey ? ["id"] : entity.primaryKey))
            : insert + dialect.onConflict(nil, set: nil) + returning
        var statements = UpsertStatements(
            insert: render(insert + returning), upsert: render(upsert + returning), canConflict: !targets.isEmpty, insertIfAbsent: render(insertIfAbsent))
        statements.alternatives = alternatives
        self.statements.upserts[cacheKey] = statements
        return statements
    }

    /// ` ON CONFLICT (target) DO UPDATE SET` every written column but the key and the target's
    /// (they already hold the written values: setting them again would only make SQLite rewrite
    /// the indexes that hold them), or `DO NOTHING` when none is left.
    static func conflictClause(_ target: [String], entity: EntityDescriptor, columns: some Collection<String>, dialect: any SQLDialect) -> SQL {
        let changing = columns.filter { !entity.primaryKey.contains($0) && !target.contains($0) }
        return dialect.onConflict(target, set: changing.isEmpty ? nil : changing.map { "\(identifier: $0) = \(dialect.proposed($0))" })
    }

    /// A WHERE clause matching the stored row an upsert of `row` would replace.
    func conflictCondition(_ entity: EntityDescriptor, row: [String: StoredValue]) -> SQL {
        conflictCondition(entity, values: Dictionary(columns(of: entity, row: row).map { ($0.column, $0.value) }, uniquingKeysWith: { a, _ in a }))
    }

    /// The same from values by column name.
    func conflictCondition(_ entity: EntityDescriptor, values: [String: StoredValue]) -> SQL {
        var targets: [[String]] = [entity.primaryKey]
        targets += entity.indexes.filter { $0.kind == .unique }.map(\.columns)
        var clauses: [SQL] = []
        for target in targets {
            let targetValues = target.map { values[$0] ?? .null }
            guard !targetValues.contains(.null) else { continue }
            clauses.append("(\(Self.condition(target, targetValues)))")
        }
        return clauses.isEmpty ? "1 = 0" : .list(clauses, separator: " OR ")
    }

    /// A statement's text in the database's dialect, for statements run many times with values
    /// bound in order (built with `SQL.placeholders`).
    func render(_ sql: SQL) -> RenderedSQL { sql.statement(for: database.dialect).statement }
}
