// Push ingest with OpenTelemetry export on beside the same agent with it off (issue 58, DESIGN §14:
// on ≥ 0.95× off). The same wrk load as the ingest rows (one-notification Gorush requests with a
// whole order, 50 connections) against the agent as `orderlive run` builds it, once without
// telemetry and once with metrics, traces and logs exported over OTLP/HTTP (swift-otel, every trace
// sampled: a request and a commit span per push, an apply span per batch; BENCH_OTEL_SIGNALS picks
// fewer) to a sink in this process that answers every export 200 without decoding it,
// as a collector on another box would cost the agent nothing more. The rounds alternate the order.

import Agent
import Foundation
import Hummingbird
import Logging
import Telemetry

/// An OTLP/HTTP sink on 127.0.0.1: `/v1/metrics`, `/v1/traces` and `/v1/logs` read the body and answer 200 with an
/// empty protobuf response (a valid `Export…ServiceResponse`), decoding nothing.
func withOTLPSink<T: Sendable>(_ body: @Sendable @escaping (Int) async throws -> T) async throws -> T {
    let router = Router()
    for path in ["/v1/metrics", "/v1/traces", "/v1/logs"] {
        router.post(RouterPath(path)) { request, _ -> Response in
            _ = try await request.body.collect(upTo: 64 << 20)
            var headers = HTTPFields()
            headers[.contentType] = "application/x-protobuf"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer()))
        }
    }
    return try await withServing(router, body)
}

func pushTelemetryBenchmark(seconds: Int, rounds: Int, script: String) async throws {
    // BENCH_OTEL_SAMPLE_PERCENT: telemetry.sample_percent of the "on" rows (default 100, every push traced).
    let samplePercent = min(100, max(0, Int(ProcessInfo.processInfo.environment["BENCH_OTEL_SAMPLE_PERCENT"] ?? "") ?? 100))
    // BENCH_OTEL_SIGNALS: the signals exported, comma-separated (default metrics,traces,logs).
    let signals = Set((ProcessInfo.processInfo.environment["BENCH_OTEL_SIGNALS"] ?? "metrics,traces,logs").split(separator: ",").map(String.init))
    // BENCH_OTEL_NO_TRACER=1: the exporters' services run but no component is given the tracer, so
    // the "on" rows cost what export costs without a single span: it isolates the spans' share.
    let withoutTracer = ProcessInfo.processInfo.environment["BENCH_OTEL_NO_TRACER"] == "1"
    print("")
    print("push ingest with OpenTelemetry export: wrk -t2 -c50 -d\(seconds)s, durability normal, \(signals.sorted().joined(separator: "+")) "
        + "(sample_percent \(samplePercent)\(withoutTracer ? ", no tracer given to the agent" : "")) to an OTLP/HTTP sink; swift-otel's warnings to /dev/null")
    print("| round | telemetry | requests/s | p50 ms | p99 ms | CPU µs/request | errors | ratio to off | process RSS MB before → after (peak) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for round in 1...rounds {
        var results: [(on: Bool, LoadResult)] = []
        for on in round % 2 == 1 ? [false, true] : [true, false] {
            let result: LoadResult? = try await withOTLPSink { sink in
                var telemetry = AgentTelemetry()
                if on {
                    var configuration = TelemetryConfiguration()
                    configuration.endpoint = "http://127.0.0.1:\(sink)"
                    configuration.samplePercent = samplePercent
                    (configuration.metrics, configuration.traces, configuration.logs) =
                        (signals.contains("metrics"), signals.contains("traces"), signals.contains("logs"))
                    let silent = Logger(label: "bench.telemetry") { _ in SwiftLogNoOpLogHandler() }
                    if let export = try TelemetryExport.make(configuration, version: "bench", environment: [:], diagnostics: silent) {
                        telemetry = AgentTelemetry(
                            tracer: withoutTracer ? nil : export.tracer, metrics: export.metricsFactory, metricsInterval: export.metricsInterval,
                            services: export.services)
                    }
                }
                return try await withAgent(durability: .normal, webhook: false, telemetry: telemetry) { port in
                    try runWrk(port: port, seconds: seconds, connections: 50, script: script)
                }.0
            }
            if let result { results.append((on, result)) }
        }
        let off = results.first(where: { !$0.on })?.1.requestsPerSecond ?? 0
        for (on, result) in results.sorted(by: { !$0.on && $1.on }) {
            print("| \(round) | \(on ? "export on" : "off (reference)") | \(format(result.requestsPerSecond, 0)) | \(format(result.p50, 2)) "
                + "| \(format(result.p99, 2)) | \(format(result.cpuMicrosecondsPerRequest, 1)) | \(result.errors) "
                + "| \(off > 0 ? format(result.requestsPerSecond / off, 2) + "×" : "—") | \(result.memory) |")
        }
    }
}
