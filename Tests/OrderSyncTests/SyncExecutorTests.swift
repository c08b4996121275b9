import AsyncSignals
import AuthSession
import CurlHTTP
import EventStream
import Foundation
import Logging
import SQLiteStore
import StoreModel
import OrderSync
import Sandbox
import TestHarnesses
import TestKit
import Testing

@Suite(.timeLimit(.minutes(3))) struct SyncExecutorTests {
    @Test func fetchAnswering503IsRetriedAndSucceeds() async throws {
        try await SyncHarness.run { harness in
            let id = harness.sandbox.orders.create(announce: .silent)
            harness.sandbox.orders.failFetches([503])
            try await harness.store.journal([NewJob(kind: .fetch, orderID: "\(id)", source: "test")])
            let first = try await harness.executor.runReadyJobs()
            #expect(first == SyncExecutor.Progress(completed: 0, failed: 1, deadLettered: 0))
            #expect(try harness.store.counts().journalDepth == 1, "a failed job waits in the journal, never vanishes")
            harness.wall.advance(by: 1.5)
            let second = try await harness.executor.runReadyJobs()
            #expect(second.completed == 1)
            #expect(try harness.local() == harness.upstream())
        }
    }

    @Test func fetchThatAlwaysFailsBecomesADeadLetterAndTheRestGoesOn() async throws {
        try await SyncHarness.run(maximumAttempts: 3) { harness in
            let id = harness.sandbox.orders.create(announce: .silent)
            harness.sandbox.orders.failFetches([500, 500, 500])
            let other = try order(99, version: 1)
            try await harness.store.journal([
                NewJob(kind: .fetch, orderID: "\(id)", source: "test"),
                NewJob(kind: .upsert, order: other, source: "test"),
            ])
            var total = SyncExecutor.Progress()
            for _ in 0..<5 {
                let progress = try await harness.executor.runReadyJobs()
                total.completed += progress.completed
                total.failed += progress.failed
                total.deadLettered += progress.deadLettered
                harness.wall.advance(by: 600)
            }
            #expect(total.failed == 2)
            #expect(total.deadLettered == 1)
            #expect(total.completed == 1)
            let letters = try harness.store.deadLetters()
            #expect(letters.map(\.orderID) == ["\(id)"])
            #expect(letters.first?.attempts == 3)
            #expect(try harness.store.order(id: "99")?.body == other.body)
            #expect(try harness.store.counts().deadLetters == 1)
        }
    }

    @Test func fetchOfAGoneOrderDeletesIt() async throws {
        try await SyncHarness.run { harness in
            try harness.store.applyUpsert(order(41, version: 1))
            try await harness.store.journal([NewJob(kind: .fetch, orderID: "41", source: "test")])
            #expect(try await harness.executor.runReadyJobs().completed == 1)
            #expect(try harness.store.order(id: "41") == nil)
            #expect(try harness.store.tombstone(id: "41") != nil)
        }
    }

    @Test func fullSyncRemovesWhatWasDeletedUpstreamButOnlyAfterEveryPage() async throws {
        try await SyncHarness.run(pageSize: 2) { harness in
            for _ in 0..<5 { harness.sandbox.orders.create(announce: .silent) }
            try harness.store.applyUpsert(order(999, status: "stale", version: 1))
            harness.sandbox.orders.failPage(1, status: 503)
            try await harness.store.journal([NewJob(kind: .fullSync, source: "test")])
            #expect(try await harness.executor.runReadyJobs().failed == 1)
            #expect(try harness.store.order(id: "999") != nil, "a full sync whose second page failed deletes nothing")
            harness.wall.advance(by: 2)
            #expect(try await harness.executor.runReadyJobs().completed == 1)
            #expect(try harness.local() == harness.upstream())
            #expect(try harness.store.tombstone(id: "999") != nil)
        }
    }

    @Test func outOfOrderAndRepeatedUpsertsLeaveTheNewestStateAndJobsRunOneAtATime() async throws {
        try await SyncHarness.run { harness in
            let jobs = try [3, 1, 3, 2, 5, 4, 5].map { version in
                NewJob(kind: .upsert, order: try order(7, status: "v" + String(version), version: version), source: "test")
            }
            try await harness.store.journal(jobs)
            #expect(try await harness.executor.runReadyJobs().completed == 7)
            #expect(try harness.store.order(id: "7")?.status == "v5")
            #expect(harness.executor.maximumConcurrentJobs == 1)
        }
    }
}

/// An order source with no session for its first `refusals` calls, then one order.
final class SessionlessSource: OrderSource {
    private let remaining: Locked<Int>
    let record: OrderRecord

    init(refusals: Int, record: OrderRecord) {
        remaining = Locked(refusals)
        self.record = record
    }

    func fetchOrder(id: String) async throws(SyncError) -> OrderRecord? {
        let refuse = remaining.withLock { count -> Bool in
            defer { count -= 1 }
            return count > 0
        }
        if refuse { throw SyncError("no session: not logged in", waitsForSession: true) }
        return record
    }

    func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?) {
        ([record], nil)
    }
}

@Suite(.timeLimit(.minutes(3))) struct SessionlessExecutorTests {
    /// Without a session a fetch cannot run, but nothing is wrong with the job: it waits without
    /// counting attempts, however long that takes, and runs after a login.
    @Test func jobsWaitForASessionWithoutBecomingDeadLetters() async throws {
        let wall = WallClock()
        let temporary = try TemporaryStore(now: { wall.now })
        let record = try order(7, status: "delivered", version: 3)
        let executor = SyncExecutor(
            store: temporary.store, source: SessionlessSource(refusals: 20, record: record),
            configuration: .init(maximumAttempts: 3), now: { wall.now }, logger: quietLogger)
        try await temporary.store.journal([NewJob(kind: .fetch, orderID: "7", source: "test")])
        for _ in 0..<20 {
            let progress = try await executor.runReadyJobs()
            #expect(progress == SyncExecutor.Progress(completed: 0, failed: 1, deadLettered: 0))
            #expect(try await executor.runReadyJobs() == SyncExecutor.Progress(), "a waiting job is not retried at once")
            wall.advance(by: 6)
        }
        #expect(try temporary.store.counts().deadLetters == 0)
        #expect(try temporary.store.headJobs(limit: 1).first?.attempts == 0)
        #expect(try await executor.runReadyJobs().completed == 1)
        #expect(try temporary.store.order(id: "7")?.status == "delivered")
    }
}

/// FIELD-NOTES 15 under a race: a user switch (the stream service's `claim` on reconnect, beside the
/// running executor) clears the journal between the executor's read of its head and the apply. The
/// previous user's order must not be applied into the new user's store, and the executor goes on.
@Suite(.timeLimit(.minutes(3))) struct UserSwitchUnderTheExecutorTests {
    /// A real store whose first read of the journal's head is followed, before the executor's apply,
    /// by a user switch: the one seam the race needs, made deterministic.
    final class SwitchingStore: JobApplier {
        let store: SQLiteOrderStore
        let switched = Locked(false)

        init(_ store: SQLiteOrderStore) {
            self.store = store
        }

        func headJobs(limit: Int) async throws -> [JobRecord] {
            let head = try store.headJobs(limit: limit)
            let first = switched.withLock { done in
                defer { done = true }
                return !done
            }
            if !head.isEmpty, first {
                #expect(try store.claim(for: "second-user"))
            }
            return head
        }

        func headJobs(after id: Int64, limit: Int) async throws -> [JobRecord] { try store.headJobs(after: id, limit: limit) }
        func applyInOneTransaction(_ jobs: [JobRecord]) async throws -> Int { try store.applyInOneTransaction(jobs) }
        func applyUpsert(_ order: OrderRecord, completing jobID: Int64?) async throws -> UpsertOutcome {
            try store.applyUpsert(order, completing: jobID)
        }
        func applyDelete(orderID: String, version: Int64?, completing jobID: Int64?) async throws -> DeleteOutcome {
            try store.applyDelete(orderID: orderID, version: version, completing: jobID)
        }
        func applyPage(_ orders: [OrderRecord], for jobID: Int64?) async throws { try store.applyPage(orders, for: jobID) }
        func completeFullSync(keeping ids: Set<String>, completing jobID: Int64?) async throws -> Int {
            try store.completeFullSync(keeping: ids, completing: jobID)
        }
        func recordFailure(jobID: Int64, reason: String, retryAt: Double, countsAttempt: Bool) async throws {
            try store.recordFailure(jobID: jobID, reason: reason, retryAt: retryAt, countsAttempt: countsAttempt)
        }
        func deadLetter(job: JobRecord, reason: String) async throws { try store.deadLetter(job: job, reason: reason) }
    }

    @Test(arguments: [1, 3])
    func aJobTheSwitchClearedIsNotAppliedAndTheExecutorGoesOn(_ jobs: Int) async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.claim(for: "first-user")
        // One job goes alone (applyUpsert), several go as one run (applyInOneTransaction).
        try await store.journal(try (1...jobs).map { id in NewJob(kind: .upsert, order: try order(id, version: 1), source: "push") })
        let switching = SwitchingStore(store)
        let executor = SyncExecutor(store: switching, source: NoOrders(), logger: quietLogger)
        let progress = try await executor.runReadyJobs()
        #expect(switching.switched.withLock { $0 })
        #expect(progress == SyncExecutor.Progress(), "nothing applied, nothing failed")
        #expect(try store.orders().isEmpty, "the previous user's orders never reach the new user's store")
        #expect(try store.counts().journalDepth == 0)
        #expect(try store.deadLetters().isEmpty)
        // The new user's jobs are applied as usual.
        try await store.journal([NewJob(kind: .upsert, order: try order(9, status: "created", version: 1), source: "push")])
        #expect(try await executor.runReadyJobs().completed == 1)
        #expect(try store.orders().map(\.id) == ["9"])
    }
}
