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
            if case .ignore = policy.action, models.count > 1 {
                if let pipelined = try pipelineIgnoring(models) { return pipelined }
                return try insertEachIgnoring(models)
            }
            var stored: [M] = []
            stored.reserveCapacity(models.count)
            for model in models { stored.append(try insertResolving(model, policy)) }
            return stored
        }
    }

    /// `.ignore` for many models on a server that pipelines: each model's insert-if-absent
    /// goes out with a batch of others in one round trip, and only the stored rows of those
    /// that conflicted are read after. Nil, having written nothing, for models without a row
    /// codec or whose rows need a write of their own first (sealed or external values).
    private func pipelineIgnoring<M: PersistentModel>(_ models: [M]) throws(StoreError) -> [M]? {
        guard let pipelining = abilities.server.pipelining, let first = models.first, (try? first.encodeStored()) != nil, directWrite(first).isPlain else { return nil }
        let entity = M.entity
        var stored = models
        for start in stride(from: 0, to: models.count, by: Self.pipelineBatch) {
            let end = min(start + Self.pipelineBatch, models.count)
            var rows: [EncodedRow] = []
            var statements: [(statement: RenderedSQL, arguments: ArraySlice<StoredValue>)] = []
            for model in models[start..<end] {
                var row = try encodedRow(model)
                let (_, hasKey) = try newRow(entity, &row)
                statements.append((upsertSQL(entity, columns: row.columns, hasKey: hasKey).insertIfAbsent, row.values[...]))
                rows.append(row)
            }
            let results: [[[StoredValue]]]
            do { results = try pipelining.pipeline(statements) } catch { throw .database(error) }
            var conflicted: [ConflictedModel] = []
            var insertedAt: [StoredValue: Int] = [:]
            for (offset, index) in (start..<end).enumerated() {
                if let returned = results.indices.contains(offset) ? results[offset] : nil, !returned.isEmpty {
                    stored[index] = try storedModel(models[index], written: rows[offset], returned: returned)
                    if let key = insertedKey(entity, written: rows[offset], returned: returned) { insertedAt[key] = index }
                } else {
                    conflicted.append(ConflictedModel(index: index, columns: rows[offset].columns, values: rows[offset].values))
                }
            }
            try resolveIgnored(models, conflicted, insertedAt: insertedAt, into: &stored)
        }
        return stored
    }

    /// `.ignore` for many models, one statement each: every model is inserted if absent, then
    /// the stored rows of those that met one are read together (`storedModels(matching:at:)`).
    /// Once one model met a stored row, the array is taken to repeat stored rows (an import run
    /// again): the rest is looked up first, a chunk at a time, and only what is absent is
    /// inserted, until a chunk finds none stored.
    private func insertEachIgnoring<M: PersistentModel>(_ models: [M]) throws(StoreError) -> [M] {
        var ignoring = IgnoringInserts(models)
        var index = models.startIndex
        var lookingUp = false
        while index < models.endIndex {
            guard lookingUp else {
                let conflicts = ignoring.conflicted.count
                ignoring.record(try insertIfAbsent(models[index]), at: index)
                lookingUp = ignoring.conflicted.count > conflicts
                index += 1
                continue
            }
            let end = min(index + Self.lookupChunk, models.endIndex)
            // A chunk that found nothing stored ends the look-ups until the next conflict.
            lookingUp = try insertAbsent(from: index, to: end, into: &ignoring) > 0
            index = end
        }
        try resolveIgnored(models, ignoring.conflicted, insertedAt: ignoring.insertedAt, into: &ignoring.stored)
        return ignoring.stored
    }

    /// The state of `insertEachIgnoring`: the models as stored so far, those whose inserts met a
    /// stored row, and the rows the array inserted (by key, the model's index).
    private struct IgnoringInserts<M: PersistentModel> {
        let models: [M]
        var stored: [M]
        var conflicted: [ConflictedModel] = []
        var insertedAt: [StoredValue: Int] = [:]

        init(_ models: [M]) {
            self.models = models
            stored = models
        }

        mutating func record(_ result: InsertIfAbsent<M>, at index: Int) {
            switch result {
            case .inserted(let model, let key):
                stored[index] = model
                if let key { insertedAt[key] = index }
            case .conflicted(let columns, let values): conflicted.append(ConflictedModel(index: index, columns: columns, values: values))
            }
        }
    }

    /// One chunk of `insertEachIgnoring` after a stored row was met: the chunk's stored rows read
    /// together, the others made ready and inserted (a model found costs no row prepared: no
    /// digest, no name, no key). A model found whose value on some key an insert of the chunk
    /// before it also wrote is left to `resolveIgnored`: one at a time it would have met that
    /// new row, and might take it for its own. Returns how many the look-up found.
    private func insertAbsent<M: PersistentModel>(from start: Int, to end: Int, into ignoring: inout IgnoringInserts<M>) throws(StoreError) -> Int {
        var lookups: [ConflictedModel] = []
        lookups.reserveCapacity(end - start)
        let columns = rowColumns(M.entity)
        let plan = rowPlan(M.entity, columns: columns)
        for index in start..<end {
            let row = try lookupRow(ignoring.models[index], directColumns: columns, plan: plan)
            lookups.append(ConflictedModel(index: index, columns: row.columns, values: row.values))
        }
        var found = try storedModels(M.self, matching: lookups, insertedAt: ignoring.insertedAt)
        let keys = Self.conflictTargets(M.entity).filter { $0.count == 1 }.map { $0[0] }
        let keyPosition = keys.firstIndex(of: M.entity.primaryKey[0])
        // The values the chunk's inserts wrote, for each key of `keys`.
        var written = [Set<StoredValue>](repeating: [], count: keys.count)
        // Where each key is in a row's columns: the same columns (one array) for every model
        // encoded alike, so they are found once.
        var positions: (columns: [String], at: [Int?]) = ([], [])
        var foundCount = 0
        for offset in lookups.indices {
            let lookup = lookups[offset]
            if lookup.columns != positions.columns { positions = (lookup.columns, keys.map { lookup.columns.firstIndex(of: $0) }) }
            if let model = found[offset].take() {
                foundCount += 1
                let metAnInsert = keys.indices.contains { key in
                    guard let at = positions.at[key], lookup.values[at] != .null else { return false }
                    return written[key].contains(lookup.values[at])
                }
                if metAnInsert { ignoring.conflicted.append(lookup) } else { ignoring.stored[lookup.index] = model }
                continue
            }
            let model = ignoring.models[lookup.index]
            let result = try insertIfAbsent(model, try newRowDeferringExternalWrites(model))
            ignoring.record(result, at: lookup.index)
            guard case .inserted(_, let key) = result else { continue }
            for (position, at) in positions.at.enumerated() {
                if let at, lookup.values[at] != .null { written[position].insert(lookup.values[at]) }
            }
            // The key the database or the store gave the row, which the looked-up values lack.
            if let key, let keyPosition { written[keyPosition].insert(key) }
        }
        return foundCount
    }

    /// What a look-up of the model's stored row goes by, the row not made ready to be written:
    /// the model's values with its deterministic values sealed, as an insert's row would hold
    /// them on its key and unique columns (the other columns are not looked up by). A model
    /// with a row codec is encoded in `directColumns`, whose `plan` the caller looked up once.
    private func lookupRow<M: PersistentModel>(_ model: M, directColumns: [String], plan: RowPlan) throws(StoreError) -> (columns: [String], values: [StoredValue]) {
        let direct: [StoredValue]?
        do { direct = try model.encodeStored() } catch { throw .coding("\(error)") }
        var (columns, values, plan) = (directColumns, direct ?? [], plan)
        if direct == nil {
            let row = try encodedRow(model)
            (columns, values) = (row.columns, row.values)
            plan = rowPlan(M.entity, columns: columns)
        }
        if !plan.deterministic.isEmpty { try sealDeterministicValues(plan, &values) }
        return (columns, values)
    }

    /// The stored models of the `conflicted` ones, whose inserts did nothing: read together
    /// where they can be, else one at a time. Every model was inserted before these are read,
    /// so a row a later model of the array inserted (`insertedAt`: by its key, the model's
    /// index) is passed over, as it did not exist when the model's insert met a row. A row
    /// deleted meanwhile is inserted again.
    private func resolveIgnored<M: PersistentModel>(
        _ models: [M], _ conflicted: [ConflictedModel], insertedAt: [StoredValue: Int], into stored: inout [M]
    ) throws(StoreError) {
        guard !conflicted.isEmpty else { return }
        let found: [M?] = conflicted.count > 1 ? try storedModels(M.self, matching: conflicted, insertedAt: insertedAt) : [nil]
        for position in conflicted.indices {
            let index = conflicted[position].index
            if let model = found[position] {
                stored[index] = model
            } else if let model = try storedModel(matching: models[index], passingOver: { insertedAt[$0].map { $0 > index } ?? false }) {
                stored[index] = model
            } else {
                stored[index] = try insertResolving(models[index], .ignore)
            }
        }
    }

    /// The key of the row an insert wrote: the given or chosen one, what the statement returned,
    /// or the engine's last inserted row. Nil for a key of several columns.
    private func insertedKey(_ entity: EntityDescriptor, written row: EncodedRow, returned: [[StoredValue]]) -> StoredValue? {
        guard entity.primaryKey.count == 1 else { return nil }
        if let at = row.columns.firstIndex(of: entity.primaryKey[0]), row.values[at] != .null { return row.values[at] }
        guard entity.hasImplicitKey else { return nil }
        if case .integer(let id)? = returned.first?.first { return .integer(id) }
        return .integer(lastInsertedRowID)
    }

    /// One model under `.ignore` or `.update(only:)`, inside a write. The model is inserted
    /// first, in one statement that does nothing where a stored row has its key or a unique
    /// value; only then is the stored row read. `.update(only:)` is one statement too, an
    /// upsert that sets those columns and returns the stored row, unless it changes a sealed or
    /// external value (whose stored value must be read first). A row another connection
    /// inserted meanwhile (PostgreSQL; SQLite's write lock excludes it) is never overwritten:
    /// it is treated as found.
    private func insertResolving<M: PersistentModel>(_ model: M, _ policy: OnConflict<M>) throws(StoreError) -> M {
        let entity = M.entity
        var only: Set<String>?
        if case .updateOnly(let columns) = policy.action {
            only = try columns.get()
            if let only, let stored = try upsertOnly(only, of: model) { return stored }
        }
        for _ in 0..<2 {
            if let only {
                // A stored row first: the update reads its sealed or external values.
                if let stored = try storedModel(matching: model) { return try upsert(try merging(only, of: model, into: stored)) }
                if let inserted = try insertNew(model) { return inserted }
            } else {
                if let inserted = try insertNew(model) { return inserted }
                if let stored = try storedModel(matching: model) { return stored }
            }
            // The row that conflicted was deleted meanwhile (PostgreSQL): once more.
        }
        throw .coding("\(entity.name): the row that conflicted with the insert could not be read back")
    }

    /// The model's row, as a row codec encodes it (`direct`) or by column through Codable.
    fileprivate struct EncodedRow {
        var columns: [String]
        var values: [StoredValue]
        /// The row codec's values, plain (the model's own).
        var direct: [StoredValue]?
        /// The Codable encoding by key, without a row codec.
        var byKey: [String: StoredValue] = [:]
    }

    private func encodedRow<M: PersistentModel>(_ model: M) throws(StoreError) -> EncodedRow {
        do {
            if let direct = try model.encodeStored() { return EncodedRow(columns: rowColumns(M.entity), values: direct, direct: direct) }
            let byKey = try RowEncoder.encode(model)
            let pairs = columns(of: M.entity, row: byKey)
            return EncodedRow(columns: pairs.map(\.column), values: pairs.map(\.value), byKey: byKey)
        } catch {
            throw .coding("\(error)")
        }
    }

    /// The row made ready to write as a new row (sealed, its external values stored, an implicit
    /// key left to the database when none is given or chosen); whether it holds its key.
    private func newRow(_ entity: EntityDescriptor, _ row: inout EncodedRow, deferringExternalWrites: Bool = false) throws(StoreError) -> (prepared: PreparedRow, hasKey: Bool) {
        let prepared = try prepareRow(entity, columns: &row.columns, values: &row.values, replacing: false, deferringExternalWrites: deferringExternalWrites)
        if entity.hasImplicitKey, row.columns.first == "id", row.values[0] == .null {
            row.columns.removeFirst()
            row.values.removeFirst()
        }
        return (prepared, !entity.hasImplicitKey || row.columns.first == "id")
    }

    /// The model as stored by a statement that wrote `row`: its implicit key from what the
    /// statement returned, the given or chosen one, or the engine's last inserted row.
    private func storedModel<M: PersistentModel>(_ model: M, written row: EncodedRow, returned: [[StoredValue]]) throws(StoreError) -> M {
        var key: Int64?
        if M.entity.hasImplicitKey, case .integer(let id)? = insertedKey(M.entity, written: row, returned: returned) { key = id }
        if var direct = row.direct {
            if let form = directWrite(model).storedForm {
                var written = model
                form.apply(to: &written, key: key)
                return written
            }
            if let key { direct[0] = .integer(key) }
            return try decodeDirect(direct, as: M.self)
        }
        var byKey = row.byKey
        if let key { byKey["id"] = .integer(key) }
        do { return try RowDecoder.decode(M.self, from: byKey) } catch { throw .coding("\(error)") }
    }

    /// Inserts the model as a new row, in one statement (INSERT ... ON CONFLICT DO NOTHING),
    /// unless a stored row has its key or a unique value: then nothing is written and the
    /// answer is nil. Its external values are written only once the row went in (in the same
    /// transaction), so a row already stored costs no file.
    func insertNew<M: PersistentModel>(_ model: M) throws(StoreError) -> M? {
        if case .inserted(let inserted, _) = try insertIfAbsent(model) { return inserted }
        return nil
    }

    /// What `insertIfAbsent` did.
    enum InsertIfAbsent<M> {
        /// The model as stored, and its key (nil for a key of several columns).
        case inserted(M, key: StoredValue?)
        /// A stored row has its key or a unique value: the row's columns and values as written
        /// (deterministic values sealed), to look the stored row up by.
        case conflicted(columns: [String], values: [StoredValue])
    }

    /// `insertNew`, saying on a conflict what the row held.
    func insertIfAbsent<M: PersistentModel>(_ model: M) throws(StoreError) -> InsertIfAbsent<M> {
        try insertIfAbsent(model, try newRowDeferringExternalWrites(model))
    }

    /// A model's row made ready for an insert if absent, nothing written yet: its external
    /// values are written only once the insert went in.
    struct DeferredInsert {
        fileprivate var row: EncodedRow
        let prepared: PreparedRow
        let hasKey: Bool

        /// What a look-up of the stored row goes by: the row as written, without a key the
        /// store chose for it.
        var lookup: (columns: [String], values: [StoredValue]) {
            var values = row.values
            if prepared.choseKey, row.columns.first == "id" { values[0] = .null }
            return (row.columns, values)
        }
    }

    /// The model's row, made ready for `insertIfAbsent(_:_:)`.
    func newRowDeferringExternalWrites<M: PersistentModel>(_ model: M) throws(StoreError) -> DeferredInsert {
        var row = try encodedRow(model)
        let (prepared, hasKey) = try newRow(M.entity, &row, deferringExternalWrites: true)
        return DeferredInsert(row: row, prepared: prepared, hasKey: hasKey)
    }

    /// `insertIfAbsent` of a row made ready before (by `newRowDeferringExternalWrites`).
    func insertIfAbsent<M: PersistentModel>(_ model: M, _ insert: DeferredInsert) throws(StoreError) -> InsertIfAbsent<M> {
        let entity = M.entity
        let (row, prepared, hasKey) = (insert.row, insert.prepared, insert.hasKey)
        let statements = upsertSQL(entity, columns: row.columns, hasKey: hasKey)
        let returned: [[StoredValue]]
        do {
            returned = try database.query(statements.insertIfAbsent, row.values[...])
        } catch {
            guard error.kind == .uniquenessConflict, !capabilities.failedStatementAbortsTransaction else { throw .database(error) }
            let lookup = insert.lookup
            return .conflicted(columns: lookup.columns, values: lookup.values)
        }
        if capabilities.failedStatementAbortsTransaction ? returned.isEmpty : database.changedRowCount == 0 {
            let lookup = insert.lookup
            return .conflicted(columns: lookup.columns, values: lookup.values)
        }
        // The key and the model first: writing an external value may be a statement of its own.
        let key = insertedKey(entity, written: row, returned: returned)
        let inserted = try storedModel(model, written: row, returned: returned)
        for pending in prepared.pendingExternalValues { try write(pending) }
        return .inserted(inserted, key: key)
    }

    /// `.update(only:)` as one statement: the model inserted, or on a conflict those columns
    /// set, the stored row returned. Nil, having written nothing, where the columns include a
    /// sealed (randomized) or external value, or the model has no row codec.
    private func upsertOnly<M: PersistentModel>(_ only: Set<String>, of model: M) throws(StoreError) -> M? {
        let entity = M.entity
        let ciphers = encryption[entity.table] ?? [:]
        guard !only.contains(where: { entity.isExternal($0) || ciphers[$0].map { $0.mode == .randomized } == true }) else { return nil }
        var row = try encodedRow(model)
        guard row.direct != nil else { return nil }
        let changes = row.columns.contains { only.contains($0) && !entity.primaryKey.contains($0) }
        let keyGiven = !entity.hasImplicitKey || (row.columns.first == "id" && row.values[0] != .null)
        guard changes, keyGiven || entity.hasUniqueIndex else {
            // Nothing of a stored row would change, or no stored row can conflict: an insert if absent.
            if let inserted = try insertNew(model) { return inserted }
            return try storedModel(matching: model)
        }
        // External values named, not written: most such writes update a stored row, which
        // keeps its own (writing each file, then removing it, was a third of their time).
        let (prepared, hasKey) = try newRow(entity, &row, deferringExternalWrites: true)
        guard let statements = updateOnlySQL(entity, columns: row.columns, hasKey: hasKey, only: only) else { throw .coding("\(entity.name): no upsert for .update(only:)") }
        let returned: [[StoredValue]]
        do throws(DatabaseFailure) { returned = try upsertOnEachTarget(statements, row.values[...]) } catch { throw .database(error) }
        guard let stored = returned.first else { throw .coding("\(entity.name): the upsert returned no row") }
        // The row went in as new where it holds a name just made (each is unique): its files are
        // written now, before the row is read back, inside the transaction that wrote it.
        let order = rowColumns(entity)
        for pending in prepared.pendingExternalValues where order.firstIndex(of: pending.column.column).map({ stored[$0] == .text(pending.name) }) == true {
            try write(pending)
        }
        return try self.model(fromReturned: stored, as: M.self)
    }

    /// The upsert of a row shape that sets only `only` on a conflict and returns the stored row
    /// (`selection`), built once per shape and column set; nil when no column would be set.
    private func updateOnlySQL(_ entity: EntityDescriptor, columns: [String], hasKey: Bool, only: Set<String>) -> UpsertStatements? {
        let shape = UpdateOnlyShape(row: UpsertShape(table: entity.table, hasKey: hasKey, columnCount: columns.count), only: only)
        if let cached = self.statements.updateOnly[shape] { return cached }
        let setting = columns.filter { only.contains($0) && !entity.primaryKey.contains($0) }
        var targets: [[String]] = hasKey ? [entity.primaryKey] : []
        targets += entity.indexes.filter { $0.kind == .unique }.map(\.columns)
        guard !setting.isEmpty, !targets.isEmpty else { return nil }
        let insert: SQL = "INSERT INTO \(identifier: entity.table) (\(SQL.identifiers(columns))) VALUES (\(SQL.placeholders(columns.count)))"
        let dialect = database.dialect
        let returning = dialect.returning(SQL.list(rowColumns(entity).map { SQL.identifier($0) }))
        func clause(_ target: [String]) -> SQL {
            let set = setting.filter { !target.contains($0) }
            // A target made of the set columns themselves: they already hold the values.
            let assignments = (set.isEmpty ? [target[0]] : set).map { "\(identifier: $0) = \(dialect.proposed($0))" as SQL }
            return dialect.onConflict(target, set: assignments)
        }
        let statements: UpsertStatements
        if capabilities.failedStatementAbortsTransaction {
            // One conflict target per statement, the others tried in turn (`upsertOnEachTarget`).
            var built = UpsertStatements(insert: render(insert), upsert: render(insert + clause(targets[0]) + returning), canConflict: true, insertIfAbsent: render(insert))
            built.alternatives = targets.dropFirst().map { render(insert + clause($0) + returning) }
            statements = built
        } else {
            var upsert = insert
            for target in targets { upsert += clause(target) }
            statements = UpsertStatements(insert: render(insert), upsert: render(upsert + returning), canConflict: true, insertIfAbsent: render(insert))
        }
        self.statements.updateOnly[shape] = statements
        return statements
    }

    /// The stored row with the model's primary key or one of its unique values, as a model,
    /// looked up by each in turn (each lookup's statement rendered once). Deterministically
    /// encrypted values are compared as the ciphertexts stored.
    /// `passingOver` a stored row's key: a row to look past, for the next key (one a later model
    /// of the same array inserted).
    private func storedModel<M: PersistentModel>(matching model: M, passingOver: (StoredValue) -> Bool = { _ in false }) throws(StoreError) -> M? {
        let (columns, values) = try lookupValues(model)
        let keyAt = M.entity.primaryKey.count == 1 ? rowColumns(M.entity).firstIndex(of: M.entity.primaryKey[0]) : nil
        for target in Self.conflictTargets(M.entity) {
            let positions = target.compactMap { columns.firstIndex(of: $0) }
            guard positions.count == target.count else { continue }
            let arguments = positions.map { values[$0] }
            guard !arguments.contains(.null) else { continue }
            let found: [[StoredValue]]
            do { found = try database.query(storedModelLookup(M.self, by: target), arguments[...]) } catch { throw .database(error) }
            guard let stored = found.first else { continue }
            if let keyAt, keyAt < stored.count, passingOver(stored[keyAt]) { continue }
            return try self.model(fromReturned: stored, as: M.self)
        }
        return nil
    }

    /// The keys a stored row can conflict on, in the order a conflicting one is looked for: the
    /// primary key, then each unique index.
    static func conflictTargets(_ entity: EntityDescriptor) -> [[String]] {
        [entity.primaryKey] + entity.indexes.filter { $0.kind == .unique }.map(\.columns)
    }

    /// The model's columns and values as a look-up compares them with stored ones: values of
    /// deterministically encrypted columns sealed, as they are stored.
    func lookupValues<M: PersistentModel>(_ model: M) throws(StoreError) -> (columns: [String], values: [StoredValue]) {
        let columns = rowColumns(M.entity)
        return try lookupRow(model, directColumns: columns, plan: rowPlan(M.entity, columns: columns))
    }

    /// `SELECT <selection> FROM <table> WHERE <target> = ... LIMIT 1`, rendered once per target.
    private func storedModelLookup<M: PersistentModel>(_ type: M.Type, by target: [String]) -> RenderedSQL {
        let key = [M.entity.table] + target
        if let cached = self.statements.storedModelLookups[key] { return cached }
        let sql = render(
            "SELECT \(selection(M.self)) FROM \(identifier: M.entity.table) WHERE \(Self.condition(target, Array(repeating: .null, count: target.count))) LIMIT 1")
        self.statements.storedModelLookups[key] = sql
        return sql
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
