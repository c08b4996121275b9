import Foundation
import LocalHTTP
import PushIngest
import Testing
import TestHarnesses
import TestKit
import CurlHTTP
import InMemoryLogging
import Logging

/// TLS on the push listener, against a throwaway CA made by the test, with curl and `openssl
/// s_client` as the peers (issue 37): HTTPS, TLS 1.1 and plain HTTP refused with the listener alive,
/// client certificates, and reload without dropping open connections.
@Suite(.timeLimit(.minutes(3))) struct ListenerTLSTests {
    static let push = #"{"notifications":[{"tokens":["t"],"platform":2,"data":{"order_id":7}}]}"#

    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-tls-\(UUID().uuidString)").path
    }

    /// curl against the listener; its status line's code, or the failure it printed.
    static func curl(_ arguments: [String]) async throws -> ToolRun {
        try await runTool("/usr/bin/env", ["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}"] + arguments)
    }

    static func metric(_ harness: PushServerHarness, _ name: String) async throws -> Double {
        let text = try await harness.get("/metrics").text
        return try #require(prometheusSamples(text))[name] ?? 0
    }

    /// The subject a new handshake is shown.
    static func subject(port: Int, ca: String) async throws -> String {
        let run = try await runTool("/usr/bin/env", ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", ca], input: "")
        return run.output.split(separator: "\n").first { $0.hasPrefix("subject=") }.map(String.init) ?? run.output
    }

    @Test func httpsIsServedAndPlainHTTPAndTLS11AreRefusedWithTheListenerAlive() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ca = try await TestCertificateAuthority.make("depot", in: directory)
        let server = try await ca.issue("push.example")
        let tls = try ListenerTLS(TLSFiles(certificateFile: server.certificate, keyFile: server.key, section: "ingest.tls"))
        try await PushServerHarness.with(tls: tls) { harness in
            let base = "https://127.0.0.1:\(harness.port)"
            let healthz = try await Self.curl(["--cacert", ca.certificate, base + "/healthz"])
            #expect(healthz.status == 0 && healthz.output == "200", "\(healthz.output)")
            let pushed = try await Self.curl(["--cacert", ca.certificate, "-H", "Content-Type: application/json",
                                             "--data", Self.push, base + "/api/push"])
            #expect(pushed.output == "200", "\(pushed.output)")
            #expect(try harness.jobs().count == 1)

            let plain = try await Self.curl(["http://127.0.0.1:\(harness.port)/healthz"])
            #expect(plain.status != 0 && !plain.output.hasPrefix("200"), "plain HTTP on a TLS port: \(plain.output)")
            let old = try await runTool("/usr/bin/env", ["openssl", "s_client", "-connect", "127.0.0.1:\(harness.port)",
                                                         "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"], input: "")
            #expect(!old.output.contains("BEGIN CERTIFICATE") && old.output.contains("Cipher is (NONE)"), "\(old.output)")
            let verified = try await runTool("/usr/bin/env", ["openssl", "s_client", "-connect", "127.0.0.1:\(harness.port)",
                                                              "-CAfile", ca.certificate, "-tls1_2"], input: "")
            #expect(verified.output.contains("Verify return code: 0 (ok)"), "TLS 1.2 is served: \(verified.output)")

            // Still serving after both refusals, and each was counted.
            #expect(try await Self.curl(["--cacert", ca.certificate, base + "/healthz"]).output == "200")
            let metrics = try await harness.loop.perform(.init(url: base + "/metrics", tls: .init(caFile: ca.certificate))).text
            let samples = try #require(prometheusSamples(metrics))
            #expect((samples[#"orderlive_connections_closed_total{listener="push",reason="tls_handshake"}"#] ?? 0) >= 2, "\(metrics)")
            let expiry = try await TestCertificateAuthority.expiry(of: server.certificate)
            #expect(samples[#"orderlive_tls_certificate_expiry_timestamp_seconds{listener="push"}"#] == expiry)
        }
    }

    @Test func aClientCertificateSignedByTheConfiguredCAIsRequired() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ca = try await TestCertificateAuthority.make("depot", in: directory)
        let stranger = try await TestCertificateAuthority.make("stranger", in: directory)
        let server = try await ca.issue("push.example", rsa: true)  // an RSA key, the other kind
        let backend = try await ca.issue("backend", client: true)
        let impostor = try await stranger.issue("backend", client: true)
        let tls = try ListenerTLS(TLSFiles(certificateFile: server.certificate, keyFile: server.key,
                                           clientCAFile: ca.certificate, section: "ingest.tls"))
        try await PushServerHarness.with(tls: tls) { harness in
            let url = "https://127.0.0.1:\(harness.port)/healthz"
            let accepted = try await Self.curl(["--cacert", ca.certificate, "--cert", backend.certificate, "--key", backend.key, url])
            #expect(accepted.output == "200", "the CA's client certificate: \(accepted.output)")
            let without = try await Self.curl(["--cacert", ca.certificate, url])
            #expect(without.status != 0 && !without.output.hasPrefix("200"), "no client certificate: \(without.output)")
            let other = try await Self.curl(["--cacert", ca.certificate, "--cert", impostor.certificate, "--key", impostor.key, url])
            #expect(other.status != 0 && !other.output.hasPrefix("200"), "another CA's certificate: \(other.output)")
            #expect(harness.server.admission.current <= 1)
        }
    }

    @Test func reloadSwapsTheCertificateForNewHandshakesAndKeepsOpenConnections() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ca = try await TestCertificateAuthority.make("depot", in: directory)
        let first = try await ca.issue("first")
        let second = try await ca.issue("second", days: 10)
        let (certificate, key) = (directory + "/live.pem", directory + "/live.key")
        try FileManager.default.copyItem(atPath: first.certificate, toPath: certificate)
        try FileManager.default.copyItem(atPath: first.key, toPath: key)
        let tls = try ListenerTLS(TLSFiles(certificateFile: certificate, keyFile: key, section: "ingest.tls"))
        try await PushServerHarness.with(tls: tls) { harness in
            #expect(try await Self.subject(port: harness.port, ca: ca.certificate).contains("CN = first"))
            let open = try TLSClient(port: harness.port, caFile: ca.certificate)
            defer { open.close() }
            #expect(await open.get("/healthz", until: #"{"status":"ok"}"#) != nil)

            for (source, target) in [(second.certificate, certificate), (second.key, key)] {
                try FileManager.default.removeItem(atPath: target)
                try FileManager.default.copyItem(atPath: source, toPath: target)
            }
            #expect(harness.server.reloadTLS())
            #expect(try await Self.subject(port: harness.port, ca: ca.certificate).contains("CN = second"), "new handshakes")
            #expect(await open.get("/healthz", until: #"{"status":"ok"}"#) != nil, "the connection opened before still works")
            let expiry = try await TestCertificateAuthority.expiry(of: second.certificate)
            let base = "https://127.0.0.1:\(harness.port)"
            let metrics = { try await harness.loop.perform(.init(url: base + "/metrics", tls: .init(caFile: ca.certificate))).text }
            #expect(try #require(prometheusSamples(try await metrics()))[
                #"orderlive_tls_certificate_expiry_timestamp_seconds{listener="push"}"#] == expiry)

            // A broken file: the certificate in use stays, the error names the key and the path.
            try "not a certificate".write(toFile: certificate, atomically: true, encoding: .utf8)
            #expect(!harness.server.reloadTLS())
            #expect(try await Self.subject(port: harness.port, ca: ca.certificate).contains("CN = second"))
            let failed = try #require(harness.logs.entries("the TLS files did not load; the listener keeps the certificate it has").first)
            #expect(failed.level == .error)
            #expect(failed.metadata["tls.key"] == "ingest.tls.certificate_file" && failed.metadata["tls.path"] == "\(certificate)")
            let samples = try #require(prometheusSamples(try await metrics()))
            #expect(samples[#"orderlive_tls_reload_failures_total{listener="push"}"#] == 1)
            #expect(samples[#"orderlive_tls_certificate_expiry_timestamp_seconds{listener="push"}"#] == expiry)
        }
    }

    @Test func filesThatDoNotLoadNameTheirKeyAndPath() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ca = try await TestCertificateAuthority.make("depot", in: directory)
        let one = try await ca.issue("one")
        let two = try await ca.issue("two")
        let garbage = directory + "/garbage.pem"
        try "-----BEGIN CERTIFICATE-----\nnope\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        func failure(_ files: TLSFiles) -> TLSLoadError? {
            do { _ = try ListenerTLS(files); return nil } catch { return error }
        }
        let badCertificate = failure(TLSFiles(certificateFile: garbage, keyFile: one.key, section: "api.tls"))
        #expect(badCertificate?.key == "api.tls.certificate_file" && badCertificate?.path == garbage)
        let badKey = failure(TLSFiles(certificateFile: one.certificate, keyFile: garbage, section: "api.tls"))
        #expect(badKey?.key == "api.tls.key_file")
        let mismatched = failure(TLSFiles(certificateFile: one.certificate, keyFile: two.key, section: "ingest.tls"))
        #expect(mismatched?.key == "ingest.tls.key_file", "a key that is not the certificate's: \(String(describing: mismatched))")
        let badCA = failure(TLSFiles(certificateFile: one.certificate, keyFile: one.key, clientCAFile: garbage, section: "ingest.tls"))
        #expect(badCA?.key == "ingest.tls.client_ca_file")
    }
}
