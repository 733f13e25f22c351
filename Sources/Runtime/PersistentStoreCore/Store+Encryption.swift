import FieldEncryption
import Foundation
import SQLDialects
import SchemaMetadata

/// Where the store finds the master keys of `encrypt` attributes. Read only when the schema
/// has one.
public enum KeySource: Sendable {
    /// Comma- or line-separated `id=base64-of-32-bytes` entries in an environment variable
    /// (`SCHEMAGEN_KEYS` by default); the first encrypts, every one decrypts.
    case environment(String)
    /// The same format in a file only its owner may read (mode 0600).
    case file(String)
    /// Keys the program holds (a keychain, a secret manager).
    case ring(KeyRing)

    /// The `SCHEMAGEN_KEYS` environment variable.
    public static let `default` = KeySource.environment("SCHEMAGEN_KEYS")
}

/// Encrypted attributes in the store: values are sealed just before they are written and
/// opened as rows are read, so models, predicates' values and the API only ever see plaintext.
/// docs/runtime.md ("Encrypted attributes") has the format and the threat model.
extension KeySource {
    /// Reads the keys once, to say before any store opens whether they can be read: a file
    /// missing, readable by others than its owner, or not `id=base64` lines; an environment
    /// variable unset or malformed. `StoreError.missingKey` says which and why.
    ///
    ///     try KeySource.file("/etc/app/keys").check()
    public func check() throws(StoreError) {
        do {
            switch self {
            case .environment(let variable):
                if try KeyRing.fromEnvironment(variable) == nil { throw StoreError.missingKey("\(variable) is not set") }
            case .file(let path): _ = try KeyRing.fromFile(path)
            case .ring: break
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .missingKey("the keys cannot be read: \(error)")
        }
    }
}

extension Store {
    /// The ciphers of a schema's encrypted attributes, by table and column; empty when it has none.
    static func ciphers(for schema: SchemaDescriptor, keys: KeySource) throws(StoreError) -> (ring: KeyRing?, ciphers: [String: [String: FieldCipher]]) {
        let encrypted = schema.entities.flatMap { entity in entity.columns.filter(\.isEncrypted).map { (entity, $0) } }
        guard !encrypted.isEmpty else { return (nil, [:]) }
        let names = encrypted.map { "\($0.0.name).\($0.1.property)" }.joined(separator: ", ")
        let ring: KeyRing
        do {
            switch keys {
            case .environment(let variable):
                guard let found = try KeyRing.fromEnvironment(variable) else {
                    throw StoreError.missingKey(
                        """
                        \(schema.name) encrypts \(names), but \(variable) is not set. Make a key with \
                        `openssl rand -base64 32`, keep it safe (without it the values cannot be read), and pass it as \
                        \(variable)=k1=<the key>; or open the store with Configuration(keys: .file(path)) or .ring(...)
                        """)
                }
                ring = found
            case .file(let path): ring = try KeyRing.fromFile(path)
            case .ring(let given): ring = given
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .missingKey("\(schema.name) encrypts \(names), but its keys cannot be read: \(error)")
        }
        var result: [String: [String: FieldCipher]] = [:]
        for (entity, column) in encrypted {
            do {
                result[entity.table, default: [:]][column.column] = try FieldCipher(
                    ring: ring, table: entity.table, column: column.column,
                    mode: column.encryptsDeterministically ? .deterministic : .randomized, attribute: "\(entity.name).\(column.property)")
            } catch {
                throw .encryption(error)
            }
        }
        return (ring, result)
    }

    /// Refuses a key whose id the database knows under other bytes: `schemagen_key_check`
    /// keeps, per key id, an HMAC of a fixed text under the key. Opening only reads it: a key
    /// id is recorded when a value is first written under it (`recordSealingKey`), so a
    /// mistyped id on a read, or a refused open, leaves nothing behind. True when the newest
    /// key is recorded already.
    /// The table of key check values (created at open, outside any write: see `createIfMissing`).
    static func keyCheckTable(_ dialect: any SQLDialect) -> SQL {
        "CREATE TABLE IF NOT EXISTS schemagen_key_check (key_id \(SQL(verbatim: dialect.columnType(.text))) PRIMARY KEY, check_value \(SQL(verbatim: dialect.columnType(.blob))) NOT NULL);"
    }

    static func checkKeys(_ ring: KeyRing, _ database: any StoreDatabase, schema: String) throws(StoreError) -> Bool {
        do {
            try createIfMissing(database, keyCheckTable(database.dialect))
            var newestRecorded = false
            for key in ring.keys {
                guard let stored = try database.query("SELECT check_value FROM schemagen_key_check WHERE key_id = \(value: .text(key.id))" as SQL).first?.first else { continue }
                guard stored == StoredValue.blob(try ring.checkValue(of: key)) else {
                    throw StoreError.missingKey("key '\(key.id)' is not the key this database's values were encrypted with under that id; pass the right key (or give a new key a new id)")
                }
                if key.id == ring.newest.id { newestRecorded = true }
            }
            return newestRecorded
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseFailure {
            throw .database(error)
        } catch {
            throw .missingKey("\(schema): the keys cannot be checked: \(error)")
        }
    }

    /// Records the newest key's check value in the transaction that first writes a value under
    /// it; another process that recorded other bytes under that id first makes this write fail.
    func recordSealingKey() throws(StoreError) {
        guard sealing.sealedInTransaction, !sealing.newestKeyRecorded, let ring = keyRing else { return }
        do {
            let dialect = database.dialect
            try database.execute(Self.keyCheckTable(dialect))
            let key = ring.newest
            let check = StoredValue.blob(try ring.checkValue(of: key))
            _ = try database.query(
                "INSERT INTO schemagen_key_check (key_id, check_value) VALUES (\(value: .text(key.id)), \(value: check))" + database.dialect.onConflict(["key_id"], set: nil))
            guard try database.query("SELECT check_value FROM schemagen_key_check WHERE key_id = \(value: .text(key.id))" as SQL).first?.first == check else {
                throw StoreError.missingKey(
                    "key '\(key.id)' is not the key this database's values were encrypted with under that id (another process recorded it); pass the right key (or give a new key a new id)")
            }
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseFailure {
            throw .database(error)
        } catch {
            throw .missingKey("\(schema.name): the key cannot be recorded: \(error)")
        }
    }

    // MARK: - Writing

    /// Where in a row's columns the work of `prepareRow` is, worked out once per column list.
    struct RowPlan {
        let columns: [String]
        let deterministic: [(position: Int, cipher: FieldCipher)]
        let randomized: [(position: Int, column: String, cipher: FieldCipher)]
        let files: [(position: Int, column: ColumnDescriptor, cipher: FieldCipher?)]
        /// The primary key's positions (nil: not in the row, the implicit key left out).
        let keyPositions: [Int?]
        /// Each unique index's positions, when the row has all its columns.
        let uniqueTargets: [[Int]]
        var isEmpty: Bool { deterministic.isEmpty && randomized.isEmpty && files.isEmpty }
    }

    func rowPlan(_ entity: EntityDescriptor, columns: [String]) -> RowPlan {
        if let cached = self.statements.rowPlans[entity.table], cached.columns == columns { return cached }
        let ciphers = encryption[entity.table] ?? [:]
        let position = Dictionary(columns.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        var deterministic: [(Int, FieldCipher)] = [], randomized: [(Int, String, FieldCipher)] = [], files: [(Int, ColumnDescriptor, FieldCipher?)] = []
        for column in entity.columns {
            guard let at = position[column.column] else { continue }
            if column.usesExternalStorage {
                files.append((at, column, ciphers[column.column]))
            } else if let cipher = ciphers[column.column] {
                if cipher.mode == .deterministic { deterministic.append((at, cipher)) } else { randomized.append((at, column.column, cipher)) }
            }
        }
        let unique = entity.indexes.filter { $0.kind == .unique }.compactMap { index -> [Int]? in
            let positions = index.columns.compactMap { position[$0] }
            return positions.count == index.columns.count ? positions : nil
        }
        let plan = RowPlan(
            columns: columns, deterministic: deterministic, randomized: randomized, files: files,
            keyPositions: entity.primaryKey.map { position[$0] }, uniqueTargets: unique)
        self.statements.rowPlans[entity.table] = plan
        return plan
    }

    /// Makes a row ready to store: seals encrypted values and writes external files (sealed too
    /// when encrypted), putting the file names in the row. The row key that binds ciphertexts
    /// is the stored row's that the write will update (found by primary key or unique value),
    /// or the row's own, or, for an implicit key, the next one, which is then set in the row
    /// (`columns` gains `id`). A value equal to the stored one keeps its ciphertext, and an
    /// external value equal to the stored one keeps its file, so writing a model back unchanged
    /// changes nothing.
    ///
    /// `replacing: false` is for a write that never replaces a stored row (an insert that
    /// does nothing on a conflict): no stored row is looked up, and the row is sealed under its
    /// own key. `deferringExternalWrites` names external values without writing them: the
    /// caller writes `pendingExternalValues` once its statement inserted the row.
    @discardableResult
    func prepareRow(
        _ entity: EntityDescriptor, columns: inout [String], values: inout [StoredValue], replacing: Bool = true, deferringExternalWrites: Bool = false
    ) throws(StoreError) -> PreparedRow {
        let plan = rowPlan(entity, columns: columns)
        guard !plan.isEmpty else { return PreparedRow() }
        // A new row of randomized values only, its implicit key left to the store: nothing to
        // look up, and the key the row is sealed under is the next one.
        if entity.hasImplicitKey, plan.deterministic.isEmpty, plan.files.isEmpty, plan.uniqueTargets.isEmpty,
            let keyPosition = plan.keyPositions.first ?? nil, values[keyPosition] == .null
        {
            let next = try nextImplicitKey(entity)
            values[keyPosition] = .integer(next)
            let rowKey: [StoredValue] = [.integer(next)]
            for (position, _, cipher) in plan.randomized {
                values[position] = try seal(values[position], cipher, rowKey: rowKey)
            }
            return PreparedRow(choseKey: true)
        }
        // Deterministic values first: unique lookups compare their ciphertexts.
        try sealDeterministicValues(plan, &values)
        var (rowKey, stored) =
            replacing
            ? try storedRow(entity, plan, columns: columns, values: values)
            : (plan.keyPositions.map { $0.map { values[$0] } ?? .null }, [:])
        var choseKey = false
        if entity.hasImplicitKey, rowKey == [.null], !plan.randomized.isEmpty || plan.files.contains(where: { $0.cipher != nil }) {
            let next = try nextImplicitKey(entity)
            choseKey = true
            rowKey = [.integer(next)]
            if let position = plan.keyPositions[0] {
                values[position] = .integer(next)
            } else {
                columns.insert("id", at: 0)
                values.insert(.integer(next), at: 0)
            }
        } else if entity.hasImplicitKey, case .integer(let given) = rowKey[0], let next = sealing.implicitKeys[entity.table], given >= next {
            sealing.implicitKeys[entity.table] = given + 1
        }
        // Positions moved by one if `id` was put in front.
        let shift = columns.count - plan.columns.count
        for (position, _, cipher) in plan.randomized {
            let at = position + shift
            if let old = stored[position], (try? cipher.open(old, rowKey: rowKey)) == values[at] {
                values[at] = old
            } else {
                values[at] = try seal(values[at], cipher, rowKey: rowKey)
            }
        }
        var written: [(ColumnDescriptor, String)] = []
        var pending: [PendingExternalValue] = []
        for (position, column, cipher) in plan.files {
            let at = position + shift
            if case .text(let name)? = stored[position], let bytes = Self.externalBytes(of: values[at]),
                try externalValue(name, entity, column, holds: bytes, cipher: cipher, rowKey: rowKey)
            {
                values[at] = .text(name)
                continue
            }
            if case .text(let name)? = stored[position] { try removeOnCommit([(column, name)], of: entity) }
            if deferringExternalWrites {
                guard let value = try pendingExternalValue(values[at], entity, column, sealedBy: cipher, rowKey: rowKey) else { continue }
                values[at] = .text(value.name)
                pending.append(value)
                continue
            }
            values[at] = try storeExternalValue(values[at], entity, column, sealedBy: cipher, rowKey: rowKey)
            if case .text(let name) = values[at] { written.append((column, name)) }
        }
        return PreparedRow(choseKey: choseKey, writtenExternalValues: written, pendingExternalValues: pending)
    }

    /// Seals the row's deterministically encrypted values, as written and as looked up by.
    func sealDeterministicValues(_ plan: RowPlan, _ values: inout [StoredValue]) throws(StoreError) {
        for (position, cipher) in plan.deterministic {
            values[position] = try seal(values[position], cipher, rowKey: [])
        }
    }

    /// What `prepareRow` did besides changing the row.
    struct PreparedRow {
        /// It chose a new implicit key: no stored row can have it, so the write needs no
        /// conflict clause on the key.
        var choseKey = false
        /// The external values it stored anew (not those kept from the stored row): what an
        /// insert that ends up writing nothing must remove.
        var writtenExternalValues: [(ColumnDescriptor, String)] = []
        /// The external values it named but did not write (`deferringExternalWrites`).
        var pendingExternalValues: [PendingExternalValue] = []
    }

    /// The stored row this write would update, found by primary key, then by each unique value:
    /// its key (the row's own where none is stored), and by position its randomized values, for
    /// a value written back unchanged to keep its ciphertext, and its external values' names,
    /// for the same bytes to keep their file. The external values of the other rows the
    /// condition finds (a write that replaces them) are removed when it commits.
    private func storedRow(_ entity: EntityDescriptor, _ plan: RowPlan, columns: [String], values: [StoredValue]) throws(StoreError) -> (key: [StoredValue], values: [Int: StoredValue]) {
        var clauses: [SQL] = []
        let keyValues = plan.keyPositions.map { $0.map { values[$0] } ?? .null }
        if !keyValues.contains(.null) {
            clauses.append("(\(Self.condition(entity.primaryKey, keyValues)))")
        }
        for target in plan.uniqueTargets {
            let targetValues = target.map { values[$0] }
            guard !targetValues.contains(.null) else { continue }
            clauses.append("(\(Self.condition(target.map { columns[$0] }, targetValues)))")
        }
        var rowKey = keyValues
        var stored: [Int: StoredValue] = [:]
        guard !clauses.isEmpty, !plan.randomized.isEmpty || !plan.files.isEmpty else { return (rowKey, stored) }
        let keyCount = entity.primaryKey.count
        let selected = SQL.identifiers(entity.primaryKey + plan.randomized.map(\.column) + plan.files.map(\.column.column))
        let found = try query("SELECT \(selected) FROM \(identifier: entity.table) WHERE \(SQL.list(clauses, separator: " OR "))")
        guard let existing = found.first else { return (rowKey, stored) }
        rowKey = Array(existing.prefix(keyCount))
        for (offset, item) in plan.randomized.enumerated() { stored[item.position] = existing[keyCount + offset] }
        let filesStart = keyCount + plan.randomized.count
        for (offset, item) in plan.files.enumerated() { stored[item.position] = existing[filesStart + offset] }
        for other in found.dropFirst() {
            let names = plan.files.enumerated().compactMap { offset, item -> (ColumnDescriptor, String)? in
                if case .text(let name) = other[filesStart + offset] { (item.column, name) } else { nil }
            }
            try removeOnCommit(names, of: entity)
        }
        return (rowKey, stored)
    }

    /// An external value written to its file, sealed first when its column is encrypted; the
    /// file's name, for the row. A value of another kind than bytes or text is kept as it is.
    private func storeExternalValue(
        _ value: StoredValue, _ entity: EntityDescriptor, _ column: ColumnDescriptor, sealedBy cipher: FieldCipher?, rowKey: [StoredValue]
    ) throws(StoreError) -> StoredValue {
        guard let pending = try pendingExternalValue(value, entity, column, sealedBy: cipher, rowKey: rowKey) else { return value }
        try write(pending)
        return .text(pending.name)
    }

    /// The external value, sealed when its column is encrypted, named but not written.
    private func pendingExternalValue(
        _ value: StoredValue, _ entity: EntityDescriptor, _ column: ColumnDescriptor, sealedBy cipher: FieldCipher?, rowKey: [StoredValue]
    ) throws(StoreError) -> PendingExternalValue? {
        guard let cipher else { return Self.pendingExternalValue(value, entity, column, sealed: false) }
        guard let bytes = Self.externalBytes(of: value) else { return nil }
        sealing.sealedInTransaction = true
        let sealed: StoredValue
        do { sealed = .blob(try cipher.seal(bytes: bytes, rowKey: rowKey)) } catch { throw .encryption(error) }
        return Self.pendingExternalValue(sealed, entity, column, sealed: true)
    }

    private func seal(_ value: StoredValue, _ cipher: FieldCipher, rowKey: [StoredValue]) throws(StoreError) -> StoredValue {
        sealing.sealedInTransaction = true
        do { return try cipher.seal(value, rowKey: rowKey) } catch { throw .encryption(error) }
    }

    /// The key the database would give the next row of an implicit-key table (inside the write
    /// transaction, which holds the write lock, so no other writer takes it meanwhile).
    private func nextImplicitKey(_ entity: EntityDescriptor) throws(StoreError) -> Int64 {
        // An engine that hands out keys (PostgreSQL's sequences) reserves each one, so a row
        // written without its key later cannot be given the same.
        do {
            if let reserved = try abilities.bulk.keyReservation?.reserveGeneratedKey(of: entity.table) { return reserved }
        } catch {
            throw .database(error)
        }
        // Counted on from the first in this transaction: bulk inserts ask once.
        if let index = sealing.implicitKeys.index(forKey: entity.table) {
            let next = sealing.implicitKeys.values[index]
            sealing.implicitKeys.values[index] = next + 1
            return next
        }
        var highest: Int64 = 0
        if case .integer(let value)? = try query("SELECT max(\(identifier: "id")) FROM \(identifier: entity.table)").first?.first { highest = value }
        do { highest = max(highest, try database.highestGeneratedKey(of: entity.table)) } catch { throw .database(error) }
        sealing.implicitKeys[entity.table] = highest + 2
        return highest + 1
    }

    // MARK: - Reading

    /// Where a query's encrypted columns and key are, worked out once per query.
    struct OpenPlan {
        let ciphers: [(position: Int, cipher: FieldCipher)]
        let keyPositions: [Int?]

        var positions: [Int] { ciphers.map(\.position) }

        func cipher(at position: Int) -> FieldCipher? {
            for entry in ciphers where entry.position == position { return entry.cipher }
            return nil
        }
    }

    func openPlan(_ entity: EntityDescriptor, columns: [String]) -> OpenPlan? {
        guard let ciphers = encryption[entity.table] else { return nil }
        let found = columns.enumerated().compactMap { position, column -> (Int, FieldCipher)? in
            guard let cipher = ciphers[column], !entity.isExternal(column) else { return nil }
            return (position, cipher)
        }
        return OpenPlan(ciphers: found, keyPositions: entity.primaryKey.map { columns.firstIndex(of: $0) })
    }

    /// Opens one encrypted column of a row the engine is still reading, from the engine's own
    /// buffer (see `StoreDatabase.forEachRow(_:_:ownStatement:opening:with:_:)`).
    func openColumn(_ plan: OpenPlan, _ position: Int, _ content: BorrowedValue, row: [StoredValue]) throws(StoreError) -> StoredValue {
        guard let cipher = plan.cipher(at: position) else {
            if case .value(let value) = content { return value }
            throw .coding("column \(position) is not encrypted")
        }
        do {
            switch content {
            case .blob(let bytes): return try cipher.open(envelope: bytes, row: row, keyPositions: plan.keyPositions)
            case .value(.blob(let bytes)):
                return try bytes.withUnsafeBytes { bytes in Result { () throws(FieldCipherError) in try cipher.open(envelope: bytes, row: row, keyPositions: plan.keyPositions) } }.get()
            case .value(let value): return try cipher.open(value, rowKey: [])
            }
        } catch {
            throw .encryption(error)
        }
    }

    /// An external file's bytes, opened when the attribute is encrypted.
    func openExternal(_ bytes: [UInt8], _ entity: EntityDescriptor, _ column: ColumnDescriptor, rowKey: [StoredValue]) throws(StoreError) -> [UInt8] {
        guard let cipher = encryption[entity.table]?[column.column] else { return bytes }
        do { return try cipher.open(bytes: bytes, rowKey: rowKey) } catch { throw .encryption(error) }
    }

    /// The cipher of an encrypted column, for predicates.
    func cipher(table: String, column: String) -> FieldCipher? { encryption[table]?[column] }

    // MARK: - Re-encryption

    /// How far `reencrypt` has got.
    public struct ReencryptionProgress: Sendable {
        /// The entity being re-encrypted now.
        public let entity: String
        /// Rows of this entity looked at, and how many there are.
        public let rowsScanned: Int
        /// The rows of this entity.
        public let rowsTotal: Int
        /// Values rewritten so far, over all entities.
        public let valuesRewritten: Int
    }

    /// Rewrites every encrypted value that is not under the newest key (or not encrypted at all,
    /// having been written before the attribute was) under the newest key: in batches of
    /// `batchSize` rows, one transaction each, so a run killed midway keeps what it finished
    /// and a second run completes the rest. Returns how many values it rewrote. The rewrites
    /// are not recorded in the history: no value changes.
    ///
    ///     let rewritten = try await store.reencrypt { print("\($0.entity): \($0.rowsScanned) of \($0.rowsTotal)") }
    @discardableResult
    public func reencrypt(batchSize: Int = 500, progress: @Sendable (ReencryptionProgress) -> Void = { _ in }) throws(StoreError) -> Int {
        var rewritten = 0
        for entity in schema.entities {
            guard let ciphers = encryption[entity.table], !ciphers.isEmpty else { continue }
            let encrypted = entity.columns.filter { ciphers[$0.column] != nil }
            let total: Int
            if case .integer(let count)? = try query("SELECT count(*) FROM \(identifier: entity.table)").first?.first { total = Int(count) } else { total = 0 }
            var scanned = 0
            // Batches in primary-key order, each starting after the last key of the one before.
            var after: [StoredValue]?
            let key = SQL.identifiers(entity.primaryKey)
            progress(ReencryptionProgress(entity: entity.name, rowsScanned: 0, rowsTotal: total, valuesRewritten: rewritten))
            while true {
                let keyCount = entity.primaryKey.count
                let resume: SQL = after.map { "WHERE (\(key)) > (\(SQL.parameters($0)))" } ?? ""
                let rows = try query(
                    "SELECT \(SQL.identifiers(entity.primaryKey + encrypted.map(\.column))) FROM \(identifier: entity.table) \(resume) ORDER BY \(key) LIMIT \(value: .integer(Int64(max(1, batchSize))))"
                )
                guard let last = rows.last else { break }
                let count = try write { () throws(StoreError) in
                    // Rewrites change no value: keep them out of the history.
                    recorder?.paused = true
                    defer {
                        try? recorder?.forgetFallbackRows()
                        recorder?.paused = false
                    }
                    var count = 0
                    for row in rows {
                        let rowKey = Array(row[..<keyCount])
                        for (offset, column) in encrypted.enumerated() {
                            guard let cipher = ciphers[column.column] else { continue }
                            let value = row[keyCount + offset]
                            if column.usesExternalStorage {
                                if try rewriteExternal(value, entity, column, cipher, rowKey: rowKey) { count += 1 }
                                continue
                            }
                            guard !cipher.isCurrent(value) else { continue }
                            var plaintext = Self.legacyValue(value, column)
                            if FieldCipher.isEnvelope(value) {
                                do throws(FieldCipherError) { plaintext = try cipher.open(value, rowKey: rowKey) } catch { throw .encryption(error) }
                            }
                            let sealed = try seal(plaintext, cipher, rowKey: rowKey)
                            _ = try query("UPDATE \(identifier: entity.table) SET \(identifier: column.column) = \(value: sealed) WHERE \(Self.condition(entity.primaryKey, rowKey))")
                            count += 1
                        }
                    }
                    return count
                }
                rewritten += count
                scanned += rows.count
                after = Array(last[..<keyCount])
                progress(ReencryptionProgress(entity: entity.name, rowsScanned: scanned, rowsTotal: max(total, scanned), valuesRewritten: rewritten))
            }
        }
        return rewritten
    }

    /// A value written before the attribute was encrypted, as the model's codec expects it: a
    /// migration that made the column BLOB cast the clear value to bytes.
    static func legacyValue(_ value: StoredValue, _ column: ColumnDescriptor) -> StoredValue {
        guard case .blob(let bytes) = value, !FieldCipher.isEnvelope(value), column.swiftType != "Data" else { return value }
        let text = String(decoding: bytes, as: UTF8.self)
        switch column.swiftType {
        case "Bool", "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64":
            return Int64(text).map(StoredValue.integer) ?? .text(text)
        case "Double", "Float":
            return Double(text).map(StoredValue.real) ?? .text(text)
        default:
            return .text(text)
        }
    }

    /// Seals an external file again under the newest key (a new file, the old one removed at
    /// commit); true when it did.
    private func rewriteExternal(_ value: StoredValue, _ entity: EntityDescriptor, _ column: ColumnDescriptor, _ cipher: FieldCipher, rowKey: [StoredValue]) throws(StoreError) -> Bool {
        guard case .text(let name) = value else { return false }
        guard let bytes = try externalBytes(entity, column, name) else { throw .externalFile(externalPlace(entity, column, name)) }
        if FieldCipher.keyID(of: bytes) == cipher.newestKeyID { return false }
        var plaintext = bytes
        if FieldCipher.keyID(of: bytes) != nil {
            do { plaintext = try cipher.open(bytes: bytes, rowKey: rowKey) } catch { throw .encryption(error) }
        }
        let sealed: [UInt8]
        sealing.sealedInTransaction = true
        do { sealed = try cipher.seal(bytes: plaintext, rowKey: rowKey) } catch { throw .encryption(error) }
        let newName = try storeExternalValue(.blob(sealed), entity, column, sealed: true)
        try removeOnCommit([(column, name)], of: entity)
        _ = try query("UPDATE \(identifier: entity.table) SET \(identifier: column.column) = \(value: newName) WHERE \(Self.condition(entity.primaryKey, rowKey))")
        return true
    }
}

extension EntityDescriptor {
    func isExternal(_ column: String) -> Bool { columns.contains { $0.column == column && $0.usesExternalStorage } }
}
