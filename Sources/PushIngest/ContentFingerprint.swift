import COpenSSL

/// The fingerprint an idempotency key is stored with (``SQLiteOrderStore/DedupeEntry``): the first 128 bits
/// of the content's SHA-256, in hex. Equal bytes, equal fingerprint; a resent push is byte for byte
/// what was sent, so a retry matches and a different request under a reused id does not.
public enum ContentFingerprint {
    /// The fingerprint of `bytes`.
    public static func of(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { of($0) }
    }

    /// The fingerprint of the bytes in `buffer`.
    public static func of(_ buffer: UnsafeBufferPointer<UInt8>) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let digested = EVP_Digest(buffer.baseAddress, buffer.count, &digest, &length, EVP_sha256(), nil) == 1
        // SHA-256 never fails on a buffer in memory; were it to, no fingerprint is the old rule
        // (any content under the key is the same), never a crash.
        guard digested, length >= 16 else { return "" }
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(32)
        for byte in digest.prefix(16) {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
