import Agent
import StoreModel
import Testing
import WebhookDelivery

/// What an endpoint is sent for a change, by its filters (issue 40), and the retry schedule's reading.
@Suite(.timeLimit(.minutes(1))) struct WebhookPayloadTests {
    static func endpoint(events: Set<String> = [], stores: Set<String> = []) -> WebhookEndpoint {
        WebhookEndpoint(id: 3, url: "http://127.0.0.1/x", secret: "whsec_x", events: events, storeIDs: stores, enabled: true,
                        disabledReason: nil, cursor: 0, attempts: 0, nextAttemptAt: 0, lastError: nil, lastErrorAt: nil,
                        lastSuccessAt: nil, createdAt: 0)
    }

    static func change(_ kind: OrderChange.Kind, before: String?, after: String?) -> OrderChange {
        OrderChange(seq: 9, orderID: "12", kind: kind, version: 4, body: kind == .upserted ? #"{"id":12,"status":"x"}"# : nil, at: 0,
                    after: after.map { .init(status: "x", storeID: $0, courierID: nil) },
                    before: before.map { .init(status: "x", storeID: $0, courierID: nil) })
    }

    @Test func eachChangeIsTheFeedsEventForTheEndpointsView() {
        let all = Self.endpoint()
        #expect(WebhookPayload.event(for: Self.change(.upserted, before: nil, after: "1"), to: all)?.body
                == #"{"type":"order.upserted","seq":9,"order":{"id":12,"status":"x"}}"#)
        #expect(WebhookPayload.event(for: Self.change(.deleted, before: nil, after: nil), to: all)?.body
                == #"{"type":"order.deleted","seq":9,"order_id":"12","version":4}"#)
        let store2 = Self.endpoint(stores: ["2"])
        #expect(WebhookPayload.event(for: Self.change(.upserted, before: nil, after: "1"), to: store2) == nil)
        #expect(WebhookPayload.event(for: Self.change(.upserted, before: "2", after: "1"), to: store2)?.type == "order.removed")
        #expect(WebhookPayload.event(for: Self.change(.upserted, before: "1", after: "2"), to: store2)?.type == "order.upserted")
        #expect(WebhookPayload.event(for: Self.change(.deleted, before: "1", after: nil), to: store2) == nil)
        #expect(WebhookPayload.event(for: Self.change(.deleted, before: "2", after: nil), to: store2)?.type == "order.deleted")
        let deletions = Self.endpoint(events: ["order.deleted"])
        #expect(WebhookPayload.event(for: Self.change(.upserted, before: nil, after: "1"), to: deletions) == nil)
        #expect(WebhookPayload.messageID(endpoint: 3, seq: 9) == "msg_3_9")
    }

    @Test func theRetryScheduleIsReadStrictly() throws {
        #expect(try WebhooksConfiguration.schedule("5s, 5m,2h") == [.seconds(5), .seconds(300), .seconds(7_200)])
        #expect(try WebhooksConfiguration.schedule(WebhooksConfiguration().retrySchedule).count == 9)
        for bad in ["", "5", "5d", "-5s", "99999999999999999999s", "169h", "5s,,5m"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try WebhooksConfiguration.schedule(bad) }
        }
    }

    @Test func theOldKeySignsBesideTheNewOneFor24HoursAfterARotation() {
        var endpoint = Self.endpoint()
        #expect(endpoint.signingSecrets(at: 5_000) == ["whsec_x"])
        endpoint.previousSecret = "whsec_old"
        endpoint.rotatedAt = 1_000
        #expect(endpoint.signingSecrets(at: 1_000) == ["whsec_x", "whsec_old"])
        #expect(endpoint.signingSecrets(at: 1_000 + 86_399) == ["whsec_x", "whsec_old"])
        #expect(endpoint.signingSecrets(at: 1_000 + 86_400) == ["whsec_x"])
    }
}
