import AsyncSignals
import Foundation
import StoreModel
import PostgresStore
import TestHarnesses
import TestKit
import Testing

/// The fenced leader applies whole-order pushes in the transaction that accepts them when the
/// journal is empty (``ImmediateApply`` on PostgreSQL, issue 61); everything else is journaled as
/// before, and the change log stays one ordered history whichever path wrote it.
@Suite(.timeLimit(.minutes(5))) struct PostgresImmediateApplyTests {
    /// What a store told its owner after commits: the last change seq, and the jobs applied in place.
    final class Heard: Sendable {
        let lastChange = Locked<Int64?>(nil)
        let applied = Locked<[JobKind: Int]>([:])

        var immediateApply: ImmediateApply {
            ImmediateApply { kind, count in self.applied.withLock { $0[kind, default: 0] += count } }
        }
    }

    static func push(_ key: String, _ jobs: [NewJob]) -> IdempotentSubmission {
        IdempotentSubmission(requestKey: key, parts: [.init(key: "n-" + key, jobs: jobs)], response: #"{"ok":1}"#)
    }

    static func upsert(_ id: Int, version: Int, status: String = "assigned") throws -> NewJob {
        NewJob(kind: .upsert, orderID: String(id), order: try order(id, status: status, version: version), source: "push")
    }

    static let policy = SubmissionPolicy(dedupeSince: 0, highWaterJobs: 1_000)

    /// Makes `store` the account's leader at `epoch`: the leadership row, and its fence.
    static func lead(_ store: PostgresOrderStore, epoch: Int, server: PostgresServer, database: String) async throws {
        _ = try await server.psql(
            "INSERT INTO orderlive_leadership (account, epoch, leader, since) VALUES ('acme', \(epoch), 'a:1', 0)",
            database: database)
        store.fence(epoch: Int64(epoch))
    }

    /// The change log after `seq` (a new store's log starts after its floor, not at 0).
    static func changes(_ store: PostgresOrderStore, after seq: Int64) async throws -> [OrderChange] {
        guard case .changes(let changes) = try await store.changes(after: seq, limit: 10_000) else {
            Issue.record("the change log could not be read from its start")
            return []
        }
        return changes
    }

    @Test func theLeaderAppliesWholeOrderPushesInTheAcceptingTransactionWhenTheJournalIsEmpty() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        let heard = Heard()
        try await withPostgresStore(
            server: server, database: database, account: "acme", changesCommitted: { seq in heard.lastChange.withLock { $0 = seq } },
            immediateApply: heard.immediateApply
        ) { store in
            try await Self.lead(store, epoch: 3, server: server, database: database)
            let start = try await store.changeHead()
            let outcomes = await store.accept([
                Self.push("a", [try Self.upsert(1, version: 1)]),
                Self.push("b", [try Self.upsert(2, version: 1), NewJob(kind: .delete, orderID: "1", version: 2, source: "push")]),
                Self.push("a", [try Self.upsert(1, version: 1)]),
                Self.push("c", [try Self.upsert(2, version: 0, status: "stale")]),
            ], policy: Self.policy)
            #expect(outcomes == [
                .accepted(jobs: 1, duplicateParts: 0, applied: 1),
                .accepted(jobs: 2, duplicateParts: 0, applied: 2),
                .duplicate(response: #"{"ok":1}"#),
                .accepted(jobs: 1, duplicateParts: 0, applied: 1),
            ])
            #expect(try await store.headJobs(limit: 10).isEmpty, "nothing was journaled")
            #expect(try await store.order(id: "1") == nil)
            #expect(try await store.order(id: "2")?.status == "assigned", "the stale upsert changed nothing")
            let changes = try await Self.changes(store, after: start)
            #expect(changes.map { "\($0.seq - start) \($0.kind.rawValue) \($0.orderID) v\($0.version ?? -1)" }
                    == ["1 upserted 1 v1", "2 upserted 2 v1", "3 deleted 1 v2"])
            #expect(heard.lastChange.withLock { $0 } == start + 3, "the feed was woken with the last seq")
            #expect(heard.applied.withLock { $0 } == [.upsert: 3, .delete: 1], "every job applied counts, stale or not")
            #expect(try await server.psql("SELECT COUNT(*) FROM orderlive_job", database: database) == "0")
            #expect(try await server.psql("SELECT string_agg(id, ',' ORDER BY id) FROM orderlive_dedupe_key", database: database)
                    == "notification:n-a,notification:n-b,notification:n-c,request:a,request:b,request:c")
        }
    }

    /// Every agent's change feed learns of a batch applied in place through the changes channel, as
    /// of the executor's applies (the batch's own agent hears `changesCommitted` as well), and of a
    /// user switch's deletions.
    @Test func aBatchAppliedInPlaceNotifiesEveryAgentsFeed() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "acme", immediateApply: ImmediateApply()) { store in
            try await Self.lead(store, epoch: 1, server: server, database: database)
            try await listening(to: store) { heard async throws in
                #expect(await store.accept([Self.push("a", [try Self.upsert(1, version: 1)])], policy: Self.policy)
                        == [.accepted(jobs: 1, duplicateParts: 0, applied: 1)])
                #expect(await heard.wait { $0.changes >= 2 } == (2, 1), "the batch's commit notified the changes channel only")
                // A user switch clears the account through the change log and notifies it too.
                #expect(try await store.claim(for: "alice") == false)
                #expect(try await store.claim(for: "bob") == true)
                #expect(await heard.wait { $0.changes >= 3 }.changes == 3, "the switch's deletions notified the changes channel")
            }
        }
    }

    @Test func aFollowerADeposedLeaderAJournalWithJobsAndAFetchAreJournaledAsBefore() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        let heard = Heard()
        try await withPostgresStore(
            server: server, database: database, account: "acme", immediateApply: heard.immediateApply
        ) { store in
            // A follower: no fence.
            #expect(await store.accept([Self.push("f", [try Self.upsert(1, version: 1)])], policy: Self.policy)
                    == [.accepted(jobs: 1, duplicateParts: 0)])
            // A deposed leader: its fence names an epoch the account no longer has. Its pushes are
            // journaled, not refused.
            _ = try await server.psql(
                "INSERT INTO orderlive_leadership (account, epoch, leader, since) VALUES ('acme', 2, 'b:2', 0)",
                database: database)
            store.fence(epoch: 1)
            #expect(await store.accept([Self.push("d", [try Self.upsert(2, version: 1)])], policy: Self.policy)
                    == [.accepted(jobs: 1, duplicateParts: 0)])
            // The leader, behind jobs already journaled.
            store.fence(epoch: 2)
            #expect(await store.accept([Self.push("l", [try Self.upsert(3, version: 1)])], policy: Self.policy)
                    == [.accepted(jobs: 1, duplicateParts: 0)])
            let jobs = try await store.headJobs(limit: 10)
            #expect(jobs.map(\.orderID) == ["1", "2", "3"])
            #expect(try await store.applyInOneTransaction(jobs) == 3)
            // The journal empty again, a batch with a fetch in it waits for the executor, all of it.
            #expect(await store.accept([
                Self.push("g", [try Self.upsert(4, version: 1)]),
                Self.push("h", [NewJob(kind: .fetch, orderID: "5", source: "push")]),
            ], policy: Self.policy) == [.accepted(jobs: 1, duplicateParts: 0), .accepted(jobs: 1, duplicateParts: 0)])
            #expect(try await store.headJobs(limit: 10).map(\.orderID) == ["4", "5"])
            #expect(heard.applied.withLock { $0 }.isEmpty)
            #expect(try await store.order(id: "4") == nil, "journaled, not applied")
        }
    }

    @Test func aValueTheDatabaseRefusesOnTheLeaderFailsOnlyItsSubmission() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "acme", immediateApply: ImmediateApply()) { store in
            try await Self.lead(store, epoch: 1, server: server, database: database)
            let start = try await store.changeHead()
            var refused = try order(2, version: 1)
            refused.body = "{\u{0}}"
            let outcomes = await store.accept([
                Self.push("a", [try Self.upsert(1, version: 1)]),
                Self.push("b", [NewJob(kind: .upsert, orderID: "2", order: refused, source: "push")]),
                Self.push("c", [try Self.upsert(3, version: 1)]),
            ], policy: Self.policy)
            #expect(outcomes.count == 3)
            #expect(outcomes.first == .accepted(jobs: 1, duplicateParts: 0))
            guard case .failed(let reason) = outcomes[1] else {
                Issue.record("the refused submission was \(outcomes[1])")
                return
            }
            #expect(reason.contains("SQLSTATE 22021"), "\(reason)")
            #expect(outcomes.last == .accepted(jobs: 1, duplicateParts: 0))
            #expect(try await store.headJobs(limit: 10).map(\.orderID) == ["1", "3"], "the others journaled, in order")
            #expect(try await Self.changes(store, after: start).isEmpty, "nothing of the rolled-back apply was kept")
        }
    }

    /// An executor: applies runs of whole-order jobs and completes each fetch with what the backend
    /// would have answered (the order `fetched` at the next version), until `finished` is set and
    /// the journal is empty.
    static func execute(_ store: PostgresOrderStore, until finished: Locked<Bool>) async throws {
        var fetched = 0
        while true {
            let jobs = try await store.headJobs(limit: 50)
            if jobs.isEmpty {
                if finished.withLock({ $0 }) { return }
                await Task.yield()
                continue
            }
            var run: [JobRecord] = []
            for job in jobs {
                if job.kind == .fetch {
                    if !run.isEmpty { _ = try await store.applyInOneTransaction(run) }
                    run = []
                    fetched += 1
                    _ = try await store.applyUpsert(try order("fetched", version: fetched), completing: job.id)
                } else {
                    run.append(job)
                }
            }
            if !run.isEmpty { _ = try await store.applyInOneTransaction(run) }
        }
    }

    /// Writers push upserts and deletes of a few orders at once (versions unique per order), a
    /// journaler now and then puts a fetch in the journal so later pushes queue behind it, and an
    /// executor applies the journal beside them. Whichever path applied a change, the change log is
    /// one gapless history, each order's versions rise along it, and each order ends as its newest
    /// push says.
    @Test func pushesAppliedInPlaceAndTheExecutorsAppliesKeepOneOrderedChangeLog() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        let heard = Heard()
        try await withPostgresStore(
            server: server, database: database, account: "acme", immediateApply: heard.immediateApply
        ) { store in
            try await Self.lead(store, epoch: 1, server: server, database: database)
            let start = try await store.changeHead()
            let (writers, rounds, orders) = (4, 30, 3)
            let outcomes = Locked<[SubmissionOutcome]>([])
            let journaledFetches = Locked(0)
            let finished = Locked(false)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for round in 0..<rounds {
                            let id = round % orders
                            let version = round * writers + writer + 1
                            let job = (round + writer) % 7 == 0
                                ? NewJob(kind: .delete, orderID: String(id), version: Int64(version), source: "push")
                                : try Self.upsert(id, version: version)
                            let outcome = await store.accept([Self.push("w\(writer)-\(round)", [job])], policy: Self.policy)
                            outcomes.withLock { $0 += outcome }
                            if writer == 0, round % 6 == 0 {
                                try await store.journal([NewJob(kind: .fetch, orderID: "fetched", source: "stream")])
                                journaledFetches.withLock { $0 += 1 }
                            }
                        }
                    }
                }
                group.addTask { try await Self.execute(store, until: finished) }
                try await group.next()
                try await group.next()
                try await group.next()
                try await group.next()
                finished.withLock { $0 = true }
                try await group.waitForAll()
            }
            let all = outcomes.withLock { $0 }
            #expect(all.count == writers * rounds)
            #expect(all.allSatisfy { if case .accepted(1, 0, _, _) = $0 { true } else { false } }, "\(all)")
            let inPlace = all.reduce(0) { if case .accepted(_, _, let applied, _) = $1 { $0 + applied } else { $0 } }
            #expect(inPlace > 0, "some pushes found the journal empty")
            #expect(inPlace < all.count, "some pushes queued behind a journaled job")
            #expect(try await store.headJobs(limit: 10).isEmpty)
            let changes = try await Self.changes(store, after: start)
            #expect(changes.map(\.seq) == (0..<changes.count).map { start + Int64($0) + 1 }, "one gapless history")
            var newest: [String: Int64] = [:]
            for change in changes where change.orderID != "fetched" {
                let version = change.version ?? -1
                #expect(version > newest[change.orderID] ?? 0, "order \(change.orderID): v\(version) after v\(newest[change.orderID] ?? 0)")
                newest[change.orderID] = version
            }
            for id in 0..<orders {
                // The newest push of the order: its highest version, an upsert unless a delete.
                var newestPush = (version: 0, deletes: false)
                for round in 0..<rounds where round % orders == id {
                    for writer in 0..<writers where round * writers + writer + 1 > newestPush.version {
                        newestPush = (round * writers + writer + 1, (round + writer) % 7 == 0)
                    }
                }
                let stored = try await store.order(id: String(id))
                if newestPush.deletes {
                    #expect(stored == nil, "order \(id)")
                } else {
                    #expect(stored?.version == Int64(newestPush.version), "order \(id)")
                }
            }
            // Fetches journaled before the executor reached them collapsed into one.
            let fetchedVersion = try #require(try await store.order(id: "fetched")?.version)
            #expect(fetchedVersion >= 1 && fetchedVersion <= Int64(journaledFetches.withLock { $0 }))
        }
    }

    /// A new account's first minutes of load: the statistics (analyzed while it had no orders) say
    /// it has none while it has thousands. The batch's reads must still look each order and each key
    /// up by the primary key, not read the account's whole range and filter it (4 ms a batch at
    /// 20,000 orders, under the journal lock). Fails with the status index led by the account
    /// (schema version 8), the ids looked up by `id = ANY(…)`, or both.
    @Test func aBatchsReadsLookEachRowUpByItsKeyWhileTheStatisticsAreStale() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "acme") { _ in
            // Another account's rows analyzed: the statistics know 'other' and not 'acme'.
            for account in ["other", "acme"] {
                _ = try await server.psql("""
                    INSERT INTO orderlive_order (account, id, status, store_id, courier_id, version, updated_at, body, applied_at)
                    SELECT '\(account)', g::text, 'assigned', '1', '7', 1, NULL, '{}', 0 FROM generate_series(1, 20000) g;
                    INSERT INTO orderlive_dedupe_key (account, id, response, accepted_at)
                    SELECT '\(account)', 'notification:' || g, '{}', 1000 FROM generate_series(1, 20000) g
                    """, database: database)
                if account == "other" { _ = try await server.psql("ANALYZE", database: database) }
            }
            let statements = PostgresOrderStore.inPlaceBatchStatements
            let keys = "ARRAY['notification:7', 'notification:x']"
            let plans = try await server.psql("""
                BEGIN;
                PREPARE rows_read(text, text[]) AS \(statements[2]);
                EXPLAIN (ANALYZE, COSTS OFF) EXECUTE rows_read('acme', ARRAY['7', 'x', '4999']);
                PREPARE keys_read(text, bigint, text[], float8) AS \(statements[1]);
                EXPLAIN (ANALYZE, COSTS OFF) EXECUTE keys_read('acme', 1000, \(keys), 0);
                ROLLBACK
                """, database: database)
            #expect(!plans.contains("Rows Removed by Filter"), "a read filtered the account's rows:\n\(plans)")
            #expect(!plans.contains("orderlive_order_status"), "the rows were read through the status index:\n\(plans)")
            #expect(plans.contains("orderlive_order_pkey") && plans.contains("orderlive_dedupe_key_pkey"), "\(plans)")
        }
    }
}
