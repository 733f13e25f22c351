import CSQLite
import ExampleModels
import Foundation
import MigratorCore
import MigratorSQLite
import PersistentStoreCore
import PersistentStoreSQLite
import SQLiteKit
import SchemaMetadata
import TextEscaping

#if canImport(Glibc)
import Glibc
#endif

/// `store-benchmark inbox-store|inbox-store-without-history|inbox-raw|inbox-raw-history ROWS DIR`: a mail client's store (`Schemas/Inbox.yaml`:
/// a unique Message-ID, two secondary indexes, history on, an external attachment on one
/// message in `attachmentEvery`), written as a sync writes it, in transactions of `batch`
/// messages: ROWS new messages inserted; ROWS more imported with `.ignore` (all new: an import);
/// the first ROWS imported again with `.ignore` (all stored: no attachment written); ROWS upserted of which half are
/// stored; the first ROWS marked read with `.update(only: [\.isRead])`; everything fetched (the median of five). The
/// raw side does the same through the SQLite C API, attachments included (a file written with
/// fsync and renamed, a replaced one removed after the commit, read back for the models it
/// returns), without history; `inbox-raw-history` does it writing the history rows the store
/// writes, as JSON (an update's changed attributes only). The raw sides also time the stored
/// rows' import looking them up first (`ignore_stored_looking_up_first`), as the store does once
/// a batch met a stored row. Prints the seconds of each phase.
enum InboxBench {
    static let batch = 500
    static let attachmentEvery = 100
    static let attachmentBytes = 4_096
    /// The fetch of every message is short (tens of milliseconds): its time is the median of
    /// this many, on both sides.
    static let fetchRepeats = 5
    static let phases = ["insert", "ignore", "ignore_stored", "ignore_stored_looking_up_first", "upsert", "update_only", "fetch", "fetch_elsewhere"]

    static func message(_ index: Int, revision: Int = 0) -> Message {
        let received = Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 7)
        return Message(
            messageID: "<\(index).\(index % 9_973)@mail.example.com>", mailbox: ["INBOX", "Archive", "Sent"][index % 3], sender: "sender\(index % 1_000)@example.org",
            subject: "Re: the plan, part \(index) (\(revision))", preview: "Thanks, that works for me. See you on the \(index % 28 + 1)th.",
            receivedAt: received, size: 2_000 + index % 50_000,
            attachment: index % attachmentEvery == 0 ? Data((0..<attachmentBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }) : nil)
    }

    static func batches(_ range: Range<Int>, revision: Int = 0) -> [[Message]] {
        stride(from: range.lowerBound, to: range.upperBound, by: batch).map { start in (start..<min(start + batch, range.upperBound)).map { message($0, revision: revision) } }
    }

    /// The phases' inputs, made before any is timed.
    struct Inputs {
        let insert, ignore, ignoreStored, upsert, updateOnly: [[Message]]
        init(rows: Int) {
            insert = batches(0..<rows)
            ignore = batches(rows..<2 * rows)
            ignoreStored = batches(0..<rows, revision: 1)
            upsert = batches(rows * 3 / 2..<rows * 5 / 2, revision: 2)
            updateOnly = batches(0..<rows, revision: 3).map { batch in
                batch.map { message in
                    var read = message
                    read.isRead = true
                    return read
                }
            }
        }
    }

    static func viaStore(_ path: String, rows: Int, history: Bool) async throws -> [String: Double] {
        let inputs = Inputs(rows: rows)
        let store = try Store(path: path, schema: InboxSchema.descriptor, migrations: InboxSchema.migrations, configuration: .init(recordsHistory: history))
        var times: [String: Double] = [:]
        var kept = 0
        let start = DispatchTime.now().uptimeNanoseconds
        for batch in inputs.insert { kept += try await store.insert(batch).count }
        let inserted = DispatchTime.now().uptimeNanoseconds
        times["insert"] = Double(inserted - start) / 1e9
        for batch in inputs.ignore { kept += try await store.insert(batch, onConflict: .ignore).count }
        let ignored = DispatchTime.now().uptimeNanoseconds
        times["ignore"] = Double(ignored - inserted) / 1e9
        for batch in inputs.ignoreStored { kept += try await store.insert(batch, onConflict: .ignore).count }
        let ignoredStored = DispatchTime.now().uptimeNanoseconds
        times["ignore_stored"] = Double(ignoredStored - ignored) / 1e9
        for batch in inputs.upsert { kept += try await store.insert(batch).count }
        let upserted = DispatchTime.now().uptimeNanoseconds
        times["upsert"] = Double(upserted - ignoredStored) / 1e9
        for batch in inputs.updateOnly { kept += try await store.insert(batch, onConflict: .update(only: [\.isRead])).count }
        let updated = DispatchTime.now().uptimeNanoseconds
        times["update_only"] = Double(updated - upserted) / 1e9
        var all: [Message] = []
        var fetches: [Double] = []
        for _ in 0..<fetchRepeats {
            let start = DispatchTime.now().uptimeNanoseconds
            all = try await store.fetch(Message.self)
            fetches.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        times["fetch"] = fetches.sorted()[fetchRepeats / 2]
        _ = updated
        guard all.count == rows * 5 / 2, kept == rows * 5, all.filter(\.isRead).count == rows else { throw CancellationError() }
        return times
    }

    // MARK: - The same work through the C API

    static let columns = ["message_id", "mailbox", "sender", "subject", "preview", "received_at", "is_read", "is_flagged", "size", "attachment"]

    /// The raw side's state: the connection, its statements, the attachments' folder and the
    /// files to remove once the transaction commits.
    final class Raw {
        let db: OpaquePointer
        let folder: String
        var statements: [String: OpaquePointer] = [:]
        var removeAfterCommit: [String] = []
        var models: [Message] = []
        /// With a history: the statement that writes a transaction's history row, and the
        /// entries of the transaction under way.
        var history: OpaquePointer?
        var entries: [String] = []

        init(path: String) throws {
            let setup = try SQLiteConnection(path: path)
            _ = try setup.query("PRAGMA journal_mode = WAL;")
            try Migrator(connection: setup, schema: InboxSchema.name, embedded: InboxSchema.migrations).up()
            var db: OpaquePointer?
            sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
            self.db = db!
            sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; " + SQLiteSettings.applicationStore.pragmas(inMemory: false), nil, nil, nil)
            folder = path + ".external/message/attachment"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        deinit {
            for statement in statements.values { sqlite3_finalize(statement) }
            sqlite3_close(db)
        }

        func statement(_ sql: String) -> OpaquePointer {
            if let prepared = statements[sql] { return prepared }
            var prepared: OpaquePointer?
            sqlite3_prepare_v2(db, sql, -1, &prepared, nil)
            statements[sql] = prepared!
            return prepared!
        }

        /// One transaction, with its history row when there is a history and it changed
        /// anything; replaced files removed after it commits.
        func transaction(_ body: () -> Void) {
            sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
            body()
            if let history, !entries.isEmpty {
                sqlite3_bind_double(history, 1, Date().timeIntervalSince1970)
                StoreBenchmark.bindText(history, 2, "[" + entries.joined(separator: ",") + "]")
                sqlite3_step(history)
                sqlite3_reset(history)
                entries.removeAll(keepingCapacity: true)
            }
            sqlite3_exec(db, "COMMIT", nil, nil, nil)
            for name in removeAfterCommit { unlink(folder + "/" + name) }
            removeAfterCommit.removeAll()
        }

        /// The attachment written durably (temp file, fsync, rename) under a new name.
        func writeAttachment(_ data: Data?) -> String? {
            guard let data else { return nil }
            let name = UUID().uuidString.lowercased()
            writeAttachment(data, named: name)
            return name
        }

        func writeAttachment(_ data: Data?, named name: String) {
            guard let data else { return }
            let path = folder + "/" + name
            let descriptor = open(path + ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            _ = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            fsync(descriptor)
            close(descriptor)
            rename(path + ".tmp", path)
        }

        func readAttachment(_ name: String) -> Data? { FileManager.default.contents(atPath: folder + "/" + name) }

        func bind(_ statement: OpaquePointer, _ message: Message, attachment: String?) {
            StoreBenchmark.bindText(statement, 1, message.messageID)
            StoreBenchmark.bindText(statement, 2, message.mailbox)
            StoreBenchmark.bindText(statement, 3, message.sender)
            StoreBenchmark.bindText(statement, 4, message.subject)
            StoreBenchmark.bindText(statement, 5, message.preview)
            StoreBenchmark.bindDate(statement, 6, message.receivedAt)
            sqlite3_bind_int64(statement, 7, message.isRead ? 1 : 0)
            sqlite3_bind_int64(statement, 8, message.isFlagged ? 1 : 0)
            sqlite3_bind_int64(statement, 9, Int64(message.size))
            StoreBenchmark.bindText(statement, 10, attachment)
        }

        /// A row of `SELECT id, <columns>` (or `RETURNING` them) as a model, its attachment read.
        func model(_ statement: OpaquePointer) -> Message {
            func text(_ column: Int32) -> String { String(cString: sqlite3_column_text(statement, column)) }
            let attachment = sqlite3_column_type(statement, 10) == SQLITE_NULL ? nil : readAttachment(text(10))
            return Message(
                id: sqlite3_column_int64(statement, 0), messageID: text(1), mailbox: text(2), sender: text(3), subject: text(4), preview: text(5),
                receivedAt: StoreBenchmark.parseDate(text(6))!, isRead: sqlite3_column_int64(statement, 7) != 0, isFlagged: sqlite3_column_int64(statement, 8) != 0,
                size: Int(sqlite3_column_int64(statement, 9)), attachment: attachment)
        }

        /// The model as written, with the key the insert gave.
        func written(_ message: Message) -> Message {
            var stored = message
            stored.id = sqlite3_last_insert_rowid(db)
            return stored
        }

        static let list = (["id"] + columns).map { "\"\($0)\"" }.joined(separator: ", ")
        static let insertSQL = "INSERT INTO message (\(columns.map { "\"\($0)\"" }.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
        static let selectSQL = "SELECT \(list) FROM message WHERE message_id = ?"

        func insert(_ batch: [Message]) {
            let insert = statement(Self.insertSQL)
            transaction {
                for message in batch {
                    bind(insert, message, attachment: writeAttachment(message.attachment))
                    sqlite3_step(insert)
                    sqlite3_reset(insert)
                    models.append(written(message))
                    recordInsert(of: message)
                }
            }
        }

        /// The history entry of an insert, as the store writes it: the key, the attributes, the
        /// values (the external attachment listed without its value).
        func recordInsert(of message: Message) {
            guard history != nil else { return }
            var json = "{\"entity\":\"Message\",\"kind\":\"insert\",\"keys\":[\(sqlite3_last_insert_rowid(db))],\"changed\":\(Self.changedNames),\"values\":{"
            json += "\"messageID\":" + TextEscaping.json(message.messageID) + ",\"mailbox\":" + TextEscaping.json(message.mailbox)
            json += ",\"sender\":" + TextEscaping.json(message.sender) + ",\"subject\":" + TextEscaping.json(message.subject)
            json += ",\"preview\":" + TextEscaping.json(message.preview) + ",\"receivedAt\":" + TextEscaping.json(StoreBenchmark.formatDate(message.receivedAt))
            json += ",\"isRead\":\(message.isRead ? 1 : 0),\"isFlagged\":\(message.isFlagged ? 1 : 0),\"size\":\(message.size)}}"
            entries.append(json)
        }

        /// The history entry of an update: the attributes whose values changed, with them.
        func recordUpdate(id: Int64, changed: [(name: String, json: String)]) {
            guard history != nil, !changed.isEmpty else { return }
            let names = changed.map { "\"\($0.name)\"" }.joined(separator: ",")
            let values = changed.map { "\"\($0.name)\":\($0.json)" }.joined(separator: ",")
            entries.append("{\"entity\":\"Message\",\"kind\":\"update\",\"keys\":[\(id)],\"changed\":[\(names)],\"values\":{\(values)}}")
        }

        /// What an upsert of `message` changes of the stored row `select` is on (the external
        /// attachment compared by presence: the raw side names its files at random).
        func changes(from select: OpaquePointer, to message: Message) -> [(name: String, json: String)] {
            func text(_ column: Int32) -> String { String(cString: sqlite3_column_text(select, column)) }
            var changed: [(name: String, json: String)] = []
            func compare(_ name: String, _ stored: String, _ new: String) { if stored != new { changed.append((name, TextEscaping.json(new))) } }
            func compare(_ name: String, _ stored: Int64, _ new: Int64) { if stored != new { changed.append((name, String(new))) } }
            compare("mailbox", text(2), message.mailbox)
            compare("sender", text(3), message.sender)
            compare("subject", text(4), message.subject)
            compare("preview", text(5), message.preview)
            compare("receivedAt", text(6), StoreBenchmark.formatDate(message.receivedAt))
            compare("isRead", sqlite3_column_int64(select, 7), message.isRead ? 1 : 0)
            compare("isFlagged", sqlite3_column_int64(select, 8), message.isFlagged ? 1 : 0)
            compare("size", sqlite3_column_int64(select, 9), Int64(message.size))
            if (sqlite3_column_type(select, 10) == SQLITE_NULL) != (message.attachment == nil) { changed.append(("attachment", "null")) }
            return changed
        }

        static let changedNames =
            "[" + ["messageID", "mailbox", "sender", "subject", "preview", "receivedAt", "isRead", "isFlagged", "size", "attachment"].map { "\"\($0)\"" }.joined(separator: ",") + "]"

        /// Insert-if-absent: the attachment written only once the row went in (as the store
        /// does), the stored row read when the insert did nothing.
        func ignore(_ batch: [Message]) {
            let insert = statement(Self.insertSQL + " ON CONFLICT DO NOTHING")
            let select = statement(Self.selectSQL)
            transaction {
                for message in batch {
                    let name = message.attachment.map { _ in UUID().uuidString.lowercased() }
                    bind(insert, message, attachment: name)
                    sqlite3_step(insert)
                    sqlite3_reset(insert)
                    if sqlite3_changes(db) > 0 {
                        if let name { writeAttachment(message.attachment, named: name) }
                        models.append(written(message))
                        recordInsert(of: message)
                        continue
                    }
                    StoreBenchmark.bindText(select, 1, message.messageID)
                    if sqlite3_step(select) == SQLITE_ROW { models.append(model(select)) }
                    sqlite3_reset(select)
                }
            }
        }

        /// Insert-if-absent that looks the batch's Message-IDs up first, 100 to a statement, and
        /// inserts only those not found (as the store does once a batch met a stored row). What
        /// the store's `.ignore` of stored rows is also compared with.
        func ignoreLookingUpFirst(_ batch: [Message]) -> [Message] {
            let chunk = 100
            let lookup = statement(Self.selectSQL.replacingOccurrences(of: "= ?", with: "IN (" + Array(repeating: "?", count: chunk).joined(separator: ", ") + ")"))
            let insert = statement(Self.insertSQL + " ON CONFLICT DO NOTHING")
            var returned: [Message] = []
            transaction {
                for start in stride(from: 0, to: batch.count, by: chunk) {
                    let part = batch[start..<min(start + chunk, batch.count)]
                    for position in 0..<chunk { StoreBenchmark.bindText(lookup, Int32(position + 1), part[min(start + position, part.endIndex - 1)].messageID) }
                    var found: [String: Message] = [:]
                    while sqlite3_step(lookup) == SQLITE_ROW {
                        let model = model(lookup)
                        found[model.messageID] = model
                    }
                    sqlite3_reset(lookup)
                    for message in part {
                        if let stored = found[message.messageID] {
                            returned.append(stored)
                            continue
                        }
                        let name = message.attachment.map { _ in UUID().uuidString.lowercased() }
                        bind(insert, message, attachment: name)
                        sqlite3_step(insert)
                        sqlite3_reset(insert)
                        if let name, sqlite3_changes(db) > 0 { writeAttachment(message.attachment, named: name) }
                        returned.append(written(message))
                    }
                }
            }
            return returned
        }

        /// Upsert: the stored row's attachment looked up first, to remove it when replaced.
        func upsert(_ batch: [Message]) {
            let upsert = statement(
                Self.insertSQL + " ON CONFLICT (message_id) DO UPDATE SET " + columns.dropFirst().map { "\"\($0)\" = excluded.\"\($0)\"" }.joined(separator: ", "))
            // With a history, the whole stored row, to record what changed.
            let lookup = statement(history == nil ? "SELECT id, attachment FROM message WHERE message_id = ?" : Self.selectSQL)
            let attachmentColumn: Int32 = history == nil ? 1 : 10
            transaction {
                for message in batch {
                    StoreBenchmark.bindText(lookup, 1, message.messageID)
                    var stored: (id: Int64, attachment: String?)?
                    var changed: [(name: String, json: String)] = []
                    if sqlite3_step(lookup) == SQLITE_ROW {
                        let attachment = sqlite3_column_type(lookup, attachmentColumn) == SQLITE_NULL ? nil : String(cString: sqlite3_column_text(lookup, attachmentColumn))
                        stored = (sqlite3_column_int64(lookup, 0), attachment)
                        if history != nil { changed = changes(from: lookup, to: message) }
                    }
                    sqlite3_reset(lookup)
                    bind(upsert, message, attachment: writeAttachment(message.attachment))
                    sqlite3_step(upsert)
                    sqlite3_reset(upsert)
                    if let stored { recordUpdate(id: stored.id, changed: changed) } else { recordInsert(of: message) }
                    if let old = stored?.attachment { removeAfterCommit.append(old) }
                    var model = written(message)
                    if let stored { model.id = stored.id }
                    models.append(model)
                }
            }
        }

        /// `.update(only: [isRead])`: the upsert sets that column and returns the stored row.
        func updateOnly(_ batch: [Message]) {
            let upsert = statement(Self.insertSQL + " ON CONFLICT (message_id) DO UPDATE SET is_read = excluded.is_read RETURNING \(Self.list)")
            // With a history, the stored value first, to record it only where it changed.
            let before = statement("SELECT is_read FROM message WHERE message_id = ?")
            transaction {
                for message in batch {
                    var wasRead: Int64?
                    if history != nil {
                        StoreBenchmark.bindText(before, 1, message.messageID)
                        if sqlite3_step(before) == SQLITE_ROW { wasRead = sqlite3_column_int64(before, 0) }
                        sqlite3_reset(before)
                    }
                    let name = writeAttachment(message.attachment)
                    bind(upsert, message, attachment: name)
                    if sqlite3_step(upsert) == SQLITE_ROW {
                        let stored = model(upsert)
                        if let wasRead, let id = stored.id {
                            let isRead: Int64 = stored.isRead ? 1 : 0
                            recordUpdate(id: id, changed: isRead == wasRead ? [] : [("isRead", String(isRead))])
                        } else if history != nil {
                            entries.append("{\"entity\":\"Message\",\"kind\":\"insert\",\"keys\":[\(stored.id ?? 0)]}")
                        }
                        if let name, sqlite3_column_type(upsert, 10) == SQLITE_NULL || String(cString: sqlite3_column_text(upsert, 10)) != name { removeAfterCommit.append(name) }
                        models.append(stored)
                    }
                    sqlite3_reset(upsert)
                }
            }
        }

        func fetchAll() -> [Message] {
            var fetched: [Message] = []
            let select = statement("SELECT \(Self.list) FROM message ORDER BY id")
            while sqlite3_step(select) == SQLITE_ROW { fetched.append(model(select)) }
            sqlite3_reset(select)
            return fetched
        }
    }

    /// Runs the raw fetch on a thread of its own and hands the models back.
    final class Elsewhere: @unchecked Sendable {
        let raw: Raw
        var fetched: [Message] = []
        init(_ raw: Raw) { self.raw = raw }

        func fetch() -> [Message] {
            let done = DispatchSemaphore(value: 0)
            Thread {
                self.fetched = self.raw.fetchAll()
                done.signal()
            }.start()
            done.wait()
            return fetched
        }
    }

    /// The raw side writing, per transaction, the history row the store would: the changed
    /// rows' keys, attributes and values as JSON, one `schemagen_history` row (the table made by
    /// a store opened on the file first), only the attributes whose values changed for an
    /// update. What recording the changes costs anyone, the store's floor.
    static func rawWithHistory(_ path: String, rows: Int) async throws -> [String: Double] {
        _ = try Store(path: path, schema: InboxSchema.descriptor, migrations: InboxSchema.migrations)
        return try raw(path, rows: rows, history: true)
    }

    static func raw(_ path: String, rows: Int, history: Bool = false) throws -> [String: Double] {
        let inputs = Inputs(rows: rows)
        let raw = try Raw(path: path)
        if history {
            raw.history = raw.statement("INSERT INTO schemagen_history (schema, author, committed_at, entities, changes) VALUES ('Inbox', NULL, ?, '[\"Message\"]', ?)")
        }
        var times: [String: Double] = [:]
        times["insert"] = StoreBenchmark.seconds { for batch in inputs.insert { raw.insert(batch) } }
        times["ignore"] = StoreBenchmark.seconds { for batch in inputs.ignore { raw.ignore(batch) } }
        times["ignore_stored"] = StoreBenchmark.seconds { for batch in inputs.ignoreStored { raw.ignore(batch) } }
        var lookedUp = 0
        times["ignore_stored_looking_up_first"] = StoreBenchmark.seconds { for batch in inputs.ignoreStored { lookedUp += raw.ignoreLookingUpFirst(batch).count } }
        guard lookedUp == rows else { throw CancellationError() }

        times["upsert"] = StoreBenchmark.seconds { for batch in inputs.upsert { raw.upsert(batch) } }
        times["update_only"] = StoreBenchmark.seconds { for batch in inputs.updateOnly { raw.updateOnly(batch) } }
        var all: [Message] = []
        let fetches = (0..<fetchRepeats).map { _ in StoreBenchmark.seconds { all = raw.fetchAll() } }
        times["fetch"] = fetches.sorted()[fetchRepeats / 2]
        // The same fetch as an actor's caller gets it: read on a thread of its own, released on
        // the caller's. Memory a thread allocates comes from its own arena, which the other
        // thread's frees shrink and the next fetch grows again.
        let elsewhere = (0..<fetchRepeats).map { _ in StoreBenchmark.seconds { all = Elsewhere(raw).fetch() } }
        times["fetch_elsewhere"] = elsewhere.sorted()[fetchRepeats / 2]
        guard all.count == rows * 5 / 2, raw.models.count == rows * 5, all.filter(\.isRead).count == rows else { throw CancellationError() }
        return times
    }
}
