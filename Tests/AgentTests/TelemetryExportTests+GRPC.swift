import CurlHTTP
import Foundation
import Testing
import TestKit

/// OTLP/gRPC (DESIGN §14): the same records as over OTLP/HTTP, to a real gRPC receiver (grpcio serving
/// the collector's Export services with the OpenTelemetry protobuf definitions), chosen by the standard
/// `OTEL_EXPORTER_OTLP_PROTOCOL` or by `telemetry.protocol`. Before swift-otel's gRPC trait was built
/// in, the standard variable set to `grpc` stopped the agent with a fatalError at start.
extension TelemetryExportTests {
    /// How the test chooses gRPC: the OpenTelemetry variables, or orderlive's own keys.
    enum GRPCChoice: String, CaseIterable, CustomTestStringConvertible {
        case standardVariables, configurationKeys
        var testDescription: String { rawValue }

        func environment(_ receiver: OTLPReceiver) -> [String: String] {
            switch self {
            case .standardVariables: ["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"]
            case .configurationKeys: ["ORDERLIVE_TELEMETRY_ENDPOINT": receiver.endpoint, "ORDERLIVE_TELEMETRY_PROTOCOL": "grpc"]
            }
        }
    }

    @Test(arguments: GRPCChoice.allCases)
    func overGRPCAPushsTraceItsLogsAndTheMetricsReachTheCollector(_ choice: GRPCChoice) async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try await OTLPReceiver(grpc: true)
        let agent = try Self.agent(
            directory, receiver, choice.environment(receiver).merging(["OTEL_METRIC_EXPORT_INTERVAL": "500"]) { $1 },
            standardEndpoint: false)
        let run = Exporting(directory: directory, receiver: receiver, agent: agent, port: try await Self.pushPort(agent),
                            loop: try CurlLoop(logger: quietLogger))
        let summary = await agent.logs.wait(message: "telemetry exported")?.line["telemetry.export"]
        #expect(summary == "metrics, traces and logs over OTLP/gRPC to \(receiver.endpoint)")

        // The sender's trace goes on through the commit, as over HTTP.
        let (traceID, parentID) = ("5cf92f3577b34da6a3ce929d0e0e4737", "01f067aa0ba902b8")
        #expect(try await Self.push(run.loop, port: run.port, id: "grpc-1", traceparent: "00-\(traceID)-\(parentID)-01") == 200)
        let request = try #require(await receiver.records.wait(message: "span", ["name": "POST /api/push", "trace_id": traceID]))
        #expect(request.line["parent_span_id"] == parentID)
        let commit = try #require(await receiver.records.wait(message: "span", ["name": "journal commit", "trace_id": traceID]))
        #expect(commit.line["parent_span_id"] == request.line["span_id"])
        // Log records and metrics too; every export went over gRPC with the headers file's key as metadata.
        #expect(await receiver.records.wait(message: "log", ["body": "push endpoint listening"]) != nil)
        #expect(await receiver.records.wait(message: "metric", ["name": "orderlive_push_requests_total"]) != nil)
        let requests = receiver.records.lines.filter { $0["message"] == "request" }
        #expect(Set(requests.compactMap { $0["path"] }) == ["/v1/traces", "/v1/logs", "/v1/metrics"])
        #expect(requests.allSatisfy { $0["protocol"] == "grpc" && $0["x_api_key"] == Self.collectorKey })

        // A clean stop flushes what the exporters held, over gRPC too.
        let beforeStop = receiver.records.count
        #expect(await run.stop() == 0)
        let stopping = "stopping: pushes now get 503; finishing the job in hand"
        #expect(await receiver.records.wait(from: beforeStop, within: .seconds(5), message: "log", ["body": stopping]) != nil)
        await receiver.stop()
        let logged = agent.logs.raw.joined(separator: "\n")
        #expect(!logged.contains(Self.collectorKey), "the collector's key is not logged")
    }
}

extension TelemetryExportTests {
    /// Either protocol, to a collector over TLS that requires a client certificate.
    enum Transport: String, CaseIterable, CustomTestStringConvertible {
        case http, grpc
        var testDescription: String { rawValue }
    }

    @Test(arguments: Transport.allCases)
    func aCollectorOverTLSIsTrustedByTheCAFileAndGetsTheClientCertificate(_ transport: Transport) async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let authority = try await TestCertificateAuthority.make("collector", in: directory + "/tls")
        let (server, client) = (try await authority.issue("collector"), try await authority.issue("depot-7", client: true))
        let receiver = try await OTLPReceiver(grpc: transport == .grpc, tls: [server.certificate, server.key, authority.certificate])
        // By name over gRPC: its transport sends the host as the TLS server name, which cannot be an IP.
        let endpoint = transport == .grpc ? "https://localhost:\(receiver.port)" : receiver.endpoint
        let agent = try Self.agent(directory, receiver, [
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": transport == .grpc ? "grpc" : "http/protobuf",
            "ORDERLIVE_TELEMETRY_CA_FILE": authority.certificate,
            "ORDERLIVE_TELEMETRY_CLIENT_CERT_FILE": client.certificate, "ORDERLIVE_TELEMETRY_CLIENT_KEY_FILE": client.key,
        ])
        let run = Exporting(directory: directory, receiver: receiver, agent: agent, port: try await Self.pushPort(agent),
                            loop: try CurlLoop(logger: quietLogger))
        #expect(receiver.endpoint.hasPrefix("https://"))
        // The receiver refuses a handshake without a certificate its CA signed: a record that arrives
        // came over TLS that trusted the CA file and presented the client certificate.
        #expect(await receiver.records.wait(message: "log", ["body": "push endpoint listening"]) != nil)
        let request = try #require(await receiver.records.wait(message: "request", ["path": "/v1/logs"]))
        #expect(request.line["client"] == "depot-7" && request.line["protocol"] == transport.rawValue)
        if transport == .http {
            #expect(await run.stop() == 0)
        } else {
            // grpcio's server does not answer the agent's TLS close_notify, so each gRPC connection's
            // close waits out swift-nio-ssl's 5 s shutdown timeout (OPERATIONS.md); the clean stop's
            // flush over gRPC is the plaintext test's.
            await run.loop.shutdown()
            agent.child.signal(SIGKILL)
            _ = await agent.finish()
        }
        await receiver.stop()
    }
}
