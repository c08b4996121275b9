import Foundation
import AsyncSignals
import AuthSession
public import CoreMetrics
import SQLiteStore
import StoreModel
import PostgresStore
import OrderSync
public import Prometheus
import WebhookDelivery

/// The agent's metrics (DESIGN §4 `/metrics`): stream state and reconnects, event-to-commit lag,
/// journal depth and oldest job age, jobs by kind and outcome, auth state, and the components' own
/// (``PushIngest/PushMetrics`` and the rest, made through ``factory``). Every series goes through one
/// swift-metrics factory: the Prometheus registry `/metrics` prints and, with OTLP export on, swift-otel's
/// (DESIGN §14), so both carry the same names and labels. Gauges that mirror the store are set when
/// `/metrics` is read, and on every export interval by ``MetricsRefresh``.
public final class AgentMetrics: Sendable {
    /// The registry `/metrics` prints.
    public let registry: PrometheusCollectorRegistry
    /// The factory every series is made with: the registry's, multiplexed with the exported one.
    public let factory: any MetricsFactory

    let streamOpen: CoreMetrics.Gauge
    let streamReconnects: CoreMetrics.Counter
    let streamEvents: CoreMetrics.Counter
    let commitLag: CoreMetrics.Timer
    let journalDepth: CoreMetrics.Gauge
    let oldestJobAge: CoreMetrics.Gauge
    let deadLetters: CoreMetrics.Gauge
    package let deadLettersPruned: CoreMetrics.Counter
    let orders: CoreMetrics.Gauge
    let authenticated: CoreMetrics.Gauge
    let storeWritable: CoreMetrics.Gauge
    let storeWriteFailures: CoreMetrics.Counter
    let clusterLeader: CoreMetrics.Gauge
    let clusterEpoch: CoreMetrics.Gauge
    let clusterTakeovers: CoreMetrics.Counter
    let backendAvailable: CoreMetrics.Gauge
    let pausedSeconds: CoreMetrics.FloatingPointCounter
    let waitingLanes: CoreMetrics.Gauge
    let oldestWaitingJobAge: CoreMetrics.Gauge
    private let countedPausedSeconds = Locked(0.0)
    private let countedTakeovers = Locked(0)
    private let countedWriteFailures = Locked(0)
    private let jobs: [String: CoreMetrics.Counter]
    private let authEvents: [AuthEvent: CoreMetrics.Counter]

    /// Creates the metrics in a fresh registry; with `export`, every series is also made there (the
    /// OTLP exporter's factory).
    public init(export: (any MetricsFactory)? = nil) {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        var prometheus = PrometheusMetricsFactory(registry: registry)
        prometheus.defaultDurationHistogramBuckets = Self.latencyBuckets
        let factory: any MetricsFactory = export.map { MultiplexMetricsHandler(factories: [prometheus, $0]) } ?? prometheus
        self.factory = factory
        func gauge(_ name: String) -> CoreMetrics.Gauge { CoreMetrics.Gauge(label: name, factory: factory) }
        func counter(_ name: String) -> CoreMetrics.Counter { CoreMetrics.Counter(label: name, factory: factory) }
        streamOpen = gauge("orderlive_stream_open")
        streamReconnects = counter("orderlive_stream_reconnects_total")
        streamEvents = counter("orderlive_stream_events_total")
        commitLag = CoreMetrics.Timer(label: "orderlive_stream_commit_lag_seconds", factory: factory)
        journalDepth = gauge("orderlive_journal_depth")
        oldestJobAge = gauge("orderlive_journal_oldest_job_age_seconds")
        deadLetters = gauge("orderlive_dead_letters")
        deadLettersPruned = counter("orderlive_dead_letters_pruned_total")
        orders = gauge("orderlive_orders")
        authenticated = gauge("orderlive_auth_authenticated")
        storeWritable = gauge("orderlive_store_writable")
        storeWriteFailures = counter("orderlive_store_write_failures_total")
        clusterLeader = gauge("orderlive_cluster_leader")
        clusterLeader.record(1)
        clusterEpoch = gauge("orderlive_cluster_epoch")
        clusterTakeovers = counter("orderlive_cluster_takeovers_total")
        backendAvailable = gauge("orderlive_sync_backend_available")
        backendAvailable.record(1)
        pausedSeconds = CoreMetrics.FloatingPointCounter(label: "orderlive_sync_paused_seconds_total", factory: factory)
        waitingLanes = gauge("orderlive_sync_waiting_lanes")
        oldestWaitingJobAge = gauge("orderlive_sync_oldest_waiting_job_age_seconds")
        var jobs: [String: CoreMetrics.Counter] = [:]
        for kind in JobKind.allCases {
            for outcome in SyncExecutor.Outcome.allCases {
                jobs["\(kind.rawValue)/\(outcome.rawValue)"] = CoreMetrics.Counter(
                    label: "orderlive_sync_jobs_total", dimensions: [("kind", kind.rawValue), ("outcome", outcome.rawValue)],
                    factory: factory)
            }
        }
        self.jobs = jobs
        var authEvents: [AuthEvent: CoreMetrics.Counter] = [:]
        for event in AuthEvent.allCases {
            authEvents[event] = CoreMetrics.Counter(label: "orderlive_auth_events_total", dimensions: [("event", event.rawValue)], factory: factory)
        }
        self.authEvents = authEvents
    }

    /// Counts one login or refresh outcome.
    func record(_ event: AuthEvent) {
        authEvents[event]?.increment()
    }

    /// The buckets of every duration histogram, on `/metrics` and in the export.
    public static let latencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(5),
    ]

    /// Counts `count` webhook attempts of one endpoint that ended alike (DESIGN §13).
    func record(webhook endpoint: Int64, _ attempt: WebhookAttempt, count: Int) {
        deliveries(endpoint, attempt).increment(by: Int64(count))
    }

    private func deliveries(_ endpoint: Int64, _ attempt: WebhookAttempt) -> CoreMetrics.Counter {
        CoreMetrics.Counter(label: "orderlive_webhook_deliveries_total", dimensions: [("endpoint", "\(endpoint)"), ("outcome", attempt.rawValue)],
                factory: factory)
    }

    /// The endpoints as the store holds them, when `/metrics` is read: each one's state, backlog (changes
    /// after its cursor), the age of the oldest change it has not had, and its last 2xx.
    func record(webhooks: [(endpoint: WebhookEndpoint, backlog: Int64, oldestAge: Double)]) {
        for (endpoint, backlog, oldestAge) in webhooks {
            let label = [("endpoint", "\(endpoint.id)")]
            for attempt in [WebhookAttempt.delivered, .failed, .disabled] { _ = deliveries(endpoint.id, attempt) }
            func gauge(_ name: String) -> CoreMetrics.Gauge { CoreMetrics.Gauge(label: name, dimensions: label, factory: factory) }
            gauge("orderlive_webhook_enabled").record(endpoint.enabled ? 1 : 0)
            gauge("orderlive_webhook_backlog").record(backlog)
            gauge("orderlive_webhook_oldest_undelivered_age_seconds").record(oldestAge)
            gauge("orderlive_webhook_last_success_timestamp_seconds").record(endpoint.lastSuccessAt ?? 0)
        }
    }

    /// Counts one job outcome.
    func record(_ kind: JobKind, _ outcome: SyncExecutor.Outcome, count: Int = 1) {
        jobs["\(kind.rawValue)/\(outcome.rawValue)"]?.increment(by: Int64(count))
    }

    /// Records the cluster as the leadership sees it (DESIGN §12).
    func record(_ status: PostgresLeadership.Status) {
        clusterLeader.record(status.role == .leader ? 1 : 0)
        if let epoch = status.epoch { clusterEpoch.record(epoch) }
        let new = countedTakeovers.withLock { counted in
            defer { counted = max(counted, status.takeovers) }
            return max(0, status.takeovers - counted)
        }
        if new > 0 { clusterTakeovers.increment(by: Int64(new)) }
    }

    /// Brings the gauges that mirror the store and the agent's state up to date, and counts what the
    /// state counted since the last time (paused seconds, write failures).
    func refresh(
        counts: StoreCounts?, health: StoreWriteHealth, now: Double, authenticated isAuthenticated: Bool,
        state: AgentState.Snapshot = .init()
    ) {
        backendAvailable.record(state.backendUnavailableSince == nil ? 1 : 0)
        let paused = state.backendPausedSeconds(at: now)
        let newPaused = countedPausedSeconds.withLock { counted in
            defer { counted = max(counted, paused) }
            return max(0, paused - counted)
        }
        if newPaused > 0 { pausedSeconds.increment(by: newPaused) }
        storeWritable.record(health.writable ? 1 : 0)
        let newFailures = countedWriteFailures.withLock { counted in
            defer { counted = max(counted, health.failures) }
            return max(0, health.failures - counted)
        }
        if newFailures > 0 { storeWriteFailures.increment(by: Int64(newFailures)) }
        if let counts {
            journalDepth.record(counts.journalDepth)
            oldestJobAge.record(counts.oldestJobCreatedAt.map { max(0, now - $0) } ?? 0)
            deadLetters.record(counts.deadLetters)
            orders.record(counts.orders)
            waitingLanes.record(counts.waitingLanes)
            oldestWaitingJobAge.record(counts.oldestWaitingJobCreatedAt.map { max(0, now - $0) } ?? 0)
        }
        authenticated.record(isAuthenticated ? 1 : 0)
    }

    /// The exposition text (``refresh(counts:health:now:authenticated:state:)`` first for fresh gauges).
    func text() -> String {
        Self.addingHelp(to: registry.emitToString())
    }
}
