import AsyncSignals
import CheckedInput
public import Foundation
import ServiceLifecycle
public import StoreModel

/// What the agent last saw of its store, so `/readyz`, `/api/status` and `/metrics` answer from
/// state, in bounded time, even while the store does not answer at all (DESIGN §10: a silently
/// partitioned PostgreSQL made `/readyz` take 5 s, and a probe that blocks is a load problem of its
/// own).
///
/// One read of the store's status is in flight at a time: ``run()`` starts one every `period`, and
/// each request wants a read that began after it arrived — it joins the next one, starting it when
/// none is in flight — and waits for it at most its own bound (100 ms for readiness and status, 1 s
/// for metrics) before answering from what was last seen. So a healthy store's answers are current,
/// requests never pile reads on the store, and a store that hangs costs each request its bound only.
/// Each read has the store's own deadline (a round trip's on PostgreSQL), so a read that hangs ends
/// and says so; the answer then says how long ago the store last answered.
public final class StoreObservation: Sendable {
    /// The store as last seen.
    public struct Seen: Sendable {
        /// The last status read that succeeded.
        public var status: StoreStatus?
        /// Each webhook endpoint's backlog and the age of its oldest undelivered change, with it.
        public var webhooks: [WebhookProgress] = []
        /// When the store last answered (Unix seconds).
        public var answeredAt: Double?
        /// Why the last read failed, when it did.
        public var failure: String?
        /// When the read in flight began (Unix seconds), while one is.
        public var askingSince: Double?
    }

    /// One webhook endpoint's progress, for `/metrics`.
    public struct WebhookProgress: Sendable {
        public var endpoint: WebhookEndpoint
        public var backlog: Int64
        public var oldestAge: Double
    }

    private struct State {
        var seen = Seen()
        /// Given when the read in flight ends.
        var reading: OneShot<Void>?
        /// Reads started so far, and the number of the last that ended.
        var started = 0
        var ended = 0
    }

    let store: any OrderReader & WebhookOutbox & ChangeFeedSource
    /// How often the background reads.
    let period: Duration
    /// How long without an answer before the store counts as unreadable.
    let stale: Duration
    let now: @Sendable () -> Double
    private let state = Locked(State())

    /// Observes `store`, reading it every `period`; it counts as unreadable once it has not answered
    /// for `stale` (the store's own deadline plus a period or two).
    public init(
        store: any OrderReader & WebhookOutbox & ChangeFeedSource, period: Duration = .seconds(1), stale: Duration,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.store = store
        self.period = period
        self.stale = stale
        self.now = now
    }

    /// What was last seen, after waiting at most `wait` for a read that began after this call.
    public func seen(waiting wait: Duration) async -> Seen {
        let clock = ContinuousClock()
        let deadline = clock.now + wait
        let wanted = state.withLock { $0.started + 1 }
        while clock.now < deadline {
            let (ended, inFlight) = state.withLock { ($0.ended, $0.reading) }
            if ended >= wanted { break }
            let reading = inFlight ?? read()
            // This request's own bound; the read goes on for everyone else (the waiting task is
            // abandoned when the bound passes, and ends with the read, by the store's own deadline).
            let remaining = clock.now.duration(to: deadline)
            let inTime = (try? await DeadlineRace.run(within: remaining, timeout: { CancellationError() }) {
                await reading.value
                return true
            }) ?? false
            if !inTime { break }
        }
        return state.withLock { $0.seen }
    }

    /// What was last seen, without asking for a read: for a watcher content with the periodic ones.
    public var lastSeen: Seen { state.withLock { $0.seen } }

    /// Whether the store answered recently and its last read succeeded; else why not.
    public func problem(in seen: Seen) -> String? {
        let time = now()
        let ago = seen.answeredAt.map { Self.seconds(time - $0) }
        if let failure = seen.failure {
            return failure + (ago.map { " (it last answered \($0) s ago)" } ?? " (it has not answered since the start)")
        }
        guard let answered = seen.answeredAt else {
            guard let since = seen.askingSince, time - since > Checked.seconds(of: stale) else { return nil }
            return "it has not answered since the start"
        }
        return time - answered > Checked.seconds(of: stale) ? "it has not answered for \(ago ?? "?") s" : nil
    }

    /// Reads every `period` until graceful shutdown or cancellation.
    public func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.read().value
                try? await Task.sleep(for: self.period)
            }
        }
    }

    /// The read in flight, or a new one.
    private func read() -> OneShot<Void> {
        let time = now()
        let (reading, starts) = state.withLock { state -> (OneShot<Void>, Bool) in
            if let reading = state.reading { return (reading, false) }
            let reading = OneShot<Void>()
            state.reading = reading
            state.started += 1
            state.seen.askingSince = time
            return (reading, true)
        }
        guard starts else { return reading }
        // Unstructured on purpose: a request that stops waiting must not cancel the read, which
        // ends by the store's own deadline and then answers everyone who asks meanwhile.
        let (store, now) = (self.store, self.now)
        Task {
            let result: Result<(StoreStatus, [WebhookProgress]), any Error>
            do {
                // The endpoints and the change head are read once, for status and metrics both.
                let outbox = await StoreStatus.outbox(of: store)
                let status = try await StoreStatus(store, outbox: outbox)
                result = .success((status, await Self.webhookProgress(outbox, in: store, now: now())))
            } catch {
                result = .failure(error)
            }
            let done = state.withLock { state -> OneShot<Void>? in
                switch result {
                case .success(let (status, webhooks)):
                    state.seen.status = status
                    state.seen.webhooks = webhooks
                    state.seen.answeredAt = now()
                    state.seen.failure = nil
                case .failure(let error):
                    state.seen.failure = "\(error)"
                }
                state.seen.askingSince = nil
                state.ended = state.started
                defer { state.reading = nil }
                return state.reading
            }
            done?.give(())
        }
        return reading
    }

    /// Each webhook endpoint with its backlog and the age of the oldest change it has not had.
    private static func webhookProgress(
        _ outbox: (endpoints: [WebhookEndpoint], head: Int64)?, in store: any ChangeFeedSource, now: Double
    ) async -> [WebhookProgress] {
        guard let (endpoints, head) = outbox else { return [] }
        var progress: [WebhookProgress] = []
        for endpoint in endpoints {
            let backlog = max(0, Checked.difference(head, endpoint.cursor) ?? 0)
            var age = 0.0
            if backlog > 0, case .changes(let next)? = try? await store.changes(after: endpoint.cursor, limit: 1),
               let oldest = next.first {
                age = max(0, now - oldest.at)
            }
            progress.append(WebhookProgress(endpoint: endpoint, backlog: backlog, oldestAge: age))
        }
        return progress
    }

    /// Seconds with one decimal, for messages.
    static func seconds(_ value: Double) -> String {
        String(format: "%.1f", max(0, value))
    }
}

/// Runs a ``StoreObservation``'s background reads as a service.
struct StoreObservationService: Service {
    let observation: StoreObservation

    func run() async {
        await observation.run()
    }
}
