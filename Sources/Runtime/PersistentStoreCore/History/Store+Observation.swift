import Foundation
import SchemaMetadata

/// Who is listening, and how far each has got.
struct ObservationState {
    struct TransactionSubscriber {
        var position: Int64
        let author: AuthorFilter
        let continuation: AsyncThrowingStream<HistoryTransaction, Error>.Continuation
    }

    struct QuerySubscriber {
        /// The entities the query reads; nil when it cannot tell (every commit matters).
        let entities: Set<String>?
        let signal: AsyncStream<Void>.Continuation
    }

    /// Who listens: `changes()` streams and observed queries, by id.
    struct Subscribers {
        var transactions: [Int: TransactionSubscriber] = [:]
        var queries: [Int: QuerySubscriber] = [:]
        var nextID = 0
    }

    /// How many times observed queries ran, were woken to run, and deliveries happened: for
    /// tests that check nothing runs while nothing changes (a delivery wakes queries before it
    /// returns, so after it a test can tell that none was woken).
    struct Counts {
        var queryRuns = 0
        var queryWakeUps = 0
        var deliveries = 0
        /// Transactions handed to `changes()` streams, and the newest token a delivery read.
        var transactionsYielded = 0
        var newestTokenRead: Int64 = 0
    }

    /// Retention bookkeeping (see `pruneHistory`).
    struct Retention {
        var commitsSincePrune = 0
        var lastAgePrune = Date.distantPast
    }

    var subscribers = Subscribers()
    var counts = Counts()
    var retention = Retention()
    /// The newest history token query subscribers have been told about.
    var deliveredToken: Int64 = 0
    /// `PRAGMA data_version` when last looked at: a different value means another connection
    /// committed.
    var dataVersion: Int64 = 0
    var deliveryScheduled = false
    /// A commit of this store without history, not yet passed on.
    var unseenLocalCommit = false
    var watcher: (any CommitWatch)?
    /// The watcher woke the store since the last delivery: another connection may have committed
    /// (read where the engine has no commit counter).
    var watcherWoke = false
    /// How long delivery waits before trying again after the database could not be reached
    /// (grows to 2 s; 0 after a delivery that worked).
    var retryPause = 0.0

    var isEmpty: Bool { subscribers.transactions.isEmpty && subscribers.queries.isEmpty }
}

/// Observing changes: `changes()` streams committed transactions, `observe` reruns a query after
/// each commit that touches what it reads. Commits of other processes arrive through a watcher
/// of the database file (docs/runtime.md, "Observing changes").
extension Store {
    /// Every transaction committed after `token` (from now, when nil), by this store and by any
    /// other process writing through a store of this schema, in commit order, each once. The
    /// stream fails with `historyPruned` if history it has not delivered yet is pruned.
    ///
    ///     for try await transaction in try await store.changes() {
    ///         print("\(transaction.author ?? "someone") changed \(transaction.entities)")
    ///     }
    public func changes(after token: HistoryToken? = nil, author: AuthorFilter = .any) throws(StoreError) -> AsyncThrowingStream<HistoryTransaction, Error> {
        try requireHistoryForChanges()
        // "From now" is the primary's now.
        let start: Int64
        if let token { start = token.value } else { start = try reading(from: .primary) { () throws(StoreError) in try currentHistoryToken().value } }
        let (stream, continuation) = AsyncThrowingStream<HistoryTransaction, Error>.makeStream()
        try? reading(from: .primary) { () throws(StoreError) in prepareFirstSubscriber() }
        let id = observation.subscribers.nextID
        observation.subscribers.nextID += 1
        observation.subscribers.transactions[id] = .init(position: start, author: author, continuation: continuation)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeSubscriber(id) }
        }
        startWatching()
        if token != nil { scheduleDelivery() }
        return stream
    }

    private func requireHistoryForChanges() throws(StoreError) {
        guard recordsHistory else { throw .historyDisabled(schema.name) }
    }

    /// The models matching a predicate, now and again after every commit (of any process) that
    /// touches their table. Bursts of commits coalesce into one new result; a consumer that
    /// falls behind gets the newest. Cancelling the consuming task ends the observation.
    ///
    ///     for try await delayed in await store.observe(Flight.self, where: #Predicate { $0.status == "Delayed" }) {
    ///         show(delayed)   // the current results first, then again after each change that touches flights
    ///     }
    public func observe<M: PersistentModel>(
        _ type: M.Type, where predicate: Predicate<M>? = nil, sortBy: [SortDescriptor<M>] = [], limit: Int? = nil
    ) -> AsyncThrowingStream<[M], Error> {
        let box = UncheckedSendable((predicate, sortBy))
        return observe(entities: [M.entity.name]) { store throws(StoreError) in
            try store.fetch(M.self, where: box.value.0, sortBy: box.value.1, limit: limit)
        }
    }

    /// The same for a predicate that follows relationships: it reruns after commits to any
    /// table it reads, joined ones included.
    public func observe<M: Joinable>(
        _ type: M.Type, joining predicate: Predicate<M.Joined>, sortBy: [SortDescriptor<M>] = [], limit: Int? = nil
    ) -> AsyncThrowingStream<[M], Error> {
        let entities = try? joinedQuery(predicate, for: M.self).entities
        let box = UncheckedSendable((predicate, sortBy))
        return observe(entities: entities) { store throws(StoreError) in
            try store.fetch(M.self, joining: box.value.0, sortBy: box.value.1, limit: limit)
        }
    }

    /// How many models match, now and after each commit that touches their table.
    ///
    ///     for try await open in await store.observeCount(TodoItem.self) { badge = open }
    public func observeCount<M: PersistentModel>(_ type: M.Type, where predicate: Predicate<M>? = nil) -> AsyncThrowingStream<Int, Error> {
        let box = UncheckedSendable(predicate)
        return observe(entities: [M.entity.name]) { store throws(StoreError) in try store.count(M.self, where: box.value) }
    }

    private func observe<Result: Sendable>(
        entities: Set<String>?, _ run: @escaping @Sendable (isolated Store) throws(StoreError) -> Result
    ) -> AsyncThrowingStream<Result, Error> {
        let (output, continuation) = AsyncThrowingStream<Result, Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (signals, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        prepareFirstSubscriber()
        let id = observation.subscribers.nextID
        observation.subscribers.nextID += 1
        observation.subscribers.queries[id] = .init(entities: entities, signal: signal)
        signal.yield()
        let task = Task { [self] in
            var first = true
            for await _ in signals {
                // After the first result, wait a moment so a burst of commits costs one rerun.
                if !first { try? await Task.sleep(for: Self.coalescingInterval) }
                first = false
                if Task.isCancelled { break }
                do {
                    continuation.yield(try runObserved(run))
                } catch {
                    // Out of reach for now: run again in a moment (the next statement reconnects).
                    if Self.isTransient(error) {
                        try? await Task.sleep(for: .milliseconds(250))
                        signal.yield()
                        continue
                    }
                    continuation.finish(throwing: error)
                    return
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { [weak self] _ in
            task.cancel()
            signal.finish()
            Task { await self?.removeSubscriber(id) }
        }
        startWatching()
        return output
    }

    /// A failure that passes: the connection was lost (it is made again by the next statement).
    static func isTransient(_ error: any Error) -> Bool {
        if case StoreError.database(let failure) = error { return failure.kind == .connectionLost }
        return false
    }

    /// How long an observed query waits after a commit before it reruns: commits arriving
    /// meanwhile are answered by the same rerun.
    static let coalescingInterval: Duration = .milliseconds(10)

    /// Observed queries read from the primary: a standby may not have replayed the commit that
    /// woke them, and nothing would wake them again.
    private func runObserved<Result>(_ run: (isolated Store) throws(StoreError) -> Result) throws(StoreError) -> Result {
        observation.counts.queryRuns += 1
        return try reading(from: .primary) { () throws(StoreError) in try run(self) }
    }

    /// The first subscriber starts from the present: the newest token and data version.
    private func prepareFirstSubscriber() {
        guard observation.isEmpty else { return }
        observation.deliveredToken = recordsHistory ? ((try? currentHistoryToken().value) ?? 0) : 0
        observation.dataVersion = abilities.history.commitWatching?.commitCounter() ?? 0
        observation.unseenLocalCommit = false
    }

    func removeSubscriber(_ id: Int) {
        observation.subscribers.transactions[id] = nil
        observation.subscribers.queries[id]?.signal.finish()
        observation.subscribers.queries[id] = nil
        if observation.isEmpty {
            observation.watcher?.stop()
            observation.watcher = nil
        }
    }

    /// Subscribers now listening; for tests.
    var subscriberCount: Int { observation.subscribers.transactions.count + observation.subscribers.queries.count }

    /// Watches the file for commits of other connections; an in-memory database has none.
    private func startWatching() {
        guard observation.watcher == nil else { return }
        observation.watcher = abilities.history.commitWatching?.watchCommits { [weak self] in
            Task { await self?.watcherWoke() }
        }
    }

    /// After this store commits: tell subscribers (soon, so a burst of commits is read once).
    func committed(token: Int64?) {
        guard !observation.isEmpty else { return }
        if token == nil, recorder == nil { observation.unseenLocalCommit = true }
        if token != nil || recorder == nil { scheduleDelivery() }
    }

    /// The watcher's wake-up.
    func watcherWoke() {
        observation.watcherWoke = true
        scheduleDelivery()
    }

    func scheduleDelivery() {
        guard !observation.deliveryScheduled, !observation.isEmpty else { return }
        observation.deliveryScheduled = true
        Task { self.deliver() }
    }

    /// Reads what was committed since the last delivery and passes it on, from the primary (a
    /// standby may not have the commit that woke it yet).
    func deliver() {
        let replicas = abilities.server.replicaReading
        let source = replicas?.readSource
        replicas?.readSource = .primary
        defer { if let source { replicas?.readSource = source } }
        observation.deliveryScheduled = false
        observation.watcher?.rearm()
        guard !observation.isEmpty else { return }
        observation.counts.deliveries += 1
        var external = false
        if let version = abilities.history.commitWatching?.commitCounter() {
            if version != observation.dataVersion {
                observation.dataVersion = version
                external = true
            }
        } else if observation.watcherWoke, !recordsHistory {
            // No counter (PostgreSQL): a wake-up is the only sign. With history, the history
            // itself tells which commits are new.
            external = true
        }
        observation.watcherWoke = false
        guard recordsHistory else {
            if external || observation.unseenLocalCommit { signalQueries(touched: nil) }
            observation.unseenLocalCommit = false
            return
        }
        do {
            let pruned = try prunedThrough()
            let positions = observation.subscribers.transactions.values.map(\.position)
            let from = min(observation.deliveredToken, positions.min() ?? .max)
            let rows = try readHistory(after: from, author: .any, limit: nil, withChanges: !positions.isEmpty)
            for (id, subscriber) in observation.subscribers.transactions {
                if subscriber.position < pruned {
                    subscriber.continuation.finish(throwing: StoreError.historyPruned(after: HistoryToken(subscriber.position), through: HistoryToken(pruned)))
                    observation.subscribers.transactions[id] = nil
                    continue
                }
                for row in rows where row.token.value > subscriber.position && subscriber.author.admits(row.author) {
                    subscriber.continuation.yield(row)
                    observation.counts.transactionsYielded += 1
                }
                if let last = rows.last { observation.subscribers.transactions[id]?.position = max(subscriber.position, last.token.value) }
            }
            if let last = rows.last { observation.counts.newestTokenRead = max(observation.counts.newestTokenRead, last.token.value) }
            let fresh = rows.filter { $0.token.value > observation.deliveredToken }
            // Written without a store (the sqlite3 shell, a migration), or history was pruned
            // past us: what changed is unknown, so every query reruns.
            let unknown = (external && fresh.isEmpty) || observation.deliveredToken < pruned
            signalQueries(touched: unknown ? nil : Set(fresh.flatMap(\.entities)))
            if let last = fresh.last { observation.deliveredToken = last.token.value }
            observation.retryPause = 0
            // Committed rows behind a transaction that still runs (writers run side by side):
            // read again soon, since that transaction may be no store's and announce nothing.
            if try unsettledHistory(after: min(observation.deliveredToken, observation.subscribers.transactions.values.map(\.position).min() ?? .max)) {
                Task { [weak self] in
                    try? await Task.sleep(for: .milliseconds(100))
                    await self?.scheduleDelivery()
                }
            }
        } catch {
            // The database is out of reach for now (a restarted server, a cut link): nothing is
            // lost, since the history holds it; read it again once the connection is back.
            if Self.isTransient(error) {
                observation.retryPause = min(max(observation.retryPause * 2, 0.05), 2)
                let pause = observation.retryPause
                Task { [weak self] in
                    try? await Task.sleep(for: .seconds(pause))
                    await self?.scheduleDelivery()
                }
                return
            }
            for (_, subscriber) in observation.subscribers.transactions { subscriber.continuation.finish(throwing: error) }
            observation.subscribers.transactions.removeAll()
            signalQueries(touched: nil)
        }
        if observation.isEmpty {
            observation.watcher?.stop()
            observation.watcher = nil
        }
    }

    /// Wakes the queries that read a touched entity (all of them when `touched` is nil).
    private func signalQueries(touched: Set<String>?) {
        for subscriber in observation.subscribers.queries.values {
            if let touched, let entities = subscriber.entities, entities.isDisjoint(with: touched) { continue }
            observation.counts.queryWakeUps += 1
            subscriber.signal.yield()
        }
    }
}

/// Carries a value Foundation has not marked Sendable (predicates and sort descriptors hold only
/// key paths and values, and are only read).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
