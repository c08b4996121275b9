import AsyncSignals
import CheckedInput
public import Foundation
public import StoreModel

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
///
/// With a `deadline` (the agent's: `ingest.read_timeout_ms`, and `failover_s` on PostgreSQL) every
/// request is answered within it (DESIGN §10): a store that stops answering (a locked SQLite file, a
/// silently partitioned PostgreSQL) must not hold requests and their connections. A leader's request
/// cannot be answered before its own commit returns, so then no request leads: while the carrier
/// runs, a request that would lead hands its slot to the carrier at once and only waits for its
/// answer (one task hop per batch). The carrier sweeps every tenth of the deadline: a submission
/// still queued past its deadline is taken out of the queue (so it is never committed) and answered
/// as failed; one whose batch is in flight past it is answered as failed too — its commit may still
/// land later, which a `503` allows (nothing is acknowledged that is not committed, and a retry with
/// the same `notif_id` is answered as a duplicate).
public final class PushJournal: Sendable {
    private struct State {
        var queue: [Queued] = []
        /// The submissions of each batch being committed (their tickets and when they were queued),
        /// by batch number.
        var inFlight: [Int: [Queued]] = [:]
        var nextBatch = 0
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
    private let deadline: Duration?
    private let state = Locked(State())
    private let carrier = WakeSignal()

    /// Creates a journal over `store`. `journaled` runs after each commit that journaled jobs (it
    /// wakes the executor); `now` is Unix seconds; `deadline` is the longest a request waits for its
    /// commit while the carrier runs (nil: as long as the store takes).
    public init(
        store: any JobJournal, dedupeWindow: Duration, highWaterJobs: Int, maximumBatch: Int = 512,
        deadline: Duration? = nil, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        journaled: @escaping @Sendable () -> Void = {}
    ) {
        self.store = store
        self.dedupeWindow = Checked.seconds(of: dedupeWindow)
        self.highWaterJobs = highWaterJobs
        self.maximumBatch = max(1, maximumBatch)
        self.concurrentCommits = max(1, store.concurrentAccepts)
        self.now = now
        self.journaled = journaled
        self.deadline = deadline
    }

    /// Journals one submission, durably, and says what became of it.
    public func submit(_ submission: IdempotentSubmission) async -> SubmissionOutcome {
        let ticket = Ticket()
        // With a deadline, commits run on the carrier's tasks and every request only waits for its
        // answer: a leader cannot be answered before its own commit returns, which a locked or
        // silent store may delay past any deadline.
        switch enqueue(submission, ticket, leadsWhileCarrierRuns: deadline == nil) {
        case .leads: await commitQueued(leader: ticket)
        case .handsOff: carrier.signal()
        case .waits: break
        }
        return await ticket.value
    }

    /// Journals one submission, durably, and calls `answer` with what became of it, on the thread of
    /// the commit (or the sweep) that decided it: for a request served on an event loop, which must
    /// not wait (``PushRequestHandler``). No request leads here: while the carrier runs, the commit
    /// slot goes to the carrier; before it runs or after it stopped (no request is served then but
    /// in a race at start), an unowned task commits the queue to its end.
    public func submit(_ submission: IdempotentSubmission, answer: @escaping @Sendable (SubmissionOutcome) -> Void) {
        let ticket = Ticket()
        ticket.whenGiven(answer)
        switch enqueue(submission, ticket, leadsWhileCarrierRuns: false) {
        case .leads: Task { await self.commitQueued(leader: nil) }
        case .handsOff: carrier.signal()
        case .waits: break
        }
    }

    /// Queues a submission and says what its request does: wait (every commit slot is taken), hand
    /// its slot to the carrier (while it runs, unless `leadsWhileCarrierRuns`), or lead.
    private func enqueue(_ submission: IdempotentSubmission, _ ticket: Ticket, leadsWhileCarrierRuns: Bool) -> Role {
        let queuedAt = deadline == nil ? nil : ContinuousClock.now
        return state.withLock { state -> Role in
            state.queue.append(Queued(submission: submission, ticket: ticket, at: queuedAt))
            if state.committing >= concurrentCommits { return .waits }
            state.committing += 1
            guard state.carrierRunning, !leadsWhileCarrierRuns else { return .leads }
            state.handedOff += 1
            return .handsOff
        }
    }

    /// Commits queued batches until the queue is empty, or — for a leading request — until its own
    /// submission is committed, handing the rest to a new task.
    private func commitQueued(leader: Ticket?) async {
        var ticket = leader
        while true {
            let now = self.now()
            let timed = deadline != nil
            let (batch, number, purge) = state.withLock { state -> ([Queued], Int, Double?) in
                let batch = Array(state.queue.prefix(maximumBatch))
                state.queue.removeFirst(batch.count)
                if batch.isEmpty { state.committing -= 1 }
                let number = state.nextBatch
                if timed, !batch.isEmpty {
                    state.nextBatch &+= 1
                    state.inFlight[number] = batch
                }
                // Expired keys are deleted once a minute, inside a commit that happens anyway.
                guard now - state.lastPurge >= 60 else { return (batch, number, nil) }
                state.lastPurge = now
                return (batch, number, now - dedupeWindow)
            }
            if batch.isEmpty { return }
            let outcomes = await store.accept(
                batch.map(\.submission),
                policy: SubmissionPolicy(
                    dedupeSince: now - dedupeWindow, highWaterJobs: highWaterJobs, purgeKeysBefore: purge))
            if timed { state.withLock { _ = $0.inFlight.removeValue(forKey: number) } }
            var added = false
            for (index, entry) in batch.enumerated() {
                let outcome = index < outcomes.count ? outcomes[index] : .failed(reason: "no outcome")
                // Jobs applied at once (``ImmediateApply``) leave nothing for the executor to do.
                if case .accepted(let jobs, _, let applied, _) = outcome, jobs > applied { added = true }
                _ = entry.ticket.give(outcome)
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
            if let deadline {
                group.addTask { await self.sweep(every: deadline / 10, deadline: deadline) }
            }
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

extension PushJournal {
    /// Answers the requests that waited past `deadline`, every `period`, while the carrier runs.
    private func sweep(every period: Duration, deadline: Duration) async {
        let reason = "the journal did not commit within \(deadline): the store is not answering"
        while state.withLock({ $0.carrierRunning }), !Task.isCancelled {
            try? await Task.sleep(for: max(period, .milliseconds(10)))
            let cutoff = ContinuousClock.now - deadline
            let late = state.withLock { state -> [Ticket] in
                var late: [Ticket] = []
                // Never committed: out of the queue.
                state.queue.removeAll { entry in
                    guard let at = entry.at, at <= cutoff else { return false }
                    late.append(entry.ticket)
                    return true
                }
                // Committing: answered, though the commit may still land (a retry is a duplicate then).
                for (_, batch) in state.inFlight {
                    for entry in batch { if let at = entry.at, at <= cutoff { late.append(entry.ticket) } }
                }
                return late
            }
            for ticket in late { _ = ticket.give(.failed(reason: reason)) }
        }
    }
}

/// What a request does with its submission once queued.
private enum Role {
    /// Commits batches on its own task until its own is committed.
    case leads
    /// Hands its commit slot to the carrier and waits for its answer.
    case handsOff
    /// Waits: every commit slot is taken.
    case waits
}

/// A submission waiting for a batch, with its request's ticket and when it was queued (nil without
/// a deadline).
private struct Queued: Sendable {
    var submission: IdempotentSubmission
    var ticket: Ticket
    var at: ContinuousClock.Instant?
}

/// A request's answer: given once by the committing leader, awaited by its request.
private typealias Ticket = OneShot<SubmissionOutcome>
