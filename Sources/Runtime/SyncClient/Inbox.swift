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
        let records = SyncStateRecords(clock: clock)
        // The device's clock goes past the server's, whatever its wall clock says: its next
        // change is made after what it has seen.
        clock.advance(past: page.clock)
        for pulled in page.records {
            for stamp in [pulled.record.latestChange, pulled.record.deleted].compactMap({ $0 }) { clock.advance(past: stamp) }
        }
        var changed = 0
        // Parents first, as the server sends them: a list is written before its items.
        for entity in SyncedEntity.parentsFirst(Array(entities.values)) {
            let pulled = page.records.filter { $0.entity == entity.name && SyncedEntity.storedKey($0.key) != nil }
            guard !pulled.isEmpty else { continue }
            let local = try onDevice { () throws(SyncStateError) in try records.load(entity, keys: pulled.map(\.key), in: store) { _ in records.now() } }
            for record in pulled {
                let mine = local[record.key] ?? SyncedRecord(state: SyncRecord(), row: nil)
                var merged = mine.state
                merged.merge(record.record)
                let rowMatches = (mine.row == nil) == merged.isDeleted
                guard merged != mine.state || !rowMatches else { continue }
                do {
                    try entity.write(merged, key: SyncedEntity.storedKey(record.key)!, over: mine.row, in: store)
                } catch {
                    // Nothing of this page is kept: the next sync takes it again, once the cause is gone.
                    throw .store(.notSupported("the pulled \(record.entity) \(record.key) cannot be written on this device (\(error)); the page is taken again at the next sync"))
                }
                try onDevice { () throws(SyncStateError) in try records.save(merged, of: entity, key: record.key, in: store) }
                changed += 1
            }
        }
        progress.pullCursor = page.next
        return changed
    }
}
