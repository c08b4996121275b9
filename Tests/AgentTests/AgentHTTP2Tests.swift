import CurlHTTP
import Foundation
import Testing
import TestHarnesses
import TestKit

/// HTTP/2 as an operator turns it on in the real executable (issue 57): `h2` by ALPN on both TLS
/// listeners with no key set, and `h2c` on a plain listener only where `*.http2_cleartext` says so.
@Suite(.serialized, .timeLimit(.minutes(5))) struct AgentHTTP2Tests {
    /// `%{http_version}` and the status curl reports for `arguments`.
    static func version(_ arguments: [String]) async throws -> String {
        try await runTool("/usr/bin/env", ["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_version} %{http_code}"]
                          + arguments).output
    }

    static func port(_ agent: RunningAgent, _ message: String, _ key: String) async throws -> String {
        let line = try #require(await agent.logs.wait(message: message)?.line)
        return try #require(line[key]?.split(separator: ":").last.map(String.init))
    }

    @Test func bothTLSListenersOfferH2AndH2cFollowsItsKey() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-agent-h2-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ca = try await TestCertificateAuthority.make("depot", in: directory)
        let server = try await ca.issue("agent")
        let base = [
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:1", "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0",
            "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
        ]
        let tls = try RunningAgent([], environment: base.merging([
            "ORDERLIVE_STORE_STATE_DIR": directory + "/tls",
            "ORDERLIVE_INGEST_TLS_CERTIFICATE_FILE": server.certificate, "ORDERLIVE_INGEST_TLS_KEY_FILE": server.key,
            "ORDERLIVE_API_TLS_CERTIFICATE_FILE": server.certificate, "ORDERLIVE_API_TLS_KEY_FILE": server.key,
        ]) { $1 })
        let pushTLS = try await Self.port(tls, "push endpoint listening", "push.listen")
        let apiTLS = try await Self.port(tls, "orders API listening", "api.listen")
        for port in [pushTLS, apiTLS] {
            #expect(try await Self.version(["--http2", "--cacert", ca.certificate, "https://127.0.0.1:\(port)/healthz"]) == "2 200")
            #expect(try await Self.version(["--http1.1", "--cacert", ca.certificate, "https://127.0.0.1:\(port)/healthz"]) == "1.1 200")
        }
        tls.child.signal(SIGTERM)
        #expect(await tls.finish() == 0)

        let plain = try RunningAgent([], environment: base.merging([
            "ORDERLIVE_STORE_STATE_DIR": directory + "/plain", "ORDERLIVE_API_HTTP2_CLEARTEXT": "true",
        ]) { $1 })
        let push = try await Self.port(plain, "push endpoint listening", "push.listen")
        let api = try await Self.port(plain, "orders API listening", "api.listen")
        #expect(try await Self.version(["--http2-prior-knowledge", "http://127.0.0.1:\(api)/healthz"]) == "2 200")
        #expect(try await Self.version(["http://127.0.0.1:\(api)/healthz"]) == "1.1 200")
        #expect(try await Self.version(["--http2-prior-knowledge", "http://127.0.0.1:\(push)/healthz"]).hasSuffix("000"),
                "ingest.http2_cleartext is off")
        plain.child.signal(SIGTERM)
        #expect(await plain.finish() == 0)
    }

    /// SIGTERM with feeds open on HTTP/2 streams: the agent sends GOAWAY, tells each stream, every
    /// feed's body ends, and the agent exits 0 within its 10 s shutdown budget.
    @Test func sigtermEndsHTTP2FeedsAndTheAgentExits() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-agent-h2stop-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ca = try await TestCertificateAuthority.make("depot", in: directory)
        let server = try await ca.issue("agent")
        let agent = try RunningAgent([], environment: [
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:1", "ORDERLIVE_INGEST_LISTEN": "", "ORDERLIVE_API_LISTEN": "127.0.0.1:0",
            "ORDERLIVE_LOG_FORMAT": "json", "ORDERLIVE_STORE_STATE_DIR": directory + "/state",
            "ORDERLIVE_API_TLS_CERTIFICATE_FILE": server.certificate, "ORDERLIVE_API_TLS_KEY_FILE": server.key,
        ])
        let port = try await Self.port(agent, "orders API listening", "api.listen")
        let loop = try CurlLoop(logger: quietLogger)
        var feeds: [FeedReader] = []
        for _ in 0..<3 {
            let feed = try await FeedReader(loop: loop, url: "https://127.0.0.1:\(port)/v1/orders/stream", tls: TLSOptions(caFile: ca.certificate))
            _ = try await feed.events(through: "ready")
            feeds.append(feed)
        }
        let clock = ContinuousClock()
        let stopped = clock.now
        agent.child.signal(SIGTERM)
        for feed in feeds {
            while try await feed.next(within: .seconds(15)) != nil {}
            #expect(feed.hasEnded)
        }
        #expect(await agent.finish() == 0)
        #expect(clock.now - stopped < .seconds(10), "the agent took \(clock.now - stopped) to stop")
        await loop.shutdown()
    }
}
