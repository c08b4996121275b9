import Foundation

/// How records go to the collector (`telemetry.protocol`, the values of `OTEL_EXPORTER_OTLP_PROTOCOL`).
public enum TelemetryProtocol: String, Sendable, Hashable, CaseIterable {
    /// OTLP/HTTP with protobuf bodies, to `/v1/traces`, `/v1/logs` and `/v1/metrics` (port 4318).
    case httpProtobuf = "http/protobuf"
    /// OTLP/gRPC, the collector's three Export services on one HTTP/2 connection (port 4317).
    case grpc

    /// The collector's address when neither the configuration nor the environment names one.
    public var defaultEndpoint: String {
        switch self {
        case .httpProtobuf: "http://localhost:4318"
        case .grpc: "http://localhost:4317"
        }
    }
}

/// `telemetry.*`: OTLP export of the agent's metrics, logs and traces (DESIGN §14 "Observable from where the
/// operators are"). Off by default. The standard `OTEL_*` variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
/// `…_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`/`…_ARG`, the
/// per-signal endpoints) override these keys, as the OpenTelemetry specification has them do; the
/// `Telemetry` module applies both through swift-otel.
public struct TelemetryConfiguration: Sendable, Hashable {
    /// Export even without an endpoint here or in the environment (to the protocol's
    /// ``TelemetryProtocol/defaultEndpoint``).
    public var enabled = false
    /// The collector's base URL: over OTLP/HTTP `/v1/traces`, `/v1/logs` and `/v1/metrics` are added;
    /// over gRPC it is the scheme, host and port. Setting it turns export on.
    public var endpoint = ""
    /// OTLP/HTTP with protobuf, or OTLP/gRPC (`OTEL_EXPORTER_OTLP_PROTOCOL` overrides it).
    public var exportProtocol = TelemetryProtocol.httpProtobuf
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
        exportProtocol = try section.choice("protocol", default: exportProtocol)
        if !endpoint.isEmpty, let problem = Self.endpointProblem(endpoint, exportProtocol) {
            throw ConfigurationError("'telemetry.endpoint': \(problem)")
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

    /// What is wrong with `endpoint` as the collector's address over `transport`, with an example.
    static func endpointProblem(_ endpoint: String, _ transport: TelemetryProtocol) -> String? {
        switch transport {
        case .httpProtobuf:
            return HTTPURLCheck.problem(endpoint).map { "\($0); the collector's OTLP/HTTP address, e.g. http://127.0.0.1:4318" }
        case .grpc:
            // swift-otel's gRPC transport takes the scheme (http: plaintext, https: TLS), host and port.
            let example = "the collector's OTLP/gRPC address is a scheme, host and port, e.g. http://127.0.0.1:4317"
            if let problem = HTTPURLCheck.problem(endpoint) { return "\(problem); \(example)" }
            guard let url = URLComponents(string: endpoint), url.port != nil else { return "it names no port; \(example)" }
            guard url.path.isEmpty || url.path == "/", url.query == nil else { return "gRPC takes no path or query; \(example)" }
            return nil
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
