import Agent
import Foundation
import Sandbox
import StoreModel
import TestHarnesses
import TestKit
import Testing

extension WebhookDeliveryTests {
    /// A delivery task ends when its endpoint is disabled; the deliverer notices disabled endpoints
    /// once a second. An endpoint enabled again in between once kept the ended task as its own and
    /// was never delivered to again (seen in CI as "enable resumes" waiting 30 s for nothing).
    @Test func anEndpointEnabledAgainBeforeTheDelivererLookedIsDeliveredTo() async throws {
        try await Self.withScene("orderlive-hooks3") { scene, sandbox, receiver, url in
            let directory = scene.directory
            let book = sandbox.orders
            let first = book.create()
            let agent = try await DeadLetterRetryAgentTests.Agent(sandbox, directory: directory)
            #expect(try await agent.until { try await $0.store.orders(status: nil).count == 1 })
            let store = agent.program.store
            let id = try await store.addWebhookEndpoint(NewWebhookEndpoint(url: url, secret: Self.secret)).id
            receiver.answer(410)
            book.update(first, status: "gone")
            // Enabled again the moment the 410 is stored: well within the deliverer's next look.
            #expect(try await agent.until { _ in try await store.webhookEndpoints().first { $0.id == id }?.enabled == false })
            #expect(try await store.setWebhookEndpoint(id: id, enabled: true, reason: nil))
            try #require(await receiver.until(.seconds(10)) { $0.count >= 2 }, "nothing delivered after enable")
            let sent = receiver.received
            #expect(sent.map(\.status) == [410, 200] && sent[0].id == sent[1].id, "the 410's change again: \(sent.map(\.id))")
            try await agent.stop()
        }
    }
}
