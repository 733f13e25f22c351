import Foundation
import SchemaMetadata
import TestSupport
import Testing

@testable import FieldEncryption

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// The bytes of a hexadecimal string; nil when it is not one.
func decodeHex(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count.isMultiple(of: 2) else { return nil }
    var bytes: [UInt8] = []
    for start in stride(from: 0, to: digits.count, by: 2) {
        guard let byte = UInt8(String(decoding: digits[start..<(start + 2)], as: UTF8.self), radix: 16) else { return nil }
        bytes.append(byte)
    }
    return bytes
}

func ring(_ entries: [(String, UInt8)]) throws -> KeyRing {
    try KeyRing(entries.map { (id: $0.0, bytes: [UInt8](repeating: $0.1, count: 32)) })
}

@Suite struct CryptoPrimitiveTests {
    /// RFC 5869, test case 1.
    @Test func hkdfMatchesTheRFCVector() throws {
        let okm = try Crypto.hkdf(secret: [UInt8](repeating: 0x0b, count: 22), salt: Array(0...12), info: Array(0xf0...0xf9), length: 42)
        #expect(hex(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    /// The GCM specification's test cases 13 and 14 (a zero 256-bit key and nonce).
    @Test func aesGCMMatchesTheSpecificationVectors() throws {
        let key = [UInt8](repeating: 0, count: 32), nonce = [UInt8](repeating: 0, count: 12)
        #expect(hex(try Crypto.sealAESGCM(key: key, nonce: nonce, plaintext: [], associatedData: [])) == "530f8afbc74536b9a963b4f1c4cb738b")
        let sealed = try Crypto.sealAESGCM(key: key, nonce: nonce, plaintext: [UInt8](repeating: 0, count: 16), associatedData: [])
        #expect(hex(sealed) == "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919")
        #expect(try Crypto.openAESGCM(key: key, nonce: nonce, sealed: sealed[...], associatedData: []) == [UInt8](repeating: 0, count: 16))
    }
}

@Suite struct FieldCipherTests {
    static let values: [StoredValue] = [
        .text("ada@example.com"), .text(""), .text("ünïcödé ✓"), .integer(-42), .integer(.max), .real(3.25), .real(-0.0),
        .blob([]), .blob([0, 1, 2, 255]),
    ]

    @Test func everyKindOfValueRoundTrips() throws {
        let cipher = try FieldCipher(ring: try ring([("k1", 1)]), table: "user", column: "email", mode: .randomized, attribute: "User.email")
        for value in Self.values {
            let sealed = try cipher.seal(value, rowKey: [.text("u1")])
            #expect(FieldCipher.isEnvelope(sealed))
            #expect(try cipher.open(sealed, rowKey: [.text("u1")]) == value)
        }
        #expect(try cipher.seal(.null, rowKey: [.text("u1")]) == .null, "absence is not hidden")
    }

    /// Envelopes made by an independent implementation of the documented format (Python's
    /// `cryptography`: HKDF-SHA-256, then AES-256-GCM over the type tag and the text, the
    /// associated data being the prefix, the table, the column and each key part as its 8-byte
    /// length and encoding), so the format cannot drift unnoticed between releases.
    static let documentedEnvelopes: [(rowKey: [StoredValue], hex: String)] = [
        ([.integer(7)], "5347450101026b31000102030405060708090a0b7a39ce1d32e6204edf3cae5d18831cdd4aa3067bbfcbfb9188a5b677b9"),
        ([.text("u1")], "5347450101026b31000102030405060708090a0b7a39ce1d32e6204edf3cae5d189ff5b040752accbb449b7552d135656d"),
        ([.integer(7), .text("a")], "5347450101026b31000102030405060708090a0b7a39ce1d32e6204edf3cae5d186ba492bf816cd21564559fad4831dab5"),
        ([.null], "5347450101026b31000102030405060708090a0b7a39ce1d32e6204edf3cae5d18a4fc91c16fec0206d0d4080ab022dd03"),
    ]

    @Test func envelopesOfTheDocumentedFormatOpenByEveryPath() throws {
        let cipher = try FieldCipher(ring: try ring([("k1", 1)]), table: "t", column: "c", mode: .randomized, attribute: "T.c")
        for (rowKey, text) in Self.documentedEnvelopes {
            let bytes = try #require(decodeHex(text))
            #expect(try cipher.open(.blob(bytes), rowKey: rowKey) == .text("secret value"))
            #expect(try bytes.withUnsafeBytes { try cipher.open(envelope: $0, rowKey: rowKey) } == .text("secret value"))
            // The key read from a row: its values at given positions, nil for a missing one (NULL).
            let row: [StoredValue] = [.text("other")] + rowKey + [.integer(99)]
            let positions: [Int?] = rowKey.indices.map { rowKey[$0] == .null ? nil : $0 + 1 }
            #expect(try bytes.withUnsafeBytes { try cipher.open(envelope: $0, row: row, keyPositions: positions) } == .text("secret value"))
            #expect(throws: FieldCipherError.doesNotAuthenticate(attribute: "T.c", keyID: "k1")) {
                try bytes.withUnsafeBytes { try cipher.open(envelope: $0, row: row, keyPositions: [0]) }
            }
            // And what this code seals, the other implementation's layout opens the same way.
            let sealed = try cipher.seal(.text("secret value"), rowKey: rowKey)
            #expect(try cipher.open(sealed, rowKey: rowKey) == .text("secret value"))
            #expect(cipher.withAssociatedData(keyCount: rowKey.count, { rowKey[$0] }) { Array($0) } == cipher.associatedData(rowKey))
        }
        #expect(throws: FieldCipherError.notEncrypted(attribute: "T.c")) { try [UInt8]("SGE".utf8).withUnsafeBytes { try cipher.open(envelope: $0, rowKey: []) } }
        #expect(throws: FieldCipherError.unknownKey(attribute: "T.c", keyID: "k2")) {
            var bytes = try #require(decodeHex(Self.documentedEnvelopes[0].hex))
            bytes[7] = UInt8(ascii: "2")
            _ = try bytes.withUnsafeBytes { try cipher.open(envelope: $0, rowKey: [.integer(7)]) }
        }
    }

    @Test func randomizedValuesDifferAndAreBoundToTheirRowAndColumn() throws {
        let keys = try ring([("k1", 1)])
        let email = try FieldCipher(ring: keys, table: "user", column: "email", mode: .randomized, attribute: "User.email")
        let phone = try FieldCipher(ring: keys, table: "user", column: "phone", mode: .randomized, attribute: "User.phone")
        let first = try email.seal(.text("same"), rowKey: [.text("u1")])
        let second = try email.seal(.text("same"), rowKey: [.text("u1")])
        #expect(first != second, "a fresh nonce each time")
        #expect(throws: FieldCipherError.doesNotAuthenticate(attribute: "User.email", keyID: "k1")) { try email.open(first, rowKey: [.text("u2")]) }
        #expect(throws: FieldCipherError.doesNotAuthenticate(attribute: "User.phone", keyID: "k1")) { try phone.open(first, rowKey: [.text("u1")]) }
    }

    @Test func everyChangedByteIsDetected() throws {
        let cipher = try FieldCipher(ring: try ring([("k1", 1)]), table: "t", column: "c", mode: .randomized, attribute: "T.c")
        guard case .blob(let bytes) = try cipher.seal(.text("secret value"), rowKey: [.integer(7)]) else {
            Issue.record("not a blob")
            return
        }
        for index in bytes.indices {
            var tampered = bytes
            tampered[index] ^= 0x01
            #expect(throws: FieldCipherError.self) { try cipher.open(.blob(tampered), rowKey: [.integer(7)]) }
        }
        #expect(throws: FieldCipherError.self) { try cipher.open(.blob(Array(bytes.dropLast())), rowKey: [.integer(7)]) }
        #expect(throws: FieldCipherError.notEncrypted(attribute: "T.c")) { try cipher.open(.text("secret value"), rowKey: [.integer(7)]) }
    }

    @Test func wrongAndUnknownKeysAreNamed() throws {
        let written = try FieldCipher(ring: try ring([("k1", 1)]), table: "t", column: "c", mode: .randomized, attribute: "T.c")
        let sealed = try written.seal(.text("x"), rowKey: [.integer(1)])
        let wrongBytes = try FieldCipher(ring: try ring([("k1", 2)]), table: "t", column: "c", mode: .randomized, attribute: "T.c")
        #expect(throws: FieldCipherError.doesNotAuthenticate(attribute: "T.c", keyID: "k1")) { try wrongBytes.open(sealed, rowKey: [.integer(1)]) }
        let otherID = try FieldCipher(ring: try ring([("k2", 1)]), table: "t", column: "c", mode: .randomized, attribute: "T.c")
        #expect(throws: FieldCipherError.unknownKey(attribute: "T.c", keyID: "k1")) { try otherID.open(sealed, rowKey: [.integer(1)]) }
    }

    @Test func rotationWritesWithTheNewestAndReadsWithAll() throws {
        let old = try FieldCipher(ring: try ring([("k1", 1)]), table: "t", column: "c", mode: .randomized, attribute: "T.c")
        let rotated = try FieldCipher(ring: try ring([("k2", 2), ("k1", 1)]), table: "t", column: "c", mode: .randomized, attribute: "T.c")
        let before = try old.seal(.text("x"), rowKey: [.integer(1)])
        #expect(try rotated.open(before, rowKey: [.integer(1)]) == .text("x"))
        #expect(!rotated.isCurrent(before))
        let after = try rotated.seal(.text("x"), rowKey: [.integer(1)])
        #expect(rotated.isCurrent(after))
        guard case .blob(let bytes) = after else { return }
        #expect(FieldCipher.keyID(of: bytes) == "k2")
    }

    @Test func deterministicValuesAreEqualForEqualPlaintexts() throws {
        let cipher = try FieldCipher(ring: try ring([("k2", 2), ("k1", 1)]), table: "t", column: "c", mode: .deterministic, attribute: "T.c")
        let first = try cipher.seal(.text("ada@example.com"), rowKey: [.integer(1)])
        #expect(try cipher.seal(.text("ada@example.com"), rowKey: [.integer(2)]) == first, "the row key is not part of it")
        #expect(try cipher.seal(.text("grace@example.com"), rowKey: [.integer(1)]) != first)
        let lookup = try cipher.sealForLookup(.text("ada@example.com"))
        #expect(lookup.count == 2 && lookup[0] == first)
        let old = try FieldCipher(ring: try ring([("k1", 1)]), table: "t", column: "c", mode: .deterministic, attribute: "T.c")
        #expect(lookup[1] == (try old.seal(.text("ada@example.com"), rowKey: [])), "finds values not yet re-encrypted")
    }

    @Test func keyRingsAreParsedStrictlyAndNeverEcho() throws {
        let key = Data([UInt8](repeating: 7, count: 32)).base64EncodedString()
        let parsed = try KeyRing(parsing: " k2=\(key),\nk1=\(key) ", source: "SCHEMAGEN_KEYS")
        #expect(parsed.keys.map(\.id) == ["k2", "k1"])
        #expect(parsed.newest.id == "k2")
        for bad in ["", "k1", "k1=abc", "=\(key)", "k 1=\(key)", "k1=\(key),k1=\(key)", "k1=\(Data([1, 2, 3]).base64EncodedString())"] {
            do {
                _ = try KeyRing(parsing: bad, source: "SCHEMAGEN_KEYS")
                Issue.record("accepted \(bad)")
            } catch {
                #expect(error.description.hasPrefix("SCHEMAGEN_KEYS"))
                #expect(!error.description.contains(key) && !error.description.contains("abc"), "no key material in messages")
            }
        }
        #expect(try KeyRing.fromEnvironment(environment: [:]) == nil)
    }

    @Test func keyFilesMustBeTheOwnersAlone() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("keys").path
        try "k1=\(Data([UInt8](repeating: 9, count: 32)).base64EncodedString())\n".write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect(throws: KeyError.self) { try KeyRing.fromFile(path) }
        do { _ = try KeyRing.fromFile(path) } catch { #expect(error.description.contains("chmod 600")) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(try KeyRing.fromFile(path).newest.id == "k1")
        #expect(throws: KeyError.self) { try KeyRing.fromFile(folder.appendingPathComponent("missing").path) }
    }
}
