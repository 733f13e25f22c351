import CCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few libcrypto primitives field encryption needs: AES-256-GCM, HMAC-SHA-256, HKDF and
/// random bytes. Every call checks its result; a failure is an error, never a crash.
enum Crypto {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    static func randomBytes(_ count: Int) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw Failure(description: "the system's random generator failed") }
        return bytes
    }

    static func hmacSHA256(key: [UInt8], _ data: [UInt8]) throws(Failure) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length = 0
        let result = key.withUnsafeBytes { keyBytes in
            data.withUnsafeBytes { dataBytes in
                EVP_Q_mac(
                    nil, "HMAC", nil, "SHA256", nil, keyBytes.baseAddress, keyBytes.count,
                    dataBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), dataBytes.count, &output, 32, &length)
            }
        }
        guard result != nil, length == 32 else { throw Failure(description: "HMAC-SHA-256 failed") }
        return output
    }

    /// RFC 5869 with SHA-256: extract, then expand to `length` bytes.
    static func hkdf(secret: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws(Failure) -> [UInt8] {
        let pseudorandom = try hmacSHA256(key: salt, secret)
        var output: [UInt8] = []
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            block = try hmacSHA256(key: pseudorandom, block + info + [counter])
            output += block
            counter += 1
        }
        return Array(output.prefix(length))
    }

    /// Ciphertext followed by the 16-byte tag.
    static func sealAESGCM(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], associatedData: [UInt8]) throws(Failure) -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { throw Failure(description: "out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var length: Int32 = 0
        var written = 0
        guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1,
            EVP_EncryptInit_ex(context, nil, nil, key, nonce) == 1
        else { throw Failure(description: "AES-256-GCM could not start") }
        if !associatedData.isEmpty {
            guard EVP_EncryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1 else { throw Failure(description: "AES-256-GCM refused the associated data") }
        }
        let ok = output.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            if !plaintext.isEmpty {
                guard EVP_EncryptUpdate(context, base, &length, plaintext, Int32(plaintext.count)) == 1 else { return false }
                written = Int(length)
            }
            guard EVP_EncryptFinal_ex(context, base + written, &length) == 1 else { return false }
            written += Int(length)
            return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), base + written) == 1
        }
        guard ok, written == plaintext.count else { throw Failure(description: "AES-256-GCM encryption failed") }
        return output
    }

    /// The plaintext, or nil when the tag does not authenticate (wrong key, wrong associated
    /// data, tampered bytes).
    static func openAESGCM(key: [UInt8], nonce: [UInt8], sealed: ArraySlice<UInt8>, associatedData: [UInt8]) throws(Failure) -> [UInt8]? {
        guard sealed.count >= tagLength else { return nil }
        guard let context = EVP_CIPHER_CTX_new() else { throw Failure(description: "out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        let ciphertext = Array(sealed.dropLast(tagLength))
        var tag = Array(sealed.suffix(tagLength))
        var output = [UInt8](repeating: 0, count: max(1, ciphertext.count))
        var length: Int32 = 0
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1,
            EVP_DecryptInit_ex(context, nil, nil, key, nonce) == 1
        else { throw Failure(description: "AES-256-GCM could not start") }
        if !associatedData.isEmpty {
            guard EVP_DecryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1 else { return nil }
        }
        var written = 0
        if !ciphertext.isEmpty {
            guard EVP_DecryptUpdate(context, &output, &length, ciphertext, Int32(ciphertext.count)) == 1 else { return nil }
            written = Int(length)
        }
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else { return nil }
        let final = output.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + written, &length)
        }
        guard final == 1 else { return nil }
        return Array(output.prefix(ciphertext.count))
    }
}

/// AES-256-GCM contexts keyed once and reused, message after message: setting up a context and
/// its key schedule costs more than sealing a short value. Not shared between threads at once
/// (a mutex guards it), so one store's actor can use it freely.
///
/// Its mutable state lives behind pointers held in constants: a value is opened in about the
/// time libcrypto takes, and Swift's dynamic exclusivity checks on class properties, a lock
/// object's calls and growing arrays would each add a measurable share to that.
final class GCMKey: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let sealer: OpaquePointer
    private let opener: OpaquePointer
    private let state: UnsafeMutablePointer<State>

    private struct State {
        /// Random bytes drawn from libcrypto 1,536 at a time and handed out 12 per nonce: every
        /// nonce is still fresh randomness, at a tenth of the cost of a call per value. A
        /// forked child must not reuse the parent's bytes, so the pool belongs to one fork
        /// generation (counted by an atfork handler: asking the kernel for the process id costs
        /// a system call per value).
        var pool: [UInt8] = []
        var poolOffset = 0
        var poolGeneration: UInt64 = .max
        /// Where an opened value is written before `read` sees it, reused from value to value.
        var plain: UnsafeMutablePointer<UInt8>? = nil
        var plainCapacity = 0
    }

    /// The cipher, fetched once per process (OpenSSL 3 looks it up by name otherwise); libcrypto's
    /// fetched ciphers may be shared between threads.
    private struct FetchedCipher: @unchecked Sendable { let pointer: OpaquePointer? }
    private static let fetched = FetchedCipher(pointer: EVP_CIPHER_fetch(nil, "AES-256-GCM", nil))
    private static var cipher: OpaquePointer? { fetched.pointer }

    init(_ key: [UInt8]) throws(Crypto.Failure) {
        guard let cipher = Self.cipher, let sealer = EVP_CIPHER_CTX_new() else { throw Crypto.Failure(description: "AES-256-GCM is not available") }
        guard let opener = EVP_CIPHER_CTX_new() else {
            EVP_CIPHER_CTX_free(sealer)
            throw Crypto.Failure(description: "AES-256-GCM is not available")
        }
        self.sealer = sealer
        self.opener = opener
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        state = .allocate(capacity: 1)
        state.initialize(to: State())
        guard EVP_EncryptInit_ex2(sealer, cipher, key, nil, nil) == 1, EVP_DecryptInit_ex2(opener, cipher, key, nil, nil) == 1 else {
            throw Crypto.Failure(description: "AES-256-GCM refused the key")
        }
    }

    deinit {
        EVP_CIPHER_CTX_free(sealer)
        EVP_CIPHER_CTX_free(opener)
        if let plain = state.pointee.plain {
            // An opened value may have been a secret.
            plain.update(repeating: 0, count: state.pointee.plainCapacity)
            plain.deallocate()
        }
        state.deinitialize(count: 1)
        state.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    private func locked<T>(_ body: () throws(Crypto.Failure) -> T) throws(Crypto.Failure) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Appends the next nonce of the pool (the mutex held). Used bytes are overwritten, so no
    /// nonce can be handed out twice.
    private func appendNonce(to bytes: inout [UInt8]) throws(Crypto.Failure) {
        let generation = ForkGeneration.current
        if state.pointee.poolOffset + Crypto.nonceLength > state.pointee.pool.count || state.pointee.poolGeneration != generation {
            state.pointee.pool = try Crypto.randomBytes(Crypto.nonceLength * 128)
            state.pointee.poolOffset = 0
            state.pointee.poolGeneration = generation
        }
        let offset = state.pointee.poolOffset
        state.pointee.pool.withUnsafeMutableBufferPointer { source in
            let nonce = UnsafeMutableBufferPointer(rebasing: source[offset..<(offset + Crypto.nonceLength)])
            bytes.append(contentsOf: nonce)
            nonce.update(repeating: 0)
        }
        state.pointee.poolOffset += Crypto.nonceLength
    }

    /// Seals a message under a fresh random nonce into one new envelope: `header`, the nonce,
    /// the ciphertext of `typeTag` (when given) followed by `plaintext`, and the tag. One lock
    /// and one allocation per value. Nil when libcrypto fails.
    func sealWithRandomNonce(header: [UInt8], typeTag: UInt8?, plaintext: UnsafeBufferPointer<UInt8>, associatedData: UnsafeRawBufferPointer) -> [UInt8]? {
        let messageLength = plaintext.count + (typeTag == nil ? 0 : 1)
        var envelope: [UInt8] = []
        envelope.reserveCapacity(header.count + Crypto.nonceLength + messageLength + Crypto.tagLength)
        envelope += header
        let nonceStart = header.count
        let sealedStart = nonceStart + Crypto.nonceLength
        let sealer = sealer
        let ok =
            (try? locked { () throws(Crypto.Failure) -> Bool in
                try appendNonce(to: &envelope)
                // The message is copied in and encrypted in place: one pass, one update call.
                if let typeTag { envelope.append(typeTag) }
                envelope.append(contentsOf: plaintext)
                envelope.append(contentsOf: repeatElement(0, count: Crypto.tagLength))
                var length: Int32 = 0
                return envelope.withUnsafeMutableBufferPointer { buffer -> Bool in
                    guard let base = buffer.baseAddress else { return false }
                    var out = base + sealedStart
                    guard EVP_EncryptInit_ex(sealer, nil, nil, nil, base + nonceStart) == 1 else { return false }
                    if let associated = associatedData.baseAddress, associatedData.count > 0 {
                        guard EVP_EncryptUpdate(sealer, nil, &length, associated.assumingMemoryBound(to: UInt8.self), Int32(associatedData.count)) == 1 else { return false }
                    }
                    if messageLength > 0 {
                        guard EVP_EncryptUpdate(sealer, out, &length, out, Int32(messageLength)) == 1 else { return false }
                        out += Int(length)
                    }
                    guard EVP_EncryptFinal_ex(sealer, out, &length) == 1 else { return false }
                    out += Int(length)
                    guard out - (base + sealedStart) == messageLength else { return false }
                    return EVP_CIPHER_CTX_ctrl(sealer, EVP_CTRL_GCM_GET_TAG, Int32(Crypto.tagLength), out) == 1
                }
            }) ?? false
        return ok ? envelope : nil
    }

    /// Appends the ciphertext and its tag to `output`.
    func seal(nonce: [UInt8], plaintext: [UInt8], associatedData: [UInt8], into output: inout [UInt8]) throws(Crypto.Failure) {
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: plaintext.count + Crypto.tagLength))
        let sealer = sealer
        let ok = try locked { () throws(Crypto.Failure) -> Bool in
            var length: Int32 = 0
            return output.withUnsafeMutableBufferPointer { buffer -> Bool in
                guard let base = buffer.baseAddress else { return false }
                let out = base + start
                guard EVP_EncryptInit_ex(sealer, nil, nil, nil, nonce) == 1 else { return false }
                if !associatedData.isEmpty {
                    guard EVP_EncryptUpdate(sealer, nil, &length, associatedData, Int32(associatedData.count)) == 1 else { return false }
                }
                var written = 0
                if !plaintext.isEmpty {
                    guard EVP_EncryptUpdate(sealer, out, &length, plaintext, Int32(plaintext.count)) == 1 else { return false }
                    written = Int(length)
                }
                guard EVP_EncryptFinal_ex(sealer, out + written, &length) == 1 else { return false }
                written += Int(length)
                guard written == plaintext.count else { return false }
                return EVP_CIPHER_CTX_ctrl(sealer, EVP_CTRL_GCM_GET_TAG, Int32(Crypto.tagLength), out + written) == 1
            }
        }
        guard ok else {
            output.removeSubrange(start...)
            throw Crypto.Failure(description: "AES-256-GCM encryption failed")
        }
    }

    /// Opens the sealed part of `envelope` (from `sealedStart`, the nonce before it) with
    /// `associatedData`, and hands the plaintext to `read`, which must not keep the buffer; nil
    /// when it does not authenticate.
    func open<T>(envelope: UnsafeRawBufferPointer, sealedStart: Int, associatedData: UnsafeRawBufferPointer, read: (UnsafeBufferPointer<UInt8>) -> T?) -> T? {
        let count = envelope.count - sealedStart - Crypto.tagLength
        guard count >= 0, sealedStart >= Crypto.nonceLength, let base = envelope.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if state.pointee.plainCapacity < count || state.pointee.plain == nil {
            if let old = state.pointee.plain {
                old.update(repeating: 0, count: state.pointee.plainCapacity)
                old.deallocate()
            }
            let capacity = max(64, count)
            state.pointee.plain = .allocate(capacity: capacity)
            state.pointee.plainCapacity = capacity
        }
        guard let out = state.pointee.plain else { return nil }
        var length: Int32 = 0
        guard EVP_DecryptInit_ex(opener, nil, nil, nil, base + sealedStart - Crypto.nonceLength) == 1 else { return nil }
        if let associated = associatedData.baseAddress, associatedData.count > 0 {
            guard EVP_DecryptUpdate(opener, nil, &length, associated.assumingMemoryBound(to: UInt8.self), Int32(associatedData.count)) == 1 else { return nil }
        }
        var written = 0
        if count > 0 {
            guard EVP_DecryptUpdate(opener, out, &length, base + sealedStart, Int32(count)) == 1 else { return nil }
            written = Int(length)
        }
        // libcrypto only reads the expected tag.
        let tag = UnsafeMutableRawPointer(mutating: base + sealedStart + count)
        guard EVP_CIPHER_CTX_ctrl(opener, EVP_CTRL_GCM_SET_TAG, Int32(Crypto.tagLength), tag) == 1,
            EVP_DecryptFinal_ex(opener, out + written, &length) == 1
        else { return nil }
        return read(UnsafeBufferPointer(start: out, count: count))
    }

    /// The plaintext, or nil when the tag does not authenticate.
    func open(nonce: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer) -> [UInt8]? {
        guard sealed.count >= Crypto.tagLength, let sealedBase = sealed.baseAddress else { return nil }
        let count = sealed.count - Crypto.tagLength
        var output = [UInt8](repeating: 0, count: max(1, count))
        let opener = opener
        let ok =
            (try? locked { () throws(Crypto.Failure) -> Bool in
                var length: Int32 = 0
                return output.withUnsafeMutableBufferPointer { buffer -> Bool in
                    guard let out = buffer.baseAddress else { return false }
                    guard EVP_DecryptInit_ex(opener, nil, nil, nil, nonce.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 1 else { return false }
                    if associatedData.count > 0 {
                        guard EVP_DecryptUpdate(opener, nil, &length, associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(associatedData.count)) == 1 else { return false }
                    }
                    var written = 0
                    if count > 0 {
                        guard EVP_DecryptUpdate(opener, out, &length, sealedBase.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1 else { return false }
                        written = Int(length)
                    }
                    let tag = UnsafeMutableRawPointer(mutating: sealedBase + count)
                    guard EVP_CIPHER_CTX_ctrl(opener, EVP_CTRL_GCM_SET_TAG, Int32(Crypto.tagLength), tag) == 1 else { return false }
                    return EVP_DecryptFinal_ex(opener, out + written, &length) == 1
                }
            }) ?? false
        guard ok else { return nil }
        if count == 0 { output.removeAll() }
        return output
    }
}

/// Counts forks in this process's line: a child sees a number its parent never had, so pools of
/// random bytes drawn before a fork are dropped after it.
enum ForkGeneration {
    nonisolated(unsafe) private static var count: UInt64 = 0
    private static let registered: Bool = {
        pthread_atfork(nil, nil, { ForkGeneration.count &+= 1 }) == 0
    }()

    static var current: UInt64 {
        // Without the handler, fall back to the process id (one system call).
        guard registered else { return UInt64(UInt32(bitPattern: getpid())) | 1 << 63 }
        return count
    }
}
