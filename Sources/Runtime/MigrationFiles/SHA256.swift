import CCrypto
import SchemaMetadata

/// SHA-256 through OpenSSL's libcrypto (EVP interface), hex-encoded.
public enum SHA256 {
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

    public static func hex(_ text: String) -> String { hex(Array(text.utf8)) }
}

extension MigrationScript {
    /// SHA-256 of the up SQL, recorded when it is applied: a changed file no longer matches.
    public var checksum: String { SHA256.hex(up) }
}
