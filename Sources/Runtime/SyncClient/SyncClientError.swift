import PersistentStoreCore
import SyncCore
import SyncStorage

/// Why a device's sync stopped. Nothing is lost by any of them: what was not acknowledged stays
/// pending, and the next sync goes on from where this one stopped.
public enum SyncClientError: Error, Sendable, CustomStringConvertible {
    /// The device id is no node name (`SyncClock.isNodeName`).
    case badDevice(String)
    /// The store records no history, which local changes are read from.
    case historyOff(schema: String)
    /// The schema declares no entity that syncs.
    case nothingSynced(schema: String)
    /// The store already syncs as another device (one that never synced may take a new id).
    case otherDevice(stored: String, given: String)
    /// The server could not be reached, or refused the request; the message says which.
    case transport(String)
    /// The server's answer breaks the protocol (it acknowledged less than was sent).
    case badAnswer(String)
    /// The device's clock cannot stamp a change (its wall clock is out of range).
    case clock(SyncClockError)
    /// The device's store failed; the step it was in was rolled back.
    case store(StoreError)

    /// What went wrong and what to do; never a record's values.
    public var description: String {
        switch self {
        case .badDevice(let device):
            "device id '\(device.prefix(80))' is not 1 to 64 ASCII letters, digits, '.', '_', ':' or '-'"
        case .historyOff(let schema):
            "sync reads the device's changes from its history: open \(schema)'s store with history on"
        case .nothingSynced(let schema):
            "schema \(schema) declares no entity that syncs: add a `sync:` block (docs/sync.md)"
        case .otherDevice(let stored, let given):
            "this store already syncs as device '\(stored)', not '\(given)': keep one id per store (a new id would push everything again as another device)"
        case .transport(let message):
            "\(message); the changes stay pending and the next sync sends them"
        case .badAnswer(let message):
            "the sync server's answer breaks the protocol: \(message)"
        case .clock(let error):
            "the device's clock cannot stamp a change: \(error); check the device's time"
        case .store(let error):
            "the device's store failed, and the sync step it was in was rolled back: \(error)"
        }
    }

    init(_ error: SyncStateError) {
        switch error {
        case .store(let failure): self = .store(failure)
        case .clock(let failure): self = .clock(failure)
        }
    }
}

/// Runs `body`, its state errors told as the client's.
func onDevice<T>(_ body: () throws(SyncStateError) -> T) throws(SyncClientError) -> T {
    do { return try body() } catch { throw SyncClientError(error) }
}

/// Runs `body`, the store's errors told as the client's.
func inStore<T>(_ body: () throws(StoreError) -> T) throws(SyncClientError) -> T {
    do { return try body() } catch { throw .store(error) }
}
