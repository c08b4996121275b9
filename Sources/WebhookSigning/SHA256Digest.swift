import COpenSSL

/// SHA-256 through libcrypto: how a consumer's token is stored when the tokens file holds only its
/// digest (`sha256:<hex>`, DESIGN §14), so the file need not hold the secret.
public enum SHA256Digest {
    /// The 32-byte digest of `bytes`.
    public static func of(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let input = Array(bytes)
        let done = input.withUnsafeBufferPointer { buffer in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(buffer.baseAddress, buffer.count, output.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        // EVP_Digest fails only without memory; a digest that cannot match anything is then the answer.
        return done == 1 && length == 32 ? digest : []
    }

    /// Whether `a` and `b` are equal, in time that depends only on their lengths.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return false }
        return a.withUnsafeBytes { lhs in b.withUnsafeBytes { rhs in CRYPTO_memcmp(lhs.baseAddress, rhs.baseAddress, a.count) == 0 } }
    }
}
