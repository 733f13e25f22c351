import Foundation
import MigrationFiles
import SQLDialects
import SchemaMetadata

// Records that left a user's scope (`schemagen_sync_departures`): noted by whichever read of
// the sync server first stamps the change that moved them, and read by each pull of the user
// they left, so that every device of that user is told to remove them.
extension Store {
    /// Creates the table where it is missing.
    package func prepareSyncDepartures() throws(StoreError) {
        do throws(DatabaseFailure) {
            if try !database.tableExists("schemagen_sync_departures") {
                try Self.createIfMissing(database, StoreTableMigrations.syncDepartureTable(database.dialect))
            }
        } catch {
            throw .database(error)
        }
    }

    /// Notes that these records of `entity` left `user`'s scope, now, by the history transaction
    /// `token`, each move stamped with the clock given (its text). A note of a later move stays.
    package func noteSyncDepartures(entity: String, moves: [(key: String, clock: String?)], user: String, token: Int64) throws(StoreError) {
        guard !moves.isEmpty else { return }
        try requireSyncTransaction()
        let dialect = database.dialect
        let now = StoredValue.real(Date().timeIntervalSince1970)
        let later: SQL = "\(dialect.proposed("history_token")) >= schemagen_sync_departures.history_token"
        let kept = ["left_at", "history_token", "moved_clock"].map { column -> SQL in
            "\(identifier: column) = CASE WHEN " + later + " THEN " + dialect.proposed(column) + " ELSE schemagen_sync_departures.\(identifier: column) END"
        }
        for start in stride(from: 0, to: moves.count, by: 500) {
            let tuples = moves[start..<min(start + 500, moves.count)].map { move -> SQL in
                let values: [StoredValue] = [
                    .text(schema.name), .integer(Int64(schema.version)), .text(entity), .text(move.key), .text(user), now, .integer(token), move.clock.map(StoredValue.text) ?? .null,
                ]
                return "(\(SQL.parameters(values)))"
            }
            _ = try query(
                "INSERT INTO schemagen_sync_departures (schema, schema_version, entity, record_key, user_id, left_at, history_token, moved_clock) VALUES \(SQL.list(tuples))"
                    + dialect.onConflict(["schema", "schema_version", "entity", "record_key", "user_id"], set: kept))
        }
    }

    /// Which of these records of `entity` left `user`'s scope by a transaction after history
    /// token `after`, each with the clock its move was stamped with (its text, nil if none).
    package func syncDepartures(entity: String, keys: [String], user: String, after: Int64) throws(StoreError) -> [String: String?] {
        var left: [String: String?] = [:]
        for start in stride(from: 0, to: keys.count, by: 500) {
            let chunk = keys[start..<min(start + 500, keys.count)].map { StoredValue.text($0) }
            let rows = try query(
                """
                SELECT record_key, moved_clock FROM schemagen_sync_departures WHERE schema = \(value: .text(schema.name))
                AND schema_version = \(value: .integer(Int64(schema.version))) AND entity = \(value: .text(entity))
                AND user_id = \(value: .text(user)) AND history_token > \(value: .integer(after)) AND record_key IN (\(SQL.parameters(chunk)))
                """
            )
            for row in rows {
                guard row.count == 2, case .text(let key) = row[0] else { continue }
                left[key] = if case .text(let clock) = row[1] { clock } else { String?.none }
            }
        }
        return left
    }

    /// Which of these records of `entity` left a user other than `user` by a transaction after
    /// history token `after` (they came to `user` from elsewhere).
    package func syncDepartures(entity: String, keys: [String], otherThan user: String, after: Int64) throws(StoreError) -> Set<String> {
        var found: Set<String> = []
        for start in stride(from: 0, to: keys.count, by: 500) {
            let chunk = keys[start..<min(start + 500, keys.count)].map { StoredValue.text($0) }
            let rows = try query(
                """
                SELECT DISTINCT record_key FROM schemagen_sync_departures WHERE schema = \(value: .text(schema.name))
                AND schema_version = \(value: .integer(Int64(schema.version))) AND entity = \(value: .text(entity))
                AND user_id <> \(value: .text(user)) AND history_token > \(value: .integer(after)) AND record_key IN (\(SQL.parameters(chunk)))
                """
            )
            for row in rows { if case .text(let key) = row[0] { found.insert(key) } }
        }
        return found
    }

    /// Removes the notes made before `before` (with the tombstones: a device not caught up
    /// since starts over, and its sweep removes what it no longer gets); how many.
    package func purgeSyncDepartures(before: Date) throws(StoreError) -> Int {
        try requireSyncTransaction()
        let condition: SQL = "schema = \(value: .text(schema.name)) AND left_at < \(value: .real(before.timeIntervalSince1970))"
        let count = try query("SELECT count(*) FROM schemagen_sync_departures WHERE \(condition)").first?.first
        _ = try query("DELETE FROM schemagen_sync_departures WHERE \(condition)")
        if case .integer(let number)? = count { return Int(number) }
        return 0
    }

    private func requireSyncTransaction() throws(StoreError) {
        guard depth > 0 else { throw .notSupported("a note of a record that left a scope is written inside a transaction") }
    }
}
