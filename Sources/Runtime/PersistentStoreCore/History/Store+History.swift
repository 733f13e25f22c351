import Foundation
import MigrationFiles
import SQLDialects
import SchemaMetadata

/// The history table: one row per committed transaction of a store, written in that same
/// transaction. Documented in docs/runtime.md ("The history table"). Its tables are
/// `StoreTableMigrations.historyTables` (SQLite's token is `INTEGER PRIMARY KEY AUTOINCREMENT`,
/// so a token is never reused after a prune).
extension Store {
    /// Runs `CREATE ... IF NOT EXISTS` where another process may run it at the same moment:
    /// PostgreSQL lets both pass the check, and the one that commits second fails on its
    /// catalogue's unique index. Run again, it finds what the other created.
    static func createIfMissing(_ database: any StoreDatabase, _ sql: SQL) throws(DatabaseFailure) {
        var attempt = 0
        while true {
            do {
                if let versioned = database as? any VersionedSearchPath {
                    try versioned.executeInTableSchema(sql)
                } else {
                    try database.execute(sql)
                }
                return
            } catch  where error.kind == .uniquenessConflict && attempt < 3 {
                attempt += 1
            }
        }
    }

    /// Creates the history tables when missing and starts recording, when history is on.
    static func startHistory(
        _ database: any StoreDatabase, abilities: StoreAbilities, schema: SchemaDescriptor, enabled: Bool, withTriggers: Bool = false
    ) throws(StoreError) -> ChangeRecorder? {
        guard enabled else { return nil }
        do throws(DatabaseFailure) {
            let history = try database.tableExists("schemagen_history")
            let pruned = try database.tableExists("schemagen_history_pruned")
            if !history || !pruned { try createIfMissing(database, StoreTableMigrations.historyTables(database.dialect)) }
            try abilities.history.ordering?.prepareHistoryOrdering()
        } catch {
            throw .database(error)
        }
        let recorder = try ChangeRecorder(schema: schema, database: database)
        if withTriggers || abilities.history.rowChangeHook?.observeRowChanges(into: recorder) != true {
            let refusal = StoreError.notSupported(
                "\(database.dialect.name) records no row changes here: open the store with `Configuration(recordsHistory: false)`, or set `history: false` in the schema")
            guard let triggers = abilities.history.changeTriggers else { throw refusal }
            var tables: [(table: String, columns: [String])] = []
            for name in recorder.tableNames { tables.append((name, try ChangeRecorder.columns(of: name, database).map(\.name))) }
            do {
                guard try triggers.installChangeTriggers(tables) else { throw refusal }
            } catch let error as StoreError {
                throw error
            } catch {
                throw .database(error as? DatabaseFailure ?? DatabaseFailure(database: database.label, message: "\(error)", code: nil))
            }
            recorder.triggers = triggers
            abilities.history.changeImages?.streamChangedRows { [unowned recorder] table, row in recorder.record(row, tableNamed: table) }
        }
        return recorder
    }

    /// True when this store records history.
    public var recordsHistory: Bool { recorder != nil }

    private func requireHistory() throws(StoreError) {
        guard recorder != nil else { throw .historyDisabled(schema.name) }
    }

    /// The newest token of this store's schema: pass it to `history(after:)` later to learn what
    /// changed since. Zero before the first transaction.
    public func currentHistoryToken() throws(StoreError) -> HistoryToken {
        try requireHistory()
        let schemaName = StoredValue.text(schema.name)
        guard let bound = abilities.history.ordering?.settledHistoryBound else {
            let rows = try query("SELECT max(token) FROM schemagen_history WHERE schema = \(value: schemaName)")
            if case .integer(let token)? = rows.first?.first { return HistoryToken(token) }
            return HistoryToken(try prunedThrough())
        }
        var settled: StoredValue = .null
        for _ in 0..<Self.settledReadAttempts {
            let rows = try query("SELECT max(token) FILTER (WHERE token < \(bound)), max(token) FROM schemagen_history WHERE schema = \(value: schemaName)")
            guard let row = rows.first, row.count == 2 else { break }
            settled = row[0]
            if row[0] == row[1] { break }
        }
        if case .integer(let token) = settled { return HistoryToken(token) }
        return HistoryToken(try prunedThrough())
    }

    /// How often the public readers look where writers run side by side (PostgreSQL): a bound
    /// read just as another database's transaction ends stays behind for that one read (the
    /// ended transaction's database is no longer known), so a commit this store made a moment
    /// ago would be missing; the next look has it. A transaction still running holds every look
    /// back, as it must.
    static var settledReadAttempts: Int { 3 }

    /// Transactions committed after `token` (all kept ones when nil), oldest first, from every
    /// process that wrote through a store of this schema. Throws `historyPruned` when
    /// transactions after `token` were pruned: what changed is then no longer known.
    ///
    ///     for transaction in try await store.history(after: savedToken, author: .excluding("app")) {
    ///         print(transaction.token, transaction.changes.count)
    ///     }
    public func history(after token: HistoryToken? = nil, author: AuthorFilter = .any, limit: Int? = nil) throws(StoreError) -> [HistoryTransaction] {
        try requireHistory()
        let after = token?.value ?? 0
        if token != nil {
            let pruned = try prunedThrough()
            if after < pruned { throw .historyPruned(after: HistoryToken(after), through: HistoryToken(pruned)) }
        }
        var transactions = try readHistory(after: after, author: author, limit: limit, withChanges: true)
        guard abilities.history.ordering?.settledHistoryBound != nil else { return transactions }
        for _ in 1..<Self.settledReadAttempts {
            let remaining = limit.map { $0 - transactions.count }
            let last = transactions.last?.token.value ?? after
            if let remaining, remaining <= 0 { break }
            guard try historyCommitted(after: last, author: author) else { break }
            transactions += try readHistory(after: last, author: author, limit: remaining, withChanges: true)
        }
        return transactions
    }

    /// Whether any transaction after `token` is committed, settled or not.
    private func historyCommitted(after token: Int64, author: AuthorFilter) throws(StoreError) -> Bool {
        let rows = try query(
            "SELECT count(*) FROM (SELECT 1 FROM schemagen_history WHERE schema = \(value: .text(schema.name)) AND token > \(value: .integer(token))\(condition(author)) LIMIT 1) newer")
        if case .integer(let count)? = rows.first?.first { return count > 0 }
        return false
    }

    private func condition(_ author: AuthorFilter) -> SQL {
        switch author {
        case .any: ""
        case .only(let name): " AND author = \(value: .text(name))"
        case .excluding(let name): " AND (author IS NULL OR author <> \(value: .text(name)))"
        }
    }

    /// Deletes the transactions before `token`; returns how many. Readers still behind it get
    /// `historyPruned` from then on.
    ///
    ///     let pruned = try await store.deleteHistory(before: oldestTokenStillNeeded)
    @discardableResult
    public func deleteHistory(before token: HistoryToken) throws(StoreError) -> Int {
        try requireHistory()
        return try write { () throws(StoreError) in try prune(where: "token < \(value: .integer(token.value))") }
    }

    /// Deletes history rows of this schema matching `condition` and remembers the newest token
    /// pruned. Runs inside a write.
    private func prune(where condition: SQL) throws(StoreError) -> Int {
        let schemaName = StoredValue.text(schema.name)
        let newest = try query("SELECT max(token) FROM schemagen_history WHERE schema = \(value: schemaName) AND \(condition)")
        guard case .integer(let through)? = newest.first?.first else { return 0 }
        _ = try query("DELETE FROM schemagen_history WHERE schema = \(value: schemaName) AND token <= \(value: .integer(through))")
        let deleted = database.changedRowCount
        let dialect = database.dialect
        let newer: SQL = "through = \(dialect.greatest("schemagen_history_pruned.through", dialect.proposed("through")))"
        _ = try query(
            "INSERT INTO schemagen_history_pruned (schema, through) VALUES (\(value: schemaName), \(value: .integer(through)))" + dialect.onConflict(["schema"], set: [newer]))
        return deleted
    }

    func prunedThrough() throws(StoreError) -> Int64 {
        let rows = try query("SELECT through FROM schemagen_history_pruned WHERE schema = \(value: .text(schema.name))")
        if case .integer(let through)? = rows.first?.first { return through }
        return 0
    }

    /// Applies the configured retention as transactions commit. Pruning every commit would
    /// walk the kept rows each time, so it runs once per 1% of the kept count (or second of age).
    func pruneHistory(newest: Int64) throws(StoreError) {
        switch configuration.historyRetention {
        case .forever:
            return
        case .transactions(let count):
            observation.retention.commitsSincePrune += 1
            guard observation.retention.commitsSincePrune >= max(1, count / 100) else { return }
            observation.retention.commitsSincePrune = 0
            let boundary = try query(
                "SELECT token FROM schemagen_history WHERE schema = \(value: .text(schema.name)) ORDER BY token DESC LIMIT 1 OFFSET \(value: .integer(Int64(max(0, count))))")
            guard case .integer(let oldestDropped)? = boundary.first?.first else { return }
            _ = try prune(where: "token <= \(value: .integer(oldestDropped))")
        case .age(let age):
            let now = Date()
            let limit = age.inSeconds
            guard now.timeIntervalSince(observation.retention.lastAgePrune) >= min(1, limit / 100) else { return }
            observation.retention.lastAgePrune = now
            _ = try prune(where: "committed_at < \(value: .real(now.timeIntervalSince1970 - limit))")
        }
    }

    /// Only the tokens whose transactions are all over, where writers run side by side: a
    /// reader that moves past a token then never meets a smaller one later.
    var settledTokens: SQL {
        guard let bound = abilities.history.ordering?.settledHistoryBound else { return "" }
        return " AND token < \(bound)"
    }

    /// Whether history rows of this schema after `token` are committed but not settled yet (an
    /// older transaction still runs, or, inside a transaction, ran when it began): a reader
    /// comes back for them.
    package func unsettledHistory(after token: Int64) throws(StoreError) -> Bool {
        guard let bound = abilities.history.ordering?.settledHistoryBound else { return false }
        let rows = try query("SELECT count(*) FROM schemagen_history WHERE schema = \(value: .text(schema.name)) AND token > \(value: .integer(token)) AND token >= \(bound)")
        if case .integer(let count)? = rows.first?.first { return count > 0 }
        return false
    }

    /// History rows after a token, parsed; `withChanges` false skips the (possibly large)
    /// changes column when only the touched entities matter.
    func readHistory(after: Int64, author: AuthorFilter, limit: Int?, withChanges: Bool) throws(StoreError) -> [HistoryTransaction] {
        let changes: SQL = withChanges ? "changes" : "''"
        var sql: SQL =
            "SELECT token, author, committed_at, entities, \(changes) FROM schemagen_history WHERE schema = \(value: .text(schema.name)) AND token > \(value: .integer(after))\(settledTokens)\(condition(author))"
        sql += " ORDER BY token\(page(limit: limit, offset: 0))"
        return try historyTransactions(sql, withChanges: withChanges)
    }

    /// The newest transactions before `token` (all kept ones when nil), newest first, at most
    /// `limit`; only those that changed `entity`, when given. A tool that shows one record's
    /// recent changes reads back from now this way, without reading the whole history.
    ///
    ///     let latest = try await store.recentHistory(touching: "Flight", limit: 200)
    public func recentHistory(before token: HistoryToken? = nil, touching entity: String? = nil, limit: Int) throws(StoreError) -> [HistoryTransaction] {
        try requireHistory()
        var sql: SQL = "SELECT token, author, committed_at, entities, changes FROM schemagen_history WHERE schema = \(value: .text(schema.name))\(settledTokens)"
        if let token { sql += " AND token < \(value: .integer(token.value))" }
        // The names column is the JSON array `HistoryCodec.encodeNames` writes; the match is
        // confirmed on the decoded names below.
        if let entity { sql += " AND entities LIKE \(value: .text("%" + HistoryCodec.encodeNames([entity]).dropFirst().dropLast() + "%"))" }
        sql += " ORDER BY token DESC\(page(limit: limit, offset: 0))"
        let transactions = try historyTransactions(sql, withChanges: true)
        guard let entity else { return transactions }
        return transactions.filter { $0.entities.contains(entity) }
    }

    /// History rows (token, author, committed_at, entities, changes) as transactions.
    private func historyTransactions(_ sql: SQL, withChanges: Bool) throws(StoreError) -> [HistoryTransaction] {
        var transactions: [HistoryTransaction] = []
        for row in try query(sql) {
            guard row.count == 5, case .integer(let token) = row[0] else { continue }
            let date: Date
            switch row[2] {
            case .real(let seconds): date = Date(timeIntervalSince1970: seconds)
            case .integer(let seconds): date = Date(timeIntervalSince1970: Double(seconds))
            default: throw .badHistory(token: HistoryToken(token), reason: "committed_at is not a number")
            }
            guard case .text(let entitiesText) = row[3] else { throw .badHistory(token: HistoryToken(token), reason: "entities is not text") }
            do throws(HistoryCodec.DecodingError) {
                let entities = try HistoryCodec.decodeNames(entitiesText)
                var changes: [HistoryChange] = []
                if withChanges {
                    guard case .text(let changesText) = row[4] else { throw HistoryCodec.DecodingError(description: "changes is not text") }
                    changes = try HistoryCodec.decode(changesText)
                }
                var writer: String?
                if case .text(let name) = row[1] { writer = name }
                transactions.append(HistoryTransaction(token: HistoryToken(token), author: writer, date: date, entities: entities, changes: changes))
            } catch {
                throw .badHistory(token: HistoryToken(token), reason: error.description)
            }
        }
        return transactions
    }
}
