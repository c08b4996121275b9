import COpenSSL
public import HummingbirdCore

/// What both listeners share besides their routes.
public enum Listener {
    /// Request heads larger than this, or with more fields, are refused by the HTTP decoder and the
    /// connection closed: one header line of 1 MB or 10,000 headers never reach a handler.
    public static let headerLimits = HTTP1Channel.Configuration.DecoderConfiguration(
        maxHeaderFieldSize: 16 * 1024, maxHeaderListSize: 64 * 1024, maxHeaderFieldCount: 100)

    /// Whether `host` is a loopback address: where both listeners allow `auth: none`.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// Compares two byte strings in time independent of where they differ and of their lengths:
    /// both are hashed with SHA-256 first, and the digests compared with `CRYPTO_memcmp`.
    public static func constantTimeEqual<A: Sequence, B: Sequence>(_ a: A, _ b: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        let left = sha256(Array(a))
        let right = sha256(Array(b))
        return left.count == 32 && right.count == 32 && CRYPTO_memcmp(left, right, 32) == 0
    }

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_Digest(bytes, bytes.count, &digest, &length, EVP_sha256(), nil) == 1 else { return [] }
        return Array(digest.prefix(Int(length)))
    }
}
