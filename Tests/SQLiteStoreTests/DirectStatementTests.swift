import Foundation
import GRDB
import SQLiteStore
import StoreModel
import TestHarnesses
import Testing

/// The per-event statements bound and read through SQLite's C API (issue 16 part 2): values land
/// exactly as given, a row of the wrong type is an error and never a trap, a failing statement says
/// SQLite's reason without the values bound to it, and every statement stays usable after a failure.
@Suite(.timeLimit(.minutes(3))) struct DirectStatementTests {
    private static func record(_ id: String, storeID: String?, courierID: String?, body: String) -> OrderRecord {
        OrderRecord(id: id, status: "assigned", storeID: storeID, courierID: courierID, version: 1, updatedAt: nil,
                    body: body, appliedAt: 1)
    }

    @Test func textIsStoredExactlyEmptyAsEmptyNullAsNullNonASCIIIncluded() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let body = "{\"id\":\"é-1\",\"status\":\"assigned\",\"note\":\"caf\u{E9} \u{1F600} \\u0000\"}"
        let head = try store.changeHead()
        try store.applyUpsert(Self.record("é-1", storeID: "", courierID: nil, body: body))
        let stored = try #require(try store.order(id: "é-1"))
        #expect(stored.body == body)
        #expect(stored.storeID == "", "an empty string is text, not NULL")
        #expect(stored.courierID == nil)
        guard case .changes(let changes) = try store.changes(after: head, limit: 10) else {
            Issue.record("the change log cannot be read")
            return
        }
        #expect(changes.map(\.body) == [body])
        #expect(changes.first?.after == OrderChange.Fields(status: "assigned", storeID: "", courierID: nil))

        // Journaled (no immediate apply on this store): the job carries the same values.
        try store.journal([NewJob(kind: .upsert, orderID: "é-2", order: Self.record("é-2", storeID: nil, courierID: "",
                                                                                    body: body), source: "stream")])
        let job = try #require(try store.headJobs(limit: 1).first)
        #expect(job.payload == body && job.storeID == nil && job.courierID == "" && job.orderID == "é-2")
    }

    /// Texts are copied into 4 KiB blocks that SQLite reads in place: a text larger than a block, one
    /// that overflows the block the texts before it filled, and the small ones after either, all land
    /// exactly as given, in the order row, the change log and the journal.
    @Test(arguments: [0, 4_000, 4_095, 4_096, 4_097, 10_000, 1_000_000])
    func textsAroundTheArenasBlockSizeAreStoredExactly(_ padding: Int) throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let filler = String((0..<padding).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
        let body = "{\"id\":\"o-\(padding)\",\"note\":\"\(filler)\"}"
        let head = try store.changeHead()
        let id = "o-" + String(repeating: "x", count: padding % 97)
        try store.applyUpsert(Self.record(id, storeID: "store-" + filler.prefix(40), courierID: "c-\(padding)", body: body))
        let stored = try #require(try store.order(id: id))
        #expect(stored.body == body)
        #expect(stored.storeID == "store-" + filler.prefix(40) && stored.courierID == "c-\(padding)")
        guard case .changes(let changes) = try store.changes(after: head, limit: 10) else {
            Issue.record("the change log cannot be read")
            return
        }
        #expect(changes.map(\.body) == [body] && changes.map(\.orderID) == [id])

        try store.journal([NewJob(kind: .upsert, orderID: id + "-j", order: Self.record(id + "-j", storeID: filler,
                                                                                      courierID: "c", body: body), source: "stream")])
        let job = try #require(try store.headJobs(limit: 1).first)
        #expect(job.payload == body && job.storeID == filler && job.courierID == "c" && job.orderID == id + "-j")
    }

    /// A NUL inside a value (an id read from `"a\u0000b"`) ends the text, as GRDB binds and reads
    /// text in the rest of the store: written here and read there, or the other way, the value is
    /// the same, so a lookup by id finds what the upsert wrote.
    @Test func aNULEndsTheTextAsEverywhereElseInTheStore() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyUpsert(Self.record("a\u{0}b", storeID: "s\u{0}t", courierID: nil, body: "{}"))
        #expect(try store.orders().map(\.id) == ["a"])
        #expect(try store.order(id: "a")?.storeID == "s")
        #expect(try store.applyUpsert(Self.record("a\u{0}c", storeID: nil, courierID: nil, body: "{}")) == .stale,
                "the same order: version 1 is not newer than version 1")
        #expect(try store.applyDelete(orderID: "a", version: 2) == .deleted)
    }

    @Test func aRowOfTheWrongTypeWrittenByHandIsAnErrorAndTheStatementsStayUsable() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyUpsert(order(1, version: 1))
        try store.applyUpsert(order(2, version: 1))
        let vandal = try DatabaseQueue(path: temporary.store.path)
        try vandal.write { db in
            try db.execute(sql: #"UPDATE "order" SET version = 'abc' WHERE id = '1'"#)
            try db.execute(sql: #"UPDATE "order" SET version = 2.5 WHERE id = '2'"#)
        }
        let text = #expect(throws: DatabaseError.self) { try store.applyUpsert(order(1, version: 2)) }
        #expect(text?.message?.contains("version") == true, "\(String(describing: text))")
        let real = #expect(throws: DatabaseError.self) { try store.applyUpsert(order(2, version: 3)) }
        #expect(real?.message?.contains("version") == true, "\(String(describing: real))")
        #expect(try store.applyUpsert(order(3, version: 1)) == .applied, "the statements are usable after the errors")
        try vandal.write { db in try db.execute(sql: #"UPDATE "order" SET version = 4.0 WHERE id = '2'"#) }
        #expect(try store.applyUpsert(order(2, version: 4)) == .stale, "a whole real reads as the integer it is")
        #expect(try store.applyUpsert(order(2, version: 5)) == .applied)
    }

    @Test func aFailingWriteSaysSQLitesReasonWithoutItsValuesAndLeavesNothingBehind() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let vandal = try DatabaseQueue(path: temporary.store.path)
        try vandal.write { db in
            try db.execute(sql: """
                CREATE TRIGGER refuse_13 BEFORE INSERT ON "order" WHEN NEW.id = '13'
                BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END
                """)
        }
        let head = try store.changeHead()
        let secret = "body-secret-7f3a"
        let error = #expect(throws: DatabaseError.self) {
            try store.applyUpsert(order(13, version: 1, extra: ["note": secret]))
        }
        let described = String(describing: error)
        #expect(described.contains("refused by a trigger"), "\(described)")
        #expect(!described.contains(secret), "no bound value in the error: \(described)")
        #expect(try store.order(id: "13") == nil)
        #expect(try store.changeHead() == head, "the failed upsert appended no change")
        #expect(try store.applyUpsert(order(14, version: 1)) == .applied, "the same statement runs again")
        #expect(try store.order(id: "14") != nil)
    }
}
