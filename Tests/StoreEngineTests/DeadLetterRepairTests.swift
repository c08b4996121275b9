import AsyncSignals
import Foundation
import PostgresStore
import StoreModel
import TestHarnesses
import TestKit
import Testing

/// `orderlive dead-letters retry` and the retention of dead letters (issue 38), on each engine: a
/// retried dead letter is its job again, with no attempts made, at the journal's tail; an unknown id
/// changes nothing; the oldest beyond the limit go.
@Suite(.timeLimit(.minutes(5))) struct DeadLetterRepairTests {
    static let order = #"{"id":5,"status":"assigned","version":4,"store_id":2}"#

    @Test(arguments: StoreEngine.allCases)
    func aRetriedDeadLetterIsItsJobAgainWithNoAttemptsMade(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore & DeadLetterRepair) async throws {
            try await store.journal([NewJob(kind: .fetch, orderID: "1", source: "stream")], cursor: nil, deadLetters: [
                DeadLetterRecord(kind: "fetch", orderID: "7", raw: "", reason: "503", attempts: 8, createdAt: 1_000, version: 3),
                DeadLetterRecord(kind: "delete", orderID: "9", raw: "", reason: "locked", attempts: 8, createdAt: 1_000, version: 4),
                DeadLetterRecord(kind: "upsert", orderID: "5", raw: Self.order, reason: "locked", attempts: 8, createdAt: 1_000),
                DeadLetterRecord(kind: "upsert", orderID: "6", raw: "{not an order", reason: "unreadable", attempts: 8, createdAt: 1_000),
                DeadLetterRecord(kind: "event", orderID: "11", raw: "data: {", reason: "not JSON", attempts: 0, createdAt: 1_000),
            ])
            let ids = try await store.deadLetters().compactMap(\.id)
            #expect(try await store.retryDeadLetters([ids[0], 999_999]) == .unknown([999_999]))
            #expect(try await store.deadLetters().count == 5, "an unknown id changes nothing")
            #expect(try await store.pendingJobs(limit: 10).count == 1)

            guard case .done(let retried) = try await store.retryDeadLetters(ids) else {
                Issue.record("known ids were not retried")
                return
            }
            #expect(retried.compactMap(\.id) == ids)
            #expect(try await store.deadLetters().isEmpty, "a retried dead letter is no longer one")
            let jobs = try await store.pendingJobs(limit: 10)
            #expect(jobs.map(\.kind) == [.fetch, .fetch, .delete, .upsert, .fetch, .fetch], "at the tail, in the dead letters' order")
            #expect(jobs.dropFirst().map(\.orderID) == ["7", "9", "5", "6", "11"])
            #expect(jobs.allSatisfy { $0.attempts == 0 && $0.lastError == nil && $0.notBefore <= 1_000 }, "no attempts made")
            #expect(jobs[1].version == 3 && jobs[2].version == 4, "the version bound it asked for")
            let upsert = jobs[3]
            #expect(upsert.isLocal && upsert.order?.version == 4 && upsert.order?.storeID == "2" && upsert.payload == Self.order)
            #expect(jobs.dropFirst().allSatisfy { $0.source == "retry" })

            // What named no order, or a whole sync, comes back as a full sync.
            try await store.journal([], cursor: nil, deadLetters: [
                DeadLetterRecord(kind: "event", orderID: nil, raw: "", reason: "over the size limit", attempts: 0, createdAt: 1_000),
            ])
            #expect(try await store.retryDeadLetters(nil) != .done([]))
            #expect(try await store.pendingJobs(limit: 10).last?.kind == .fullSync)
        }
        try await withStore(engine) { store in
            try await body(try #require(store as? any AnyOrderStore & DeadLetterRepair))
        }
    }

    @Test(arguments: StoreEngine.allCases)
    func theOldestDeadLettersBeyondTheLimitAreRemoved(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore & DeadLetterRepair) async throws {
            try await store.journal([], cursor: nil, deadLetters: (1...5).map {
                DeadLetterRecord(kind: "event", orderID: "\($0)", raw: "x", reason: "unreadable", attempts: 0, createdAt: 1_000)
            })
            #expect(try await store.pruneDeadLetters(keeping: 10) == 0)
            #expect(try await store.pruneDeadLetters(keeping: 2) == 3)
            #expect(try await store.deadLetters().map(\.orderID) == ["4", "5"], "the newest are kept")
            #expect(try await store.pruneDeadLetters(keeping: 2) == 0)
        }
        try await withStore(engine) { store in
            try await body(try #require(store as? any AnyOrderStore & DeadLetterRepair))
        }
    }

    /// On PostgreSQL a running leader learns of a retry through the jobs channel, as it does of a push
    /// journaled by another agent: it wakes at once, with no poll.
    @Test func aRetryOnPostgreSQLNotifiesTheJobsChannel() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        try await withPostgresStore(server: server, database: database, account: "acme") { store in
            try await store.journal([], cursor: nil, deadLetters: [
                DeadLetterRecord(kind: "fetch", orderID: "7", raw: "", reason: "503", attempts: 8, createdAt: 1_000),
            ])
            try await listening(to: store) { heard async throws in
                #expect(try await store.retryDeadLetters(nil) != .unknown([]))
                #expect(await heard.wait { $0.jobs >= 2 }.jobs >= 2, "the retry's commit notified the jobs channel")
            }
        }
    }
}
