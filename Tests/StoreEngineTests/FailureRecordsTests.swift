import Foundation
import Synchronization
import SQLiteStore
import StoreModel
import TestHarnesses
import Testing

/// What `orderlive dead-letters` and `orderlive journal` read (issue 38), on each engine: a dead
/// letter keeps its job's first attempt and version, is found by its id, and the journal lists its
/// pending jobs in the order they will be applied.
@Suite(.timeLimit(.minutes(5))) struct FailureRecordsTests {
    @Test(arguments: StoreEngine.allCases)
    func aDeadLetterKeepsItsJobsOriginAndIsFoundByItsID(_ engine: StoreEngine) async throws {
        let clock = WallSeconds(1_000)
        func body(_ store: any AnyOrderStore) async throws {
            try await store.journal([
                NewJob(kind: .fetch, orderID: "7", version: 3, source: "push"),
                NewJob(kind: .fetch, orderID: "8", source: "stream"),
            ], cursor: nil, deadLetters: [
                DeadLetterRecord(kind: "event", orderID: nil, raw: "data: {not json", reason: "the event's data is not JSON",
                                 attempts: 0, createdAt: 1_000),
            ])
            let pending = try await store.pendingJobs(limit: 10)
            #expect(pending.map(\.orderID) == ["7", "8"], "in the order they will be applied")
            let failing = try #require(pending.first)
            clock.set(1_060)
            try await store.recordFailure(jobID: try #require(failing.id), reason: "the backend answered 503", retryAt: 1_090,
                                          countsAttempt: true)
            #expect(try await store.pendingJobs(limit: 1).first?.notBefore == 1_090)
            try await store.deadLetter(job: try #require(try await store.pendingJobs(limit: 1).first),
                                       reason: "the backend answered 503 for GET /v1/orders/7")
            #expect(try await store.pendingJobs(limit: 10).map(\.orderID) == ["8"])

            let letters = try await store.deadLetters()
            #expect(letters.map(\.kind) == ["event", "fetch"])
            let event = letters[0]
            #expect(event.orderID == nil && event.firstAttemptAt == nil && event.version == nil)
            let job = letters[1]
            #expect(job.orderID == "7" && job.version == 3 && job.attempts == 1)
            #expect(job.firstAttemptAt == 1_000 && job.createdAt == 1_060, "first journaled, then given up")
            #expect(job.reason == "the backend answered 503 for GET /v1/orders/7")
            let found = try await store.deadLetter(id: try #require(job.id))
            #expect(found == job)
            #expect(try await store.deadLetter(id: 999_999) == nil)
        }
        try await withStore(engine, now: { clock.now }, body)
    }
}

extension FailureRecordsTests {
    @Test(arguments: StoreEngine.allCases)
    func droppingAnUnknownIDChangesNothingAndDroppingRemovesOnlyWhatWasNamed(_ engine: StoreEngine) async throws {
        func body(_ store: any AnyOrderStore & DeadLetterRepair) async throws {
            let letters = (1...3).map {
                DeadLetterRecord(kind: "event", orderID: "\($0)", raw: "x", reason: "unreadable", attempts: 0, createdAt: 1_000)
            }
            try await store.journal([], cursor: nil, deadLetters: letters)
            let ids = try await store.deadLetters().compactMap(\.id)
            #expect(ids.count == 3)
            #expect(try await store.dropDeadLetters([ids[0], 999_999]) == .unknown([999_999]))
            #expect(try await store.deadLetters().count == 3, "nothing changed")
            guard case .done(let dropped) = try await store.dropDeadLetters([ids[1]]) else {
                Issue.record("one known id was not dropped")
                return
            }
            #expect(dropped.map(\.id) == [ids[1]] && dropped.first?.orderID == "2")
            #expect(try await store.deadLetters().compactMap(\.id) == [ids[0], ids[2]])
            guard case .done(let rest) = try await store.dropDeadLetters(nil) else {
                Issue.record("--all did not drop")
                return
            }
            let remaining = try await store.deadLetters()
            #expect(rest.count == 2 && remaining.isEmpty)
        }
        try await withStore(engine) { store in
            try await body(try #require(store as? any AnyOrderStore & DeadLetterRepair))
        }
    }
}

/// A wall clock the test sets, shared with a store.
final class WallSeconds: Sendable {
    private let value: Mutex<Double>
    init(_ start: Double) { value = Mutex(start) }
    var now: Double { value.withLock { $0 } }
    func set(_ seconds: Double) { value.withLock { $0 = seconds } }
}
