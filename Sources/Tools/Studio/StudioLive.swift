import Foundation
import HTTPServer
import PersistentStoreCore
import SchemaMetadata
import TextEscaping

/// What the pages need of the store's history: a record's changes, and a feed of commits for
/// live pages (server-sent events), from this process and every other one writing to the
/// database.
enum StudioLive {
    /// The newest changes of one record, newest first, at most `limit`, from the entity's
    /// latest `StudioLive.lookBack` transactions. Nil when the schema keeps no history.
    static func changes(of entity: String, key: [StoredValue], in store: Store, limit: Int = 100) throws -> [(HistoryTransaction, HistoryChange)]? {
        try changes(touching: entity, in: store, limit: limit) { $0.entity == entity && $0.key == key }
    }

    /// The newest deletions of an entity's records, with the values they kept
    /// (`preserveValueOnDeletion`), newest first, from its latest `lookBack` transactions. Nil
    /// when the schema keeps no history.
    static func deletions(of entity: String, in store: Store, limit: Int = 20) throws -> [(HistoryTransaction, HistoryChange)]? {
        try changes(touching: entity, in: store, limit: limit) { $0.entity == entity && $0.kind == .delete }
    }

    /// How many of an entity's transactions a page reads back through, newest first: a page
    /// costs the same however long the history is.
    static let lookBack = 5000

    /// The newest changes that `matching` keeps among the transactions that touched `entity`,
    /// newest first, at most `limit`: read back from now, 500 transactions at a time.
    static func changes(touching entity: String, in store: Store, limit: Int, matching: @escaping @Sendable (HistoryChange) -> Bool) throws -> [(
        HistoryTransaction, HistoryChange
    )]? {
        try waitingOnThisThread {
            var found: [(HistoryTransaction, HistoryChange)] = []
            var before: HistoryToken?
            var read = 0
            while found.count < limit, read < lookBack {
                let page: [HistoryTransaction]
                do {
                    page = try await store.recentHistory(before: before, touching: entity, limit: 500)
                } catch let error as StoreError {
                    if case .historyDisabled = error { return nil }
                    throw error
                }
                for transaction in page {
                    for change in transaction.changes.reversed() where matching(change) { found.append((transaction, change)) }
                }
                read += page.count
                guard let last = page.last, page.count == 500 else { break }
                before = last.token
            }
            return Array(found.prefix(limit))
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
            if let token = try? waitingOnThisThread({ try await entry.store.currentHistoryToken() }) { positions[entry.schema.name] = token }
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
        // Each event's id is every schema's position after it: a stream that reconnects
        // (Last-Event-ID) goes on from there, neither missing nor repeating.
        var positions = since
        // Waits of a second: a stopping server is noticed within one.
        var quiet = 0
        while !writer.serverIsStopping {
            if let event = queue.pop(waiting: 1) {
                positions[event.schema] = event.token
                try writer.sendEvent(event.json, event: "change", id: sinceText(positions))
                quiet = 0
            } else {
                quiet += 1
                if quiet >= 15 {
                    try writer.sendComment("alive")
                    quiet = 0
                }
            }
        }
    }

    /// Events from the stores' tasks to the connection's thread.
    final class EventQueue: @unchecked Sendable {
        private let lock = NSLock()
        private let available = DispatchSemaphore(value: 0)
        private var events: [(schema: String, token: HistoryToken, json: String)] = []

        func push(schema: String, entities: [String], token: HistoryToken) {
            let json = "{\"schema\":\(TextEscaping.json(schema)),\"entities\":[\(entities.map(TextEscaping.json).joined(separator: ","))],\"token\":\"\(token.value)\"}"
            lock.withLock { events.append((schema, token, json)) }
            available.signal()
        }

        func pop(waiting seconds: Double) -> (schema: String, token: HistoryToken, json: String)? {
            guard available.wait(timeout: .now() + seconds) == .success else { return nil }
            return lock.withLock { events.isEmpty ? nil : events.removeFirst() }
        }
    }
}
