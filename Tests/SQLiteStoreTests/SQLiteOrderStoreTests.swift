import Foundation
import GRDB
import SQLiteStore
import StoreModel
import ServerSentEvents
import TestHarnesses
import Testing

@Suite(.timeLimit(.minutes(3))) struct SQLiteOrderStoreTests {
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

    /// A full-sync page reads what the store holds of its orders in one query: it must decide every
    /// order exactly as single upserts do, including an id the page carries twice.
    @Test func aPageAppliesByTheRulesOfSingleUpserts() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyUpsert(order(1, status: "assigned", version: 5))
        try store.applyUpsert(order(2, status: "assigned", version: 5))
        try store.applyUpsert(order(3, version: 2))
        try store.applyUpsert(order(4, version: 2))
        try store.applyDelete(orderID: "3", version: 4)
        try store.applyDelete(orderID: "4", version: 4)
        let head = try store.changeHead()
        try store.applyPage([
            try order(1, status: "created", version: 4),    // older than the row: stale
            try order(2, status: "picked_up", version: 6),  // newer: applied, with the row's fields as before
            try order(3, status: "created", version: 3),    // older than the tombstone: stays deleted
            try order(4, status: "reopened", version: 5),   // newer than the tombstone: back, tombstone gone
            try order(5, status: "created", version: 1),    // new
            try order(5, status: "created", version: 1),    // the same again: stale
            try order(2, status: "assigned", version: 6),   // equal to what this page applied: stale
            try order(6, status: "created", version: 1),
            try order(6, status: "assigned", version: 2),   // newer than what this page applied
            try order(4, status: "created", version: 4),    // older than what this page brought back
        ])
        #expect(try store.order(id: "1")?.status == "assigned")
        #expect(try store.order(id: "2")?.status == "picked_up")
        #expect(try store.order(id: "3") == nil)
        #expect(try store.tombstone(id: "3")?.version == 4)
        #expect(try store.order(id: "4")?.status == "reopened")
        #expect(try store.tombstone(id: "4") == nil)
        #expect(try store.order(id: "5")?.version == 1)
        #expect(try store.order(id: "6")?.status == "assigned")
        let changes = try store.appendedChanges(after: head, limit: 100)
        #expect(changes.map(\.orderID) == ["2", "4", "5", "6", "6"])
        #expect(changes.first?.before?.status == "assigned")
        #expect(changes[1].before == nil)
        #expect(changes.last?.before?.status == "created")
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
        #expect(try store.headJobs(limit: 1).first?.version == 6)
        try store.journal([NewJob(kind: .fetch, orderID: "4", source: "stream"), NewJob(kind: .fullSync, source: "stream")])
        let counts = try store.counts()
        #expect(counts.journalDepth == 1, "a full sync makes the pending fetches redundant")
        #expect(try store.headJobs(limit: 1).first?.kind == .fullSync)
    }

    @Test func upsertAndItsJobCompleteTogether() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let record = try order(1, version: 1)
        try store.journal([NewJob(kind: .upsert, order: record, source: "stream")], cursor: "1")
        let job = try #require(try store.headJobs(limit: 1).first)
        // The journaled job carries the order's body and fields; appliedAt is stamped when applied.
        #expect(job.order?.body == record.body)
        #expect(job.order?.version == record.version)
        try store.applyUpsert(try #require(job.order), completing: job.id)
        #expect(try store.headJobs(limit: 1).first == nil)
        #expect(try store.order(id: "1")?.body == record.body)
        #expect(try store.order(id: "1")?.appliedAt == 1_000)
    }

    @Test func failuresStayJournaledThenBecomeDeadLetters() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.journal([NewJob(kind: .fetch, orderID: "8", source: "stream")])
        let job = try #require(try store.headJobs(limit: 1).first)
        try store.recordFailure(jobID: try #require(job.id), reason: "HTTP 503", retryAt: 2_000)
        let retried = try #require(try store.headJobs(limit: 1).first)
        #expect(retried.attempts == 1)
        #expect(retried.notBefore == 2_000)
        #expect(retried.lastError == "HTTP 503")
        try store.deadLetter(job: retried, reason: "gave up after 1 attempt")
        #expect(try store.headJobs(limit: 1).first == nil)
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

    @Test func otherConnectionsCanReadWhileTheStoreIsOpen() throws {
        let temporary = try TemporaryStore()
        try temporary.store.applyUpsert(order(1, version: 1))
        // A second, independent reader of the same file (as `orderlive orders` or sqlite3 would be).
        let reader = try SQLiteOrderStore(path: temporary.store.path)
        #expect(try reader.orders().map(\.id) == ["1"])
    }

    /// A database edited by hand — here tables recreated without their NOT NULL constraints, and
    /// NULLs where the store needs values — gives errors, never a trap (GRDB's row subscripts
    /// stop the process on a NULL read as a non-optional value).
    @Test func nullsWrittenByHandIntoRequiredColumnsAreErrorsNotTraps() throws {
        let temporary = try TemporaryStore()
        try temporary.store.applyUpsert(order(1, version: 1))
        let vandal = try DatabaseQueue(path: temporary.store.path)
        try vandal.write { db in
            try db.execute(sql: """
                DROP TABLE "order";
                CREATE TABLE "order" (id TEXT, status TEXT, store_id TEXT, courier_id TEXT, version INTEGER,
                                      updated_at TEXT, body TEXT, applied_at REAL);
                INSERT INTO "order" VALUES ('1', NULL, NULL, NULL, 1, NULL, NULL, 1);
                DROP TABLE job;
                CREATE TABLE job (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT, order_id TEXT, version INTEGER,
                                  payload TEXT, source TEXT, attempts INTEGER, not_before REAL, last_error TEXT,
                                  created_at REAL, status TEXT, store_id TEXT, courier_id TEXT, updated_at TEXT);
                INSERT INTO job (kind, order_id, source) VALUES ('fetch', '1', NULL);
                """)
        }
        #expect(throws: (any Error).self) { try temporary.store.orders() }
        #expect(throws: (any Error).self) { try temporary.store.order(id: "1") }
        #expect(throws: (any Error).self) { try temporary.store.headJobs(limit: 10) }
        #expect(try temporary.store.counts().orders == 1, "counting still works")
    }
}

/// The write-ahead log is checkpointed every `SQLiteOrderStore.checkpointPages` pages (250, not SQLite's
/// 1,000), so each checkpoint the writer runs inside a commit is a quarter of the size.
@Suite(.timeLimit(.minutes(3))) struct CheckpointThresholdTests {
    @Test func theLogIsCheckpointedEvery250PagesNotEvery1000() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let wal = store.path + "-wal"
        let filler = String(repeating: "x", count: 12_000)
        // About 1,600 pages written, four or more per commit: with SQLite's threshold the log would
        // grow past 1,000 pages (4 MB) before its first checkpoint.
        for id in 0..<400 {
            try store.applyUpsert(order(id, extra: ["note": filler]))
        }
        let pageSize = 4_096 + 24
        let frames = (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int ?? 0) / pageSize
        #expect(frames > 0 && frames < 300, "the log reached \(frames) frames")
    }
}
