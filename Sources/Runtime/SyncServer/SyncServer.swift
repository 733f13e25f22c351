import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// The server side of sync, on a store of the schema (PostgreSQL in production; SQLite works
/// the same): takes devices' pushes and answers their pulls, for a user the server app has
/// already authenticated. The app mounts it behind its own sign-in: it decides who the user is,
/// and this decides what that user may read and write (each entity's `scope`).
///
///     let server = try await SyncServer(store: store, schema: TodoSchema.descriptor)
///     let answer = try await server.push(push, user: signedInUserID)
///
/// A push is applied in one transaction with the server's own state, and is idempotent: a push
/// retried after a lost answer gets the same answer and is applied once. Pulls are answered
/// from the store's history, so the server app's own writes reach devices too, stamped with the
/// server's clock.
public actor SyncServer {
    /// The store of the newest version served.
    public let store: Store
    /// The newest schema version served.
    public let schema: SchemaDescriptor
    /// The most records one pull answers.
    public static let maximumPullLimit = 1_000

    /// Each version served, by number.
    let servedVersions: [Int: ServedVersion]
    let clock: NodeClock

    /// A server for `schema`'s synced entities in `store`, which must record history; its
    /// changes are stamped as `node`'s. Creates the tables it keeps its state in where they are
    /// missing (`StoreTableMigrations.syncTables`).
    ///
    ///     let server = try await SyncServer(store: store, schema: TodoSchema.descriptor)
    public init(store: Store, schema: SchemaDescriptor, node: String = "server", wallClock: @escaping @Sendable () -> Int64 = SyncServer.wallMilliseconds)
        async throws(SyncServerError)
    {
        try await self.init(versions: [Version(store: store, schema: schema)], node: node, wallClock: wallClock)
    }

    /// A server for devices of several versions of one schema at once, each through its own
    /// store: while an online migration is expanded, the version before it and its own are
    /// both served, each version's store opened with that version's generated code (so it
    /// reads and writes through its version's views, `todo_v1`). A device pushes and pulls in
    /// the version its app was built with.
    ///
    ///     let server = try await SyncServer(versions: [.init(store: v1Store, schema: TodoSchemaV1.descriptor),
    ///                                                  .init(store: v2Store, schema: TodoSchema.descriptor)])
    public init(versions: [Version], node: String = "server", wallClock: @escaping @Sendable () -> Int64 = SyncServer.wallMilliseconds) async throws(SyncServerError) {
        let sorted = versions.sorted { $0.schema.version < $1.schema.version }
        guard let newest = sorted.last else { throw .badVersions("no version given") }
        guard Set(sorted.map(\.schema.version)).count == sorted.count else { throw .badVersions("a version is given twice") }
        guard sorted.allSatisfy({ $0.schema.name == newest.schema.name }) else { throw .badVersions("the versions are of different schemas: \(sorted.map(\.schema.name))") }
        for version in sorted {
            guard version.schema.entities.contains(where: { SyncedEntity($0) != nil }) else { throw .nothingSynced(schema: version.schema.name) }
            guard await version.store.recordsHistory else { throw .historyOff(schema: version.schema.name) }
            do { try await version.store.prepareSyncTables() } catch { throw .store(error) }
        }
        store = newest.store
        schema = newest.schema
        // The clock goes on from the latest it gave before a restart, even when the machine's
        // clock went back meanwhile.
        let kept: String?
        do { kept = try await newest.store.syncServerClock() } catch { throw .store(error) }
        do {
            clock = try NodeClock(node: node, latest: kept.flatMap(SyncClock.init(text:)), wallClock: wallClock)
        } catch {
            throw .badDevice(node)
        }
        servedVersions = ServedVersion.all(sorted, clock: clock)
    }

    /// The wall clock in milliseconds since 1970, as clocks count it.
    ///
    ///     let now = SyncServer.wallMilliseconds()
    @Sendable public static func wallMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1_000).rounded(.down)) }

    /// Applies a device's push for `user`, in one transaction, and answers it: the sequence
    /// acknowledged, and each change not applied as sent, with why and the record as it stands.
    /// A push whose sequence was applied before is answered as it was then, and not applied again.
    ///
    ///     let answer = try await server.push(push, user: "ada")
    public func push(_ push: SyncPush, user: String) async throws(SyncServerError) -> SyncPushAnswer {
        guard SyncClock.isNodeName(push.device) else { throw .badDevice(push.device) }
        let version = try version(push.schemaVersion, of: push.device)
        let applier = PushApplier(entities: version.entities, clock: clock, device: push.device, user: user, schemaVersion: push.schemaVersion, seeds: version.seeds)
        return try await inTransaction(version.store) { store throws(SyncServerError) in try applier.apply(push, in: store) }
    }

    /// A page of what changed in `user`'s scope since the pull's cursor: on a new device, every
    /// record in scope (paged, resumable), then what the history holds after that.
    ///
    ///     let page = try await server.pull(SyncPull(device: "ipad-7", schemaVersion: 3, after: saved, limit: 500), user: "ada")
    public func pull(_ pull: SyncPull, user: String) async throws(SyncServerError) -> SyncPullAnswer {
        guard SyncClock.isNodeName(pull.device) else { throw .badDevice(pull.device) }
        let version = try version(pull.schemaVersion, of: pull.device)
        let ordered = version.ordered
        let limit = min(max(pull.limit, 1), Self.maximumPullLimit)
        let cursor: PullCursor
        if let text = pull.after {
            guard let read = PullCursor(text: text, entities: ordered.count) else { throw .badCursor(text) }
            cursor = read
        } else {
            do { cursor = .scan(token: try await version.store.currentHistoryToken().value, entity: 0, after: nil) } catch { throw .store(error) }
        }
        var reader = PullReader(
            entities: ordered, clock: clock, device: pull.device, user: user, schemaVersion: pull.schemaVersion, seeds: version.seeds, resuming: pull.after != nil,
            historyNames: version.historyNames, scopeFieldNames: version.scopeFieldNames)
        // A pull reads in one transaction, under one snapshot: a transaction of another
        // database that ended just after it began is no longer listed under its database, and
        // holds the history back for all of it. Read again outside it, the history is settled:
        // the pull runs again in a new transaction, which reads past it.
        var page = try await inTransaction(version.store) { [reader] store throws(SyncServerError) in try reader.page(after: cursor, limit: limit, in: store) }
        for _ in 1..<Self.pullAttempts {
            guard let token = page.heldBackAfter else { break }
            do { if try await version.store.unsettledHistory(after: token) { break } } catch { throw .store(error) }
            // The first try wrote the device's row: a new device stays new.
            reader.knownBefore = page.known
            page = try await inTransaction(version.store) { [reader] store throws(SyncServerError) in try reader.page(after: cursor, limit: limit, in: store) }
        }
        return page.answer
    }

    /// How many transactions a pull may take while the end of the history it read was held
    /// back by a transaction that has already ended.
    static let pullAttempts = 3

    /// The devices seen, with the user, schema version and last push of each, oldest first.
    ///
    ///     for device in try await server.devices() { print(device.device, device.schemaVersion, device.lastSeen) }
    public func devices() async throws(SyncServerError) -> [SyncDevice] {
        do { return try await store.syncDevices().map(SyncDevice.init) } catch { throw .store(error) }
    }

    /// Removes the tombstones (the states of deleted records) every device has been sent: those
    /// last written before the oldest time a device seen within `deviceRetention` seconds last
    /// caught up (or, for one still on its first sync, was first seen), less `margin` seconds for
    /// commits a moment late. A device not seen for longer that comes back is told
    /// (`tombstonesPurged`) and pulls everything again before it pushes. Returns how
    /// many were removed. Tombstones are kept until this is called: a server app calls it on a
    /// schedule.
    ///
    ///     let purged = try await server.purgeTombstones(deviceRetention: 30 * 86_400)
    public func purgeTombstones(deviceRetention: TimeInterval = 30 * 86_400, margin: TimeInterval = 300) async throws(SyncServerError) -> Int {
        let now = Date()
        let devices: [SyncDeviceRow]
        do { devices = try await store.syncDevices() } catch { throw .store(error) }
        let live = devices.filter { now.timeIntervalSince($0.lastSeen) <= deviceRetention }
        // With no device in retention, nothing any device needs: everything up to now, less the margin.
        let horizon = (live.map { $0.caughtUpAt ?? $0.firstSeen }.min() ?? now).addingTimeInterval(-margin)
        var purged = 0
        let clock = self.clock
        for version in servedVersions.values {
            let (ordered, seeds) = (version.ordered, version.seeds)
            purged += try await inTransaction(version.store) { store throws(SyncServerError) in
                // Rows deleted without sync and not read since get their tombstone first (written
                // now, so kept): their devices have yet to be told.
                let records = SyncStateRecords(clock: clock, seeds: seeds)
                for entity in ordered { _ = try served { () throws(SyncStateError) in try records.stampDeletes(of: entity, in: store) } }
                var count = 0
                do throws(StoreError) {
                    for entity in ordered { count += try store.purgeSyncTombstones(of: entity.descriptor, keyColumn: entity.keyColumn, before: horizon) }
                    // Departures go with the tombstones: every device in retention was told of them.
                    _ = try store.purgeSyncDepartures(before: horizon)
                    let before = try store.syncTombstonesPurgedThrough()
                    if before.map({ $0 < horizon }) ?? true { try store.writeSyncTombstonesPurgedThrough(horizon) }
                } catch {
                    throw .store(error)
                }
                return count
            }
        }
        return purged
    }

    /// The versions served, oldest first.
    ///
    ///     let versions = await server.versions   // [1, 2] while 0002 is expanded
    public var versions: [Int] { servedVersions.keys.sorted() }

    /// The version a device was built with, when it is served.
    private func version(_ number: Int, of device: String) throws(SyncServerError) -> ServedVersion {
        guard let version = servedVersions[number] else { throw .unservedVersion(device: device, version: number, served: versions) }
        return version
    }

    /// Runs `body` in one transaction of `store`, its own errors kept as they are.
    private func inTransaction<T: Sendable>(_ store: Store, _ body: @escaping @Sendable (isolated Store) throws(SyncServerError) -> T) async throws(SyncServerError) -> T {
        let clock = self.clock
        do {
            return try await store.transaction { store in
                let result = try body(store)
                // What was stamped in this transaction is kept with it.
                try store.writeSyncServerClock(clock.latest.text)
                return result
            }
        } catch {
            if case .body(let inner) = error, let known = inner as? SyncServerError { throw known }
            throw .store(error)
        }
    }
}

/// A device as the server last saw it.
public struct SyncDevice: Sendable, Hashable {
    /// Its id.
    public let device: String
    /// The user it syncs for.
    public let user: String
    /// The schema version its app was built with.
    public let schemaVersion: Int
    /// The sequence number of its last push applied (0 before its first).
    public let sequence: Int64
    /// When the server first saw it.
    public let firstSeen: Date
    /// When the server last saw it push or pull.
    public let lastSeen: Date

    init(_ row: SyncDeviceRow) {
        device = row.device
        user = row.user
        schemaVersion = row.schemaVersion
        sequence = row.sequence
        firstSeen = row.firstSeen
        lastSeen = row.lastSeen
    }
}

extension SyncServer {
    /// A transport that calls this server in the same process, for `user`: tests, previews, and
    /// a server that is also a client.
    ///
    ///     let client = try await SyncClient(store: device, schema: schema, device: "ipad-7", transport: server.transport(for: "ada"))
    public nonisolated func transport(for user: String) -> any SyncTransport { LocalSyncTransport(server: self, user: user) }
}

/// Calls a server in the same process.
struct LocalSyncTransport: SyncTransport {
    let server: SyncServer
    let user: String

    func push(_ push: SyncPush) async throws -> SyncPushAnswer {
        do { return try await server.push(push, user: user) } catch { throw Self.told(error) }
    }

    func pull(_ pull: SyncPull) async throws -> SyncPullAnswer {
        do { return try await server.pull(pull, user: user) } catch { throw Self.told(error) }
    }

    /// The server's error as a device is told it over any transport.
    static func told(_ error: SyncServerError) -> SyncTransportError {
        switch error {
        case .cursorExpired: .cursorExpired
        case .tombstonesPurged: .tombstonesPurged
        case .store: .unreachable(error.description)
        default: .refused(error.description)
        }
    }
}
