import SQLDialects
import SchemaMetadata

/// The one row pipeline: every read of models (`model(key:)`, `fetch`, `forEach`, joined
/// predicates, search, relationships) runs its query through `streamModels`, which opens
/// encrypted values where the engine holds them, loads external values and decodes the model.
/// Queries select `selection(M.self)`: the entity's `rowColumns`, in order, then any extra
/// columns (a search's rank).
extension Store {
    /// Each model of a query, with its extra columns, handed to `body` as its row is read.
    ///
    /// `ownStatement`: the statement serves this read alone, for bodies that run queries.
    func streamModels<M: PersistentModel>(
        _ query: SQL, as type: M.Type, extraColumns: Int = 0, ownStatement: Bool = false, _ body: (M, [StoredValue]) throws -> Void
    ) throws {
        let opening = openPlan(M.entity, columns: rowColumns(M.entity))
        let decode = modelDecoder(M.self)
        let (text, arguments) = query.statement(for: database.dialect)
        let handle = { (row: inout [StoredValue]) throws in
            var extras: [StoredValue] = []
            if extraColumns > 0 {
                extras = Array(row.suffix(extraColumns))
                row.removeLast(extraColumns)
            }
            try body(try decode(&row), extras)
        }
        try forEachRow(text, arguments, ownStatement: ownStatement, opening: opening, handle)
    }

    /// `database.forEachRow`, with the columns of `opening` opened first (`forEachOpenedRow`)
    /// when there are any.
    func forEachRow(
        _ text: RenderedSQL, _ arguments: [StoredValue], ownStatement: Bool, opening: OpenPlan?, _ body: (inout [StoredValue]) throws -> Void
    ) throws {
        guard let opening else { return try database.forEachRow(text, arguments, ownStatement: ownStatement, body) }
        try forEachOpenedRow(
            text, arguments, ownStatement: ownStatement, opening: opening.positions,
            with: { position, content, row throws(StoreError) in try openColumn(opening, position, content, row: row) }, body)
    }

    /// What loads a row's external values (stored as file names) in place, for rows of
    /// `columns`; nil when the entity keeps none there.
    /// With `unreadable`, a value that cannot be loaded (its file missing or not what the row
    /// says) is nil and reported there with its position, instead of failing the row: a tool
    /// shows such a row, and the row can still be fixed or deleted.
    func externalLoader(_ entity: EntityDescriptor, columns: [String], unreadable: ((Int, String) -> Void)? = nil) -> ((inout [StoredValue]) throws -> Void)? {
        let external = Self.externalColumns(of: entity).compactMap { column in columns.firstIndex(of: column.column).map { (column, $0) } }
        guard !external.isEmpty else { return nil }
        let keyPositions = entity.primaryKey.map { key in columns.firstIndex(of: key) }
        return { row in
            for (column, position) in external {
                guard case .text(let name) = row[position] else { continue }
                do {
                    row[position] = try self.loadExternalValue(name, column, of: entity, rowKey: keyPositions.map { $0.map { row[$0] } ?? .null })
                } catch {
                    guard let unreadable else { throw error }
                    row[position] = .null
                    unreadable(position, "\(error)")
                }
            }
        }
    }

    /// What turns a row of `selection(M.self)`, its encrypted values opened, into a model: its
    /// external values loaded, then decoded.
    private func modelDecoder<M: PersistentModel>(_ type: M.Type) -> (inout [StoredValue]) throws -> M {
        let entity = M.entity
        let order = rowColumns(entity)
        let load = externalLoader(entity, columns: order)
        let keys = M.self is any RowCodable.Type ? nil : RowKeys(entity: entity, columns: order)
        return { row in
            try load?(&row)
            return if let keys { try RowDecoder.decode(M.self, row: row, keys: keys) } else { try self.decodeDirect(row, as: M.self) }
        }
    }

    /// A model from a row of `selection(M.self)` that a statement returned (`RETURNING`).
    func model<M: PersistentModel>(fromReturned row: [StoredValue], as type: M.Type) throws(StoreError) -> M {
        try returnedModelDecoder(M.self)(row)
    }

    /// `model(fromReturned:as:)` for many rows: what it looks up, looked up once.
    func returnedModelDecoder<M: PersistentModel>(_ type: M.Type) -> ([StoredValue]) throws(StoreError) -> M {
        let opening = openPlan(M.entity, columns: rowColumns(M.entity))
        let decode = modelDecoder(M.self)
        return { (row: [StoredValue]) throws(StoreError) -> M in
            var row = row
            do {
                if let opening {
                    let sealed = row
                    for position in opening.positions where position < row.count {
                        row[position] = try self.openColumn(opening, position, .value(sealed[position]), row: sealed)
                    }
                }
                return try decode(&row)
            } catch {
                throw Self.readFailure(error)
            }
        }
    }

    /// `forEachRow`, with each value of `columns` handed to `open`: where the engine holds it when
    /// it can (`BorrowedColumns`), else from the row read first.
    func forEachOpenedRow(
        _ text: RenderedSQL, _ arguments: [StoredValue], ownStatement: Bool, opening columns: [Int],
        with open: (_ column: Int, _ content: BorrowedValue, _ row: [StoredValue]) throws -> StoredValue,
        _ body: (inout [StoredValue]) throws -> Void
    ) throws {
        if let borrowed = abilities.bulk.borrowedColumns {
            return try borrowed.forEachRow(text, arguments, ownStatement: ownStatement, opening: columns, with: open, body)
        }
        try database.forEachRow(text, arguments, ownStatement: ownStatement) { row in
            for column in columns where column < row.count {
                let value = row[column]
                // The row `open` sees holds no copy of the value it opens.
                row[column] = .null
                row[column] = try open(column, .value(value), row)
            }
            try body(&row)
        }
    }

    /// The models a query selects. `expectedCount` reserves room when the caller knows roughly
    /// how many come; `extras` receives each model's extra columns.
    func rows<M: PersistentModel>(_ query: SQL, as type: M.Type, expectedCount: Int = 0, extraColumns: Int = 0, extras: inout [[StoredValue]]) throws(StoreError) -> [M] {
        do {
            // Models with a generated row codec decode in a loop compiled for the model
            // (`decodeStoredRows`), a third faster than through the generic one; external
            // values are loaded into the row first.
            if M.self is any RowCodable.Type, extraColumns == 0 {
                let entity = M.entity
                let order = rowColumns(entity)
                let opening = openPlan(entity, columns: order)
                let load = externalLoader(entity, columns: order)
                let (text, arguments) = query.statement(for: database.dialect)
                let decoded = try M.decodeStoredRows(expectedCount: expectedCount) { consume in
                    // The plain case stays a bare loop: it is most reads.
                    if opening == nil && load == nil {
                        try database.forEachRow(text, arguments, ownStatement: false) { row in try consume(row) }
                    } else {
                        try forEachRow(text, arguments, ownStatement: false, opening: opening) { row in
                            try load?(&row)
                            try consume(row)
                        }
                    }
                }
                if let decoded { return decoded }
            }
            var models: [M] = []
            models.reserveCapacity(expectedCount)
            try streamModels(query, as: M.self, extraColumns: extraColumns) { model, extra in
                models.append(model)
                if extraColumns > 0 { extras.append(extra) }
            }
            return models
        } catch {
            throw Self.readFailure(error)
        }
    }

    /// The models a query selects.
    func rows<M: PersistentModel>(_ query: SQL, as type: M.Type, expectedCount: Int = 0) throws(StoreError) -> [M] {
        var ignored: [[StoredValue]] = []
        return try rows(query, as: M.self, expectedCount: expectedCount, extras: &ignored)
    }

    /// Each model of a query handed to `body` as its row is read, none kept: for results too
    /// large to hold. An error `body` throws comes out unchanged.
    func eachRow<M: PersistentModel>(_ query: SQL, as type: M.Type, _ body: (M) throws -> Void) throws {
        var failure: (any Error)?
        do {
            // Its own statement: `body` may run queries of its own meanwhile.
            try streamModels(query, as: M.self, ownStatement: true) { model, _ in
                do { try body(model) } catch {
                    failure = error
                    throw CancellationError()
                }
            }
        } catch {
            if let failure { throw failure }
            throw Self.readFailure(error)
        }
    }

    /// A failure while reading rows, as the store reports it.
    static func readFailure(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError: error
        case let error as DatabaseFailure: .database(error)
        default: .coding("\(error)")  // a stored value the model cannot hold
        }
    }

    /// The column list a query selects: the row codec's order, qualified by `alias` when the
    /// query joins other tables.
    func selection<M: PersistentModel>(_ type: M.Type, alias: String? = nil) -> SQL {
        .list(rowColumns(M.entity).map { column in alias.map { "\(identifier: $0).\(identifier: column)" } ?? .identifier(column) })
    }
}
