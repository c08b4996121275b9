import GRDB
import SQLiteStore
import StoreModel
import OrderSync
import TestHarnesses
import TestKit
import Testing

@Suite(.timeLimit(.minutes(3))) struct LockedStoreTests {
    @Test func aJobThatCannotBeAppliedWhileTheDatabaseIsLockedWaitsAndIsNotLost() async throws {
        let temporary = try TemporaryStore()
        let store = try SQLiteOrderStore(path: temporary.store.path, busyTimeout: 0.05)
        try await store.journal([NewJob(kind: .upsert, order: try order(1, version: 1), source: "test"),
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
}
