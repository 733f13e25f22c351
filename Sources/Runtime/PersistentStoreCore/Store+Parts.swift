import Foundation
import SQLDialects

// The state a store keeps between calls, in parts that each own theirs: the store holds one
// of each and delegates, so no type carries more than a handful of mutable properties.

extension Store {
    /// Which upsert statement a write needs: one per table, key presence and column count.
    struct UpsertShape: Hashable {
        let table: String
        let hasKey: Bool
        let columnCount: Int
    }

    /// `.update(only:)`'s upserts, by row shape and the columns they set.
    struct UpdateOnlyShape: Hashable {
        let row: UpsertShape
        let only: Set<String>
    }

    /// Statements and write plans by shape, built on first use and kept: every later write of
    /// the same shape reuses them.
    struct StatementCache {
        /// Upsert SQL by entity and column shape.
        var upserts: [UpsertShape: UpsertStatements] = [:]
        /// `directWrite`'s plans: a `DirectWrite<M>` by the model type `M`.
        var directWrites: [ObjectIdentifier: AnyObject] = [:]
        var keyLookups: [UpsertShape: [KeyLookup]] = [:]
        var updateOnly: [UpdateOnlyShape: UpsertStatements] = [:]
        /// The stored row by one unique key, as a model: by the table and the key's columns.
        var storedModelLookups: [[String]: RenderedSQL] = [:]
        /// The stored rows by one single-column unique key, `lookupChunk` values at once.
        var storedModelsLookups: [[String]: RenderedSQL] = [:]
        /// The table whose plain insert last hit a taken key or unique value, and the rows
        /// written to it since: while conflicts are recent, writes go straight to the upsert.
        var lastConflict: (table: String, rowsSince: Int)?
        /// `multiRowInsert`'s statement by table, suffix and columns, for the row count it was
        /// last asked for.
        var multiRowInserts: [[String]: (rows: Int, statement: RenderedSQL)] = [:]
        /// Row-codec column order by table, computed once.
        var rowColumns: [String: [String]] = [:]
        /// `prepareRow`'s plan by table, for the column list it last saw.
        var rowPlans: [String: RowPlan] = [:]
    }

    /// External files written, and marked for removal, in the open transaction: kept or undone
    /// when it ends (`settleExternalFiles`).
    struct ExternalFileChanges {
        var created: [URL] = []
        var removed: [URL] = []
    }

    /// Encryption's state across transactions.
    struct SealingState {
        /// Whether `schemagen_key_check` holds the newest key (the one values are sealed with).
        var newestKeyRecorded = false
        /// Whether the open transaction sealed a value (under the newest key).
        var sealedInTransaction = false
        /// The next implicit key handed to an encrypted row, by table, for the open transaction.
        var implicitKeys: [String: Int64] = [:]
    }
}

/// The open write transaction's way to its COMMIT, as states and the events that move it, so
/// that a server lost at any moment leaves a state that says what to do: nothing was sent (run
/// it again), or COMMIT was sent and not answered (look its id up on the new primary).
struct CommitTracker: Equatable {
    enum State: Equatable {
        /// No write transaction has begun since the store opened, or a read recovered.
        case idle
        /// A write transaction is open; `id` is written with it where a server can fail over.
        case open(id: String?)
        /// COMMIT was sent with history token `token`, and not yet answered.
        case sent(id: String?, token: Int64?)
        /// COMMIT took effect (answered, or found on a new primary).
        case committed(token: Int64?)
    }

    private(set) var state = State.idle

    /// A write transaction began.
    mutating func began(id: String?) { state = .open(id: id) }

    /// COMMIT is about to be sent; `token` is the history token it carries.
    mutating func sending(token: Int64?) {
        guard case .open(let id) = state else { return }
        state = .sent(id: id, token: token)
    }

    /// COMMIT took effect; its token, for the subscribers.
    mutating func committed() -> Int64? {
        let token: Int64?
        switch state {
        case .sent(_, let sent): token = sent
        case .committed(let done): token = done
        case .idle, .open: token = nil
        }
        state = .committed(token: token)
        return token
    }

    /// Forgets the transaction: a read that recovered from a lost server has none.
    mutating func reset() { state = .idle }

    /// The id the open transaction records, where a server can fail over.
    var openID: String? {
        if case .open(let id) = state { return id }
        return nil
    }

    /// Whether a COMMIT went out unanswered: its outcome is unknown until looked up.
    var outcomeUnknown: Bool {
        if case .sent = state { return true }
        return false
    }

    /// The id of a COMMIT that went out unanswered.
    var sentID: String? {
        if case .sent(let id, _) = state { return id }
        return nil
    }
}
