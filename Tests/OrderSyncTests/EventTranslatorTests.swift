import Foundation
import OrderStore
import OrderSync
import ServerSentEvents
import Testing
import TestSupport

@Suite struct EventTranslatorTests {
    @Test func theStoredBodyIsByteForByteWhatTheBackendSent() {
        let data = #"{"order":{"status":"assigned","id":12,"version":7,"price":12.50,"tags":["b","a"]}}"#
        let translation = EventTranslator.translate(ServerSentEvent(type: "order.updated", data: data), now: 1)
        #expect(translation.jobs.first?.order?.body == #"{"status":"assigned","id":12,"version":7,"price":12.50,"tags":["b","a"]}"#)
    }

    private func translate(_ type: String, _ data: String, id: String = "7") -> EventTranslation {
        EventTranslator.translate(ServerSentEvent(type: type, data: data, lastEventID: id), now: 1)
    }

    @Test func orderEventsWithABodyBecomeUpserts() throws {
        for type in ["order.created", "order.updated", "order.status_changed", "order.assigned"] {
            let translation = translate(type, #"{"order":{"id":12,"status":"assigned","version":7,"x":1}}"#)
            #expect(translation.disposition == .jobs)
            #expect(translation.jobs.map(\.kind) == [.upsert])
            #expect(translation.jobs.first?.order?.id == "12")
            #expect(translation.jobs.first?.order?.version == 7)
            #expect(translation.jobs.first?.order?.body.contains(#""x":1"#) == true)
        }
    }

    @Test func idOnlyEventsBecomeFetchesAndDeletesKeepTheirVersion() {
        let fetch = translate("order.updated", #"{"order_id":"12","version":8}"#)
        #expect(fetch.jobs == [NewJob(kind: .fetch, orderID: "12", version: 8, source: "stream")])
        let delete = translate("order.deleted", #"{"order_id":12,"version":9}"#)
        #expect(delete.jobs == [NewJob(kind: .delete, orderID: "12", version: 9, source: "stream")])
    }

    @Test func resyncHeartbeatsAndUnknownTypes() {
        #expect(translate("orders.resync", "anything").jobs.map(\.kind) == [.fullSync])
        #expect(translate("ping", "").disposition == .heartbeat)
        #expect(translate("heartbeat", "{}").disposition == .heartbeat)
        let unknown = translate("invoice.created", "{}")
        #expect(unknown.disposition == .unknownType)
        #expect(unknown.jobs.isEmpty)
    }

    @Test func malformedDataIsADeadLetterPlusAFetchOrAFullSync() {
        let readable = translate("order.updated", #"{"order":{"id":12}}"#)
        #expect(readable.disposition == .malformed)
        #expect(readable.jobs == [NewJob(kind: .fetch, orderID: "12", source: "stream")])
        #expect(readable.deadLetter?.raw.contains(#"{"order":{"id":12}}"#) == true)
        let unreadable = translate("order.updated", "not json")
        #expect(unreadable.jobs.map(\.kind) == [.fullSync])
        #expect(unreadable.deadLetter?.raw.contains("not json") == true)
        #expect(translate("order.deleted", #"{"version":3}"#).jobs.map(\.kind) == [.fullSync])
        #expect(translate("order.updated", #"{"order":"12"}"#).disposition == .malformed)
    }
}

/// An order source for tests whose jobs never need the network.
struct NoOrders: OrderSource {
    func fetchOrder(id: String) async throws(SyncError) -> OrderRecord? { throw SyncError("unexpected fetch") }
    func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?) {
        throw SyncError("unexpected full sync")
    }
}
