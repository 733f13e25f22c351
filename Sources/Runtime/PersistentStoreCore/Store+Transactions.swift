import Foundation
import SQLDialects
import SchemaMetadata

// Transactions: how a write or a `transaction { }` begins, retries, commits and rolls back,
// savepoints inside, reads on one snapshot, and a lost server waited out.
extension Store {
    /// Runs `body` in one transaction: everything it writes commits, or nothing does. A write
    /// inside that fails is undone on its own (a savepoint), so `body` may catch it and go on.
    ///
    ///     try await store.transaction { store in
    ///         let airline = try store.insert(Airline(code: "UAL", name: "United Airlines", shortName: "United"))
    ///         var flight = flight
    ///         flight.airlineID = airline.id
    ///         try store.insert(flight)
    ///     }
    ///
    /// The transaction is serializable: it behaves as if no other writer ran meanwhile. On
    /// SQLite it holds the write lock throughout. On PostgreSQL, which lets writers run side by
    /// side, a transaction that conflicts with another is rolled back by the server and `body`
    /// runs again, up to the busy timeout: keep `body` free of effects outside the store.
    ///
    /// Errors are typed: a `StoreError`, with an error of `body`'s own carried by `.body`. When
    /// the conflicts outlast the busy timeout, `.retriesExhausted(attempts:last:)`; each retry is
    /// counted (`counters`) and reported to `Configuration.events`.
    public func transaction<T: Sendable>(_ body: @Sendable (isolated Store) throws -> T) throws(StoreError) -> T {
        guard !isReading else { throw .writeInsideRead("a transaction") }
        guard depth == 0 else {
            depth += 1
            defer { depth -= 1 }
            do { return try body(self) } catch { throw StoreError(thrownByBody: error) }
        }
        let deadline = Date().addingTimeInterval(busySeconds)
        var attempt = 0
        var lostServerAt: Date?
        while true {
            attempt += 1
            let tried = try writeOnce(serializable: true) { () throws(StoreError) -> T in
                do { return try body(self) } catch { throw StoreError(thrownByBody: error) }
            }
            if case .committed(let result) = tried { return result }
            guard case .failed(let error, let outcome) = tried else { continue }
            // The server was lost (a failover): wait for the new primary, then run again,
            // unless the COMMIT went out and took effect.
            if case .database(let failure) = error, failure.kind == .connectionLost, failoverRecovery != nil {
                if let result = try recoverLostWrite(failure, outcome, operation: "transaction", attempt: attempt, lostServerAt: &lostServerAt) { return result }
                continue
            }
            // Rolled back for a conflict with another writer: nothing of it was written.
            guard case .database(let failure) = error, failure.kind == .busy else { throw error }
            try retry(after: failure, attempt: attempt, of: "transaction", deadline: deadline)
            usleep(UInt32(min(50, attempt * 2)) * 1000 + UInt32.random(in: 0..<1000))
        }
    }

    /// One try of the outermost write: begin, run `body`, commit (or roll back).
    enum WriteTry<T> {
        case committed(T)
        /// It failed with `error`; `outcome` is what the body gave, for a COMMIT that went out
        /// unanswered and is found committed on a new primary.
        case failed(StoreError, outcome: Result<T, StoreError>)
    }

    /// Begins the write transaction, runs `body` in it, and commits; a failure to begin is thrown.
    private func writeOnce<T>(serializable: Bool, _ body: () throws(StoreError) -> T) throws(StoreError) -> WriteTry<T> {
        try beginWrite(serializable: serializable)
        let outcome = oneLevelDeeper(body)
        do throws(StoreError) {
            let result = try outcome.get()
            try endWrite(commit: true)
            return .committed(result)
        } catch {
            try? endWrite(commit: false)
            return .failed(error, outcome: outcome)
        }
    }

    /// `body`'s outcome, run one transaction level deeper. The level is left here, once,
    /// whatever happens next: a COMMIT or RELEASE that fails (its server lost) must not count
    /// it twice, or every later transaction's writes would each commit on their own.
    private func oneLevelDeeper<T>(_ body: () throws(StoreError) -> T) -> Result<T, StoreError> {
        depth += 1
        defer { depth -= 1 }
        do throws(StoreError) { return .success(try body()) } catch { return .failure(error) }
    }

    /// After a write lost its server: waits for the new primary; the body's result when the
    /// COMMIT went out and took effect there, or nil to run the write again.
    private func recoverLostWrite<T>(
        _ failure: DatabaseFailure, _ outcome: Result<T, StoreError>, operation: String, attempt: Int, lostServerAt: inout Date?
    ) throws(StoreError) -> T? {
        let start = lostServerAt ?? Date()
        lostServerAt = start
        let committed = try recoverWrite(after: failure, operation: operation, attempt: attempt, since: start)
        guard committed, case .success(let result) = outcome else { return nil }
        finishCommit()
        return result
    }

    /// Runs `body` against one consistent snapshot of the database without taking the write
    /// lock, so other processes keep writing meanwhile: for long reads, such as `forEach` over
    /// a large table. Writes inside it are refused (`StoreError.writeInsideRead`); inside a
    /// transaction it simply runs.
    ///
    ///     let delayed = try await store.read { store in try store.count(Flight.self, where: #Predicate { $0.status == "Delayed" }) }
    ///
    /// An error of `body`'s own comes out as `StoreError.body`.
    public func read<T: Sendable>(_ body: @Sendable (isolated Store) throws -> T) throws(StoreError) -> T {
        if depth > 0 || isReading {
            do { return try body(self) } catch { throw StoreError(thrownByBody: error) }
        }
        var attempt = 0
        var lostServerAt: Date?
        while true {
            attempt += 1
            do { try database.beginReadTransaction() } catch { throw StoreError.database(error) }
            isReading = true
            let outcome: Result<T, StoreError>
            do { outcome = .success(try body(self)) } catch { outcome = .failure(StoreError(thrownByBody: error)) }
            isReading = false
            // Nothing was written: ending the read transaction releases the snapshot.
            try? database.commitTransaction()
            // A server lost under the read (a failover): read again from the new primary.
            guard case .failure(.database(let failure)) = outcome, failure.kind == .connectionLost, failoverRecovery != nil else { return try outcome.get() }
            let start = lostServerAt ?? Date()
            lostServerAt = start
            self.commit.reset()
            _ = try recoverWrite(after: failure, operation: "read", attempt: attempt, since: start)
        }
    }

    /// `read`, with how fresh its reads must be where the store reads from standbys
    /// (`PostgresSettings.readURL`): `.anyReplica` skips the wait for this store's own writes,
    /// `.primary` reads from the primary. Elsewhere the same as `read`.
    ///
    ///     let flights = try await store.read(from: .anyReplica) { try $0.count(Flight.self) }
    public func read<T: Sendable>(from source: ReadSource, _ body: @Sendable (isolated Store) throws -> T) throws(StoreError) -> T {
        try reading(from: source) { () throws(StoreError) in try read(body) }
    }

    /// Runs `body` with the adapter's reads as fresh as `source` says, then as they were.
    func reading<T>(from source: ReadSource, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        guard let replicas = abilities.server.replicaReading else { return try body() }
        let before = replicas.readSource
        replicas.readSource = source
        defer { replicas.readSource = before }
        return try body()
    }

    func write<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        guard !isReading else { throw .writeInsideRead("a write") }
        if depth == 0 {
            var attempt = 0
            var lostServerAt: Date?
            while true {
                attempt += 1
                switch try writeOnce(serializable: false, body) {
                case .committed(let result):
                    return result
                case .failed(let error, let outcome):
                    // A lost server (a failover): wait for the new primary and write again,
                    // unless the COMMIT went out and took effect.
                    guard case .database(let failure) = error, failure.kind == .connectionLost, failoverRecovery != nil else { throw error }
                    if let result = try recoverLostWrite(failure, outcome, operation: "write", attempt: attempt, lostServerAt: &lostServerAt) { return result }
                }
            }
        }
        // Inside a transaction: all of this write, or none of it.
        let marks = (recorded: recorder?.mark ?? 0, created: files.created.count, removed: files.removed.count)
        do { try database.execute("SAVEPOINT store_write;") } catch { throw .database(error) }
        let outcome = oneLevelDeeper(body)
        do throws(StoreError) {
            let result = try outcome.get()
            do { try database.execute("RELEASE store_write;") } catch { throw .database(error) }
            return result
        } catch {
            try? database.execute("ROLLBACK TO store_write;")
            try? database.execute("RELEASE store_write;")
            recorder?.rollback(to: marks.recorded)
            for url in files.created[marks.created...] { try? FileManager.default.removeItem(at: url) }
            files.created.removeSubrange(marks.created...)
            files.removed.removeSubrange(marks.removed...)
            throw error
        }
    }

    /// Takes the write lock. A busy database is waited for up to the busy timeout; SQLite can
    /// report busy before that (while another connection recovers the WAL), and nothing has
    /// been done yet, so trying again is safe.
    private func beginWrite(serializable: Bool = false) throws(StoreError) {
        recorder?.discard()
        sealing.sealedInTransaction = false
        sealing.implicitKeys.removeAll()
        self.commit.began(id: failoverRecovery == nil ? nil : UUID().uuidString)
        try retryingWhileBusy("begin") { () throws(DatabaseFailure) in try database.beginWriteTransaction(serializable: serializable) }
    }

    private func retryingWhileBusy(_ operation: String, _ body: () throws(DatabaseFailure) -> Void) throws(StoreError) {
        let deadline = Date().addingTimeInterval(busySeconds)
        var attempt = 0
        while true {
            attempt += 1
            do {
                try body()
                return
            } catch {
                guard error.kind == .busy else { throw .database(error) }
                try retry(after: error, attempt: attempt, of: operation, deadline: deadline)
                usleep(UInt32(min(50, attempt * 2)) * 1000)
            }
        }
    }

    /// Counts and reports one more try of `operation` after `failure`, or gives up with
    /// `.retriesExhausted` once `deadline` passed.
    private func retry(after failure: DatabaseFailure, attempt: Int, of operation: String, deadline: Date) throws(StoreError) {
        guard Date() < deadline else {
            localCounters.retriesExhausted += 1
            report(StoreEvent(kind: .retriesExhausted, operation: operation, attempt: attempt, failure: failure))
            throw .retriesExhausted(attempts: attempt, last: failure)
        }
        localCounters.retries += 1
        report(StoreEvent(kind: .retry, operation: operation, attempt: attempt, failure: failure))
    }

    private func endWrite(commit: Bool) throws(StoreError) {
        guard commit else {
            if database.isInTransaction { try? database.rollbackTransaction() }
            recorder?.discard()
            settleExternalFiles(committed: false)
            return
        }
        var token: Int64?
        do throws(StoreError) {
            try recordSealingKey()
            // The id a lost server leaves to look up on the new primary.
            if let recovery = failoverRecovery, let id = self.commit.openID {
                do { try recovery.server.recordCommit(id) } catch { throw .database(error) }
            }
            do {
                var announced = false
                if let recorder, let row = try recorder.historyRow(author: transactionAuthor ?? configuration.author) {
                    (token, announced) = try recorder.write(row, database, abilities)
                }
                if !announced { try abilities.history.commitWatching?.announceCommit() }
            } catch {
                throw .database(error)
            }
            if let token { try pruneHistory(newest: token) }
            configuration.beforeCommit?()
            self.commit.sending(token: token)
            // COMMIT may be busy in rollback-journal mode while readers finish; the transaction
            // is still open then, so committing again is safe. Where a failed statement ends the
            // transaction (PostgreSQL), a failed COMMIT rolled it back: it is not retried here
            // (a second COMMIT would find no transaction and succeed with nothing written).
            if capabilities.failedStatementAbortsTransaction {
                do { try database.commitTransaction() } catch { throw .database(error) }
            } else {
                try retryingWhileBusy("commit") { () throws(DatabaseFailure) in try database.commitTransaction() }
            }
        } catch {
            // A failed commit rolls back (or, past a lost server, is looked up by the caller).
            if database.isInTransaction { try? database.rollbackTransaction() }
            recorder?.discard()
            settleExternalFiles(committed: false)
            throw error
        }
        finishCommit()
    }

    /// What follows a commit: external files kept, the sealing key known recorded, subscribers
    /// told. Also for a COMMIT that went unanswered and was found committed on the new primary.
    func finishCommit() {
        settleExternalFiles(committed: true)
        if sealing.sealedInTransaction { sealing.newestKeyRecorded = true }
        self.committed(token: self.commit.committed())
    }
}
