import Agent
import CurlHTTP
import Foundation
import SQLiteStore
import Sandbox
import StoreModel
import TestHarnesses
import TestKit
import Testing
import OrdersAPI

extension WebhookDeliveryTests {
    @Test func filtersReplayAndAHangingReceiverThatDelaysNothingElse() async throws {
        try await Self.withScene("orderlive-hooks2") { scene, sandbox, receiver, url in
            let (_, directory, secretFile) = scene
            let book = sandbox.orders
            let agent = try await DeadLetterRetryAgentTests.Agent(sandbox, directory: directory) {
                $0.webhooks.timeout = .seconds(30)
                $0.api.listen = "127.0.0.1:0"
            }
            let loop = try CurlLoop(logger: quietLogger)
            // Only deletions and removals of store 2's orders.
            let (added, said) = try await StoreFileCommandsTests.run(
                ["webhooks", "add", url, "--secret-file", secretFile, "--events", "order.deleted,order.removed", "--store-id", "2"],
                in: directory)
            #expect(added == 0, "\(said)")
            let id = try #require(Int64(said.split(separator: "\n").first ?? ""))
            let inStore2 = book.create(storeID: 2)
            let inStore1 = book.create(storeID: 1)
            book.update(inStore2, status: "assigned")
            book.delete(inStore1)
            book.delete(inStore2)
            #expect(await receiver.until { !$0.isEmpty })
            #expect(try await agent.until { try await $0.store.order(id: "\(inStore2)") == nil })
            // Every change handled (sent or filtered out): the endpoint's cursor is at the head.
            let outbox = agent.program.store
            #expect(try await agent.until { program in
                try await outbox.webhookEndpoints().first?.cursor == program.store.changeHead()
            })
            let filtered = receiver.received
            #expect(filtered.count == 1, "\(filtered.map(\.body))")
            #expect(Self.field("type", of: filtered[0]) as? String == "order.deleted")
            #expect(Self.field("order_id", of: filtered[0]) as? String == "\(inStore2)")

            // Replay from the endpoint's start: the one matching change again, same webhook-id.
            let first = try #require(Self.seqs(filtered).first)
            let (replayed, told) = try await StoreFileCommandsTests.run(
                ["webhooks", "replay", "\(id)", "--since", "\(first - 1)"], in: directory)
            #expect(replayed == 0, "\(told)")
            #expect(await receiver.until { $0.count >= 2 })
            #expect(receiver.received[1].id == filtered[0].id)

            // A receiver that hangs holds its own delivery only: pushes are answered and applied,
            // and the change feed goes on.
            let apiPort = try #require(await agent.program.apiServer?.port)
            let feed = try await FeedReader(loop: loop, url: "http://127.0.0.1:\(apiPort)/v1/orders/stream")
            _ = try await feed.events(through: "ready")
            receiver.hang(true)
            let pending = book.create(storeID: 2)
            book.delete(pending)
            let pushURL = agent.pushURL
            let clock = ContinuousClock()
            let began = clock.now
            let body = #"{"notifications":[{"tokens":["t"],"platform":2,"data":{"type":"order.created","order":{"id":"p1","status":"created","store_id":2}}}]}"#
            let response = try await loop.perform(HTTPRequest(
                url: pushURL, method: "POST", headers: ["Content-Type": "application/json"], body: Array(body.utf8)))
            #expect(response.status == 200 && clock.now - began < .seconds(2))
            #expect(try await agent.until { try await $0.store.order(id: "p1") != nil })
            var fed = false
            while !fed, let event = try await feed.nextEvent(within: .seconds(5)) { fed = event.data.contains(#""id":"p1""#) }
            #expect(fed, "the change feed carried the push's order while the receiver hung")
            feed.close()
            receiver.hang(false)
            #expect(await receiver.until { $0.count >= 3 }, "delivered once the receiver answers again")
            try await agent.stop()
            await loop.shutdown()
        }
    }

    @Test func badInputIsRefusedByNameAndChangesNothing() async throws {
        let (root, directory, _) = try Self.scene("orderlive-hooks3")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let bad = root + "/bad-secret"
        try "not-a-key".write(toFile: bad, atomically: true, encoding: .utf8)
        for (arguments, expected) in [
            (["webhooks", "add", "ftp://example.com/x"], "'ftp://example.com/x' is not an http:// or https:// URL"),
            (["webhooks", "add", "not a url"], "is not an http:// or https:// URL"),
            (["webhooks", "add", "http://127.0.0.1:9/x", "--events", "order.moved"], "unknown event type 'order.moved'"),
            (["webhooks", "add", "http://127.0.0.1:9/x", "--secret-file", root + "/missing"], "cannot read the secret file"),
            (["webhooks", "add", "http://127.0.0.1:9/x", "--secret-file", bad], "does not hold a Standard Webhooks key"),
            (["webhooks", "remove", "7"], "no webhook endpoint 7"),
            (["webhooks", "enable", "7"], "no webhook endpoint 7"),
            (["webhooks", "replay", "7", "--since", "0"], "no webhook endpoint 7"),
        ] {
            let (status, said) = try await StoreFileCommandsTests.run(arguments, in: directory)
            #expect(status == 1 && said.contains(expected), "\(arguments): \(said)")
        }
        for (arguments, expected) in [
            (["webhooks", "remove", "x"], "'x' is not an endpoint id"),
            (["webhooks", "replay", "1", "--since", "yesterday"], "--since takes a change id"),
        ] {
            let (status, said) = try await StoreFileCommandsTests.run(arguments, in: directory)
            #expect(status == 2 && said.contains(expected), "\(arguments): \(said)")
        }
        #expect(try await StoreFileCommandsTests.run(["webhooks", "list"], in: directory).output.contains("No webhook endpoints"))

        // Without --secret-file a key is made, written 0600, and named.
        let (made, told) = try await StoreFileCommandsTests.run(["webhooks", "add", "https://example.com/hook"], in: directory)
        #expect(made == 0, "\(told)")
        let file = try #require(told.split(separator: " ").first { $0.contains("webhook-secret-") }.map(String.init))
        let key = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.hasPrefix("whsec_"))
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let (_, listed) = try await StoreFileCommandsTests.run(["webhooks", "list"], in: directory)
        #expect(listed.contains("https://example.com/hook") && !listed.contains(key), "\(listed)")
    }

    /// The change log keeps what an enabled endpoint has not handled, whatever its history limit.
    @Test func pruningKeepsWhatAnEnabledEndpointIsOwed() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        for index in 0..<20 {
            try store.applyUpsert(OrderRecord(
                id: "\(index)", status: "created", storeID: nil, courierID: nil, version: 1, updatedAt: nil,
                body: #"{"id":\#(index),"status":"created"}"#, appliedAt: 0), completing: nil)
        }
        let head = try store.changeHead()
        _ = try await store.addWebhookEndpoint(NewWebhookEndpoint(url: "http://127.0.0.1:9/x", secret: Self.secret))
        let owed = try #require(try store.webhookEndpoints().first)
        _ = try await store.rewindWebhookEndpoint(id: owed.id, to: head - 15)
        _ = try await store.pruneChanges(keeping: 2)
        guard case .changes(let kept) = try store.changes(after: head - 15, limit: 100) else {
            Issue.record("the changes owed to the endpoint were pruned")
            return
        }
        #expect(kept.count == 15)
        _ = try await store.setWebhookEndpoint(id: owed.id, enabled: false, reason: "test")
        #expect(try await store.pruneChanges(keeping: 2) > 0, "a disabled endpoint holds nothing back")
    }
}

extension WebhookDeliveryTests {
    /// The receiver is down (connections refused) while changes happen; once it is back, every change
    /// arrives, in order, from where delivery stopped.
    @Test func aReceiverThatIsDownForAWhileGetsEveryChangeOnceItIsBack() async throws {
        let (root, directory, secretFile) = try Self.scene("orderlive-hooks4")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let port = try freeLoopbackPort()
        let url = "http://127.0.0.1:\(port)/hook"
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            let book = sandbox.orders
            let agent = try await DeadLetterRetryAgentTests.Agent(sandbox, directory: directory) {
                $0.webhooks.retrySchedule = "1s,1s,1s,1s,1s,1s,1s,1s,1s,1s"
            }
            let (added, said) = try await StoreFileCommandsTests.run(["webhooks", "add", url, "--secret-file", secretFile], in: directory)
            #expect(added == 0, "\(said)")
            let start = try await agent.program.store.changeHead()
            let id = book.create()
            for step in 0..<4 { book.update(id, status: "down-\(step)") }
            // Refused: the failure is recorded, the change waits.
            #expect(try await agent.until { program in
                try await program.store.webhookEndpoints().first?.lastError != nil
            }, "no failure was recorded")
            let endpoint = try #require(try await agent.program.store.webhookEndpoints().first)
            #expect(endpoint.enabled && endpoint.cursor == start && endpoint.attempts >= 1)
            try await WebhookReceiver.withRunning(secret: Self.secret, port: port) { receiver, _ in
                #expect(await receiver.until { Self.seqs($0).count >= 5 }, "\(Self.seqs(receiver.received))")
                #expect(Self.seqs(receiver.received) == Array((start + 1)...(start + 5)))
                let allVerified = receiver.received.allSatisfy { $0.verified }
                #expect(allVerified)
            }
            try await agent.stop()
        }
    }
}
