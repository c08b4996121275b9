import AsyncSignals
import CurlHTTP
import Foundation
import TestHarnesses
import TestKit
import Testing

/// Outgoing webhooks survive a hard kill (issue 40): the agent is SIGKILLed while a delivery is in
/// flight; after the restart every change arrives, in order, and the one that was in flight is sent
/// again under the same `webhook-id` (at least once, never lost).
@Suite(.timeLimit(.minutes(5))) struct WebhookCrashTests {
    @Test func aKillMidDeliveryLosesNothingAndRedeliversUnderTheSameID() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-hookkill-\(UUID().uuidString)").path
        let state = root + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let secretFile = root + "/secret"
        try WebhookDeliveryTests.secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
        let environment = [
            "ORDERLIVE_STORE_STATE_DIR": state, "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
            // No backend: pushes that carry whole orders are applied, and their changes delivered.
            "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:9", "ORDERLIVE_STREAM_MAX_DELAY_MS": "1000",
            "ORDERLIVE_WEBHOOKS_RETRY_SCHEDULE": "1s,1s,1s,1s,1s",
        ]
        try await WebhookReceiver.withRunning(secret: WebhookDeliveryTests.secret) { receiver, url in
            let (added, said) = try await StoreFileCommandsTests.run(["webhooks", "add", url, "--secret-file", secretFile], in: state)
            #expect(added == 0, "\(said)")
            let loop = try CurlLoop(logger: quietLogger)
            func push(_ id: Int, to pushURL: String) async throws {
                let body = #"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.created","order":{"id":\#(id),"status":"created","version":1}}}]}"#
                let answer = try await loop.perform(HTTPRequest(
                    url: pushURL, method: "POST", headers: ["Content-Type": "application/json"], body: Array(body.utf8)))
                #expect(answer.status == 200)
            }
            func start() async throws -> (RunningAgent, String) {
                let agent = try RunningAgent([], environment: environment)
                let listening = try #require(await agent.logs.wait(message: "push endpoint listening"))
                return (agent, "http://" + (listening.line["push.listen"] ?? "") + "/api/push")
            }

            var (agent, pushURL) = try await start()
            for id in 1...5 { try await push(id, to: pushURL) }
            #expect(await receiver.until { WebhookDeliveryTests.seqs($0).count == 5 })
            // The receiver stops answering; a delivery is in flight when the agent is killed.
            receiver.hang(true)
            for id in 6...10 { try await push(id, to: pushURL) }
            #expect(await receiver.until { _ in receiver.waiting == 1 })
            agent.child.signal(SIGKILL)
            _ = await agent.finish()
            receiver.hang(false)
            let killedLogs = agent.logs.raw

            (agent, pushURL) = try await start()
            for id in 11...12 { try await push(id, to: pushURL) }
            #expect(await receiver.until { Set(WebhookDeliveryTests.seqs($0)).count == 12 }, "\(WebhookDeliveryTests.seqs(receiver.received))")
            agent.child.signal(SIGTERM)
            #expect(await agent.finish() == 0)
            await loop.shutdown()

            let received = receiver.received
            let allVerified = received.allSatisfy { $0.verified }
            #expect(allVerified)
            let seqs = WebhookDeliveryTests.seqs(received)
            let first = try #require(seqs.min())
            #expect(Set(seqs) == Set(first...(first + 11)), "every change, none missing: \(seqs)")
            // In order: each delivery is the next change or a resend of one not yet confirmed.
            var highest = first - 1
            for seq in seqs {
                #expect(seq <= highest + 1, "out of order: \(seqs)")
                highest = max(highest, seq)
            }
            let key = String(WebhookDeliveryTests.secret.dropFirst(6))
            #expect(!(killedLogs + agent.logs.raw).contains { $0.contains(key) }, "the signing key is never logged")
            let resent = Dictionary(grouping: received, by: \.id).filter { $0.value.count > 1 }
            #expect(!resent.isEmpty, "the delivery in flight at the kill was sent again: \(seqs)")
        }
    }
}
