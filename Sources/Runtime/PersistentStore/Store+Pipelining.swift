import SchemaMetadata

extension Store {
    /// Statements per pipeline: enough that round trips stop mattering, few enough that
    /// neither side's buffers fill while the other is not reading.
    public static let pipelineBatch = 256

    /// Bulk upserts on a server: each row's statement is the one `upsert` would run, but they
    /// go out in batches (`StoreDatabase.pipeline`), each batch one round trip instead of one
    /// per row. For models with a row codec and no encrypted or external column (those need a
    /// key or a side write first); false, having written nothing, for the rest.
    func pipelineUpserts<M: PersistentModel>(_ models: inout [M]) throws(StoreError) -> Bool {
        guard let first = models.first else { return true }
        let probe: [StoredValue]?
        do { probe = try first.encodeStored() } catch { throw .coding("\(error)") }
        guard probe != nil else { return false }
        let write = directWrite(first)
        guard write.isPlain else { return false }
        let entity = write.entity
        var start = models.startIndex
        var rows: [[StoredValue]] = []
        rows.reserveCapacity(Self.pipelineBatch)
        while start < models.endIndex {
            let end = min(start + Self.pipelineBatch, models.endIndex)
            rows.removeAll(keepingCapacity: true)
            var statements: [(text: String, arguments: ArraySlice<StoredValue>)] = []
            statements.reserveCapacity(end - start)
            for index in start..<end {
                let encoded: [StoredValue]
                do {
                    guard let values = try models[index].encodeStored() else { throw StoreError.coding("\(M.self) has no row codec") }
                    encoded = values
                } catch let error as StoreError {
                    throw error
                } catch {
                    throw .coding("\(error)")
                }
                rows.append(encoded)
                // Without an implicit key the database assigns one: bound from the second value.
                if entity.hasImplicitKey, encoded.first == .null {
                    statements.append((write.withoutKey.upsert, encoded.dropFirst()))
                } else {
                    statements.append((write.withKey.upsert, encoded[...]))
                }
            }
            var results: [[[StoredValue]]] = []
            // Rows whose upsert may need another conflict target (a key given, and other unique
            // values) go one by one: a conflict must not abort the batch.
            let stepwise = statements.contains { $0.text == write.withKey.upsert } && !write.withKey.alternatives.isEmpty
            do {
                if stepwise {
                    for statement in statements {
                        let step = statement.text == write.withKey.upsert ? write.withKey : write.withoutKey
                        results.append(try upsertOnEachTarget(step, statement.arguments))
                    }
                } else {
                    results = try database.pipeline(statements)
                }
            } catch {
                throw .database(error)
            }
            for (offset, index) in (start..<end).enumerated() {
                var key: Int64?
                if entity.hasImplicitKey {
                    if case .integer(let id)? = results[offset].first?.first {
                        key = id
                    } else {
                        // DO NOTHING wrote nothing and returned no key: the stored row has it.
                        let bound = statements[offset].arguments.startIndex == 0
                        let columns = bound ? write.columns[...] : write.columns.dropFirst()
                        let boundKey: Int64? = if bound, case .integer(let id)? = rows[offset].first { id } else { nil }
                        do { key = try storedRowID(entity, columns: columns, statements[offset].arguments) ?? boundKey } catch { throw .database(error) }
                    }
                }
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
}
