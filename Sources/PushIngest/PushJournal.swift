import AsyncSignals
import CheckedInput
import Foundation
import StoreModel

/// Journals push submissions with group commit (DESIGN §9: ≥ 10k requests/s even with an fsync
/// per commit). Requests queue their submission; one that finds fewer commits in progress than the
/// store takes at once (``JobJournal/concurrentAccepts``: one on SQLite) becomes a leader and
/// commits everything queued — its own and the others' — in one transaction, again and again until
/// the queue is empty. Every waiting request is answered only after the transaction that holds its
/// jobs has committed (FIELD-NOTES 16). Commits happen on the leading request's task until its own
/// submission is committed; if more are queued by then, a task of their own carries on, so no
/// request waits for a queue that may never empty under load. Batches in flight at once are
/// concurrent requests', so no order between them is promised; the store keeps each batch whole.
public final class PushJournal: Sendable {
    private struct State {
        var queue: [(IdempotentSubmission, Ticket)] = []
        var committing = 0
        var lastPurge: Double = 0
    }

    private let store: any JobJournal
    private let dedupeWindow: Double  // seconds, as the wall clock `now` counts
    private let highWaterJobs: Int
    private let maximumBatch: Int
    private let concurrentCommits: Int
    private let now: @Sendable () -> Double
    private let journaled: @Sendable () -> Void
    private let state = Locked(State())

    /// Creates a journal over `store`. `journaled` runs after each commit that journaled jobs (it
    /// wakes the executor); `now` is Unix seconds.
    public init(
        store: any JobJournal, dedupeWindow: Duration, highWaterJobs: Int, maximumBatch: Int = 512,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        journaled: @escaping @Sendable () -> Void = {}
    ) {
        self.store = store
        self.dedupeWindow = Checked.seconds(of: dedupeWindow)
        self.highWaterJobs = highWaterJobs
        self.maximumBatch = max(1, maximumBatch)
        self.concurrentCommits = max(1, store.concurrentAccepts)
        self.now = now
        self.journaled = journaled
    }

    /// Journals one submission, durably, and says what became of it.
    public func submit(_ submission: IdempotentSubmission) async -> SubmissionOutcome {
        let ticket = Ticket()
        let leads = state.withLock { state in
            state.queue.append((submission, ticket))
            if state.committing >= concurrentCommits { return false }
            state.committing += 1
            return true
        }
        if leads { await commitQueued(leader: ticket) }
        return await ticket.value
    }

    /// Commits queued batches until the queue is empty, or — for a leading request — until its own
    /// submission is committed, handing the rest to a new task.
    private func commitQueued(leader ticket: Ticket?) async {
        while true {
            let now = self.now()
            let (batch, purge) = state.withLock { state -> ([(IdempotentSubmission, Ticket)], Double?) in
                let batch = Array(state.queue.prefix(maximumBatch))
                state.queue.removeFirst(batch.count)
                if batch.isEmpty { state.committing -= 1 }
                // Expired keys are deleted once a minute, inside a commit that happens anyway.
                guard now - state.lastPurge >= 60 else { return (batch, nil) }
                state.lastPurge = now
                return (batch, now - dedupeWindow)
            }
            if batch.isEmpty { return }
            let outcomes = await store.accept(
                batch.map(\.0),
                policy: SubmissionPolicy(
                    dedupeSince: now - dedupeWindow, highWaterJobs: highWaterJobs, purgeKeysBefore: purge))
            var added = false
            for (index, entry) in batch.enumerated() {
                let outcome = index < outcomes.count ? outcomes[index] : .failed(reason: "no outcome")
                // Jobs applied at once (``ImmediateApply``) leave nothing for the executor to do.
                if case .accepted(let jobs, _, let applied, _) = outcome, jobs > applied { added = true }
                entry.1.give(outcome)
            }
            if added { journaled() }
            if let ticket, ticket.current != nil {
                let more = state.withLock { state in
                    if state.queue.isEmpty { state.committing -= 1 }
                    return !state.queue.isEmpty
                }
                if more { Task { await self.commitQueued(leader: nil) } }
                return
            }
        }
    }
}

/// A request's answer: given once by the committing leader, awaited by its request.
private typealias Ticket = OneShot<SubmissionOutcome>
