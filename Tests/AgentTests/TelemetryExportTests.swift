import CurlHTTP
import Foundation
import Testing
import TestHarnesses
import TestKit
import WebhookSigning

/// DESIGN §14 "Observable from where the operators are", on the real executable against a real OTLP
/// receiver (`Scripts/otlp-receiver.py`, decoding with the OpenTelemetry protobuf definitions):
/// `OTEL_EXPORTER_OTLP_ENDPOINT` alone turns export on; a push continues its sender's `traceparent`
/// through the journal commit; a malformed one starts a new trace and is no error; log records
/// arrive with the headers file's key sent and no secret in them; a collector that is down for 30 s
/// costs nothing a push can see, no memory, drops counted in `/metrics`, and export resumes when it
/// is back; an unsampled trace is propagated, not recorded; no bearer secret reaches a log.
@Suite(.serialized, .timeLimit(.minutes(5))) struct TelemetryExportTests {
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let collectorKey = "otel-key-31337"

    /// A push announcing order 7 (a fetch job), or carrying it whole (an upsert, a change).
    static func push(
        _ loop: CurlLoop, port: String, id: String, traceparent: String? = nil, whole: Bool = false, raw: String? = nil
    ) async throws -> Int {
        let data = whole ? #""order":{"id":7,"status":"picked_up","version":1,"store_id":1}"# : #""order_id":7"#
        let body = Array((raw ?? #"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.status_changed",\#(data)}}]}"#).utf8)
        let now = Int64(Date().timeIntervalSince1970)
        let signature = try StandardWebhooks(secret: secret).sign(id: id, timestamp: now, body: body)
        var headers: HTTPHeaders = [
            "Content-Type": "application/json", "webhook-id": id, "webhook-timestamp": "\(now)", "webhook-signature": signature,
        ]
        if let traceparent { headers.add(name: "traceparent", value: traceparent) }
        return try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/api/push", method: "POST", headers: headers, body: body)).status
    }

    /// An agent exporting to `receiver` (named by `OTEL_EXPORTER_OTLP_ENDPOINT`, or by `extra` when
    /// `standardEndpoint` is false), its batches sent every 100 ms, `extra` on top.
    static func agent(
        _ directory: String, _ receiver: OTLPReceiver, _ extra: [String: String] = [:], standardEndpoint: Bool = true
    ) throws -> RunningAgent {
        let (secrets, headers) = (directory + "/push-secret", directory + "/otel-headers")
        try (secret + "\n").write(toFile: secrets, atomically: true, encoding: .utf8)
        try "x-api-key=\(collectorKey)\n".write(toFile: headers, atomically: true, encoding: .utf8)
        return try RunningAgent([], environment: [
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:1", "ORDERLIVE_STORE_STATE_DIR": directory + "/state",
            "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
            "ORDERLIVE_INGEST_AUTH": "standard-webhooks", "ORDERLIVE_INGEST_SECRET_FILE": secrets,
            "ORDERLIVE_TELEMETRY_HEADERS_FILE": headers,
            "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BLRP_SCHEDULE_DELAY": "100",
        ].merging(standardEndpoint ? ["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint] : [:]) { $1 }.merging(extra) { $1 })
    }

    /// The push listener's port, once `agent` says it listens.
    static func pushPort(_ agent: RunningAgent) async throws -> String {
        let listening = try #require(await agent.logs.wait(message: "push endpoint listening")?.line)
        return try #require(listening["push.listen"]?.split(separator: ":").last.map(String.init))
    }

    /// One test's agent exporting to a receiver of its own: the state directory, the receiver, the
    /// agent, its push port and a curl loop.
    struct Exporting {
        let directory: String
        let receiver: OTLPReceiver
        let agent: RunningAgent
        let port: String
        let loop: CurlLoop

        /// Stops the loop, then the agent with SIGTERM, as an operator does; its exit status.
        func stop() async -> Int32 {
            await loop.shutdown()
            agent.child.signal(SIGTERM)
            return await agent.finish()
        }

        /// Removes the state directory (the test's `defer`).
        func removeDirectory() {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// An agent exporting to a fresh receiver (`extra` on top of ``agent(_:_:_:)``'s environment;
    /// `prepare` runs on the receiver before the agent starts), listening for pushes.
    static func exporting(_ extra: [String: String] = [:], prepare: (OTLPReceiver) async -> Void = { _ in }) async throws -> Exporting {
        let directory = try Self.directory()
        let receiver = try await OTLPReceiver()
        await prepare(receiver)
        let agent = try Self.agent(directory, receiver, extra)
        let port = try await Self.pushPort(agent)
        return Exporting(directory: directory, receiver: receiver, agent: agent, port: port, loop: try CurlLoop(logger: quietLogger))
    }

    /// Adds `url` as a webhook endpoint of `run`'s agent, then pushes whole orders under `traceparent`
    /// until one change reaches `receiver` (the endpoint is picked up within a second): the
    /// `traceparent` that first delivery carried, split at its dashes.
    static func firstDelivery(
        _ run: Exporting, to receiver: WebhookReceiver, at url: String, traceparent: String
    ) async throws -> [String] {
        let (added, said) = try await StoreFileCommandsTests.run(
            ["webhooks", "add", url, "--secret-file", run.directory + "/push-secret"], in: run.directory + "/state")
        #expect(added == 0, "\(said)")
        var delivered: WebhookReceiver.Received?
        for attempt in 0..<20 where delivered == nil {
            #expect(try await Self.push(run.loop, port: run.port, id: "whole-\(attempt)", traceparent: traceparent, whole: true) == 200)
            if await receiver.until(.seconds(1), { !$0.isEmpty }) { delivered = receiver.received.first }
        }
        let sent = try #require(delivered?.traceparent, "the attempt carries a traceparent")
        return sent.split(separator: "-").map(String.init)
    }

    static func directory() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-otel-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func aPushContinuesItsSendersTraceThroughTheCommitAndLogsReachTheCollector() async throws {
        let run = try await Self.exporting()
        defer { run.removeDirectory() }
        let (receiver, agent, port, loop, directory) = (run.receiver, run.agent, run.port, run.loop, run.directory)

        // The sender's trace goes on: the request's span is its child, the commit the request's.
        let (traceID, parentID) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
        #expect(try await Self.push(loop, port: port, id: "msg-1", traceparent: "00-\(traceID)-\(parentID)-01") == 200)
        let request = try #require(await receiver.records.wait(message: "span", ["name": "POST /api/push", "trace_id": traceID]))
        #expect(request.line["parent_span_id"] == parentID)
        #expect(request.line["kind"] == "2", "SPAN_KIND_SERVER")
        #expect(request.line["attr.http.response.status_code"] == "200")
        #expect(request.line["attr.http.request.method"] == "POST")
        #expect(request.line["service"] == "orderlive")
        #expect(!(request.line["service_version"] ?? "").isEmpty)
        // service.instance.id is the state directory's, kept in its instance-id file across restarts.
        let instance = try String(contentsOfFile: directory + "/state/instance-id", encoding: .utf8)
        #expect(request.line["instance"] == instance.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(UUID(uuidString: request.line["instance"] ?? "") != nil)
        #expect(request.line["backend"] == "sqlite" && request.line["account"] == "", "an account only on PostgreSQL")
        let commit = try #require(await receiver.records.wait(message: "span", ["name": "journal commit", "trace_id": traceID]))
        #expect(commit.line["parent_span_id"] == request.line["span_id"])
        #expect(commit.line["attr.orderlive.push.outcome"] == "accepted")
        #expect(commit.line["attr.orderlive.jobs"] == "1")
        // The job waits in the journal for the executor (the backend is unreachable here); its apply
        // still joins the push's trace, under the commit that journaled it.
        let apply = try #require(await receiver.records.wait(message: "span", ["name": "sync apply fetch", "trace_id": traceID]))
        #expect(apply.line["parent_span_id"] == commit.line["span_id"])
        #expect(apply.line["attr.orderlive.order_id"] == "7")

        // A malformed traceparent is ignored: a new trace, and the push is answered as any other.
        let malformed = "00-\(String(traceID.reversed()).uppercased())-zz-01"
        #expect(try await Self.push(loop, port: port, id: "msg-2", traceparent: malformed) == 200)
        let fresh = try #require(await receiver.records.wait { line in
            line["message"] == "span" && line["name"] == "POST /api/push" && line["trace_id"] != traceID
                && line["attr.http.response.status_code"] == "200"
        })
        #expect(fresh.line["parent_span_id"] == "", "a new trace has no parent")
        // A refused push has its span too, with its status.
        #expect(try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/api/push", method: "POST", body: Array("{}".utf8))).status == 401)
        #expect(await receiver.records.wait(message: "span", ["name": "POST /api/push", "attr.http.response.status_code": "401"]) != nil)
        // A refusal's log line carries its push's trace id, on the console and in the exported record.
        let refusedTrace = "0123456789abcdef0123456789abcdef"
        #expect(try await Self.push(loop, port: port, id: "msg-3", traceparent: "00-\(refusedTrace)-\(parentID)-01", raw: "{}") == 400)
        #expect(await agent.logs.wait(message: "push refused", ["trace_id": refusedTrace]) != nil)
        #expect(await receiver.records.wait(message: "log", ["body": "push refused", "trace_id": refusedTrace]) != nil)

        // Log records reach the collector, with the headers file's key on every export request.
        let started = await receiver.records.wait(message: "log", ["body": "push endpoint listening"])
        #expect(started?.line["service"] == "orderlive")
        #expect(await receiver.records.wait(message: "request", ["path": "/v1/logs", "x_api_key": Self.collectorKey]) != nil)
        #expect(receiver.records.lines.filter { $0["message"] == "request" }.allSatisfy { $0["x_api_key"] == Self.collectorKey })

        let beforeStop = receiver.records.count
        #expect(await run.stop() == 0)
        // A clean stop flushes what the exporters held: the last lines logged reach the collector.
        let stopping = "stopping: pushes now get 503; finishing the job in hand"
        #expect(await receiver.records.wait(from: beforeStop, within: .seconds(5), message: "log", ["body": stopping]) != nil)
        await receiver.stop()
        let exported = receiver.records.raw.filter { !$0.contains(#""message": "request""#) }.joined(separator: "\n")
        let logged = agent.logs.raw.joined(separator: "\n")
        for secret in [Self.secret, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Self.collectorKey] {
            #expect(!exported.contains(secret), "no secret is exported")
            #expect(!logged.contains(secret), "no secret is logged")
        }
    }

    @Test func aWebhookAttemptIsAClientSpanWhoseTraceparentGoesOut() async throws {
        let run = try await Self.exporting()
        defer { run.removeDirectory() }
        let otlp = run.receiver
        try await WebhookReceiver.withRunning(secret: Self.secret) { receiver, url in
            // The pushes continue the integrator's trace; the change each makes keeps it, and so
            // does the webhook attempt that carries it out.
            let traceID = "5b8aa5a2d2c872e8321cf37308d69df2"
            let parts = try await Self.firstDelivery(run, to: receiver, at: url, traceparent: "00-\(traceID)-051581bf3cb55c13-01")
            try #require(parts.count == 4 && parts[1].count == 32 && parts[2].count == 16, "\(parts)")
            #expect(parts[1] == traceID, "the webhook is in the push's trace")
            let span = try #require(await otlp.records.wait(message: "span", ["name": "POST", "span_id": parts[2]]))
            #expect(span.line["trace_id"] == traceID)
            let parent = try #require(span.line["parent_span_id"])
            let commit = await otlp.records.wait(message: "span", ["name": "journal commit", "span_id": parent])
            #expect(commit?.line["trace_id"] == traceID, "under the commit that made the change")
            #expect(span.line["kind"] == "3", "SPAN_KIND_CLIENT")
            #expect(span.line["attr.http.response.status_code"] == "200")
            #expect(span.line["attr.url.full"] == url)
            #expect(span.line["attr.orderlive.change.seq"] != nil)
        }
        #expect(await run.stop() == 0)
        await otlp.stop()
    }

    /// swift-otel logs the carrier of a `traceparent` it cannot parse; the carrier it is given holds the
    /// propagation fields alone, so a bearer secret in the same request never reaches a log line.
    @Test func aMalformedTraceparentBesideABearerSecretLogsNoSecret() async throws {
        let run = try await Self.exporting(["ORDERLIVE_INGEST_AUTH": "bearer"])
        defer { run.removeDirectory() }
        let (otlp, agent, port, loop) = (run.receiver, run.agent, run.port, run.loop)
        let body = Array(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.status_changed","order_id":7}}]}"#.utf8)
        let headers: HTTPHeaders = [
            "Content-Type": "application/json", "Authorization": "Bearer \(Self.secret)",
            "traceparent": "00-not-a-trace-context-01", "tracestate": "vendor=kept",
        ]
        let answer = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/api/push", method: "POST", headers: headers, body: body))
        #expect(answer.status == 200, "a malformed traceparent is no error")
        // swift-otel says it could not extract, naming the carrier: the propagation fields, nothing else.
        let warned = try #require(await agent.logs.wait { ($0["message"] ?? "").contains("Failed to extract span context") })
        #expect(warned.line["carrier"]?.contains("not-a-trace-context") == true, "\(warned.line)")
        #expect(await run.stop() == 0)
        await otlp.stop()
        for secret in [Self.secret, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] {
            #expect(!agent.logs.raw.joined(separator: "\n").contains(secret), "the bearer secret was logged")
            #expect(!otlp.records.raw.joined(separator: "\n").contains(secret), "the bearer secret was exported")
        }
    }

    /// W3C: a trace its sender did not sample is not recorded here either (no span of its request, its
    /// commit or its webhook attempt is exported), yet it is propagated: the webhook that carries its
    /// change is in the sender's trace, still marked not sampled, so the receiver decides alike.
    @Test func anUnsampledPushRecordsNoSpanYetItsWebhookCarriesItsTrace() async throws {
        let run = try await Self.exporting()
        defer { run.removeDirectory() }
        let (otlp, port, loop) = (run.receiver, run.port, run.loop)
        let (unsampled, sampled) = ("6e0c63257de34c926f9efcd03927272e", "7d1d74368ef45da37fa0fde14a38383f")
        try await WebhookReceiver.withRunning(secret: Self.secret) { receiver, url in
            let parts = try await Self.firstDelivery(run, to: receiver, at: url, traceparent: "00-\(unsampled)-051581bf3cb55c13-00")
            try #require(parts.count == 4, "\(parts)")
            #expect(parts[1] == unsampled, "the webhook is in the sender's trace")
            #expect(parts[3] == "00", "and still not sampled")
        }
        // A sampled push after it: once its spans are exported, every span ended before them was too.
        #expect(try await Self.push(loop, port: port, id: "loud", traceparent: "00-\(sampled)-051581bf3cb55c13-01", whole: true) == 200)
        #expect(await otlp.records.wait(message: "span", ["name": "journal commit", "trace_id": sampled]) != nil)
        #expect(await otlp.records.wait(message: "span", ["name": "POST /api/push", "trace_id": sampled]) != nil)
        let recorded = otlp.records.lines.filter { $0["message"] == "span" && $0["trace_id"] == unsampled }
        #expect(recorded.isEmpty, "spans of an unsampled trace were exported: \(recorded.compactMap { $0["name"] })")
        #expect(await run.stop() == 0)
        await otlp.stop()
    }

    /// The agent's resident memory in KiB (`VmRSS` of /proc/PID/status), or nil when it cannot be read.
    static func residentKiB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    @Test func aCollectorThatIsDownCostsNoPushAnythingAndExportResumes() async throws {
        // Down for 30 s (DESIGN §14), the agent pushed at all the while.
        let (hold, clock) = (Duration.seconds(30), ContinuousClock())
        let holding = clock.now
        let run = try await Self.exporting(["ORDERLIVE_TELEMETRY_MAX_QUEUE": "32"]) { receiver in
            receiver.hold(seconds: Int(hold.components.seconds))
            #expect(await receiver.records.wait(message: "holding") != nil)
        }
        defer { run.removeDirectory() }
        let (receiver, agent, port, loop) = (run.receiver, run.agent, run.port, run.loop)

        // Far more spans and log records than the queues hold while every export is refused: each
        // push is still answered at once (the exporter never sits on the request path), and the
        // agent's memory stays flat (the queues are bounded; what does not fit is dropped).
        var slowest = Duration.zero
        var (pushes, warm, last): (Int, Int?, Int?) = (0, nil, nil)
        while clock.now - holding < hold - .seconds(2) {
            let started = clock.now
            #expect(try await Self.push(loop, port: port, id: "down-\(pushes)") == 200)
            slowest = max(slowest, clock.now - started)
            pushes += 1
            // Warm after the first 10 s (the queues full, the heap at its working size), then the last reading.
            if warm == nil, clock.now - holding > .seconds(10) { warm = Self.residentKiB(agent.child.process.processIdentifier) }
            last = Self.residentKiB(agent.child.process.processIdentifier)
        }
        if let warm, let last {
            #expect(last - warm < 8_192, "RSS grew \((last - warm) / 1024) MiB over the outage's last \(pushes) pushes: not flat")
        } else {
            Issue.record("the agent's VmRSS could not be read")
        }
        #expect(slowest < .seconds(2), "a push waited \(slowest) on a collector that is down")
        #expect(await receiver.records.wait(message: "refused") != nil, "the agent did try to export")
        // What was dropped is said on the console's log, with the count, not exported into the outage.
        let dropped = await agent.logs.wait { $0["label"] == "orderlive.telemetry" && ($0["message"] ?? "").contains("dropped") }
        #expect(Int(dropped?.line["dropped_count"] ?? "") ?? 0 > 0, "\(String(describing: dropped?.line))")
        // And counted where an alert can see it, by signal. (Here the exporter's retries outlast the
        // hold, so no export fails; a collector that refuses the key is the next test.)
        let metrics = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/metrics"))
        let text = String(decoding: metrics.body, as: UTF8.self)
        let samples = prometheusSamples(text) ?? [:]
        #expect(samples[#"orderlive_telemetry_dropped_total{signal="spans"}"#] ?? 0 > 0, "\(text.split(separator: "\n").filter { $0.contains("telemetry") })")
        #expect(samples[#"orderlive_telemetry_export_failures_total{signal="spans"}"#] != nil)

        // Back: a push after the hold is exported.
        let traceID = "0af7651916cd43dd8448eb211c80319c"
        var exported = false
        for attempt in 0..<30 where !exported {
            #expect(try await Self.push(loop, port: port, id: "back-\(attempt)", traceparent: "00-\(traceID)-b7ad6b7169203331-01") == 200)
            exported = await receiver.records.wait(
                within: .seconds(1), for: { $0["message"] == "span" && $0["trace_id"] == traceID }) != nil
        }
        #expect(exported, "export resumed once the collector was back")
        // Coalesced: one line per kind, then at most one per 10 s, however many batches overflowed.
        let droppedLines = agent.logs.lines.filter { $0["label"] == "orderlive.telemetry" && ($0["message"] ?? "").contains("dropped") }
        #expect(droppedLines.count <= 3, "\(droppedLines.count) lines about drops")
        #expect(await run.stop() == 0, "a collector that was down does not hold up the stop")
        await receiver.stop()
    }

    @Test func aCollectorThatRefusesTheKeyCountsFailedExportsAndExportResumes() async throws {
        let run = try await Self.exporting { receiver in
            receiver.refuse(seconds: 4)
            #expect(await receiver.records.wait(message: "refusing") != nil)
        }
        defer { run.removeDirectory() }
        let (receiver, port, loop) = (run.receiver, run.port, run.loop)
        // A 401 is not retried: each batch sent while the key is refused is one failed export, counted
        // by signal in /metrics, and no push waits for it.
        for attempt in 0..<3 { #expect(try await Self.push(loop, port: port, id: "refused-\(attempt)") == 200) }
        #expect(await receiver.records.wait(message: "refused", ["path": "/v1/traces"]) != nil)
        #expect(await receiver.records.wait(message: "refused", ["path": "/v1/logs"]) != nil)
        var failures: [String: Double] = [:]
        let counted = await eventually(within: .seconds(10)) {
            let text = String(decoding: try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(port)/metrics")).body, as: UTF8.self)
            let samples = prometheusSamples(text) ?? [:]
            for signal in ["spans", "logs"] {
                failures[signal] = samples[#"orderlive_telemetry_export_failures_total{signal="\#(signal)"}"#] ?? 0
            }
            return failures.values.allSatisfy { $0 > 0 }
        }
        #expect(counted, "\(failures)")
        // Taken again: the next pushes are exported.
        let traceID = "1af7651916cd43dd8448eb211c80319d"
        var exported = false
        for attempt in 0..<30 where !exported {
            #expect(try await Self.push(loop, port: port, id: "taken-\(attempt)", traceparent: "00-\(traceID)-b7ad6b7169203331-01") == 200)
            exported = await receiver.records.wait(within: .seconds(1), for: { $0["message"] == "span" && $0["trace_id"] == traceID }) != nil
        }
        #expect(exported, "export resumed once the collector took the key again")
        #expect(await run.stop() == 0)
        await receiver.stop()
    }
}
