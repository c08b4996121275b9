import Agent
import Foundation
import OTel
import Testing
@testable import Telemetry

/// `telemetry.*` and the `OTEL_*` rules (DESIGN §14): when export is on, what a bad key says, and
/// the headers file, whose values are secrets and never appear in an error.
@Suite(.timeLimit(.minutes(1))) struct TelemetryConfigurationTests {
    static func load(_ yaml: String) async throws -> OrderliveConfiguration {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("telemetry-\(UUID().uuidString).yaml").path
        try yaml.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try await ConfigurationLoader.load(file: file, environment: ["STATE_DIRECTORY": NSTemporaryDirectory()])
    }

    @Test func exportIsOffUntilAKeyOrAStandardVariableNamesACollector() async throws {
        let defaults = TelemetryConfiguration()
        #expect(!defaults.isOn(environment: [:]))
        #expect(defaults.isOn(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]))
        #expect(defaults.isOn(environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"]))
        #expect(!defaults.isOn(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": ""]))
        var configured = try await Self.load("telemetry:\n  endpoint: \"http://127.0.0.1:4318\"\n").telemetry
        #expect(configured.isOn(environment: [:]))
        #expect(!configured.isOn(environment: ["OTEL_SDK_DISABLED": "true"]), "the specification's off switch wins")
        configured.traces = false
        configured.logs = false
        #expect(configured.isOn(environment: [:]), "metrics alone are worth exporting")
        configured.metrics = false
        #expect(!configured.isOn(environment: [:]), "nothing to export")
        #expect(defaults.isOn(environment: ["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://collector:4318/v1/metrics"]))
        #expect(try await Self.load("telemetry:\n  enabled: true\n").telemetry.isOn(environment: [:]))
    }

    @Test func aBadKeySaysWhichAndWhatToDo() async throws {
        func problem(_ yaml: String) async -> String {
            do {
                _ = try await Self.load(yaml)
                return ""
            } catch {
                return "\(error)"
            }
        }
        #expect(await problem("telemetry:\n  endpoint: \"collector:4318\"\n").contains("'telemetry.endpoint'"))
        #expect(await problem("telemetry:\n  sample_percent: 101\n").contains("'telemetry.sample_percent' must be at most 100"))
        #expect(await problem("telemetry:\n  max_queue: 0\n").contains("'telemetry.max_queue' must be at least 1"))
        #expect(await problem("telemetry:\n  metrics_interval_s: 0\n").contains("'telemetry.metrics_interval_s' must be at least 1"))
        #expect(await problem("telemetry:\n  metrics: maybe\n").contains("'telemetry.metrics'"))
        #expect(await problem("telemetry:\n  headers_file: \"/nonexistent/otel-headers\"\n").contains("cannot read /nonexistent/otel-headers"))
        #expect(await problem("telemetry:\n  client_cert_file: \"/etc/hostname\"\n").contains("go together"))
        #expect(await problem("telemetry:\n  tracess: false\n").contains("unknown key"))
        #expect(await problem("telemetry:\n  protocol: \"http/json\"\n").contains("'telemetry.protocol' must be one of http/protobuf, grpc"))
        let grpc = "telemetry:\n  protocol: grpc\n  endpoint: "
        #expect(await problem(grpc + "\"http://collector\"\n").contains("names no port; the collector's OTLP/gRPC address"))
        #expect(await problem(grpc + "\"http://collector:4317/v1/traces\"\n").contains("gRPC takes no path"))
    }

    @Test func overGRPCTheThreeSignalsShareOneAddressAndTheStandardVariableWins() async throws {
        let telemetry = try await Self.load("telemetry:\n  protocol: grpc\n  endpoint: \"https://collector:4317/\"\n").telemetry
        #expect(telemetry.exportProtocol == .grpc)
        let otel = try TelemetryExport.otelConfiguration(telemetry, version: "9.9.9")
        for exporter in [otel.traces.otlpExporter, otel.logs.otlpExporter, otel.metrics.otlpExporter] {
            #expect(exporter.endpoint == "https://collector:4317" && exporter.protocol == .grpc)
        }
        #expect(TelemetryExport.destination(telemetry, environment: [:]) == ("grpc", "https://collector:4317/"))
        #expect(TelemetryExport.destination(telemetry, environment: ["OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"]).transport
            == "http/protobuf")
        // The standard variable alone: gRPC's default port, as swift-otel uses it.
        #expect(TelemetryExport.destination(TelemetryConfiguration(), environment: ["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"])
            == ("grpc", "http://localhost:4317"))
        let logs = ["OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://logs:4317"]
        #expect(TelemetryExport.destination(TelemetryConfiguration(), environment: logs, signal: "LOGS") == ("grpc", "http://logs:4317"))
        #expect(TelemetryExport.destination(TelemetryConfiguration(), environment: logs) == ("http/protobuf", "http://localhost:4318"))
        var enabled = TelemetryConfiguration()
        (enabled.enabled, enabled.exportProtocol) = (true, .grpc)
        let export = try #require(try TelemetryExport.make(enabled, version: "9.9.9", environment: [:]))
        #expect(export.summary == "metrics, traces and logs over OTLP/gRPC to http://localhost:4317")

        // Over TLS, gRPC cannot reach a collector named by its IP address: refused at start, saying why.
        for (key, variables) in [
            ("https://10.0.0.9:4317", [:]), ("", ["OTEL_EXPORTER_OTLP_ENDPOINT": "https://[::1]:4317"]),
            ("", ["OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "grpc",
                  "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://user:pw@127.0.0.1:4317"]),
        ] {
            enabled.endpoint = key
            #expect {
                _ = try TelemetryExport.make(enabled, version: "9.9.9", environment: variables)
            } throws: { error in
                "\(error)".contains("OTLP/gRPC over TLS cannot reach") && "\(error)".contains("name the collector by a host name")
                    && !"\(error)".contains("pw@")
            }
        }
        for (key, variables) in [("http://10.0.0.9:4317", [:]), ("https://collector.example:4317", [:]),
                                 ("https://10.0.0.9:4317", ["OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"])] {
            enabled.endpoint = key
            #expect(TelemetryExport.grpcAddressProblem(enabled, environment: variables) == nil, "\(key) \(variables)")
        }
    }

    @Test func theHeadersFileIsReadLineByLineAndAnErrorNeverShowsAValue() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("otel-headers-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try "# the collector's key\nX-Api-Key = key-4242\r\n\nauthorization=Basic b3RlbDpzZWNyZXQ=\n".write(toFile: file, atomically: true, encoding: .utf8)
        let headers = try TelemetryExport.headers(file)
        #expect(headers.map(\.0) == ["x-api-key", "authorization"])
        #expect(headers.map(\.1) == ["key-4242", "Basic b3RlbDpzZWNyZXQ="])
        for bad in ["no-equals-sign-secret-77\n", "bad name=secret-77\n", "ok=secret-77\u{7}\n"] {
            try bad.write(toFile: file, atomically: true, encoding: .utf8)
            #expect {
                _ = try TelemetryExport.headers(file)
            } throws: { error in
                "\(error)".contains("line 1 of \(file)") && !"\(error)".contains("secret-77")
            }
        }
        #expect(TelemetryExport.withoutUserInfo("https://user:pw@collector:4318/x") == "https://collector:4318/x")
        #expect(TelemetryExport.withoutUserInfo("http://collector:4318") == "http://collector:4318")
    }

    @Test func theExportersAreOTLPHTTPWithBoundedQueuesAndTheSignalsAskedFor() throws {
        var telemetry = TelemetryConfiguration()
        telemetry.endpoint = "http://127.0.0.1:4318/"
        telemetry.logs = false
        telemetry.metrics = false
        telemetry.maximumQueue = 64
        telemetry.samplePercent = 25
        let otel = try TelemetryExport.otelConfiguration(telemetry, version: "9.9.9")
        #expect(otel.traces.enabled && !otel.logs.enabled && !otel.metrics.enabled)
        #expect(otel.traces.otlpExporter.endpoint == "http://127.0.0.1:4318/v1/traces")
        #expect(otel.traces.batchSpanProcessor.maxQueueSize == 64)
        #expect(otel.traces.batchSpanProcessor.maxExportBatchSize == 64)
        #expect(otel.resourceAttributes["service.version"] == "9.9.9")
        #expect(otel.serviceName == "orderlive")
        let export = try #require(try TelemetryExport.make(telemetry, version: "9.9.9", environment: [:]))
        #expect(export.tracer != nil && export.logHandler == nil && export.services.count == 1)
        #expect(export.metricsFactory == nil)
        #expect(try TelemetryExport.make(TelemetryConfiguration(), version: "9.9.9", environment: [:]) == nil)
    }

    @Test func metricsGoOutWithTheBucketsOfMetricsAndTheirIntervalFromTheKeyOrTheStandardVariable() async throws {
        var telemetry = try await Self.load("telemetry:\n  endpoint: \"http://127.0.0.1:4318\"\n  metrics_interval_s: 15\n").telemetry
        #expect(telemetry.metrics && telemetry.metricsInterval == .seconds(15))
        let otel = try TelemetryExport.otelConfiguration(telemetry, version: "9.9.9")
        #expect(otel.metrics.enabled && otel.metrics.exportInterval == .seconds(15))
        #expect(otel.metrics.otlpExporter.endpoint == "http://127.0.0.1:4318/v1/metrics")
        #expect(otel.metrics.defaultDurationHistogramBuckets == AgentMetrics.latencyBuckets, "the buckets /metrics shows")
        #expect(TelemetryExport.metricsInterval(telemetry, environment: [:]) == .seconds(15))
        #expect(TelemetryExport.metricsInterval(telemetry, environment: ["OTEL_METRIC_EXPORT_INTERVAL": "2500"]) == .milliseconds(2500))
        #expect(TelemetryExport.metricsInterval(telemetry, environment: ["OTEL_METRIC_EXPORT_INTERVAL": "soon"]) == .seconds(15))
        telemetry.traces = false
        telemetry.logs = false
        let export = try #require(try TelemetryExport.make(telemetry, version: "9.9.9", environment: [:]))
        #expect(export.metricsFactory != nil && export.tracer == nil && export.logHandler == nil && export.services.count == 1)
        #expect(export.summary == "metrics over OTLP/HTTP to http://127.0.0.1:4318")
    }

    @Test func theResourceNamesTheStoresEngineAndOnPostgreSQLTheAccount() {
        var configuration = OrderliveConfiguration()
        #expect(configuration.telemetryResourceAttributes == ["orderlive.store.backend": "sqlite"])
        configuration.store.backend = .postgres
        configuration.auth.identifier = "depot-7"
        #expect(configuration.telemetryResourceAttributes == ["orderlive.store.backend": "postgres", "orderlive.account": "depot-7"])
        configuration.store.account = "north"
        #expect(configuration.telemetryResourceAttributes["orderlive.account"] == "north", "store.account wins over auth.identifier")
    }
}
