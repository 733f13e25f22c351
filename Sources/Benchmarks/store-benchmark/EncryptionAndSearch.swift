import CCrypto
import CSQLite
import ExampleModels
import FieldEncryption
import Foundation
import PersistentStoreCore
import PersistentStoreSQLite
import SQLiteKit
import SchemaMetadata

/// `store-benchmark encryption plain|secret ROWS DIR` and `store-benchmark search store|raw ROWS QUERIES DIR`.
enum EncryptionAndSearch {
    static let keys: KeySource = {
        do { return .ring(try KeyRing([(id: "bench", bytes: [UInt8](repeating: 7, count: 32))])) } catch { preconditionFailure("benchmark key") }
    }()

    /// Inserts ROWS notes in one transaction and fetches them all; seconds of each.
    static func notes(_ mode: String, rows: Int, folder: String, bodyBytes: Int? = nil) async throws -> (insert: Double, fetch: Double) {
        switch mode {
        case "plain": return try await notes(PlainNote.self, rows: rows, path: folder + "/plain.sqlite", bodyBytes: bodyBytes)
        // Unencrypted bodies as long as the encrypted ones' envelopes: what SQLite alone pays
        // for the larger values.
        case "padded": return try await notes(PlainNote.self, rows: rows, path: folder + "/padded.sqlite", bodyBytes: bodyBytes, padding: envelopeOverhead)
        default: return try await notes(SecretNote.self, rows: rows, path: folder + "/secret.sqlite", bodyBytes: bodyBytes)
        }
    }

    /// The bytes an envelope adds to a value under the benchmark's key: a 4-byte magic, the
    /// mode and the key id's length, the key id, the 12-byte nonce, the type tag and the 16-byte tag.
    static let envelopeOverhead = 4 + 1 + 1 + "bench".utf8.count + 12 + 1 + 16

    /// Note `index`'s body: a sentence or two, or that sentence repeated to `bytes` bytes.
    static func body(_ index: Int, bytes: Int?) -> String {
        let sentence = "The body of note \(index): a sentence or two that someone would rather keep to themselves."
        guard let bytes, bytes > sentence.utf8.count else { return sentence }
        return String(String(repeating: sentence + " ", count: bytes / sentence.utf8.count + 1).utf8.prefix(bytes))!
    }

    /// libcrypto's own AES-256-GCM on the same values, as a C program would call it: one
    /// context per direction keyed once, a 12-byte nonce per value (a counter: no randomness
    /// counted), associated data as long as the store's (its prefix and a row key), the tag
    /// appended. Seconds to seal ROWS bodies, and to open them.
    static func libcrypto(rows: Int, bodyBytes: Int?) throws -> (insert: Double, fetch: Double) {
        let key = [UInt8](repeating: 7, count: 32)
        let associated = Array("schemagen-field-v1".utf8) + [0] + Array("secret_note".utf8) + [0] + Array("body".utf8) + [0] + [1, 0, 0, 0, 0, 0, 0, 0, 42]
        let bodies = (0..<rows).map { Array(body($0, bytes: bodyBytes).utf8) }
        guard let cipher = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil), let sealer = EVP_CIPHER_CTX_new(), let opener = EVP_CIPHER_CTX_new(),
            EVP_EncryptInit_ex2(sealer, cipher, key, nil, nil) == 1, EVP_DecryptInit_ex2(opener, cipher, key, nil, nil) == 1
        else { throw CancellationError() }
        defer {
            EVP_CIPHER_CTX_free(sealer)
            EVP_CIPHER_CTX_free(opener)
            EVP_CIPHER_free(cipher)
        }
        var sealed: [[UInt8]] = []
        sealed.reserveCapacity(rows)
        var nonce = [UInt8](repeating: 0, count: 12)
        var length: Int32 = 0
        var start = DispatchTime.now().uptimeNanoseconds
        for (index, plaintext) in bodies.enumerated() {
            withUnsafeBytes(of: UInt64(index).littleEndian) { nonce.replaceSubrange(0..<8, with: $0) }
            var output = [UInt8](repeating: 0, count: 12 + plaintext.count + 16)
            let ok = output.withUnsafeMutableBufferPointer { buffer -> Bool in
                let base = buffer.baseAddress!
                nonce.withUnsafeBufferPointer { base.update(from: $0.baseAddress!, count: 12) }
                return EVP_EncryptInit_ex(sealer, nil, nil, nil, base) == 1
                    && EVP_EncryptUpdate(sealer, nil, &length, associated, Int32(associated.count)) == 1
                    && EVP_EncryptUpdate(sealer, base + 12, &length, plaintext, Int32(plaintext.count)) == 1
                    && EVP_EncryptFinal_ex(sealer, base + 12 + Int(length), &length) == 1
                    && EVP_CIPHER_CTX_ctrl(sealer, EVP_CTRL_GCM_GET_TAG, 16, base + 12 + plaintext.count) == 1
            }
            guard ok else { throw CancellationError() }
            sealed.append(output)
        }
        let insert = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        start = DispatchTime.now().uptimeNanoseconds
        var opened = 0
        for envelope in sealed {
            let count = envelope.count - 12 - 16
            var plain = [UInt8](repeating: 0, count: count + 16)
            var tag = Array(envelope.suffix(16))
            let ok = envelope.withUnsafeBufferPointer { buffer -> Bool in
                let base = buffer.baseAddress!
                return plain.withUnsafeMutableBufferPointer { out -> Bool in
                    EVP_DecryptInit_ex(opener, nil, nil, nil, base) == 1
                        && EVP_DecryptUpdate(opener, nil, &length, associated, Int32(associated.count)) == 1
                        && EVP_DecryptUpdate(opener, out.baseAddress!, &length, base + 12, Int32(count)) == 1
                        && EVP_CIPHER_CTX_ctrl(opener, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1
                        && EVP_DecryptFinal_ex(opener, out.baseAddress! + Int(length), &length) == 1
                }
            }
            plain.removeLast(16)
            guard ok else { throw CancellationError() }
            opened += plain.count
        }
        let fetch = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard opened == bodies.reduce(0, { $0 + $1.count }) else { throw CancellationError() }
        return (insert, fetch)
    }

    /// The field cipher alone on the same values, without the store: seconds to seal ROWS
    /// bodies and to open them. Splits the store's added cost between the cipher and the rest.
    static func cipherAlone(rows: Int, bodyBytes: Int?) throws -> (insert: Double, fetch: Double) {
        guard case .ring(let ring) = keys else { throw CancellationError() }
        let cipher = try FieldCipher(ring: ring, table: "secret_note", column: "body", mode: .randomized, attribute: "SecretNote.body")
        let bodies = (0..<rows).map { StoredValue.text(body($0, bytes: bodyBytes)) }
        var sealed: [StoredValue] = []
        sealed.reserveCapacity(rows)
        var start = DispatchTime.now().uptimeNanoseconds
        for (index, value) in bodies.enumerated() { sealed.append(try cipher.seal(value, rowKey: [.integer(Int64(index))])) }
        let insert = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        start = DispatchTime.now().uptimeNanoseconds
        var opened = 0
        for (index, value) in sealed.enumerated() {
            guard case .blob(let bytes) = value else { throw CancellationError() }
            let plain = try bytes.withUnsafeBytes { try cipher.open(envelope: $0, rowKey: [.integer(Int64(index))]) }
            if case .text(let text) = plain { opened += text.utf8.count }
        }
        let fetch = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard opened == bodies.reduce(0, { if case .text(let text) = $1 { $0 + text.utf8.count } else { $0 } }) else { throw CancellationError() }
        return (insert, fetch)
    }

    static func notes<Note: BenchmarkNote>(_ type: Note.Type, rows: Int, path: String, bodyBytes: Int? = nil, padding: Int = 0) async throws -> (insert: Double, fetch: Double) {
        let store = try Store(
            path: path, schema: Note.schema, migrations: NoteSchemas.migration(table: Note.entity.table, encrypted: Note.entity.columns[1].isEncrypted),
            configuration: .init(keys: keys))
        let pad = String(repeating: "-", count: padding)
        let notes = (0..<rows).map { Note(id: nil, title: "note \($0)", body: body($0, bytes: bodyBytes) + pad) }
        var start = DispatchTime.now().uptimeNanoseconds
        try await store.insert(notes)
        let insert = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        start = DispatchTime.now().uptimeNanoseconds
        let all = try await store.fetch(Note.self)
        let fetch = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard all.count == rows, all.last?.body == notes.last?.body else { throw CancellationError() }
        return (insert, fetch)
    }

    static let words = [
        "paint", "kitchen", "call", "plumber", "buy", "milk", "bread", "water", "plants", "garden", "fix", "bike", "book",
        "flight", "hotel", "email", "report", "tax", "return", "clean", "garage", "walk", "dog", "cat", "vet", "dentist",
        "birthday", "present", "mum", "dad", "school", "forms", "car", "service", "insurance", "renew", "passport",
        "photos", "backup", "laptop", "printer", "ink", "shelf", "lamp", "curtains", "sofa", "rug", "window", "door", "lock",
    ]

    /// Deterministic task names: three to seven words each.
    static func taskName(_ index: Int) -> String {
        var state = UInt64(index) &* 6364136223846793005 &+ 1442695040888963407
        func next() -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33)
        }
        return (0..<(3 + next() % 5)).map { _ in words[next() % words.count] }.joined(separator: " ")
    }

    static func queries(_ count: Int) -> [String] {
        (0..<count).map { index in index % 3 == 0 ? words[(index * 7) % words.count] : words[(index * 7) % words.count] + " " + words[(index * 13 + 5) % words.count] }
    }

    /// Fills ROWS to-do items (through the store, which fills the index by its triggers), then
    /// times QUERIES searches of one or two words, 20 results each; microseconds per query.
    static func search(_ mode: String, rows: Int, queries count: Int, folder: String) async throws -> [Int] {
        let path = folder + "/search.sqlite"
        let store = try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(recordsHistory: false, keys: keys))
        try await store.insert((0..<rows).map { TodoItem(taskName: taskName($0), startDate: Date(timeIntervalSince1970: Double($0))) })
        var latencies: [Int] = []
        if mode == "store" {
            for query in queries(count) {
                let start = DispatchTime.now().uptimeNanoseconds
                let found = try await store.search(TodoItem.self, matching: query, limit: 20)
                latencies.append(Int((DispatchTime.now().uptimeNanoseconds - start) / 1000))
                guard !found.isEmpty else { throw CancellationError() }
            }
            return latencies
        }
        // The same query through the C API: prepared once, words quoted as phrases, rows read.
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        defer { sqlite3_close(db) }
        let sql = """
            SELECT t.id, t.task_name, t.start_date, t.is_completed, t.due_date, f.rank FROM todo_item t
            JOIN (SELECT rowid, rank FROM todo_item_task_name_fts WHERE todo_item_task_name_fts MATCH ?) f ON t.rowid = f.rowid
            ORDER BY f.rank, t.rowid LIMIT 20
            """
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        for query in queries(count) {
            let start = DispatchTime.now().uptimeNanoseconds
            let phrases = query.split(separator: " ").map { "\"\($0)\"" }.joined(separator: " ")
            sqlite3_bind_text(statement, 1, phrases, -1, StoreBenchmark.transient)
            var names: [String] = []
            while sqlite3_step(statement) == SQLITE_ROW {
                names.append(String(cString: sqlite3_column_text(statement, 1)))
                _ = String(cString: sqlite3_column_text(statement, 0))
                _ = String(cString: sqlite3_column_text(statement, 2))
            }
            sqlite3_reset(statement)
            latencies.append(Int((DispatchTime.now().uptimeNanoseconds - start) / 1000))
            guard !names.isEmpty else { throw CancellationError() }
        }
        return latencies
    }
}
