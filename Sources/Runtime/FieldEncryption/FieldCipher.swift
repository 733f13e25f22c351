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
    /// libcrypto failed (deriving a key, encrypting), or a lookup envelope was asked of a randomized
    /// attribute; the message says which.
    case failed(String)

    /// The message for a person: what failed and what to do about it.
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
    /// How an attribute's values are sealed; the raw value is the envelope's mode byte.
    public enum Mode: UInt8, Sendable {
        /// A fresh random nonce per value, bound to the row's primary key: equal values give different envelopes.
        case randomized = 1
        /// A nonce derived from the value and no row key: equal values give equal envelopes (for unique
        /// constraints and lookups), which shows which rows hold equal values.
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
    /// How this attribute's values are sealed.
    public let mode: Mode
    let table: String
    let column: String
    /// In ring order: the first encrypts.
    let keys: [DerivedKey]
    /// The associated data every value of this column starts with.
    let associatedPrefix: [UInt8]

    static let magic: [UInt8] = [0x53, 0x47, 0x45, 0x01]

    /// The cipher of `table`.`column`, with a key derived for it from each of the ring's keys;
    /// `attribute` (`Entity.attribute`) names it in errors.
    ///
    ///     let cipher = try FieldCipher(ring: ring, table: "user", column: "email", mode: .randomized, attribute: "User.email")
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
                derived.append(
                    DerivedKey(
                        id: key.id, idBytes: idBytes, randomizedHeader: Self.magic + [Mode.randomized.rawValue, UInt8(idBytes.count)] + idBytes, encryption: encryption,
                        nonce: Array(material[32..<64]), gcm: try GCMKey(encryption)))
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
        try seal(value, keyCount: rowKey.count) { rowKey[$0] }
    }

    private func seal(_ value: StoredValue, keyCount: Int, keyPart: (Int) -> StoredValue) throws(FieldCipherError) -> StoredValue {
        guard value != .null else { return .null }
        guard mode == .randomized else { return .blob(try sealDeterministically(Self.encode(value), with: keys[0])) }
        // The common case, text, is sealed straight from the string's bytes.
        let sealed: [UInt8]?
        if case .text(var text) = value {
            sealed = text.withUTF8 { bytes in sealRandomized(typeTag: 3, bytes, keyCount: keyCount, keyPart: keyPart) }
        } else {
            sealed = Self.encode(value).withUnsafeBufferPointer { bytes in sealRandomized(typeTag: nil, bytes, keyCount: keyCount, keyPart: keyPart) }
        }
        guard let sealed else { throw .failed("AES-256-GCM encryption failed") }
        return .blob(sealed)
    }

    /// Bytes (an external file's contents) sealed the same way.
    public func seal(bytes: [UInt8], rowKey: [StoredValue]) throws(FieldCipherError) -> [UInt8] {
        guard mode == .randomized else { return try sealDeterministically(bytes, with: keys[0]) }
        let sealed = bytes.withUnsafeBufferPointer { buffer in sealRandomized(typeTag: nil, buffer, keyCount: rowKey.count) { rowKey[$0] } }
        guard let sealed else { throw .failed("AES-256-GCM encryption failed") }
        return sealed
    }

    /// Randomized mode under the newest key: `typeTag` (when given) then `plaintext`, bound to
    /// the row's key. Nil when libcrypto fails.
    private func sealRandomized(typeTag: UInt8?, _ plaintext: UnsafeBufferPointer<UInt8>, keyCount: Int, keyPart: (Int) -> StoredValue) -> [UInt8]? {
        let key = keys[0]
        return withAssociatedData(keyCount: keyCount, keyPart) { associated in
            key.gcm.sealWithRandomNonce(header: key.randomizedHeader, typeTag: typeTag, plaintext: plaintext, associatedData: associated)
        }
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
        return try bytes.withUnsafeBytes { raw in Result { () throws(FieldCipherError) in try open(envelope: raw, rowKey: rowKey) } }.get()
    }

    /// The value inside an envelope read where it lies (SQLite's own buffer during a step), so
    /// reading a row copies no ciphertext.
    public func open(envelope bytes: UnsafeRawBufferPointer, rowKey: [StoredValue]) throws(FieldCipherError) -> StoredValue {
        try open(envelope: bytes, keyCount: rowKey.count) { rowKey[$0] }
    }

    /// The same, with the row's key read from `row` at `keyPositions` (nil: NULL), so a reader
    /// builds no key array per value.
    public func open(envelope bytes: UnsafeRawBufferPointer, row: [StoredValue], keyPositions: [Int?]) throws(FieldCipherError) -> StoredValue {
        try open(envelope: bytes, keyCount: keyPositions.count) { keyPositions[$0].map { row[$0] } ?? .null }
    }

    private func open(envelope bytes: UnsafeRawBufferPointer, keyCount: Int, keyPart: (Int) -> StoredValue) throws(FieldCipherError) -> StoredValue {
        guard let envelope = Envelope(bytes) else { throw .notEncrypted(attribute: attribute) }
        guard let key = key(envelope.idBytes(in: bytes)) else { throw .unknownKey(attribute: attribute, keyID: envelope.keyID(in: bytes)) }
        let value = withAssociatedData(keyCount: envelope.mode == .deterministic ? 0 : keyCount, keyPart) { associated in
            key.gcm.open(envelope: bytes, sealedStart: envelope.sealedStart, associatedData: associated, read: Self.decode)
        }
        guard let value, envelope.mode == mode else { throw .doesNotAuthenticate(attribute: attribute, keyID: envelope.keyID(in: bytes)) }
        return value
    }

    /// The key an envelope names by its id's bytes: no String per value.
    private func key(_ idBytes: UnsafeRawBufferPointer) -> DerivedKey? {
        keys.first { $0.idBytes.withUnsafeBytes { $0.elementsEqual(idBytes) } }
    }

    /// Bytes sealed by `seal(bytes:rowKey:)`.
    public func open(bytes: [UInt8], rowKey: [StoredValue]) throws(FieldCipherError) -> [UInt8] {
        let opened = bytes.withUnsafeBytes { raw -> Result<[UInt8], FieldCipherError> in
            guard let envelope = Envelope(raw) else { return .failure(.notEncrypted(attribute: attribute)) }
            guard let key = key(envelope.idBytes(in: raw)) else { return .failure(.unknownKey(attribute: attribute, keyID: envelope.keyID(in: raw))) }
            let keyCount = envelope.mode == .deterministic ? 0 : rowKey.count
            let opened = withAssociatedData(keyCount: keyCount, { rowKey[$0] }) { associatedBytes in
                key.gcm.open(
                    nonce: UnsafeRawBufferPointer(rebasing: raw[(envelope.sealedStart - Crypto.nonceLength)..<envelope.sealedStart]),
                    sealed: UnsafeRawBufferPointer(rebasing: raw[envelope.sealedStart...]), associatedData: associatedBytes)
            }
            guard let opened, envelope.mode == mode else { return .failure(.doesNotAuthenticate(attribute: attribute, keyID: envelope.keyID(in: raw))) }
            return .success(opened)
        }
        return try opened.get()
    }

    /// True when `stored` is an envelope under the newest key (nothing for `reencrypt` to do).
    public func isCurrent(_ stored: StoredValue) -> Bool {
        if stored == .null { return true }
        guard case .blob(let bytes) = stored else { return false }
        return bytes.withUnsafeBytes { raw in
            guard let envelope = Envelope(raw) else { return false }
            return envelope.idBytes(in: raw).elementsEqual(keys[0].idBytes) && envelope.mode == mode
        }
    }

    /// The id of the key an envelope names, or nil when `bytes` is not an envelope. Nothing is decrypted.
    public static func keyID(of bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { raw in Envelope(raw)?.keyID(in: raw) }
    }

    /// The id of the key that encrypts.
    public var newestKeyID: String { keys[0].id }

    /// True when `stored` is a blob laid out as an envelope (any key, either mode); whether it
    /// decrypts is not checked.
    public static func isEnvelope(_ stored: StoredValue) -> Bool {
        if case .blob(let bytes) = stored { return bytes.withUnsafeBytes { Envelope($0) != nil } }
        return false
    }

    /// Where an envelope's parts lie in its bytes.
    struct Envelope {
        let mode: Mode
        /// Where the ciphertext starts; the nonce is the 12 bytes before it.
        let sealedStart: Int

        init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count >= 6, bytes[0] == 0x53, bytes[1] == 0x47, bytes[2] == 0x45, bytes[3] == 0x01, let mode = Mode(rawValue: bytes[4]) else { return nil }
            let idLength = Int(bytes[5])
            let nonceStart = 6 + idLength
            guard idLength > 0, bytes.count >= nonceStart + Crypto.nonceLength + Crypto.tagLength else { return nil }
            self.mode = mode
            sealedStart = nonceStart + Crypto.nonceLength
        }

        func idBytes(in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: bytes[6..<(sealedStart - Crypto.nonceLength)])
        }

        /// The key id, for messages (key ids are ASCII).
        func keyID(in bytes: UnsafeRawBufferPointer) -> String { String(decoding: idBytes(in: bytes), as: UTF8.self) }
    }

    // MARK: - Encodings

    /// The prefix, then (randomized mode) each key value as its 8-byte length and its encoding.
    func associatedData(_ rowKey: [StoredValue]) -> [UInt8] {
        withAssociatedData(keyCount: rowKey.count, { rowKey[$0] }) { Array($0) }
    }

    /// `associatedData` of the row key whose parts `keyPart` gives, written into stack space for the duration of `body`: no
    /// allocation per value.
    func withAssociatedData<T>(keyCount: Int, _ keyPart: (Int) -> StoredValue, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        guard mode == .randomized, keyCount > 0 else { return associatedPrefix.withUnsafeBytes(body) }
        var size = associatedPrefix.count
        for index in 0..<keyCount { size += 8 + Self.encodedCount(keyPart(index)) }
        return withUnsafeTemporaryAllocation(byteCount: size, alignment: 1) { buffer in
            guard let base = buffer.baseAddress else { return body(UnsafeRawBufferPointer(buffer)) }
            var at = associatedPrefix.withUnsafeBytes { prefix in
                buffer.copyMemory(from: prefix)
                return prefix.count
            }
            func put(_ value: UInt64) {
                for index in 0..<8 { base.storeBytes(of: UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64(index))), toByteOffset: at + index, as: UInt8.self) }
                at += 8
            }
            for index in 0..<keyCount {
                let part = keyPart(index)
                put(UInt64(Self.encodedCount(part)))
                switch part {
                case .null:
                    base.storeBytes(of: 0, toByteOffset: at, as: UInt8.self)
                    at += 1
                case .integer(let number):
                    base.storeBytes(of: 1, toByteOffset: at, as: UInt8.self)
                    at += 1
                    put(UInt64(bitPattern: number))
                case .real(let number):
                    base.storeBytes(of: 2, toByteOffset: at, as: UInt8.self)
                    at += 1
                    put(number.bitPattern)
                case .text(let text):
                    base.storeBytes(of: 3, toByteOffset: at, as: UInt8.self)
                    at += 1
                    for byte in text.utf8 {
                        base.storeBytes(of: byte, toByteOffset: at, as: UInt8.self)
                        at += 1
                    }
                case .blob(let blob):
                    base.storeBytes(of: 4, toByteOffset: at, as: UInt8.self)
                    at += 1
                    blob.withUnsafeBytes { bytes in if let source = bytes.baseAddress { (base + at).copyMemory(from: source, byteCount: bytes.count) } }
                    at += blob.count
                }
            }
            return body(UnsafeRawBufferPointer(buffer))
        }
    }

    /// The length of `encode(value)`.
    static func encodedCount(_ value: StoredValue) -> Int {
        switch value {
        case .null: 1
        case .integer, .real: 9
        case .text(let text): 1 + text.utf8.count
        case .blob(let blob): 1 + blob.count
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
