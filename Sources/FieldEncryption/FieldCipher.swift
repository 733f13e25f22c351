import SchemaMetadata

/// Why a value could not be encrypted or decrypted. Names the attribute and the key id, never
/// a key or a value.
public enum FieldCipherError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The value was encrypted under a key the ring does not have.
    case unknownKey(attribute: String, keyID: String)
    /// The key is known, but the value does not authenticate: a wrong key under a known id, a
    /// ciphertext copied from another row or column, or changed bytes.
    case doesNotAuthenticate(attribute: String, keyID: String)
    /// The column holds a value that is not an envelope (written before the attribute was
    /// encrypted, or by another program).
    case notEncrypted(attribute: String)
    case failed(String)

    public var description: String {
        switch self {
        case .unknownKey(let attribute, let keyID):
            "\(attribute) was encrypted under key '\(keyID)', which is not among the keys given; add it to SCHEMAGEN_KEYS (after the newest)"
        case .doesNotAuthenticate(let attribute, let keyID):
            "\(attribute) does not decrypt under key '\(keyID)': the key is not the one it was written with, or the stored value was changed or moved from another row"
        case .notEncrypted(let attribute):
            "\(attribute) holds a value that is not encrypted (written before encryption was turned on, or by another program); run reencrypt() to encrypt such values"
        case .failed(let message):
            "encryption failed: \(message)"
        }
    }
}

/// Encrypts one attribute's values: AES-256-GCM under a key derived for this attribute alone
/// (HKDF-SHA-256 from the master key, the table and the column), in a versioned envelope that
/// names the master key:
///
///     "SGE" 0x01 | mode | key id length | key id | nonce (12) | ciphertext | tag (16)
///
/// The associated data is the table, the column and (randomized mode) the row's primary key,
/// so a ciphertext moved to another row or column does not decrypt. Randomized mode takes a
/// fresh random nonce per value. Deterministic mode derives the nonce from an HMAC of the
/// value, so equal values give equal envelopes (for unique constraints and equality lookups);
/// its associated data cannot include the row's key, and it reveals which rows hold equal values.
public final class FieldCipher: Sendable {
    public enum Mode: UInt8, Sendable {
        case randomized = 1
        case deterministic = 2
    }

    /// A class: sealing a value then retains one reference, not five buffers.
    final class DerivedKey: Sendable {
        let id: String
        let idBytes: [UInt8]
        /// The envelope up to the nonce, in randomized mode.
        let randomizedHeader: [UInt8]
        let encryption: [UInt8]
        /// Deterministic mode: the HMAC key that makes nonces.
        let nonce: [UInt8]
        /// AES-256-GCM keyed once with `encryption`.
        let gcm: GCMKey

        init(id: String, idBytes: [UInt8], randomizedHeader: [UInt8], encryption: [UInt8], nonce: [UInt8], gcm: GCMKey) {
            self.id = id
            self.idBytes = idBytes
            self.randomizedHeader = randomizedHeader
            self.encryption = encryption
            self.nonce = nonce
            self.gcm = gcm
        }
    }

    /// `Entity.attribute`, for messages.
    public let attribute: String
    public let mode: Mode
    let table: String
    let column: String
    /// In ring order: the first encrypts.
    let keys: [DerivedKey]
    /// The associated data every value of this column starts with.
    let associatedPrefix: [UInt8]

    static let magic: [UInt8] = [0x53, 0x47, 0x45, 0x01]

    public init(ring: KeyRing, table: String, column: String, mode: Mode, attribute: String) throws(FieldCipherError) {
        self.attribute = attribute
        self.mode = mode
        self.table = table
        self.column = column
        var derived: [DerivedKey] = []
        let info = Array("schemagen field \(table).\(column)".utf8)
        do {
            for key in ring.keys {
                let material = try Crypto.hkdf(secret: key.bytes, salt: Array("schemagen-field-v1".utf8), info: info + [mode.rawValue], length: 64)
                let encryption = Array(material[0..<32])
                let idBytes = Array(key.id.utf8)
                derived.append(DerivedKey(id: key.id, idBytes: idBytes, randomizedHeader: Self.magic + [Mode.randomized.rawValue, UInt8(idBytes.count)] + idBytes, encryption: encryption, nonce: Array(material[32..<64]), gcm: try GCMKey(encryption)))
            }
        } catch {
            throw .failed(error.description)
        }
        keys = derived
        associatedPrefix = Array("schemagen-field-v1".utf8) + [0] + Array(table.utf8) + [0] + Array(column.utf8) + [0]
    }

    /// The envelope of `value` for the row keyed `rowKey` (ignored in deterministic mode).
    /// NULL stays NULL: absence is not hidden.
    public func seal(_ value: StoredValue, rowKey: [StoredValue]) throws(FieldCipherError) -> StoredValue {
        guard value != .null else { return .null }
        guard mode == .randomized else { return .blob(try sealDeterministically(Self.encode(value), with: keys[0])) }
        // The common case, text, is sealed straight from the string's bytes.
        let sealed: Result<[UInt8], FieldCipherError>
        if case .text(var text) = value {
            sealed = text.withUTF8 { bytes in Result { () throws(FieldCipherError) in try sealRandomized(typeTag: 3, bytes, rowKey: rowKey) } }
        } else {
            sealed = Self.encode(value).withUnsafeBufferPointer { bytes in Result { () throws(FieldCipherError) in try sealRandomized(typeTag: nil, bytes, rowKey: rowKey) } }
        }
        return .blob(try sealed.get())
    }

    /// Bytes (an external file's contents) sealed the same way.
    public func seal(bytes: [UInt8], rowKey: [StoredValue]) throws(FieldCipherError) -> [UInt8] {
        guard mode == .randomized else { return try sealDeterministically(bytes, with: keys[0]) }
        return try bytes.withUnsafeBufferPointer { buffer in Result { () throws(FieldCipherError) in try sealRandomized(typeTag: nil, buffer, rowKey: rowKey) } }.get()
    }

    /// Randomized mode under the newest key: `typeTag` (when given) then `plaintext`, bound to
    /// the row's key.
    private func sealRandomized(typeTag: UInt8?, _ plaintext: UnsafeBufferPointer<UInt8>, rowKey: [StoredValue]) throws(FieldCipherError) -> [UInt8] {
        let key = keys[0]
        guard let envelope = key.gcm.sealWithRandomNonce(header: key.randomizedHeader, typeTag: typeTag, plaintext: plaintext, associatedData: { appendAssociatedData(rowKey, to: &$0) }) else {
            throw .failed("AES-256-GCM encryption failed")
        }
        return envelope
    }

    /// Deterministic mode: the envelope of `value` under every key, for `column IN (...)`
    /// lookups that also find values not yet re-encrypted under the newest key.
    public func sealForLookup(_ value: StoredValue) throws(FieldCipherError) -> [StoredValue] {
        guard mode == .deterministic else { throw .failed("\(attribute) is not deterministic") }
        guard value != .null else { return [.null] }
        let plaintext = Self.encode(value)
        var envelopes: [StoredValue] = []
        for key in keys { envelopes.append(.blob(try sealDeterministically(plaintext, with: key))) }
        return envelopes
    }

    /// Deterministic mode: the nonce is an HMAC of the value, and no row key is bound.
    private func sealDeterministically(_ plaintext: [UInt8], with key: DerivedKey) throws(FieldCipherError) -> [UInt8] {
        let associated = associatedPrefix
        do {
            let nonce = Array(try Crypto.hmacSHA256(key: key.nonce, associated + plaintext).prefix(Crypto.nonceLength))
            var envelope: [UInt8] = []
            envelope.reserveCapacity(6 + key.idBytes.count + Crypto.nonceLength + plaintext.count + Crypto.tagLength)
            envelope += Self.magic
            envelope.append(mode.rawValue)
            envelope.append(UInt8(key.idBytes.count))
            envelope += key.idBytes
            envelope += nonce
            try key.gcm.seal(nonce: nonce, plaintext: plaintext, associatedData: associated, into: &envelope)
            return envelope
        } catch {
            throw .failed(error.description)
        }
    }

    /// The value inside an envelope.
    public func open(_ stored: StoredValue, rowKey: [StoredValue]) throws(FieldCipherError) -> StoredValue {
        guard stored != .null else { return .null }
        guard case .blob(let bytes) = stored else { throw .notEncrypted(attribute: attribute) }
        guard let envelope = Envelope(bytes) else { throw .notEncrypted(attribute: attribute) }
        let idRange = 6..<(6 + Int(bytes[5]))
        guard let key = keys.first(where: { $0.idBytes.elementsEqual(bytes[idRange]) }) else { throw .unknownKey(attribute: attribute, keyID: envelope.keyID) }
        let bound = envelope.mode == .deterministic ? [] : rowKey
        let value = key.gcm.open(envelope: bytes, sealedStart: envelope.sealedStart, associatedData: { appendAssociatedData(bound, to: &$0) }, read: Self.decode)
        guard let value, envelope.mode == mode else { throw .doesNotAuthenticate(attribute: attribute, keyID: envelope.keyID) }
        return value
    }

    /// Bytes sealed by `seal(bytes:rowKey:)`.
    public func open(bytes: [UInt8], rowKey: [StoredValue]) throws(FieldCipherError) -> [UInt8] {
        guard let envelope = Envelope(bytes) else { throw .notEncrypted(attribute: attribute) }
        // The key by its id's bytes: no String per value.
        let idRange = 6..<(6 + Int(bytes[5]))
        guard let key = keys.first(where: { $0.idBytes.elementsEqual(bytes[idRange]) }) else { throw .unknownKey(attribute: attribute, keyID: envelope.keyID) }
        let associated = associatedData(envelope.mode == .deterministic ? [] : rowKey)
        let opened = bytes.withUnsafeBytes { raw in
            associated.withUnsafeBytes { associatedBytes in
                key.gcm.open(nonce: UnsafeRawBufferPointer(rebasing: raw[(envelope.sealedStart - Crypto.nonceLength)..<envelope.sealedStart]),
                             sealed: UnsafeRawBufferPointer(rebasing: raw[envelope.sealedStart...]), associatedData: associatedBytes)
            }
        }
        guard let opened, envelope.mode == mode else { throw .doesNotAuthenticate(attribute: attribute, keyID: envelope.keyID) }
        return opened
    }

    /// True when `stored` is an envelope under the newest key (nothing for `reencrypt` to do).
    public func isCurrent(_ stored: StoredValue) -> Bool {
        if stored == .null { return true }
        guard case .blob(let bytes) = stored, let envelope = Envelope(bytes) else { return false }
        return envelope.keyID == keys[0].id && envelope.mode == mode
    }

    public static func keyID(of bytes: [UInt8]) -> String? { Envelope(bytes)?.keyID }

    /// The id of the key that encrypts.
    public var newestKeyID: String { keys[0].id }

    public static func isEnvelope(_ stored: StoredValue) -> Bool {
        if case .blob(let bytes) = stored { return Envelope(bytes) != nil }
        return false
    }

    struct Envelope {
        let mode: Mode
        /// Where the ciphertext starts; the nonce is the 12 bytes before it.
        let sealedStart: Int
        private let idBytes: ArraySlice<UInt8>

        /// The key id, for messages (key ids are ASCII).
        var keyID: String { String(decoding: idBytes, as: UTF8.self) }

        init?(_ bytes: [UInt8]) {
            guard bytes.count >= 6, bytes[0] == 0x53, bytes[1] == 0x47, bytes[2] == 0x45, bytes[3] == 0x01, let mode = Mode(rawValue: bytes[4]) else { return nil }
            let idLength = Int(bytes[5])
            let nonceStart = 6 + idLength
            guard idLength > 0, bytes.count >= nonceStart + Crypto.nonceLength + Crypto.tagLength else { return nil }
            self.mode = mode
            idBytes = bytes[6..<nonceStart]
            sealedStart = nonceStart + Crypto.nonceLength
        }
    }

    // MARK: - Encodings

    /// The prefix, then (randomized mode) each key value as its 8-byte length and its encoding.
    func associatedData(_ rowKey: [StoredValue]) -> [UInt8] {
        guard mode == .randomized, !rowKey.isEmpty else { return associatedPrefix }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(associatedPrefix.count + rowKey.count * 48)
        appendAssociatedData(rowKey, to: &bytes)
        return bytes
    }

    func appendAssociatedData(_ rowKey: [StoredValue], to bytes: inout [UInt8]) {
        bytes += associatedPrefix
        guard mode == .randomized else { return }
        for part in rowKey {
            let lengthAt = bytes.count
            Self.appendBigEndian(0, to: &bytes)
            let start = bytes.count
            Self.encode(part, into: &bytes)
            let length = UInt64(bytes.count - start)
            for index in 0..<8 { bytes[lengthAt + index] = UInt8(truncatingIfNeeded: length >> (56 - 8 * UInt64(index))) }
        }
    }

    static func appendBigEndian(_ value: UInt64, to bytes: inout [UInt8]) {
        for index in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64(index)))) }
    }

    /// `encode`, appended in place.
    static func encode(_ value: StoredValue, into bytes: inout [UInt8]) {
        switch value {
        case .null: bytes.append(0)
        case .integer(let number):
            bytes.append(1)
            appendBigEndian(UInt64(bitPattern: number), to: &bytes)
        case .real(let number):
            bytes.append(2)
            appendBigEndian(number.bitPattern, to: &bytes)
        case .text(let text):
            bytes.append(3)
            bytes.append(contentsOf: text.utf8)
        case .blob(let blob):
            bytes.append(4)
            bytes.append(contentsOf: blob)
        }
    }

    /// A value with its type: 0 null, 1 integer, 2 real, 3 text, 4 blob.
    static func encode(_ value: StoredValue) -> [UInt8] {
        var bytes: [UInt8] = []
        switch value {
        case .text(let text): bytes.reserveCapacity(text.utf8.count + 1)
        case .blob(let blob): bytes.reserveCapacity(blob.count + 1)
        default: bytes.reserveCapacity(9)
        }
        encode(value, into: &bytes)
        return bytes
    }

    static func decode(_ bytes: [UInt8]) -> StoredValue? {
        bytes.withUnsafeBufferPointer { decode($0) }
    }

    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> StoredValue? {
        guard let tag = bytes.first else { return nil }
        let payload = UnsafeBufferPointer(rebasing: bytes[1...])
        switch tag {
        case 0: return .null
        case 1, 2:
            guard payload.count == 8 else { return nil }
            let bits = payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return tag == 1 ? .integer(Int64(bitPattern: bits)) : .real(Double(bitPattern: bits))
        // Authenticated bytes this code wrote from a String: valid UTF-8.
        case 3: return .text(String(decoding: payload, as: UTF8.self))
        case 4: return .blob(Array(payload))
        default: return nil
        }
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }
}
