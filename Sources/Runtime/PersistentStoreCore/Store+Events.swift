import SchemaMetadata

/// Something the store did on its own that an app may want to log or count, handed to
/// `Store.Configuration.events`: so far, a retry after a passing refusal and giving up. The
/// store chooses no logging library; the app decides what to do with each event.
///
///     let configuration = Store.Configuration(events: { event in
///         if event.kind == .retry { logger.debug("\(event)") }
///     })
public struct StoreEvent: Sendable, CustomStringConvertible {
    /// What happened. New kinds may be added (reconnections, failovers), so compare with `==`
    /// or switch with a `default`.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The kind's name (`retry`, `retriesExhausted`).
        public var rawValue: String
        /// A kind by its name.
        ///
        ///     StoreEvent.Kind(rawValue: "retry") == .retry   // true
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The database refused for a reason that passes (`failure.kind == .busy`: a lock held
        /// past the wait, a serialization failure, a deadlock); the store tries again.
        public static let retry = Kind(rawValue: "retry")
        /// The busy timeout ran out while retrying; the call fails with `.retriesExhausted`.
        public static let retriesExhausted = Kind(rawValue: "retriesExhausted")

        /// The kind's name.
        public var description: String { rawValue }
    }

    /// What happened.
    public var kind: Kind
    /// What the store was doing: `transaction`, `begin`, `commit`.
    public var operation: String
    /// Which try of the operation was refused (1 for the first).
    public var attempt: Int
    /// Why the database refused, with its SQLSTATE or SQLite code in `failure.code`.
    public var failure: DatabaseFailure?

    /// An event, as the store reports it.
    ///
    ///     StoreEvent(kind: .retry, operation: "transaction", attempt: 1, failure: failure)
    public init(kind: Kind, operation: String, attempt: Int, failure: DatabaseFailure?) {
        self.kind = kind
        self.operation = operation
        self.attempt = attempt
        self.failure = failure
    }

    /// `retry transaction (attempt 2): 40001 could not serialize access...`.
    public var description: String {
        "\(kind) \(operation) (attempt \(attempt))" + (failure.map { ": " + ($0.code.map { "\($0) " } ?? "") + $0.message } ?? "")
    }
}

/// What a store counted since it opened.
///
///     let retries = await store.counters.retries
public struct StoreCounters: Sendable, Equatable {
    /// Operations tried again after a passing refusal (each retry once).
    public var retries = 0
    /// Operations given up on when the busy timeout ran out (`StoreError.retriesExhausted`).
    public var retriesExhausted = 0

    /// Counters at zero.
    ///
    ///     let none = StoreCounters()   // retries 0, retriesExhausted 0
    public init() {}
}

extension Store {
    /// Hands an event to the configuration's handler.
    func report(_ event: StoreEvent) {
        configuration.events?(event)
    }
}
