import AsyncSignals
import CheckedInput
import CurlHTTP
import Foundation
import StoreModel
import Tracing

/// Delivery with several requests in flight, batches or a rate cap (DESIGN §14): the ``DeliveryPlan``
/// says what goes next; each request is its own transfer on the curl loop, so up to `max_in_flight`
/// are answered at the receiver's pace together. A failure stops new requests; those in flight are
/// waited for and counted, the cursor stored at the low-water mark, and the retry schedule applies
/// to the endpoint as on the one-at-a-time path.
extension EndpointDelivery {
    /// How a parallel turn ended early.
    private enum Stop {
        case failed(String, retryAfter: Double?)
        case gone(Int)
        /// The stored cursor was moved by someone else.
        case moved
    }

    /// What a child task of a parallel turn tells it.
    private enum Answer: Sendable {
        /// A request was answered (or failed).
        case answered(DeliveryPlan.Unit, Result<HTTPResponse, CurlError>)
        /// New changes were committed, or a short batch's wait is over.
        case woken
    }

    /// Sends `changes` (and what follows them in the log, read as requests are answered) as the
    /// endpoint's options say; returns the pause before the next turn, or nil when the endpoint stops.
    func sendParallel(
        _ changes: [OrderChange], atHead: Bool, to endpoint: WebhookEndpoint, cursor: inout DeliveryCursor?
    ) async throws -> Duration? {
        guard let start = cursor else { return .zero }
        let signing: Signing
        do {
            signing = try self.signing(for: endpoint, at: deliverer.now())
        } catch {
            return try await failed(endpoint, reason: error.reason, retryAfter: nil)
        }
        let options = endpoint.options
        var plan = DeliveryPlan(handled: start.handled, answered: start.answered, held: start.held)
        plan.read(changes) { WebhookPayload.event(for: $0, to: endpoint) != nil }
        var local: DeliveryCursor? = start
        var stop: Stop?
        var waitUntil: Double?
        var reachedHead = atHead
        var delivered = 0
        var bucket = RateBucket(perSecond: options.ratePerSecond)
        let clock = ContinuousClock()
        let window = min(5_000, max(200, options.maxInFlight * options.batchSize * 2))
        try await withThrowingTaskGroup(of: Answer.self) { group in
            var inFlight = 0
            var watching = false
            defer { group.cancelAll() }
            while true {
                waitUntil = nil
                while stop == nil, !Task.isCancelled, inFlight < options.maxInFlight {
                    if !reachedHead, plan.pendingCount < window / 2 {
                        reachedHead = try await refill(&plan, endpoint: endpoint, limit: window - plan.pendingCount)
                    }
                    let now = deliverer.now()
                    switch plan.next(batchSize: options.batchSize, batchWait: Double(options.batchMilliseconds) / 1_000,
                                     atHead: reachedHead, now: now) {
                    case .send(let unit):
                        if let delay = bucket.take(at: clock.now) { try? await clock.sleep(for: delay) }
                        let request = batchRequest(unit, endpoint: endpoint, signing: signing, batched: options.batchSize > 1)
                        group.addTask { [deliverer] in
                            var request = request
                            let first = unit.changes.first
                            let span = WebhookAttemptSpan.start(
                                deliverer.tracer, &request, endpoint: endpoint.id, seq: first?.seq ?? 0,
                                url: Self.redacted(endpoint.url), traceContext: first?.traceContext)
                            let result = await deliverer.loop.performResult(request)
                            WebhookAttemptSpan.end(span, result)
                            return .answered(unit, result)
                        }
                        inFlight += 1
                        continue
                    case .waitUntil(let time):
                        waitUntil = time
                    case .nothing:
                        break
                    }
                    break
                }
                // Nothing in flight: the turn ends (a short batch's wait becomes the pause before the next).
                guard inFlight > 0 else { break }
                if !watching, stop == nil {
                    // While requests are in flight, new changes (the commit's wake) and a short batch's
                    // time are still heard: room in flight is used without waiting for an answer.
                    watching = true
                    let wait = Checked.duration(seconds: max(0, (waitUntil ?? .infinity) - deliverer.now()), maximum: .seconds(1))
                    group.addTask { [wake] in
                        await wake.wait(until: clock.now.advanced(by: wait), clock: clock)
                        return .woken
                    }
                }
                guard let answer = try await group.next() else { break }
                guard case .answered(let unit, let result) = answer else {
                    watching = false
                    reachedHead = false
                    continue
                }
                inFlight -= 1
                switch Self.outcome(result) {
                case .delivered:
                    plan.delivered(unit)
                    delivered += unit.changes.count
                    local?.succeeded = deliverer.now()
                    local?.handled = plan.handled
                    // Refused: a replay or an enable moved the cursor; nothing more is sent this turn,
                    // and the next starts from the store's.
                    if try await persist(&local, force: false) == false { stop = stop ?? .moved }
                case .gone(let status):
                    plan.failed(unit, holding: false)
                    stop = .gone(status)
                case .failed(let reason, let retryAfter):
                    plan.failed(unit, holding: options.batchSize > 1)
                    if stop == nil, !Task.isCancelled { stop = .failed(reason, retryAfter: retryAfter) }
                }
            }
        }
        if delivered > 0 { deliverer.observe(id, .delivered, delivered) }
        local?.handled = plan.handled
        local?.answered = plan.answered
        local?.held = plan.held
        cursor = local
        return try await ended(stop, waitUntil: waitUntil, endpoint: endpoint, cursor: &cursor)
    }

    /// Ends a parallel turn as `stop` says: the endpoint disabled (`410`), the failure recorded for a
    /// retry, a cursor moved by someone else dropped, or the pause before the next turn.
    private func ended(
        _ stop: Stop?, waitUntil: Double?, endpoint: WebhookEndpoint, cursor: inout DeliveryCursor?
    ) async throws -> Duration? {
        switch stop {
        case .gone(let status)?:
            guard try await persist(&cursor, force: true) else { return .zero }
            try await disable(endpoint, "the endpoint answered \(status) Gone")
            return nil
        case .failed(let reason, let retryAfter)?:
            guard try await persist(&cursor, force: true) else { return .zero }
            return try await failed(endpoint, reason: reason, retryAfter: retryAfter)
        case .moved?:
            cursor = nil
            return .zero
        case nil:
            _ = try await persist(&cursor, force: false)
            if let waitUntil { return Checked.duration(seconds: max(0.001, waitUntil - deliverer.now()), maximum: .seconds(60)) }
            return .zero
        }
    }

    /// Reads up to `limit` more changes into `plan`; true when the log's head was reached.
    private func refill(_ plan: inout DeliveryPlan, endpoint: WebhookEndpoint, limit: Int) async throws -> Bool {
        guard limit > 0 else { return false }
        guard case .changes(let more) = try await deliverer.store.changes(after: plan.readThrough, limit: limit) else {
            // The log moved on past what was read (a user switch cleared it): the next turn handles it.
            return true
        }
        plan.read(more) { WebhookPayload.event(for: $0, to: endpoint) != nil }
        return more.count < limit
    }

    /// The request of `unit`: one change as today, or (`batched`) a JSON array of the changes' objects
    /// in change-log order, signed as one message whose id names its first and last change.
    private func batchRequest(_ unit: DeliveryPlan.Unit, endpoint: WebhookEndpoint, signing: Signing, batched: Bool) -> HTTPRequest {
        let bodies = unit.changes.compactMap { WebhookPayload.event(for: $0, to: endpoint)?.body }
        guard batched, let first = unit.changes.first, let last = unit.changes.last else {
            let seq = unit.changes.first?.seq ?? 0
            return request(Array((bodies.first ?? "{}").utf8), messageID: WebhookPayload.messageID(endpoint: endpoint.id, seq: seq),
                           endpoint: endpoint, signing: signing)
        }
        let body = "[" + bodies.joined(separator: ",") + "]"
        return request(Array(body.utf8), messageID: WebhookPayload.batchID(endpoint: endpoint.id, first: first.seq, last: last.seq),
                       endpoint: endpoint, signing: signing)
    }
}

/// A token bucket for `perSecond` requests a second: each request is due one interval after the one
/// before it. A request sent late (the task woke after its time) does not push the rest back: the
/// next is still due on the even schedule, so the average holds the cap exactly, and at most two
/// requests go within one interval. A pause longer than an interval saves up nothing.
struct RateBucket {
    let interval: Duration?
    var next: ContinuousClock.Instant?

    init(perSecond: Double) {
        interval = perSecond > 0 ? .nanoseconds(Int64(Checked.clamp(1e9 / perSecond, to: 1...1e12))) : nil
    }

    /// Takes a token at `now`; returns how long to wait before sending, nil when at once.
    mutating func take(at now: ContinuousClock.Instant) -> Duration? {
        guard let interval else { return nil }
        var due = next ?? now
        if due < now.advanced(by: .zero - interval) { due = now }
        next = due.advanced(by: interval)
        return due > now ? due - now : nil
    }
}

extension CurlLoop {
    /// `request`'s response or its failure, as a value.
    func performResult(_ request: HTTPRequest) async -> Result<HTTPResponse, CurlError> {
        do {
            return .success(try await perform(request))
        } catch let error as CurlError {
            return .failure(error)
        } catch {
            return .failure(CurlError(kind: .other, message: "\(error)"))
        }
    }
}
