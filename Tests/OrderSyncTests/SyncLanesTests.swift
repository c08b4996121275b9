import AsyncSignals
import Foundation
import SQLiteStore
import OrderSync
import StoreModel
import TestHarnesses
import TestKit
import Testing
import Sandbox

/// DESIGN §8 "Sync" against the Sandbox over real HTTP: one order the backend cannot serve steps
/// aside and does not hold the others; an outage of the backend pauses without counting attempts and
/// ends at the first evidence of health; a full sync is a barrier around the lanes. The wall clock is
/// the test's: retry times pass when the test says so.
@Suite(.timeLimit(.minutes(3))) struct SyncLanesTests {
    static func fetch(_ id: Int) -> NewJob { NewJob(kind: .fetch, orderID: "\(id)", source: "test") }

    @Test func anOrderTheBackendCannotServeStepsAsideAndBecomesADeadLetterWhileTheOthersGoOn() async throws {
        try await SyncHarness.run(maximumAttempts: 3) { harness in
            let ids = (0..<4).map { _ in harness.sandbox.orders.create(announce: .silent) }
            harness.sandbox.orders.breakOrder(ids[0], status: 503)
            try await harness.store.journal([Self.fetch(ids[0]), Self.fetch(ids[1]), Self.fetch(ids[2])])
            let first = try await harness.executor.runReadyJobs()
            #expect(first == .init(completed: 2, failed: 1), "the others are not held behind the bad order")
            #expect(try harness.store.order(id: "\(ids[1])") != nil && harness.store.order(id: "\(ids[2])") != nil)
            #expect(!harness.executor.availability.isPaused, "the backend answered about another order: not an outage")
            // The bad order's later change waits behind it; another order's change does not.
            let newer = try order(ids[0], status: "delivered", version: 5)
            try await harness.store.journal([NewJob(kind: .upsert, order: newer, source: "push"), Self.fetch(ids[3])])
            #expect(try await harness.executor.runReadyJobs() == .init(completed: 1))
            #expect(try harness.store.order(id: "\(ids[0])") == nil, "an order's changes are never applied out of order")
            #expect(try harness.store.counts().waitingLanes == 1)
            // Its retries count: after three attempts it is a dead letter, and its lane moves on.
            harness.wall.advance(by: 1.5)
            #expect(try await harness.executor.runReadyJobs() == .init(failed: 1))
            harness.wall.advance(by: 2.5)
            #expect(try await harness.executor.runReadyJobs() == .init(completed: 1, deadLettered: 1))
            let letters = try harness.store.deadLetters()
            #expect(letters.map(\.orderID) == ["\(ids[0])"] && letters.first?.attempts == 3)
            #expect(letters.first?.reason.contains("503") == true)
            #expect(try harness.store.order(id: "\(ids[0])")?.status == "delivered")
            #expect(try harness.store.counts().journalDepth == 0)
        }
    }

    @Test func anOutageCountsNoAttemptHoldsOnlyWhatNeedsTheBackendAndEndsWithTheFirstGoodProbe() async throws {
        try await SyncHarness.run(maximumAttempts: 3, probeMaximum: .seconds(2)) { harness in
            let ids = (0..<3).map { _ in harness.sandbox.orders.create(announce: .silent) }
            harness.sandbox.orders.beginOutage(status: 503)
            try await harness.store.journal(ids.map(Self.fetch))
            #expect(try await harness.executor.runReadyJobs() == .init(unavailable: 1), "one probe, the rest held")
            #expect(harness.executor.availability.isPaused)
            // A whole order needs no backend: it is applied during the outage.
            try await harness.store.journal([NewJob(kind: .upsert, order: try order(900, status: "created", version: 1), source: "push")])
            #expect(try await harness.executor.runReadyJobs() == .init(completed: 1))
            // Many times the whole retry schedule: one probe each time one is due, nothing counted.
            for _ in 0..<40 {
                #expect(try await harness.executor.runReadyJobs() == .init(), "no probe before it is due")
                harness.wall.advance(by: 2.01)
                #expect(try await harness.executor.runReadyJobs() == .init(unavailable: 1))
            }
            #expect(try harness.store.deadLetters().isEmpty)
            #expect(try harness.store.headJobs(limit: 10).allSatisfy { $0.attempts == 0 })
            #expect(harness.executor.availability.snapshot.failedProbes == 40)
            harness.sandbox.orders.endOutage()
            harness.wall.advance(by: 2.01)
            #expect(try await harness.executor.runReadyJobs() == .init(completed: 3))
            #expect(!harness.executor.availability.isPaused)
            var expected = harness.upstream()
            expected["900"] = "created@1"
            #expect(try harness.local() == expected)
        }
    }

    @Test func evidenceOfHealthEndsThePauseAtOnceAndWakesTheExecutor() async throws {
        try await SyncHarness.run(probeMaximum: .seconds(5)) { harness in
            let ids = (0..<2).map { _ in harness.sandbox.orders.create(announce: .silent) }
            harness.sandbox.orders.beginOutage()
            try await harness.store.journal(ids.map(Self.fetch))
            #expect(try await harness.executor.runReadyJobs() == .init(unavailable: 1))
            harness.sandbox.orders.endOutage()
            // No probe is due yet; the stream connecting again says the backend is back.
            #expect(try await harness.executor.runReadyJobs() == .init())
            let wake = WakeSignal()
            let woken = BackendAvailability(wake: wake, now: { harness.wall.now }, logger: quietLogger)
            woken.unavailable(reason: "HTTP 503", nextProbeIn: .seconds(5))
            woken.answered(source: "stream")
            await wake.wait(until: nil, clock: ContinuousClock())
            #expect(!woken.isPaused)
            harness.executor.availability.answered(source: "stream")
            #expect(!harness.executor.availability.isPaused)
            // The held fetch runs at once; the probe's own job at its time, within the probe maximum.
            #expect(try await harness.executor.runReadyJobs() == .init(completed: 1))
            harness.wall.advance(by: 5)
            #expect(try await harness.executor.runReadyJobs() == .init(completed: 1))
            #expect(try harness.local() == harness.upstream())
        }
    }

    @Test func aFullSyncWaitsForTheLanesBeforeItAndHoldsEverythingAfterIt() async throws {
        try await SyncHarness.run(maximumAttempts: 2) { harness in
            let ids = (0..<3).map { _ in harness.sandbox.orders.create(announce: .silent) }
            harness.sandbox.orders.breakOrder(ids[0], status: 500)
            try await harness.store.journal([Self.fetch(ids[0]), Self.fetch(ids[1])])
            #expect(try await harness.executor.runReadyJobs() == .init(completed: 1, failed: 1))
            // A full sync makes pending fetches redundant, but not one that has failed: order 0 waits
            // for its retry, the full sync for it, and the push journaled after the full sync for that.
            try await harness.store.journal([NewJob(kind: .fullSync, source: "test")])
            try await harness.store.journal([NewJob(kind: .upsert, order: try order(ids[2], status: "pushed", version: 99), source: "push")])
            #expect(try await harness.executor.runReadyJobs() == .init())
            #expect(try harness.store.orders().map(\.id) == ["\(ids[1])"])
            harness.wall.advance(by: 1.5)
            harness.sandbox.orders.healOrder(ids[0])
            let run = try await harness.executor.runReadyJobs()
            #expect(run == .init(completed: 3), "the fetch, then the full sync, then the push behind it")
            var expected = harness.upstream()
            expected["\(ids[2])"] = "pushed@99"
            #expect(try harness.local() == expected)
        }
    }

    /// A probe whose order the backend cannot serve, while the backend has come back: the check of
    /// another order ends the pause and the failure counts.
    @Test func aProbeOfABadOrderAfterTheOutageCountsAndEndsThePause() async throws {
        try await SyncHarness.run(maximumAttempts: 3, probeMaximum: .seconds(1)) { harness in
            let ids = (0..<2).map { _ in harness.sandbox.orders.create(announce: .silent) }
            harness.sandbox.orders.breakOrder(ids[0], status: 503)
            harness.sandbox.orders.beginOutage()
            try await harness.store.journal(ids.map(Self.fetch))
            #expect(try await harness.executor.runReadyJobs() == .init(unavailable: 1))
            harness.sandbox.orders.endOutage()
            harness.wall.advance(by: 1)
            #expect(try await harness.executor.runReadyJobs() == .init(completed: 1, failed: 1))
            #expect(!harness.executor.availability.isPaused)
            #expect(try harness.store.headJobs(limit: 1).first?.attempts == 1)
        }
    }
}
