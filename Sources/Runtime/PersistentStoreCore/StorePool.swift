import SchemaMetadata

/// Several stores on one database, each on a connection of its own, for a server that serves
/// requests concurrently: a `Store` is an actor on one connection, so it runs one call at a
/// time; a pool of `size` runs up to `size` at once. Each call takes an idle store and gives it
/// back when done, so a transaction runs whole on one connection. Calls beyond `size` wait
/// their turn, first come first served.
///
///     let pool = try StorePool(url: "postgres://app@db.internal/flights", size: 8,   // PersistentStorePostgres
///                              schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
///     let delayed = try await pool.withStore { try await $0.fetch(Flight.self, where: #Predicate { $0.status == "Delayed" }) }
///     try await pool.transaction { store in try store.insert(flight) }
///
/// Opening migrates once (the first store, with `configuration.migrations`); the others only
/// verify. Each adapter adds an initializer: `StorePool(url:)` on PostgreSQL, `StorePool(path:)`
/// on SQLite, whose stores are connections to one file (reads run side by side, writes take turns
/// on SQLite's lock). The pool itself holds no SQL and names no engine.
public final class StorePool: Sendable {
    /// Every store of the pool, opened.
    public let stores: [Store]
    private let idle: IdleStores

    /// Opens `size` stores with `open`, handing it the configuration each opens with: the first
    /// store's is `configuration`, the others' only verify the migrations.
    ///
    ///     let pool = try StorePool(size: 4) { configuration in
    ///         try Store(path: "app.sqlite", schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: configuration)
    ///     }
    public init(size: Int = 8, configuration: Store.Configuration = Store.Configuration(), opening open: (Store.Configuration) throws(StoreError) -> Store) throws(StoreError) {
        guard size >= 1 else { throw .unsupportedDatabase("a pool needs at least one store (size \(size))") }
        var stores = [try open(configuration)]
        var others = configuration
        others.migrations = .verify
        for _ in 1..<size { stores.append(try open(others)) }
        self.stores = stores
        idle = IdleStores(count: size)
    }

    /// The store that serves `changes()` here, and on which to `observe`: one listener for the
    /// pool. It hears every store's commits, the pool's own included (they are other connections).
    public var observer: Store { stores[0] }

    /// Runs `body` with an idle store, which no other call uses meanwhile. It throws what `body`
    /// throws.
    public func withStore<T: Sendable, Failure: Error>(_ body: (Store) async throws(Failure) -> T) async throws(Failure) -> T {
        let index = await idle.take()
        do {
            let result = try await body(stores[index])
            await idle.give(back: index)
            return result
        } catch {
            await idle.give(back: index)
            throw error
        }
    }

    /// `Store.transaction` on an idle store: all of it on one connection, or none of it.
    public func transaction<T: Sendable>(_ body: @Sendable (isolated Store) throws -> T) async throws(StoreError) -> T {
        try await withStore { (store) async throws(StoreError) -> T in try await store.transaction(body) }
    }

    /// `Store.read` on an idle store: one snapshot, on one connection.
    public func read<T: Sendable>(_ body: @Sendable (isolated Store) throws -> T) async throws(StoreError) -> T {
        try await withStore { (store) async throws(StoreError) -> T in try await store.read(body) }
    }

    /// The counters of every store of the pool, added up.
    ///
    ///     let retries = await pool.counters.retries
    public var counters: StoreCounters {
        get async {
            var total = StoreCounters()
            for store in stores {
                let counted = await store.counters
                total.retries += counted.retries
                total.retriesExhausted += counted.retriesExhausted
                total.reconnects += counted.reconnects
                total.outcomeChecks += counted.outcomeChecks
            }
            return total
        }
    }

    /// `Store.changes` of `observer`.
    public func changes(after token: HistoryToken? = nil, author: AuthorFilter = .any) async throws -> AsyncThrowingStream<HistoryTransaction, Error> {
        try await observer.changes(after: token, author: author)
    }
}

/// Which stores are free, and who waits for one.
private actor IdleStores {
    private var free: [Int]
    private var waiting: [CheckedContinuation<Int, Never>] = []

    init(count: Int) { free = Array((0..<count).reversed()) }

    func take() async -> Int {
        if let index = free.popLast() { return index }
        return await withCheckedContinuation { waiting.append($0) }
    }

    func give(back index: Int) {
        if waiting.isEmpty {
            free.append(index)
        } else {
            waiting.removeFirst().resume(returning: index)
        }
    }
}
