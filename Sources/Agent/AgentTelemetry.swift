public import CoreMetrics
public import ServiceLifecycle
public import Tracing

/// What `orderlive run` exports beside `/metrics` (DESIGN §14), as the Telemetry module made it: the
/// tracer that the push endpoint makes its spans with, the metrics factory every series is also made
/// with, and the exporters' services, which join the agent's service group. Empty (the default),
/// nothing is traced and nothing is exported.
public struct AgentTelemetry: Sendable {
    /// Spans of push requests and their commits; nil when traces are not exported.
    public var tracer: (any Tracer)?
    /// The exporter's metrics factory, multiplexed beside `/metrics`' registry; nil when metrics are
    /// not exported.
    public var metrics: (any MetricsFactory)?
    /// How often the exporter sends metrics: the gauges that mirror the store are refreshed as often,
    /// since nothing scrapes `/metrics` where the export is the only view.
    public var metricsInterval: Duration
    /// The exporters' background work: batching, export, and the flush at a clean stop.
    public var services: [any Service]
    /// What the exporters dropped or failed to send, counted into `/metrics` once the agent's
    /// metrics exist; nil when nothing is exported.
    public var losses: TelemetryLosses?

    /// Telemetry with `tracer`, `metrics` and `services` (none by default).
    public init(
        tracer: (any Tracer)? = nil, metrics: (any MetricsFactory)? = nil, metricsInterval: Duration = .seconds(60),
        services: [any Service] = [], losses: TelemetryLosses? = nil
    ) {
        self.tracer = tracer
        self.metrics = metrics
        self.metricsInterval = metricsInterval
        self.services = services
        self.losses = losses
    }
}
