import CurlHTTP
import Foundation
import Testing
import TestHarnesses
import TestKit
import WebhookSigning

/// DESIGN §14, rotation without a restart, on the real executable: `kill -HUP` re-reads
/// `api.tokens_file` (a removed token's feed ends within 1 s, its session with it; a file that does
/// not load keeps the last good set, logged and counted) and `ingest.secret_file` (two secrets a
/// line each both verify, so the sender and the agent need not change at the same instant).
@Suite(.serialized, .timeLimit(.minutes(5))) struct CredentialRotationTests {
    static let oldSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let newSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"

    static func push(_ loop: CurlLoop, port: String, secret: String, id: String) async throws -> Int {
        let body = Array(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.status_changed","order_id":7}}]}"#.utf8)
        let now = Int64(Date().timeIntervalSince1970)
        let signature = try StandardWebhooks(secret: secret).sign(id: id, timestamp: now, body: body)
        return try await loop.perform(HTTPRequest(
            url: "http://127.0.0.1:\(port)/api/push", method: "POST",
            headers: ["Content-Type": "application/json", "webhook-id": id, "webhook-timestamp": "\(now)", "webhook-signature": signature],
            body: body)).status
    }

    static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test func sighupRotatesTokensAndPushSecretsWithoutARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-rotate-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (tokens, secrets) = (directory + "/tokens", directory + "/push-secret")
        try Self.write("leaked-token-5150 name=leaked stores=1\nkept-token-8086 name=kept\n", to: tokens)
        try Self.write(Self.oldSecret + "\n", to: secrets)
        let agent = try RunningAgent([], environment: [
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:1", "ORDERLIVE_STORE_STATE_DIR": directory + "/state",
            "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
            "ORDERLIVE_API_AUTH": "bearer", "ORDERLIVE_API_TOKENS_FILE": tokens,
            "ORDERLIVE_INGEST_AUTH": "standard-webhooks", "ORDERLIVE_INGEST_SECRET_FILE": secrets,
        ])
        let push = try #require(await agent.logs.wait(message: "push endpoint listening")?.line)
        let api = try #require(await agent.logs.wait(message: "orders API listening")?.line)
        let pushPort = try #require(push["push.listen"]?.split(separator: ":").last.map(String.init))
        let apiPort = try #require(api["api.listen"]?.split(separator: ":").last.map(String.init))
        let base = "http://127.0.0.1:\(apiPort)"
        let loop = try CurlLoop(logger: quietLogger)

        let leakedFeed = try await FeedReader(loop: loop, url: base + "/v1/orders/stream", headers: ["Authorization": "Bearer leaked-token-5150"])
        _ = try await leakedFeed.events(through: "ready")
        let session = try await loop.perform(HTTPRequest(url: base + "/v1/session", method: "POST", headers: ["Authorization": "Bearer leaked-token-5150"]))
        let cookie = try #require(session.head.headers["Set-Cookie"]?.split(separator: ";").first.map(String.init))
        #expect(try await loop.perform(HTTPRequest(url: base + "/v1/orders", headers: ["Cookie": cookie])).status == 200)
        #expect(try await Self.push(loop, port: pushPort, secret: Self.oldSecret, id: "msg-1") == 200)
        #expect(try await Self.push(loop, port: pushPort, secret: Self.newSecret, id: "msg-2") == 401)

        // The leaked token is removed; the new push secret comes first, the old one stays beside it.
        try Self.write("kept-token-8086 name=kept\n", to: tokens)
        try Self.write(Self.newSecret + "\n" + Self.oldSecret + "\n", to: secrets)
        var mark = agent.logs.count
        agent.child.signal(SIGHUP)
        #expect(await agent.logs.wait(from: mark, message: "orders API tokens reloaded", ["api.revoked": "leaked"]) != nil)
        #expect(await agent.logs.wait(from: mark, message: "push secrets reloaded") != nil)
        #expect(try await leakedFeed.nextEvent(within: .seconds(1)) == nil, "the removed token's feed ends within 1 s")
        #expect(try await loop.perform(HTTPRequest(url: base + "/v1/orders", headers: ["Authorization": "Bearer leaked-token-5150"])).status == 401)
        #expect(try await loop.perform(HTTPRequest(url: base + "/v1/orders", headers: ["Cookie": cookie])).status == 401)
        #expect(try await loop.perform(HTTPRequest(url: base + "/v1/orders", headers: ["Authorization": "Bearer kept-token-8086"])).status == 200)
        #expect(try await Self.push(loop, port: pushPort, secret: Self.oldSecret, id: "msg-3") == 200, "the old secret verifies during the overlap")
        #expect(try await Self.push(loop, port: pushPort, secret: Self.newSecret, id: "msg-4") == 200, "and the new one")

        // A tokens file that does not load keeps the set in use; the old secret is retired.
        try Self.write("kept-token-8086 name=kept stores=\n", to: tokens)
        try Self.write(Self.newSecret + "\n", to: secrets)
        mark = agent.logs.count
        agent.child.signal(SIGHUP)
        #expect(await agent.logs.wait(from: mark, message: "SIGHUP: api.tokens_file did not load; the tokens in use stay",
                                      ["config.key": "api.tokens_file"]) != nil)
        #expect(await agent.logs.wait(from: mark, message: "push secrets reloaded") != nil)
        #expect(try await loop.perform(HTTPRequest(url: base + "/v1/orders", headers: ["Authorization": "Bearer kept-token-8086"])).status == 200)
        #expect(try await Self.push(loop, port: pushPort, secret: Self.oldSecret, id: "msg-5") == 401)
        #expect(try await Self.push(loop, port: pushPort, secret: Self.newSecret, id: "msg-6") == 200)
        let metrics = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(pushPort)/metrics"))
        let samples = try #require(prometheusSamples(String(decoding: metrics.body, as: UTF8.self)))
        #expect(samples[#"orderlive_credentials_reload_failures_total{key="api.tokens_file"}"#] == 1)
        #expect(samples[#"orderlive_credentials_reload_failures_total{key="ingest.secret_file"}"#] == 0)

        await loop.shutdown()
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
        let logs = agent.logs.raw.joined(separator: "\n")
        for secret in ["leaked-token-5150", "kept-token-8086", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "C2FVsBQIhrscChlQIMV"] {
            #expect(!logs.contains(secret), "a secret never reaches a log")
        }
        #expect(!logs.contains(cookie), "nor a session id")
    }
}
