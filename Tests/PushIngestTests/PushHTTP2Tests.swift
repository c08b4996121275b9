import Foundation
import LocalHTTP
import PushIngest
import Testing
import TestHarnesses
import TestKit

/// The push endpoint over HTTP/2 (issue 57): `h2` by ALPN on TLS and `h2c` with prior knowledge,
/// with curl as the peer, answering exactly as over HTTP/1.1 — status, Gorush body, the headers a
/// sender reads — and HTTP/1.1 still served on the same port.
@Suite(.timeLimit(.minutes(3))) struct PushHTTP2Tests {
    /// A push for order `order`: pushes with the same body are one push (deduplicated).
    static func push(_ order: Int) -> String {
        #"{"notifications":[{"tokens":["t"],"platform":2,"data":{"order_id":\#(order)}}]}"#
    }

    /// One curl answer: the protocol version, the status, the headers and the body.
    struct Answer: Equatable {
        var version: String
        var status: String
        var body: String
        var retryAfter: String?
    }

    /// curl with `arguments`; what it got, or the failure it printed.
    static func curl(_ arguments: [String]) async throws -> (run: ToolRun, answer: Answer?) {
        let marker = "\n--orderlive-test--\n"
        let run = try await runTool("/usr/bin/env", [
            "curl", "-sS", "--max-time", "10", "-D", "/dev/stderr", "-w", marker + "%{http_version} %{http_code}",
        ] + arguments)
        guard let split = run.output.range(of: marker, options: .backwards) else { return (run, nil) }
        let trailer = run.output[split.upperBound...].split(separator: " ")
        let before = String(run.output[..<split.lowerBound])
        // Headers (on stderr, merged) come before the body; the body is what follows the blank line.
        let parts = before.components(separatedBy: "\r\n\r\n")
        let headers = parts.first ?? ""
        let retryAfter = headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("retry-after:") }
            .map { String($0.drop { $0 != ":" }.dropFirst()).trimmingCharacters(in: .whitespaces) }
        guard trailer.count == 2 else { return (run, nil) }
        return (run, Answer(version: String(trailer[0]), status: String(trailer[1]),
                            body: parts.dropFirst().joined(separator: "\r\n\r\n"), retryAfter: retryAfter))
    }

    /// The same request over HTTP/1.1 and HTTP/2: both answers.
    static func both(
        _ base: String, _ h2: String, _ extra: [String], second: [String]? = nil, path: String
    ) async throws -> (Answer, Answer) {
        let one = try #require(try await curl(["--http1.1"] + extra + [base + path]).answer)
        let two = try #require(try await curl([h2] + (second ?? extra) + [base + path]).answer)
        return (one, two)
    }

    @Test func h2ByALPNAnswersPushesExactlyAsHTTP1() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-h2-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ca = try await TestCertificateAuthority.make("depot", in: directory)
        let server = try await ca.issue("push.example")
        let tls = try ListenerTLS(TLSFiles(certificateFile: server.certificate, keyFile: server.key, section: "ingest.tls"))
        try await PushServerHarness.with(highWaterJobs: 2, tls: tls) { harness in
            let base = "https://127.0.0.1:\(harness.port)"
            let trust = ["--cacert", ca.certificate]
            let json = trust + ["-H", "Content-Type: application/json"]
            try await Self.expectSameAnswers(base: base, h2: "--http2", trust: trust, json: json, harness: harness)
        }
    }

    @Test func h2cWithPriorKnowledgeAnswersPushesExactlyAsHTTP1() async throws {
        try await PushServerHarness.with(highWaterJobs: 2, http2: ListenerHTTP2(cleartext: true)) { harness in
            try await Self.expectSameAnswers(
                base: "http://127.0.0.1:\(harness.port)", h2: "--http2-prior-knowledge", trust: [], json: ["-H", "Content-Type: application/json"],
                harness: harness)
        }
    }

    @Test func withoutH2cAPriorKnowledgeClientGetsNoHTTP2() async throws {
        try await PushServerHarness.with { harness in
            let h2 = try await Self.curl(["--http2-prior-knowledge", "http://127.0.0.1:\(harness.port)" + "/healthz"])
            #expect(h2.answer?.status != "200", "h2c is off by default: \(h2.run.output)")
            let one = try #require(try await Self.curl(["http://127.0.0.1:\(harness.port)" + "/healthz"]).answer)
            #expect(one.version == "1.1" && one.status == "200")
        }
    }

    /// Accepted, malformed, oversized and refused (journal full: 429 with Retry-After) pushes, and
    /// `/healthz`, answered alike over both protocols.
    static func expectSameAnswers(base: String, h2: String, trust: [String], json: [String], harness: PushServerHarness) async throws {
        let healthz = try await both(base, h2, trust, path: "/healthz")
        #expect(healthz.0.version == "1.1" && healthz.1.version == "2", "\(healthz)")
        #expect(healthz.0.status == "200" && healthz.1.status == "200" && healthz.0.body == healthz.1.body)

        let accepted = try await both(base, h2, json + ["--data", push(1)], second: json + ["--data", push(2)], path: "/api/push")
        #expect(accepted.0.status == "200" && accepted.1.version == "2")
        #expect(accepted.0.body == accepted.1.body && accepted.0.body.contains("\"success\":\"ok\""), "\(accepted)")
        #expect(try harness.jobs().count == 2)

        let malformed = try await both(base, h2, json + ["--data", "{\"notifications\":"], path: "/api/push")
        #expect(malformed.0.status == "400" && malformed.1.status == "400", "\(malformed)")
        #expect(malformed.0.body == malformed.1.body && !malformed.1.body.isEmpty)

        let full = try await both(base, h2, json + ["--data", push(3)], path: "/api/push")
        #expect(full.0.status == "429" && full.1.status == "429", "\(full)")
        #expect(full.0.retryAfter != nil && full.0.retryAfter == full.1.retryAfter, "\(full)")
        #expect(full.0.body == full.1.body)

        // Over the body limit: HTTP/1.1 closes the connection after the answer; HTTP/2 resets the
        // stream only, and the 413 carries no connection-specific header (RFC 9113 §8.2.2).
        let large = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-large-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: large) }
        try Data(repeating: UInt8(ascii: "x"), count: PushServer.settings().maximumBodyBytes + 1).write(to: URL(fileURLWithPath: large))
        let oversized = try await both(base, h2, json + ["--data-binary", "@" + large], path: "/api/push")
        #expect(oversized.0.status == "413" && oversized.1.status == "413", "\(oversized)")
        #expect(oversized.0.body == oversized.1.body)
    }
}
