import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

// A sync: the device's changes pushed (each push kept before it is sent, acknowledged after),
// then the server's pulled page by page; and the background loop that runs it with backoff.
extension SyncClient {
    /// Pushes everything pending, then pulls until the server has nothing more, and reports
    /// what it did. A sync already running is waited for instead of started again (its report
    /// is returned).
    ///
    ///     let report = try await client.sync()
    ///     for event in report.settledOtherwise { print(event) }
    @discardableResult
    public func sync() async throws(SyncClientError) -> SyncReport {
        if let running { return try await running.value.get() }
        let task = Task { () -> Result<SyncReport, SyncClientError> in
            do throws(SyncClientError) {
                return .success(try await self.syncOnce())
            } catch {
                return .failure(error)
            }
        }
        running = task
        defer { running = nil }
        return try await task.value.get()
    }

    private func syncOnce() async throws(SyncClientError) -> SyncReport {
        told = []
        defer { told = [] }
        do {
            // A pull from the start that did not finish (the app killed, the link cut) finishes
            // first: until its sweep, a push could bring back a record deleted meanwhile.
            if try await step({ store throws(SyncClientError) in try Self.progress(in: store).sweepSince != nil }) { try await pullAll() }
            try await pushAll()
            try await pullAll()
            try await note(error: nil)
            return SyncReport(events: told)
        } catch {
            try? await note(error: error.description)
            tell(.failed(error.description))
            throw error
        }
    }

    /// Where the device's sync stands; the app's changes since the last sync are counted.
    ///
    ///     let status = try await client.status()   // status.pending, status.lastSync, status.lastError
    public func status() async throws(SyncClientError) -> SyncStatus {
        let local = self.local
        return try await step { store throws(SyncClientError) in
            var progress = try Self.progress(in: store)
            try local.stamp(&progress, in: store)
            try inStore { () throws(StoreError) in try store.writeSyncClientRow(progress) }
            let pending = try inStore { () throws(StoreError) in try store.syncPendingCount() }
            return SyncStatus(pending: pending, lastSync: progress.lastSync, lastError: progress.lastError, acknowledged: progress.acknowledged)
        }
    }

    /// Syncs every `interval` in the background until `stop()`, waiting longer after each failure
    /// in a row (1, 2, 4 … up to 64 seconds, with jitter) so a server that is down is not
    /// hammered.
    ///
    ///     await client.start(every: .seconds(30))
    public func start(every interval: Duration = .seconds(30)) {
        guard background == nil else { return }
        background = Task { [weak self] in
            var failures = 0
            while !Task.isCancelled {
                guard let client = self else { return }
                do {
                    try await client.sync()
                    failures = 0
                } catch {
                    failures += 1
                }
                let backoff = Duration.seconds(1 << min(failures - 1, 6)) + .milliseconds(Int.random(in: 0..<500))
                try? await Task.sleep(for: failures == 0 ? interval : backoff)
            }
        }
    }

    /// Stops the background loop; a sync in progress finishes its current step.
    ///
    ///     await client.stop()
    public func stop() {
        background?.cancel()
        background = nil
    }

    private func pushAll() async throws(SyncClientError) {
        let (local, outbox, clock) = (self.local, self.outbox, self.clock)
        var startedOver = false
        while true {
            let next = try await step { store throws(SyncClientError) -> SyncPush? in
                var progress = try Self.progress(in: store)
                try local.stamp(&progress, in: store)
                let push = try outbox.next(&progress, in: store)
                progress.clock = clock.latest.text
                try inStore { () throws(StoreError) in try store.writeSyncClientRow(progress) }
                return push
            }
            guard let push = next else { return }
            let answer: SyncPushAnswer
            do {
                answer = try await transport.push(push)
            } catch SyncTransportError.tombstonesPurged where !startedOver {
                // Refused whole: the server purged deletes this device never saw, and a change
                // to one of those records would bring it back. Pull everything first (the sweep
                // lets go of them), then push again what is still pending (once a sync).
                startedOver = true
                try await startOver(droppingPush: true)
                try await pullAll()
                continue
            } catch {
                throw .transport("\(error)")
            }
            let events = try await step { store throws(SyncClientError) -> [SyncEvent] in
                var progress = try Self.progress(in: store)
                try local.stamp(&progress, in: store)
                let events = try outbox.acknowledge(answer, to: push, &progress, in: store)
                progress.clock = clock.latest.text
                try inStore { () throws(StoreError) in try store.writeSyncClientRow(progress) }
                return events
            }
            for event in events { tell(event) }
        }
    }

    private func pullAll() async throws(SyncClientError) {
        let (local, inbox, clock) = (self.local, self.inbox, self.clock)
        var startsOver = 0
        while true {
            let cursor = try await step { store throws(SyncClientError) in try Self.progress(in: store).pullCursor }
            let page: SyncPullAnswer
            do {
                page = try await transport.pull(SyncPull(device: device, schemaVersion: schema.version, after: cursor, limit: pageSize))
            } catch SyncTransportError.cursorExpired, SyncTransportError.tombstonesPurged {
                // The server pruned the history after the cursor, purged deletes this device
                // never saw, or a large move came: pull everything again, merging, then let go
                // of what did not come (`sweep`). Pending changes stay. Twice at most in one
                // sync: a server that keeps answering so is not pulled from without end.
                startsOver += 1
                guard startsOver <= 2 else { throw .transport("the server asked this device to pull everything again twice in one sync; the next sync goes on") }
                try await startOver(droppingPush: false)
                continue
            } catch {
                throw .transport("\(error)")
            }
            let changed = try await step { store throws(SyncClientError) -> (records: Int, events: [SyncEvent]) in
                var progress = try Self.progress(in: store)
                try local.stamp(&progress, in: store)
                let taken = try inbox.take(page, &progress, in: store)
                var changed = taken.changed
                var events = taken.removed.map { SyncEvent.removedFromScope(entity: $0.entity, key: $0.key) }
                if let since = progress.sweepSince, !page.hasMore {
                    let swept = try inbox.sweep(since: since, in: store)
                    changed += swept.removed
                    events += swept.changesDropped.map { SyncEvent.deletedWhileAway(entity: $0.entity, key: $0.key) }
                    progress.sweepSince = nil
                }
                progress.clock = clock.latest.text
                try inStore { () throws(StoreError) in try store.writeSyncClientRow(progress) }
                return (changed, events)
            }
            tell(.pulled(records: changed.records))
            for event in changed.events { tell(event) }
            if !page.hasMore { return }
        }
    }

    /// Pulls from the start from now on, then lets go of what did not come (`sweepSince`);
    /// `droppingPush`: the push kept for sending again was refused whole, and is gathered anew.
    private func startOver(droppingPush: Bool) async throws(SyncClientError) {
        let local = self.local
        try await step { store throws(SyncClientError) in
            var progress = try Self.progress(in: store)
            try local.stamp(&progress, in: store)
            progress.pullCursor = nil
            progress.sweepSince = progress.sweepSince ?? Date()
            if droppingPush {
                progress.outgoing = nil
                progress.outgoingVersions = nil
            }
            try inStore { () throws(StoreError) in try store.writeSyncClientRow(progress) }
        }
    }

    /// Notes when the sync ended, and how.
    private func note(error: String?) async throws(SyncClientError) {
        try await step { store throws(SyncClientError) in
            var progress = try Self.progress(in: store)
            if error == nil { progress.lastSync = Date() }
            progress.lastError = error
            try inStore { () throws(StoreError) in try store.writeSyncClientRow(progress) }
        }
    }

    static func progress(in store: isolated Store) throws(SyncClientError) -> SyncClientRow {
        guard let progress = try inStore({ () throws(StoreError) in try store.syncClientRow() }) else {
            throw .store(.notSupported("the sync client's progress is missing from the store (schemagen_sync_client): it was deleted outside the client"))
        }
        return progress
    }
}
