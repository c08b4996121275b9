public import StoreModel

/// Which journaled jobs may run now: the per-order lanes of DESIGN §8 "Sync", as one pure rule that
/// reads the journal in order and chooses. The executor still runs one job (or one transaction of
/// whole-order jobs) at a time; this only says which.
///
/// The rule, job by job in journal order:
/// - A job's **lane** is its order (a job without an order id is a lane of its own). A lane's first
///   job is its head; the others wait behind it, so an order's jobs apply in journal order.
/// - A lane whose head waits for its retry time (`not_before` in the future) **steps aside**: its
///   jobs are passed over and the jobs of other lanes behind it run.
/// - While the backend is unavailable (``BackendAvailability``), a head that needs the backend (a
///   fetch) is held like a waiting one, except the first one met once a probe is due: that one runs,
///   as the probe. Whole-order jobs (upserts, deletes) need no backend and run in their lanes.
/// - A **full sync is a barrier**: it runs only as the first job of the journal (every job before
///   it done), and nothing after it runs before it. Met anywhere else, the walk stops there.
///
/// Only a lane's head can wait: a job gets a retry time only by failing, and only a head runs.
public struct JobLanes {
    /// What to do now.
    public enum Choice: Sendable, Hashable {
        /// Nothing may run now.
        case nothing
        /// Whole-order jobs, in journal order, to apply in one transaction (two or more).
        case batch([JobRecord])
        /// One job, alone; `probe` when it is made as the probe of an unavailable backend.
        case single(JobRecord, probe: Bool)
    }

    /// The time the rule is applied at (Unix seconds).
    let now: Double
    /// True while the backend is unavailable.
    let paused: Bool
    /// True while paused and a probe may be made.
    let probeDue: Bool

    /// Lanes whose head waits (or is held by an unavailable backend); their other jobs are passed over.
    public private(set) var held: Set<String> = []
    /// The soonest retry time among the heads that wait.
    public private(set) var soonestRetry: Double?
    /// True once a full sync was met that cannot run yet: nothing after it may run.
    public private(set) var stoppedAtBarrier = false
    /// The last job looked at, to read on after it.
    public private(set) var lastSeen: Int64?
    private var seenAny = false
    private var chosen: [JobRecord] = []
    private var chosenProbe = false
    private var finished = false

    /// The rule at `now`, with the backend `paused` or not, and a probe due or not.
    public init(now: Double, paused: Bool, probeDue: Bool) {
        self.now = now
        self.paused = paused
        self.probeDue = paused && probeDue
    }

    /// True once the choice is made or the walk met a barrier: no later job can change it.
    public var isDecided: Bool { finished }

    /// What to do, from the jobs considered so far.
    public var choice: Choice {
        switch chosen.count {
        case 0: .nothing
        case 1: .single(chosen[0], probe: chosenProbe)
        default: .batch(chosen)
        }
    }

    /// Considers the next jobs of the journal, in order; call again with the jobs after ``lastSeen``
    /// while ``isDecided`` is false and the journal has more.
    public mutating func consider(_ jobs: some Sequence<JobRecord>) {
        for job in jobs where !finished {
            consider(job)
        }
    }

    private mutating func consider(_ job: JobRecord) {
        lastSeen = job.id
        defer { seenAny = true }
        if job.kind == .fullSync {
            // The barrier: it runs only with nothing before it, and nothing after it runs before it.
            if !seenAny, chosen.isEmpty, isReady(job, lane: nil) { take(job) }
            if chosen.isEmpty { stoppedAtBarrier = true }
            finished = true
            return
        }
        let lane = job.orderID ?? "job \(job.id ?? 0)"
        if held.contains(lane) { return }
        guard isReady(job, lane: lane) else {
            held.insert(lane)
            return
        }
        if chosen.isEmpty {
            take(job)
            // A job that needs the network, or one that failed before, goes alone.
            if !Self.batches(job) { finished = true }
            return
        }
        // Consecutive whole-order jobs go in one transaction: the same order and effect as one by
        // one. The first other job ends the batch; it runs next, on its own.
        if Self.batches(job) {
            chosen.append(job)
        } else {
            finished = true
        }
    }

    /// Whether `job`, a lane's head, may run now; notes the retry time of one that waits.
    private mutating func isReady(_ job: JobRecord, lane: String?) -> Bool {
        if job.notBefore > now {
            soonestRetry = min(soonestRetry ?? job.notBefore, job.notBefore)
            return false
        }
        guard paused, !job.isLocal else { return true }
        // The backend is unavailable: only the probe may ask it, once it is due, and it goes alone.
        return probeDue && chosen.isEmpty
    }

    private mutating func take(_ job: JobRecord) {
        chosen.append(job)
        chosenProbe = paused && !job.isLocal
    }

    /// Whether a job may share a transaction with others: a whole-order job never tried before.
    static func batches(_ job: JobRecord) -> Bool {
        job.isLocal && job.attempts == 0
    }
}
