import Foundation

/// Why keys could not be read. Never holds key material.
public struct KeyError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The reason, for messages: it names the source and key ids, never key bytes.
    public let description: String
    /// An error with its message.
    ///
    ///     throw KeyError("APP_KEYS holds no key")
    public init(_ description: String) { self.description = description }
}

/// The master keys a store encrypts with: the first encrypts, every one decrypts (so a new key
/// goes first and old ones stay until `reencrypt` has rewritten their values).
public struct KeyRing: Sendable, Equatable {
    /// One master key: the id envelopes name it by, and its 32 bytes (which stay inside the module).
    public struct Key: Sendable, Equatable {
        /// The name an envelope carries to say which key sealed it: 1 to 64 letters, digits, `.`, `_` or `-`.
        public let id: String
        let bytes: [UInt8]
    }

    /// Every key, in ring order: the newest (the one that encrypts) first.
    public let keys: [Key]

    /// The key that encrypts.
    public var newest: Key { keys[0] }

    /// The key with this id, or nil when the ring does not have it.
    public func key(id: String) -> Key? { keys.first { $0.id == id } }

    /// Keys as `id=base64` entries separated by commas or new lines; `source` names where they
    /// came from in errors (`SCHEMAGEN_KEYS`, a file).
    ///
    ///     let ring = try KeyRing(parsing: "k2=\(newKey)\nk1=\(oldKey)", source: "APP_KEYS")   // k2 encrypts
    public init(parsing text: String, source: String) throws(KeyError) {
        var keys: [Key] = []
        let entries = text.split(whereSeparator: { $0 == "," || $0 == "\n" || $0 == "\r" })
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        for (index, entry) in entries.enumerated() {
            guard let equals = entry.firstIndex(of: "=") else {
                throw KeyError("\(source): entry \(index + 1) is not id=base64-of-32-bytes")
            }
            let id = String(entry[..<equals])
            guard Self.isValidID(id) else {
                throw KeyError("\(source): entry \(index + 1): a key id is 1 to 64 letters, digits, '.', '_' or '-'")
            }
            guard let bytes = Data(base64Encoded: String(entry[entry.index(after: equals)...])), bytes.count == 32 else {
                throw KeyError("\(source): key '\(id)' is not the base64 of exactly 32 bytes; make one with `openssl rand -base64 32`")
            }
            guard !keys.contains(where: { $0.id == id }) else { throw KeyError("\(source): key id '\(id)' appears twice") }
            keys.append(Key(id: id, bytes: Array(bytes)))
        }
        guard !keys.isEmpty else { throw KeyError("\(source) holds no key; write id=base64-of-32-bytes, e.g. k1=$(openssl rand -base64 32)") }
        self.keys = keys
    }

    /// Keys from raw bytes, for programs that keep them elsewhere (a keychain, a secret store).
    ///
    ///     let ring = try KeyRing([(id: "k1", bytes: secret)])   // secret: 32 bytes from the keychain
    public init(_ keys: [(id: String, bytes: [UInt8])]) throws(KeyError) {
        guard !keys.isEmpty else { throw KeyError("a key ring needs at least one key") }
        var result: [Key] = []
        for key in keys {
            guard Self.isValidID(key.id) else { throw KeyError("a key id is 1 to 64 letters, digits, '.', '_' or '-'") }
            guard key.bytes.count == 32 else { throw KeyError("key '\(key.id)' has \(key.bytes.count) bytes; AES-256 needs 32") }
            guard !result.contains(where: { $0.id == key.id }) else { throw KeyError("key id '\(key.id)' appears twice") }
            result.append(Key(id: key.id, bytes: key.bytes))
        }
        self.keys = result
    }

    /// An HMAC of a fixed text under `key`: lets a database recognise a key without holding it.
    public func checkValue(of key: Key) throws(KeyError) -> [UInt8] {
        do { return try Crypto.hmacSHA256(key: key.bytes, Array("schemagen key check v1".utf8)) } catch { throw KeyError(error.description) }
    }

    static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64 && id.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) }
    }

    /// `SCHEMAGEN_KEYS` (or `name`) from the environment; nil when it is not set.
    public static func fromEnvironment(_ name: String = "SCHEMAGEN_KEYS", environment: [String: String] = ProcessInfo.processInfo.environment) throws(KeyError) -> KeyRing? {
        guard let text = environment[name] else { return nil }
        return try KeyRing(parsing: text, source: name)
    }

    /// A key file in the same format, refused unless only its owner may read it (mode 0600 or
    /// 0400): a key others can read protects nothing.
    public static func fromFile(_ path: String) throws(KeyError) -> KeyRing {
        let attributes: [FileAttributeKey: Any]
        do { attributes = try FileManager.default.attributesOfItem(atPath: path) } catch {
            throw KeyError("cannot read the key file \(path): \(error.localizedDescription)")
        }
        let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0o777
        guard mode & 0o077 == 0 else {
            throw KeyError("the key file \(path) may be read by others (mode \(String(mode, radix: 8))); run `chmod 600 \(path)`")
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw KeyError("cannot read the key file \(path)")
        }
        return try KeyRing(parsing: text, source: path)
    }
}
