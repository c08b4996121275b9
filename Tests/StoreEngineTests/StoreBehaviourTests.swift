import Foundation
import SQLiteStore
import StoreModel
import TestHarnesses
import Testing

/// The store's rules (DESIGN §3, §4, §8, §11, FIELD-NOTES 15), one body of tests run on each engine:
/// freshness, tombstones, journal order and collapsing, dedupe, dead letters, user switch, change log.
@Suite(.timeLimit(.minutes(5))) struct StoreBehaviourTests {
    @Test(arguments: StoreEngine.allCases)
    func newerWinsAndOlderOrEqualIsStaleByVersionThenByUpdatedAt(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            #expect(try await store.applyUpsert(try order(12, status: "assigned", version: 7), completing: nil) == .applied)
            #expect(try await store.applyUpsert(try order(12, status: "created", version: 6), completing: nil) == .stale)
            #expect(try await store.applyUpsert(try order(12, status: "assigned", version: 7), completing: nil) == .stale)
            #expect(try await store.applyUpsert(try order(12, status: "delivered", version: 8), completing: nil) == .applied)
            #expect(try await store.order(id: "12")?.status == "delivered")
            #expect(try await store.applyUpsert(
                try order("a", status: "one", updatedAt: "2026-11-21T10:00:00Z"), completing: nil) == .applied)
            #expect(try await store.applyUpsert(
                try order("a", status: "old", updatedAt: "2026-11-21T09:59:59.5Z"), completing: nil) == .stale)
            #expect(try await store.applyUpsert(
                try order("a", status: "two", updatedAt: "2026-11-21T10:00:00.250Z"), completing: nil) == .applied)
            #expect(try await store.applyUpsert(try order("b", status: "x"), completing: nil) == .applied)
            #expect(try await store.applyUpsert(try order("b", status: "y"), completing: nil) == .applied)
            #expect(try await store.order(id: "a")?.status == "two")
            #expect(try await store.order(id: "b")?.status == "y")
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func aTombstoneStopsAnOlderUpsertAndAStaleDeleteIsIgnored(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            try await store.applyUpsert(try order(5, version: 3), completing: nil)
            #expect(try await store.applyDelete(orderID: "5", version: 4, completing: nil) == .deleted)
            #expect(try await store.applyUpsert(try order(5, status: "assigned", version: 3), completing: nil) == .stale)
            #expect(try await store.applyUpsert(try order(5, status: "assigned", version: 4), completing: nil) == .stale)
            #expect(try await store.order(id: "5") == nil)
            #expect(try await store.tombstone(id: "5")?.version == 4)
            #expect(try await store.applyUpsert(try order(5, status: "reopened", version: 5), completing: nil) == .applied)
            #expect(try await store.tombstone(id: "5") == nil)
            try await store.applyUpsert(try order(9, version: 10), completing: nil)
            #expect(try await store.applyDelete(orderID: "9", version: 8, completing: nil) == .stale)
            #expect(try await store.order(id: "9") != nil)
            #expect(try await store.applyDelete(orderID: "77", version: 2, completing: nil) == .absent)
            #expect(try await store.applyUpsert(try order(77, version: 1), completing: nil) == .stale)
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func theBodyIsKeptExactlyAndOrdersSortByNumericID(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            for id in [10, 2, 1, 100] {
                try await store.applyUpsert(try order(id, version: 1, extra: ["note": "x\(id) ünï", "items": [1, 2]]), completing: nil)
            }
            let orders = try await store.orders(status: nil)
            #expect(orders.map(\.id) == ["1", "2", "10", "100"])
            let expected = try order(1, version: 1, extra: ["note": "x1 ünï", "items": [1, 2]]).body
            #expect(orders[0].body == expected, "the JSON text comes back byte for byte")
            #expect(try await store.orders(status: "assigned").count == 4)
            #expect(try await store.orders(status: "delivered").isEmpty)
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func theJournalKeepsOrderAdvancesTheCursorWithItsJobsAndCollapsesFetches(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            #expect(try await store.streamCursor() == "")
            try await store.journal([NewJob(kind: .fetch, orderID: "3", version: 4, source: "stream")], cursor: "41", deadLetters: [])
            try await store.journal([NewJob(kind: .fetch, orderID: "3", version: 6, source: "push")], cursor: "42", deadLetters: [])
            #expect(try await store.streamCursor() == "42")
            #expect(try await store.counts().journalDepth == 1)
            #expect(try await store.headJobs(limit: 10).first?.version == 6)
            let upsert = try order(8, version: 2)
            try await store.journal([
                NewJob(kind: .delete, orderID: "6", version: 1, source: "stream"),
                NewJob(kind: .upsert, order: upsert, source: "stream"),
            ], cursor: nil, deadLetters: [])
            let head = try await store.headJobs(limit: 10)
            #expect(head.map(\.kind) == [.fetch, .delete, .upsert])
            #expect(head.compactMap(\.id) == head.compactMap(\.id).sorted())
            #expect(head[2].order?.body == upsert.body && head[2].order?.version == 2)
            try await store.journal([NewJob(kind: .fetch, orderID: "4", source: "stream"), NewJob(kind: .fullSync, source: "stream")],
                                    cursor: nil, deadLetters: [])
            #expect(try await store.headJobs(limit: 10).map(\.kind) == [.delete, .upsert, .fullSync],
                    "a full sync makes the pending fetches redundant")
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func consecutiveJobsApplyInOneTransactionInJournalOrder(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            try await store.journal([
                NewJob(kind: .upsert, order: try order(1, status: "created", version: 1), source: "push"),
                NewJob(kind: .upsert, order: try order(1, status: "assigned", version: 2), source: "push"),
                NewJob(kind: .upsert, order: try order(2, version: 1), source: "push"),
                NewJob(kind: .delete, orderID: "2", version: 2, source: "push"),
            ], cursor: nil, deadLetters: [])
            let head = try await store.headJobs(limit: 10)
            #expect(try await store.applyInOneTransaction(head) == 4)
            #expect(try await store.headJobs(limit: 10).isEmpty)
            #expect(try await store.orders(status: nil).map(\.status) == ["assigned"])
            #expect(try await store.tombstone(id: "2")?.version == 2)
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func anUpsertAndItsJobCompleteTogetherAndFailuresBecomeDeadLetters(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            let record = try order(1, version: 1)
            try await store.journal([NewJob(kind: .upsert, order: record, source: "stream")], cursor: "1", deadLetters: [])
            let job = try #require(try await store.headJobs(limit: 1).first)
            try await store.applyUpsert(try #require(job.order), completing: job.id)
            #expect(try await store.headJobs(limit: 1).isEmpty)
            #expect(try await store.order(id: "1")?.appliedAt == 1_000)
            try await store.journal([NewJob(kind: .fetch, orderID: "8", source: "stream")], cursor: nil, deadLetters: [])
            let fetch = try #require(try await store.headJobs(limit: 1).first)
            try await store.recordFailure(jobID: try #require(fetch.id), reason: "HTTP 503", retryAt: 2_000, countsAttempt: true)
            let retried = try #require(try await store.headJobs(limit: 1).first)
            #expect(retried.attempts == 1 && retried.notBefore == 2_000 && retried.lastError == "HTTP 503")
            try await store.recordFailure(jobID: try #require(fetch.id), reason: "no session", retryAt: 2_500, countsAttempt: false)
            #expect(try await store.headJobs(limit: 1).first?.attempts == 1, "an uncounted failure is not an attempt")
            try await store.deadLetter(job: retried, reason: "gave up after 1 attempt")
            #expect(try await store.headJobs(limit: 1).isEmpty)
            #expect(try await store.deadLetters().map(\.orderID) == ["8"])
            #expect(try await store.counts().deadLetters == 1)
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func submissionsAreAcceptedOnceEachAllOrNothingAndRefusedOverTheHighWaterMark(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            let policy = SubmissionPolicy(dedupeSince: 0, highWaterJobs: 3)
            func push(_ key: String, _ parts: [(String?, Int)]) throws -> IdempotentSubmission {
                IdempotentSubmission(requestKey: key, parts: try parts.map { notification, id in
                    .init(key: notification, jobs: [NewJob(kind: .upsert, order: try order(id, version: 1), source: "push")])
                }, response: #"{"success":"ok","for":"\#(key)"}"#)
            }
            let first = await store.accept([
                try push("msg_1", [("n1", 1), ("n2", 2)]),
                try push("msg_1", [("n1", 1)]),
                try push("msg_2", [("n2", 2), ("n3", 3)]),
            ], policy: policy)
            #expect(first == [
                .accepted(jobs: 2, duplicateParts: 0),
                .duplicate(response: #"{"success":"ok","for":"msg_1"}"#),
                .accepted(jobs: 1, duplicateParts: 1),
            ])
            #expect(try await store.counts().journalDepth == 3)
            let second = await store.accept([try push("msg_3", [("n4", 4)])], policy: policy)
            #expect(second == [.overloaded(depth: 3)])
            #expect(try await store.counts().journalDepth == 3, "a refused request journals nothing")
            let later = await store.accept(
                [try push("msg_1", [("n5", 5)])],
                policy: SubmissionPolicy(dedupeSince: 1_001, highWaterJobs: 10, purgeKeysBefore: 1_001))
            #expect(later == [.accepted(jobs: 1, duplicateParts: 0)], "a key older than the window is new again")
            // A silent push's fetch collapses into one pending for the same order, whole orders beside it
            // in the same batch (on PostgreSQL the batch's write is no longer one statement then).
            func silent(_ key: String, _ jobs: [NewJob]) -> IdempotentSubmission {
                IdempotentSubmission(requestKey: key, parts: [.init(key: "n-" + key, jobs: jobs)], response: "{}")
            }
            let mixed = await store.accept([
                silent("msg_4", [NewJob(kind: .fetch, orderID: "7", version: 2, source: "push")]),
                silent("msg_5", [NewJob(kind: .fetch, orderID: "7", version: 4, source: "push"),
                                 NewJob(kind: .upsert, order: try order(8, version: 1), source: "push")]),
            ], policy: SubmissionPolicy(dedupeSince: 1_001, highWaterJobs: 10))
            #expect(mixed == [.accepted(jobs: 1, duplicateParts: 0), .accepted(jobs: 1, duplicateParts: 0)])
            let head = try await store.headJobs(limit: 10)
            #expect(head.map(\.orderID) == ["1", "2", "3", "5", "7", "8"])
            #expect(head.map(\.kind).suffix(2) == [.fetch, .upsert] && head[4].version == 4, "the pending fetch's bound was raised")
        }
        try await withStore(engine, body)
    }

    /// FIELD-NOTES 15 under a race: jobs the executor read before a user switch cleared the journal
    /// are gone when it applies them. Every way of completing a job then writes nothing at all.
    @Test(arguments: StoreEngine.allCases)
    func applyingJobsAUserSwitchClearedWritesNothing(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            _ = try await store.claim(for: "first-user")
            try await store.applyUpsert(try order(3, version: 1), completing: nil)
            try await store.journal([
                NewJob(kind: .upsert, order: try order(1, version: 1), source: "push"),
                NewJob(kind: .upsert, order: try order(2, version: 1), source: "push"),
                NewJob(kind: .delete, orderID: "3", version: 2, source: "push"),
                NewJob(kind: .fetch, orderID: "4", source: "push"),
            ], cursor: "7", deadLetters: [])
            let head = try await store.headJobs(limit: 10)
            try #require(head.count == 4)
            #expect(try await store.claim(for: "second-user"))
            let cleared = try await store.changeHead()
            await #expect(throws: JobsGone.self) { try await store.applyUpsert(try order(1, version: 1), completing: head[0].id) }
            await #expect(throws: JobsGone.self) { try await store.applyInOneTransaction(Array(head.prefix(3))) }
            await #expect(throws: JobsGone.self) { try await store.applyDelete(orderID: "3", version: 2, completing: head[2].id) }
            await #expect(throws: JobsGone.self) { try await store.completeFullSync(keeping: [], completing: head[3].id) }
            // A full sync's page fetched before the switch, for the previous user's job.
            await #expect(throws: JobsGone.self) { try await store.applyPage([try order(6, version: 1)], for: head[3].id) }
            await #expect(throws: JobsGone.self) { try await store.deadLetter(job: head[3], reason: "failed") }
            #expect(try await store.orders(status: nil).isEmpty)
            #expect(try await store.tombstone(id: "3") == nil)
            #expect(try await store.deadLetters().isEmpty)
            #expect(try await store.changeHead() == cleared, "no change was logged")
            // A run where only some are gone writes nothing either.
            try await store.journal([NewJob(kind: .upsert, order: try order(5, version: 1), source: "push")], cursor: "8", deadLetters: [])
            let fresh = try await store.headJobs(limit: 10)
            await #expect(throws: JobsGone.self) { try await store.applyInOneTransaction([head[0]] + fresh) }
            #expect(try await store.orders(status: nil).isEmpty)
            #expect(try await store.applyInOneTransaction(fresh) == 1)
            #expect(try await store.orders(status: nil).map(\.id) == ["5"])
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func aDifferentUserClearsEverythingAndMovesTheChangeFloorWhileTheSameUserKeepsIt(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            #expect(try await store.claim(for: "5") == false)
            try await store.applyUpsert(try order(1, version: 1), completing: nil)
            try await store.applyUpsert(try order(2, version: 1), completing: nil)
            try await store.journal([NewJob(kind: .fetch, orderID: "2", source: "stream")], cursor: "9", deadLetters: [])
            #expect(try await store.claim(for: "5") == false)
            #expect(try await store.orders(status: nil).count == 2)
            let before = try await store.changeHead()
            #expect(try await store.claim(for: "6") == true)
            #expect(try await store.orders(status: nil).isEmpty)
            #expect(try await store.counts().journalDepth == 0)
            #expect(try await store.streamCursor() == "")
            #expect(try await store.owner() == "6")
            let after = try await store.changeHead()
            #expect(after == before + 2)
            let kept = try await store.appendedChanges(after: 0, limit: 100)
            #expect(kept.map(\.kind) == [.deleted, .deleted] && kept.allSatisfy { $0.body == nil })
            if case .reset = try await store.changes(after: before, limit: 10) {} else {
                Issue.record("an id from before the switch must reset")
            }
            if case .changes(let none) = try await store.changes(after: after, limit: 10) { #expect(none.isEmpty) } else {
                Issue.record("the head must resume")
            }
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func appliedChangesAreNumberedInOrderAndNoOpsAreNot(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            let start = try await store.changeHead()
            #expect(start > 0 && start < 1 << 53)
            try await store.applyUpsert(try order(1, status: "created", version: 1), completing: nil)
            try await store.applyUpsert(try order(1, status: "created", version: 1), completing: nil)
            try await store.applyDelete(orderID: "9", version: 1, completing: nil)
            try await store.applyPage([try order(2, status: "assigned", version: 1), try order(3, version: 1)], for: nil)
            _ = try await store.completeFullSync(keeping: ["1", "2"], completing: nil)
            guard case .changes(let changes) = try await store.changes(after: start, limit: 100) else {
                Issue.record("expected changes")
                return
            }
            #expect(changes.map(\.seq) == Array((start + 1)...(start + 4)))
            #expect(changes.map(\.kind) == [.upserted, .upserted, .upserted, .deleted])
            #expect(changes.map(\.orderID) == ["1", "2", "3", "3"])
            #expect(changes[3].before?.status == "assigned" && changes[3].body == nil)
            #expect(changes[0].before == nil && changes[0].after?.status == "created")
            if case .reset = try await store.changes(after: start + 5, limit: 10) {} else { Issue.record("a future id must reset") }
            let snapshot = try await store.snapshot(matching: OrderFilter(statuses: ["assigned"]))
            #expect(snapshot.seq == start + 4 && snapshot.orders.map(\.id) == ["2"])
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func pruningKeepsTheLastChangesInBatchesAndAnIDBeforeThemResets(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore) async throws {
            let start = try await store.changeHead()
            for version in 1...50 { try await store.applyUpsert(try order(1, version: version), completing: nil) }
            #expect(try await store.pruneChanges(keeping: 10, batch: 15) == 15)
            #expect(try await store.pruneChanges(keeping: 10, batch: 15) == 15)
            #expect(try await store.pruneChanges(keeping: 10, batch: 15) == 10)
            #expect(try await store.pruneChanges(keeping: 10, batch: 15) == 0)
            #expect(try await store.appendedChanges(after: 0, limit: 100).count == 10)
            if case .reset = try await store.changes(after: start + 5, limit: 10) {} else {
                Issue.record("an id older than the kept history must reset")
            }
            guard case .changes(let resumed) = try await store.changes(after: start + 40, limit: 100) else {
                Issue.record("an id at the edge of the history must resume")
                return
            }
            #expect(resumed.map(\.seq) == Array((start + 41)...(start + 50)))
        }
        try await withStore(engine, body)
    }

    /// DESIGN §14: a job keeps the trace context it was journaled with, through either write path
    /// (the stream's journal, a push's accepted submission), so its apply joins that trace.
    @Test(arguments: StoreEngine.allCases)
    func aJobKeepsTheTraceContextItWasJournaledWith(_ engine: StoreEngine) async throws {
        let traced = "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ntracestate=vendor=a"
        func body(_ store: any AnyOrderStore) async throws {
            _ = try await store.journal([
                NewJob(kind: .fetch, orderID: "1", source: "stream", traceContext: traced),
                NewJob(kind: .upsert, order: try order(2, version: 1), source: "stream"),
                NewJob(kind: .delete, orderID: "3", source: "stream", traceContext: traced),
            ], cursor: nil, deadLetters: [])
            let pushed = NewJob(kind: .fetch, orderID: "4", source: "push", traceContext: traced)
            let outcome = await store.accept(
                [IdempotentSubmission(requestKey: "msg_1", parts: [.init(key: nil, jobs: [pushed])], response: "{}")],
                policy: SubmissionPolicy(dedupeSince: 0, highWaterJobs: 100))
            #expect(outcome == [.accepted(jobs: 1, duplicateParts: 0)])
            let jobs = try await store.headJobs(limit: 10)
            #expect(jobs.map(\.traceContext) == [traced, nil, traced, traced])
            #expect(StoredTraceContext.fields(jobs[0].traceContext) == [
                "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "vendor=a",
            ])

            // Applied, each job's changes keep its trace (one by one, or a run in one transaction).
            let head = try await store.changeHead()
            _ = try await store.applyUpsert(try order(1, version: 1), completing: jobs[0].id)
            #expect(try await store.applyInOneTransaction(Array(jobs[1...2])) == 2)
            _ = try await store.applyUpsert(try order(5, version: 1), completing: nil)
            let changes = try await store.appendedChanges(after: head, limit: 10)
            #expect(changes.map(\.orderID) == ["1", "2", "5"], "order 3 was not stored: its delete changes nothing")
            #expect(changes.map(\.traceContext) == [traced, nil, nil])
        }
        try await withStore(engine, body)
    }

    @Test(arguments: StoreEngine.allCases)
    func aChangeKeepsTheTraceOfTheJobThatMadeIt(_ engine: StoreEngine) async throws {
        let traced = "traceparent=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        func body(_ store: any AnyOrderStore) async throws {
            try await store.applyUpsert(try order(8, version: 1), completing: nil)
            _ = try await store.journal([
                NewJob(kind: .upsert, order: try order(7, version: 1), source: "push", traceContext: traced),
                NewJob(kind: .delete, orderID: "8", source: "stream", traceContext: traced),
            ], cursor: nil, deadLetters: [])
            let head = try await store.changeHead()
            #expect(try await store.applyInOneTransaction(try await store.headJobs(limit: 10)) == 2)
            let changes = try await store.appendedChanges(after: head, limit: 10)
            #expect(changes.map(\.kind) == [.upserted, .deleted])
            #expect(changes.allSatisfy { $0.traceContext == traced })
            guard case .changes(let fed) = try await store.changes(after: head, limit: 10) else {
                Issue.record("the feed reset")
                return
            }
            #expect(fed.map(\.traceContext) == [traced, traced], "the webhook outbox reads it")
        }
        try await withStore(engine, body)
    }
}
