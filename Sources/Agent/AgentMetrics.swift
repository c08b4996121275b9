import Foundation
import AsyncSignals
import AuthSession
import LocalHTTP
import SQLiteStore
import StoreModel
import PostgresStore
import OrderSync
import OrdersAPI
import PushIngest
public import Prometheus
import WebhookDelivery

/// The agent's metrics in one Prometheus registry (DESIGN §4 `/metrics`): stream state and
/// reconnects, event-to-commit lag, journal depth and oldest job age, jobs by kind and outcome, auth
/// state, and the push endpoint's own (``PushIngest/PushMetrics``, made in the same registry).
/// Gauges that mirror the store are set when `/metrics` is read.
public final class AgentMetrics: Sendable {
    /// The registry `/metrics` prints.
    public let registry: PrometheusCollectorRegistry
    /// A swift-metrics factory over the registry, for components that take one.
    public let factory: PrometheusMetricsFactory

    let streamOpen: Prometheus.Gauge
    let streamReconnects: Prometheus.Counter
    let streamEvents: Prometheus.Counter
    let commitLag: DurationHistogram
    let journalDepth: Prometheus.Gauge
    let oldestJobAge: Prometheus.Gauge
    let deadLetters: Prometheus.Gauge
    package let deadLettersPruned: Prometheus.Counter
    let orders: Prometheus.Gauge
    let authenticated: Prometheus.Gauge
    let storeWritable: Prometheus.Gauge
    let storeWriteFailures: Prometheus.Counter
    let clusterLeader: Prometheus.Gauge
    let clusterEpoch: Prometheus.Gauge
    let clusterTakeovers: Prometheus.Counter
    let backendAvailable: Prometheus.Gauge
    let pausedSeconds: Prometheus.Counter
    let waitingLanes: Prometheus.Gauge
    let oldestWaitingJobAge: Prometheus.Gauge
    private let countedPausedSeconds = Locked(0.0)
    private let countedTakeovers = Locked(0)
    private let countedWriteFailures = Locked(0)
    private let jobs: [String: Prometheus.Counter]
    private let authEvents: [AuthEvent: Prometheus.Counter]

    /// Creates the metrics in a fresh registry.
    public init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        self.factory = factory
        func gauge(_ name: String, _ help: String) -> Prometheus.Gauge {
            registry.makeGauge(descriptor: Self.name(name, help))
        }
        func counter(_ name: String, _ help: String) -> Prometheus.Counter {
            registry.makeCounter(descriptor: Self.name(name, help))
        }
        streamOpen = gauge("orderlive_stream_open", "1 while the event stream is open")
        streamReconnects = counter("orderlive_stream_reconnects_total", "Event stream connections lost")
        streamEvents = counter("orderlive_stream_events_total", "Events journaled")
        commitLag = registry.makeDurationHistogram(descriptor: Self.name("orderlive_stream_commit_lag_seconds", "From an event's arrival to the commit of its job"), buckets: Self.latencyBuckets)
        journalDepth = gauge("orderlive_journal_depth", "Jobs waiting in the journal")
        oldestJobAge = gauge("orderlive_journal_oldest_job_age_seconds", "Age of the oldest journaled job")
        deadLetters = gauge("orderlive_dead_letters", "Dead letters kept")
        deadLettersPruned = counter("orderlive_dead_letters_pruned_total", "Oldest dead letters removed beyond sync.dead_letter_limit")
        orders = gauge("orderlive_orders", "Orders in the local store")
        authenticated = gauge("orderlive_auth_authenticated", "1 while the session has usable credentials")
        storeWritable = gauge("orderlive_store_writable", "1 while the order store's writes succeed")
        storeWriteFailures = counter(
            "orderlive_store_write_failures_total", "Store writes that failed for a storage reason (full, read-only, I/O, locked)")
        clusterLeader = gauge("orderlive_cluster_leader", "1 while this agent leads its account (always 1 with SQLite)")
        clusterLeader.set(Int64(1))
        clusterEpoch = gauge("orderlive_cluster_epoch", "The account's fencing epoch as this agent last saw it (PostgreSQL)")
        clusterTakeovers = counter("orderlive_cluster_takeovers_total", "Times this agent took over the leadership of its account")
        backendAvailable = gauge(
            "orderlive_sync_backend_available", "1 while the order backend answers the executor; 0 while jobs that need it are paused")
        backendAvailable.set(Int64(1))
        pausedSeconds = counter(
            "orderlive_sync_paused_seconds_total", "Seconds the executor spent paused because the order backend was unavailable")
        waitingLanes = gauge("orderlive_sync_waiting_lanes", "Orders whose jobs wait for a retry after a failure of their own")
        oldestWaitingJobAge = gauge(
            "orderlive_sync_oldest_waiting_job_age_seconds", "Age of the oldest job that waits for a retry (0: none)")
        var jobs: [String: Prometheus.Counter] = [:]
        for kind in JobKind.allCases {
            for outcome in SyncExecutor.Outcome.allCases {
                jobs["\(kind.rawValue)/\(outcome.rawValue)"] = registry.makeCounter(descriptor: Self.name("orderlive_sync_jobs_total", "Sync job attempts by kind and outcome"), labels: [("kind", kind.rawValue), ("outcome", outcome.rawValue)])
            }
        }
        self.jobs = jobs
        var authEvents: [AuthEvent: Prometheus.Counter] = [:]
        for event in AuthEvent.allCases {
            authEvents[event] = registry.makeCounter(
                descriptor: Self.name("orderlive_auth_events_total", "Logins and refreshes by outcome"),
                labels: [("event", event.rawValue)])
        }
        self.authEvents = authEvents
    }

    /// Counts one login or refresh outcome.
    func record(_ event: AuthEvent) {
        authEvents[event]?.increment()
    }

    private static func name(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    static let latencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(5),
    ]

    /// Counts `count` webhook attempts of one endpoint that ended alike (DESIGN §13).
    func record(webhook endpoint: Int64, _ attempt: WebhookAttempt, count: Int) {
        deliveries(endpoint, attempt).increment(by: Int64(count))
    }

    private func deliveries(_ endpoint: Int64, _ attempt: WebhookAttempt) -> Prometheus.Counter {
        registry.makeCounter(
            descriptor: Self.name("orderlive_webhook_deliveries_total", "Outgoing webhook attempts by endpoint and outcome"),
            labels: [("endpoint", "\(endpoint)"), ("outcome", attempt.rawValue)])
    }

    /// The endpoints as the store holds them, when `/metrics` is read: each one's state, backlog (changes
    /// after its cursor), the age of the oldest change it has not had, and its last 2xx.
    func record(webhooks: [(endpoint: WebhookEndpoint, backlog: Int64, oldestAge: Double)]) {
        for (endpoint, backlog, oldestAge) in webhooks {
            let label = [("endpoint", "\(endpoint.id)")]
            for attempt in [WebhookAttempt.delivered, .failed, .disabled] { _ = deliveries(endpoint.id, attempt) }
            registry.makeGauge(descriptor: Self.name("orderlive_webhook_enabled", "1 while the webhook endpoint is enabled"), labels: label)
                .set(Int64(endpoint.enabled ? 1 : 0))
            registry.makeGauge(descriptor: Self.name("orderlive_webhook_backlog", "Changes the webhook endpoint has not had yet"), labels: label)
                .set(backlog)
            registry.makeGauge(descriptor: Self.name(
                "orderlive_webhook_oldest_undelivered_age_seconds", "Age of the oldest change the webhook endpoint has not had"), labels: label)
                .set(oldestAge)
            registry.makeGauge(descriptor: Self.name(
                "orderlive_webhook_last_success_timestamp_seconds", "When the webhook endpoint last answered 2xx (0: never)"), labels: label)
                .set(endpoint.lastSuccessAt ?? 0)
        }
    }

    /// Counts one job outcome.
    func record(_ kind: JobKind, _ outcome: SyncExecutor.Outcome, count: Int = 1) {
        jobs["\(kind.rawValue)/\(outcome.rawValue)"]?.increment(by: Int64(count))
    }

    /// Records the cluster as the leadership sees it (DESIGN §12).
    func record(_ status: PostgresLeadership.Status) {
        clusterLeader.set(Int64(status.role == .leader ? 1 : 0))
        if let epoch = status.epoch { clusterEpoch.set(epoch) }
        let new = countedTakeovers.withLock { counted in
            defer { counted = max(counted, status.takeovers) }
            return max(0, status.takeovers - counted)
        }
        if new > 0 { clusterTakeovers.increment(by: Int64(new)) }
    }

    /// The exposition text, with the store's gauges brought up to date first.
    func text(
        counts: StoreCounts?, health: StoreWriteHealth, now: Double, authenticated isAuthenticated: Bool,
        state: AgentState.Snapshot = .init()
    ) -> String {
        backendAvailable.set(Int64(state.backendUnavailableSince == nil ? 1 : 0))
        let paused = state.backendPausedSeconds(at: now)
        let newPaused = countedPausedSeconds.withLock { counted in
            defer { counted = max(counted, paused) }
            return max(0, paused - counted)
        }
        if newPaused > 0 { pausedSeconds.increment(by: newPaused) }
        storeWritable.set(Int64(health.writable ? 1 : 0))
        let newFailures = countedWriteFailures.withLock { counted in
            defer { counted = max(counted, health.failures) }
            return max(0, health.failures - counted)
        }
        if newFailures > 0 { storeWriteFailures.increment(by: Int64(newFailures)) }
        if let counts {
            journalDepth.set(Int64(counts.journalDepth))
            oldestJobAge.set(counts.oldestJobCreatedAt.map { max(0, now - $0) } ?? 0)
            deadLetters.set(Int64(counts.deadLetters))
            orders.set(Int64(counts.orders))
            waitingLanes.set(Int64(counts.waitingLanes))
            oldestWaitingJobAge.set(counts.oldestWaitingJobCreatedAt.map { max(0, now - $0) } ?? 0)
        }
        authenticated.set(Int64(isAuthenticated ? 1 : 0))
        return Self.addingHelp(to: registry.emitToString())
    }

    /// The `# HELP` text of the families made through the swift-metrics factory, which carries none.
    static let factoryHelp = PushMetrics.help.merging(FeedMetrics.help) { first, _ in first }
        .merging(ListenerMetrics.help) { first, _ in first }
        .merging(OrdersAPIServer.help) { first, _ in first }
        .merging(CredentialsReload.help) { first, _ in first }
        .merging(JWKSFetcher.help) { first, _ in first }

    /// `text` with a `# HELP` line before each family's `# TYPE` line that has none (Prometheus'
    /// text format wants both; `promtool check metrics` fails without HELP).
    static func addingHelp(to text: String) -> String {
        var lines: [Substring] = []
        var previous: Substring = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE ") {
                let name = line.dropFirst(7).prefix { $0 != " " }
                if !previous.hasPrefix("# HELP \(name) "), let help = factoryHelp[String(name)] {
                    lines.append("# HELP \(name) \(help)")
                }
            }
            lines.append(line)
            previous = line
        }
        return lines.joined(separator: "\n")
    }
}
