import Foundation
import HTTPServer
import PersistentStoreCore
import SchemaMetadata
import TextEscaping

/// What the pages need of the store's history: a record's changes, and a feed of commits for
/// live pages (server-sent events), from this process and every other one writing to the
/// database.
enum StudioLive {
    /// The newest changes of one record, newest first, at most `limit`. Nil when the schema
    /// keeps no history.
    static func changes(of entity: String, key: [StoredValue], in store: Store, limit: Int = 100) throws -> [(HistoryTransaction, HistoryChange)]? {
        try changes(in: store, limit: limit) { $0.entity == entity && $0.key == key }
    }

    /// The newest deletions of an entity's records, with the values they kept
    /// (`preserveValueOnDeletion`), newest first. Nil when the schema keeps no history.
    static func deletions(of entity: String, in store: Store, limit: Int = 20) throws -> [(HistoryTransaction, HistoryChange)]? {
        try changes(in: store, limit: limit) { $0.entity == entity && $0.kind == .delete }
    }

    /// The newest changes that `matching` keeps, newest first, at most `limit`, read a thousand
    /// transactions at a time from the start of the kept history.
    static func changes(in store: Store, limit: Int, matching: @escaping @Sendable (HistoryChange) -> Bool) throws -> [(HistoryTransaction, HistoryChange)]? {
        try blocking {
            var found: [(HistoryTransaction, HistoryChange)] = []
            var after: HistoryToken?
            while true {
                let page: [HistoryTransaction]
                do {
                    page = try await store.history(after: after, limit: 1000)
                } catch let error as StoreError {
                    if case .historyDisabled = error { return nil }
                    throw error
                }
                for transaction in page {
                    for change in transaction.changes where matching(change) { found.append((transaction, change)) }
                }
                if found.count > limit { found.removeFirst(found.count - limit) }
                guard let last = page.last, page.count == 1000 else { break }
                after = last.token
            }
            return Array(found.reversed())
        }
    }

    /// What a live page follows: the commits of its schema (any, when nil) that touch its entity
    /// (any, when nil), after the history position each schema had when the page read its data.
    struct View {
        var schema: String?
        var entity: String?
        var since: [String: HistoryToken]
    }

    /// Each schema's newest history position (of `schema` alone, when given), read before a
    /// page reads its data: a commit after it reaches the page even if it lands before the
    /// page's event stream connects. Schemas without history have none.
    static func positions(_ catalog: StudioCatalog, schema: String?) -> [String: HistoryToken] {
        var positions: [String: HistoryToken] = [:]
        for entry in catalog.entries where schema == nil || entry.schema.name == schema {
            if let token = try? blocking({ try await entry.store.currentHistoryToken() }) { positions[entry.schema.name] = token }
        }
        return positions
    }

    /// Positions as a page carries them to `/events?since=`: `Flights:120,Garage:7`.
    static func sinceText(_ positions: [String: HistoryToken]) -> String {
        positions.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value.value)" }.joined(separator: ",")
    }

    /// The positions of `sinceText`; a part that is not a schema and a number is left out, and
    /// its schema followed from now.
    static func since(_ text: String) -> [String: HistoryToken] {
        var positions: [String: HistoryToken] = [:]
        for part in text.split(separator: ",") {
            let pieces = part.split(separator: ":")
            guard pieces.count == 2, let value = Int64(pieces[1]), value >= 0 else { continue }
            positions[String(pieces[0])] = HistoryToken(value)
        }
        return positions
    }

    /// Streams each commit of any entry's schema as a `change` event (`{"schema":…,"entities":[…]}`),
    /// after the position `since` gives for it (from now without one), until the client goes; a
    /// comment every 15 seconds finds one that left without a word.
    static func events(_ catalog: StudioCatalog, since: [String: HistoryToken], writer: HTTPBodyWriter) throws {
        let queue = EventQueue()
        var tasks: [Task<Void, Never>] = []
        for entry in catalog.entries {
            let store = entry.store
            let schema = entry.schema.name
            let start = since[schema]
            tasks.append(
                Task {
                    // A position the history no longer holds (pruned) is followed from now.
                    for after in start == nil ? [nil] : [start, nil] {
                        do {
                            for try await transaction in try await store.changes(after: after) {
                                queue.push(schema: schema, entities: transaction.entities, token: transaction.token)
                            }
                            return
                        } catch {
                            // History off for this schema, or the store closed: nothing to follow.
                            if case .historyPruned? = error as? StoreError { continue }
                            return
                        }
                    }
                })
        }
        defer { for task in tasks { task.cancel() } }
        try writer.sendComment("connected")
        while true {
            if let event = queue.pop(waiting: 15) {
                try writer.sendEvent(event, event: "change")
            } else {
                try writer.sendComment("alive")
            }
        }
    }

    /// Events from the stores' tasks to the connection's thread.
    final class EventQueue: @unchecked Sendable {
        private let lock = NSLock()
        private let available = DispatchSemaphore(value: 0)
        private var events: [String] = []

        func push(schema: String, entities: [String], token: HistoryToken) {
            let json = "{\"schema\":\(TextEscaping.json(schema)),\"entities\":[\(entities.map(TextEscaping.json).joined(separator: ","))],\"token\":\(token.value)}"
            lock.withLock { events.append(json) }
            available.signal()
        }

        func pop(waiting seconds: Double) -> String? {
            guard available.wait(timeout: .now() + seconds) == .success else { return nil }
            return lock.withLock { events.isEmpty ? nil : events.removeFirst() }
        }
    }
}
