import Foundation
import GRDB
@testable import SQLiteStore
import StoreModel
import TestHarnesses
import Testing

/// The change log of DESIGN §11 in the store: numbering in the apply transaction, what counts as a
/// change, user switches, pruning, and the migration onto an existing database.
@Suite(.timeLimit(.minutes(3))) struct ChangeLogTests {
    @Test func appliedChangesAreNumberedConsecutivelyAndNoOpsAreNot() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let start = try store.changeHead()
        try store.applyUpsert(try order(1, status: "created", version: 1))
        try store.applyUpsert(try order(1, status: "created", version: 1))  // stale: not a change
        try store.applyDelete(orderID: "9", version: 1)  // absent: not a change
        try store.applyPage([try order(2, status: "assigned", version: 1), try order(3, version: 1)])
        try store.completeFullSync(keeping: ["1", "2"], completing: nil)
        guard case .changes(let changes) = try store.changes(after: start, limit: 100) else {
            Issue.record("expected changes")
            return
        }
        #expect(changes.map(\.seq) == Array((start + 1)...(start + 4)))
        #expect(changes.map(\.kind) == [.upserted, .upserted, .upserted, .deleted])
        #expect(changes.map(\.orderID) == ["1", "2", "3", "3"])
        #expect(changes[3].before?.status == "assigned" && changes[3].body == nil)
        #expect(changes[0].before == nil && changes[0].after?.status == "created")
    }

    @Test func aUserSwitchRecordsTheClearingAndMovesTheFloorPastIt() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.claim(for: "first")
        try store.applyUpsert(try order(1, version: 1))
        try store.applyUpsert(try order(2, version: 1))
        let before = try store.changeHead()
        try store.claim(for: "second")
        let after = try store.changeHead()
        #expect(after == before + 2)
        // The previous user's order bodies are gone; the two deletions remain for live subscribers.
        let kept = try store.appendedChanges(after: 0, limit: 100)
        #expect(kept.map(\.kind) == [.deleted, .deleted] && kept.allSatisfy { $0.body == nil })
        if case .reset = try store.changes(after: before, limit: 10) {} else { Issue.record("an id from before the switch must reset") }
        if case .changes(let none) = try store.changes(after: after, limit: 10) { #expect(none.isEmpty) } else { Issue.record("the head must resume") }
    }

    @Test func pruningKeepsTheLastChangesInBatches() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        for version in 1...50 { try store.applyUpsert(try order(1, version: version)) }
        #expect(try await store.pruneChanges(keeping: 10, batch: 15) == 15)
        #expect(try await store.pruneChanges(keeping: 10, batch: 15) == 15)
        #expect(try await store.pruneChanges(keeping: 10, batch: 15) == 10)
        #expect(try await store.pruneChanges(keeping: 10, batch: 15) == 0)
        #expect(try store.changeCount() == 10)
    }

    /// Runs `body` with today's store opened on a database file that was migrated up to `migration`
    /// only and filled by `fill`, and the file's path.
    private func withStore(
        migratedFrom migration: String, filled fill: (Database) throws -> Void, _ body: (SQLiteOrderStore, String) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("migration-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/orderlive.sqlite"
        // A synchronous scope, so `write` is GRDB's synchronous one in either language mode (make
        // tsan builds in Swift 5 mode, where an async context picks the async overload).
        func fillOld() throws {
            let old = try DatabaseQueue(path: path)
            try SQLiteOrderStore.migrator.migrate(old, upTo: migration)
            try old.write(fill)
        }
        try fillOld()
        try await body(try SQLiteOrderStore(path: path), path)
    }

    @Test func theMigrationAddsTheLogToADatabaseOfTheFirstSchemaAndKeepsItsData() async throws {
        try await withStore(migratedFrom: "v2-job-order-columns", filled: { db in
            try db.execute(sql: #"INSERT INTO "order" (id, status, body, applied_at) VALUES ('7', 'assigned', '{"id":7,"status":"assigned"}', 1)"#)
        }) { store, _ in
            #expect(try store.order(id: "7")?.body == #"{"id":7,"status":"assigned"}"#)
            #expect(try store.changeCount() == 0)
            let head = try store.changeHead()
            #expect(head > 0 && head < 1 << 53)
            try store.applyUpsert(try order(7, status: "picked_up", version: 2))
            #expect(try store.changeHead() == head + 1)
        }
    }

    @Test func theIndexMigrationKeepsTheStatusIndexAndFilteredReadsAnswerAsBefore() async throws {
        try await withStore(migratedFrom: "v6-webhooks", filled: { db in
            for id in 1...6 {
                try db.execute(
                    sql: #"INSERT INTO "order" (id, status, store_id, courier_id, body, applied_at) VALUES (?, ?, ?, ?, ?, 1)"#,
                    arguments: ["\(id)", id % 2 == 0 ? "assigned" : "delivered", "\(id % 3)", "c\(id % 2)", "{\"id\":\(id)}"])
            }
        }) { store, path in
            let indexes = try DatabaseQueue(path: path).read { db in
                try String.fetchAll(db, sql: #"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'order' ORDER BY name"#)
            }
            #expect(indexes == ["order_status", "sqlite_autoindex_order_1"])
            #expect(try store.snapshot(matching: OrderFilter(storeIDs: ["1"])).orders.map(\.id) == ["1", "4"])
            #expect(try store.snapshot(matching: OrderFilter(statuses: ["assigned"], courierIDs: ["c0"])).orders.map(\.id)
                == ["2", "4", "6"])
            #expect(try store.orders(status: "delivered").map(\.id) == ["1", "3", "5"])
        }
    }

    @Test func theBodyChangeMigrationKeepsEveryChangesOwnBodyAndPagesReferToRowsAfterIt() async throws {
        try await withStore(migratedFrom: "v8-webhook-revision", filled: { db in
            try db.execute(sql: #"INSERT INTO "order" (id, status, version, body, applied_at) VALUES ('7', 'created', 1, '{"id":7}', 1)"#)
            try db.execute(sql: """
                INSERT INTO order_change (seq, order_id, kind, version, body, at, status)
                VALUES ((SELECT floor FROM change_log) + 1, '7', 'upserted', 1, '{"id":7}', 1, 'created')
                """)
        }) { store, path in
            try store.applyUpsert(try order(7, status: "assigned", version: 2))
            try store.applyPage([try order(8, version: 1)])
            let changes = try store.appendedChanges(after: 0, limit: 10)
            #expect(changes.map(\.orderID) == ["7", "7", "8"])
            #expect(changes.map(\.body) == [#"{"id":7}"#, try order(7, status: "assigned", version: 2).body, try order(8, version: 1).body])
            #expect(SQLiteStoreFile.check(path).isSound)
        }
    }

    @Test func theWebhookRevisionMigrationKeepsEveryEndpointAtRevisionZero() async throws {
        try await withStore(migratedFrom: "v7-order-indexes", filled: { db in
            try db.execute(sql: """
                INSERT INTO webhook_endpoint (url, secret, events, store_ids, cursor, created_at)
                VALUES ('http://127.0.0.1:9/hook', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', '', '', 7, 1)
                """)
        }) { store, _ in
            let endpoint = try #require(try store.webhookEndpoints().first)
            #expect(endpoint.cursor == 7 && endpoint.revision == 0)
            #expect(try await store.rewindWebhookEndpoint(id: endpoint.id, to: 7))
            #expect(try store.webhookEndpoints().first?.revision == 1)
        }
    }
}
