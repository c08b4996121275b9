import COpenSSL
import Foundation

/// AES-256-GCM for `credentials.json` at rest (OpenSSL libcrypto). The file becomes a JSON envelope
/// with a random 96-bit nonce, the ciphertext and the 128-bit tag; the tag authenticates the whole
/// record, so a tampered file or a wrong key is detected, never half-read.
public struct CredentialCipher: Sendable {
    private let key: [UInt8]
    static let format = "orderlive-credentials-aes256gcm-v1"

    /// Creates a cipher from a 32-byte key.
    public init(key: [UInt8]) throws(AuthError) {
        guard key.count == 32 else { throw AuthError(.locked, "the credentials key must be 32 bytes, got \(key.count)") }
        self.key = key
    }

    /// Reads a key file: 32 raw bytes, 64 hex digits, or base64 of 32 bytes (surrounding white space ignored).
    public static func loadKey(path: String) throws(AuthError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AuthError(.locked, "cannot read the credentials key file \(path)")
        }
        let bytes = [UInt8](data)
        if bytes.count == 32 { return bytes }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.count == 64, text.allSatisfy(\.isHexDigit) {
            var key: [UInt8] = []
            var index = text.startIndex
            while index < text.endIndex {
                let next = text.index(index, offsetBy: 2)
                guard let byte = UInt8(text[index..<next], radix: 16) else { break }
                key.append(byte)
                index = next
            }
            if key.count == 32 { return key }
        }
        if let decoded = Data(base64Encoded: text), decoded.count == 32 { return [UInt8](decoded) }
        throw AuthError(.locked, "the credentials key file \(path) must hold 32 bytes: raw, 64 hex digits, or base64 "
            + "(e.g. `openssl rand -hex 32 > \(path)`)")
    }

    /// Whether `bytes` look like an envelope this cipher writes.
    static func isEnvelope(_ bytes: [UInt8]) -> Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { return false }
        return object["format"] as? String == format
    }

    /// Encrypts `plaintext` into the envelope.
    func seal(_ plaintext: [UInt8]) throws(AuthError) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 12)
        guard RAND_bytes(&nonce, Int32(nonce.count)) == 1 else { throw AuthError(.locked, "no randomness for a nonce") }
        guard let context = EVP_CIPHER_CTX_new() else { throw AuthError(.locked, "OpenSSL could not allocate a cipher") }
        defer { EVP_CIPHER_CTX_free(context) }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        var length: Int32 = 0
        var total: Int32 = 0
        let aad = Array(Self.format.utf8)
        var ok = EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1
        ok = ok && EVP_EncryptUpdate(context, nil, &length, aad, Int32(aad.count)) == 1
        ok = ok && EVP_EncryptUpdate(context, &ciphertext, &length, plaintext, Int32(plaintext.count)) == 1
        total = length
        ok = ok && ciphertext.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress.map { $0 + Int(total) }, &length) == 1
        }
        total += length
        ok = ok && orderlive_gcm_get_tag(context, &tag, 16) == 1
        guard ok else { throw AuthError(.locked, "OpenSSL could not encrypt the credentials") }
        let envelope: [String: String] = [
            "format": Self.format,
            "nonce": Data(nonce).base64EncodedString(),
            "ciphertext": Data(ciphertext[0..<Int(total)]).base64EncodedString(),
            "tag": Data(tag).base64EncodedString(),
        ]
        guard let data = try? JSONSerialization.data(withJSONObject: envelope, options: [.sortedKeys]) else {
            throw AuthError(.locked, "could not encode the credentials envelope")
        }
        return [UInt8](data)
    }

    /// Decrypts an envelope; nil when it is not one, is damaged, or was sealed under another key.
    func open(_ envelope: [UInt8]) -> [UInt8]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(envelope)) as? [String: Any],
              object["format"] as? String == Self.format,
              let nonce = (object["nonce"] as? String).flatMap({ Data(base64Encoded: $0) }).map([UInt8].init),
              let ciphertext = (object["ciphertext"] as? String).flatMap({ Data(base64Encoded: $0) }).map([UInt8].init),
              var tag = (object["tag"] as? String).flatMap({ Data(base64Encoded: $0) }).map([UInt8].init),
              nonce.count == 12, tag.count == 16,
              let context = EVP_CIPHER_CTX_new()
        else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var length: Int32 = 0
        let aad = Array(Self.format.utf8)
        var ok = EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1
        ok = ok && EVP_DecryptUpdate(context, nil, &length, aad, Int32(aad.count)) == 1
        ok = ok && EVP_DecryptUpdate(context, &plaintext, &length, ciphertext, Int32(ciphertext.count)) == 1
        let total = length
        ok = ok && orderlive_gcm_set_tag(context, &tag, 16) == 1
        // The tag check happens here: a wrong key or any changed byte fails.
        ok = ok && plaintext.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress.map { $0 + Int(total) }, &length) == 1
        }
        guard ok else { return nil }
        return Array(plaintext[0..<Int(total)])
    }
}
