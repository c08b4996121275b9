public import Agent
public import CoreMetrics
import Foundation
public import Logging
import OTel
public import ServiceLifecycle
public import Tracing

/// What `orderlive run` exports and the services that carry it: a tracer for the components that make
/// spans, a log handler to multiplex beside the console's, a metrics factory to multiplex beside
/// `/metrics`' registry, and the exporters' services, which run in
/// the agent's service group and flush what they hold when it stops cleanly.
public struct TelemetryExport: Sendable {
    /// The tracer spans are made with; nil when traces are not exported.
    public let tracer: (any Tracer)?
    /// Log handlers that export records; nil when logs are not exported.
    public let logHandler: (@Sendable (String) -> any LogHandler)?
    /// Adds `trace_id` and `span_id` to every log line written under a span's context, on the
    /// console too, so a line leads to its trace; nil when traces are not exported.
    public let metadataProvider: Logger.MetadataProvider?
    /// The factory every metric series is also made with; nil when metrics are not exported.
    public let metricsFactory: (any MetricsFactory)?
    /// How often metrics are exported (`telemetry.metrics_interval_s`, or `OTEL_METRIC_EXPORT_INTERVAL`).
    public let metricsInterval: Duration
    /// The exporters' background work (batching, export, flush at shutdown).
    public let services: [any Service]
    /// What the exporters drop or fail to send, read from swift-otel's warnings; the agent counts it
    /// into `/metrics` (``Agent/AgentTelemetry/losses``).
    public let losses: TelemetryLosses
    /// Where records go, for the start-up log line (never the headers).
    public let summary: String

    /// The export `configuration` and `environment` ask for, or nil when it is off. `instanceID` is
    /// the `service.instance.id` resource attribute (``Agent/StateDirectory/instanceID()``);
    /// `attributes` are more (``Agent/OrderliveConfiguration/telemetryResourceAttributes``).
    ///
    /// `OTEL_*` variables override the keys (swift-otel applies them), so an operator can point a
    /// fleet at a collector without touching its configuration files. swift-otel's own warnings (an
    /// export that failed, records dropped from a full queue) go to `diagnostics`, the console's log,
    /// never back into the export.
    public static func make(
        _ configuration: TelemetryConfiguration, version: String, instanceID: String? = nil, attributes: [String: String] = [:],
        environment: [String: String],
        diagnostics: Logger? = nil
    ) throws(TelemetryError) -> TelemetryExport? {
        guard configuration.isOn(environment: environment) else { return nil }
        if let problem = grpcAddressProblem(configuration, environment: environment) { throw TelemetryError(problem) }
        var otel = try otelConfiguration(configuration, version: version)
        if let instanceID { otel.resourceAttributes["service.instance.id"] = instanceID }
        otel.resourceAttributes.merge(attributes) { _, given in given }
        let losses = TelemetryLosses()
        // swift-otel says what it dropped only on its diagnostic logger: always read it, for the
        // count; write it where `diagnostics` says, or nowhere.
        let coalesced = DiagnosticsLogHandler(
            logger: diagnostics ?? Logger(label: "orderlive.telemetry") { _ in SwiftLogNoOpLogHandler() }, losses: losses)
        otel.diagnosticLogger = .custom(Logger(label: diagnostics?.label ?? "orderlive.telemetry") { _ in coalesced })
        var services: [any Service] = []
        var tracer: (any Tracer)?
        var logHandler: (@Sendable (String) -> any LogHandler)?
        var metricsFactory: (any MetricsFactory)?
        do {
            if otel.traces.enabled {
                let backend = try OTel.makeTracingBackend(configuration: otel)
                tracer = backend.factory
                services.append(backend.service)
            }
            if otel.logs.enabled {
                let backend = try OTel.makeLoggingBackend(configuration: otel)
                logHandler = backend.factory
                services.append(backend.service)
            }
            if otel.metrics.enabled {
                let backend = try OTel.makeMetricsBackend(configuration: otel)
                metricsFactory = backend.factory
                services.append(backend.service)
            }
        } catch {
            throw TelemetryError("telemetry could not start: \(error); check telemetry.* and the OTEL_* variables")
        }
        let signals = [otel.metrics.enabled ? "metrics" : nil, otel.traces.enabled ? "traces" : nil, otel.logs.enabled ? "logs" : nil]
            .compactMap { $0 }
        let (transport, endpoint) = Self.destination(configuration, environment: environment)
        return TelemetryExport(
            tracer: tracer, logHandler: logHandler, metadataProvider: tracer == nil ? nil : OTel.makeLoggingMetadataProvider(),
            metricsFactory: metricsFactory, metricsInterval: metricsInterval(configuration, environment: environment),
            services: services, losses: losses,
            summary: "\(signals.dropLast().joined(separator: ", "))\(signals.count > 1 ? " and " : "")\(signals.last ?? "") over \(Self.name(of: transport)) to \(Self.withoutUserInfo(endpoint))")
    }

    /// The protocol and endpoint a signal's exports use (`signal` nil: the general ones), read as
    /// swift-otel reads them: the signal's variable, the general variable, then the key; with no
    /// endpoint named, the protocol's default.
    static func destination(
        _ configuration: TelemetryConfiguration, environment: [String: String], signal: String? = nil
    ) -> (transport: String, endpoint: String) {
        func given(_ name: String) -> String? {
            let specific = signal.flatMap { environment["OTEL_EXPORTER_OTLP_\($0)_\(name)"] }.flatMap { $0.isEmpty ? nil : $0 }
            return specific ?? environment["OTEL_EXPORTER_OTLP_\(name)"].flatMap { $0.isEmpty ? nil : $0 }
        }
        let transport = given("PROTOCOL") ?? configuration.exportProtocol.rawValue
        let fallback = transport == TelemetryProtocol.grpc.rawValue ? TelemetryProtocol.grpc.defaultEndpoint
            : TelemetryProtocol.httpProtobuf.defaultEndpoint
        return (transport, given("ENDPOINT") ?? (configuration.endpoint.isEmpty ? fallback : configuration.endpoint))
    }

    /// A protocol's name for the start-up line.
    static func name(of transport: String) -> String {
        switch transport {
        case TelemetryProtocol.grpc.rawValue: "OTLP/gRPC"
        case "http/json": "OTLP/HTTP with JSON"
        default: "OTLP/HTTP"
        }
    }

    /// Why a signal's collector cannot be reached over OTLP/gRPC with TLS as named, or nil. grpc-swift's
    /// transport, as swift-otel builds it, sends the endpoint's host as the TLS server name (SNI), which
    /// TLS forbids for an IP address: every export would fail, with only a warning to show for it.
    static func grpcAddressProblem(_ configuration: TelemetryConfiguration, environment: [String: String]) -> String? {
        for signal in ["TRACES", "LOGS", "METRICS"] {
            let (transport, endpoint) = destination(configuration, environment: environment, signal: signal)
            guard transport == TelemetryProtocol.grpc.rawValue, let url = URLComponents(string: endpoint), url.scheme == "https",
                  let host = url.host, Self.isIPAddress(host)
            else { continue }
            return "telemetry: OTLP/gRPC over TLS cannot reach \(Self.withoutUserInfo(endpoint)): the collector's TLS server "
                + "name would be an IP address, which TLS forbids; name the collector by a host name its certificate holds "
                + "(e.g. https://collector.example:4317), or use http/protobuf"
        }
        return nil
    }

    /// Whether `host` (as URLComponents gives it) is an IPv4 or IPv6 literal.
    static func isIPAddress(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    /// How often metrics go out: `OTEL_METRIC_EXPORT_INTERVAL` (milliseconds) as swift-otel reads it,
    /// else `telemetry.metrics_interval_s`.
    static func metricsInterval(_ configuration: TelemetryConfiguration, environment: [String: String]) -> Duration {
        guard let text = environment["OTEL_METRIC_EXPORT_INTERVAL"], let milliseconds = Int(text), milliseconds > 0 else {
            return configuration.metricsInterval
        }
        return .milliseconds(milliseconds)
    }

    /// swift-otel's configuration for `configuration`: OTLP/HTTP with protobuf or OTLP/gRPC, the signals asked for,
    /// a parent-based ratio sampler, bounded batch queues, and the histogram buckets of `/metrics`.
    static func otelConfiguration(_ configuration: TelemetryConfiguration, version: String) throws(TelemetryError) -> OTel.Configuration {
        var otel = OTel.Configuration.default
        otel.serviceName = configuration.serviceName
        otel.resourceAttributes["service.version"] = version
        otel.diagnosticLogLevel = .warning
        otel.propagators = [.traceContext]
        otel.metrics.enabled = configuration.metrics
        otel.metrics.exportInterval = configuration.metricsInterval
        otel.metrics.exportTimeout = min(configuration.timeout, configuration.metricsInterval)
        otel.metrics.defaultDurationHistogramBuckets = AgentMetrics.latencyBuckets
        otel.traces.enabled = configuration.traces
        otel.logs.enabled = configuration.logs
        otel.logs.level = .trace  // the console's log.level already filtered what reaches this handler
        var exporter = otel.traces.otlpExporter
        exporter.protocol = configuration.exportProtocol == .grpc ? .grpc : .httpProtobuf
        exporter.timeout = configuration.timeout
        exporter.headers = try headers(configuration.headersFile)
        if !configuration.caFile.isEmpty { exporter.certificateFilePath = configuration.caFile }
        if !configuration.clientCertificateFile.isEmpty {
            exporter.clientCertificateFilePath = configuration.clientCertificateFile
            exporter.clientKeyFilePath = configuration.clientKeyFile
        }
        let base = configuration.endpoint.hasSuffix("/") ? String(configuration.endpoint.dropLast()) : configuration.endpoint
        otel.traces.otlpExporter = exporter
        otel.logs.otlpExporter = exporter
        otel.metrics.otlpExporter = exporter
        if !base.isEmpty {
            // gRPC: one address for the three services (swift-otel reads its scheme, host and port);
            // HTTP: a path for each signal.
            let grpc = configuration.exportProtocol == .grpc
            otel.traces.otlpExporter.endpoint = grpc ? base : base + "/v1/traces"
            otel.logs.otlpExporter.endpoint = grpc ? base : base + "/v1/logs"
            otel.metrics.otlpExporter.endpoint = grpc ? base : base + "/v1/metrics"
        }
        let ratio = Double(configuration.samplePercent) / 100
        otel.traces.sampler = OTel.Configuration.TracesConfiguration.SamplerConfiguration.parentBasedTraceIDRatio(ratio: ratio)
            ?? .parentBasedAlwaysOn
        otel.traces.batchSpanProcessor.maxQueueSize = configuration.maximumQueue
        otel.traces.batchSpanProcessor.maxExportBatchSize = min(512, configuration.maximumQueue)
        otel.logs.batchLogRecordProcessor.maxQueueSize = configuration.maximumQueue
        otel.logs.batchLogRecordProcessor.maxExportBatchSize = min(512, configuration.maximumQueue)
        return otel
    }

    /// `telemetry.headers_file`: `name=value` lines (as `OTEL_EXPORTER_OTLP_HEADERS` lists them),
    /// blank lines and `#` comments skipped. An error names the line, never its value.
    static func headers(_ path: String) throws(TelemetryError) -> [(String, String)] {
        guard !path.isEmpty else { return [] }
        guard let data = FileManager.default.contents(atPath: path), data.count <= 65_536 else {
            throw TelemetryError("telemetry.headers_file: cannot read \(path) (or it is over 64 KiB); check the path and its permissions")
        }
        var headers: [(String, String)] = []
        // "\r\n" is one Character to Swift: split on both line ends, or a CRLF file reads as one line.
        let lines = String(decoding: data, as: UTF8.self).split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (index, line) in lines.enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            let parts = text.split(separator: "=", maxSplits: 1)
            let name = parts.first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard parts.count == 2, !name.isEmpty, name.unicodeScalars.allSatisfy(Self.isTokenCharacter) else {
                throw TelemetryError("telemetry.headers_file: line \(index + 1) of \(path) is not name=value with a header name")
            }
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw TelemetryError("telemetry.headers_file: line \(index + 1) of \(path) has a control character in its value")
            }
            headers.append((name.lowercased(), value))
        }
        return headers
    }

    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar))
    }

    /// `url` without a `user:password@` part, for a log line.
    static func withoutUserInfo(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return url }
        return String(url[..<scheme.upperBound]) + String(rest[rest.index(after: at)...])
    }
}

/// Telemetry that cannot start as configured: what is wrong and what to do.
public struct TelemetryError: Error, CustomStringConvertible, Sendable {
    /// The message.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
