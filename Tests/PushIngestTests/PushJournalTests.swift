import AsyncSignals
import SQLiteStore
import StoreModel
import PushIngest
import Testing
import TestHarnesses

/// Group commit: how many batches the push journal has in flight at once, over a real SQLite store.
@Suite(.timeLimit(.minutes(3))) struct PushJournalTests {
    /// A real store behind a journal that says how many batches it takes at once and counts how many
    /// it was given at once. With `concurrent` above one, the first batch holds until a second is in
    /// flight (or 10 s pass), so a journal that never overlaps batches fails the test instead of
    /// passing by luck of timing.
    private final class CountingJournal: JobJournal {
        private struct State {
            var inFlight = 0
            var most = 0
            var batches = 0
        }

        let store: SQLiteOrderStore
        let concurrentAccepts: Int
        private let state = Locked(State())
        private let overlapped = WakeSignal()

        init(store: SQLiteOrderStore, concurrent: Int) {
            self.store = store
            self.concurrentAccepts = concurrent
        }

        var most: Int { state.withLock { $0.most } }

        func streamCursor() async throws -> String { try store.streamCursor() }
        func journal(_ jobs: [NewJob], cursor: String?, deadLetters: [DeadLetterRecord]) async throws -> Int {
            try await store.journal(jobs, cursor: cursor, deadLetters: deadLetters)
        }
        func claim(for userID: String) async throws -> Bool { try store.claim(for: userID) }

        func accept(_ submissions: [IdempotentSubmission], policy: SubmissionPolicy) async -> [SubmissionOutcome] {
            let (inFlight, first) = state.withLock { state in
                state.inFlight += 1
                state.most = max(state.most, state.inFlight)
                state.batches += 1
                return (state.inFlight, state.batches == 1)
            }
            if inFlight >= 2 { overlapped.signal() }
            if first, concurrentAccepts > 1 {
                let clock = ContinuousClock()
                await overlapped.wait(until: clock.now.advanced(by: .seconds(10)), clock: clock)
            }
            let outcomes = await store.accept(submissions, policy: policy)
            state.withLock { $0.inFlight -= 1 }
            return outcomes
        }
    }

    /// With a carrier (as the push server runs it) a leader hands its slot on once its own batch is
    /// committed; without one it carries on itself. Either way every submission is answered after
    /// its commit, and a carrier that was stopped returns and leaves leaders to carry on.
    @Test(arguments: [1, 2], [false, true])
    func batchesOverlapUpToWhatTheStoreTakesAndEverySubmissionIsAnsweredAfterItsCommit(concurrent: Int, carried: Bool) async throws {
        let temporary = try TemporaryStore()
        let journal = CountingJournal(store: temporary.store, concurrent: concurrent)
        let pushes = PushJournal(store: journal, dedupeWindow: .seconds(3_600), highWaterJobs: 1_000, maximumBatch: 4)
        let carrier = carried ? Task { await pushes.carryCommits() } : nil
        let submissions = try (1...40).map { id in
            IdempotentSubmission(requestKey: "msg-\(id)", parts: [
                .init(key: "n-\(id)", jobs: [NewJob(kind: .upsert, order: try order(id, version: 1), source: "push")]),
            ], response: "{}")
        }
        let outcomes = await withTaskGroup(of: SubmissionOutcome.self) { group in
            for submission in submissions { group.addTask { await pushes.submit(submission) } }
            var outcomes: [SubmissionOutcome] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes.count == 40)
        #expect(outcomes.allSatisfy { $0 == .accepted(jobs: 1, duplicateParts: 0) }, "\(outcomes)")
        #expect(journal.most == concurrent, "batches in flight at once")
        // Answered only after the commit: every accepted job is in the journal now.
        #expect(try temporary.store.counts().journalDepth == 40)
        pushes.stopCarrying()
        await carrier?.value
        let late = IdempotentSubmission(requestKey: "late", parts: [
            .init(key: "n-late", jobs: [NewJob(kind: .upsert, order: try order(41, version: 1), source: "push")]),
        ], response: "{}")
        #expect(await pushes.submit(late) == .accepted(jobs: 1, duplicateParts: 0), "after the carrier stopped")
    }
}
