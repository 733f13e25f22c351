import SQLDialects
import SchemaMetadata

extension Store {
    /// Statements per pipeline: enough that round trips stop mattering, few enough that
    /// neither side's buffers fill while the other is not reading.
    package static let pipelineBatch = 256
    /// Rows per staging table load: what one COPY and one INSERT ... SELECT take.
    static let stagingBatch = 10_000
    /// Below this many rows, creating the staging table costs more than the pipeline.
    package static let stagingThreshold = 1_000

    /// Bulk upserts on a server: each row's statement is the one `upsert` would run, but they
    /// go out in batches (`StatementPipelining.pipeline`), each batch one round trip instead of one
    /// per row. For models with a row codec and no encrypted or external column (those need a
    /// key or a side write first); false, having written nothing, for the rest.
    func pipelineUpserts<M: PersistentModel>(_ models: inout [M]) throws(StoreError) -> Bool {
        guard let first = models.first else { return true }
        let probe: [StoredValue]?
        do { probe = try first.encodeStored() } catch { throw .coding("\(error)") }
        guard probe != nil, let pipelining = abilities.server.pipelining else { return false }
        let write = directWrite(first)
        guard write.isPlain else { return false }
        // A server that loads rows in bulk takes large chunks through a staging table; the
        // rest are pipelined a batch at a time.
        let chunk = abilities.bulk.staging != nil ? Self.stagingBatch : Self.pipelineBatch
        var start = models.startIndex
        var rows: [[StoredValue]] = []
        rows.reserveCapacity(chunk)
        while start < models.endIndex {
            let end = min(start + chunk, models.endIndex)
            let statements = try upsertStatements(models[start..<end], write, rows: &rows)
            let results: [[[StoredValue]]]
            do { results = try runUpserts(statements, write, pipelining) } catch { throw .database(error) }
            for (offset, index) in (start..<end).enumerated() {
                let key = try upsertedKey(write, results[offset], statement: statements[offset], row: rows[offset])
                if let form = write.storedForm {
                    form.apply(to: &models[index], key: key)
                } else {
                    var stored = rows[offset]
                    if let key { stored[0] = .integer(key) }
                    models[index] = try decodeDirect(stored, as: M.self)
                }
            }
            start = end
        }
        return true
    }

    /// Each model's upsert with its values, and (in `rows`) its encoded row. Without an implicit
    /// key the database assigns one: its values are bound from the second.
    private func upsertStatements<M: PersistentModel>(_ models: ArraySlice<M>, _ write: DirectWrite<M>, rows: inout [[StoredValue]]) throws(StoreError) -> [(
        statement: RenderedSQL, arguments: ArraySlice<StoredValue>
    )] {
        rows.removeAll(keepingCapacity: true)
        var statements: [(statement: RenderedSQL, arguments: ArraySlice<StoredValue>)] = []
        statements.reserveCapacity(models.count)
        for model in models {
            let encoded: [StoredValue]
            do {
                guard let values = try model.encodeStored() else { throw StoreError.coding("\(M.self) has no row codec") }
                encoded = values
            } catch let error as StoreError {
                throw error
            } catch {
                throw .coding("\(error)")
            }
            rows.append(encoded)
            if write.entity.hasImplicitKey, encoded.first == .null {
                statements.append((write.withoutKey.upsert, encoded.dropFirst()))
            } else {
                statements.append((write.withKey.upsert, encoded[...]))
            }
        }
        return statements
    }

    /// Runs a chunk's upserts: staged where the server stages rows, else pipelined a batch at a
    /// time; rows whose upsert may need another conflict target (a key given, and other unique
    /// values) go one by one, since a conflict must not abort the batch.
    private func runUpserts<M: PersistentModel>(
        _ statements: [(statement: RenderedSQL, arguments: ArraySlice<StoredValue>)], _ write: DirectWrite<M>, _ pipelining: any StatementPipelining
    ) throws(DatabaseFailure) -> [[[StoredValue]]] {
        if statements.contains(where: { $0.statement == write.withKey.upsert }) && !write.withKey.alternatives.isEmpty {
            var results: [[[StoredValue]]] = []
            for statement in statements {
                let step = statement.statement == write.withKey.upsert ? write.withKey : write.withoutKey
                results.append(try upsertOnEachTarget(step, statement.arguments))
            }
            return results
        }
        if let staged = try stagedUpsert(write, statements) { return staged }
        var results: [[[StoredValue]]] = []
        for batch in stride(from: 0, to: statements.count, by: Self.pipelineBatch) {
            results += try pipelining.pipeline(Array(statements[batch..<min(batch + Self.pipelineBatch, statements.count)]))
        }
        return results
    }

    /// The implicit key an upsert gave its row, or nil for an entity without one. DO NOTHING
    /// writes nothing and returns no key: then the stored row has it.
    private func upsertedKey<M: PersistentModel>(
        _ write: DirectWrite<M>, _ result: [[StoredValue]], statement: (statement: RenderedSQL, arguments: ArraySlice<StoredValue>), row: [StoredValue]
    ) throws(StoreError) -> Int64? {
        guard write.entity.hasImplicitKey else { return nil }
        if case .integer(let id)? = result.first?.first { return id }
        let bound = statement.arguments.startIndex == 0
        let columns = bound ? write.columns[...] : write.columns.dropFirst()
        let boundKey: Int64? = if bound, case .integer(let id)? = row.first { id } else { nil }
        do { return try storedRowID(write.entity, columns: columns, statement.arguments) ?? boundKey } catch { throw .database(error) }
    }

    /// The rows of one shape, loaded into a staging table (`BulkRowStaging.stageRows`, COPY on
    /// PostgreSQL) and upserted from it by one INSERT ... SELECT ... ON CONFLICT: each row's
    /// result as its own statement would have returned it (its key, where the database gave
    /// one). Nil, having written nothing, where the rows do not fit that one statement: too few,
    /// keys given for some and not others, or conflict values that are missing or repeated
    /// (ON CONFLICT cannot update a row twice), so no result could be told apart.
    func stagedUpsert<M: PersistentModel>(_ write: DirectWrite<M>, _ statements: [(statement: RenderedSQL, arguments: ArraySlice<StoredValue>)]) throws(DatabaseFailure)
        -> [[[StoredValue]]]?
    {
        guard let staging = abilities.bulk.staging, statements.count >= Self.stagingThreshold, let first = statements.first else { return nil }
        guard statements.allSatisfy({ $0.statement == first.statement }) else { return nil }
        let entity = write.entity
        let keyed = first.statement == write.withKey.upsert
        let columns = keyed ? Array(write.columns) : Array(write.columns.dropFirst())
        let target = keyed ? entity.primaryKey : entity.indexes.first { $0.kind == .unique }?.columns ?? []
        let positions = target.compactMap { columns.firstIndex(of: $0) }
        guard !target.isEmpty, positions.count == target.count else { return nil }
        // A conflict value per row (one column's value alone, the common case, without an array).
        func conflictValue(_ arguments: ArraySlice<StoredValue>) -> StoredValue {
            if positions.count == 1 { return arguments[arguments.startIndex + positions[0]] }
            return .text(positions.map { "\(arguments[arguments.startIndex + $0])" }.joined(separator: "\u{0}"))
        }
        var seen = Set<StoredValue>()
        seen.reserveCapacity(statements.count)
        for statement in statements {
            guard !positions.contains(where: { statement.arguments[statement.arguments.startIndex + $0] == .null }),
                seen.insert(conflictValue(statement.arguments)).inserted
            else { return nil }
        }
        let stage = try staging.stageRows(statements.map(\.arguments), columns: columns, like: entity.table)
        let conflict = Self.conflictClause(target, entity: entity, columns: columns, dialect: database.dialect)
        let returnsKeys = entity.hasImplicitKey && !keyed
        let returning: SQL = returnsKeys ? database.dialect.returning("\(identifier: "id"), \(SQL.identifiers(target))") : ""
        let insert: SQL =
            "INSERT INTO \(identifier: entity.table) (\(SQL.identifiers(columns))) SELECT \(SQL.identifiers(columns)) FROM \(identifier: stage)" + conflict + returning
        let returned = try database.query(insert)
        guard returnsKeys else { return Array(repeating: [], count: statements.count) }
        // Each returned key by the conflict values it was written with (read back as the row's
        // own, in the target's order).
        var keys: [StoredValue: StoredValue] = [:]
        keys.reserveCapacity(returned.count)
        for row in returned where row.count == target.count + 1 {
            let value = target.count == 1 ? row[1] : .text(row.dropFirst().map { "\($0)" }.joined(separator: "\u{0}"))
            keys[value] = row[0]
        }
        return statements.map { statement in keys[conflictValue(statement.arguments)].map { [[$0]] } ?? [] }
    }
}
