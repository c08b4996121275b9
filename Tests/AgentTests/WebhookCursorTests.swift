import AsyncSignals
import CurlHTTP
import Foundation
import SQLiteStore
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
        // `webhooks replay --since` the first change while the third is in flight.
        try await replayWhileTheThirdChangeIsHeld(to: { $0 + 1 }) { store, receiver, start, delivered in
            // The batch is answered to its end; the store after it is refused, and delivery starts again
            // after the replay's point.
            let expected = Array((start + 1)...(start + 5)) + Array((start + 2)...(start + 5))
            #expect(await receiver.until { WebhookDeliveryTests.seqs($0).count >= expected.count })
            #expect(WebhookDeliveryTests.seqs(receiver.received) == expected)
            let ids = receiver.received.map(\.id)
            #expect(ids[1] == ids[5], "a change sent again keeps its webhook-id")
            #expect(await eventually(within: .seconds(10)) { try store.webhookEndpoints().first?.cursor == start + 5 })
            #expect(await eventually(within: .seconds(10)) { delivered.withLock { $0 } == expected.count }, "every 2xx counted in the metrics")
        }
    }

    /// A replay to exactly the cursor the deliverer last stored: only the revision tells it from no
    /// replay, and every change after that cursor is sent again.
    @Test func aReplayToTheCursorTheDelivererLastStoredIsSeenToo() async throws {
        // `webhooks replay --since` the cursor as it is stored: the same number, a new revision.
        try await replayWhileTheThirdChangeIsHeld(to: { $0 }) { store, receiver, start, _ in
            let expected = Array((start + 1)...(start + 5)) + Array((start + 1)...(start + 5))
            #expect(await receiver.until { WebhookDeliveryTests.seqs($0).count >= expected.count })
            #expect(WebhookDeliveryTests.seqs(receiver.received) == expected)
            #expect(await eventually(within: .seconds(10)) { try store.webhookEndpoints().first?.cursor == start + 5 })
        }
    }

    /// Five changes for one endpoint; two are answered, then the third request is held while a replay
    /// moves the cursor to `target(start)` (`start`: the cursor before the five). The held answer comes
    /// after the deliverer's 100 ms store fell due (its wall clock moves only when this moves it), so
    /// the deliverer stores its place after the batch and must find the cursor moved rather than
    /// overwrite the replay. `check` then gets the store, the receiver, `start` and the 2xx count the
    /// metrics heard. The machine is never reported busy, so no yield comes between the turns.
    private func replayWhileTheThirdChangeIsHeld(
        to target: (Int64) -> Int64,
        _ check: (SQLiteOrderStore, WebhookReceiver, _ start: Int64, _ delivered: Locked<Int>) async throws -> Void
    ) async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try await WebhookReceiver.withRunning(secret: WebhookDeliveryTests.secret) { receiver, url in
            let endpoint = try await store.addWebhookEndpoint(NewWebhookEndpoint(url: url, secret: WebhookDeliveryTests.secret))
            let start = endpoint.cursor
            for index in 1...5 { try store.applyUpsert(try order(index, status: "created", version: 1), completing: nil) }
            receiver.hang(after: 2)
            let loop = try CurlLoop(logger: quietLogger)
            let delivered = Locked(0)
            let wall = Locked(Date().timeIntervalSince1970)
            let deliverer = WebhookDeliverer(
                store: store, loop: loop, settings: WebhookSettings(timeout: .seconds(30)), changed: WakeSignal(),
                now: { wall.withLock { $0 } }, observe: { _, attempt, count in if attempt == .delivered { delivered.withLock { $0 += count } } },
                processorCounters: { nil }, logger: quietLogger)
            let running = Task { await deliverer.run() }

            #expect(await receiver.until { _ in receiver.waiting == 1 && receiver.received.count == 2 })
            #expect(try store.webhookEndpoints().first?.cursor == start, "stored ahead of a batch's end")
            await #expect(try store.rewindWebhookEndpoint(id: endpoint.id, to: target(start)))
            wall.withLock { $0 += 1 }
            receiver.hang(false)

            try await check(store, receiver, start, delivered)
            running.cancel()
            await running.value
            await loop.shutdown()
        }
    }
}
