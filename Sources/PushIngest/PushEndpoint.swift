import AsyncSignals
import CheckedInput
import CoalescedLogging
public import Foundation
import HTTPTypes
public import Hummingbird
import JSONToolkit
public import LocalHTTP
public import Logging
import StoreModel
import Synchronization
import CoreMetrics
public import Tracing

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
            authentication: PushAuthentication = .none, maximumBodyBytes: Int = PushServer.settings().maximumBodyBytes,
            maximumNotifications: Int = 100, retryAfterSeconds: Int = 5
        ) {
            self.authentication = authentication
            self.maximumBodyBytes = maximumBodyBytes
            self.maximumNotifications = maximumNotifications
            self.retryAfterSeconds = retryAfterSeconds
        }
    }

    private let configuration: Configuration
    /// `configuration.authentication` until SIGHUP replaces it (``replaceAuthentication(_:)``).
    private let authentication: Locked<PushAuthentication>
    /// The group commit; the server runs its carrier (``PushJournal/carryCommits()``).
    let journal: PushJournal
    private let metrics: PushMetrics
    private let now: @Sendable () -> Double
    private let logger: Logger
    /// Refusals repeat under a fault or an attack: one line per kind, then one per ten seconds with
    /// the count (never a line per request).
    private let refusals: LogCoalescer
    private let draining = Atomic<Bool>(false)
    /// Spans for each request and its commit (``PushTrace``); nil when traces are not exported.
    let tracer: (any Tracer)?

    /// Creates the endpoint; `now` is Unix seconds (the Standard Webhooks timestamp check); `tracer`
    /// makes a span per request and per commit (DESIGN §14), none when nil.
    public init(
        configuration: Configuration, journal: PushJournal, metrics: PushMetrics,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }, tracer: (any Tracer)? = nil, logger: Logger
    ) {
        self.tracer = tracer
        self.configuration = configuration
        authentication = Locked(configuration.authentication)
        self.journal = journal
        self.metrics = metrics
        self.now = now
        self.logger = logger
        refusals = LogCoalescer(logger: logger, interval: .seconds(10))
    }

    /// Verifies pushes with `authentication` from now on (SIGHUP re-read `ingest.secret_file`).
    /// The mode (`ingest.auth`) is the one the agent started with; only the secrets change.
    public func replaceAuthentication(_ authentication: PushAuthentication) {
        self.authentication.withLock { $0 = authentication }
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

    /// Answers one request served by the router (a push pipelined behind another request on its
    /// connection; ``PushRequestHandler`` answers the others on the event loop).
    public func respond(to request: Request) async -> Response {
        let trace = PushTrace(tracer, headers: request.headers)
        let answer = await answer(request, trace: trace)
        record(answer, trace)
        return answer.response
    }

    /// Counts an answer, ends its span and logs a refusal (coalesced: one line per kind, then one per
    /// ten seconds).
    func record(_ answer: PushAnswer, _ trace: PushTrace) {
        trace.end(answer)
        metrics.record(answer.outcome)
        metrics.latency.recordNanoseconds(Checked.nanoseconds(of: ContinuousClock.now - trace.started))
        switch answer.outcome {
        case .accepted, .duplicate:
            break
        case .unauthorized, .unavailable:
            break  // logged where the cause is known, at the level it deserves (one line, not two)
        default:
            // Under the request's context, the line carries its trace id (the log handler reads it).
            _ = ServiceContext.withValue(trace.span?.context) {
                refusals.log(.info, "push refused", key: "refused/\(answer.outcome.rawValue)", metadata: [
                    "push.outcome": "\(answer.outcome.rawValue)", "http.status": "\(answer.status.code)",
                ])
            }
        }
    }

    private func answer(_ request: Request, trace: PushTrace) async -> PushAnswer {
        let webhook: WebhookHeaders
        switch opening(request.headers) {
        case .proceed(let headers): webhook = headers
        case .refused(let refusal): return refusal
        }
        var body: [UInt8] = []
        do {
            for try await buffer in request.body {
                guard body.count + buffer.readableBytes <= configuration.maximumBodyBytes else { return tooLarge }
                body.append(contentsOf: buffer.readableBytesView)
            }
        } catch {
            // The bounds handler ends a body that does not arrive within the read timeout.
            return bodyTimeout
        }
        var prepared: PreparedPush
        switch prepare(body, webhook: webhook) {
        case .proceed(let push): prepared = push
        case .refused(let refusal): return refusal
        }
        let commit = trace.commit(tracer: tracer, &prepared)
        let outcome = await journal.submit(prepared.submission)
        let answer = closing(outcome, prepared)
        Self.end(commit, answer)
        return answer
    }

    /// Answers a push whose head is `headers` and whose whole body is `body`, through `reply`, on
    /// the thread of the commit that decides it (never waiting on the caller's).
    func answer(body: [UInt8], webhook: WebhookHeaders, trace: PushTrace, reply: @escaping @Sendable (PushAnswer) -> Void) {
        switch prepare(body, webhook: webhook) {
        case .refused(let refusal):
            reply(refusal)
        case .proceed(var traced):
            let commit = trace.commit(tracer: tracer, &traced)
            let prepared = traced
            journal.submit(prepared.submission) { [self] outcome in
                let answer = closing(outcome, prepared)
                Self.end(commit, answer)
                reply(answer)
            }
        }
    }

    /// Ends a commit's span with what the journal decided.
    private static func end(_ commit: (any Span)?, _ answer: PushAnswer) {
        guard let commit else { return }
        commit.updateAttributes { $0["orderlive.push.outcome"] = answer.outcome.rawValue }
        if answer.outcome == .unavailable { commit.setStatus(SpanStatus(code: .error)) }
        commit.end()
    }

    /// What the head alone decides: the headers to go on with, or the refusal (shutting down, a
    /// declared length over the limit, authentication that needs no body, conflicting webhook ids).
    func opening(_ headers: HTTPFields) -> Decided<WebhookHeaders> {
        if isDraining {
            return .refused(PushAnswer(.shuttingDown, JSONError(
                .serviceUnavailable, "orderlive is shutting down; send again later", retryAfter: configuration.retryAfterSeconds)))
        }
        // Bounds first: a declared length over the limit is refused before any body byte is read,
        // and the connection is closed so the rest is never read either.
        switch DeclaredLength(headers, maximum: configuration.maximumBodyBytes) {
        case .malformed:
            return .refused(PushAnswer(.badRequest, JSONError(.badRequest, "Content-Length is not a byte count (digits only)", close: true)))
        case .tooLarge:
            return .refused(tooLarge)
        case .acceptable:
            break
        }
        if let failure = authentication.withLock({ $0 }).failureBeforeBody(headers) { return .refused(unauthorized(failure)) }
        switch WebhookHeaders.read(headers) {
        case .success(let webhook): return .proceed(webhook)
        case .failure(let conflict): return .refused(unauthorized(conflict.message))
        }
    }

    /// The submission of a whole body, or its refusal (authentication over the body, Gorush's checks).
    private func prepare(_ body: [UInt8], webhook: WebhookHeaders) -> Decided<PreparedPush> {
        if let failure = authentication.withLock({ $0 }).failureWithBody(webhook, body: body, now: Checked.int64(clamping: now())) {
            return .refused(unauthorized(failure))
        }
        let parsed: GorushRequest
        switch GorushRequest.parse(body, maximumNotifications: configuration.maximumNotifications) {
        case .success(let request): parsed = request
        case .failure(let error): return .refused(PushAnswer(.badRequest, status: .badRequest, body: error.body))
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
        return .proceed(PreparedPush(submission: submission, notifications: parsed.notifications.count, successBody: parsed.successBody))
    }

    /// The answer to a journaled submission.
    private func closing(_ outcome: SubmissionOutcome, _ push: PreparedPush) -> PushAnswer {
        switch outcome {
        case .accepted(let jobs, let duplicates, _, let reused):
            metrics.notifications.increment(by: Int64(push.notifications))
            metrics.jobs.increment(by: Int64(jobs))
            if duplicates > 0 { metrics.duplicates.increment(by: Int64(duplicates)) }
            if reused > 0 {
                metrics.reusedNotificationIDs.increment(by: Int64(reused))
                refusals.log(.notice, "a notif_id was reused for a different notification; it was applied", key: "reused-notif-id",
                             metadata: ["push.reused": "\(reused)"])
            }
            return PushAnswer(.accepted, status: .ok, body: push.successBody)
        case .duplicate(let response):
            metrics.duplicates.increment()
            return PushAnswer(.duplicate, status: .ok, body: response)
        case .conflict(let key):
            return PushAnswer(.reusedID, JSONError(
                .conflict, "webhook-id '\(key.prefix(128))' was accepted for a different body within ingest.dedupe_window_s; "
                    + "nothing of this request was applied: send it with a new id"))
        case .overloaded(let depth):
            return PushAnswer(.overloaded, JSONError(
                .tooManyRequests, "the journal holds \(depth) jobs (ingest.high_water_jobs); send again later",
                retryAfter: configuration.retryAfterSeconds))
        case .failed(let reason):
            refusals.log(.error, "a push could not be journaled; answered 503", key: "journal-failed", metadata: [
                "push.outcome": "\(PushMetrics.Outcome.unavailable.rawValue)", "push.reason": "\(reason)",
            ])
            return PushAnswer(.unavailable, JSONError(.serviceUnavailable, "the journal could not be written; send again later",
                                                      retryAfter: 1))
        }
    }

    /// The largest body this endpoint reads.
    var maximumBodyBytes: Int { configuration.maximumBodyBytes }

    /// The answer to a body over the limit (the connection is closed).
    var tooLarge: PushAnswer {
        PushAnswer(.tooLarge, JSONError(
            .contentTooLarge, "the body is over \(configuration.maximumBodyBytes) bytes (ingest.max_body_bytes)", close: true))
    }

    /// The answer to a body that did not arrive within the read timeout (the connection is closed).
    var bodyTimeout: PushAnswer {
        PushAnswer(.timeout, JSONError(.requestTimeout, "the request body did not arrive in time", close: true))
    }

    private func unauthorized(_ reason: String) -> PushAnswer {
        metrics.authenticationFailures.increment()
        refusals.log(.warning, "push authentication failed", key: "unauthorized/\(reason)", metadata: [
            "push.outcome": "\(PushMetrics.Outcome.unauthorized.rawValue)", "push.reason": "\(reason)",
        ])
        return PushAnswer(.unauthorized, JSONError(.unauthorized, "authentication failed: \(reason)"))
    }
}
