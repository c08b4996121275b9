import AsyncSignals
import CheckedInput
import CurlHTTP
import Foundation
import Logging
import StoreModel
import WebhookSigning

/// One endpoint's delivery loop: in change-log order, one change in flight, the cursor stored after
/// each 2xx; a failure waits out the retry schedule where it stands.
struct EndpointDelivery: Sendable {
    let id: Int64
    let deliverer: WebhookDeliverer
    let wake: WakeSignal

    func run() async {
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let pause: Duration?
            do {
                pause = try await turn()
            } catch {
                deliverer.logger.debug("webhook delivery could not read the store; trying again",
                                       metadata: ["webhook.endpoint": "\(id)", "store.reason": "\(error)"])
                pause = .seconds(1)
            }
            guard let pause else { return }
            await wake.wait(until: clock.now.advanced(by: pause), clock: clock)
        }
    }

    /// Sends what is due; returns how long to wait before the next turn, or nil when the endpoint is
    /// gone or disabled.
    private func turn() async throws -> Duration? {
        let store = deliverer.store
        guard let endpoint = try await store.webhookEndpoints().first(where: { $0.id == id }), endpoint.enabled else { return nil }
        let now = deliverer.now()
        if endpoint.nextAttemptAt > now {
            return Checked.duration(seconds: endpoint.nextAttemptAt - now, maximum: .seconds(1))
        }
        let head = try await store.changeHead()
        if let behind = Checked.difference(head, endpoint.cursor), behind > deliverer.settings.maximumBacklog {
            try await disable(endpoint, "\(behind) changes behind, over webhooks.max_backlog (\(deliverer.settings.maximumBacklog))")
            return nil
        }
        switch try await store.changes(after: endpoint.cursor, limit: 100) {
        case .reset(let reason):
            // The log no longer holds what follows the cursor (a user switch cleared it): go on from now.
            deliverer.logger.warning("a webhook endpoint's place in the change log is gone; it continues from the newest change",
                                     metadata: ["webhook.endpoint": "\(id)", "webhook.reason": "\(reason)"])
            try await store.recordWebhookProgress(id: id, through: head, success: false, at: now)
            return .zero
        case .changes(let changes):
            if changes.isEmpty { return .seconds(1) }
            return try await send(changes, to: endpoint)
        }
    }

    /// Sends `changes` in order, stopping at the first failure. The cursor is stored after the 2xx
    /// answers, never ahead of them: after the batch (at most 100 changes), every 100 ms within it, and
    /// before a failure is recorded. A kill between two stores sends those changes again, under the
    /// same `webhook-id`s; one store per 2xx cost a write transaction per change, which took a
    /// quarter of the push path's throughput with one endpoint (PERFORMANCE.md).
    private func send(_ changes: [OrderChange], to endpoint: WebhookEndpoint) async throws -> Duration? {
        let store = deliverer.store
        var handled = endpoint.cursor
        var stored = endpoint.cursor
        var succeeded: Double?
        var storedAt = deliverer.now()
        func persist(force: Bool) async throws {
            let now = deliverer.now()
            guard handled != stored, force || now - storedAt >= 0.1 else { return }
            try await store.recordWebhookProgress(id: id, through: handled, success: succeeded != nil, at: succeeded ?? now)
            (stored, storedAt, succeeded) = (handled, now, nil)
        }
        // The keys, decoded from their `whsec_` text once per batch rather than once per change, and
        // again only when the set that signs changes (a rotation's 24 hours ending within the batch).
        var signers: (secrets: [String], keys: [StandardWebhooks])?
        for change in changes {
            guard let (_, body) = WebhookPayload.event(for: change, to: endpoint) else {
                handled = change.seq
                continue
            }
            let secrets = endpoint.signingSecrets(at: deliverer.now())
            if signers?.secrets != secrets {
                do {
                    signers = (secrets, try secrets.map { secret throws(StandardWebhooksSecretError) in try StandardWebhooks(secret: secret) })
                } catch {
                    try await persist(force: true)
                    return try await failed(endpoint, reason: "the endpoint's secret is not a Standard Webhooks key", retryAfter: nil)
                }
            }
            switch await attempt(body, seq: change.seq, endpoint: endpoint, signers: signers?.keys ?? []) {
            case .delivered:
                handled = change.seq
                succeeded = deliverer.now()
                deliverer.observe(endpoint, .delivered)
                try await persist(force: false)
            case .gone(let status):
                try await persist(force: true)
                try await disable(endpoint, "the endpoint answered \(status) Gone")
                return nil
            case .failed(let reason, let retryAfter):
                try await persist(force: true)
                return try await failed(endpoint, reason: reason, retryAfter: retryAfter)
            }
        }
        try await persist(force: true)
        return .zero
    }

    private enum Outcome {
        case delivered
        case gone(Int)
        case failed(String, retryAfter: Double?)
    }

    /// One POST, signed by each of `signers`.
    private func attempt(_ body: String, seq: Int64, endpoint: WebhookEndpoint, signers: [StandardWebhooks]) async -> Outcome {
        let bytes = Array(body.utf8)
        let messageID = WebhookPayload.messageID(endpoint: endpoint.id, seq: seq)
        let timestamp = Int64(clamping: Checked.int64(clamping: deliverer.now()))
        let signature = signers.map { $0.sign(id: messageID, timestamp: timestamp, body: bytes) }.joined(separator: " ")
        let settings = deliverer.settings
        let request = HTTPRequest(
            url: endpoint.url, method: "POST",
            headers: ["Content-Type": "application/json", "webhook-id": messageID, "webhook-timestamp": "\(timestamp)",
                      "webhook-signature": signature],
            body: bytes, connectTimeout: min(settings.timeout, .seconds(10)), timeout: settings.timeout,
            tls: TLSOptions(caFile: settings.caFile), maximumRedirects: 0, maximumResponseBytes: 1 << 20)
        do {
            let response = try await deliverer.loop.perform(request)
            switch response.status {
            case 200..<300: return .delivered
            case 410: return .gone(410)
            default:
                let retryAfter = response.head.headers["Retry-After"].flatMap { Checked.nonNegative(decimal: $0) }.map(Double.init)
                return .failed("the endpoint answered \(response.status)", retryAfter: retryAfter)
            }
        } catch {
            return .failed("\(error)", retryAfter: nil)
        }
    }

    /// Keeps the change for a retry on the schedule (jittered ±20 %, or `Retry-After` when longer), or
    /// disables the endpoint when the schedule is spent.
    private func failed(_ endpoint: WebhookEndpoint, reason: String, retryAfter: Double?) async throws -> Duration? {
        let attempts = endpoint.attempts + 1
        let schedule = deliverer.settings.retrySchedule
        let now = deliverer.now()
        deliverer.observe(endpoint, .failed)
        guard attempts <= schedule.count else {
            try await deliverer.store.recordWebhookFailure(
                id: id, error: reason, attempts: attempts, retryAt: now,
                disable: "no 2xx after \(attempts) attempts (webhooks.retry_schedule); the last: \(reason)", at: now)
            deliverer.observe(endpoint, .disabled)
            deliverer.logger.error("a webhook endpoint was disabled: its retries are spent", metadata: [
                "webhook.endpoint": "\(id)", "webhook.url": "\(Self.redacted(endpoint.url))", "webhook.reason": "\(reason)",
            ])
            return nil
        }
        let planned = Checked.seconds(of: schedule[attempts - 1]) * (0.8 + 0.4 * Checked.clamp(deliverer.random(), to: 0...1))
        let wait = max(planned, Checked.clamp(retryAfter ?? 0, to: 0...86_400))
        try await deliverer.store.recordWebhookFailure(
            id: id, error: reason, attempts: attempts, retryAt: now + wait, disable: nil, at: now)
        deliverer.logger.warning("a webhook delivery failed; it is tried again", metadata: [
            "webhook.endpoint": "\(id)", "webhook.url": "\(Self.redacted(endpoint.url))", "webhook.reason": "\(reason)",
            "webhook.attempts": "\(attempts)", "webhook.retry_in_s": "\(Int(wait))",
        ])
        return Checked.duration(seconds: wait, maximum: .seconds(1))
    }

    private func disable(_ endpoint: WebhookEndpoint, _ reason: String) async throws {
        _ = try await deliverer.store.setWebhookEndpoint(id: id, enabled: false, reason: reason)
        deliverer.observe(endpoint, .disabled)
        deliverer.logger.error("a webhook endpoint was disabled", metadata: [
            "webhook.endpoint": "\(id)", "webhook.url": "\(Self.redacted(endpoint.url))", "webhook.reason": "\(reason)",
        ])
    }

    /// The URL without its query or user information, which may hold a token.
    static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "(unreadable URL)" }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        return parts.string ?? "(unreadable URL)"
    }
}
