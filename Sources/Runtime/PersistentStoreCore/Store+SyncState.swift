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

    package init(device: String, user: String, schemaVersion: Int, sequence: Int64, answer: String?, firstSeen: Date, lastSeen: Date) {
        self.device = device
        self.user = user
        self.schemaVersion = schemaVersion
        self.sequence = sequence
        self.answer = answer
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
    }
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
    }

    /// The stored states of these records of `entity`, by key; a record without one is missing.
    package func syncStates(entity: String, keys: [String]) throws(StoreError) -> [String: String] {
        guard !keys.isEmpty else { return [:] }
        var states: [String: String] = [:]
        // In chunks: a statement's parameters are bounded (SQLite's default is 32,766).
        for start in stride(from: 0, to: keys.count, by: 500) {
            let chunk = keys[start..<min(start + 500, keys.count)].map { StoredValue.text($0) }
            let rows = try query(
                "SELECT record_key, state FROM schemagen_sync_records WHERE schema = \(value: .text(schema.name)) AND entity = \(value: .text(entity)) AND record_key IN (\(SQL.parameters(chunk)))"
            )
            for row in rows {
                if case .text(let key) = row[0], case .text(let state) = row[1] { states[key] = state }
            }
        }
        return states
    }

    /// Stores a record's state, inside the transaction that writes the record.
    package func writeSyncState(entity: String, key: String, state: String) throws(StoreError) {
        try requireTransaction("a sync state")
        let values: [StoredValue] = [.text(schema.name), .text(entity), .text(key), .text(state)]
        _ = try query(
            "INSERT INTO schemagen_sync_records (schema, entity, record_key, state) VALUES (\(SQL.parameters(values))) ON CONFLICT (schema, entity, record_key) DO UPDATE SET state = excluded.state"
        )
    }

    /// The device, as last seen; nil before its first push or pull.
    package func syncDevice(_ device: String) throws(StoreError) -> SyncDeviceRow? {
        try syncDevices(where: " AND device = \(value: .text(device))").first
    }

    /// Every device seen, oldest first.
    package func syncDevices() throws(StoreError) -> [SyncDeviceRow] {
        try syncDevices(where: "")
    }

    private func syncDevices(where condition: SQL) throws(StoreError) -> [SyncDeviceRow] {
        let rows = try query(
            "SELECT device, user_id, schema_version, sequence, answer, first_seen, last_seen FROM schemagen_sync_devices WHERE schema = \(value: .text(schema.name))\(condition) ORDER BY first_seen, device"
        )
        return rows.compactMap { row in
            guard row.count == 7, case .text(let device) = row[0], case .text(let user) = row[1], case .integer(let version) = row[2], case .integer(let sequence) = row[3]
            else { return nil }
            let answer: String? = if case .text(let text) = row[4] { text } else { nil }
            return SyncDeviceRow(
                device: device, user: user, schemaVersion: Int(version), sequence: sequence, answer: answer, firstSeen: Self.date(row[5]), lastSeen: Self.date(row[6]))
        }
    }

    /// Stores what is known of a device, inside the transaction that applies its push.
    package func writeSyncDevice(_ row: SyncDeviceRow) throws(StoreError) {
        try requireTransaction("a sync device")
        let values: [StoredValue] = [
            .text(schema.name), .text(row.device), .text(row.user), .integer(Int64(row.schemaVersion)), .integer(row.sequence), row.answer.map(StoredValue.text) ?? .null,
            .real(row.firstSeen.timeIntervalSince1970), .real(row.lastSeen.timeIntervalSince1970),
        ]
        _ = try query(
            """
            INSERT INTO schemagen_sync_devices (schema, device, user_id, schema_version, sequence, answer, first_seen, last_seen) VALUES (\(SQL.parameters(values)))
            ON CONFLICT (schema, device) DO UPDATE SET user_id = excluded.user_id, schema_version = excluded.schema_version, sequence = excluded.sequence,
            answer = excluded.answer, last_seen = excluded.last_seen
            """
        )
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
