import PersistentStoreCore
import SyncCore
import SyncStorage

/// Why a sync server refused a whole request (a push or a pull). A single record it cannot take
/// is no error: it comes back in the answer as a `SyncRejection`.
public enum SyncServerError: Error, Sendable, CustomStringConvertible {
    /// The store records no history, which pulls are answered from.
    case historyOff(schema: String)
    /// The schema declares no entity that syncs (no `sync:` block).
    case nothingSynced(schema: String)
    /// The device named is no node name (`SyncClock.isNodeName`).
    case badDevice(String)
    /// The device was first seen with another user: a device id is one user's.
    case deviceOfAnotherUser(device: String)
    /// The device was built with a schema version the server does not serve (`served`, oldest
    /// first).
    case unservedVersion(device: String, version: Int, served: [Int])
    /// The versions given to serve are not versions of one schema, each once.
    case badVersions(String)
    /// A pull's cursor is not one this server gave.
    case badCursor(String)
    /// The pull cannot go on from the cursor: the history after it was pruned, or a record moved
    /// into or out of the user's scope with more records under it than a page brings. The
    /// device pulls again from the start (no cursor), merging what it has, so nothing unsynced
    /// is lost.
    case cursorExpired(String)
    /// The device last caught up before tombstones were purged (`SyncServer.purgeTombstones`):
    /// it may hold records whose deletes it will never be sent. It pulls everything again from
    /// the start, forgetting the records the server no longer holds; a push from it is refused
    /// whole until then, so that a change to such a record does not bring it back.
    case tombstonesPurged(device: String)
    /// The device's clock runs ahead of the server's by more than a minute: its push is refused
    /// whole, and it keeps its changes to send once its clock is right.
    case clockAhead(device: String, byMilliseconds: Int64)
    /// The server's own clock cannot stamp a change (its wall clock is out of range).
    case clock(SyncClockError)
    /// The store failed; nothing of the request was written.
    case store(StoreError)

    /// What went wrong and what to do, naming what and where; never a user's data.
    public var description: String {
        switch self {
        case .historyOff(let schema):
            "sync needs the store's history, which pulls are answered from: open \(schema)'s server store with history on (`Configuration(recordsHistory: true)`)"
        case .nothingSynced(let schema):
            "schema \(schema) declares no entity that syncs: add a `sync:` block (docs/sync.md)"
        case .badDevice(let device):
            "device id '\(device.prefix(80))' is not 1 to 64 ASCII letters, digits, '.', '_', ':' or '-'"
        case .deviceOfAnotherUser(let device):
            "device '\(device)' belongs to another user: a device id is one user's; a device that signs in as another user needs a new id"
        case .unservedVersion(let device, let version, let served):
            "device '\(device)' was built with schema version \(version); this server serves "
                + (served.count == 1 ? "version \(served[0])" : "versions " + served.map(String.init).joined(separator: " and "))
                + (version < served[0] ? ", so the app on the device must be updated (its unsynced changes stay on it until then)" : ": deploy the server of version \(version) first")
        case .badVersions(let problem):
            "the sync server cannot serve these versions: \(problem)"
        case .badCursor(let cursor):
            "the pull's cursor '\(cursor.prefix(80))' is not one this server gave: pull again from the start (no cursor)"
        case .tombstonesPurged(let device):
            "device '\(device)' last caught up before the server purged the records deleted since: it pulls everything again from the start before it pushes; its changes to records the server still holds are kept"
        case .cursorExpired(let cursor):
            "the pull cannot go on from its cursor '\(cursor.prefix(80))' (the history after it was pruned, or a record moved with more records under it than a page brings): pull again from the start (no cursor); what the device holds is merged, not lost"
        case .clockAhead(let device, let ahead):
            "device '\(device)' stamps its changes \(ahead / 1_000) s ahead of the server's clock: set the device's time right; its changes wait on it until then"
        case .clock(let error):
            "the sync server's clock cannot stamp a change: \(error); check the machine's time"
        case .store(let error):
            "the sync server's store failed, and nothing of the request was written: \(error)"
        }
    }
}

/// Runs `body`, its state errors told as the server's.
func served<T>(_ body: () throws(SyncStateError) -> T) throws(SyncServerError) -> T {
    do {
        return try body()
    } catch {
        switch error {
        case .store(let failure): throw .store(failure)
        case .clock(let failure): throw .clock(failure)
        }
    }
}
