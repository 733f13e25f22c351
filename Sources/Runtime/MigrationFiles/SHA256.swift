import CCrypto
import SchemaMetadata

/// SHA-256 through OpenSSL's libcrypto (EVP interface), hex-encoded.
public enum SHA256 {
    /// The SHA-256 digest of the bytes as 64 lowercase hex digits; empty in the unlikely case that OpenSSL fails.
    public static func hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBufferPointer { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha256(), nil)
        }
        // EVP_Digest fails only when out of memory; an empty digest then never matches a manifest.
        guard ok == 1 else { return "" }
        return digest[0..<Int(length)].map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }

    /// The digest of the text's UTF-8 bytes.
    ///
    ///     SHA256.hex("")   // "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    public static func hex(_ text: String) -> String { hex(Array(text.utf8)) }
}

extension MigrationScript {
    /// SHA-256 of the up SQL, recorded when it is applied: a changed file no longer matches.
    public var checksum: String { SHA256.hex(up) }
}
