import Foundation
import PersistentStoreCore
import SchemaMetadata
import SyncCore
import SyncStorage

/// Merges a pulled page into the device's store, in one transaction with the cursor that ends
/// it: a device killed mid-pull has taken whole pages, and pulls the rest from where it stopped.
struct Inbox: Sendable {
    let entities: [String: SyncedEntity]
    let clock: NodeClock

    /// Merges each record into the device's, writes the rows that changed (as author `sync`, so
    /// they are never pushed back), and moves the cursor. Returns how many records changed.
    func take(_ page: SyncPullAnswer, _ progress: inout SyncClientRow, in store: isolated Store) throws(SyncClientError) -> Int {
        let records = SyncStateRecords(node: clock.node)
        var changed = 0
        for pulled in page.records {
            // An entity this version of the app does not have is the server's, not the device's.
            guard let entity = entities[pulled.entity], let key = SyncedEntity.storedKey(pulled.key) else { continue }
            let local =
                try onDevice { () throws(SyncStateError) in try records.load(entity, keys: [pulled.key], in: store, stamp: clock.tick) }[pulled.key]
                ?? SyncedRecord(state: SyncRecord(), row: nil)
            var merged = local.state
            merged.merge(pulled.record)
            for stamp in [pulled.record.latestChange, pulled.record.deleted].compactMap({ $0 }) { try? clock.receive(stamp) }
            let rowMatches = (local.row == nil) == merged.isDeleted
            guard merged != local.state || !rowMatches else { continue }
            do {
                try entity.write(merged, key: key, over: local.row, in: store)
            } catch {
                // Nothing of this page is kept: the next sync takes it again, once the cause is gone.
                throw .store(.notSupported("the pulled \(pulled.entity) \(pulled.key) cannot be written on this device (\(error)); the page is taken again at the next sync"))
            }
            try onDevice { () throws(SyncStateError) in try records.save(merged, of: entity, key: pulled.key, in: store) }
            changed += 1
        }
        progress.pullCursor = page.next
        return changed
    }
}
