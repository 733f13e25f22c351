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
        /// The server was lost (it died, shut down, or turns writes away as a demoted primary):
        /// the store starts waiting for a writable primary (`server`: the one lost).
        public static let reconnecting = Kind(rawValue: "reconnecting")
        /// Connected again (`server`: the new primary; `duration`: how long it took).
        public static let reconnected = Kind(rawValue: "reconnected")
        /// What the lost server had not committed runs again (`failure.code`: its SQLSTATE, nil
        /// for a dropped connection).
        public static let failoverRetry = Kind(rawValue: "failoverRetry")
        /// A COMMIT sent but not answered was looked up on the new primary (`committed`).
        public static let outcomeChecked = Kind(rawValue: "outcomeChecked")
        /// No writable primary answered within the failover timeout; the call fails with
        /// `.noWritablePrimary`.
        public static let noWritablePrimary = Kind(rawValue: "noWritablePrimary")

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
    /// The server concerned (`host:port`), for failover events: the one lost, or the new one.
    public var server: String?
    /// How long reconnecting took, for `.reconnected`.
    public var duration: Duration?
    /// Whether the transaction whose COMMIT went unanswered committed, for `.outcomeChecked`.
    public var committed: Bool?

    /// An event, as the store reports it.
    ///
    ///     StoreEvent(kind: .retry, operation: "transaction", attempt: 1, failure: failure)
    public init(kind: Kind, operation: String, attempt: Int, failure: DatabaseFailure?) {
        self.init(kind: kind, operation: operation, attempt: attempt, failure: failure, server: nil)
    }

    /// An event of a failover, with the server concerned and what the store learned.
    ///
    ///     StoreEvent(kind: .reconnected, operation: "transaction", attempt: 3, failure: nil, server: "db2:5432", duration: .milliseconds(4200))
    public init(
        kind: Kind, operation: String, attempt: Int, failure: DatabaseFailure?, server: String?, duration: Duration? = nil, committed: Bool? = nil
    ) {
        self.kind = kind
        self.operation = operation
        self.attempt = attempt
        self.failure = failure
        self.server = server
        self.duration = duration
        self.committed = committed
    }

    /// `retry transaction (attempt 2): 40001 could not serialize access...`.
    public var description: String {
        var text = "\(kind) \(operation) (attempt \(attempt))"
        if let server { text += " \(kind == .reconnected ? "to" : "from") \(server)" }
        if let duration { text += " after \(String(format: "%.2f", duration.inSeconds)) s" }
        if let committed { text += committed ? ": it committed" : ": it did not commit" }
        return text + (failure.map { ": " + ($0.code.map { "\($0) " } ?? "") + $0.message } ?? "")
    }
}

/// What a store counted since it opened.
///
///     let retries = await store.counters.retries
public struct StoreCounters: Sendable, Equatable {
    /// Operations tried again after a passing refusal (each retry once).
    public var retries = 0
    /// Operations given up on when the busy timeout ran out (`StoreError.retriesExhausted`), or
    /// when no writable primary answered within the failover timeout (`.noWritablePrimary`).
    public var retriesExhausted = 0
    /// Times the store connected again after losing its server (a failover, a restart).
    public var reconnects = 0
    /// COMMITs sent but not answered, looked up on the new primary.
    public var outcomeChecks = 0

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
