import FieldEncryption
import Foundation
import MigrationFiles
import SQLDialects
import SchemaMetadata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Values of `externalStorage` attributes live outside their rows; the column holds a name.
/// Beside a database file (SQLite) they are files, `<database>.external/<table>/<column>/<name>`:
/// new files are written atomically, replaced and deleted ones are removed only when the
/// transaction commits, and files of a rolled-back transaction are removed at once. On a server
/// (PostgreSQL), where a file beside the database does not exist for other machines, they are
/// rows of a side table, `schemagen_external_values` (`bytea`), written and removed in the
/// transaction itself.
extension Store {
    static func externalColumns(of entity: EntityDescriptor) -> [ColumnDescriptor] {
        entity.columns.filter(\.usesExternalStorage)
    }

    func externalFile(_ entity: EntityDescriptor, _ column: ColumnDescriptor, _ name: String) -> URL {
        URL(fileURLWithPath: externalPath(entity, column, name), isDirectory: false)
    }

    /// The same file's path, joined as text: `appendingPathComponent` stats the file system to
    /// tell a folder from a file, three times a value, which was a quarter of a fetch's time.
    func externalPath(_ entity: EntityDescriptor, _ column: ColumnDescriptor, _ name: String) -> String {
        externalFolderPath + "/" + entity.table + "/" + column.column + "/" + name
    }

    /// Writes one external value to a file and returns the name the column holds. A clear
    /// value's name starts with its content's digest (`<sha256>-<uuid>`), so writing the same
    /// bytes back is known unchanged from the name alone; a sealed value's name is a bare UUID,
    /// since a digest of the plaintext would let anyone confirm a guess. Each name is unique:
    /// two rows with the same bytes hold two files, and deleting one never touches the other's.
    func storeExternalValue(_ value: StoredValue, _ entity: EntityDescriptor, _ column: ColumnDescriptor, sealed: Bool = false) throws(StoreError) -> StoredValue {
        guard let pending = Self.pendingExternalValue(value, entity, column, sealed: sealed) else { return value }
        try write(pending)
        return .text(pending.name)
    }

    /// The value named as `storeExternalValue` names it, not yet written; nil for a value kept in
    /// the column itself.
    static func pendingExternalValue(_ value: StoredValue, _ entity: EntityDescriptor, _ column: ColumnDescriptor, sealed: Bool) -> PendingExternalValue? {
        guard let bytes = externalBytes(of: value) else { return nil }
        let unique = UUID().uuidString.lowercased()
        return PendingExternalValue(entity: entity, column: column, name: sealed ? unique : SHA256.hex(bytes) + "-" + unique, bytes: bytes)
    }

    /// Writes a named external value: to its file (removed again if the transaction rolls
    /// back), or to the database's table of them.
    func write(_ pending: PendingExternalValue) throws(StoreError) {
        if abilities.keepsExternalValuesInDatabase {
            _ = try query("INSERT INTO \(identifier: Self.externalValuesTable) (name, data) VALUES (\(value: .text(pending.name)), \(value: .blob(pending.bytes)))")
            return
        }
        let url = externalFile(pending.entity, pending.column, pending.name)
        try writeDurably(pending.bytes, to: url)
        files.created.append(url)
    }

    /// The bytes an external value is stored as, or nil for a value kept in the column itself.
    static func externalBytes(of value: StoredValue) -> [UInt8]? {
        switch value {
        case .blob(let data): data
        case .text(let text): Array(text.utf8)
        default: nil
        }
    }

    /// Whether the stored external value `name` holds these clear bytes: from the digest that
    /// leads the name, or, for a name an earlier release wrote (a bare UUID) or a sealed value,
    /// by reading the stored bytes (opened with `cipher`).
    func externalValue(_ name: String, _ entity: EntityDescriptor, _ column: ColumnDescriptor, holds bytes: [UInt8], cipher: FieldCipher?, rowKey: [StoredValue]) throws(StoreError) -> Bool {
        if cipher == nil, let digest = Self.contentDigest(inName: name) { return digest == SHA256.hex(bytes) }
        guard let stored = try externalBytes(entity, column, name) else { return false }
        guard let cipher else { return stored == bytes }
        return (try? cipher.open(bytes: stored, rowKey: rowKey)) == bytes
    }

    /// The digest that leads a clear value's name (64 hex digits and a dash), if it has one.
    static func contentDigest(inName name: String) -> Substring? {
        let utf8 = name.utf8
        guard utf8.count > 65, utf8[utf8.index(utf8.startIndex, offsetBy: 64)] == UInt8(ascii: "-") else { return nil }
        let digest = name.prefix(64)
        return digest.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } ? digest : nil
    }

    /// The side table of external values on a server.
    static let externalValuesTable = "schemagen_external_values"

    /// Creates the side table when the database keeps external values and the schema has some.
    static func prepareExternalValues(_ database: any StoreDatabase, inDatabase: Bool, schema: SchemaDescriptor) throws(StoreError) {
        guard inDatabase, schema.entities.contains(where: { !externalColumns(of: $0).isEmpty }) else { return }
        let dialect = database.dialect
        do {
            try createIfMissing(
                database,
                "CREATE TABLE IF NOT EXISTS \(identifier: externalValuesTable) (name \(SQL(verbatim: dialect.columnType(.text))) PRIMARY KEY, data \(SQL(verbatim: dialect.columnType(.blob))) NOT NULL)"
            )
        } catch {
            throw .database(error)
        }
    }

    /// The stored bytes of an external value, or nil when they are missing.
    func externalBytes(_ entity: EntityDescriptor, _ column: ColumnDescriptor, _ name: String) throws(StoreError) -> [UInt8]? {
        if abilities.keepsExternalValuesInDatabase {
            guard case .blob(let bytes)? = try query("SELECT data FROM \(identifier: Self.externalValuesTable) WHERE name = \(value: .text(name))").first?.first else { return nil }
            return bytes
        }
        try Self.checkExternalName(name, entity, column)
        return FileManager.default.contents(atPath: externalPath(entity, column, name)).map { [UInt8]($0) }
    }

    /// Refuses a name the store cannot have written: one with a folder part, `.`, `..` or
    /// empty. A tampered row naming `../x` would otherwise be read from, and on delete remove,
    /// a file outside the folder. The name is not shown: the column may hold the user's data.
    static func checkExternalName(_ name: String, _ entity: EntityDescriptor, _ column: ColumnDescriptor) throws(StoreError) {
        let utf8 = name.utf8
        guard name.isEmpty || name == "." || name == ".." || utf8.contains(UInt8(ascii: "/")) || utf8.contains(0) else { return }
        throw .externalFile(
            "\(entity.name).\(column.property) holds a value that is not an external file's name (empty, `.`, `..`, or with a `/`); "
                + "the row was changed outside the store: restore it from a backup or set the value again")
    }

    /// Where a missing external value was looked for, for messages.
    func externalPlace(_ entity: EntityDescriptor, _ column: ColumnDescriptor, _ name: String) -> String {
        "the external value of \(entity.name).\(column.property) (\(name)) is missing from "
            + (abilities.keepsExternalValuesInDatabase ? Self.externalValuesTable : externalFolder.path)
    }

    /// The external file names a stored row holds, by column.
    func externalNames(of entity: EntityDescriptor, where condition: SQL) throws(StoreError) -> [(ColumnDescriptor, String)] {
        let columns = Self.externalColumns(of: entity)
        guard !columns.isEmpty else { return [] }
        let rows = try query("SELECT \(SQL.identifiers(columns.map(\.column))) FROM \(identifier: entity.table) WHERE \(condition)")
        var names: [(ColumnDescriptor, String)] = []
        for row in rows {
            for (column, value) in zip(columns, row) {
                if case .text(let name) = value { names.append((column, name)) }
            }
        }
        return names
    }

    /// Marks files for removal when the transaction commits; in a side table, removes the rows
    /// now (the transaction undoes it if it rolls back).
    func removeOnCommit(_ names: [(ColumnDescriptor, String)], of entity: EntityDescriptor) throws(StoreError) {
        guard !names.isEmpty else { return }
        if abilities.keepsExternalValuesInDatabase {
            _ = try query("DELETE FROM \(identifier: Self.externalValuesTable) WHERE name IN (\(SQL.parameters(names.map { StoredValue.text($0.1) })))")
            return
        }
        for (column, name) in names { try Self.checkExternalName(name, entity, column) }
        files.removed += names.map { externalFile(entity, $0.0, $0.1) }
    }

    /// The contents of an external value's file, in place of its name.
    func loadExternalValue(_ name: String, _ column: ColumnDescriptor, of entity: EntityDescriptor, rowKey: [StoredValue]) throws(StoreError) -> StoredValue {
        guard let data = try externalBytes(entity, column, name) else { throw .externalFile(externalPlace(entity, column, name)) }
        let bytes = column.isEncrypted ? try openExternal(data, entity, column, rowKey: rowKey) : data
        return column.swiftType == "String" ? .text(String(decoding: bytes, as: UTF8.self)) : .blob(bytes)
    }

    /// After a commit, removes replaced and deleted files; after a rollback, the new ones.
    func settleExternalFiles(committed: Bool) {
        for url in committed ? files.removed : files.created { try? FileManager.default.removeItem(at: url) }
        files.created.removeAll()
        files.removed.removeAll()
    }
}

/// Temp file, fsync, rename: a reader sees the whole file or none. A free function, so
/// `write` and `unlink` are the system's, not the store's.
func writeDurably(_ bytes: [UInt8], to url: URL) throws(StoreError) {
    do {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    } catch {
        throw .externalFile("cannot create \(url.deletingLastPathComponent().path): \(error.localizedDescription)")
    }
    let temporary = url.path + ".tmp"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw .externalFile("cannot write \(temporary): \(String(cString: strerror(errno)))") }
    var offset = 0
    var failure: String?
    bytes.withUnsafeBytes { buffer in
        while offset < buffer.count {
            let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                failure = String(cString: strerror(errno))
                return
            }
            offset += written
        }
    }
    if failure == nil, fsync(descriptor) != 0 { failure = String(cString: strerror(errno)) }
    close(descriptor)
    if failure == nil, rename(temporary, url.path) != 0 { failure = String(cString: strerror(errno)) }
    if let failure {
        unlink(temporary)
        throw .externalFile("cannot write \(url.path): \(failure)")
    }
}

/// An external value named in a row but not yet written: an insert that may do nothing (on a
/// conflict) writes it only once the row went in, so importing stored rows again writes no file.
struct PendingExternalValue {
    let entity: EntityDescriptor
    let column: ColumnDescriptor
    let name: String
    let bytes: [UInt8]
}
