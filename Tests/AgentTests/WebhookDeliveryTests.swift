import Agent
import AsyncSignals
import CurlHTTP
import Foundation
import Sandbox
import StoreModel
import TestHarnesses
import TestKit
import Testing
import WebhookSigning

/// Outgoing webhooks (issue 40) from a running agent to a receiver that checks every signature:
/// endpoints added with the CLI from another process, every change in order, failures retried with
/// the same `webhook-id`, `410` disabling, `enable` resuming from the cursor, filters, replay, and a
/// receiver that hangs delaying nothing else.
@Suite(.timeLimit(.minutes(5))) struct WebhookDeliveryTests {
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    /// A directory for one test: its state directory, and a file holding ``secret``.
    static func scene(_ label: String) throws -> (root: String, directory: String, secretFile: String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
        let directory = root + "/state"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let secretFile = root + "/secret"
        try secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
        return (root, directory, secretFile)
    }

    /// A scene (``scene(_:)``), a Sandbox whose orders change only when the test changes them, and a
    /// receiver that checks every signature, for the length of `body`; the scene is removed after.
    static func withScene(
        _ label: String,
        _ body: (_ scene: (root: String, directory: String, secretFile: String), Sandbox, WebhookReceiver, _ url: String) async throws -> Void
    ) async throws {
        let scene = try Self.scene(label)
        defer { try? FileManager.default.removeItem(atPath: scene.root) }
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            try await WebhookReceiver.withRunning(secret: Self.secret) { receiver, url in
                try await body(scene, sandbox, receiver, url)
            }
        }
    }

    static func seqs(_ received: [WebhookReceiver.Received]) -> [Int64] {
        received.compactMap { request in
            (try? JSONSerialization.jsonObject(with: Data(request.body.utf8)) as? [String: Any])?["seq"] as? Int64
                ?? ((try? JSONSerialization.jsonObject(with: Data(request.body.utf8)) as? [String: Any])?["seq"] as? NSNumber)?.int64Value
        }
    }

    static func field(_ key: String, of request: WebhookReceiver.Received) -> Any? {
        (try? JSONSerialization.jsonObject(with: Data(request.body.utf8)) as? [String: Any])?[key]
    }

    @Test func changesArriveSignedInOrderAndFailuresAreRetriedThen410DisablesAndEnableResumes() async throws {
        try await Self.withScene("orderlive-hooks") { scene, sandbox, receiver, url in
            let (root, directory, secretFile) = scene
            let book = sandbox.orders
            let first = book.create()
            let agent = try await DeadLetterRetryAgentTests.Agent(sandbox, directory: directory) {
                $0.webhooks.retrySchedule = "1s,1s,1s"
            }
            #expect(try await agent.until { try await $0.store.orders(status: nil).count == 1 })

            // Added from another process while the agent runs: it receives what changes from now on.
            let (added, said) = try await StoreFileCommandsTests.run(
                ["webhooks", "add", url, "--secret-file", secretFile], in: directory)
            #expect(added == 0, "\(said)")
            let id = try #require(Int64(said.split(separator: "\n").first ?? ""), "\(said)")
            // Its cursor is the head when it was added: what follows is owed to it, whenever the
            // agent's next look at the endpoints (within a second) starts its delivery.
            let start = try await agent.program.store.changeHead()
            for step in 0..<6 { book.update(first, status: "status-\(step)") }
            let second = book.create()
            try #require(await receiver.until { Self.seqs($0).count >= 7 }, "\(receiver.received.map(\.body))")
            let delivered = receiver.received
            let allVerified = delivered.allSatisfy { $0.verified }
            #expect(allVerified, "every request carries a valid signature")
            let seqs = Self.seqs(delivered)
            #expect(seqs == Array((start + 1)...(start + Int64(seqs.count))), "in change-log order, none missing: \(seqs)")
            #expect(delivered.allSatisfy { $0.id == "msg_\(id)_\(Self.field("seq", of: $0) ?? "")" })
            #expect(Self.field("type", of: delivered[0]) as? String == "order.upserted")
            // Checked apart from the code that signs: openssl's HMAC over id.timestamp.body with the key.
            let key = try #require(Data(base64Encoded: String(Self.secret.dropFirst(6))))
            let hex = key.map { String(format: "%02x", $0) }.joined()
            let mac = try await runTool("/bin/sh", ["-c", "openssl dgst -sha256 -mac HMAC -macopt hexkey:\(hex) -binary | base64"],
                                        input: "\(delivered[0].id).\(delivered[0].timestamp).\(delivered[0].body)")
            #expect(mac.status == 0 && delivered[0].signature == "v1," + mac.output.trimmingCharacters(in: .whitespacesAndNewlines),
                    "\(mac.output) against \(delivered[0].signature)")
            #expect((Self.field("order", of: delivered[0]) as? [String: Any])?["status"] as? String == "status-0")

            // A 500 is retried with the same webhook-id; then a 410 disables the endpoint.
            receiver.answer(500, 200)
            let before = receiver.received.count
            book.update(second, status: "retried")
            try #require(await receiver.until { $0.count >= before + 2 })
            let retried = Array(receiver.received[before...])
            #expect(retried.map(\.status) == [500, 200] && retried[0].id == retried[1].id, "\(retried.map(\.id))")
            receiver.answer(410)
            book.update(second, status: "gone")
            #expect(try await agent.until { try await $0.store.changeHead() > start + 8 })
            let (listed, json) = try await StoreFileCommandsTests.run(["webhooks", "list", "--json"], in: directory)
            #expect(listed == 0, "\(json)")
            #expect(await eventually(within: .seconds(20)) { try await StoreFileCommandsTests.run(["webhooks", "list", "--json"], in: directory)
                .output.contains(#""state":"disabled","disabled_reason":"the endpoint answered 410 Gone""#) })
            #expect(!json.contains(Self.secret) && !json.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "never the secret")
            let (_, status) = try await StoreFileCommandsTests.run(["status", "--json"], in: directory)
            #expect(status.contains(#""webhooks":[{"id":\#(id),"state":"disabled","disabled_reason":"the endpoint answered 410 Gone""#),
                    "\(status)")
            #expect(!status.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))

            // Changes while disabled wait in the log; enable resumes from the cursor (the 410's change first).
            let disabledAt = receiver.received.count
            book.update(second, status: "while-disabled")
            #expect(try await StoreFileCommandsTests.run(["webhooks", "enable", "\(id)"], in: directory).status == 0)
            try #require(await receiver.until { $0.count >= disabledAt + 2 })
            let resumed = Self.seqs(Array(receiver.received[disabledAt...]))
            #expect(resumed.count == 2 && resumed[1] == resumed[0] + 1, "\(resumed)")

            // A new key: for 24 hours both sign, so the receiver still on the old key verifies too.
            let newSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
            let newFile = root + "/new-secret"
            try newSecret.write(toFile: newFile, atomically: true, encoding: .utf8)
            let (rotated, words) = try await StoreFileCommandsTests.run(["webhooks", "rotate", "\(id)", "--secret-file", newFile], in: directory)
            #expect(rotated == 0, "\(words)")
            let beforeRotation = receiver.received.count
            book.update(second, status: "after-rotation")
            try #require(await receiver.until { $0.count > beforeRotation })
            let signed = receiver.received[beforeRotation]
            #expect(signed.verified, "the old key still signs")
            let withNew = try StandardWebhooks(secret: newSecret).verify(
                id: signed.id, timestamp: signed.timestamp, signatures: signed.signature, body: Array(signed.body.utf8),
                now: Int64(Date().timeIntervalSince1970))
            #expect((try? withNew.get()) != nil, "the new key signs: \(signed.signature)")
            #expect(signed.signature.split(separator: " ").count == 2)
            try await agent.stop()
        }
    }
}
