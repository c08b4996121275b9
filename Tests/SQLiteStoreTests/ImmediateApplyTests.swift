import Foundation
import GRDB
import SQLiteStore
import StoreModel
import Synchronization
import TestHarnesses
import Testing

/// One write per push or event (issue 16): with ``ImmediateApply``, a whole-order job that finds the
/// journal empty is applied in the transaction that accepts it; anything behind a job that must wait
/// is journaled, so journal order, all-or-nothing per request and dedupe all hold as before.
@Suite(.timeLimit(.minutes(3))) struct ImmediateApplyTests {
    /// What the store reported after its commits.
    final class Heard: Sendable {
        let applied = Mutex<[String]>([])
        let committedSeqs = Mutex<[Int64]>([])
    }

    private static func store(_ heard: Heard) throws -> TemporaryStore {
        try TemporaryStore(
            changesCommitted: { seq in heard.committedSeqs.withLock { $0.append(seq) } },
            immediateApply: ImmediateApply { kind, count in heard.applied.withLock { $0.append("\(kind.rawValue)×\(count)") } })
    }

    private static func push(_ key: String, _ jobs: [NewJob], notification: String? = nil) -> IdempotentSubmission {
        IdempotentSubmission(requestKey: key, parts: [.init(key: notification ?? "n-" + key, jobs: jobs)], response: "{}")
    }

    private static func upsert(_ id: Int, version: Int, status: String = "assigned") throws -> NewJob {
        let record = try order(id, status: status, version: version)
        return NewJob(kind: .upsert, orderID: record.id, order: record, source: "push")
    }

    private static let policy = SubmissionPolicy(dedupeSince: 0, highWaterJobs: 100)

    @Test func aWholeOrderPushIntoAnEmptyJournalIsStoredInTheTransactionThatAcceptsIt() async throws {
        let heard = Heard()
        let temporary = try Self.store(heard)
        let store = temporary.store
        let head = try store.changeHead()
        let outcomes = await store.accept([
            Self.push("msg_1", [try Self.upsert(1, version: 1)]),
            Self.push("msg_2", [NewJob(kind: .delete, orderID: "1", version: 2, source: "push")]),
            Self.push("msg_3", [try Self.upsert(2, version: 1)]),
        ], policy: Self.policy)
        #expect(outcomes == [
            .accepted(jobs: 1, duplicateParts: 0, applied: 1), .accepted(jobs: 1, duplicateParts: 0, applied: 1),
            .accepted(jobs: 1, duplicateParts: 0, applied: 1),
        ])
        #expect(try store.counts().journalDepth == 0, "nothing was journaled")
        #expect(try store.orders().map(\.id) == ["2"])
        #expect(try store.tombstone(id: "1")?.version == 2)
        guard case .changes(let changes) = try store.changes(after: head, limit: 10) else {
            Issue.record("the change log cannot be read from \(head)")
            return
        }
        #expect(changes.map(\.seq) == [head + 1, head + 2, head + 3])
        #expect(changes.map(\.kind) == [.upserted, .deleted, .upserted])
        #expect(heard.committedSeqs.withLock { $0 } == [head + 3], "the change feed is woken once, after the commit")
        #expect(heard.applied.withLock { $0.sorted() } == ["delete×1", "upsert×2"])

        // The same request again is a duplicate, and a new request with a seen notification is one
        // duplicate part: neither writes an order again.
        let again = await store.accept([
            Self.push("msg_3", [try Self.upsert(2, version: 5, status: "picked_up")]),
            Self.push("msg_4", [try Self.upsert(2, version: 6, status: "delivered")], notification: "n-msg_1"),
        ], policy: Self.policy)
        #expect(again == [.duplicate(response: "{}"), .accepted(jobs: 0, duplicateParts: 1)])
        #expect(try store.order(id: "2")?.status == "assigned")
        #expect(try store.changeHead() == head + 3)
    }

    /// The synchronous overload (what `make bench-instructions` counts) is the same transaction: the
    /// order is stored, the feed woken after the commit, and the request's key remembered.
    @Test func theSynchronousAcceptCommitsWhatTheAsyncOneDoes() throws {
        let heard = Heard()
        let temporary = try Self.store(heard)
        let store = temporary.store
        let head = try store.changeHead()
        let outcomes: [SubmissionOutcome] = store.accept([Self.push("msg_1", [try Self.upsert(7, version: 1)])], policy: Self.policy)
        #expect(outcomes == [.accepted(jobs: 1, duplicateParts: 0, applied: 1)])
        #expect(try store.order(id: "7")?.status == "assigned")
        #expect(heard.committedSeqs.withLock { $0 } == [head + 1])
        let again: [SubmissionOutcome] = store.accept([Self.push("msg_1", [try Self.upsert(7, version: 2)])], policy: Self.policy)
        #expect(again == [.duplicate(response: "{}")])
        #expect(try store.changeHead() == head + 1)
    }

    @Test func behindAJobThatMustWaitEveryJobIsJournaledInOrder() async throws {
        let heard = Heard()
        let temporary = try Self.store(heard)
        let store = temporary.store
        let outcomes = await store.accept([
            Self.push("msg_1", [try Self.upsert(1, version: 1), NewJob(kind: .fetch, orderID: "2", source: "push"),
                                try Self.upsert(3, version: 1)]),
            Self.push("msg_2", [try Self.upsert(4, version: 1)]),
        ], policy: Self.policy)
        #expect(outcomes == [.accepted(jobs: 3, duplicateParts: 0, applied: 1), .accepted(jobs: 1, duplicateParts: 0)])
        #expect(try store.orders().map(\.id) == ["1"], "only the job ahead of the fetch was applied")
        #expect(try store.headJobs(limit: 10).map(\.orderID) == ["2", "3", "4"])

        // A later batch finds the journal busy: it journals behind, even a whole order.
        let later = await store.accept([Self.push("msg_3", [try Self.upsert(5, version: 1)])], policy: Self.policy)
        #expect(later == [.accepted(jobs: 1, duplicateParts: 0)])
        // The stream's journal follows the same rule.
        await #expect(try store.journal([try Self.upsert(6, version: 1)], cursor: "e-1") == 1)
        #expect(try store.headJobs(limit: 10).map(\.orderID) == ["2", "3", "4", "5", "6"])
        #expect(try store.streamCursor() == "e-1")

        // Once the executor has drained the journal, whole orders are applied at once again.
        let jobs = try store.headJobs(limit: 10)
        try store.applyUpsert(try order(2, version: 1), completing: jobs[0].id)
        #expect(try store.applyInOneTransaction(Array(jobs.dropFirst())) == 4)
        await #expect(try store.journal([try Self.upsert(7, version: 1), NewJob(kind: .fetch, orderID: "8", source: "stream"),
                                   try Self.upsert(9, version: 1)], cursor: "e-2") == 2)
        #expect(try store.orders().map(\.id) == ["1", "2", "3", "4", "5", "6", "7"])
        #expect(try store.headJobs(limit: 10).map(\.orderID) == ["8", "9"])
        #expect(try store.streamCursor() == "e-2")
    }

    /// A request that fails halfway writes nothing, the requests beside it in the batch are kept, and
    /// the change log's numbers it had used are used again: the feed sees no gap.
    @Test func aFailingRequestRollsBackWhatItAppliedAndLeavesNoGapInTheChangeLog() async throws {
        let heard = Heard()
        let temporary = try Self.store(heard)
        let store = temporary.store
        let head = try store.changeHead()
        // Another connection (as an operator might) makes one order id refused by the database.
        let other = try DatabaseQueue(path: temporary.directory + "/orderlive.sqlite")
        try await other.write { db in
            try db.execute(sql: """
                CREATE TRIGGER refuse_poison BEFORE INSERT ON "order" WHEN NEW.id = '666'
                BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END
                """)
        }
        let outcomes = await store.accept([
            Self.push("msg_1", [try Self.upsert(1, version: 1)]),
            Self.push("msg_2", [try Self.upsert(2, version: 1), try Self.upsert(666, version: 1)]),
            Self.push("msg_3", [try Self.upsert(3, version: 1)]),
        ], policy: Self.policy)
        #expect(outcomes.count == 3)
        #expect(outcomes[0] == .accepted(jobs: 1, duplicateParts: 0, applied: 1))
        guard case .failed(let reason) = outcomes[1] else {
            Issue.record("the request with the refused order was \(outcomes[1])")
            return
        }
        #expect(reason.contains("refused by a test trigger"))
        #expect(outcomes[2] == .accepted(jobs: 1, duplicateParts: 0, applied: 1))
        #expect(try store.orders().map(\.id) == ["1", "3"], "the failed request's first order went with it")
        guard case .changes(let changes) = try store.changes(after: head, limit: 10) else {
            Issue.record("the change log cannot be read from \(head)")
            return
        }
        #expect(changes.map(\.seq) == [head + 1, head + 2])
        #expect(changes.map(\.orderID) == ["1", "3"])
        #expect(heard.applied.withLock { $0 } == ["upsert×2"], "the rolled-back upsert is not counted")
        // The failed request can be sent again once the database takes it; its key was not kept.
        try await other.write { db in try db.execute(sql: "DROP TRIGGER refuse_poison") }
        let retried = await store.accept([
            Self.push("msg_2", [try Self.upsert(2, version: 1), try Self.upsert(666, version: 1)]),
        ], policy: Self.policy)
        #expect(retried == [.accepted(jobs: 2, duplicateParts: 0, applied: 2)])
        #expect(try store.orders().map(\.id) == ["1", "2", "3", "666"])
    }

    /// Without ``ImmediateApply`` (the store's default, and always on PostgreSQL) every job waits in
    /// the journal for the executor.
    @Test func withoutItEveryJobIsJournaled() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let outcomes = await store.accept([Self.push("msg_1", [try Self.upsert(1, version: 1)])], policy: Self.policy)
        #expect(outcomes == [.accepted(jobs: 1, duplicateParts: 0)])
        await #expect(try store.journal([try Self.upsert(2, version: 1)], cursor: "e-1") == 1)
        #expect(try store.orders().isEmpty)
        #expect(try store.headJobs(limit: 10).map(\.orderID) == ["1", "2"])
    }
}
