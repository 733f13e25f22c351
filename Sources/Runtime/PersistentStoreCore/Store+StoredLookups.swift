import SQLDialects
import SchemaMetadata

/// A model whose insert met a stored row: where it is in its batch, and the row it would have
/// written (deterministic values sealed), to find the stored row by.
struct ConflictedModel {
    let index: Int
    let columns: [String]
    let values: [StoredValue]
}

extension Store {
    /// How many values one `IN` look-up takes. The last chunk repeats its last value, so each
    /// key has one statement, prepared once.
    static let lookupChunk = 100

    /// The stored models of `conflicted`, in its order, each found by its primary key or one of
    /// its unique values as `storedModel(matching:)` would find it: with one statement per chunk
    /// of each key instead of one per model. The keys are tried in the same order, up to the
    /// first of several columns. A row a later model of the array inserted (`insertedAt`, by its
    /// key) is passed over for the next key. A model is nil, for the caller to look up alone,
    /// where none of those keys finds it, or where a chunk it was asked in returned a row that
    /// matches no value asked (the database compares that key otherwise: another collation or
    /// type), since a later key could find another row than its own would.
    func storedModels<M: PersistentModel>(_ type: M.Type, matching conflicted: [ConflictedModel], insertedAt: [StoredValue: Int] = [:]) throws(StoreError) -> [M?] {
        let targets = Self.conflictTargets(M.entity).prefix { $0.count == 1 }
        var found = [M?](repeating: nil, count: conflicted.count)
        var alone = [Bool](repeating: false, count: conflicted.count)
        let selected = rowColumns(M.entity)
        guard !targets.isEmpty, let keyAt = selected.firstIndex(of: M.entity.primaryKey[0]) else { return found }
        let decode = returnedModelDecoder(M.self)
        for target in targets {
            guard let returnedAt = selected.firstIndex(of: target[0]) else { break }
            // The positions in `conflicted` still unfound, by the value they look for: the first,
            // and from each the next with the same value (`sameValueNext`, -1 after the last),
            // so that no value costs an array of its own.
            var wanted: [StoredValue: Int] = [:]
            wanted.reserveCapacity(conflicted.count)
            var sameValueNext = [Int](repeating: -1, count: conflicted.count)
            var lastOfValue: [Int: Int] = [:]
            var columnsAt: (columns: [String], at: Int?) = ([], nil)
            for (position, model) in conflicted.enumerated() where found[position] == nil && !alone[position] {
                // Models encoded alike share one array of columns: the target's place is found once.
                if model.columns != columnsAt.columns { columnsAt = (model.columns, model.columns.firstIndex(of: target[0])) }
                guard let at = columnsAt.at, model.values[at] != .null else { continue }
                if let first = wanted[model.values[at]] {
                    sameValueNext[lastOfValue[first] ?? first] = position
                    lastOfValue[first] = position
                } else {
                    wanted[model.values[at]] = position
                }
            }
            let values = Array(wanted.keys)
            for start in stride(from: 0, to: values.count, by: Self.lookupChunk) {
                var chunk = Array(values[start..<min(start + Self.lookupChunk, values.count)])
                chunk += repeatElement(chunk[chunk.count - 1], count: Self.lookupChunk - chunk.count)
                let rows: [[StoredValue]]
                do { rows = try database.query(storedModelsLookup(M.self, by: target[0]), chunk[...]) } catch { throw .database(error) }
                var unmatched = false
                for row in rows where returnedAt < row.count && keyAt < row.count {
                    guard var position = wanted[row[returnedAt]] else {
                        unmatched = true
                        continue
                    }
                    let insertedBy = insertedAt[row[keyAt]]
                    var model: M?
                    while position >= 0 {
                        if insertedBy.map({ $0 <= conflicted[position].index }) ?? true {
                            if model == nil { model = try decode(row) }
                            found[position] = model
                        }
                        position = sameValueNext[position]
                    }
                }
                if unmatched {
                    for value in chunk {
                        var position = wanted[value] ?? -1
                        while position >= 0 {
                            if found[position] == nil { alone[position] = true }
                            position = sameValueNext[position]
                        }
                    }
                }
            }
        }
        return found
    }

    /// `SELECT <selection> FROM <table> WHERE <column> IN (...)`, rendered once per column.
    private func storedModelsLookup<M: PersistentModel>(_ type: M.Type, by column: String) -> RenderedSQL {
        let key = [M.entity.table, column]
        if let cached = self.statements.storedModelsLookups[key] { return cached }
        let sql = render("SELECT \(selection(M.self)) FROM \(identifier: M.entity.table) WHERE \(identifier: column) IN (\(SQL.placeholders(Self.lookupChunk)))")
        self.statements.storedModelsLookups[key] = sql
        return sql
    }
}
