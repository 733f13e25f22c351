import Foundation
import PersistentStoreCore
import PostgresKit
import SQLDialects
import SchemaMetadata

/// The standbys a store reads from (`PostgresSettings.readURL`): a connection of its own, made
/// when first needed, and what is known of how far it replayed.
final class ReplicaReads {
    let url: String
    /// How long a read waits for the standby to replay this store's writes before it goes to
    /// the primary instead.
    let wait: Double
    var connection: PostgresConnection?
    /// After a failed connection, the time before which none is tried again.
    var retryAt = Date.distantPast
    /// The WAL position just past this store's last commit: a standby that replayed it has
    /// every write of this store.
    var lastCommit: UInt64?
    /// A position the standby is known to have replayed.
    var replayed: UInt64 = 0

    init(url: String, wait: Double) {
        self.url = url
        self.wait = wait
    }

    /// `16/B374D848` as a number.
    static func position(_ text: String) -> UInt64? {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16) else { return nil }
        return high << 32 | low
    }
}

extension PostgresStoreDatabase {
    /// The standby connection the next read goes to, or nil for the primary: inside a write
    /// transaction, before the store is open, when reads must see the primary, when no standby
    /// answers, and when the standby has not replayed this store's writes within the wait.
    func replicaForRead() throws(DatabaseFailure) -> PostgresConnection? {
        guard let replicas else { return nil }
        if readingOnReplica { return replicas.connection }
        guard replicaReadsEnabled, !inTransaction, readSource != .primary else { return nil }
        guard let replica = replicaConnection(replicas) else { return nil }
        guard readSource == .ownWrites, let target = replicas.lastCommit, replicas.replayed < target else { return replica }
        // Read-your-writes: wait (briefly) for the standby to replay this store's last commit.
        let deadline = Date().addingTimeInterval(replicas.wait)
        while true {
            guard case .text(let text)? = (try? replica.query("SELECT pg_last_wal_replay_lsn()::text"))?.first?.first, let replayed = ReplicaReads.position(text) else {
                dropReplica(replicas)
                return nil
            }
            replicas.replayed = replayed
            if replayed >= target { return replica }
            if Date() >= deadline { return nil }
            usleep(2_000)
        }
    }

    /// The standby's connection, made when first needed; nil (and not tried again for a
    /// second) when none answers.
    private func replicaConnection(_ replicas: ReplicaReads) -> PostgresConnection? {
        if let connection = replicas.connection { return connection }
        guard Date() >= replicas.retryAt else { return nil }
        do {
            let connection = try PostgresConnection(replicas.url, applicationName: "schemagen store reads", networkTimeout: Self.networkTimeout)
            if !transactionPooler {
                try connection.execute("SET TIME ZONE 'UTC'")
                if let searchPath { try connection.execute(searchPath) }
            }
            connection.preparesStatements = !transactionPooler
            replicas.connection = connection
            replicas.replayed = 0
            return connection
        } catch {
            replicas.retryAt = Date().addingTimeInterval(1)
            return nil
        }
    }

    private func dropReplica(_ replicas: ReplicaReads) {
        replicas.connection = nil
        replicas.retryAt = Date().addingTimeInterval(1)
    }

    /// Runs `body` on the standby. A standby that went away is dropped: a read outside a
    /// transaction then fails as a lost connection, which the store runs again (on the primary,
    /// until the standby answers again).
    func onReplica<T>(_ replica: PostgresConnection, _ body: () throws(PostgresError) -> T) throws(DatabaseFailure) -> T {
        do {
            return try body()
        } catch {
            guard error.meansServerUnavailable, let replicas else { throw error.failure(database: replicas.map { ConnectionURL.redacted($0.url) } ?? label) }
            dropReplica(replicas)
            if readingOnReplica {
                readingOnReplica = false
                inTransaction = false
            }
            var failure = error.failure(database: ConnectionURL.redacted(replicas.url))
            failure.kind = .connectionLost
            throw failure
        }
    }

    /// Ends a read transaction on the standby.
    func endReplicaTransaction(_ statement: String) throws(DatabaseFailure) {
        defer {
            readingOnReplica = false
            inTransaction = false
        }
        guard let replica = replicas?.connection else { return }
        try onReplica(replica) { () throws(PostgresError) in try replica.execute(statement) }
    }

    /// After a write transaction committed: where the primary's WAL is now, which a standby
    /// must have replayed for a read to see this store's writes.
    func noteCommit() {
        guard let replicas else { return }
        if case .text(let text)? = (try? connection.query("SELECT pg_current_wal_lsn()::text"))?.first?.first, let position = ReplicaReads.position(text) {
            replicas.lastCommit = position
        } else {
            // Not known: the standby cannot be shown to have it, so reads go to the primary.
            replicas.lastCommit = .max
        }
    }
}
