@testable import Agent
import Logging
import TestKit
import Testing
@testable import Telemetry

/// DESIGN §14: a collector that is down or slow "costs a counted drop". swift-otel says what it
/// dropped or failed to send only as warnings on its diagnostic logger; those are counted by signal
/// into `/metrics`, from the first scrape at zero, and none is lost before the metrics exist.
@Suite(.timeLimit(.minutes(1))) struct TelemetryLossesTests {
    /// A logger shaped as swift-otel's component loggers are (`component` metadata), writing through
    /// the handler `orderlive run` installs.
    static func component(_ name: String, _ losses: TelemetryLosses) -> Logger {
        let handler = DiagnosticsLogHandler(logger: Logger(label: "console") { _ in SwiftLogNoOpLogHandler() }, losses: losses)
        var logger = Logger(label: "orderlive.telemetry") { _ in handler }
        logger[metadataKey: "component"] = "\(name)"
        return logger
    }

    @Test func swiftOTelsWarningsAreCountedBySignalAndWhatCameBeforeTheMetricsIsKept() {
        let losses = TelemetryLosses()
        let spans = Self.component("OTelBatchSpanProcessor", losses)
        let logs = Self.component("OTelBatchLogRecordProcessor", losses)
        let metricsReader = Self.component("OTelPeriodicExportingMetricsReader", losses)
        // Before the agent's metrics exist (swift-otel starts first): kept.
        spans.warning("Spans were dropped this iteration because queue was full", metadata: ["queue_size": "32", "dropped_count": "5"])
        spans.warning("Failed to export batch.")
        let metrics = AgentMetrics()
        losses.bind(factory: metrics.factory)
        spans.warning("Spans were dropped this iteration because queue was full", metadata: ["queue_size": "32", "dropped_count": "7"])
        logs.warning("Log records were dropped this iteration because queue was full", metadata: ["dropped_count": "3"])
        logs.warning("Failed to export batch.")
        logs.warning("Failed to export batch.")
        metricsReader.warning("Failed to export metrics.")
        // What counts nothing: a count that is not a number, one that would overflow, another
        // component's warning, and a line that reports no loss.
        spans.warning("Spans were dropped this iteration because queue was full", metadata: ["dropped_count": "many"])
        spans.warning("Spans were dropped this iteration because queue was full", metadata: ["dropped_count": "99999999999999999999"])
        Self.component("OTelTracer", losses).warning("Failed to extract span context.", metadata: ["dropped_count": "9"])
        spans.warning("Force flush failed.")

        let text = metrics.text()
        let samples = prometheusSamples(text) ?? [:]
        #expect(samples[#"orderlive_telemetry_dropped_total{signal="spans"}"#] == 12)
        #expect(samples[#"orderlive_telemetry_dropped_total{signal="logs"}"#] == 3)
        #expect(samples[#"orderlive_telemetry_dropped_total{signal="metrics"}"#] == 0, "every signal from zero")
        #expect(samples[#"orderlive_telemetry_export_failures_total{signal="spans"}"#] == 1)
        #expect(samples[#"orderlive_telemetry_export_failures_total{signal="logs"}"#] == 2)
        #expect(samples[#"orderlive_telemetry_export_failures_total{signal="metrics"}"#] == 1)
        #expect(text.contains("# HELP orderlive_telemetry_dropped_total "))
    }
}
