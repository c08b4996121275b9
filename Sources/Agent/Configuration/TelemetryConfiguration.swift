import Foundation

/// `telemetry.*`: OTLP export of the agent's metrics, logs and traces (DESIGN §14 "Observable from where the
/// operators are"). Off by default. The standard `OTEL_*` variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
/// `…_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`/`…_ARG`, the
/// per-signal endpoints) override these keys, as the OpenTelemetry specification has them do; the
/// `Telemetry` module applies both through swift-otel.
public struct TelemetryConfiguration: Sendable, Hashable {
    /// Export even without an endpoint here or in the environment (to `http://localhost:4318`).
    public var enabled = false
    /// The collector's OTLP/HTTP base URL (`/v1/traces` and `/v1/logs` are added); setting it turns
    /// export on.
    public var endpoint = ""
    /// A file of `name=value` lines sent as headers with every export (a collector's API key), read at
    /// start; a file, so that the key is in no configuration file, environment listing or log.
    public var headersFile = ""
    /// `service.name`.
    public var serviceName = "orderlive"
    /// Percent of traces kept when the sender of a push made no choice (parent-based ratio sampler).
    public var samplePercent = 100
    /// Export traces.
    public var traces = true
    /// Export log records (the console keeps getting every line as before).
    public var logs = true
    /// Export metrics: the series of `/metrics`, same names and labels (which keeps answering).
    public var metrics = true
    /// How often metrics are exported (`OTEL_METRIC_EXPORT_INTERVAL` overrides it, in milliseconds).
    public var metricsInterval = Duration.seconds(60)
    /// Spans or log records held while the collector is slow or down; beyond it they are dropped.
    public var maximumQueue = 2048
    /// One export request's deadline.
    public var timeout = Duration.seconds(10)
    /// Extra CA certificates (PEM) for an https collector.
    public var caFile = ""
    /// A client certificate and its key (PEM) for a collector that asks for one.
    public var clientCertificateFile = ""
    /// The client certificate's private key.
    public var clientKeyFile = ""

    /// The built-in defaults.
    public init() {}

    /// Reads and validates every `telemetry.*` key.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        enabled = try section.boolean("enabled", default: enabled)
        endpoint = section.string("endpoint", default: endpoint)
        if !endpoint.isEmpty, let problem = HTTPURLCheck.problem(endpoint) {
            throw ConfigurationError("'telemetry.endpoint': \(problem); the collector's OTLP/HTTP address, e.g. http://127.0.0.1:4318")
        }
        headersFile = try section.readableFile("headers_file", default: headersFile)
        serviceName = section.string("service_name", default: serviceName)
        guard !serviceName.isEmpty, serviceName.utf8.count <= 255 else {
            throw ConfigurationError("'telemetry.service_name' must be 1 to 255 bytes")
        }
        samplePercent = try section.integer("sample_percent", minimum: 0, maximum: 100, default: samplePercent)
        traces = try section.boolean("traces", default: traces)
        logs = try section.boolean("logs", default: logs)
        metrics = try section.boolean("metrics", default: metrics)
        metricsInterval = try section.seconds("metrics_interval_s", minimum: 1, maximum: 3_600, default: metricsInterval)
        maximumQueue = try section.integer("max_queue", minimum: 1, maximum: 1_000_000, default: maximumQueue)
        timeout = try section.milliseconds("timeout_ms", minimum: 1, maximum: 600_000, default: timeout)
        caFile = try section.readableFile("ca_file", default: caFile)
        clientCertificateFile = try section.readableFile("client_cert_file", default: clientCertificateFile)
        clientKeyFile = try section.readableFile("client_key_file", default: clientKeyFile)
        guard clientCertificateFile.isEmpty == clientKeyFile.isEmpty else {
            throw ConfigurationError("'telemetry.client_cert_file' and 'telemetry.client_key_file' go together: set both or neither")
        }
    }

    /// The environment variables that turn export on by naming a collector.
    public static let endpointVariables = [
        "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ]

    /// Whether anything is exported: `enabled`, an `endpoint`, or a collector named in `environment`,
    /// unless `OTEL_SDK_DISABLED=true` or every signal is off.
    public func isOn(environment: [String: String]) -> Bool {
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return false }
        guard traces || logs || metrics else { return false }
        return enabled || !endpoint.isEmpty || Self.endpointVariables.contains { !(environment[$0] ?? "").isEmpty }
    }
}

extension OrderliveConfiguration {
    /// The resource attributes beside `service.*` that name what this agent serves (DESIGN §14): the
    /// store's engine and, on PostgreSQL, the account it shares the database under. The role (leader or
    /// follower) changes while the agent runs, so it is the exported `orderlive_cluster_leader` gauge.
    public var telemetryResourceAttributes: [String: String] {
        var attributes = ["orderlive.store.backend": store.backend.rawValue]
        if store.backend == .postgres {
            let account = store.account.isEmpty ? auth.identifier : store.account
            if !account.isEmpty { attributes["orderlive.account"] = account }
        }
        return attributes
    }
}
