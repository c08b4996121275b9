import AsyncSignals
import CurlHTTP
import Foundation
import OrderStore
import StoreModel
import TestHarnesses
import TestKit
import Testing
import WebhookDelivery

/// The deliverer keeps its place in memory and stores it in batches (issue 40): the cursor is never
/// stored ahead of the 2xx answers, and a replay that moves it while changes are in flight is not
/// overwritten by the deliverer's next store.
@Suite(.timeLimit(.minutes(2))) struct WebhookCursorTests {
    @Test func aReplayDuringDeliveryIsKeptAndEveryChangeAfterItIsSentAgain() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try await WebhookReceiver.withRunning(secret: WebhookDeliveryTests.secret) { receiver, url in
            let endpoint = try store.addWebhookEndpoint(NewWebhookEndpoint(url: url, secret: WebhookDeliveryTests.secret))
            let start = endpoint.cursor
            for index in 1...5 {
                try store.applyUpsert(OrderRecord(
                    id: "\(index)", status: "created", storeID: nil, courierID: nil, version: 1, updatedAt: nil,
                    body: #"{"id":\#(index),"status":"created","version":1}"#, appliedAt: 0), completing: nil)
            }
            // Two answers, then the third request is held.
            receiver.hang(after: 2)
            let loop = try CurlLoop(logger: quietLogger)
            let delivered = Locked(0)
            // The wall clock moves only when the test moves it, so the deliverer's 100 ms store falls due
            // only then.
            let wall = Locked(Date().timeIntervalSince1970)
            let deliverer = WebhookDeliverer(
                store: store, loop: loop, settings: WebhookSettings(timeout: .seconds(30)), changed: WakeSignal(),
                now: { wall.withLock { $0 } }, observe: { _, attempt, count in if attempt == .delivered { delivered.withLock { $0 += count } } },
                logger: quietLogger)
            let running = Task { await deliverer.run() }

            #expect(await receiver.until { _ in receiver.waiting == 1 && receiver.received.count == 2 })
            #expect(try store.webhookEndpoints().first?.cursor == start, "stored ahead of a batch's end")
            // `webhooks replay --since` the first change while the third is in flight.
            #expect(try store.rewindWebhookEndpoint(id: endpoint.id, to: start + 1))
            // The held answer comes after the 100 ms: the deliverer stores its place after the batch, and
            // must find the cursor moved rather than overwrite the replay.
            wall.withLock { $0 += 1 }
            receiver.hang(false)

            // The batch is answered to its end; the store after it is refused, and delivery starts again
            // after the replay's point.
            let expected = Array((start + 1)...(start + 5)) + Array((start + 2)...(start + 5))
            #expect(await receiver.until { WebhookDeliveryTests.seqs($0).count >= expected.count })
            #expect(WebhookDeliveryTests.seqs(receiver.received) == expected)
            let ids = receiver.received.map(\.id)
            #expect(ids[1] == ids[5], "a change sent again keeps its webhook-id")
            #expect(await eventually { try store.webhookEndpoints().first?.cursor == start + 5 })
            #expect(await eventually { delivered.withLock { $0 } == expected.count }, "every 2xx counted in the metrics")
            running.cancel()
            await running.value
            await loop.shutdown()
        }
    }

    /// A replay to exactly the cursor the deliverer last stored: only the revision tells it from no
    /// replay, and every change after that cursor is sent again.
    @Test func aReplayToTheCursorTheDelivererLastStoredIsSeenToo() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try await WebhookReceiver.withRunning(secret: WebhookDeliveryTests.secret) { receiver, url in
            let endpoint = try store.addWebhookEndpoint(NewWebhookEndpoint(url: url, secret: WebhookDeliveryTests.secret))
            let start = endpoint.cursor
            for index in 1...5 {
                try store.applyUpsert(OrderRecord(
                    id: "\(index)", status: "created", storeID: nil, courierID: nil, version: 1, updatedAt: nil,
                    body: #"{"id":\#(index),"status":"created","version":1}"#, appliedAt: 0), completing: nil)
            }
            receiver.hang(after: 2)
            let loop = try CurlLoop(logger: quietLogger)
            let wall = Locked(Date().timeIntervalSince1970)
            let deliverer = WebhookDeliverer(
                store: store, loop: loop, settings: WebhookSettings(timeout: .seconds(30)), changed: WakeSignal(),
                now: { wall.withLock { $0 } }, processorCounters: { nil }, logger: quietLogger)
            let running = Task { await deliverer.run() }

            #expect(await receiver.until { _ in receiver.waiting == 1 && receiver.received.count == 2 })
            #expect(try store.webhookEndpoints().first?.cursor == start)
            // `webhooks replay --since` the cursor as it is stored: the same number, a new revision.
            #expect(try store.rewindWebhookEndpoint(id: endpoint.id, to: start))
            wall.withLock { $0 += 1 }
            receiver.hang(false)

            let expected = Array((start + 1)...(start + 5)) + Array((start + 1)...(start + 5))
            #expect(await receiver.until { WebhookDeliveryTests.seqs($0).count >= expected.count })
            #expect(WebhookDeliveryTests.seqs(receiver.received) == expected)
            #expect(await eventually { try store.webhookEndpoints().first?.cursor == start + 5 })
            running.cancel()
            await running.value
            await loop.shutdown()
        }
    }

    /// Polls `condition` for up to 10 s.
    private func eventually(_ condition: () throws -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(10))
        while clock.now < deadline {
            if (try? condition()) == true { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return (try? condition()) == true
    }
}
