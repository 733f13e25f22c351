import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// The device side of sync, on the device's own store: it pushes the changes the app made (read
/// from the store's history, stamped with the device's clock at the time they were made) and
/// pulls the server's, merged by the schema's rules. The app goes on writing to its store as
/// before; sync never blocks it for longer than one page.
///
///     let client = try await SyncClient(store: store, schema: TodoSchema.descriptor, device: "ipad-7", transport: transport)
///     try await client.sync()                 // now, or
///     await client.start(every: .seconds(30)) // in the background, with backoff
///
/// Every step keeps its progress in the store, in the transaction that makes it: a device
/// killed at any point goes on from there, with nothing pushed twice or lost.
public actor SyncClient {
    /// The author of what a client writes from pulls: history readers (and the client itself)
    /// tell the device's own changes from the server's by it.
    public static let author = "sync"

    /// The store synced.
    public let store: Store
    /// The schema the store holds.
    public let schema: SchemaDescriptor
    /// This device's id.
    public let device: String
    /// What the client tells the app as it goes: pushes and pulls done, changes the server
    /// refused or settled otherwise, failures.
    public nonisolated let events: AsyncStream<SyncEvent>

    let transport: any SyncTransport
    let clock: NodeClock
    let local: LocalChanges
    let outbox: Outbox
    let inbox: Inbox
    let pageSize: Int
    private let continuation: AsyncStream<SyncEvent>.Continuation
    var background: Task<Void, Never>?
    /// The sync running now, which a second call waits for.
    var running: Task<Result<SyncReport, SyncClientError>, Never>?
    /// What the running sync has told so far, for its report.
    var told: [SyncEvent] = []

    /// A client for `schema`'s synced entities in `store` (which must record history), syncing
    /// as `device` (one id per store, kept for its life) through `transport`. Records the store
    /// already holds are pushed at the first sync.
    ///
    ///     let client = try await SyncClient(store: store, schema: TodoSchema.descriptor, device: "ipad-7", transport: transport)
    public init(
        store: Store, schema: SchemaDescriptor, device: String, transport: any SyncTransport, pageSize: Int = 500,
        wallClock: @escaping @Sendable () -> Int64 = SyncClient.wallMilliseconds
    ) async throws(SyncClientError) {
        guard SyncClock.isNodeName(device) else { throw .badDevice(device) }
        let ordered = schema.entities.compactMap(SyncedEntity.init)
        guard !ordered.isEmpty else { throw .nothingSynced(schema: schema.name) }
        guard await store.recordsHistory else { throw .historyOff(schema: schema.name) }
        let progress = try await Self.start(store, device: device)
        do {
            clock = try NodeClock(node: device, latest: progress?.clock.flatMap(SyncClock.init(text:)), wallClock: wallClock)
        } catch {
            throw .clock(error)
        }
        let byName = Dictionary(ordered.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.store = store
        self.schema = schema
        self.device = device
        self.transport = transport
        self.pageSize = min(max(pageSize, 1), 1_000)
        local = LocalChanges(entities: ordered, clock: clock)
        outbox = Outbox(entities: byName, clock: clock, device: device, schemaVersion: schema.version)
        inbox = Inbox(entities: byName, clock: clock)
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1_000))
        if let progress {
            if progress.schemaVersion.map({ $0 < schema.version }) ?? true { try await update(from: progress.schemaVersion) }
        } else {
            try await begin()
        }
    }

    /// The wall clock in milliseconds since 1970, as clocks count it.
    ///
    ///     let now = SyncClient.wallMilliseconds()
    @Sendable public static func wallMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1_000).rounded(.down)) }

    /// Creates the client's tables where missing and reads its progress, checking the device.
    private static func start(_ store: Store, device: String) async throws(SyncClientError) -> SyncClientRow? {
        do {
            try await store.prepareSyncClientTables()
            let progress = try await store.syncClientRow()
            guard let progress, progress.device != device else { return progress }
            // A store that never synced (nothing acknowledged, nothing pulled) may take another
            // id: what it stamped is its own data, stamped again under the new id.
            guard progress.acknowledged == 0, progress.pullCursor == nil, progress.sweepSince == nil, progress.lastSync == nil else {
                throw SyncClientError.otherDevice(stored: progress.device, given: device)
            }
            try await store.forgetUnusedSyncClient()
            return nil
        } catch let error as SyncClientError {
            throw error
        } catch {
            throw .store(error as? StoreError ?? .notSupported("\(error)"))
        }
    }

    /// The first sync of this store: what it already holds is stamped as the device's, and its
    /// history from here on is what the device changes.
    private func begin() async throws(SyncClientError) {
        let (local, device, clock, version) = (self.local, self.device, self.clock, schema.version)
        try await step { store throws(SyncClientError) in
            var progress = SyncClientRow(device: device)
            progress.stampedThrough = try inStore { () throws(StoreError) in try store.currentHistoryToken().value }
            try local.stampEveryRow(in: store)
            progress.clock = clock.latest.text
            progress.schemaVersion = version
            try inStore { () throws(StoreError) in try store.writeSyncClientRow(progress) }
        }
    }

    /// The first sync since the app was updated to this schema version (its store migrated as
    /// it opened): the states are carried to the new names, what the app changed and did not
    /// push is stamped and pending (it goes in this version's shape), and the next pull starts
    /// over, so the attributes and entities new in this version arrive for the records the device
    /// holds. Nothing is reset and nothing unsynced is dropped. `earlier` is nil for a store
    /// whose progress predates versions being kept: its states are this version's already.
    private func update(from earlier: Int?) async throws(SyncClientError) {
        let (local, clock, version) = (self.local, self.clock, schema.version)
        let update = AppUpdate(entities: local.entities, clock: clock)
        try await step { store throws(SyncClientError) in
            var progress = try Self.progress(in: store)
            if let earlier {
                try update.carry(from: earlier, &progress, in: store)
                try local.stampEveryRow(in: store)
                progress.stampedThrough = try inStore { () throws(StoreError) in try store.currentHistoryToken().value }
                progress.pullCursor = nil
            }
            progress.schemaVersion = version
            progress.clock = clock.latest.text
            try inStore { () throws(StoreError) in try store.writeSyncClientRow(progress) }
        }
    }

    /// Runs `body` in one store transaction written as `sync`, its own errors kept as they are.
    func step<T: Sendable>(_ body: @escaping @Sendable (isolated Store) throws(SyncClientError) -> T) async throws(SyncClientError) -> T {
        do {
            return try await store.transaction(author: Self.author) { store in try body(store) }
        } catch {
            if case .body(let inner) = error, let known = inner as? SyncClientError { throw known }
            throw .store(error)
        }
    }

    func tell(_ event: SyncEvent) {
        told.append(event)
        continuation.yield(event)
    }
}

/// What a client tells the app as it syncs.
public enum SyncEvent: Sendable, Hashable {
    /// A push of this many records was acknowledged.
    case pushed(changes: Int)
    /// A page was pulled, changing this many records on the device.
    case pulled(records: Int)
    /// A change of this device's lost to a later one, or to the server's say (`serverWins`):
    /// the device now holds the server's values for these attributes.
    case conflict(entity: String, key: String, attributes: [String])
    /// The server refused a change (a unique value taken, out of scope, invalid): the device
    /// keeps its record as it is, and it is no longer pending. `SyncRejection.detail` says why.
    case rejected(SyncRejection)
    /// A record changed here and not pushed was deleted on the server while the device was away
    /// longer than the server keeps deletes (`SyncServer.purgeTombstones`): the delete stands,
    /// and the device's change to it is dropped, as the record is. Also told of a record made
    /// here under one so deleted, which its delete rule took with it.
    case deletedWhileAway(entity: String, key: String)
    /// A record left this user's scope on the server (a list given to another owner, or an
    /// item under it): it was removed from the device, with any change here not yet accepted.
    case removedFromScope(entity: String, key: String)
    /// A sync failed; the next one goes on from where it stopped.
    case failed(String)
}

/// What one sync did: the events it told, and their counts.
public struct SyncReport: Sendable, Hashable {
    /// Every event of the sync, in order (the same as `SyncClient.events` told).
    public let events: [SyncEvent]

    /// A report of these events.
    ///
    ///     let report = SyncReport(events: [.pushed(changes: 2), .pulled(records: 5)])
    public init(events: [SyncEvent]) { self.events = events }

    /// Changes pushed and acknowledged.
    public var pushedChanges: Int { events.reduce(0) { if case .pushed(let count) = $1 { $0 + count } else { $0 } } }
    /// Records pulled that changed this device.
    public var pulledRecords: Int { events.reduce(0) { if case .pulled(let count) = $1 { $0 + count } else { $0 } } }
    /// The events the app should show: conflicts lost, changes refused, records deleted while
    /// away or removed from the user's scope.
    public var settledOtherwise: [SyncEvent] {
        events.filter { event in
            switch event {
            case .conflict, .rejected, .deletedWhileAway, .removedFromScope: true
            case .pushed, .pulled, .failed: false
            }
        }
    }
}

/// Where a device's sync stands.
public struct SyncStatus: Sendable, Hashable {
    /// Records changed on the device that the server has not acknowledged.
    public let pending: Int
    /// When a sync last finished.
    public let lastSync: Date?
    /// Why the last sync failed, nil when it did not.
    public let lastError: String?
    /// The last push acknowledged.
    public let acknowledged: Int64
}
