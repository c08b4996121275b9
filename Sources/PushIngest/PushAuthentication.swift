import HTTPTypes
import LocalHTTP
public import WebhookSigning

/// How the push endpoint authenticates a sender (`ingest.auth`, DESIGN §4). A failure is a 401
/// with a short reason, and the body of a refused request is never parsed.
public enum PushAuthentication: Sendable {
    /// Anyone who can reach the listener (allowed only on loopback; see ``PushServer``).
    case none
    /// `Authorization: Bearer <secret>`, any of the secrets (`ingest.secret_file`, one a line, so a
    /// secret is rotated with overlap), each compared in constant time.
    case bearer(secrets: [String])
    /// Standard Webhooks signatures over the raw body, by any of the secrets.
    case standardWebhooks(verifiers: [StandardWebhooks])

    /// One bearer secret.
    public static func bearer(secret: String) -> PushAuthentication {
        .bearer(secrets: [secret])
    }

    /// One Standard Webhooks secret.
    public static func standardWebhooks(_ verifier: StandardWebhooks) -> PushAuthentication {
        .standardWebhooks(verifiers: [verifier])
    }

    /// The check that needs only the headers (bearer); nil when it passes or needs the body.
    func failureBeforeBody(_ headers: HTTPFields) -> String? {
        guard case .bearer(let secrets) = self else { return nil }
        guard let value = headers[.authorization] else { return "missing Authorization: Bearer header" }
        let prefix = "bearer "
        guard value.count > prefix.count, value.prefix(prefix.count).lowercased() == prefix else {
            return "the Authorization header is not a bearer token"
        }
        let presented = value.dropFirst(prefix.count).utf8
        // Every secret is compared, so the timing does not say which one nearly matched.
        var matched = false
        for secret in secrets where Listener.constantTimeEqual(presented, secret.utf8) { matched = true }
        return matched ? nil : "wrong bearer token"
    }

    /// The check over the raw body (Standard Webhooks); nil when it passes or is not needed. A
    /// signature by any of the secrets verifies; a failure names the first secret's reason (the
    /// headers' own faults are the same for every secret).
    func failureWithBody(_ headers: WebhookHeaders, body: [UInt8], now: Int64) -> String? {
        guard case .standardWebhooks(let verifiers) = self else { return nil }
        var failure: StandardWebhooks.Failure?
        for verifier in verifiers {
            let result = verifier.verify(
                id: headers.id, timestamp: headers.timestamp, signatures: headers.signature, body: body, now: now)
            switch result {
            case .success: return nil
            case .failure(let reason): failure = failure ?? reason
            }
        }
        return failure?.rawValue ?? StandardWebhooks.Failure.noMatchingSignature.rawValue
    }
}

/// The three Standard Webhooks headers of a request, under their own names (`webhook-id`,
/// `webhook-timestamp`, `webhook-signature`) or Svix's (`svix-id`, `svix-timestamp`,
/// `svix-signature`), which Svix's libraries still send for the same scheme. A request may carry
/// both names of one header only with the same value: two different ids or signatures are refused,
/// since the one checked and the one used as the idempotency key could otherwise differ.
struct WebhookHeaders: Sendable, Hashable {
    var id: String?
    var timestamp: String?
    var signature: String?

    /// Both names of one header carried different values: what to tell the sender.
    struct Conflict: Error, Hashable {
        var message: String
    }

    /// Reads the headers, or the conflict.
    static func read(_ headers: HTTPFields) -> Result<WebhookHeaders, Conflict> {
        var read = WebhookHeaders()
        for (part, path) in [("id", \WebhookHeaders.id), ("timestamp", \.timestamp), ("signature", \.signature)] {
            let standard = headers.value(named: "webhook-" + part)
            let svix = headers.value(named: "svix-" + part)
            if let standard, let svix, standard != svix {
                return .failure(Conflict(message: "webhook-\(part) and svix-\(part) differ; send one of them (they are the same header)"))
            }
            read[keyPath: path] = standard ?? svix
        }
        return .success(read)
    }
}

extension HTTPFields {
    /// The first value of the field with this lower-case name, if any.
    func value(named name: String) -> String? {
        first { $0.name.canonicalName == name }?.value
    }
}
