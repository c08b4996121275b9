import CheckedInput
import COpenSSL
import Foundation

/// Standard Webhooks signature verification (DESIGN §4): HMAC-SHA256 over `id.timestamp.body` with
/// the `whsec_` secret, several space-separated `v1,<base64>` signatures of which one must match,
/// compared in constant time, and a timestamp within ±300 s.
public struct StandardWebhooks: Sendable {
    /// Why a request was refused; short, never containing the secret.
    public enum Failure: String, Error, Sendable, Hashable {
        case missingHeaders = "missing webhook-id, webhook-timestamp or webhook-signature"
        case badTimestamp = "webhook-timestamp is not a Unix time in seconds (digits only, 1970 to 9999)"
        case timestampOutOfTolerance = "webhook-timestamp is more than 300 s from now"
        case noMatchingSignature = "no webhook-signature matches"
    }

    private let key: [UInt8]
    /// Allowed clock difference, seconds.
    public let tolerance: Int64

    /// Creates a verifier from `whsec_<base64>` (or the bare base64, padded or not).
    public init(secret: String, tolerance: Int64 = 300) throws(StandardWebhooksSecretError) {
        var encoded = secret.trimmingCharacters(in: .whitespacesAndNewlines)
        if encoded.hasPrefix("whsec_") { encoded.removeFirst(6) }
        while encoded.count % 4 != 0 { encoded += "=" }
        guard !encoded.isEmpty, let key = Data(base64Encoded: encoded), !key.isEmpty else {
            throw StandardWebhooksSecretError()
        }
        self.key = [UInt8](key)
        self.tolerance = tolerance
    }

    /// `v1,<base64 HMAC-SHA256(key, id.timestamp.body)>`.
    public func sign(id: String, timestamp: Int64, body: [UInt8]) -> String {
        "v1," + Data(mac(id: id, timestamp: String(timestamp), body: body)).base64EncodedString()
    }

    /// Verifies the three headers against the raw body at `now` (Unix seconds).
    public func verify(
        id: String?, timestamp: String?, signatures: String?, body: [UInt8], now: Int64
    ) -> Result<Void, Failure> {
        guard let id, let timestamp, let signatures, !id.isEmpty, !timestamp.isEmpty, !signatures.isEmpty else {
            return .failure(.missingHeaders)
        }
        // Checked before any arithmetic: a value from outside (`-9223372036854775808` once stopped the
        // process in `now - seconds`). Only digits, only a time between 1970 and 9999.
        guard let seconds = Checked.unixSeconds(decimal: timestamp) else { return .failure(.badTimestamp) }
        guard let skew = Checked.difference(now, seconds), skew.magnitude <= tolerance.magnitude else {
            return .failure(.timestampOutOfTolerance)
        }
        let expected = mac(id: id, timestamp: timestamp, body: body)
        for candidate in signatures.split(separator: " ") {
            guard candidate.hasPrefix("v1,"),
                  let decoded = Data(base64Encoded: String(candidate.dropFirst(3))), decoded.count == expected.count
            else { continue }
            let equal = decoded.withUnsafeBytes { lhs in
                expected.withUnsafeBytes { rhs in CRYPTO_memcmp(lhs.baseAddress, rhs.baseAddress, expected.count) == 0 }
            }
            if equal { return .success(()) }
        }
        return .failure(.noMatchingSignature)
    }

    private func mac(id: String, timestamp: String, body: [UInt8]) -> [UInt8] {
        let message = Array("\(id).\(timestamp).".utf8) + body
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &output, &length)
        return Array(output.prefix(Int(length)))
    }
}

/// The configured secret is not `whsec_` followed by base64 (or is empty).
public struct StandardWebhooksSecretError: Error, Sendable, CustomStringConvertible {
    /// A message naming the fix, not the secret.
    public var description: String { "the webhook secret must be whsec_<base64>, and not empty" }
}
