import Foundation
import JSONToolkit
import SQLiteStore
import StoreModel
import OrderSync
import ServerSentEvents
import Testing

@Suite(.timeLimit(.minutes(3))) struct EventTranslatorTests {
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

    /// The translator reads only the members it uses, matching keys as bytes; it must mean exactly
    /// what reading the whole object means: the same jobs and the same verdict, prefix by prefix, for
    /// escaped and repeated keys, members it skips, and broken documents.
    @Test(arguments: [
        #"{"order":{"id":12,"status":"assigned","version":7,"items":[{"sku":"a"}],"note":"ü"},"meta":{"a":[1,{}]}}"#,
        #"{"\u006frder":{"\u0069d":"a-1","st\u0061tus":"new"},"order_id":"9"}"#,
        #"{"order":{"id":1,"status":"a"},"order":{"id":2,"status":"b","version":3}}"#,
        #"{"order":"12","order_id":4,"version":2}"#, #"{"order_id":12,"version":9.5,"x":[1,2,]}"#,
        #"{"order":{"id":1,"status":"a","version":1e999}}"#, #" {"order_id": 5} "#,
    ])
    func readingOnlyWhatIsUsedMeansWhatTheWholeObjectMeans(_ data: String) {
        let bytes = Array(data.utf8)
        for type in ["order.updated", "order.deleted"] {
            for end in 0...bytes.count {
                let prefix = String(decoding: bytes[..<end], as: UTF8.self)
                let translation = translate(type, prefix)
                let expected = Self.wholeObjectJobs(type, prefix)
                #expect(translation.jobs == expected.jobs, "\(type) \(prefix)")
                #expect(translation.disposition == expected.disposition, "\(type) \(prefix)")
            }
        }
    }

    /// DESIGN §3's table applied to the object read whole (`JSONObjectText`), as the translator read
    /// it before it skipped what it does not use.
    private static func wholeObjectJobs(_ type: String, _ data: String) -> (jobs: [NewJob], disposition: EventTranslation.Disposition) {
        let object = JSONObjectText(Array(data.utf8), keepingTextOf: ["order"])
        let orderID = object?.fields["order_id"]?.identifier ?? object?.fields["order"]?.object?["id"]?.identifier
        let repair = ([orderID.map { NewJob(kind: .fetch, orderID: $0, source: "stream") }
            ?? NewJob(kind: .fullSync, source: "stream")], EventTranslation.Disposition.malformed)
        guard let object else { return repair }
        let version = object.fields["version"]?.integer
        if type == "order.deleted" {
            guard let id = object.fields["order_id"]?.identifier else { return repair }
            return ([NewJob(kind: .delete, orderID: id, version: version, source: "stream")], .jobs)
        }
        if let order = object.fields["order"] {
            guard let fields = order.object, let text = object.texts["order"],
                  let record = try? OrderRecord.decode(fields, text: text, appliedAt: 1) else { return repair }
            return ([NewJob(kind: .upsert, orderID: record.id, order: record, source: "stream")], .jobs)
        }
        guard let id = object.fields["order_id"]?.identifier else { return repair }
        return ([NewJob(kind: .fetch, orderID: id, version: version, source: "stream")], .jobs)
    }
}

/// An order source for tests whose jobs never need the network.
struct NoOrders: OrderSource {
    func fetchOrder(id: String) async throws(SyncError) -> OrderRecord? { throw SyncError("unexpected fetch") }
    func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?) {
        throw SyncError("unexpected full sync")
    }
}
