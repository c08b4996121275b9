public import AsyncSignals
import CheckedInput
public import Foundation
public import Logging
public import StoreModel
import Synchronization
public import Tracing

/// Applies journaled jobs strictly one at a time (DESIGN §8 "Sync"). A job's network fetch is part
/// of the job; nothing else runs meanwhile, because there is one consumer and it awaits each job to
/// the end. Which job runs next is the per-order lanes' rule (``JobLanes``): an order's jobs in
/// journal order, a job waiting for its retry steps aside for other orders' jobs, a full sync is a
/// barrier. A failure of one order counts an attempt, and after `maximumAttempts` the job becomes a
/// dead letter; a failure that finds the backend itself unavailable counts none and pauses the jobs
/// that need the backend (``BackendAvailability``) until a probe or other evidence finds it again.
/// Nothing is ever skipped.
public final class SyncExecutor: Sendable {
    /// Retry and paging settings.
    public struct Configuration: Sendable {
        /// Attempts before a job becomes a dead letter (failures of its own order, not outages).
        public var maximumAttempts: Int
        /// Orders per page in a full sync.
        public var pageSize: Int
        /// The first retry delay; doubles per attempt.
        public var retryBase: Duration
        /// The largest retry delay.
        public var retryMaximum: Duration
        /// The first delay between probes of an unavailable backend; doubles per failed probe.
        public var probeBase: Duration
        /// The largest delay between probes (`sync.outage_probe_max_s`); a longer `Retry-After` is
        /// honoured up to ``retryMaximum``.
        public var probeMaximum: Duration

        /// Creates a configuration with DESIGN §6's defaults.
        public init(maximumAttempts: Int = 8, pageSize: Int = 500, retryBase: Duration = .seconds(1),
                    retryMaximum: Duration = .seconds(300), probeBase: Duration = .milliseconds(500),
                    probeMaximum: Duration = .seconds(5)) {
            self.maximumAttempts = max(1, maximumAttempts)
            self.pageSize = max(1, pageSize)
            self.retryBase = retryBase
            self.retryMaximum = retryMaximum
            self.probeMaximum = max(probeMaximum, .milliseconds(1))
            self.probeBase = min(max(probeBase, .milliseconds(1)), self.probeMaximum)
        }
    }

    /// What ``runReadyJobs()`` did.
    public struct Progress: Sendable, Hashable {
        /// Jobs applied and removed from the journal.
        public var completed = 0
        /// Failed attempts recorded (the job stays).
        public var failed = 0
        /// Jobs moved to the dead letters.
        public var deadLettered = 0
        /// Attempts that found the backend unavailable (the job stays; no attempt counted).
        public var unavailable = 0

        /// Creates a tally.
        public init(completed: Int = 0, failed: Int = 0, deadLettered: Int = 0, unavailable: Int = 0) {
            self.completed = completed
            self.failed = failed
            self.deadLettered = deadLettered
            self.unavailable = unavailable
        }
    }

    let store: any JobApplier
    let source: any OrderSource
    let configuration: Configuration
    let now: @Sendable () -> Double
    let random: @Sendable () -> Double
    let logger: Logger
    /// Whether the backend answers, shared with the stream and the session (which bring evidence).
    public let availability: BackendAvailability
    private let observe: @Sendable (JobKind, Outcome) -> Void
    /// A span per attempt, and per page of a full sync (DESIGN §14); none when nil.
    let tracer: (any Tracer)?
    private let running = Atomic<Int>(0)
    private let mostAtOnce = Atomic<Int>(0)

    /// Creates an executor over a store and an order source; `now` is the wall clock in Unix seconds,
    /// `random` a number in [0, 1] for the probes' jitter; `observe` hears every job's outcome (for
    /// metrics); `availability` is shared with whatever brings evidence of the backend's health;
    /// `tracer` makes a span of each attempt and of each page of a full sync.
    public init(
        store: any JobApplier, source: any OrderSource, configuration: Configuration = .init(),
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) },
        availability: BackendAvailability? = nil,
        observe: @escaping @Sendable (JobKind, Outcome) -> Void = { _, _ in }, tracer: (any Tracer)? = nil, logger: Logger
    ) {
        self.observe = observe
        self.tracer = tracer
        self.store = store
        self.source = source
        self.configuration = configuration
        self.now = now
        self.random = random
        self.availability = availability ?? BackendAvailability(now: now, logger: logger)
        self.logger = logger
    }

    /// The most jobs ever in flight at once (the serial guarantee says 1).
    package var maximumConcurrentJobs: Int { mostAtOnce.load(ordering: .relaxed) }

    /// Applies the jobs the lanes allow (``JobLanes``) until none may run now, or `stopping` says so
    /// (checked between jobs, so the job in hand always finishes). One at a time: each job, fetch
    /// included, finishes before the next starts.
    @discardableResult
    public func runReadyJobs(until stopping: @Sendable () -> Bool = { false }) async throws -> Progress {
        try await runReady(until: stopping).progress
    }

    /// ``runReadyJobs(until:)``, with the lanes as they were when nothing more could run (nil when
    /// `stopping` or cancellation ended it first): the run loop's wait is read from them.
    func runReady(until stopping: @Sendable () -> Bool) async throws -> (progress: Progress, lanes: JobLanes?) {
        var progress = Progress()
        while !Task.isCancelled && !stopping() {
            let lanes = try await nextChoice()
            switch lanes.choice {
            case .nothing:
                return (progress, lanes)
            case .batch(let cheap):
                // Whole-order jobs that are ready go in one transaction: the same order and effect as
                // one by one, at a fraction of the commits.
                let current = running.add(1, ordering: .acquiringAndReleasing).newValue
                _ = mostAtOnce.max(current, ordering: .relaxed)
                defer { running.subtract(1, ordering: .acquiringAndReleasing) }
                let applied: Int
                let span = startSpan(batch: cheap)
                defer { span?.end() }
                do {
                    applied = try await store.applyInOneTransaction(cheap)
                } catch is JobsGone {
                    dropped(cheap.count)
                    continue
                }
                progress.completed += applied
                for job in cheap.prefix(applied) { observe(job.kind, .completed) }
            case .single(let job, let probe):
                guard let outcome = await execute(job, probe: probe) else {
                    dropped(1)
                    continue
                }
                observe(job.kind, outcome)
                switch outcome {
                case .completed: progress.completed += 1
                case .failed: progress.failed += 1
                case .deadLettered: progress.deadLettered += 1
                case .unavailable: progress.unavailable += 1
                }
            }
        }
        return (progress, nil)
    }

    /// How many jobs one read of the journal takes.
    static let window = 512

    /// The lanes' choice now, reading the journal in windows until it is made, the walk meets a
    /// barrier, or the journal ends (a lane that waits can hold more jobs than one window).
    func nextChoice() async throws -> JobLanes {
        let time = now()
        var lanes = JobLanes(
            now: time, paused: availability.isPaused, probeDue: availability.probeIsDue(at: time))
        var jobs = try await store.headJobs(limit: Self.window)
        while true {
            lanes.consider(jobs)
            guard !lanes.isDecided, jobs.count >= Self.window, let last = lanes.lastSeen else { return lanes }
            jobs = try await store.headJobs(after: last, limit: Self.window)
        }
    }

    /// Runs until the task is cancelled or `stopping` says so: applies ready jobs, then waits for
    /// `wake`, the soonest retry of a lane that waits, or the next probe of an unavailable backend.
    /// `stopping` is checked between jobs, so the job in hand finishes (signal `wake` after setting
    /// it); cancellation interrupts the job in hand, which then stays journaled as it was. With
    /// `lookEvery`, it also looks at the journal that often while it waits: jobs another process
    /// journals (`orderlive dead-letters retry` beside a SQLite store) signal no `wake` of this one.
    public func run(
        wake: WakeSignal, lookEvery: Duration? = nil, until stopping: @escaping @Sendable () -> Bool = { false }
    ) async {
        let clock = ContinuousClock()
        while !Task.isCancelled && !stopping() {
            let progress: Progress
            let lanes: JobLanes
            do {
                let run = try await runReady(until: stopping)
                guard let last = run.lanes else { return }
                (progress, lanes) = (run.progress, last)
            } catch {
                // Cancelled (the agent stops, or a leader steps down): nothing failed.
                if Task.isCancelled { return }
                logger.error("the order store cannot be read; retrying", metadata: ["sync.reason": "\(error)"])
                await wake.wait(until: clock.now.advanced(by: .seconds(1)), clock: clock)
                continue
            }
            if lanes.lastSeen == nil { logger.debug("journal drained") }
            var soonest = lanes.soonestRetry
            if let probe = availability.snapshot.nextProbeAt, lanes.lastSeen != nil {
                soonest = min(soonest ?? probe, probe)
            }
            var deadline: ContinuousClock.Instant?
            if let soonest {
                // `not_before` is read back from the state directory: any Double, NaN included.
                deadline = clock.now.advanced(by: Checked.duration(seconds: soonest - now(), maximum: .seconds(3600)))
            }
            if let lookEvery {
                let look = clock.now.advanced(by: lookEvery)
                deadline = deadline.map { min($0, look) } ?? look
            }
            if stopping() { return }
            if Self.coalescing > .zero, progress.completed > 0, lanes.lastSeen == nil {
                // Busy: let a little more arrive, so the next run applies it in one transaction
                // instead of one per wake-up (under push load this halves the executor's commits).
                try? await Task.sleep(for: Self.coalescing)
            }
            await wake.wait(until: deadline, clock: clock)
        }
    }

    /// How long a busy executor waits for more jobs before its next run.
    static let coalescing = Duration.milliseconds(5)

    /// How one attempt at a job ended (reported to the outcome observer, for metrics).
    public enum Outcome: String, Sendable, Hashable, CaseIterable {
        /// Applied and removed from the journal.
        case completed
        /// Failed; it stays in its lane and is retried; the attempt counts.
        case failed
        /// Moved to the dead letters.
        case deadLettered = "dead_lettered"
        /// The backend was unavailable; the job stays, no attempt counted.
        case unavailable = "backend_unavailable"
    }

    /// Jobs read from the journal were gone when they were to be applied (``JobsGone``): a user switch
    /// cleared the journal meanwhile. Nothing was applied; the next read of the head goes on.
    private func dropped(_ count: Int) {
        logger.notice("sync jobs were cleared by a user switch before they were applied; they are dropped",
                      metadata: ["sync.jobs": "\(count)"])
    }

    /// Applies `job`: how the attempt ended, or nil when the job was no longer journaled (``JobsGone``).
    /// `probe` when it is made as the probe of an unavailable backend.
    private func execute(_ job: JobRecord, probe: Bool) async -> Outcome? {
        let current = running.add(1, ordering: .acquiringAndReleasing).newValue
        defer { running.subtract(1, ordering: .acquiringAndReleasing) }
        _ = mostAtOnce.max(current, ordering: .relaxed)
        logger.debug("sync job started", metadata: [
            "sync.job.kind": "\(job.kind.rawValue)", "sync.job.order_id": "\(job.orderID ?? "")",
            "sync.job.probe": "\(probe)",
        ])
        guard let span = startSpan(job, probe: probe) else { return await attempt(job, span: nil) }
        // The attempt's log lines carry its trace id (the log handler reads the task's context).
        return await ServiceContext.withValue(span.context) { await attempt(job, span: span) }
    }

    /// One attempt of `job` under `span`, as ``execute(_:probe:)`` says.
    private func attempt(_ job: JobRecord, span: (any Span)?) async -> Outcome? {
        do {
            try await apply(job, span: span)
            if !job.isLocal { availability.answered(source: "sync") }
            logger.debug("sync job applied", metadata: [
                "sync.job.kind": "\(job.kind.rawValue)", "sync.job.order_id": "\(job.orderID ?? "")",
            ])
            Self.end(span, .completed)
            return .completed
        } catch is JobsGone {
            Self.end(span, nil)
            return nil
        } catch {
            if Task.isCancelled {
                // Shutting down: the job was interrupted, not failed; it stays exactly as journaled.
                Self.end(span, .failed, error)
                return .failed
            }
            let outcome = await failed(job, error)
            Self.end(span, outcome, error)
            return outcome
        }
    }

    /// The span of one attempt, in the trace of the push or event that journaled the job (DESIGN §14):
    /// the job's kind and order, whether it probes an unavailable backend.
    private func startSpan(_ job: JobRecord, probe: Bool) -> (any Span)? {
        guard let tracer else { return nil }
        let span = tracer.startSpan("sync apply \(job.kind.rawValue)", context: journaled(job, tracer), ofKind: .internal)
        if span.isRecording {
            span.updateAttributes { attributes in
                attributes["orderlive.job.kind"] = job.kind.rawValue
                if let order = job.orderID { attributes["orderlive.order_id"] = order }
                if probe { attributes["orderlive.job.probe"] = true }
            }
        }
        return span
    }

    /// The span of a batch of whole-order jobs applied in one transaction: a trace of its own, linked
    /// to the trace of each job's push or event (a span has one parent; the jobs came from many).
    private func startSpan(batch jobs: [JobRecord]) -> (any Span)? {
        guard let tracer else { return nil }
        let span = tracer.startSpan("sync apply batch", context: .topLevel, ofKind: .internal)
        // A batch not sampled records nothing: its links are not read out of every job's context.
        guard span.isRecording else { return span }
        span.updateAttributes { $0["orderlive.jobs"] = jobs.count }
        for job in jobs where job.traceContext != nil {
            span.addLink(SpanLink(context: journaled(job, tracer), attributes: ["orderlive.order_id": "\(job.orderID ?? "")"]))
        }
        return span
    }

    /// The context the job was journaled under; top-level when it kept none.
    private func journaled(_ job: JobRecord, _ tracer: any Tracer) -> ServiceContext {
        var context = ServiceContext.topLevel
        if let stored = job.traceContext {
            tracer.extract(StoredTraceContext.fields(stored), into: &context, using: TraceFieldsExtractor())
        }
        return context
    }

    /// Ends an attempt's span with how it ended (nil: the job was gone).
    private static func end(_ span: (any Span)?, _ outcome: Outcome?, _ error: (any Error)? = nil) {
        guard let span else { return }
        guard span.isRecording else { return span.end() }
        span.updateAttributes { $0["orderlive.job.outcome"] = outcome?.rawValue ?? "gone" }
        if let error, outcome != .completed {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
    }

    private func apply(_ job: JobRecord, span: (any Span)?) async throws {
        switch job.kind {
        case .upsert:
            guard let order = job.order else { throw SyncError("the upsert job's order cannot be read") }
            try await store.applyUpsert(order, completing: job.id)
        case .delete:
            guard let id = job.orderID else { throw SyncError("the delete job has no order id") }
            try await store.applyDelete(orderID: id, version: job.version, completing: job.id)
        case .fetch:
            guard let id = job.orderID else { throw SyncError("the fetch job has no order id") }
            if let order = try await source.fetchOrder(id: id) {
                if let bound = job.version, let version = order.version, version < bound {
                    throw SyncError("order \(id) is at version \(version) upstream, but version \(bound) was announced")
                }
                try await store.applyUpsert(order, completing: job.id)
            } else {
                try await store.applyDelete(orderID: id, version: nil, completing: job.id)
            }
        case .fullSync:
            let kept = try await fullSync(job, span: span)
            // Only now, with every page in hand, may missing orders be deleted.
            let removed = try await store.completeFullSync(keeping: kept, completing: job.id)
            logger.info("full sync finished", metadata: ["sync.orders": "\(kept.count)", "sync.removed": "\(removed)"])
        }
    }
}
