public import AsyncSignals
import CheckedInput
public import CurlHTTP
public import Foundation
public import Logging
public import ServiceLifecycle
public import StoreModel
public import Tracing
import WebhookSigning

/// How outgoing webhooks are sent (`webhooks.*`).
public struct WebhookSettings: Sendable, Hashable {
    /// One attempt's deadline (`webhooks.timeout_ms`).
    public var timeout: Duration
    /// The waits after the 1st, 2nd, … failed attempt; one more failure disables the endpoint.
    public var retrySchedule: [Duration]
    /// Extra CA certificates for https endpoints, beside the system's.
    public var caFile: String
    /// Changes an endpoint may fall behind before it is disabled.
    public var maximumBacklog: Int64
    /// The proxy every delivery goes through (or none), as configured: libcurl's environment variables
    /// are not read.
    public var proxy: ProxyRoute
    /// Addresses no delivery connects to: link-local and metadata, less what `webhooks.allow_private` lists.
    public var addressGuard: AddressGuard

    /// Creates settings.
    public init(timeout: Duration = .seconds(10), retrySchedule: [Duration] = WebhookSettings.standardSchedule,
                caFile: String = "", maximumBacklog: Int64 = 1_000_000, proxy: ProxyRoute = ProxyRoute(),
                addressGuard: AddressGuard = AddressGuard()) {
        self.timeout = timeout
        self.retrySchedule = retrySchedule
        self.caFile = caFile
        self.maximumBacklog = maximumBacklog
        self.proxy = proxy
        self.addressGuard = addressGuard
    }

    /// Standard Webhooks' schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
    public static let standardSchedule: [Duration] = [5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400].map {
        Duration.seconds($0)
    }
}

/// Delivers the change log to every enabled endpoint (DESIGN §13), each endpoint on a task of its own.
/// Every commit that appended changes signals `changed`, which wakes the endpoints' tasks; the
/// endpoints themselves are read from the store every second (one added, enabled or replayed by
/// `orderlive webhooks` in another process) and when a task ended, not on every commit.
public struct WebhookDeliverer: Service {
    let store: any WebhookOutbox & ChangeFeedSource
    let loop: CurlLoop
    let settings: WebhookSettings
    let changed: WakeSignal
    let now: @Sendable () -> Double
    let random: @Sendable () -> Double
    let observe: @Sendable (Int64, WebhookAttempt, Int) -> Void
    /// A span per attempt, whose traceparent the request carries (DESIGN §14); none when nil.
    let tracer: (any Tracer)?
    let processorCounters: @Sendable () -> ProcessorIdleGauge.Counters?
    let logger: Logger

    /// A deliverer over `store` through `loop`. `now` is the wall clock (Unix seconds), `random` a
    /// uniform value in 0..<1 for the retries' jitter, `observe` hears every attempt by endpoint id and
    /// outcome, with how many (metrics; 2xx answers are told once per batch sent).
    /// `processorCounters` reads the machine's idle and total processor time (`/proc/stat`), from which
    /// deliveries tell that the machine is busy to its last core and yield.
    public init(
        store: any WebhookOutbox & ChangeFeedSource, loop: CurlLoop, settings: WebhookSettings, changed: WakeSignal,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        observe: @escaping @Sendable (Int64, WebhookAttempt, Int) -> Void = { _, _, _ in },
        processorCounters: @escaping @Sendable () -> ProcessorIdleGauge.Counters? = ProcessorIdleGauge.readProcStat,
        tracer: (any Tracer)? = nil, logger: Logger
    ) {
        self.tracer = tracer
        self.store = store
        self.loop = loop
        self.settings = settings
        self.changed = changed
        self.now = now
        self.random = random
        self.observe = observe
        self.processorCounters = processorCounters
        self.logger = logger
    }

    /// Runs until graceful shutdown or cancellation; an attempt in flight is abandoned then (its
    /// change is sent again at the next start: at least once).
    public func run() async {
        await cancelWhenGracefulShutdown { await supervise() }
    }

    /// Keeps one task per enabled endpoint, woken on every change, until cancelled; then ends them.
    /// A task whose endpoint was disabled (a 410, spent retries, the backlog) ends by itself; it is
    /// forgotten at the next look, so an endpoint enabled again before the supervisor saw it disabled
    /// gets a new task (kept, it left the endpoint with no delivery until a restart).
    private func supervise() async {
        let clock = ContinuousClock()
        var workers: [Int64: (task: Task<Void, Never>, wake: WakeSignal, ended: Locked<Bool>)] = [:]
        var nextLook = clock.now
        while !Task.isCancelled {
            if clock.now >= nextLook || workers.values.contains(where: { $0.ended.withLock { $0 } }) {
                nextLook = clock.now.advanced(by: .seconds(1))
                if let endpoints = try? await store.webhookEndpoints() {
                    let enabled = Set(endpoints.filter(\.enabled).map(\.id))
                    for (id, worker) in workers where !enabled.contains(id) || worker.ended.withLock({ $0 }) {
                        worker.task.cancel()
                        workers[id] = nil
                    }
                    for id in enabled where workers[id] == nil {
                        let wake = WakeSignal()
                        let ended = Locked(false)
                        let endpoint = EndpointDelivery(id: id, deliverer: self, wake: wake)
                        workers[id] = (Task {
                            await endpoint.run()
                            ended.withLock { $0 = true }
                        }, wake, ended)
                    }
                }
            }
            for worker in workers.values { worker.wake.signal() }
            await changed.wait(until: nextLook, clock: clock)
        }
        for worker in workers.values { worker.task.cancel() }
        for worker in workers.values { await worker.task.value }
    }
}

/// How one attempt ended (for metrics and logs).
public enum WebhookAttempt: String, Sendable, Hashable {
    /// Answered 2xx.
    case delivered
    /// Any other answer, a timeout or no connection: tried again on the schedule.
    case failed
    /// Disabled: `410 Gone`, retries exhausted, or the backlog over its limit.
    case disabled
}
