import Agent
import CheckedInput
import Foundation
import Testing
import LocalHTTP
import Logging
import SQLiteStore

@Suite(.timeLimit(.minutes(5))) struct ConfigurationTests {
    private let home = ["HOME": "/home/courier"]

    private func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-\(UUID().uuidString).yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func load(_ text: String?, environment: [String: String] = [:]) async throws -> OrderliveConfiguration {
        let path = try text.map(file)
        defer { if let path { try? FileManager.default.removeItem(atPath: path) } }
        return try await ConfigurationLoader.load(file: path, environment: home.merging(environment) { $1 },
                                                  currentDirectory: "/nonexistent")
    }

    private func failure(_ text: String?, environment: [String: String] = [:]) async -> String {
        do {
            _ = try await load(text, environment: environment)
            return "no error"
        } catch let error as ConfigurationError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func defaultsWithoutAFile() async throws {
        var expected = OrderliveConfiguration()
        expected.store.stateDirectory = "/home/courier/.local/state/orderlive"
        #expect(try await load(nil) == expected)
    }

    @Test func theDocumentedFileHoldsExactlyTheDefaults() async throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Config/orderlive.yaml").path
        var loaded = try await ConfigurationLoader.load(file: path, environment: home, currentDirectory: "/nonexistent")
        loaded.sourceFile = nil
        var expected = OrderliveConfiguration()
        expected.store.stateDirectory = "/home/courier/.local/state/orderlive"
        #expect(loaded == expected)
    }

    @Test func fileValuesAndEnvironmentOverrides() async throws {
        let configuration = try await load(
            """
            upstream:
              base_url: "https://orders.example.com/"
              connect_timeout_ms: 2500
            stream:
              initial_delay_ms: 0
            ingest:
              auth: standard-webhooks
            store:
              durability: full
            log:
              level: debug
            """,
            environment: ["ORDERLIVE_STREAM_MAX_DELAY_MS": "5000", "ORDERLIVE_UPSTREAM_CONNECT_TIMEOUT_MS": "700",
                          "XDG_STATE_HOME": "/var/xdg"])
        #expect(configuration.upstream.baseURL == "https://orders.example.com")
        #expect(configuration.upstream.connectTimeout == .milliseconds(700))
        #expect(configuration.stream.initialDelay == .zero)
        #expect(configuration.stream.maximumDelay == .milliseconds(5000))
        #expect(configuration.ingest.auth == .standardWebhooks)
        #expect(configuration.store.durability == .full)
        #expect(configuration.store.stateDirectory == "/var/xdg/orderlive")
        #expect(configuration.log.level == .debug)
    }

    @Test func badInputNamesTheKey() async {
        #expect(await failure("upstream:\n  base_ulr: x\n").contains("unknown key 'upstream.base_ulr'"))
        #expect(await failure("upstream:\n  base_ulr: x\n").contains("did you mean 'upstream.base_url'"))
        #expect(await failure("upstrem:\n  base_url: x\n").contains("unknown section 'upstrem'"))
        #expect(await failure("upstream:\n  connect_timeout_ms: soon\n").contains("'upstream.connect_timeout_ms' must be a whole number"))
        #expect(await failure("stream:\n  max_delay_ms: 0\n").contains("'stream.max_delay_ms' must be at least 1"))
        #expect(await failure("upstream:\n  base_url: ftp://x\n").contains("'upstream.base_url'"))
        #expect(await failure("ingest:\n  auth: basic\n").contains("'ingest.auth' must be one of none, bearer, standard-webhooks"))
        #expect(await failure("auth:\n  password_file: /nonexistent/secret\n").contains("'auth.password_file': cannot read"))
        #expect(await failure("ingest:\n  listen: nope\n").contains("'ingest.listen'"))
        #expect(await failure("log:\n  level: loud\n").contains("'log.level'"))
        #expect(await failure("api:\n  listen: nope\n").contains("'api.listen'"))
        #expect(await failure("api:\n  auth: basic\n").contains("'api.auth' must be one of none, bearer"))
        #expect(await failure("api:\n  heartbeat_s: 0\n").contains("'api.heartbeat_s' must be at least 1"))
        #expect(await failure("api:\n  subscriber_buffer: lots\n").contains("'api.subscriber_buffer'"))
        #expect(await failure("api:\n  tokens_file: /nonexistent/tokens\n").contains("'api.tokens_file': cannot read"))
        #expect(await failure(nil, environment: ["ORDERLIVE_API_MAX_SUBSCRIBERS": "0"]).contains("'api.max_subscribers'"))
        #expect(await failure("store:\n  backend: mysql\n").contains("'store.backend' must be one of sqlite, postgres"))
        #expect(await failure("store:\n  backend: postgres\n").contains("'store.postgres_url' is not set"))
        let withPassword = await failure("store:\n  postgres_url: postgres://me:hunter2-pw@db/orders\n")
        #expect(withPassword.contains("'store.postgres_url' holds a password") && !withPassword.contains("hunter2-pw"))
        #expect(await failure("store:\n  failover_s: 1\n").contains("'store.failover_s' must be at least 2"))
        #expect(await failure("store:\n  postgres_password_file: /nonexistent/pw\n").contains("'store.postgres_password_file': cannot read"))
        #expect(await failure("- a\n- b\n").contains("mapping"))
        #expect(await failure(nil, environment: ["ORDERLIVE_STREAM_MAX_DELAY_MS": "fast"]).contains("'stream.max_delay_ms'"))
        #expect(await failure(nil, environment: ["ORDERLIVE_UPSTREAM_BASE_ULR": "x"])
            .contains("unknown environment variable ORDERLIVE_UPSTREAM_BASE_ULR"))
        let missing = await failure(nil, environment: [:])
        #expect(missing == "no error")
    }

    @Test func listenerTLSAndAllowListsReadFromTheFileGroupAndTheEnvironment() async throws {
        let pem = try file("-----BEGIN CERTIFICATE-----\n")  // readable is all the loader checks; the agent loads it
        defer { try? FileManager.default.removeItem(atPath: pem) }
        let configuration = try await load(
            "ingest:\n  allow_from: \"10.0.0.0/8, 2001:db8::/32\"\n  tls:\n    certificate_file: \(pem)\n    key_file: \(pem)\n",
            environment: ["ORDERLIVE_API_TLS_CERTIFICATE_FILE": pem, "ORDERLIVE_API_TLS_KEY_FILE": pem,
                          "ORDERLIVE_API_TLS_CLIENT_CA_FILE": pem, "ORDERLIVE_API_MAX_CONNECTIONS": "300"])
        #expect(configuration.ingest.tls.certificateFile == pem && configuration.ingest.tls.keyFile == pem)
        #expect(configuration.ingest.tls.clientCAFile.isEmpty && configuration.ingest.tls.isEnabled)
        #expect(configuration.ingest.allowFrom.map(\.description) == ["10.0.0.0/8", "2001:db8::/32"])
        #expect(configuration.api.tls.clientCAFile == pem && configuration.api.maximumConnections == 300)
        #expect(!OrderliveConfiguration().ingest.tls.isEnabled, "TLS is off by default")
    }

    @Test func listenerTLSAndAllowListMistakesNameTheirKey() async throws {
        let pem = try file("x")
        defer { try? FileManager.default.removeItem(atPath: pem) }
        #expect(await failure("ingest:\n  tls:\n    certificate_file: \(pem)\n")
            == "'ingest.tls.certificate_file' is set but 'ingest.tls.key_file' is not: TLS needs both (PEM files)")
        #expect(await failure("api:\n  tls:\n    client_ca_file: \(pem)\n").contains("'api.tls.client_ca_file' is set but the listener has no TLS"))
        #expect(await failure("ingest:\n  tls:\n    key_file: /nonexistent/key.pem\n").contains("'ingest.tls.key_file': cannot read /nonexistent/key.pem"))
        #expect(await failure("ingest:\n  tls:\n    certfile: x\n").contains("unknown key 'ingest.tls.certfile'"))
        #expect(await failure("ingest:\n  tls: yes\n").contains("'ingest.tls'"))
        #expect(await failure("api:\n  allow_from: \"10.0.0.0/8, everyone\"\n")
            .contains("'api.allow_from': 'everyone' is not an IPv4 or IPv6 address or a CIDR range"))
        #expect(await failure(nil, environment: ["ORDERLIVE_INGEST_TLS_CERTFILE": "x"])
            .contains("unknown environment variable ORDERLIVE_INGEST_TLS_CERTFILE"))
    }

    @Test func missingExplicitFileIsAnError() async {
        do {
            _ = try await ConfigurationLoader.load(file: "/nonexistent/orderlive.yaml", environment: home)
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("/nonexistent/orderlive.yaml"))
        }
    }
}
