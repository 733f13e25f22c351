import SQLDialects
import SchemaMetadata

/// One record of an entity known only at run time, as a tool without compiled models reads it
/// (the studio): a stored value per column, read through the store's own row pipeline, so
/// encrypted values are opened and external values loaded as a model's would be.
public struct StoredRecord: Sendable, Hashable {
    /// The table's columns, in `EntityDescriptor.recordColumns` order.
    public let columns: [String]
    /// The values, one per column, in the same order.
    public let values: [StoredValue]
    /// Columns whose value could not be read (an external file missing or not what the row
    /// names), with why: their value here is nil. Empty for a whole record.
    public let unreadable: [String: String]

    /// A record of these columns and values.
    ///
    ///     let record = StoredRecord(columns: ["id", "name"], values: [.integer(1), .text("Oakland")])
    public init(columns: [String], values: [StoredValue], unreadable: [String: String] = [:]) {
        self.columns = columns
        self.values = values
        self.unreadable = unreadable
    }

    /// The value of a column, nil when the entity has no such column.
    public subscript(column: String) -> StoredValue? {
        columns.firstIndex(of: column).map { values[$0] }
    }
}

/// A condition on one column of a record, which the store renders itself: a tool never writes
/// SQL text.
public struct RecordFilter: Sendable, Hashable {
    /// What the column's value must be.
    public enum Condition: Sendable, Hashable {
        /// Equal to the value.
        case equals(StoredValue)
        /// Text that contains this, ignoring ASCII case.
        case contains(String)
        /// At least `lower` and at most `upper`, each bound left out when nil.
        case between(lower: StoredValue?, upper: StoredValue?)
        /// Empty (NULL).
        case isNull
        /// Not empty.
        case isNotNull
        /// Linked to the target's record with this key, through the many-to-many relationship
        /// `column` names (a relationship of the entity, not a column): `RecordFilter.linked(through:to:)`.
        case linked(to: StoredValue)
    }

    /// The column's name in the table: `icao`, `route_distance`; for `.linked(to:)`, the
    /// relationship's name.
    public var column: String
    /// What its value must be.
    public var condition: Condition

    /// A condition on a column.
    ///
    ///     let filter = RecordFilter("name", .contains("intl"))
    public init(_ column: String, _ condition: Condition) {
        self.column = column
        self.condition = condition
    }

    /// The records linked to one record of the target through a many-to-many relationship (its
    /// join table): a car's mechanics, as a list of mechanics.
    ///
    ///     let carsMechanics = RecordFilter.linked(through: "cars", to: .integer(carID))
    public static func linked(through relationship: String, to key: StoredValue) -> RecordFilter {
        RecordFilter(relationship, .linked(to: key))
    }
}

/// The order of a list of records: one column, then the key in the same direction, so the order
/// is total and one index (the column's, which holds the key) gives it.
public struct RecordOrder: Sendable, Hashable {
    /// The column's name in the table.
    public var column: String
    /// Smallest first (nil first); false for largest first (nil last).
    public var ascending: Bool

    /// An order by a column.
    ///
    ///     let newest = RecordOrder("scheduled_off", ascending: false)
    public init(_ column: String, ascending: Bool = true) {
        self.column = column
        self.ascending = ascending
    }
}

/// Where the next page of records starts (keyset pagination): the last record's value of the
/// order's column, then its key. A page deep in a large table costs what the first one does.
public struct RecordCursor: Sendable, Hashable {
    /// The order column's value, then the key's, of the last record of a page.
    public var values: [StoredValue]

    /// A cursor from values a page gave (`records(...).next`), kept between requests.
    ///
    ///     let cursor = RecordCursor(values: [.text("Oakland"), .integer(42)])
    public init(values: [StoredValue]) { self.values = values }
}

extension EntityDescriptor {
    /// Every column of the entity's table a record holds: `rowColumns`, then the columns of
    /// keys of several columns, which models hold as one value.
    public var recordColumns: [String] {
        let row = rowColumns
        return row + relationships.flatMap(\.foreignKeyColumns).filter { !row.contains($0) }
    }
}

extension Store {
    /// A page of an entity's records, filtered and ordered, starting after `cursor`; and the
    /// cursor of the next page, nil on the last one. Memory holds one page.
    ///
    ///     let page = try await store.records(of: entity, where: [RecordFilter("code", .contains("AL"))], orderedBy: RecordOrder("name"), limit: 100)
    public func records(
        of entity: EntityDescriptor, where filters: [RecordFilter] = [], orderedBy order: RecordOrder? = nil, after cursor: RecordCursor? = nil, limit: Int
    ) throws(StoreError) -> (records: [StoredRecord], next: RecordCursor?) {
        let entity = try knownEntity(entity)
        let columns = entity.recordColumns
        let sort = try recordSort(entity, order)
        let filtering = try filters.map { filter throws(StoreError) in try filterCondition(filter, of: entity) }
        if let cursor, cursor.values.count != sort.count {
            throw .notSupported("a cursor of \(cursor.values.count) values for an order of \(sort.count) columns")
        }
        let wanted = max(0, limit) + 1
        var records: [StoredRecord] = []
        // Each segment is one statement whose order an index can give and whose start an index
        // can seek to (a row value compared with the cursor's): a deep page costs what the first
        // does. A nullable order column is two segments, its NULLs on their own, first going up
        // and last going down.
        for segment in Self.segments(sort, after: cursor?.values) where records.count < wanted {
            let conditions = filtering + segment.conditions
            let condition: SQL = conditions.isEmpty ? "" : " WHERE " + SQL.list(conditions, separator: " AND ")
            let sql: SQL =
                "SELECT \(SQL.identifiers(columns)) FROM \(identifier: entity.table)\(condition) ORDER BY \(SQL.list(segment.order)) LIMIT \(value: .integer(Int64(wanted - records.count)))"
            do {
                try streamRecords(sql, of: entity, columns: columns) { records.append($0) }
            } catch {
                throw Self.readFailure(error)
            }
        }
        guard records.count > max(0, limit) else { return (records, nil) }
        records.removeLast()
        let last = records[records.count - 1]
        return (records, RecordCursor(values: sort.map { last[$0.column] ?? .null }))
    }

    /// The statements a page reads in turn: conditions and order of each.
    private static func segments(_ sort: [SortTerm], after cursor: [StoredValue]?) -> [(conditions: [SQL], order: [SQL])] {
        guard let first = sort.first else { return [] }
        let ascending = first.ascending
        let direction: SQL = ascending ? "" : " DESC"
        let comparison: SQL = ascending ? ">" : "<"
        /// The rows after `values` of `terms` in the order: a row value compared with them.
        func seek(_ terms: [SortTerm], _ values: [StoredValue]) -> SQL {
            guard terms.count > 1 else { return "\(identifier: terms[0].column) \(comparison) \(value: values[0])" }
            return "(\(SQL.identifiers(terms.map(\.column)))) \(comparison) (\(SQL.parameters(values)))"
        }
        let order = sort.map { "\(identifier: $0.column)\(direction)" as SQL }
        guard first.nullable else {
            return [(cursor.map { [seek(sort, $0)] } ?? [], order)]
        }
        let column: SQL = .identifier(first.column)
        let keys = Array(sort.dropFirst())
        let keyOrder = Array(order.dropFirst())
        var nulls: (conditions: [SQL], order: [SQL]) = (["\(column) IS NULL"], keyOrder)
        var values: (conditions: [SQL], order: [SQL]) = (["\(column) IS NOT NULL"], order)
        if let cursor {
            if cursor[0] == .null {
                nulls.conditions.append(seek(keys, Array(cursor.dropFirst())))
                // Going down, NULLs come last: after one of them only NULLs are left.
                return ascending ? [nulls, values] : [nulls]
            }
            values.conditions.append(seek(sort, cursor))
            // Going up, NULLs came first: after a value none is left.
            return ascending ? [values] : [values, nulls]
        }
        return ascending ? [nulls, values] : [values, nulls]
    }
    /// Records whose searchable attributes match `query`, best first (SQLite's bm25,
    /// PostgreSQL's `ts_rank`), narrowed by the filters: the full-text search models get
    /// (`search(_:_:)`), as records. At most `limit`; a search has no further pages.
    ///
    ///     let found = try await store.searchRecords(of: items, .words("call plumber"), limit: 50)
    public func searchRecords(of entity: EntityDescriptor, _ query: SearchQuery, where filters: [RecordFilter] = [], limit: Int = 50) throws(StoreError) -> [StoredRecord] {
        let entity = try knownEntity(entity)
        guard let engine = abilities.fullText else {
            throw .unsupportedPredicate("this store's engine (\(database.dialect.name)) has no full-text search")
        }
        if case .words(let words) = query.form, words.isEmpty { return [] }
        let indexes = entity.indexes.filter { $0.kind == .fullText }
        guard !indexes.isEmpty else { throw .unsupportedPredicate("\(entity.name) has no searchable attribute; mark one 'searchable: true' in the schema") }
        let statement = engine.fullTextSearch(query, in: entity, indexes: indexes, excerpts: nil)
        let conditions = try filters.map { filter throws(StoreError) in try filterCondition(filter, of: entity, qualified: true) }
        let condition: SQL = conditions.isEmpty ? "" : " WHERE " + SQL.list(conditions, separator: " AND ")
        let columns = entity.recordColumns
        let table = entity.table
        let sql: SQL = """
            SELECT \(SQL.list(columns.map { "\(identifier: table).\(identifier: $0)" })) \
            FROM \(identifier: table) JOIN (\(statement.found)) AS found ON \(statement.joinCondition)\(condition) \
            ORDER BY \(statement.ordering) LIMIT \(value: .integer(Int64(max(0, limit))))
            """
        var records: [StoredRecord] = []
        do {
            try streamRecords(sql, of: entity, columns: columns) { records.append($0) }
        } catch {
            let failure = Self.readFailure(error)
            if case .database(let database) = failure, database.kind == .statement, case .engineSyntax(let text) = query.form {
                throw .unsupportedPredicate("the \(engine.searchSyntaxName) query '\(text)' is not valid: \(database.message); search with .words(_:) for plain words")
            }
            throw failure
        }
        return records
    }

    /// How many records of an entity match the filters.
    public func countRecords(of entity: EntityDescriptor, where filters: [RecordFilter] = []) throws(StoreError) -> Int {
        let entity = try knownEntity(entity)
        let conditions = try filters.map { filter throws(StoreError) in try filterCondition(filter, of: entity) }
        let condition: SQL = conditions.isEmpty ? "" : " WHERE " + SQL.list(conditions, separator: " AND ")
        guard case .integer(let count)? = try query("SELECT count(*) FROM \(identifier: entity.table)\(condition)").first?.first else { return 0 }
        return Int(count)
    }

    /// Each record a query of `columns` selects, through the row pipeline models use: encrypted
    /// values opened, external values loaded.
    func streamRecords(_ sql: SQL, of entity: EntityDescriptor, columns: [String], _ body: (StoredRecord) throws -> Void) throws {
        var unreadable: [String: String] = [:]
        let load = externalLoader(entity, columns: columns) { position, reason in unreadable[columns[position]] = reason }
        let (text, arguments) = sql.statement(for: database.dialect)
        try forEachRow(text, arguments, ownStatement: false, opening: openPlan(entity, columns: columns)) { row in
            unreadable = [:]
            try load?(&row)
            try body(StoredRecord(columns: columns, values: row, unreadable: unreadable))
        }
    }

    // MARK: - Rendering

    /// The store's own descriptor of the entity: a tool's copy must name a table it knows.
    private func knownEntity(_ entity: EntityDescriptor) throws(StoreError) -> EntityDescriptor {
        guard let known = schema.entity(forTable: entity.table) else { throw .unknownEntity(entity.name) }
        return known
    }

    private struct SortTerm {
        var column: String
        var ascending: Bool
        var nullable: Bool
    }

    /// The order's column, then the key's (ascending), without repeats.
    private func recordSort(_ entity: EntityDescriptor, _ order: RecordOrder?) throws(StoreError) -> [SortTerm] {
        var terms: [SortTerm] = []
        if let order {
            let column = try recordColumn(order.column, of: entity, for: "sort by")
            if column.isEncrypted && !column.encryptsDeterministically {
                throw .notSupported("\(entity.name).\(column.property) is encrypted, so the database cannot sort by it")
            }
            terms.append(SortTerm(column: column.column, ascending: order.ascending, nullable: column.isOptional))
        }
        // The key breaks ties, in the order's direction: one index (the column's, which holds
        // the key) gives the whole order.
        let ascending = order?.ascending ?? true
        for key in entity.primaryKey where !terms.contains(where: { $0.column == key }) {
            terms.append(SortTerm(column: key, ascending: ascending, nullable: false))
        }
        return terms
    }

    /// A column of the entity by column name; a foreign key column counts as a plain column.
    private func recordColumn(_ name: String, of entity: EntityDescriptor, for use: String) throws(StoreError) -> ColumnDescriptor {
        if let column = entity.columns.first(where: { $0.column == name }) { return column }
        if entity.recordColumns.contains(name) {
            let isKey = entity.primaryKey.contains(name)
            let relationship = entity.relationships.first { $0.foreignKeyColumns.contains(name) }
            return ColumnDescriptor(property: name, column: name, storage: .integer, swiftType: "Int64", isOptional: !isKey && (relationship?.isOptional ?? false), isPrimaryKey: isKey)
        }
        throw .notSupported("\(entity.name) has no column '\(name)' to \(use)")
    }

    private func filterCondition(_ filter: RecordFilter, of entity: EntityDescriptor, qualified: Bool = false) throws(StoreError) -> SQL {
        if case .linked(let key) = filter.condition { return try linkCondition(filter.column, key, of: entity, qualified: qualified) }
        let column = try recordColumn(filter.column, of: entity, for: "filter by")
        let name: SQL = qualified ? "\(identifier: entity.table).\(identifier: column.column)" : .identifier(column.column)
        if column.isEncrypted || column.usesExternalStorage {
            switch filter.condition {
            case .isNull: return "\(name) IS NULL"
            case .isNotNull: return "\(name) IS NOT NULL"
            default:
                throw .notSupported("\(entity.name).\(column.property) is \(column.isEncrypted ? "encrypted" : "kept in files"), so the database can only tell whether it is empty")
            }
        }
        // A value in the form the column stores it (a date as its UTC text with milliseconds),
        // or refused: a comparison of text that is no date would just match nothing.
        func stored(_ value: StoredValue) throws(StoreError) -> StoredValue { try Self.checkedValue(value, column: column.column, of: entity) }
        switch filter.condition {
        case .linked(let key): return try linkCondition(filter.column, key, of: entity, qualified: qualified)
        case .equals(.null), .isNull: return "\(name) IS NULL"
        case .isNotNull: return "\(name) IS NOT NULL"
        case .equals(let value): return "\(name) = \(value: try stored(value))"
        case .contains(let text):
            // LIKE's wildcards in the text are matched as themselves.
            let escaped = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
            return "lower(CAST(\(name) AS TEXT)) LIKE \(value: .text("%" + escaped.lowercased() + "%")) ESCAPE '\\'"
        case .between(let lower, let upper):
            var parts: [SQL] = []
            if let lower { parts.append("\(name) >= \(value: try stored(lower))") }
            if let upper { parts.append("\(name) <= \(value: try stored(upper))") }
            return parts.isEmpty ? "1 = 1" : "(" + SQL.list(parts, separator: " AND ") + ")"
        }
    }

    /// The entity's records whose key the join table pairs with `key`: a condition on the key,
    /// so it narrows a page, a count or a search alike.
    private func linkCondition(_ name: String, _ key: StoredValue, of entity: EntityDescriptor, qualified: Bool) throws(StoreError) -> SQL {
        guard let relationship = entity.relationship(named: name) else { throw .notSupported("\(entity.name) has no relationship '\(name)' to filter by") }
        guard let joinTable = relationship.joinTable, relationship.joinColumns.count == 1, relationship.joinTargetColumns.count == 1, entity.primaryKey.count == 1 else {
            throw .notSupported("\(entity.name).\(name) is not a many-to-many relationship over one key column; filter by its key column instead")
        }
        let keyColumn: SQL = qualified ? "\(identifier: entity.table).\(identifier: entity.primaryKey[0])" : .identifier(entity.primaryKey[0])
        return "\(keyColumn) IN (SELECT \(identifier: relationship.joinColumns[0]) FROM \(identifier: joinTable) WHERE \(identifier: relationship.joinTargetColumns[0]) = \(value: key))"
    }
}
