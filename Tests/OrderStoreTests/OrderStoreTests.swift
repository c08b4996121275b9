import Foundation
import GRDB
import OrderStore
import OrderSync
import ServerSentEvents
import Testing

/// A fresh database file per test (GRDB's advice), removed afterwards.
final class TemporaryStore {
    let directory: String
    let store: OrderStore

    init(now: @escaping @Sendable () -> Double = { 1_000 }) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-db-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try OrderStore(path: directory + "/orderlive.sqlite", now: now)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

func order(_ id: Any, status: String = "assigned", version: Int? = nil, updatedAt: String? = nil,
           extra: [String: Any] = [:]) throws -> OrderRecord {
    var object: [String: Any] = ["id": id, "status": status]
    if let version { object["version"] = version }
    if let updatedAt { object["updated_at"] = updatedAt }
    object.merge(extra) { $1 }
    return try OrderRecord.parse(object, appliedAt: 1)
}

@Suite struct OrderStoreTests {
    @Test func newerVersionWinsOlderAndEqualAreStale() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        #expect(try store.applyUpsert(order(12, status: "assigned", version: 7)) == .applied)
        #expect(try store.applyUpsert(order(12, status: "created", version: 6)) == .stale)
        #expect(try store.applyUpsert(order(12, status: "assigned", version: 7)) == .stale)
        #expect(try store.applyUpsert(order(12, status: "delivered", version: 8)) == .applied)
        #expect(try store.order(id: "12")?.status == "delivered")
        #expect(try store.orders().count == 1)
    }

    @Test func updatedAtOrdersChangesWithoutVersionAndLastWriteWinsWithNeither() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        #expect(try store.applyUpsert(order("a", status: "one", updatedAt: "2026-11-21T10:00:00Z")) == .applied)
        #expect(try store.applyUpsert(order("a", status: "old", updatedAt: "2026-11-21T09:59:59.5Z")) == .stale)
        #expect(try store.applyUpsert(order("a", status: "two", updatedAt: "2026-11-21T10:00:00.250Z")) == .applied)
        #expect(try store.applyUpsert(order("b", status: "x")) == .applied)
        #expect(try store.applyUpsert(order("b", status: "y")) == .applied)
        #expect(try store.order(id: "a")?.status == "two")
        #expect(try store.order(id: "b")?.status == "y")
    }

    @Test func tombstoneStopsAnOlderUpsertFromResurrectingAnOrder() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyUpsert(order(5, version: 3))
        #expect(try store.applyDelete(orderID: "5", version: 4) == .deleted)
        #expect(try store.applyUpsert(order(5, status: "assigned", version: 3)) == .stale)
        #expect(try store.applyUpsert(order(5, status: "assigned", version: 4)) == .stale)
        #expect(try store.order(id: "5") == nil)
        #expect(try store.tombstone(id: "5")?.version == 4)
        // A genuinely newer version (the order came back) is applied.
        #expect(try store.applyUpsert(order(5, status: "reopened", version: 5)) == .applied)
        #expect(try store.tombstone(id: "5") == nil)
    }

    @Test func staleDeleteIsIgnoredAndADeleteOfAnUnknownOrderStillLeavesATombstone() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyUpsert(order(9, version: 10))
        #expect(try store.applyDelete(orderID: "9", version: 8) == .stale)
        #expect(try store.order(id: "9") != nil)
        #expect(try store.applyDelete(orderID: "77", version: 2) == .absent)
        #expect(try store.applyUpsert(order(77, version: 1)) == .stale)
    }

    @Test func fullObjectIsKeptAndOrdersSortByNumericID() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        for id in [10, 2, 1] { try store.applyUpsert(order(id, version: 1, extra: ["note": "x\(id)", "items": [1, 2]])) }
        let orders = try store.orders()
        #expect(orders.map(\.id) == ["1", "2", "10"])
        let body = try JSONSerialization.jsonObject(with: Data(orders[0].body.utf8)) as? [String: Any]
        #expect(body?["note"] as? String == "x1")
        #expect(body?["items"] as? [Int] == [1, 2])
        #expect(try store.orders(status: "assigned").count == 3)
        #expect(try store.orders(status: "delivered").isEmpty)
    }

    @Test func journalAdvancesTheCursorInTheSameTransactionAndCollapsesFetches() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        #expect(try store.streamCursor() == "")
        try store.journal([NewJob(kind: .fetch, orderID: "3", version: 4, source: "stream")], cursor: "41")
        try store.journal([NewJob(kind: .fetch, orderID: "3", version: 6, source: "push")], cursor: "42")
        #expect(try store.streamCursor() == "42")
        #expect(try store.counts().journalDepth == 1)
        #expect(try store.nextJob()?.version == 6)
        try store.journal([NewJob(kind: .fetch, orderID: "4", source: "stream"), NewJob(kind: .fullSync, source: "stream")])
        let counts = try store.counts()
        #expect(counts.journalDepth == 1, "a full sync makes the pending fetches redundant")
        #expect(try store.nextJob()?.kind == .fullSync)
    }

    @Test func upsertAndItsJobCompleteTogether() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let record = try order(1, version: 1)
        try store.journal([NewJob(kind: .upsert, order: record, source: "stream")], cursor: "1")
        let job = try #require(try store.nextJob())
        // The journaled job carries the order's body and fields; appliedAt is stamped when applied.
        #expect(job.order?.body == record.body)
        #expect(job.order?.version == record.version)
        try store.applyUpsert(try #require(job.order), completing: job.id)
        #expect(try store.nextJob() == nil)
        #expect(try store.order(id: "1")?.body == record.body)
        #expect(try store.order(id: "1")?.appliedAt == 1_000)
    }

    @Test func failuresStayJournaledThenBecomeDeadLetters() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.journal([NewJob(kind: .fetch, orderID: "8", source: "stream")])
        let job = try #require(try store.nextJob())
        try store.recordFailure(jobID: try #require(job.id), reason: "HTTP 503", retryAt: 2_000)
        let retried = try #require(try store.nextJob())
        #expect(retried.attempts == 1)
        #expect(retried.notBefore == 2_000)
        #expect(retried.lastError == "HTTP 503")
        try store.deadLetter(job: retried, reason: "gave up after 1 attempt")
        #expect(try store.nextJob() == nil)
        #expect(try store.deadLetters().map(\.orderID) == ["8"])
        #expect(try store.counts().deadLetters == 1)
    }

    @Test func aDifferentUserClearsEverythingAndTheSameUserKeepsIt() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        #expect(try store.claim(for: "5") == false)
        try store.applyUpsert(order(1, version: 1))
        try store.journal([NewJob(kind: .fetch, orderID: "2", source: "stream")], cursor: "9")
        #expect(try store.claim(for: "5") == false)
        #expect(try store.orders().count == 1)
        #expect(try store.claim(for: "6") == true)
        #expect(try store.orders().isEmpty)
        #expect(try store.counts().journalDepth == 0)
        #expect(try store.streamCursor() == "")
        #expect(try store.owner() == "6")
    }

    @Test func aJobThatCannotBeAppliedWhileTheDatabaseIsLockedWaitsAndIsNotLost() async throws {
        let temporary = try TemporaryStore()
        let store = try OrderStore(path: temporary.store.path, busyTimeout: 0.05)
        try store.journal([NewJob(kind: .upsert, order: try order(1, version: 1), source: "test"),
                           NewJob(kind: .upsert, order: try order(2, version: 1), source: "test")])
        let executor = SyncExecutor(store: store, source: NoOrders(), logger: quietLogger)
        // Another process holds the write lock (as a backup tool or a stuck writer would).
        var lockHolder = Configuration()
        lockHolder.allowsUnsafeTransactions = true  // it must keep its transaction open between calls
        let other = try DatabaseQueue(path: temporary.store.path, configuration: lockHolder)
        try await other.writeWithoutTransaction { db in try db.execute(sql: "BEGIN EXCLUSIVE") }
        await #expect(throws: (any Error).self) { try await executor.runReadyJobs() }
        #expect(try store.counts().journalDepth == 2, "nothing applied, nothing lost")
        try await other.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") }
        #expect(try await executor.runReadyJobs().completed == 2)
        #expect(try store.orders().map(\.id) == ["1", "2"])
    }

    @Test func otherConnectionsCanReadWhileTheStoreIsOpen() throws {
        let temporary = try TemporaryStore()
        try temporary.store.applyUpsert(order(1, version: 1))
        // A second, independent reader of the same file (as `orderlive orders` or sqlite3 would be).
        let reader = try OrderStore(path: temporary.store.path)
        #expect(try reader.orders().map(\.id) == ["1"])
    }
}

@Suite struct JSONSpanTests {
    @Test func findsTheExactTextOfAMember() {
        let text = #" { "a" : [1, {"order": 0}], "s":"}\"{", "order" : {"id": 1, "x": "a}b\"c", "n": [1,[2]]} , "z": null }"#
        #expect(JSONSpan.member("order", in: text) == #"{"id": 1, "x": "a}b\"c", "n": [1,[2]]}"#)
        #expect(JSONSpan.member("z", in: text) == "null")
        #expect(JSONSpan.member("a", in: text) == #"[1, {"order": 0}]"#)
        #expect(JSONSpan.member("missing", in: text) == nil)
        #expect(JSONSpan.member("order", in: "[]") == nil)
        #expect(JSONSpan.member("order", in: #"{"order": {"unterminated": "#) == nil)
    }
}

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
