@testable import Agent
import AuthSession
import CoreMetrics
import CurlHTTP
import Foundation
import OrderSync
import Prometheus
@testable import PushIngest
import StoreModel
import Testing
import TestHarnesses
import TestKit
import WebhookDelivery

/// Metrics over OTLP (DESIGN §14): every series of `/metrics` is made through one factory, so the
/// export carries the same names, labels and values; `/metrics` is unchanged beside it; and a running
/// agent sends its series, the store's gauges included, to a real OTLP receiver though nothing scrapes it.
@Suite(.serialized, .timeLimit(.minutes(4))) struct MetricsExportTests {
    @Test func theExportGetsEverySeriesOfMetricsWithTheSameNamesLabelsAndValues() throws {
        // A second Prometheus registry stands in for the exporter's factory: what it holds, side by
        // side with `/metrics`, is what the multiplexed factory gave the export.
        let exported = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: exported)
        factory.defaultDurationHistogramBuckets = AgentMetrics.latencyBuckets  // as the exporter is configured
        let metrics = AgentMetrics(export: factory)
        metrics.record(.fetch, .completed, count: 3)
        metrics.record(.refreshSucceeded)
        metrics.record(webhook: 4, .delivered, count: 2)
        metrics.streamEvents.increment(by: 5)
        metrics.commitLag.recordNanoseconds(1_500_000)
        PushMetrics(factory: metrics.factory).record(.accepted)
        var health = StoreWriteHealth()
        health.failures = 2
        metrics.refresh(
            counts: StoreCounts(orders: 12, journalDepth: 7, oldestJobCreatedAt: 1_000, deadLetters: 1, waitingLanes: 2),
            health: health, now: 1_030, authenticated: true)
        let text = metrics.text()
        let shown = try #require(prometheusSamples(text))
        #expect(shown == prometheusSamples(exported.emitToString()), "the export holds exactly what /metrics shows")
        #expect(shown[#"orderlive_sync_jobs_total{kind="fetch",outcome="completed"}"#] == 3)
        #expect(shown[#"orderlive_webhook_deliveries_total{endpoint="4",outcome="delivered"}"#] == 2)
        #expect(shown[#"orderlive_push_requests_total{outcome="accepted"}"#] == 1)
        #expect(shown["orderlive_journal_depth"] == 7)
        #expect(shown["orderlive_journal_oldest_job_age_seconds"] == 30)
        #expect(shown["orderlive_store_write_failures_total"] == 2)
        #expect(shown[#"orderlive_stream_commit_lag_seconds_bucket{le="0.002"}"#] == 1)
        // `/metrics` keeps its HELP text for every family, though swift-metrics carries none.
        #expect(text.contains("# HELP orderlive_journal_depth Jobs waiting in the journal\n# TYPE orderlive_journal_depth gauge"))
        let types = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.count
        #expect(text.split(separator: "\n").filter { $0.hasPrefix("# HELP ") }.count == types)
    }

    @Test func aRunningAgentExportsItsSeriesAndTheStoresGaugesWithNothingScrapingIt() async throws {
        let directory = try TelemetryExportTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try await OTLPReceiver()
        // Traces and logs off: only metrics go out, every 300 ms (the standard variable's milliseconds).
        let agent = try TelemetryExportTests.agent(directory, receiver, [
            "ORDERLIVE_TELEMETRY_TRACES": "false", "ORDERLIVE_TELEMETRY_LOGS": "false", "OTEL_METRIC_EXPORT_INTERVAL": "300",
        ])
        let port = try await TelemetryExportTests.pushPort(agent)
        let exporting = await agent.logs.wait(message: "telemetry exported")
        #expect(exporting?.line["telemetry.export"] == "metrics over OTLP/HTTP to \(receiver.endpoint)")
        let loop = try CurlLoop(logger: quietLogger)
        for index in 0..<3 { #expect(try await TelemetryExportTests.push(loop, port: port, id: "metric-\(index)") == 200) }

        // The push counter, with its label, as /metrics counts it.
        let accepted = await receiver.records.wait {
            $0["message"] == "metric" && $0["name"] == "orderlive_push_requests_total" && $0["attr.outcome"] == "accepted"
                && $0["value"] == "3"
        }
        #expect(accepted?.line["type"] == "sum")
        #expect(accepted?.line["service"] == "orderlive")
        // The request-duration histogram, in /metrics' buckets.
        let durations = await receiver.records.wait {
            $0["message"] == "metric" && $0["name"] == "orderlive_push_request_duration_seconds" && $0["count"] == "3"
        }
        #expect(durations?.line["buckets"]?.hasPrefix("0.0005,0.001,0.002,0.005,") == true, "\(String(describing: durations?.line))")
        // A gauge that mirrors the store is refreshed on the export interval: the backend is
        // unreachable, so the pushes' fetch jobs wait in the journal, and the export says so.
        let depth = await receiver.records.wait {
            $0["message"] == "metric" && $0["name"] == "orderlive_journal_depth" && (Double($0["value"] ?? "") ?? 0) >= 1
        }
        #expect(depth?.line["type"] == "gauge")
        #expect(receiver.records.lines.allSatisfy { $0["message"] != "span" && $0["message"] != "log" }, "traces and logs are off")

        // /metrics answers as before, beside the export.
        let text = String(decoding: try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/metrics")).body, as: UTF8.self)
        let samples = try #require(prometheusSamples(text))
        #expect(samples[#"orderlive_push_requests_total{outcome="accepted"}"#] == 3)
        #expect(text.contains("# HELP orderlive_push_requests_total "))
        await loop.shutdown()
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
        await receiver.stop()
    }
}
