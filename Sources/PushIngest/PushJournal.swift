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
/// submission is committed; if more are queued by then, the leader hands its commit slot to the
/// carrier, ``carryCommits()``, which the push server runs beside its listener (so the work has an
/// owner that drains it at shutdown, never a detached task), and answers its own request: no
/// request waits for a queue that may never empty under load. While no carrier runs (before the
/// server starts, after it stopped, a journal used on its own) the leader carries on itself until
/// the queue is empty. Batches in flight at once are concurrent requests', so no order between them
/// is promised; the store keeps each batch whole.
public final class PushJournal: Sendable {
    private struct State {
        var queue: [(IdempotentSubmission, Ticket)] = []
        var committing = 0
        var lastPurge: Double = 0
        /// Whether ``carryCommits()`` is running to take handed-off commit slots.
        var carrierRunning = false
        /// Commit slots handed to the carrier and not yet taken.
        var handedOff = 0
    }

    private let store: any JobJournal
    private let dedupeWindow: Double  // seconds, as the wall clock `now` counts
    private let highWaterJobs: Int
    private let maximumBatch: Int
    private let concurrentCommits: Int
    private let now: @Sendable () -> Double
    private let journaled: @Sendable () -> Void
    private let state = Locked(State())
    private let carrier = WakeSignal()

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
    private func commitQueued(leader: Ticket?) async {
        var ticket = leader
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
            if let leading = ticket, leading.current != nil {
                let handOff = state.withLock { state -> Bool? in
                    if state.queue.isEmpty {
                        state.committing -= 1
                        return nil
                    }
                    guard state.carrierRunning else { return false }
                    state.handedOff += 1
                    return true
                }
                switch handOff {
                case nil:
                    return
                case true?:
                    carrier.signal()
                    return
                case false?:
                    // No carrier: this task goes on until the queue is empty.
                    ticket = nil
                }
            }
        }
    }

    /// Takes the commit slots that leading requests hand off, each on a child task of its own, until
    /// ``stopCarrying()`` is called or the task is cancelled; then finishes the slots handed off so
    /// far and returns once every batch they carry is committed and answered. While one runs, a
    /// second call returns at once.
    public func carryCommits() async {
        // One carrier per journal: a second one returns at once (the signal has one waiter).
        guard state.withLock({ state in
            if state.carrierRunning { return false }
            state.carrierRunning = true
            return true
        }) else { return }
        await withDiscardingTaskGroup { group in
            while true {
                let (slots, stopping) = state.withLock { state in
                    defer { state.handedOff = 0 }
                    return (state.handedOff, !state.carrierRunning)
                }
                for _ in 0..<slots { group.addTask { await self.commitQueued(leader: nil) } }
                if stopping || Task.isCancelled { break }
                await carrier.wait(until: nil, clock: ContinuousClock())
            }
        }
        // A slot handed off after the last look (by a leader that saw the carrier still running).
        let late = state.withLock { state in
            state.carrierRunning = false
            defer { state.handedOff = 0 }
            return state.handedOff
        }
        for _ in 0..<late { await commitQueued(leader: nil) }
    }

    /// Ends ``carryCommits()`` after the slots handed off so far; leaders carry on themselves from now.
    public func stopCarrying() {
        state.withLock { $0.carrierRunning = false }
        carrier.signal()
    }
}

/// A request's answer: given once by the committing leader, awaited by its request.
private typealias Ticket = OneShot<SubmissionOutcome>
