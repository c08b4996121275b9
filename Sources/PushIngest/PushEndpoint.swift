import CheckedInput
import CoalescedLogging
import Foundation
import HTTPTypes
import Hummingbird
import JSONToolkit
import LocalHTTP
import Logging
import StoreModel
import Synchronization

/// `POST /api/push` (DESIGN §4): bounds first, then authentication, then Gorush's validation, then
/// the request's jobs and dedupe keys committed in one transaction before the 200. Every expected
/// condition has its own answer; nothing here answers 500 or waits without a bound.
public final class PushEndpoint: Sendable {
    /// What the endpoint accepts.
    public struct Configuration: Sendable {
        /// How senders authenticate.
        public var authentication: PushAuthentication
        /// The largest body read (413 above it).
        public var maximumBodyBytes: Int
        /// The most notifications in one request (Gorush's 400 above it).
        public var maximumNotifications: Int
        /// The `Retry-After` seconds of a 429 or 503.
        public var retryAfterSeconds: Int

        /// Creates a configuration with DESIGN §6's defaults.
        public init(
            authentication: PushAuthentication = .none, maximumBodyBytes: Int = PushServer.Configuration().maximumBodyBytes,
            maximumNotifications: Int = 100, retryAfterSeconds: Int = 5
        ) {
            self.authentication = authentication
            self.maximumBodyBytes = maximumBodyBytes
            self.maximumNotifications = maximumNotifications
            self.retryAfterSeconds = retryAfterSeconds
        }
    }

    private let configuration: Configuration
    /// The group commit; the server runs its carrier (``PushJournal/carryCommits()``).
    let journal: PushJournal
    private let metrics: PushMetrics
    private let now: @Sendable () -> Double
    private let logger: Logger
    /// Refusals repeat under a fault or an attack: one line per kind, then one per ten seconds with
    /// the count (never a line per request).
    private let refusals: LogCoalescer
    private let draining = Atomic<Bool>(false)

    /// Creates the endpoint; `now` is Unix seconds (the Standard Webhooks timestamp check).
    public init(
        configuration: Configuration, journal: PushJournal, metrics: PushMetrics,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }, logger: Logger
    ) {
        self.configuration = configuration
        self.journal = journal
        self.metrics = metrics
        self.now = now
        self.logger = logger
        refusals = LogCoalescer(logger: logger, interval: .seconds(10))
    }

    /// From now on every push is answered 503 with `Retry-After` (shutdown has begun).
    public func beginDraining() {
        draining.store(true, ordering: .releasing)
    }

    /// True once shutdown has begun.
    public var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Counts a connection refused because the listener was full, and says so in the log at most
    /// once every ten seconds (a flood of refused connections must not become a flood of lines).
    /// Counts a connection the listener refused because every place was busy
    /// (`orderlive_push_connections_refused_total`; the listener logs it).
    func connectionRefused() {
        metrics.connectionsRefused.increment()
    }

    /// Answers one request.
    public func respond(to request: Request) async -> Response {
        let started = ContinuousClock.now
        let (outcome, response) = await answer(request)
        metrics.record(outcome)
        metrics.latency.recordNanoseconds(Checked.nanoseconds(of: ContinuousClock.now - started))
        switch outcome {
        case .accepted, .duplicate:
            break
        case .unauthorized, .unavailable:
            break  // logged where the cause is known, at the level it deserves (one line, not two)
        default:
            refusals.log(.info, "push refused", key: "refused/\(outcome.rawValue)", metadata: [
                "push.outcome": "\(outcome.rawValue)", "http.status": "\(response.status.code)",
            ])
        }
        return response
    }

    private func answer(_ request: Request) async -> (PushMetrics.Outcome, Response) {
        if isDraining {
            return (.shuttingDown, Self.json(.serviceUnavailable, "orderlive is shutting down; send again later",
                                            retryAfter: configuration.retryAfterSeconds))
        }
        // Bounds first: a declared length over the limit is refused before any body byte is read,
        // and the connection is closed so the rest is never read either.
        switch DeclaredLength(request.headers, maximum: configuration.maximumBodyBytes) {
        case .malformed:
            return (.badRequest, Self.json(.badRequest, "Content-Length is not a byte count (digits only)", close: true))
        case .tooLarge:
            return (.tooLarge, tooLarge())
        case .acceptable:
            break
        }
        if let failure = configuration.authentication.failureBeforeBody(request.headers) {
            return unauthorized(failure)
        }
        let webhook: WebhookHeaders
        switch WebhookHeaders.read(request.headers) {
        case .success(let headers): webhook = headers
        case .failure(let conflict): return unauthorized(conflict.message)
        }
        var body: [UInt8] = []
        do {
            for try await buffer in request.body {
                guard body.count + buffer.readableBytes <= configuration.maximumBodyBytes else {
                    return (.tooLarge, tooLarge())
                }
                body.append(contentsOf: buffer.readableBytesView)
            }
        } catch {
            // The bounds handler ends a body that does not arrive within the read timeout.
            return (.timeout, Self.json(.requestTimeout, "the request body did not arrive in time", close: true))
        }
        if let failure = configuration.authentication.failureWithBody(webhook, body: body, now: Checked.int64(clamping: now())) {
            return unauthorized(failure)
        }
        let parsed: GorushRequest
        switch GorushRequest.parse(body, maximumNotifications: configuration.maximumNotifications) {
        case .success(let request): parsed = request
        case .failure(let error): return (.badRequest, Self.body(.badRequest, error.body))
        }
        let receivedAt = now()
        let requestKey = webhook.id.flatMap { $0.isEmpty ? nil : $0 }
        let submission = IdempotentSubmission(
            requestKey: requestKey,
            requestFingerprint: requestKey.map { _ in ContentFingerprint.of(body) },
            parts: parsed.notifications.map { notification in
                IdempotentSubmission.Part(
                    key: notification.notifID.flatMap { $0.isEmpty ? nil : $0 }, fingerprint: notification.fingerprint,
                    jobs: PushTranslator.jobs(for: notification, now: receivedAt))
            },
            response: parsed.successBody)
        switch await journal.submit(submission) {
        case .accepted(let jobs, let duplicates, _, let reused):
            metrics.notifications.increment(by: Int64(parsed.notifications.count))
            metrics.jobs.increment(by: Int64(jobs))
            if duplicates > 0 { metrics.duplicates.increment(by: Int64(duplicates)) }
            if reused > 0 {
                metrics.reusedNotificationIDs.increment(by: Int64(reused))
                refusals.log(.notice, "a notif_id was reused for a different notification; it was applied", key: "reused-notif-id",
                             metadata: ["push.reused": "\(reused)"])
            }
            return (.accepted, Self.body(.ok, parsed.successBody))
        case .duplicate(let response):
            metrics.duplicates.increment()
            return (.duplicate, Self.body(.ok, response))
        case .conflict(let key):
            return (.reusedID, Self.json(
                .conflict, "webhook-id '\(key.prefix(128))' was accepted for a different body within ingest.dedupe_window_s; "
                    + "nothing of this request was applied: send it with a new id"))
        case .overloaded(let depth):
            return (.overloaded, Self.json(
                .tooManyRequests, "the journal holds \(depth) jobs (ingest.high_water_jobs); send again later",
                retryAfter: configuration.retryAfterSeconds))
        case .failed(let reason):
            refusals.log(.error, "a push could not be journaled; answered 503", key: "journal-failed", metadata: [
                "push.outcome": "\(PushMetrics.Outcome.unavailable.rawValue)", "push.reason": "\(reason)",
            ])
            return (.unavailable, Self.json(.serviceUnavailable, "the journal could not be written; send again later",
                                            retryAfter: 1))
        }
    }

    private func tooLarge() -> Response {
        Self.json(.contentTooLarge, "the body is over \(configuration.maximumBodyBytes) bytes (ingest.max_body_bytes)",
                  close: true)
    }

    private func unauthorized(_ reason: String) -> (PushMetrics.Outcome, Response) {
        metrics.authenticationFailures.increment()
        refusals.log(.warning, "push authentication failed", key: "unauthorized/\(reason)", metadata: [
            "push.outcome": "\(PushMetrics.Outcome.unauthorized.rawValue)", "push.reason": "\(reason)",
        ])
        return (.unauthorized, Self.json(.unauthorized, "authentication failed: \(reason)"))
    }

    /// A refusal in Gorush's `{"code": N, "message": "..."}` shape (``LocalHTTP/JSONError``).
    static func json(_ status: HTTPResponse.Status, _ message: String, retryAfter: Int? = nil, close: Bool = false) -> Response {
        JSONError(status, message, retryAfter: retryAfter, close: close).response
    }

    /// A JSON response of `text`.
    static func body(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response.json(status, text)
    }
}
