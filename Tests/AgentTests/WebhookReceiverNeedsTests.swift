import AsyncSignals
import CurlHTTP
import Foundation
import TestHarnesses
import TestKit
import Testing

/// What real receivers need (issue 59): extra headers, one read from a file; a client certificate for
/// a receiver that requires one; the configured proxy (and its bypass list), never the environment's;
/// and no endpoint at a link-local or cloud metadata address.
@Suite(.timeLimit(.minutes(5))) struct WebhookReceiverNeedsTests {
    /// A recording HTTP(S) server in Python's standard library: every request as a JSON line (method,
    /// target, headers, the client certificate's subject) in `log`; TLS requiring a client certificate
    /// signed by the CA when given one. Serves as a receiver, and as a proxy (a forward proxy is sent
    /// the absolute URL as its request target) that answers 200 itself.
    static let recorder = #"""
    import http.server, json, ssl, sys
    log, port_file = sys.argv[1], sys.argv[2]
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            peer = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
            subject = dict(x[0] for x in peer["subject"]).get("commonName") if peer else None
            with open(log, "a") as out:
                out.write(json.dumps({"method": "POST", "target": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                      "client": subject}) + "\n")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        def do_CONNECT(self):
            with open(log, "a") as out:
                out.write(json.dumps({"method": "CONNECT", "target": self.path, "headers": {}, "client": None}) + "\n")
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()
        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if len(sys.argv) > 3:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[3], sys.argv[4])
        context.load_verify_locations(sys.argv[5])
        context.verify_mode = ssl.CERT_REQUIRED
        server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()
    """#

    /// A running recorder: its port and the requests it recorded.
    final class Recorder: Sendable {
        let child: ChildProcess
        let port: Int
        let log: String

        init(in directory: String, name: String, tls: [String] = []) async throws {
            log = directory + "/\(name).log"
            let portFile = directory + "/\(name).port"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            child = try ChildProcess(
                "/usr/bin/env", ["python3", "-c", WebhookReceiverNeedsTests.recorder, log, portFile] + tls, output: .null, error: .null)
            var port = 0
            _ = await eventually(within: .seconds(20)) {
                port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) } ?? 0
                return port > 0
            }
            guard port > 0 else { throw RecorderFailure(directory: directory) }
            self.port = port
        }

        var requests: [[String: Any]] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        func stop() async {
            child.signal(SIGTERM)
            _ = child.waitUntilExit()
        }
    }

    static func header(_ name: String, of request: [String: Any]) -> String? { (request["headers"] as? [String: String])?[name] }

    @Test func headersAHeaderFileAndAClientCertificateReachAReceiverThatRequiresIt() async throws {
        let root = WebhookThroughputTests.root("orderlive-hookmtls")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let authority = try await TestCertificateAuthority.make("hooks", in: root + "/pki")
        let server = try await authority.issue("receiver")
        let client = try await authority.issue("orderlive-agent", client: true)
        let receiver = try await Recorder(in: root, name: "receiver", tls: [server.certificate, server.key, authority.certificate])
        let scene = try WebhookThroughputTests.Scene(root, extra: ["ORDERLIVE_WEBHOOKS_CA_FILE": authority.certificate])
        let keyFile = root + "/api-key"
        try "key-4f1d9a\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        let url = "https://127.0.0.1:\(receiver.port)/hook"
        _ = try await scene.add(url, ["--header", "X-Tenant=north", "--header-file", "X-Api-Key=\(keyFile)",
                                      "--client-certificate", client.certificate, "--client-key", client.key])
        let (listed, json) = try await StoreFileCommandsTests.run(["webhooks", "list", "--json"], in: scene.state)
        #expect(listed == 0 && json.contains(#""X-Api-Key":"(from \#(keyFile))""#) && json.contains(#""X-Tenant":"(set)""#), "\(json)")
        #expect(!json.contains("north") && !json.contains("key-4f1d9a"), "header values are never listed")
        let (agent, pushURL) = try await scene.start()
        try await scene.push([(1, 1), (2, 1)], to: pushURL)
        #expect(await eventually(within: .seconds(20)) { receiver.requests.count >= 2 })
        let first = try #require(receiver.requests.first)
        #expect(Self.header("x-tenant", of: first) == "north" && Self.header("x-api-key", of: first) == "key-4f1d9a")
        #expect(first["client"] as? String == "orderlive-agent", "the client certificate was presented: \(first)")
        #expect(Self.header("webhook-signature", of: first)?.hasPrefix("v1,") == true)
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
        #expect(!agent.logs.raw.contains { $0.contains("key-4f1d9a") }, "a header's value is never logged")
        await receiver.stop()
        await scene.loop.shutdown()
    }

    @Test func theConfiguredProxyIsUsedItsBypassListIsHonouredAndTheEnvironmentsIsNot() async throws {
        let root = WebhookThroughputTests.root("orderlive-hookproxy")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let proxy = try await Recorder(in: root, name: "proxy")
        let direct = try await Recorder(in: root, name: "direct")
        // The environment names a proxy that does not exist: libcurl would use it; orderlive must not.
        let scene = try WebhookThroughputTests.Scene(root, extra: [
            "ORDERLIVE_WEBHOOKS_PROXY": "http://127.0.0.1:\(proxy.port)", "ORDERLIVE_WEBHOOKS_NO_PROXY": "127.0.0.1",
            "http_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "no_proxy": "",
        ])
        // A name only the proxy can reach, the bypassed loopback receiver, and an https endpoint, whose
        // requests ask the proxy for a tunnel (this proxy refuses it: counted, then retried).
        _ = try await scene.add("http://orders-receiver.invalid/hook", [])
        _ = try await scene.add("http://127.0.0.1:\(direct.port)/hook", [])
        _ = try await scene.add("https://secure-receiver.invalid/hook", [])
        let (agent, pushURL) = try await scene.start()
        try await scene.push([(1, 1)], to: pushURL)
        #expect(await eventually(within: .seconds(20)) {
            proxy.requests.count >= 2 && direct.requests.count >= 1
                && proxy.requests.contains { $0["method"] as? String == "CONNECT" }
        },
                "\(proxy.requests) \(direct.requests) \(agent.logs.raw.filter { $0.contains("webhook") })")
        let proxied = try #require(proxy.requests.first { $0["method"] as? String == "POST" })
        #expect(proxy.requests.contains { $0["method"] as? String == "CONNECT" && $0["target"] as? String == "secure-receiver.invalid:443" },
                "\(proxy.requests)")
        #expect(proxied["target"] as? String == "http://orders-receiver.invalid/hook", "sent through the proxy: \(proxied)")
        #expect(Self.header("webhook-id", of: proxied) != nil)
        #expect(proxy.requests.allSatisfy { ($0["target"] as? String)?.contains("127.0.0.1") == false }, "the bypass list skips the proxy")
        #expect(direct.requests.first?["target"] as? String == "/hook")
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
        await proxy.stop()
        await direct.stop()
        await scene.loop.shutdown()
    }

    @Test func anEndpointAtAMetadataAddressIsRefusedUnlessAllowed() async throws {
        let root = WebhookThroughputTests.root("orderlive-hookssrf")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scene = try WebhookThroughputTests.Scene(root)
        for url in ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/hook", "http://[::ffff:169.254.169.254]/hook"] {
            let (status, said) = try await StoreFileCommandsTests.run(
                ["webhooks", "add", url, "--secret-file", scene.secretFile], in: scene.state)
            #expect(status != 0 && said.contains("link-local or cloud metadata address") && said.contains("webhooks.allow_private"), "\(said)")
        }
        let (listed, json) = try await StoreFileCommandsTests.run(["webhooks", "list", "--json"], in: scene.state)
        #expect(listed == 0 && !json.contains("169.254"), "nothing was added: \(json)")
        let (allowed, said) = try await StoreFileCommandsTests.run(
            ["webhooks", "add", "http://169.254.169.254/hook", "--secret-file", scene.secretFile], in: scene.state,
            environment: ["ORDERLIVE_WEBHOOKS_ALLOW_PRIVATE": "169.254.169.254/32"])
        #expect(allowed == 0, "\(said)")
        // Checked again at every connection: an agent whose configuration does not allow it refuses to
        // connect, and says why in the endpoint's last error (a name resolving there later is caught alike).
        let (agent, pushURL) = try await scene.start()
        try await scene.push([(1, 1)], to: pushURL)
        #expect(await eventually(within: .seconds(20)) {
            try await StoreFileCommandsTests.run(["webhooks", "list", "--json"], in: scene.state).output
                .contains("refused to connect to 169.254.169.254: a link-local or cloud metadata address; list it in webhooks.allow_private")
        })
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
        // Loopback and private ranges stay allowed.
        let (loopback, words) = try await StoreFileCommandsTests.run(
            ["webhooks", "add", "http://127.0.0.1:1/hook", "--secret-file", scene.secretFile], in: scene.state)
        #expect(loopback == 0, "\(words)")
        // `update` changes what it names and keeps the rest; a bad value changes nothing and says why.
        let loopbackID = try #require(words.split(separator: "\n").first.map(String.init))
        let (updated, answer) = try await StoreFileCommandsTests.run(
            ["webhooks", "update", loopbackID, "--max-in-flight", "4", "--header", "X-Tenant=north"], in: scene.state)
        #expect(updated == 0 && answer.contains("4 in flight, headers X-Tenant"), "\(answer)")
        let (refused, why) = try await StoreFileCommandsTests.run(["webhooks", "update", loopbackID, "--batch-size", "0"], in: scene.state)
        #expect(refused != 0 && why.contains("--batch-size takes a whole number from 1 to 1000, not '0'"), "\(why)")
        let (_, after) = try await StoreFileCommandsTests.run(["webhooks", "list", "--json"], in: scene.state)
        #expect(after.contains(#""max_in_flight":4,"batch_size":1"#) && after.contains(#""headers":{"X-Tenant":"(set)"}"#), "\(after)")
        let (_, table) = try await StoreFileCommandsTests.run(["webhooks", "list"], in: scene.state)
        #expect(table.contains("DELIVERY") && table.contains("4 in flight") && !table.contains("north"), "\(table)")
        await scene.loop.shutdown()
    }
}

/// The recording server did not write its port.
struct RecorderFailure: Error, CustomStringConvertible {
    let directory: String
    var description: String { "the recording server in \(directory) did not start" }
}
