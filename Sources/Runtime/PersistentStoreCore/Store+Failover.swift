import Foundation
import SQLDialects
import SchemaMetadata

/// A server that can be replaced under the store: a primary that dies or is demoted while a
/// standby takes over (PostgreSQL behind Patroni or pg_auto_failover). The adapter connects
/// again through its URL, to whichever server is the primary now; the store waits for one,
/// runs again what had not reached COMMIT, and looks up whether a COMMIT that was sent but not
/// answered took effect, by an id the transaction wrote.
public protocol ServerFailover: StoreDatabase {
    /// The server the connection reached, as messages name it (`db2:5432`).
    var connectedServer: String { get }
    /// How long a call waits for a writable primary after the server was lost; zero: it fails
    /// at once (PostgreSQL's `PostgresSettings.failoverTimeout`).
    var failoverTimeout: Duration { get }
    /// One attempt to connect again, to a server that takes writes; throws when none answers.
    func reconnect() throws(DatabaseFailure)
    /// Makes sure the table of commit ids exists (once, when the store opens).
    func prepareCommitRecords() throws(DatabaseFailure)
    /// Writes `id` in the open transaction: it is there after a failover if, and only if, the
    /// transaction committed (a random id: a new primary may hand out transaction ids again).
    func recordCommit(_ id: String) throws(DatabaseFailure)
    /// Whether the transaction that wrote `id` committed.
    func wasCommitted(_ id: String) throws(DatabaseFailure) -> Bool
}

extension ServerFailover {
    /// An adapter that does not say waits a minute, as every store did before adapters said.
    public var failoverTimeout: Duration { .seconds(60) }
}

/// Waits for a writable primary after the store lost its server, reporting and counting what it
/// does. Shared by the store and its `FailoverDatabase`, from the store's actor.
final class FailoverRecovery: @unchecked Sendable {
    let server: any ServerFailover
    /// How long a call waits for a primary before it fails (`PostgresSettings.failoverTimeout`).
    let timeout: Double
    private let events: (@Sendable (StoreEvent) -> Void)?
    private let lock = NSLock()
    private var counts = StoreCounters()

    init(server: any ServerFailover, timeout: Double, events: (@Sendable (StoreEvent) -> Void)?) {
        self.server = server
        self.timeout = timeout
        self.events = events
    }

    /// What happened since the store opened: reconnections, retries after a failover, outcome
    /// checks.
    var counters: StoreCounters { lock.withLock { counts } }

    func report(_ event: StoreEvent) {
        lock.withLock {
            switch event.kind {
            case .reconnected: counts.reconnects += 1
            case .failoverRetry: counts.retries += 1
            case .outcomeChecked: counts.outcomeChecks += 1
            case .noWritablePrimary: counts.retriesExhausted += 1
            default: break
            }
        }
        events?(event)
    }

    /// Connects again, with pauses growing from 0.1 s to 2 s, until a primary answers or
    /// `timeout` seconds passed since `start`; nil once connected, else the failure to report.
    func reconnect(after failure: DatabaseFailure, operation: String, since start: Date) -> DatabaseFailure? {
        let began = Date()
        let lostServer = server.connectedServer
        // A call whose server keeps going away (a connection cut each time it runs) gives up too.
        guard began.timeIntervalSince(start) < timeout else {
            let message =
                "the server was lost again and again for \(Int(timeout.rounded())) s while this call ran (the last time: \(failure.message)); allow a longer Configuration.postgres.failoverTimeout if the cluster is still settling"
            let gaveUp = DatabaseFailure(database: failure.database, message: message, code: failure.code, kind: .connectionLost)
            report(StoreEvent(kind: .noWritablePrimary, operation: operation, attempt: 1, failure: gaveUp, server: lostServer))
            return gaveUp
        }
        report(StoreEvent(kind: .reconnecting, operation: operation, attempt: 1, failure: failure, server: lostServer))
        var pause = 0.1
        var attempt = 0
        var last = failure
        while true {
            attempt += 1
            do {
                try server.reconnect()
                report(
                    StoreEvent(
                        kind: .reconnected, operation: operation, attempt: attempt, failure: nil, server: server.connectedServer,
                        duration: .seconds(Date().timeIntervalSince(began))))
                return nil
            } catch {
                last = error
            }
            let remaining = timeout - Date().timeIntervalSince(start)
            guard remaining > 0 else {
                let message =
                    "no writable primary answered within \(Int(timeout.rounded())) s of losing \(lostServer) (\(attempt) attempts; the last: \(last.message)); check the cluster (patronictl list), or allow a longer Configuration.postgres.failoverTimeout"
                let gaveUp = DatabaseFailure(database: failure.database, message: message, code: last.code, kind: .connectionLost)
                report(StoreEvent(kind: .noWritablePrimary, operation: operation, attempt: attempt, failure: gaveUp, server: lostServer))
                return gaveUp
            }
            usleep(UInt32(min(pause, remaining) * 1_000_000))
            pause = min(pause * 2, 2)
        }
    }
}

/// The adapter as the store sees it when its server can fail over: a statement outside a
/// transaction (a read, a BEGIN) that meets a lost server waits for the new primary and runs
/// again, so no error reaches the app; inside a transaction the failure goes up to the store,
/// which runs the whole transaction again (or, past its COMMIT, checks the outcome).
final class FailoverDatabase: StoreDatabase, VersionedSearchPath {
    let inner: any StoreDatabase
    let recovery: FailoverRecovery

    init(_ inner: any StoreDatabase, recovery: FailoverRecovery) {
        self.inner = inner
        self.recovery = recovery
    }

    var dialect: any SQLDialect { inner.dialect }
    var label: String { inner.label }

    /// Runs `body`; outside a transaction, a lost server is waited for and `body` runs again.
    private func surviving<T>(_ operation: String, _ body: () throws(DatabaseFailure) -> T) throws(DatabaseFailure) -> T {
        let start = Date()
        var attempt = 0
        while true {
            attempt += 1
            let outside = !inner.isInTransaction
            do {
                return try body()
            } catch {
                guard outside, error.kind == .connectionLost else { throw error }
                recovery.report(StoreEvent(kind: .failoverRetry, operation: operation, attempt: attempt, failure: error, server: recovery.server.connectedServer))
                if let gaveUp = recovery.reconnect(after: error, operation: operation, since: start) { throw gaveUp }
            }
        }
    }

    func execute(_ script: SQL) throws(DatabaseFailure) { try surviving("statement") { () throws(DatabaseFailure) in try inner.execute(script) } }

    /// As the adapter runs it, where it reads through a version's views (`VersionedSearchPath`).
    func executeInTableSchema(_ script: SQL) throws(DatabaseFailure) {
        try surviving("statement") { () throws(DatabaseFailure) in
            if let versioned = inner as? any VersionedSearchPath { try versioned.executeInTableSchema(script) } else { try inner.execute(script) }
        }
    }

    func query(_ statement: RenderedSQL, _ arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> [[StoredValue]] {
        try surviving("query") { () throws(DatabaseFailure) in try inner.query(statement, arguments) }
    }

    func firstInteger(_ statement: RenderedSQL, values arguments: ArraySlice<StoredValue>) throws(DatabaseFailure) -> Int64? {
        try surviving("query") { () throws(DatabaseFailure) in try inner.firstInteger(statement, values: arguments) }
    }

    /// Rows already handed to `body` are not handed again: only a failure before the first row
    /// is survived.
    func forEachRow(_ statement: RenderedSQL, _ arguments: [StoredValue], ownStatement: Bool, _ body: (inout [StoredValue]) throws -> Void) throws {
        var delivered = false
        let start = Date()
        var attempt = 0
        while true {
            attempt += 1
            let outside = !inner.isInTransaction
            do {
                return try inner.forEachRow(statement, arguments, ownStatement: ownStatement) { row in
                    delivered = true
                    try body(&row)
                }
            } catch {
                guard outside, !delivered, let failure = error as? DatabaseFailure, failure.kind == .connectionLost else { throw error }
                recovery.report(StoreEvent(kind: .failoverRetry, operation: "query", attempt: attempt, failure: failure, server: recovery.server.connectedServer))
                if let gaveUp = recovery.reconnect(after: failure, operation: "query", since: start) { throw gaveUp }
            }
        }
    }

    func beginWriteTransaction(serializable: Bool) throws(DatabaseFailure) {
        try surviving("begin") { () throws(DatabaseFailure) in try inner.beginWriteTransaction(serializable: serializable) }
    }

    func beginReadTransaction() throws(DatabaseFailure) {
        try surviving("begin") { () throws(DatabaseFailure) in try inner.beginReadTransaction() }
    }

    /// Never run twice: a second COMMIT would find no transaction and write nothing.
    func commitTransaction() throws(DatabaseFailure) { try inner.commitTransaction() }
    func rollbackTransaction() throws(DatabaseFailure) { try inner.rollbackTransaction() }
    var isInTransaction: Bool { inner.isInTransaction }
    var changedRowCount: Int { inner.changedRowCount }

    func highestGeneratedKey(of table: String) throws(DatabaseFailure) -> Int64 {
        try surviving("query") { () throws(DatabaseFailure) in try inner.highestGeneratedKey(of: table) }
    }

    func tableExists(_ table: String) throws(DatabaseFailure) -> Bool {
        try surviving("query") { () throws(DatabaseFailure) in try inner.tableExists(table) }
    }

    func columns(of table: String) throws(DatabaseFailure) -> [(name: String, type: String)] {
        try surviving("query") { () throws(DatabaseFailure) in try inner.columns(of: table) }
    }

    func prepareForUse() throws(DatabaseFailure) { try inner.prepareForUse() }
}

extension Store {
    /// The database as messages name it: a URL without its password, and for a multi-host URL
    /// the server it reached.
    var databaseLabel: String { database.label }

    /// What a write transaction that met a lost server does next: fails, once no primary
    /// answered within the failover timeout; else, connected again, runs again (false), or,
    /// when its COMMIT was sent and the new primary has its id, counts as committed (true).
    func recoverWrite(after failure: DatabaseFailure, operation: String, attempt: Int, since start: Date) throws(StoreError) -> Bool {
        guard let recovery = failoverRecovery else { throw .database(failure) }
        let outcomeUnknown = self.commit.outcomeUnknown
        recovery.report(StoreEvent(kind: .failoverRetry, operation: operation, attempt: attempt, failure: failure, server: recovery.server.connectedServer))
        if let gaveUp = recovery.reconnect(after: failure, operation: operation, since: start) {
            throw .noWritablePrimary(waited: .seconds(recovery.timeout), outcomeKnown: !outcomeUnknown, last: gaveUp)
        }
        guard outcomeUnknown, let id = self.commit.sentID else { return false }
        // The COMMIT went out and no answer came back: the new primary has the id if, and only
        // if, it committed (synchronous replication keeps every acknowledged commit).
        let committed: Bool
        do { committed = try recovery.server.wasCommitted(id) } catch { return try recoverWrite(after: error, operation: operation, attempt: attempt + 1, since: start) }
        recovery.report(
            StoreEvent(kind: .outcomeChecked, operation: operation, attempt: attempt, failure: failure, server: recovery.server.connectedServer, committed: committed))
        return committed
    }
}
