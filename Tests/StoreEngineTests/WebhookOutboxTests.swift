import Foundation
import StoreModel
import TestHarnesses
import Testing

/// The outgoing webhooks' endpoints and cursors (issue 40) on each engine: an endpoint starts at the
/// head, moves only as told, keeps its failures and its reason when disabled, and the change log
/// keeps what an enabled endpoint is owed.
@Suite(.timeLimit(.minutes(5))) struct WebhookOutboxTests {
    static func order(_ id: Int, version: Int64) -> OrderRecord {
        OrderRecord(id: "\(id)", status: "created", storeID: "1", courierID: nil, version: version, updatedAt: nil,
                    body: #"{"id":\#(id),"status":"created","version":\#(version)}"#, appliedAt: 0)
    }

    @Test(arguments: StoreEngine.allCases)
    func endpointsKeepTheirCursorFailuresAndStateAndTheLogKeepsWhatTheyAreOwed(_ engine: StoreEngine) async throws {
        let clock = WallSeconds(1_000)
        func body(_ store: any AnyOrderStore & WebhookOutbox) async throws {
            for index in 1...5 { try await store.applyUpsert(Self.order(index, version: 1), completing: nil) }
            let head = try await store.changeHead()
            let added = try await store.addWebhookEndpoint(NewWebhookEndpoint(
                url: "https://example.com/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                events: ["order.deleted"], storeIDs: ["2", "1"]))
            #expect(added.cursor == head && added.enabled && added.events == ["order.deleted"] && added.storeIDs == ["1", "2"])
            #expect(added.createdAt == 1_000 && added.attempts == 0 && added.lastError == nil)
            #expect(try await store.webhookEndpoints() == [added])

            clock.set(1_100)
            for index in 1...5 { try await store.applyUpsert(Self.order(index, version: 2), completing: nil) }
            try await store.recordWebhookFailure(id: added.id, error: "the endpoint answered 503", attempts: 1, retryAt: 1_105,
                                                 disable: nil, at: 1_100)
            var endpoint = try #require(try await store.webhookEndpoints().first)
            #expect(endpoint.attempts == 1 && endpoint.nextAttemptAt == 1_105 && endpoint.lastError == "the endpoint answered 503")
            #expect(endpoint.lastErrorAt == 1_100 && endpoint.enabled && endpoint.cursor == head)

            // The change log keeps the changes after an enabled endpoint's cursor, whatever it is told to keep.
            _ = try await store.pruneChanges(keeping: 1, batch: 10_000)
            guard case .changes(let owed) = try await store.changes(after: head, limit: 100) else {
                Issue.record("what the endpoint is owed was pruned")
                return
            }
            #expect(owed.count == 5)
            #expect(try await store.lastChange(before: 1_050) == head, "the last change before a time")

            // Progress is a compare-and-set from where the deliverer left the cursor: from anywhere else
            // (a replay moved it meanwhile) nothing is written.
            #expect(added.revision == 0)
            #expect(try await store.recordWebhookProgress(
                id: added.id, from: head + 1, revision: 0, through: head + 3, success: true, at: 1_110) == false)
            #expect(try await store.webhookEndpoints().first?.cursor == head)
            // A replay to exactly where the deliverer left the cursor still moves the revision on, so the
            // deliverer's store from the old revision is refused as well.
            #expect(try await store.rewindWebhookEndpoint(id: added.id, to: head))
            #expect(try await store.webhookEndpoints().first?.revision == 1)
            #expect(try await store.recordWebhookProgress(
                id: added.id, from: head, revision: 0, through: head + 3, success: true, at: 1_110) == false)
            #expect(try await store.webhookEndpoints().first?.cursor == head)
            #expect(try await store.recordWebhookProgress(id: added.id, from: head, revision: 1, through: head + 3, success: true, at: 1_110))
            endpoint = try #require(try await store.webhookEndpoints().first)
            #expect(endpoint.cursor == head + 3 && endpoint.attempts == 0 && endpoint.nextAttemptAt == 0 && endpoint.lastSuccessAt == 1_110)
            #expect(try await store.recordWebhookProgress(
                id: 999_999, from: head, revision: 1, through: head + 3, success: false, at: 1_110) == false)

            try await store.recordWebhookFailure(id: added.id, error: "410", attempts: 1, retryAt: 1_120, disable: "the endpoint answered 410 Gone",
                                                 at: 1_120)
            endpoint = try #require(try await store.webhookEndpoints().first)
            #expect(!endpoint.enabled && endpoint.disabledReason == "the endpoint answered 410 Gone")
            #expect(try await store.pruneChanges(keeping: 1, batch: 10_000) > 0, "a disabled endpoint holds nothing back")

            #expect(try await store.setWebhookEndpoint(id: added.id, enabled: true, reason: nil))
            endpoint = try #require(try await store.webhookEndpoints().first)
            #expect(endpoint.enabled && endpoint.disabledReason == nil && endpoint.attempts == 0 && endpoint.cursor == head + 3)
            #expect(endpoint.revision == 2, "an enable moves the revision on")
            #expect(try await store.rewindWebhookEndpoint(id: added.id, to: head))
            #expect(try await store.webhookEndpoints().first?.cursor == head)
            #expect(try await store.setWebhookEndpoint(id: 999_999, enabled: false, reason: "x") == false)
            #expect(try await store.rewindWebhookEndpoint(id: 999_999, to: 1) == false)
            #expect(try await store.removeWebhookEndpoint(id: added.id))
            #expect(try await store.removeWebhookEndpoint(id: added.id) == false)
            #expect(try await store.webhookEndpoints().isEmpty)
        }
        try await withStore(engine, now: { clock.now }) { store in
            try await body(try #require(store as? any AnyOrderStore & WebhookOutbox))
        }
    }

    /// Delivery options (issue 59) are stored with the endpoint on each engine, replaced by an update,
    /// and an endpoint stored before they existed (`{}`) reads as one change at a time.
    @Test(arguments: StoreEngine.allCases)
    func deliveryOptionsAreKeptAndUpdated(_ engine: StoreEngine) async throws {
        try await withStore(engine, now: { 1_000 }) { any in
            let store = try #require(any as? any AnyOrderStore & WebhookOutbox)
            let options = WebhookDeliveryOptions(
                maxInFlight: 8, batchSize: 50, batchMilliseconds: 200, ratePerSecond: 12.5,
                headers: [WebhookHeader(name: "X-Api-Key", file: "/etc/orderlive/key"), WebhookHeader(name: "X-Tenant", value: "north")],
                clientCertificate: "/etc/orderlive/client.pem", clientKey: "/etc/orderlive/client.key")
            let added = try await store.addWebhookEndpoint(NewWebhookEndpoint(
                url: "https://example.com/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", options: options))
            #expect(added.options == options)
            #expect(try await store.webhookEndpoints().first?.options == options)
            var changed = options
            changed.maxInFlight = 1
            changed.headers = []
            #expect(try await store.updateWebhookEndpoint(id: added.id, options: changed))
            #expect(try await store.webhookEndpoints().first?.options == changed)
            #expect(try await store.updateWebhookEndpoint(id: 999_999, options: changed) == false)
            let plain = try await store.addWebhookEndpoint(NewWebhookEndpoint(url: "https://example.com/b", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
            #expect(plain.options == WebhookDeliveryOptions() && plain.options.isSequential)
        }
    }

    /// A stored document an older agent or a hand wrote: missing keys take their defaults, values out
    /// of bounds are brought inside them, and an unreadable one is the defaults.
    @Test func storedOptionsAreReadForgivingly() {
        #expect(WebhookDeliveryOptions.stored("{}") == WebhookDeliveryOptions())
        #expect(WebhookDeliveryOptions.stored("not json") == WebhookDeliveryOptions())
        #expect(WebhookDeliveryOptions.stored(nil) == WebhookDeliveryOptions())
        let wild = WebhookDeliveryOptions.stored(#"{"max_in_flight":100000,"batch_size":0,"batch_ms":-5,"rate_per_s":-1}"#)
        #expect(wild.maxInFlight == 256 && wild.batchSize == 1 && wild.batchMilliseconds == 0 && wild.ratePerSecond == 0)
        let options = WebhookDeliveryOptions(maxInFlight: 4, headers: [WebhookHeader(name: "A", value: "b")])
        #expect(WebhookDeliveryOptions.stored(options.stored) == options)
        #expect(options.stored.contains(#""max_in_flight":4"#))
    }
}
