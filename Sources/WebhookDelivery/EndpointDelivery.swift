import AsyncSignals
import CheckedInput
import CurlHTTP
import Foundation
import Logging
import StoreModel
import Tracing
import WebhookSigning

/// One endpoint's delivery loop: in change-log order, one change in flight; a failure waits out the
/// retry schedule where it stands.
///
/// The loop keeps its place in the log in memory across turns (``DeliveryCursor``) and stores it
/// every 100 ms while it is busy, when it runs out of changes, before it records a failure and when it
/// stops; never ahead of the 2xx answers. A kill between two stores sends those changes again under
/// the same `webhook-id`s (at least once, never lost). Each store is a compare-and-set from the cursor
/// and revision it last stored, so a replay or an `enable` that moved the cursor meanwhile is never
/// overwritten: the store refuses, and the loop starts again from the cursor the store holds. Both
/// move the revision on, so even a replay to exactly where the loop last stored its cursor is seen.
struct EndpointDelivery: Sendable {
    let id: Int64
    let deliverer: WebhookDeliverer
    let wake: WakeSignal

    /// Where the loop is: the last change handled (answered 2xx or skipped by the filters) and the
    /// cursor as the loop last stored it.
    struct DeliveryCursor {
        var handled: Int64
        var stored: Int64
        /// The endpoint's revision when the loop took its cursor: a replay or an enable moves it on.
        var revision: Int64
        var storedAt: Double
        /// When the last 2xx since the last store came, if one did.
        var succeeded: Double?
        /// Changes above ``handled`` already answered 2xx (several in flight: they wait for the ones
        /// below them), and batches that failed, sent again as they were (``DeliveryPlan``).
        var answered: Set<Int64> = []
        var held: [Int64: [Int64]] = [:]
    }

    /// Under this share of the processor idle, the machine is busy to its last core.
    static let busyIdleShare = 0.15
    /// How long a turn waits on a busy machine before it sends anyway.
    static let yieldPause: Duration = .milliseconds(250)

    func run() async {
        let clock = ContinuousClock()
        var cursor: DeliveryCursor?
        var processor = ProcessorIdleGauge(read: deliverer.processorCounters)
        while !Task.isCancelled {
            // A machine busy to its last core (a burst of pushes): the turn waits a moment first, so
            // deliveries (about 70 µs of processor each, beside a push's 50) take little of it while
            // the burst lasts and catch up when it passes. It sends anyway after the wait: however long
            // the machine stays busy, each endpoint still gets a batch (up to 100 changes) every 250 ms
            // or so, about 3 % of one core. The thread's lowest priority (SCHED_IDLE) alone left it the
            // gaps between the pushes' wake-ups, where it still took about 10 % of their throughput;
            // a wait of 100 ms, 6 % (docs/PERFORMANCE.md).
            if let idle = processor.idleShare(), idle < Self.busyIdleShare {
                try? await clock.sleep(for: Self.yieldPause)
            }
            let pause: Duration?
            do {
                pause = try await turn(&cursor)
            } catch {
                deliverer.logger.debug("webhook delivery could not read the store; trying again",
                                       metadata: ["webhook.endpoint": "\(id)", "store.reason": "\(error)"])
                pause = .seconds(1)
            }
            guard let pause else { break }
            // More is due at once: no wait (a pending wake only costs one empty turn later).
            if pause == .zero { continue }
            await wake.wait(until: clock.now.advanced(by: pause), clock: clock)
        }
        // Stopped (shutdown, or the endpoint disabled or gone): what was handled is stored, so the next
        // start sends as little again as it can.
        _ = try? await persist(&cursor, force: true)
    }

    /// Sends what is due; returns how long to wait before the next turn, or nil when the endpoint is
    /// gone or disabled.
    private func turn(_ cursor: inout DeliveryCursor?) async throws -> Duration? {
        let store = deliverer.store
        guard let endpoint = try await store.webhookEndpoints().first(where: { $0.id == id }), endpoint.enabled else { return nil }
        let now = deliverer.now()
        if cursor?.stored != endpoint.cursor || cursor?.revision != endpoint.revision {
            // The first turn, or the cursor was moved by someone else (a replay, an enable, another agent):
            // what was handled since the last store is dropped and sent again from there.
            cursor = DeliveryCursor(handled: endpoint.cursor, stored: endpoint.cursor, revision: endpoint.revision, storedAt: now)
        }
        if endpoint.nextAttemptAt > now {
            return Checked.duration(seconds: endpoint.nextAttemptAt - now, maximum: .seconds(1))
        }
        let from = cursor?.handled ?? endpoint.cursor
        let limit = 100
        switch try await store.changes(after: from, limit: limit) {
        case .reset(let reason):
            // The log no longer holds what follows the cursor (a user switch cleared it): go on from now.
            deliverer.logger.warning("a webhook endpoint's place in the change log is gone; it continues from the newest change",
                                     metadata: ["webhook.endpoint": "\(id)", "webhook.reason": "\(reason)"])
            let head = try await store.changeHead()
            _ = try await store.recordWebhookProgress(
                id: id, from: endpoint.cursor, revision: endpoint.revision, through: head, success: false, at: now)
            cursor = nil
            return .zero
        case .changes(let changes):
            guard let last = changes.last else {
                // Caught up: the place is stored now rather than in 100 ms (refused: start again at once).
                return try await persist(&cursor, force: true) ? .seconds(1) : .zero
            }
            // Changes are numbered consecutively, so a batch short of the limit ends at the head.
            let head = changes.count < limit ? last.seq : try await store.changeHead()
            if let behind = Checked.difference(head, from), behind > deliverer.settings.maximumBacklog {
                guard try await persist(&cursor, force: true) else { return .zero }
                try await disable(endpoint, "\(behind) changes behind, over webhooks.max_backlog (\(deliverer.settings.maximumBacklog))")
                return nil
            }
            guard endpoint.options.isSequential else {
                return try await sendParallel(changes, atHead: changes.count < limit, to: endpoint, cursor: &cursor)
            }
            return try await send(changes, to: endpoint, cursor: &cursor)
        }
    }

    /// Stores the cursor when it moved and `force` is set or 100 ms have passed since the last store.
    /// False when the store refused because the cursor was moved meanwhile (`cursor` is then nil, so
    /// the next turn starts from the store's).
    func persist(_ cursor: inout DeliveryCursor?, force: Bool) async throws -> Bool {
        guard var current = cursor else { return true }
        let now = deliverer.now()
        guard current.handled != current.stored, force || now - current.storedAt >= 0.1 else { return true }
        let moved = try await deliverer.store.recordWebhookProgress(
            id: id, from: current.stored, revision: current.revision, through: current.handled, success: current.succeeded != nil,
            at: current.succeeded ?? now)
        guard moved else {
            cursor = nil
            return false
        }
        (current.stored, current.storedAt, current.succeeded) = (current.handled, now, nil)
        cursor = current
        return true
    }

    /// Sends `changes` in order, stopping at the first failure. The batch's requests are signed here,
    /// together, and performed as one sequence on the curl loop's thread: each starts when the one
    /// before it answered 2xx, with no hop back to this task between them (that hop, a thread wake-up
    /// each way, was most of a delivery's cost). A sequence stops after a minute, so no signature is
    /// sent much older than its `webhook-timestamp`; what it did not reach is signed again next turn.
    private func send(_ changes: [OrderChange], to endpoint: WebhookEndpoint, cursor: inout DeliveryCursor?) async throws -> Duration? {
        let signedAt = deliverer.now()
        let signing: Signing
        do {
            signing = try self.signing(for: endpoint, at: signedAt)
        } catch {
            guard try await persist(&cursor, force: true) else { return .zero }
            return try await failed(endpoint, reason: error.reason, retryAfter: nil)
        }
        // Each change with its request, or none when the endpoint's filters skip it, and the
        // attempt's span (whose traceparent the request carries).
        var spans: [(any Span)?] = []
        let planned = changes.map { change in
            (seq: change.seq, request: WebhookPayload.event(for: change, to: endpoint).map {
                var request = request(
                    Array($0.body.utf8), messageID: WebhookPayload.messageID(endpoint: endpoint.id, seq: change.seq), endpoint: endpoint,
                    signing: signing)
                spans.append(WebhookAttemptSpan.start(
                    deliverer.tracer, &request, endpoint: endpoint.id, seq: change.seq, url: Self.redacted(endpoint.url),
                    traceContext: change.traceContext))
                return request
            })
        }
        let now = deliverer.now
        let results = await deliverer.loop.performSequence(planned.compactMap(\.request)) { response in
            (200..<300).contains(response.status) && now() - signedAt < 60
        }
        for (index, span) in spans.enumerated() { WebhookAttemptSpan.end(span, index < results.count ? results[index] : nil) }
        guard var current = cursor else { return .zero }
        // The 2xx answers are counted in the metrics once per batch, however it ends.
        var delivered = 0
        defer { if delivered > 0 { deliverer.observe(id, .delivered, delivered) } }
        var answered = results.makeIterator()
        for (seq, request) in planned {
            if request != nil {
                // Not reached by the sequence: the next turn signs it again.
                guard let result = answered.next() else { break }
                switch Self.outcome(result) {
                case .delivered:
                    current.succeeded = now()
                    delivered += 1
                case .gone(let status):
                    guard try await persist(&cursor, force: true) else { return .zero }
                    try await disable(endpoint, "the endpoint answered \(status) Gone")
                    return nil
                case .failed(let reason, let retryAfter):
                    guard try await persist(&cursor, force: true) else { return .zero }
                    return try await failed(endpoint, reason: reason, retryAfter: retryAfter)
                }
            }
            current.handled = seq
            cursor = current
        }
        _ = try await persist(&cursor, force: false)
        return .zero
    }

    /// Keeps the change for a retry on the schedule (jittered ±20 %, or `Retry-After` when longer), or
    /// disables the endpoint when the schedule is spent.
    func failed(_ endpoint: WebhookEndpoint, reason: String, retryAfter: Double?) async throws -> Duration? {
        let attempts = endpoint.attempts + 1
        let schedule = deliverer.settings.retrySchedule
        let now = deliverer.now()
        deliverer.observe(id, .failed, 1)
        guard attempts <= schedule.count else {
            try await deliverer.store.recordWebhookFailure(
                id: id, error: reason, attempts: attempts, retryAt: now,
                disable: "no 2xx after \(attempts) attempts (webhooks.retry_schedule); the last: \(reason)", at: now)
            deliverer.observe(id, .disabled, 1)
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

    func disable(_ endpoint: WebhookEndpoint, _ reason: String) async throws {
        _ = try await deliverer.store.setWebhookEndpoint(id: id, enabled: false, reason: reason)
        deliverer.observe(id, .disabled, 1)
        deliverer.logger.error("a webhook endpoint was disabled", metadata: [
            "webhook.endpoint": "\(id)", "webhook.url": "\(Self.redacted(endpoint.url))", "webhook.reason": "\(reason)",
        ])
    }
}
