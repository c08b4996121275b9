import CurlHTTP
import Foundation
import Testing
import TestHarnesses
import TestKit

/// TLS as an operator meets it on the real executable (issue 37): keys in the configuration, a file
/// that does not load stopping the start with the key and path, `kill -HUP` swapping the certificate
/// on both listeners while the agent runs, and a client certificate that lets the orders API listen
/// beyond loopback without tokens.
@Suite(.serialized, .timeLimit(.minutes(5))) struct AgentTLSTests {
    struct Stand {
        let directory: String
        let ca: TestCertificateAuthority
        let certificate: String
        let key: String

        static func make() async throws -> Stand {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-agent-tls-\(UUID().uuidString)").path
            let ca = try await TestCertificateAuthority.make("depot", in: directory)
            let first = try await ca.issue("first")
            let (certificate, key) = (directory + "/live.pem", directory + "/live.key")
            try FileManager.default.copyItem(atPath: first.certificate, toPath: certificate)
            try FileManager.default.copyItem(atPath: first.key, toPath: key)
            return Stand(directory: directory, ca: ca, certificate: certificate, key: key)
        }

        func environment(_ extra: [String: String] = [:]) -> [String: String] {
            [
                "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:1", "ORDERLIVE_STORE_STATE_DIR": directory + "/state",
                "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
                "ORDERLIVE_INGEST_TLS_CERTIFICATE_FILE": certificate, "ORDERLIVE_INGEST_TLS_KEY_FILE": key,
                "ORDERLIVE_API_TLS_CERTIFICATE_FILE": certificate, "ORDERLIVE_API_TLS_KEY_FILE": key,
            ].merging(extra) { $1 }
        }

        /// The CN a new handshake with 127.0.0.1:`port` is shown.
        func subject(_ port: String) async throws -> String {
            let run = try await runTool("/usr/bin/env", ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", ca.certificate],
                                        input: "")
            return run.output.split(separator: "\n").first { $0.hasPrefix("subject=") }.map(String.init) ?? run.output
        }
    }

    @Test func sighupSwapsBothListenersCertificatesWhileTheAgentRuns() async throws {
        let stand = try await Stand.make()
        defer { try? FileManager.default.removeItem(atPath: stand.directory) }
        let agent = try RunningAgent([], environment: stand.environment())
        let push = try #require(await agent.logs.wait(message: "push endpoint listening")?.line)
        let api = try #require(await agent.logs.wait(message: "orders API listening")?.line)
        #expect(push["push.tls"] == "true" && api["api.tls"] == "true")
        let pushPort = try #require(push["push.listen"]?.split(separator: ":").last.map(String.init))
        let apiPort = try #require(api["api.listen"]?.split(separator: ":").last.map(String.init))
        #expect(try await stand.subject(pushPort).contains("CN = first"))

        let second = try await stand.ca.issue("second")
        for (source, target) in [(second.certificate, stand.certificate), (second.key, stand.key)] {
            try FileManager.default.removeItem(atPath: target)
            try FileManager.default.copyItem(atPath: source, toPath: target)
        }
        let mark = agent.logs.count
        agent.child.signal(SIGHUP)
        #expect(await agent.logs.wait(from: mark, message: "TLS certificate and key reloaded; new connections use them",
                                      ["tls.listener": "push"]) != nil)
        #expect(await agent.logs.wait(from: mark, message: "TLS certificate and key reloaded; new connections use them",
                                      ["tls.listener": "api"]) != nil)
        #expect(try await stand.subject(pushPort).contains("CN = second"))
        #expect(try await stand.subject(apiPort).contains("CN = second"))

        let loop = try CurlLoop(logger: quietLogger)
        let healthz = try await loop.perform(HTTPRequest(url: "https://127.0.0.1:\(pushPort)/healthz", tls: .init(caFile: stand.ca.certificate)))
        #expect(healthz.status == 200)
        await loop.shutdown()
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0, "SIGHUP reloads; it does not stop the agent")
    }

    @Test func aTLSFileThatDoesNotLoadStopsTheStartNamingTheKeyAndThePath() async throws {
        let stand = try await Stand.make()
        defer { try? FileManager.default.removeItem(atPath: stand.directory) }
        let broken = stand.directory + "/broken.key"
        try "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n".write(toFile: broken, atomically: true, encoding: .utf8)
        let agent = try RunningAgent([], environment: stand.environment(["ORDERLIVE_API_TLS_KEY_FILE": broken]))
        #expect(await agent.finish() == 1)
        let said = agent.logs.raw.joined(separator: "\n")
        #expect(said.contains("orderlive: configuration: 'api.tls.key_file': \(broken): cannot read a PEM private key"), "\(said)")
        #expect(!said.contains("push endpoint listening"), "nothing listened")
    }

    @Test func aRequiredClientCertificateLetsTheOrdersAPIListenBeyondLoopbackWithoutTokens() async throws {
        let stand = try await Stand.make()
        defer { try? FileManager.default.removeItem(atPath: stand.directory) }
        let wide = ["ORDERLIVE_API_LISTEN": "0.0.0.0:0", "ORDERLIVE_API_AUTH": "none"]
        let refused = try RunningAgent([], environment: stand.environment(wide))
        #expect(await refused.finish() == 1)
        #expect(refused.logs.raw.joined().contains("require client certificates with api.tls.client_ca_file"))

        let client = try await stand.ca.issue("dispatch-screen", client: true)
        let agent = try RunningAgent([], environment: stand.environment(wide.merging(["ORDERLIVE_API_TLS_CLIENT_CA_FILE": stand.ca.certificate]) { $1 }))
        let api = try #require(await agent.logs.wait(message: "orders API listening")?.line["api.listen"])
        let port = try #require(api.split(separator: ":").last.map(String.init))
        let url = "https://127.0.0.1:\(port)/v1/orders"
        let read = try await runTool("/usr/bin/env", ["curl", "-sS", "--max-time", "10", "--cacert", stand.ca.certificate,
                                                      "--cert", client.certificate, "--key", client.key, url])
        #expect(read.output.hasPrefix(#"{"seq":"#), "\(read.output)")
        let anonymous = try await runTool("/usr/bin/env", ["curl", "-sS", "--max-time", "10", "--cacert", stand.ca.certificate, url])
        #expect(anonymous.status != 0 && !anonymous.output.contains(#""orders""#), "\(anonymous.output)")
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
    }
}
