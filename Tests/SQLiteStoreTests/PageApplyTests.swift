import Foundation
import GRDB
@testable import SQLiteStore
import StoreModel
import TestHarnesses
import TestKit
import Testing

/// A full sync's page (issue 39): new orders inserted fifty to a statement, their changes referring
/// to the order's row for the body until the row changes or goes, and the whole page the same, in
/// effect and in the change log, as the same upserts made one by one.
@Suite(.timeLimit(.minutes(3))) struct PageApplyTests {
    /// How many of the store's changes hold no body of their own.
    private func bodiless(_ store: SQLiteOrderStore) throws -> Int {
        try store.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM order_change WHERE body IS NULL") ?? 0 }
    }

    private func changes(of store: SQLiteOrderStore, after seq: Int64) throws -> [OrderChange] {
        try store.appendedChanges(after: seq, limit: 10_000)
    }

    @Test func aPagesChangesReadTheirBodiesFromTheRowsAndKeepThemWhenTheOrdersChangeOrGo() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let start = try store.changeHead()
        // 60 new orders: one batch of 50, then 10 one by one.
        let page = try (1...60).map { try order($0, status: "created", version: 1) }
        try store.applyPage(page)
        #expect(try bodiless(store) == 60)
        let first = try changes(of: store, after: start)
        #expect(first.map(\.seq) == Array((start + 1)...(start + 60)))
        #expect(first.map(\.body) == page.map(\.body))
        #expect(first.allSatisfy { $0.kind == .upserted && $0.before == nil && $0.after?.status == "created" })

        try store.applyUpsert(try order(5, status: "assigned", version: 2))
        try store.applyDelete(orderID: "7", version: 2)
        try store.completeFullSync(keeping: Set((1...60).filter { $0 != 9 }.map { "\($0)" }), completing: nil)
        // Each change of a row that changed or went now holds its own copy; the others still refer.
        #expect(try bodiless(store) == 57 + 2)
        let all = try changes(of: store, after: start)
        #expect(all.prefix(60).map(\.body) == page.map(\.body), "a superseded change must keep the body it had")
        let updated = try order(5, status: "assigned", version: 2)
        #expect(all[60].orderID == "5" && all[60].body == updated.body)
        #expect(all[61].orderID == "7" && all[61].kind == .deleted && all[61].body == nil)
        #expect(all[62].orderID == "9" && all[62].kind == .deleted)
        #expect(SQLiteStoreFile.check(temporary.directory + "/orderlive.sqlite").isSound)

        // A change whose row was altered by hand no longer finds its body, and the check says so.
        try store.writer.write { db in try db.execute(sql: #"UPDATE "order" SET body_change = NULL WHERE id = '3'"#) }
        #expect(try changes(of: store, after: start)[2].body == nil)
        let verdict = SQLiteStoreFile.check(temporary.directory + "/orderlive.sqlite")
        #expect(verdict.problems == ["1 change(s) in the change log have lost their order's body"])
    }

    @Test func aPrunedChangeIsNotNeededWhenItsOrderChanges() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyPage(try (1...50).map { try order($0, version: 1) })
        try store.applyUpsert(try order(51, version: 1))
        #expect(try await store.pruneChanges(keeping: 1) == 50)
        try store.applyUpsert(try order(1, status: "delivered", version: 2))
        try store.applyDelete(orderID: "2", version: 2)
        #expect(try store.order(id: "1")?.status == "delivered" && store.order(id: "2") == nil)
        #expect(try changes(of: store, after: 0).map(\.orderID) == ["51", "1", "2"])
    }

    /// Random pages against random stores: orders held older, newer or equal, tombstones older and
    /// newer, ids twice in a page (inside a batch and across batches), and stores with no tombstone
    /// at all (where whole batches are inserted). The page must leave the store as one-by-one
    /// upserts do, and each order's changes must be the same, in the same order, with no gap.
    @Test(arguments: 0..<12) func aPageDoesWhatTheSameUpsertsOneByOneDo(seed: UInt64) throws {
        var random = SplitMix(state: seed)
        let withTombstones = seed % 2 == 1
        let paged = try TemporaryStore()
        let single = try TemporaryStore()
        for store in [paged.store, single.store] {
            var prepare = SplitMix(state: seed &+ 1_000)
            for id in 1...40 where prepare.next(upperBound: UInt64(3)) == 0 {
                try store.applyUpsert(try order(id, version: Int(1 + prepare.next(upperBound: UInt64(4)))))
            }
            if withTombstones {
                for id in 41...60 where prepare.next(upperBound: UInt64(3)) == 0 {
                    try store.applyUpsert(try order(id, version: 1))
                    try store.applyDelete(orderID: "\(id)", version: Int64(1 + prepare.next(upperBound: UInt64(3))))
                }
            }
        }
        let pagedStart = try paged.store.changeHead()
        let singleStart = try single.store.changeHead()
        // The first 50 are new (a batch that goes in whole, unless the store has tombstones), then a mix.
        var page = try (100..<150).map { try order($0, status: "created", version: 1) }
        for _ in 0..<(60 + Int(random.next(upperBound: UInt64(60)))) {
            let id = Int(random.next(upperBound: UInt64(180)))
            let statuses = ["created", "assigned", "picked_up", "delivered"]
            page.append(try order(id, status: statuses[Int(random.next(upperBound: UInt64(4)))], version: Int(1 + random.next(upperBound: UInt64(5)))))
        }
        try paged.store.applyPage(page)
        for order in page { try single.store.applyUpsert(order) }

        let orders = { (store: SQLiteOrderStore) in try store.orders().map { [$0.id, $0.status, "\($0.version ?? 0)", $0.body] } }
        #expect(try orders(paged.store) == orders(single.store))
        let pagedChanges = try changes(of: paged.store, after: pagedStart)
        #expect(pagedChanges.map(\.seq) == Array((pagedStart + 1)...(pagedStart + Int64(pagedChanges.count))))
        func byOrder(_ changes: [OrderChange]) -> [String: [String]] {
            Dictionary(grouping: changes, by: \.orderID).mapValues { list in
                list.map { "\($0.kind) \($0.version ?? 0) \($0.body ?? "-") \($0.before?.status ?? "-") \($0.after?.status ?? "-")" }
            }
        }
        #expect(byOrder(pagedChanges) == byOrder(try changes(of: single.store, after: singleStart)))
        #expect(SQLiteStoreFile.check(paged.directory + "/orderlive.sqlite").isSound)
        // Every order changed since keeps every change's body (the rows are rewritten one by one).
        for order in page.prefix(50) { try paged.store.applyUpsert(try TestHarnesses.order(order.id, status: "delivered", version: 9)) }
        let after = try changes(of: paged.store, after: pagedStart)
        #expect(Array(after.prefix(pagedChanges.count)).map(\.body) == pagedChanges.map(\.body))
    }
}
