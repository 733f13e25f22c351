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

/// `store-benchmark inbox-store|inbox-store-without-history|inbox-raw ROWS DIR`: a mail client's store (`Schemas/Inbox.yaml`:
/// a unique Message-ID, two secondary indexes, history on, an external attachment on one
/// message in `attachmentEvery`), written as a sync writes it, in transactions of `batch`
/// messages: ROWS new messages inserted; ROWS more imported with `.ignore` (all new: an import);
/// the first ROWS imported again with `.ignore` (all stored); ROWS upserted of which half are
/// stored; the first ROWS marked read with `.update(only: [\.isRead])`; everything fetched (the median of five). The
/// raw side does the same through the SQLite C API, attachments included (a file written with
/// fsync and renamed, a replaced one removed after the commit, read back for the models it
/// returns), without history. Prints the seconds of each phase.
enum InboxBench {
    static let batch = 500
    static let attachmentEvery = 100
    static let attachmentBytes = 4_096
    /// The fetch of every message is short (tens of milliseconds): its time is the median of
    /// this many, on both sides.
    static let fetchRepeats = 5
    static let phases = ["insert", "ignore", "ignore_stored", "upsert", "update_only", "fetch"]

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

        /// One transaction; replaced files removed after it commits.
        func transaction(_ body: () -> Void) {
            sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
            body()
            sqlite3_exec(db, "COMMIT", nil, nil, nil)
            for name in removeAfterCommit { unlink(folder + "/" + name) }
            removeAfterCommit.removeAll()
        }

        /// The attachment written durably (temp file, fsync, rename) under a new name.
        func writeAttachment(_ data: Data?) -> String? {
            guard let data else { return nil }
            let name = UUID().uuidString.lowercased()
            let path = folder + "/" + name
            let descriptor = open(path + ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            _ = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            fsync(descriptor)
            close(descriptor)
            rename(path + ".tmp", path)
            return name
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
                }
            }
        }

        /// Insert-if-absent: the stored row read when the insert did nothing.
        func ignore(_ batch: [Message]) {
            let insert = statement(Self.insertSQL + " ON CONFLICT DO NOTHING")
            let select = statement(Self.selectSQL)
            transaction {
                for message in batch {
                    let name = writeAttachment(message.attachment)
                    bind(insert, message, attachment: name)
                    sqlite3_step(insert)
                    sqlite3_reset(insert)
                    if sqlite3_changes(db) > 0 {
                        models.append(written(message))
                        continue
                    }
                    if let name { removeAfterCommit.append(name) }
                    StoreBenchmark.bindText(select, 1, message.messageID)
                    if sqlite3_step(select) == SQLITE_ROW { models.append(model(select)) }
                    sqlite3_reset(select)
                }
            }
        }

        /// Upsert: the stored row's attachment looked up first, to remove it when replaced.
        func upsert(_ batch: [Message]) {
            let upsert = statement(
                Self.insertSQL + " ON CONFLICT (message_id) DO UPDATE SET " + columns.dropFirst().map { "\"\($0)\" = excluded.\"\($0)\"" }.joined(separator: ", "))
            let lookup = statement("SELECT id, attachment FROM message WHERE message_id = ?")
            transaction {
                for message in batch {
                    StoreBenchmark.bindText(lookup, 1, message.messageID)
                    var stored: (id: Int64, attachment: String?)?
                    if sqlite3_step(lookup) == SQLITE_ROW {
                        stored = (sqlite3_column_int64(lookup, 0), sqlite3_column_type(lookup, 1) == SQLITE_NULL ? nil : String(cString: sqlite3_column_text(lookup, 1)))
                    }
                    sqlite3_reset(lookup)
                    bind(upsert, message, attachment: writeAttachment(message.attachment))
                    sqlite3_step(upsert)
                    sqlite3_reset(upsert)
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
            transaction {
                for message in batch {
                    let name = writeAttachment(message.attachment)
                    bind(upsert, message, attachment: name)
                    if sqlite3_step(upsert) == SQLITE_ROW {
                        let stored = model(upsert)
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

    /// The raw insert phase writing, per transaction, the history row the store would: the
    /// inserted rows' keys and values as JSON, one `schemagen_history` row (the table made by a
    /// store opened on the file first). The floor of recording insert values.
    static func rawWithHistory(_ path: String, rows: Int) async throws -> [String: Double] {
        _ = try Store(path: path, schema: InboxSchema.descriptor, migrations: InboxSchema.migrations)
        let inputs = Inputs(rows: rows)
        let raw = try Raw(path: path)
        let history = raw.statement("INSERT INTO schemagen_history (schema, author, committed_at, entities, changes) VALUES ('Inbox', NULL, ?, '[\"Message\"]', ?)")
        let names = ["messageID", "mailbox", "sender", "subject", "preview", "receivedAt", "isRead", "isFlagged", "size", "attachment"]
        let changed = "[" + names.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        let insert = raw.statement(Raw.insertSQL)
        var times: [String: Double] = [:]
        times["insert"] = StoreBenchmark.seconds {
            for batch in inputs.insert {
                raw.transaction {
                    var json = "["
                    for (offset, message) in batch.enumerated() {
                        raw.bind(insert, message, attachment: raw.writeAttachment(message.attachment))
                        sqlite3_step(insert)
                        sqlite3_reset(insert)
                        let id = sqlite3_last_insert_rowid(raw.db)
                        if offset > 0 { json += "," }
                        json += "{\"entity\":\"Message\",\"kind\":\"insert\",\"keys\":[\(id)],\"changed\":\(changed),\"values\":{"
                        json += "\"messageID\":" + TextEscaping.json(message.messageID) + ",\"mailbox\":" + TextEscaping.json(message.mailbox)
                        json += ",\"sender\":" + TextEscaping.json(message.sender) + ",\"subject\":" + TextEscaping.json(message.subject)
                        json += ",\"preview\":" + TextEscaping.json(message.preview) + ",\"receivedAt\":" + TextEscaping.json(StoreBenchmark.formatDate(message.receivedAt))
                        json += ",\"isRead\":\(message.isRead ? 1 : 0),\"isFlagged\":\(message.isFlagged ? 1 : 0),\"size\":\(message.size)}}"
                    }
                    json += "]"
                    sqlite3_bind_double(history, 1, Date().timeIntervalSince1970)
                    StoreBenchmark.bindText(history, 2, json)
                    sqlite3_step(history)
                    sqlite3_reset(history)
                }
            }
        }
        return times
    }

    static func raw(_ path: String, rows: Int) throws -> [String: Double] {
        let inputs = Inputs(rows: rows)
        let raw = try Raw(path: path)
        var times: [String: Double] = [:]
        times["insert"] = StoreBenchmark.seconds { for batch in inputs.insert { raw.insert(batch) } }
        times["ignore"] = StoreBenchmark.seconds { for batch in inputs.ignore { raw.ignore(batch) } }
        times["ignore_stored"] = StoreBenchmark.seconds { for batch in inputs.ignoreStored { raw.ignore(batch) } }
        times["upsert"] = StoreBenchmark.seconds { for batch in inputs.upsert { raw.upsert(batch) } }
        times["update_only"] = StoreBenchmark.seconds { for batch in inputs.updateOnly { raw.updateOnly(batch) } }
        var all: [Message] = []
        let fetches = (0..<fetchRepeats).map { _ in StoreBenchmark.seconds { all = raw.fetchAll() } }
        times["fetch"] = fetches.sorted()[fetchRepeats / 2]
        guard all.count == rows * 5 / 2, raw.models.count == rows * 5, all.filter(\.isRead).count == rows else { throw CancellationError() }
        return times
    }
}
