import Foundation
import MigrationFiles
import SQLDialects
import SchemaMetadata

/// One device as a sync server last saw it.
package struct SyncDeviceRow: Sendable, Hashable {
    package var device: String
    package var user: String
    package var schemaVersion: Int
    /// The sequence number of its last push applied.
    package var sequence: Int64
    /// The answer that push got, as sent, for a retry of it.
    package var answer: String?
    package var firstSeen: Date
    package var lastSeen: Date
    /// When the pull that last brought it to the end of the history began: every delete the
    /// server recorded well before then reached it.
    package var caughtUpAt: Date?

    package init(device: String, user: String, schemaVersion: Int, sequence: Int64, answer: String?, firstSeen: Date, lastSeen: Date, caughtUpAt: Date? = nil) {
        self.device = device
        self.user = user
        self.schemaVersion = schemaVersion
        self.sequence = sequence
        self.answer = answer
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.caughtUpAt = caughtUpAt
    }
}

/// A sync client's progress on its device, one row per schema.
package struct SyncClientRow: Sendable, Hashable {
    package let device: String
    /// The newest history token whose local changes were stamped with the device's clock.
    package var stampedThrough: Int64
    /// The sequence number of the last push the server acknowledged.
    package var acknowledged: Int64
    /// The push sent and not yet acknowledged, as sent: a retry sends it again unchanged.
    package var outgoing: String?
    /// Each record in `outgoing` with its pending version then (`entity`, `key`, `version`).
    package var outgoingVersions: String?
    /// Where the last pull ended.
    package var pullCursor: String?
    /// The device's latest clock, so that it never goes back.
    package var clock: String?
    package var lastSync: Date?
    package var lastError: String?
    /// The schema version the device's states are kept in: the version of the app that last
    /// synced (nil: before the first sync, or a store of an earlier build).
    package var schemaVersion: Int?
    /// When the device began pulling everything again (the history after its cursor pruned, or
    /// deletes it never saw purged): once that pull is whole, the rows whose state it did not
    /// refresh, and that are not pending, are records the server no longer holds.
    package var sweepSince: Date?

    package init(device: String) {
        self.device = device
        stampedThrough = 0
        acknowledged = 0
    }
}

/// A record changed on the device and not yet acknowledged by the server.
package struct SyncPendingRow: Sendable, Hashable {
    package var entity: String
    package var key: String
    /// One more each time a local change to it is stamped.
    package var version: Int64
    /// For server-wins entities: the clock of each value the device changed, as it had seen it.
    package var seen: String?
}

// The sync server's state, in the store's own tables (`StoreTableMigrations.syncTables`), kept
// per schema and written in the transaction that writes the records, so both commit or neither.
// `package`: only the toolkit's sync modules read and write it.
extension Store {
    /// Creates the sync state tables where they are missing.
    package func prepareSyncTables() throws(StoreError) {
        do throws(DatabaseFailure) {
            let records = try database.tableExists("schemagen_sync_records")
            let devices = try database.tableExists("schemagen_sync_devices")
            if !records || !devices { try Self.createIfMissing(database, StoreTableMigrations.syncTables(database.dialect)) }
        } catch {
            throw .database(error)
        }
        try prepareSyncDepartures()
    }

    /// The stored states of these records of `entity`, by key; a record without one is missing.
    /// States are kept per schema version, in that version's names (`version`: the store's own
    /// unless given): each version served reads its rows through its own views.
    package func syncStates(entity: String, keys: [String], version: Int? = nil) throws(StoreError) -> [String: String] {
        guard !keys.isEmpty else { return [:] }
        var states: [String: String] = [:]
        // In chunks: a statement's parameters are bounded (SQLite's default is 32,766).
        for start in stride(from: 0, to: keys.count, by: 500) {
            let chunk = keys[start..<min(start + 500, keys.count)].map { StoredValue.text($0) }
            let rows = try query(
                "SELECT record_key, state FROM schemagen_sync_records WHERE schema = \(value: .text(schema.name)) AND schema_version = \(value: .integer(Int64(version ?? schema.version))) AND entity = \(value: .text(entity)) AND record_key IN (\(SQL.parameters(chunk)))"
            )
            for row in rows {
                if case .text(let key) = row[0], case .text(let state) = row[1] { states[key] = state }
            }
        }
        return states
    }

    /// Runs `body` in one transaction whose history row names `author` instead of the store's:
    /// a sync client writes what it pulled as `sync`, so that it is never pushed back.
    package func transaction<T: Sendable>(author: String, _ body: @Sendable (isolated Store) throws -> T) throws(StoreError) -> T {
        guard depth == 0 else { throw .notSupported("a transaction with its own author inside another transaction") }
        transactionAuthor = author
        defer { transactionAuthor = nil }
        return try transaction(body)
    }

    /// `INSERT INTO <table> (<columns>) VALUES (...), ...` for `rows` rows, then `suffix`, its
    /// values bound when it runs. Kept for the row count last asked: a pull writes page after
    /// page of the same shape, and building each statement again cost a twentieth of a first sync.
    func multiRowInsert(into table: String, columns: [String], rows: Int, then suffix: SQL = "") -> RenderedSQL {
        let key = [table, suffix.description] + columns
        if let cached = statements.multiRowInserts[key], cached.rows == rows { return cached.statement }
        let tuple: SQL = "(\(SQL.placeholders(columns.count)))"
        let statement = render("INSERT INTO \(identifier: table) (\(SQL.identifiers(columns))) VALUES \(SQL.list(repeatElement(tuple, count: rows)))" + suffix)
        statements.multiRowInserts[key] = (rows, statement)
        return statement
    }

    /// Inserts new rows of `entity` from column values, several to a statement, inside the
    /// transaction that pulled them: encrypted values sealed and external ones stored as
    /// `insertRecord` does, nothing read back. A row the database refuses fails them all.
    package func insertRecords(of entity: EntityDescriptor, rows: [[String: StoredValue]]) throws(StoreError) {
        try requireTransaction("pulled rows")
        guard let entity = schema.entity(forTable: entity.table) else { throw .unknownEntity(entity.name) }
        var groups: [[String]: [[StoredValue]]] = [:]
        let recordColumns = Set(entity.recordColumns)
        for row in rows {
            var columns = row.keys.sorted()
            var values: [StoredValue] = []
            values.reserveCapacity(columns.count)
            for name in columns {
                guard recordColumns.contains(name) else { throw .notSupported("\(entity.name) has no column '\(name)'") }
                values.append(try Self.checkedValue(row[name]!, column: name, of: entity))
            }
            try prepareRow(entity, columns: &columns, values: &values, replacing: false)
            groups[columns, default: []].append(values)
        }
        for (columns, rows) in groups.sorted(by: { $0.key.joined() < $1.key.joined() }) where !columns.isEmpty {
            // Under SQLite's 32,766 parameters a statement, and PostgreSQL's 65,535.
            let perStatement = max(1, 30_000 / columns.count)
            for start in stride(from: 0, to: rows.count, by: perStatement) {
                let part = rows[start..<min(start + perStatement, rows.count)]
                let insert = multiRowInsert(into: entity.table, columns: columns, rows: part.count)
                do { _ = try database.query(insert, Array(part.joined())[...]) } catch { throw .database(error) }
            }
        }
    }

    /// Stores several records' states at once, inside the transaction that writes the records.
    package func writeSyncStates(entity: String, _ states: [(key: String, state: String)], version: Int? = nil) throws(StoreError) {
        try requireTransaction("a sync state")
        let dialect = database.dialect
        let now = StoredValue.real(Date().timeIntervalSince1970)
        let (schemaName, schemaVersion) = (StoredValue.text(schema.name), StoredValue.integer(Int64(version ?? schema.version)))
        let replacing = dialect.onConflict(["schema", "schema_version", "entity", "record_key"], set: ["state = " + dialect.proposed("state"), "updated_at = " + dialect.proposed("updated_at")])
        for start in stride(from: 0, to: states.count, by: 500) {
            let part = states[start..<min(start + 500, states.count)]
            var arguments: [StoredValue] = []
            arguments.reserveCapacity(part.count * 6)
            for item in part { arguments += [schemaName, schemaVersion, .text(entity), .text(item.key), .text(item.state), now] }
            let insert = multiRowInsert(
                into: "schemagen_sync_records", columns: ["schema", "schema_version", "entity", "record_key", "state", "updated_at"], rows: part.count, then: replacing)
            do { _ = try database.query(insert, arguments[...]) } catch { throw .database(error) }
        }
    }

    /// Kept states of `entity` whose row is gone, after the key `after`, in key order: where a
    /// device that starts over learns what was deleted meanwhile.
    package func syncStatesWithoutRows(
        of entity: EntityDescriptor, keyColumn: String, after: String?, limit: Int, version: Int? = nil, entityName: String? = nil
    ) throws(StoreError) -> [(key: String, state: String)] {
        let from: SQL = after.map { " AND s.record_key > \(value: .text($0))" } ?? ""
        // The state's key cast to the key column's type, so that each look-up takes the key's
        // index (a cast of the column would read the whole table for every state).
        let storage = entity.columns.first { $0.column == keyColumn }?.storage ?? .text
        let keyType = SQL(verbatim: database.dialect.columnType(storage))
        let rows = try query(
            """
            SELECT s.record_key, s.state FROM schemagen_sync_records s WHERE s.schema = \(value: .text(schema.name))
            AND s.schema_version = \(value: .integer(Int64(version ?? schema.version))) AND s.entity = \(value: .text(entityName ?? entity.name))\(from)
            AND NOT EXISTS (SELECT 1 FROM \(identifier: entity.table) t WHERE t.\(identifier: keyColumn) = CAST(s.record_key AS \(keyType)))
            ORDER BY s.record_key LIMIT \(value: .integer(Int64(max(1, limit))))
            """
        )
        return rows.compactMap { row in
            guard row.count == 2, case .text(let key) = row[0], case .text(let state) = row[1] else { return nil }
            return (key, state)
        }
    }

    /// Stores a record's state, inside the transaction that writes the record.
    package func writeSyncState(entity: String, key: String, state: String) throws(StoreError) {
        try requireTransaction("a sync state")
        let values: [StoredValue] = [.text(schema.name), .integer(Int64(schema.version)), .text(entity), .text(key), .text(state), .real(Date().timeIntervalSince1970)]
        try upsert("schemagen_sync_records", ["schema", "schema_version", "entity", "record_key", "state", "updated_at"], values, key: 4)
    }

    /// Removes every state kept in `version`'s names: a device's, once it has carried them to
    /// the version its app was updated to.
    package func deleteSyncStates(version: Int) throws(StoreError) {
        try requireTransaction("sync states")
        _ = try query("DELETE FROM schemagen_sync_records WHERE schema = \(value: .text(schema.name)) AND schema_version = \(value: .integer(Int64(version)))")
    }

    /// The device, as last seen; nil before its first push or pull.
    package func syncDevice(_ device: String) throws(StoreError) -> SyncDeviceRow? {
        try syncDevices(where: " AND device = \(value: .text(device))").first
    }

    /// Every device seen, oldest first (the server's own rows, `#`, aside).
    package func syncDevices() throws(StoreError) -> [SyncDeviceRow] {
        try syncDevices(where: " AND device NOT LIKE '#%'")
    }

    /// The row whose `caught_up_at` is the time tombstones were purged through: a device that
    /// last caught up before it may hold records whose deletes it will never be sent.
    package static let tombstonesRow = "#tombstones"

    /// When tombstones were last purged through; nil before any purge.
    package func syncTombstonesPurgedThrough() throws(StoreError) -> Date? {
        try syncDevice(Self.tombstonesRow)?.caughtUpAt
    }

    /// Keeps the time tombstones are purged through, inside the purge's transaction.
    package func writeSyncTombstonesPurgedThrough(_ horizon: Date) throws(StoreError) {
        let now = Date()
        try writeSyncDevice(SyncDeviceRow(device: Self.tombstonesRow, user: "", schemaVersion: 0, sequence: 0, answer: nil, firstSeen: now, lastSeen: now, caughtUpAt: horizon))
    }

    /// Removes this version's tombstones of `entity` (states whose row is gone) last written
    /// before `before`; how many.
    package func purgeSyncTombstones(of entity: EntityDescriptor, keyColumn: String, before: Date) throws(StoreError) -> Int {
        try requireTransaction("a purge of tombstones")
        let storage = entity.columns.first { $0.column == keyColumn }?.storage ?? .text
        let keyType = SQL(verbatim: database.dialect.columnType(storage))
        let condition: SQL = """
            schema = \(value: .text(schema.name)) AND schema_version = \(value: .integer(Int64(schema.version))) AND entity = \(value: .text(entity.name))
            AND updated_at < \(value: .real(before.timeIntervalSince1970))
            AND NOT EXISTS (SELECT 1 FROM \(identifier: entity.table) t WHERE t.\(identifier: keyColumn) = CAST(schemagen_sync_records.record_key AS \(keyType)))
            """
        let count = try query("SELECT count(*) FROM schemagen_sync_records WHERE \(condition)").first?.first
        _ = try query("DELETE FROM schemagen_sync_records WHERE \(condition)")
        if case .integer(let number)? = count { return Int(number) }
        return 0
    }

    /// The row that keeps a sync server's latest clock beside its devices: `#` starts no device
    /// id (they are node names), so none can take it.
    package static let serverClockRow = "#server-clock"

    /// The sync server's latest clock as kept, so that it never goes back across a restart,
    /// whatever the machine's clock did meanwhile; nil before the first.
    package func syncServerClock() throws(StoreError) -> String? {
        try syncDevice(Self.serverClockRow)?.answer
    }

    /// Keeps the sync server's latest clock, inside the transaction that stamped with it.
    package func writeSyncServerClock(_ clock: String) throws(StoreError) {
        let now = Date()
        try writeSyncDevice(SyncDeviceRow(device: Self.serverClockRow, user: "", schemaVersion: 0, sequence: 0, answer: clock, firstSeen: now, lastSeen: now))
    }

    private func syncDevices(where condition: SQL) throws(StoreError) -> [SyncDeviceRow] {
        let rows = try query(
            "SELECT device, user_id, schema_version, sequence, answer, first_seen, last_seen, caught_up_at FROM schemagen_sync_devices WHERE schema = \(value: .text(schema.name))\(condition) ORDER BY first_seen, device"
        )
        return rows.compactMap { row in
            guard row.count == 8, case .text(let device) = row[0], case .text(let user) = row[1], case .integer(let version) = row[2], case .integer(let sequence) = row[3]
            else { return nil }
            let answer: String? = if case .text(let text) = row[4] { text } else { nil }
            return SyncDeviceRow(
                device: device, user: user, schemaVersion: Int(version), sequence: sequence, answer: answer, firstSeen: Self.date(row[5]), lastSeen: Self.date(row[6]),
                caughtUpAt: row[7] == .null ? nil : Self.date(row[7]))
        }
    }

    /// Stores what is known of a device, inside the transaction that applies its push.
    package func writeSyncDevice(_ row: SyncDeviceRow) throws(StoreError) {
        try requireTransaction("a sync device")
        let values: [StoredValue] = [
            .text(schema.name), .text(row.device), .text(row.user), .integer(Int64(row.schemaVersion)), .integer(row.sequence), row.answer.map(StoredValue.text) ?? .null,
            .real(row.firstSeen.timeIntervalSince1970), .real(row.lastSeen.timeIntervalSince1970), row.caughtUpAt.map { .real($0.timeIntervalSince1970) } ?? .null,
        ]
        // The first sighting stays as it was, and the last catching up unless this is a later one.
        try upsert(
            "schemagen_sync_devices", ["schema", "device", "user_id", "schema_version", "sequence", "answer", "first_seen", "last_seen", "caught_up_at"], values, key: 2,
            keeping: row.caughtUpAt == nil ? ["first_seen", "caught_up_at"] : ["first_seen"])
    }

    /// A value of an encrypted column sealed as the row's is, for a sync state: a state keeps
    /// what it last stamped, and an encrypted value stays encrypted at rest there too. Values
    /// of other columns, and NULL, come back as they are.
    package func sealForSyncState(_ value: StoredValue, table: String, column: String, key: [StoredValue]) throws(StoreError) -> StoredValue {
        guard value != .null, let cipher = cipher(table: table, column: column) else { return value }
        do { return try cipher.seal(value, rowKey: key) } catch { throw .encryption(error) }
    }

    /// A sealed value of a sync state opened; nil when no key of the ring opens it (the key was
    /// retired since), so that the field is stamped again from its row.
    package func openSyncState(_ value: StoredValue, table: String, column: String, key: [StoredValue]) -> StoredValue? {
        guard value != .null, let cipher = cipher(table: table, column: column) else { return value }
        return try? cipher.open(value, rowKey: key)
    }

    /// Sets the seen clocks kept with a pending change (after a push acknowledged: the device
    /// has now seen its own values).
    package func setSyncPendingSeen(entity: String, key: String, seen: String?) throws(StoreError) {
        try requireTransaction("a pending sync change")
        _ = try query(
            "UPDATE schemagen_sync_pending SET seen = \(value: seen.map(StoredValue.text) ?? .null) WHERE schema = \(value: .text(schema.name)) AND entity = \(value: .text(entity)) AND record_key = \(value: .text(key))"
        )
    }

    /// Rows of `entity` whose `column` is one of `keys`, read as `records(of:)` reads them
    /// (encrypted values opened, external ones loaded): a page of a sync at once.
    package func records(of entity: EntityDescriptor, column: String, in keys: [StoredValue]) throws(StoreError) -> [StoredRecord] {
        var found: [StoredRecord] = []
        for start in stride(from: 0, to: keys.count, by: 500) {
            let chunk = Array(keys[start..<min(start + 500, keys.count)])
            let columns = entity.recordColumns
            let sql: SQL = "SELECT \(SQL.identifiers(columns)) FROM \(identifier: entity.table) WHERE \(identifier: column) IN (\(SQL.parameters(chunk)))"
            do {
                try streamRecords(sql, of: entity, columns: columns) { found.append($0) }
            } catch {
                throw Self.readFailure(error)
            }
        }
        return found
    }

    /// Creates the tables a sync client keeps its progress in, where they are missing.
    package func prepareSyncClientTables() throws(StoreError) {
        try prepareSyncTables()
        let text = database.dialect.columnType(.text), integer = database.dialect.columnType(.integer), real = database.dialect.columnType(.real)
        do throws(DatabaseFailure) {
            let client = try database.tableExists("schemagen_sync_client"), pending = try database.tableExists("schemagen_sync_pending")
            let unshared = try database.tableExists("schemagen_sync_unshared")
            guard !client || !pending || !unshared else { return }
            // A client that synced before the table existed: what it has pending is kept by a
            // pull from the start, as it was then (it may have been made here).
            let fillFromPending = pending && !unshared
            try Self.createIfMissing(
                database,
                SQL(
                    verbatim: """
                        CREATE TABLE IF NOT EXISTS schemagen_sync_pending (
                            schema \(text) NOT NULL, entity \(text) NOT NULL, record_key \(text) NOT NULL, version \(integer) NOT NULL, seen \(text),
                            position \(integer) NOT NULL,
                            PRIMARY KEY (schema, entity, record_key)
                        );
                        CREATE TABLE IF NOT EXISTS schemagen_sync_unshared (
                            schema \(text) NOT NULL, entity \(text) NOT NULL, record_key \(text) NOT NULL, refused \(text),
                            PRIMARY KEY (schema, entity, record_key)
                        );
                        CREATE TABLE IF NOT EXISTS schemagen_sync_client (
                            schema \(text) PRIMARY KEY, device \(text) NOT NULL, stamped_through \(integer) NOT NULL, acknowledged \(integer) NOT NULL,
                            outgoing \(text), outgoing_versions \(text), pull_cursor \(text), clock \(text), last_sync \(real), last_error \(text),
                            schema_version \(integer), sweep_since \(real)
                        );
                        """))
            if fillFromPending {
                // `WHERE true`: SQLite reads an upsert after INSERT ... SELECT only past a WHERE.
                try Self.createIfMissing(
                    database,
                    "INSERT INTO schemagen_sync_unshared (schema, entity, record_key) SELECT schema, entity, record_key FROM schemagen_sync_pending WHERE true"
                        + database.dialect.onConflict(nil, set: nil))
            }
        } catch {
            throw .database(error)
        }
    }

    /// The client's progress; nil before its first sync.
    package func syncClientRow() throws(StoreError) -> SyncClientRow? {
        let rows = try query(
            "SELECT device, stamped_through, acknowledged, outgoing, outgoing_versions, pull_cursor, clock, last_sync, last_error, schema_version, sweep_since FROM schemagen_sync_client WHERE schema = \(value: .text(schema.name))"
        )
        guard let row = rows.first, row.count == 11, case .text(let device) = row[0], case .integer(let stamped) = row[1], case .integer(let acknowledged) = row[2] else { return nil }
        func text(_ value: StoredValue) -> String? { if case .text(let text) = value { text } else { nil } }
        var client = SyncClientRow(device: device)
        client.stampedThrough = stamped
        client.acknowledged = acknowledged
        client.outgoing = text(row[3])
        client.outgoingVersions = text(row[4])
        client.pullCursor = text(row[5])
        client.clock = text(row[6])
        client.lastSync = row[7] == .null ? nil : Self.date(row[7])
        client.lastError = text(row[8])
        if case .integer(let version) = row[9] { client.schemaVersion = Int(version) }
        client.sweepSince = row[10] == .null ? nil : Self.date(row[10])
        return client
    }

    /// Forgets a sync client that never exchanged anything with a server (its first push
    /// refused, say, for a device id another user holds): its progress, its pending records and
    /// the states it stamped, so that it begins again under another id.
    package func forgetUnusedSyncClient() throws(StoreError) {
        try write { () throws(StoreError) in
            for table in ["schemagen_sync_client", "schemagen_sync_pending", "schemagen_sync_unshared", "schemagen_sync_records"] {
                _ = try query("DELETE FROM \(identifier: table) WHERE schema = \(value: .text(schema.name))")
            }
        }
    }

    /// Stores the client's progress, inside the transaction that made it.
    package func writeSyncClientRow(_ row: SyncClientRow) throws(StoreError) {
        try requireTransaction("a sync client's progress")
        func text(_ value: String?) -> StoredValue { value.map(StoredValue.text) ?? .null }
        let values: [StoredValue] = [
            .text(schema.name), .text(row.device), .integer(row.stampedThrough), .integer(row.acknowledged), text(row.outgoing), text(row.outgoingVersions), text(row.pullCursor),
            text(row.clock), row.lastSync.map { .real($0.timeIntervalSince1970) } ?? .null, text(row.lastError),
            row.schemaVersion.map { .integer(Int64($0)) } ?? .null, row.sweepSince.map { .real($0.timeIntervalSince1970) } ?? .null,
        ]
        try upsert(
            "schemagen_sync_client",
            ["schema", "device", "stamped_through", "acknowledged", "outgoing", "outgoing_versions", "pull_cursor", "clock", "last_sync", "last_error", "schema_version", "sweep_since"], values,
            key: 1)
    }

    /// The records changed on the device and not yet acknowledged, in the order they first changed.
    package func syncPending(limit: Int? = nil) throws(StoreError) -> [SyncPendingRow] {
        let bound: SQL = limit.map { " LIMIT \(value: .integer(Int64($0)))" } ?? ""
        let rows = try query(
            "SELECT entity, record_key, version, seen FROM schemagen_sync_pending WHERE schema = \(value: .text(schema.name)) ORDER BY position\(bound)")
        return rows.compactMap { row in
            guard row.count == 4, case .text(let entity) = row[0], case .text(let key) = row[1], case .integer(let version) = row[2] else { return nil }
            let seen: String? = if case .text(let seen) = row[3] { seen } else { nil }
            return SyncPendingRow(entity: entity, key: key, version: version, seen: seen)
        }
    }

    /// The seen clocks kept with a record's pending change (server-wins entities); nil when it
    /// has none or is not pending.
    package func syncPendingSeen(entity: String, key: String) throws(StoreError) -> String? {
        let rows = try query(
            "SELECT seen FROM schemagen_sync_pending WHERE schema = \(value: .text(schema.name)) AND entity = \(value: .text(entity)) AND record_key = \(value: .text(key))")
        if case .text(let seen)? = rows.first?.first { return seen }
        return nil
    }

    /// How many records are changed on the device and not yet acknowledged.
    package func syncPendingCount() throws(StoreError) -> Int {
        let rows = try query("SELECT count(*) FROM schemagen_sync_pending WHERE schema = \(value: .text(schema.name))")
        if case .integer(let count)? = rows.first?.first { return Int(count) }
        return 0
    }

    /// Notes a local change to a record: its version goes up, and its seen clocks are kept.
    package func markSyncPending(entity: String, key: String, seen: String?) throws(StoreError) {
        try requireTransaction("a pending sync change")
        let values: [StoredValue] = [.text(schema.name), .text(entity), .text(key), .integer(1), seen.map(StoredValue.text) ?? .null]
        // In the order records first changed: a list pushed before the items that point to it.
        let dialect = database.dialect
        let assignments: [SQL] = ["version = schemagen_sync_pending.version + 1", "seen = " + dialect.proposed("seen")]
        _ = try query(
            "INSERT INTO schemagen_sync_pending (schema, entity, record_key, version, seen, position) VALUES (\(SQL.parameters(values)), (SELECT coalesce(max(position), 0) + 1 FROM schemagen_sync_pending))"
                + dialect.onConflict(["schema", "entity", "record_key"], set: assignments))
    }

    /// Forgets a pending change the server acknowledged, unless it changed again since (its
    /// version moved on).
    package func clearSyncPending(entity: String, key: String, version: Int64) throws(StoreError) {
        try requireTransaction("a pending sync change")
        _ = try query(
            "DELETE FROM schemagen_sync_pending WHERE schema = \(value: .text(schema.name)) AND entity = \(value: .text(entity)) AND record_key = \(value: .text(key)) AND version = \(value: .integer(version))"
        )
    }

    /// Notes records made on this device that the server has not accepted yet: they are kept
    /// when the device pulls everything again, though the server sends them not.
    package func markSyncUnshared(entity: String, keys: [String]) throws(StoreError) {
        try requireTransaction("a record the server has not accepted")
        let dialect = database.dialect
        for key in keys {
            let values: [StoredValue] = [.text(schema.name), .text(entity), .text(key)]
            _ = try query("INSERT INTO schemagen_sync_unshared (schema, entity, record_key) VALUES (\(SQL.parameters(values)))" + dialect.onConflict(nil, set: nil))
        }
    }

    /// Which of these records of `entity` the server has not accepted (made here, or refused).
    package func syncUnsharedKeys(entity: String, keys: [String]) throws(StoreError) -> Set<String> {
        try syncKeys(in: "schemagen_sync_unshared", entity: entity, keys: keys)
    }

    /// Which of these records of `entity` are changed here and not yet acknowledged.
    package func syncPendingKeys(entity: String, keys: [String]) throws(StoreError) -> Set<String> {
        try syncKeys(in: "schemagen_sync_pending", entity: entity, keys: keys)
    }

    /// Which of these records of `entity` a client table of records (by schema, entity and key)
    /// holds.
    private func syncKeys(in table: String, entity: String, keys: [String]) throws(StoreError) -> Set<String> {
        var found: Set<String> = []
        for start in stride(from: 0, to: keys.count, by: 500) {
            let chunk = keys[start..<min(start + 500, keys.count)].map { StoredValue.text($0) }
            let rows = try query(
                "SELECT record_key FROM \(identifier: table) WHERE schema = \(value: .text(schema.name)) AND entity = \(value: .text(entity)) AND record_key IN (\(SQL.parameters(chunk)))"
            )
            for row in rows { if case .text(let key) = row[0] { found.insert(key) } }
        }
        return found
    }

    /// The server accepted the record (`refused` nil: it is shared now), or refused it for good
    /// (the reason kept: it stays this device's own until the app changes it and the server
    /// accepts it).
    package func settleSyncUnshared(entity: String, key: String, refused: String?) throws(StoreError) {
        try requireTransaction("a record the server has not accepted")
        let condition: SQL = "schema = \(value: .text(schema.name)) AND entity = \(value: .text(entity)) AND record_key = \(value: .text(key))"
        if let refused {
            _ = try query("UPDATE schemagen_sync_unshared SET refused = \(value: .text(refused)) WHERE \(condition)")
        } else {
            _ = try query("DELETE FROM schemagen_sync_unshared WHERE \(condition)")
        }
    }

    /// Forgets a record the server deleted while the device was away: its pending change, its
    /// state and any note that it was unshared. The row itself is deleted by the caller.
    package func forgetSyncRecord(entity: String, key: String) throws(StoreError) {
        try requireTransaction("a record's sync state")
        let condition: SQL = "schema = \(value: .text(schema.name)) AND entity = \(value: .text(entity)) AND record_key = \(value: .text(key))"
        for table in ["schemagen_sync_pending", "schemagen_sync_unshared", "schemagen_sync_records"] {
            _ = try query("DELETE FROM \(identifier: table) WHERE \(condition)")
        }
    }

    /// The keys of `entity`'s rows whose state was not written since `since` (or that have
    /// none), and that the server has accepted (not unshared): after pulling everything again,
    /// the records the server no longer holds. Each comes with whether it is pending (changed
    /// here since the last push).
    package func syncKeysNotRefreshed(of entity: EntityDescriptor, keyColumn: String, since: Date) throws(StoreError) -> [(key: StoredValue, pending: Bool)] {
        let key: SQL = "lower(CAST(t.\(identifier: keyColumn) AS \(SQL(verbatim: database.dialect.columnType(.text)))))"
        let pending: SQL = "EXISTS (SELECT 1 FROM schemagen_sync_pending p WHERE p.schema = \(value: .text(schema.name)) AND p.entity = \(value: .text(entity.name)) AND p.record_key = \(key))"
        return try query(
            """
            SELECT t.\(identifier: keyColumn), CASE WHEN \(pending) THEN 1 ELSE 0 END FROM \(identifier: entity.table) t
            WHERE NOT EXISTS (SELECT 1 FROM schemagen_sync_records s WHERE s.schema = \(value: .text(schema.name))
            AND s.schema_version = \(value: .integer(Int64(schema.version))) AND s.entity = \(value: .text(entity.name)) AND s.record_key = \(key)
            AND s.updated_at >= \(value: .real(since.timeIntervalSince1970)))
            AND NOT EXISTS (SELECT 1 FROM schemagen_sync_unshared u WHERE u.schema = \(value: .text(schema.name)) AND u.entity = \(value: .text(entity.name)) AND u.record_key = \(key))
            """
        ).compactMap { row in row.count == 2 ? (row[0], row[1] == .integer(1)) : nil }
    }

    /// Files the pending changes of an entity, and its unshared records, under its new name:
    /// the app was updated to a version that renamed it.
    package func renameSyncPending(entity: String, to name: String) throws(StoreError) {
        try requireTransaction("a pending sync change")
        for table in ["schemagen_sync_pending", "schemagen_sync_unshared"] {
            _ = try query("UPDATE \(identifier: table) SET entity = \(value: .text(name)) WHERE schema = \(value: .text(schema.name)) AND entity = \(value: .text(entity))")
        }
    }

    /// Inserts a row of `table`, or where its first `key` columns are taken, sets the others
    /// but `keeping` to the values given.
    private func upsert(_ table: String, _ columns: [String], _ values: [StoredValue], key: Int, keeping: Set<String> = []) throws(StoreError) {
        let dialect = database.dialect
        let assignments = columns.dropFirst(key).filter { !keeping.contains($0) }.map { column -> SQL in "\(identifier: column) = " + dialect.proposed(column) }
        _ = try query(
            "INSERT INTO \(identifier: table) (\(SQL.identifiers(columns))) VALUES (\(SQL.parameters(values)))" + dialect.onConflict(Array(columns.prefix(key)), set: assignments))
    }

    private func requireTransaction(_ what: String) throws(StoreError) {
        guard depth > 0 else { throw .notSupported("\(what) is written inside a transaction") }
    }

    private static func date(_ value: StoredValue) -> Date {
        switch value {
        case .real(let seconds): Date(timeIntervalSince1970: seconds)
        case .integer(let seconds): Date(timeIntervalSince1970: Double(seconds))
        default: Date(timeIntervalSince1970: 0)
        }
    }
}
