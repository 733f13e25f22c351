import ExampleModels
import FieldEncryption
import Foundation
import PersistentStorePostgres
import PersistentStoreSQLite
import PostgresKit
import SQLiteKit
import SchemaMetadata
import Testing

@testable import PersistentStoreCore

func usersStore(_ path: String, keys: KeySource = testKeys) throws -> Store {
    try Store.open(url: path, schema: UsersSchema.descriptor, migrations: UsersSchema.migrations, configuration: .init(keys: keys))
}

/// Every byte of the database file, its WAL and its external files.
func everyByte(of path: String) -> [UInt8] {
    var bytes: [UInt8] = []
    for file in [path, path + "-wal"] {
        if let data = FileManager.default.contents(atPath: file) { bytes += data }
    }
    if let files = FileManager.default.enumerator(atPath: path + ".external") {
        for case let name as String in files {
            if let data = FileManager.default.contents(atPath: path + ".external/" + name) { bytes += data }
        }
    }
    return bytes
}

func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
    let pattern = Array(needle.utf8)
    guard !pattern.isEmpty, haystack.count >= pattern.count else { return false }
    for start in 0...(haystack.count - pattern.count) where haystack[start] == pattern[0] {
        if Array(haystack[start..<(start + pattern.count)]) == pattern { return true }
    }
    return false
}

@Suite struct EncryptionTests {
    @Test func plaintextNeverReachesTheFileItsWALOrExternalFiles() async throws {
        let path = storePath()
        let users = try usersStore(path)
        let todo = try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: testKeys))
        let secretImage = Data("PNG-SECRET-PIXELS-0123456789".utf8)
        for index in 0..<20 {
            let user = try await users.insert(User(identifier: "u\(index)", name: "Person \(index)", email: "person\(index)@secret.example"))
            try await users.insert(Image(url: URL(string: "https://example.com/\(index).png")!, data: secretImage, ownerID: user.identifier))
            try await todo.insert(TodoItem(taskName: "task \(index)", notes: "the combination is 4711-\(index)"))
        }
        // Read back in clear through the store...
        #expect(try await users.fetch(User.self, sortBy: [SortDescriptor(\.identifier)]).first?.email == "person0@secret.example")
        #expect(try await users.fetch(Image.self).first?.data == secretImage)
        #expect(try await todo.fetch(TodoItem.self).allSatisfy { $0.notes?.hasPrefix("the combination is 4711-") == true })
        // ...and never found in the bytes on disk, checkpointed or not.
        let bytes = everyByte(of: path)
        #expect(!contains(bytes, "@secret.example"))
        #expect(!contains(bytes, "combination"))
        #expect(!contains(bytes, "SECRET-PIXELS"))
        #expect(contains(bytes, "Person 1"), "the scan does see unencrypted values")
        let raw = try SQLiteConnection(path: path)
        _ = try raw.query("PRAGMA wal_checkpoint(TRUNCATE)")
        #expect(!contains(everyByte(of: path), "@secret.example"))
    }

    @Test func aCiphertextMovedToAnotherRowOrTamperedWithFailsToDecrypt() async throws {
        let path = storePath()
        let todo = try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: testKeys))
        let first = try await todo.insert(TodoItem(taskName: "first", notes: "first secret"))
        let second = try await todo.insert(TodoItem(taskName: "second", notes: "second secret"))
        let raw = try SQLiteConnection(path: path)
        // Swap the two notes' ciphertexts.
        try raw.execute(
            """
            UPDATE todo_item SET notes = CASE id WHEN '\(first.id.uuidString.lowercased())' THEN (SELECT notes FROM todo_item WHERE id = '\(second.id.uuidString.lowercased())')
                                                 ELSE (SELECT notes FROM todo_item WHERE id = '\(first.id.uuidString.lowercased())') END;
            """)
        do {
            _ = try await todo.fetch(TodoItem.self)
            Issue.record("a swapped ciphertext decrypted")
        } catch {
            #expect("\(error)".contains("TodoItem.notes does not decrypt under key 'test'"), "\(error)")
        }
        // Row by row, the same (values are opened where SQLite holds them on both paths).
        do {
            try await todo.read { store in try store.forEach(TodoItem.self) { _ in } }
            Issue.record("a swapped ciphertext decrypted in forEach")
        } catch {
            #expect("\(error)".contains("TodoItem.notes does not decrypt under key 'test'"), "\(error)")
        }
        // Flip one byte of a ciphertext.
        try raw.execute("UPDATE todo_item SET notes = (SELECT notes FROM todo_item WHERE id = '\(second.id.uuidString.lowercased())')")
        let firstKey = SQLiteValue.text(first.id.uuidString.lowercased())
        guard case .blob(var bytes)? = try raw.query("SELECT notes FROM todo_item WHERE id = ?", [firstKey]).first?.first else {
            Issue.record("no ciphertext")
            return
        }
        bytes[bytes.count - 1] ^= 0x01
        _ = try raw.query("UPDATE todo_item SET notes = ? WHERE id = ?", [.blob(bytes), firstKey])
        await #expect(throws: StoreError.self) { try await todo.model(TodoItem.self, key: first.id) }
        // Plaintext put in place of a ciphertext is refused too, with what to do.
        // (A STRICT table refuses anything but a blob there.)
        for plaintext in ["CAST('typed in by hand' AS BLOB)", "x'00'"] {
            try raw.execute("UPDATE todo_item SET notes = \(plaintext)")
            do {
                _ = try await todo.fetch(TodoItem.self)
                Issue.record("plaintext accepted: \(plaintext)")
            } catch {
                #expect("\(error)".contains("TodoItem.notes holds a value that is not encrypted"), "\(error)")
                #expect("\(error)".contains("reencrypt"), "\(error)")
            }
        }
        // A NULL stays absent on both paths.
        try raw.execute("UPDATE todo_item SET notes = NULL")
        #expect(try await todo.fetch(TodoItem.self).allSatisfy { $0.notes == nil })
        let notes = try await todo.read { store in
            var notes: [String?] = []
            try store.forEach(TodoItem.self) { notes.append($0.notes) }
            return notes
        }
        #expect(notes == [nil, nil])
    }

    @Test(arguments: StoreEngine.available)
    func aWrongOrMissingKeyFailsCleanlyAndWritesNothing(_ engine: StoreEngine) async throws {
        let path = try engine.freshURL()
        let users = try usersStore(path)
        try await users.insert(User(identifier: "u1", name: "Ada", email: "ada@example.com"))
        // The same key id with other bytes: refused at open, before anything is written.
        do {
            _ = try usersStore(path, keys: .ring(testKeyRing(("test", 0x43))))
            Issue.record("a wrong key was accepted")
        } catch {
            #expect("\(error)".contains("key 'test' is not the key"), "\(error)")
        }
        // A key unknown to the values: opening works, reading names the attribute and key id.
        let other = try usersStore(path, keys: .ring(testKeyRing(("other", 0x44))))
        do {
            _ = try await other.fetch(User.self)
            Issue.record("read with an unknown key")
        } catch {
            #expect("\(error)".contains("User.email was encrypted under key 'test'"), "\(error)")
        }
        // No key at all: the error says how to make and pass one.
        do {
            _ = try usersStore(path, keys: .environment("SCHEMAGEN_TEST_NO_SUCH_VARIABLE"))
            Issue.record("opened without keys")
        } catch {
            let message = "\(error)"
            #expect(message.contains("Users encrypts User.email, Image.data") && message.contains("openssl rand -base64 32"), "\(message)")
        }
        #expect(try await usersStore(path).fetch(User.self).map(\.email) == ["ada@example.com"], "nothing was damaged")
    }

    /// The defect: opening with a mistyped key id (`k9` for a database under `test`) recorded
    /// `k9` for good, even for a read that then failed, and the right `k9` was refused later.
    /// Opening and reading now write nothing; an id is recorded by the first value written under it.
    @Test func aMistypedKeyIdIsNotRecordedByOpeningOrReading() async throws {
        let path = storePath()
        try await usersStore(path).insert(User(identifier: "u1", name: "Ada", email: "ada@example.com"))
        func recorded() throws -> [[SQLiteValue]] {
            try SQLiteConnection(path: path, readOnly: true).query("SELECT key_id FROM schemagen_key_check ORDER BY key_id")
        }
        #expect(try recorded() == [[.text("test")]])
        let before = everyByte(of: path)
        let mistyped = try usersStore(path, keys: .ring(testKeyRing(("k9", 0x51))))
        do {
            _ = try await mistyped.fetch(User.self)
            Issue.record("read values sealed under another key")
        } catch {
            #expect("\(error)".contains("encrypted under key 'test'"), "\(error)")
        }
        #expect(try recorded() == [[.text("test")]], "k9 was recorded by an open and a read")
        #expect(everyByte(of: path) == before, "the refused read wrote nothing")
        // k9 with other bytes, and the real one, both pass later: nothing pinned k9.
        let rotated = try usersStore(path, keys: .ring(testKeyRing(("k9", 0x52), ("test", 0x42))))
        #expect(try await rotated.fetch(User.self).map(\.email) == ["ada@example.com"])
        #expect(try recorded() == [[.text("test")]], "reading under a new key records nothing")
        // The first value written under k9 records it; from then on other bytes under k9 are refused.
        try await rotated.insert(User(identifier: "u2", name: "Grace", email: "grace@example.com"))
        #expect(try recorded() == [[.text("k9")], [.text("test")]])
        do {
            _ = try usersStore(path, keys: .ring(testKeyRing(("k9", 0x51), ("test", 0x42))))
            Issue.record("other bytes under a recorded id were accepted")
        } catch {
            #expect("\(error)".contains("key 'k9' is not the key"), "\(error)")
        }
    }

    @Test(arguments: StoreEngine.available)
    func deterministicValuesSupportEqualityAndUniqueness(_ engine: StoreEngine) async throws {
        let users = try usersStore(try engine.freshURL())
        try await users.insert(User(identifier: "u1", name: "Ada", email: "ada@example.com"))
        try await users.insert(User(identifier: "u2", name: "Grace", email: "grace@example.com"))
        try await users.insert(User(identifier: "u3", name: "Nobody"))
        let ada = "ada@example.com"
        #expect(try await users.fetch(User.self, where: #Predicate { $0.email == ada }).map(\.identifier) == ["u1"])
        #expect(try await users.fetch(User.self, where: #Predicate { $0.email != ada }, sortBy: [SortDescriptor(\.identifier)]).map(\.identifier) == ["u2", "u3"])
        #expect(try await users.fetch(User.self, where: #Predicate { $0.email == nil }).map(\.identifier) == ["u3"])
        #expect(try await users.count(User.self, where: #Predicate { $0.email == "grace@example.com" }) == 1)
        // The unique constraint holds on ciphertexts: the same email is the same user (an
        // upsert on the unique value, as everywhere in the store).
        try await users.insert(User(identifier: "u4", name: "Ada Lovelace", email: "ada@example.com"))
        let sameEmail = try await users.fetch(User.self, where: #Predicate { $0.email == ada })
        #expect(sameEmail.map(\.identifier) == ["u1"] && sameEmail.map(\.name) == ["Ada Lovelace"])
        #expect(try await users.count(User.self) == 3)
        // Imported again with `.ignore`: after the first stored one, the rest are looked up
        // together by their sealed values; the stored users come back, the new one goes in.
        let imported = try await users.insert(
            [User(identifier: "u5", name: "A", email: ada), User(identifier: "u6", name: "G", email: "grace@example.com"), User(identifier: "u7", name: "Alan", email: "alan@example.com")],
            onConflict: .ignore)
        #expect(imported.map(\.identifier) == ["u1", "u2", "u7"] && imported.map(\.name) == ["Ada Lovelace", "Grace", "Alan"])
        #expect(try await users.count(User.self) == 4)
        try await users.delete(User.self, where: #Predicate { $0.identifier == "u7" })
        // Anything else on an encrypted attribute is refused, naming it.
        do {
            _ = try await users.fetch(User.self, where: #Predicate { $0.email?.contains("ada") == true })
            Issue.record("contains on an encrypted attribute ran")
        } catch {
            #expect("\(error)".contains("User.email"), "\(error)")
        }
        do {
            _ = try await users.fetch(User.self, where: #Predicate { ($0.email ?? "") > "a" })
            Issue.record("an ordering comparison on an encrypted attribute ran")
        } catch {
            #expect("\(error)".contains("User.email"), "\(error)")
        }
        do {
            _ = try await users.fetch(User.self, sortBy: [SortDescriptor(\.email)])
            Issue.record("sorting by an encrypted attribute ran")
        } catch {
            #expect("\(error)".contains("User.email"), "\(error)")
        }
    }

    @Test(arguments: StoreEngine.available)
    func randomizedValuesCannotBeLookedUp(_ engine: StoreEngine) async throws {
        let todo = try Store.open(url: try engine.freshURL(), schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: testKeys))
        try await todo.insert(TodoItem(taskName: "a", notes: "secret"))
        do {
            _ = try await todo.fetch(TodoItem.self, where: #Predicate { $0.notes == "secret" })
            Issue.record("compared a randomized ciphertext")
        } catch {
            #expect("\(error)".contains("TodoItem.notes is encrypted with a random nonce") && "\(error)".contains("encrypt: deterministic"), "\(error)")
        }
        #expect(try await todo.fetch(TodoItem.self, where: #Predicate { $0.notes != nil }).count == 1, "nil checks work: NULL is not hidden")
        await #expect(throws: StoreError.self) { try await todo.update(TodoItem.self, set: \.notes, to: "x") }
    }

    @Test func rewritingAnUnchangedValueKeepsItsCiphertextAndRecordsNothing() async throws {
        let path = storePath()
        let todo = try Store(path: path, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: testKeys))
        var item = try await todo.insert(TodoItem(taskName: "a", notes: "secret"))
        let raw = try SQLiteConnection(path: path)
        let before = try raw.query("SELECT notes FROM todo_item")
        let token = try await todo.currentHistoryToken()
        try await todo.insert(item)
        #expect(try raw.query("SELECT notes FROM todo_item") == before)
        #expect(try await todo.history(after: token).isEmpty)
        item.notes = "changed"
        try await todo.insert(item)
        let change = try #require(try await todo.history(after: token).first?.changes.first)
        #expect(change.changedAttributes == ["notes"] && change.values["notes"] == nil, "listed, without its ciphertext")
    }

    @Test(arguments: StoreEngine.available)
    func rotationWritesWithTheNewKeyAndReencryptMovesEverythingOver(_ engine: StoreEngine) async throws {
        let path = try engine.freshURL()
        let old = try usersStore(path)
        for index in 0..<25 {
            let user = try await old.insert(User(identifier: "u\(index)", name: "P\(index)", email: "p\(index)@example.com"))
            if index < 3 { try await old.insert(Image(url: URL(string: "https://example.com/\(index)")!, data: Data([UInt8(index), 1, 2]), ownerID: user.identifier)) }
        }
        let rotatedKeys = KeySource.ring(testKeyRing(("next", 0x51), ("test", 0x42)))
        let rotated = try usersStore(path, keys: rotatedKeys)
        #expect(try await rotated.count(User.self, where: #Predicate { $0.email == "p7@example.com" }) == 1, "lookups find values under the old key")
        try await rotated.insert(User(identifier: "new", name: "New", email: "new@example.com"))
        func keyIDs() throws -> [String: Int] {
            var counts: [String: Int] = [:]
            let rows =
                engine == .sqlite
                ? try SQLiteConnection(path: path).query("SELECT email FROM user WHERE email IS NOT NULL")
                : try PostgresConnection(path).query("SELECT email FROM \"user\" WHERE email IS NOT NULL")
            for row in rows {
                guard case .blob(let bytes) = row[0] else { continue }
                counts[FieldCipher.keyID(of: bytes) ?? "none", default: 0] += 1
            }
            return counts
        }
        #expect(try keyIDs() == ["test": 25, "next": 1])
        let progress = ProgressLog()
        let rewritten = try await rotated.reencrypt(batchSize: 10) { progress.add($0) }
        #expect(rewritten == 28, "25 emails and 3 image files")
        #expect(try keyIDs() == ["next": 26])
        #expect(progress.entries.contains { $0.entity == "User" && $0.rowsScanned == 26 && $0.rowsTotal == 26 })
        #expect(try await rotated.reencrypt() == 0, "nothing left to do")
        // The old key can go.
        let newOnly = try usersStore(path, keys: .ring(testKeyRing(("next", 0x51))))
        #expect(try await newOnly.fetch(User.self).count == 26)
        #expect(try await newOnly.fetch(Image.self).map { $0.data?.first }.sorted { ($0 ?? 0) < ($1 ?? 0) } == [0, 1, 2])
        #expect(try await newOnly.count(User.self, where: #Predicate { $0.email == "p7@example.com" }) == 1)
    }

    @Test func reencryptEncryptsValuesWrittenBeforeEncryptionWasOn() async throws {
        let path = storePath()
        let users = try usersStore(path)
        try await users.insert(User(identifier: "u1", name: "Ada"))
        // What the migration that made the column BLOB leaves of a value stored in clear before.
        try SQLiteConnection(path: path).execute("UPDATE user SET email = CAST('legacy@example.com' AS BLOB)")
        await #expect(throws: StoreError.self) { try await users.fetch(User.self) }
        #expect(try await users.reencrypt() == 1)
        #expect(try await users.fetch(User.self).first?.email == "legacy@example.com")
        // Once the WAL is checkpointed, the clear text is gone from the file too (Debian's SQLite
        // zeroes deleted content: SQLITE_SECURE_DELETE).
        _ = try SQLiteConnection(path: path).query("PRAGMA wal_checkpoint(TRUNCATE)")
        #expect(!contains(everyByte(of: path), "legacy@example.com"))
    }
}

final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Store.ReencryptionProgress] = []
    func add(_ item: Store.ReencryptionProgress) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }
    var entries: [Store.ReencryptionProgress] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}
