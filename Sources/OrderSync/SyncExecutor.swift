import AsyncSignals
import CheckedInput
import Foundation
import Logging
import StoreModel
import Synchronization

/// Applies journaled jobs strictly one at a time, in journal order (DESIGN §8 "Sync"). A job's
/// network fetch is part of the job; nothing else runs meanwhile, because there is one consumer and
/// it awaits each job to the end. A failing job is retried with backoff where it stands in the
/// journal; after `maximumAttempts` it becomes a dead letter. Nothing is ever skipped.
public final class SyncExecutor: Sendable {
    /// Retry and paging settings.
    public struct Configuration: Sendable {
        /// Attempts before a job becomes a dead letter.
        public var maximumAttempts: Int
        /// Orders per page in a full sync.
        public var pageSize: Int
        /// The first retry delay; doubles per attempt.
        public var retryBase: Duration
        /// The largest retry delay.
        public var retryMaximum: Duration

        /// Creates a configuration with DESIGN §6's defaults.
        public init(maximumAttempts: Int = 8, pageSize: Int = 500, retryBase: Duration = .seconds(1),
                    retryMaximum: Duration = .seconds(300)) {
            self.maximumAttempts = max(1, maximumAttempts)
            self.pageSize = max(1, pageSize)
            self.retryBase = retryBase
            self.retryMaximum = retryMaximum
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

        /// Creates a tally.
        public init(completed: Int = 0, failed: Int = 0, deadLettered: Int = 0) {
            self.completed = completed
            self.failed = failed
            self.deadLettered = deadLettered
        }
    }

    private let store: any JobApplier
    private let source: any OrderSource
    private let configuration: Configuration
    private let now: @Sendable () -> Double
    private let logger: Logger
    private let observe: @Sendable (JobKind, Outcome) -> Void
    private let running = Atomic<Int>(0)
    private let mostAtOnce = Atomic<Int>(0)

    /// Creates an executor over a store and an order source; `now` is the wall clock in Unix seconds;
    /// `observe` hears every job's outcome (for metrics).
    public init(
        store: any JobApplier, source: any OrderSource, configuration: Configuration = .init(),
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        observe: @escaping @Sendable (JobKind, Outcome) -> Void = { _, _ in }, logger: Logger
    ) {
        self.observe = observe
        self.store = store
        self.source = source
        self.configuration = configuration
        self.now = now
        self.logger = logger
    }

    /// The most jobs ever in flight at once (the serial guarantee says 1).
    package var maximumConcurrentJobs: Int { mostAtOnce.load(ordering: .relaxed) }

    /// Applies jobs in journal order until the journal is empty, its head must wait for a retry
    /// time, or `stopping` says so (checked between jobs, so the job in hand always finishes). One
    /// at a time: each job, fetch included, finishes before the next starts.
    @discardableResult
    public func runReadyJobs(until stopping: @Sendable () -> Bool = { false }) async throws -> Progress {
        var progress = Progress()
        while !Task.isCancelled && !stopping() {
            let head = try await store.headJobs(limit: 512)
            guard let first = head.first, first.notBefore <= now() else { break }
            // Consecutive cheap jobs (upserts, deletes) that are ready go in one transaction: the same
            // order and effect as one by one, at a fraction of the commits. The first job that needs
            // the network (or waits for a retry) ends the run and goes alone.
            let cheap = Array(head.prefix { $0.isLocal && $0.notBefore <= now() && $0.attempts == 0 })
            if cheap.count > 1 {
                let current = running.add(1, ordering: .acquiringAndReleasing).newValue
                _ = mostAtOnce.max(current, ordering: .relaxed)
                defer { running.subtract(1, ordering: .acquiringAndReleasing) }
                let applied: Int
                do {
                    applied = try await store.applyInOneTransaction(cheap)
                } catch is JobsGone {
                    dropped(cheap.count)
                    continue
                }
                progress.completed += applied
                for job in cheap.prefix(applied) { observe(job.kind, .completed) }
                continue
            }
            guard let outcome = await execute(first) else {
                dropped(1)
                continue
            }
            observe(first.kind, outcome)
            switch outcome {
            case .completed: progress.completed += 1
            case .failed: progress.failed += 1
            case .deadLettered: progress.deadLettered += 1
            }
        }
        return progress
    }

    /// Runs until the task is cancelled or `stopping` says so: applies ready jobs, then waits for
    /// `wake` or the head job's retry time. `stopping` is checked between jobs, so the job in hand
    /// finishes (signal `wake` after setting it); cancellation interrupts the job in hand, which then
    /// stays journaled as it was. With `lookEvery`, it also looks at the journal that often while it
    /// waits: jobs another process journals (`orderlive dead-letters retry` beside a SQLite store)
    /// signal no `wake` of this one.
    public func run(
        wake: WakeSignal, lookEvery: Duration? = nil, until stopping: @escaping @Sendable () -> Bool = { false }
    ) async {
        let clock = ContinuousClock()
        while !Task.isCancelled && !stopping() {
            let progress: Progress
            do {
                progress = try await runReadyJobs(until: stopping)
            } catch {
                logger.error("the order store cannot be read; retrying", metadata: ["sync.reason": "\(error)"])
                await wake.wait(until: clock.now.advanced(by: .seconds(1)), clock: clock)
                continue
            }
            let head = (try? await store.headJobs(limit: 1))?.first
            if head == nil { logger.debug("journal drained") }
            var deadline: ContinuousClock.Instant?
            if let head {
                // `not_before` is read back from the state directory: any Double, NaN included.
                deadline = clock.now.advanced(by: Checked.duration(seconds: head.notBefore - now(), maximum: .seconds(3600)))
            }
            if let lookEvery {
                let look = clock.now.advanced(by: lookEvery)
                deadline = deadline.map { min($0, look) } ?? look
            }
            if stopping() { return }
            if Self.coalescing > .zero, progress.completed > 0, head == nil {
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
    public enum Outcome: String, Sendable, Hashable {
        /// Applied and removed from the journal.
        case completed
        /// Failed; it stays in place and is retried.
        case failed
        /// Moved to the dead letters.
        case deadLettered = "dead_lettered"
    }

    /// Jobs read from the journal were gone when they were to be applied (``JobsGone``): a user switch
    /// cleared the journal meanwhile. Nothing was applied; the next read of the head goes on.
    private func dropped(_ count: Int) {
        logger.notice("sync jobs were cleared by a user switch before they were applied; they are dropped",
                      metadata: ["sync.jobs": "\(count)"])
    }

    /// Applies `job`: how the attempt ended, or nil when the job was no longer journaled (``JobsGone``).
    private func execute(_ job: JobRecord) async -> Outcome? {
        let current = running.add(1, ordering: .acquiringAndReleasing).newValue
        defer { running.subtract(1, ordering: .acquiringAndReleasing) }
        _ = mostAtOnce.max(current, ordering: .relaxed)
        logger.debug("sync job started", metadata: [
            "sync.job.kind": "\(job.kind.rawValue)", "sync.job.order_id": "\(job.orderID ?? "")",
        ])
        do {
            try await apply(job)
            logger.debug("sync job applied", metadata: [
                "sync.job.kind": "\(job.kind.rawValue)", "sync.job.order_id": "\(job.orderID ?? "")",
            ])
            return .completed
        } catch is JobsGone {
            return nil
        } catch {
            if Task.isCancelled {
                // Shutting down: the job was interrupted, not failed; it stays exactly as journaled.
                return .failed
            }
            let reason = (error as? SyncError)?.message ?? "\(error)"
            if (error as? SyncError)?.waitsForSession == true, let id = job.id {
                // Not the job's fault: it waits, uncounted, and runs once a session exists.
                do {
                    try await store.recordFailure(
                        jobID: id, reason: reason, retryAt: now() + Checked.seconds(of: min(max(configuration.retryMaximum, .seconds(1)), .seconds(5))),
                        countsAttempt: false)
                    logger.debug("sync job waits for a session", metadata: ["sync.job.kind": "\(job.kind.rawValue)"])
                } catch {
                    logger.error("could not postpone a sync job", metadata: ["sync.reason": "\(error)"])
                }
                return .failed
            }
            // `attempts` is read back from the state directory: counted without overflow.
            let attempts = Checked.saturatingSum(job.attempts, 1)
            do {
                if attempts >= configuration.maximumAttempts {
                    var failed = job
                    failed.attempts = attempts
                    try await store.deadLetter(job: failed, reason: reason)
                    logger.error("sync job became a dead letter", metadata: [
                        "sync.job.kind": "\(job.kind.rawValue)", "sync.job.order_id": "\(job.orderID ?? "")",
                        "sync.job.attempts": "\(attempts)", "sync.reason": "\(reason)",
                    ])
                    return .deadLettered
                }
                let delay = Checked.seconds(of: ExponentialDelay.delay(
                    attempt: job.attempts, base: configuration.retryBase, maximum: configuration.retryMaximum))
                if let id = job.id { try await store.recordFailure(jobID: id, reason: reason, retryAt: now() + delay, countsAttempt: true) }
                logger.warning("sync job failed; will retry", metadata: [
                    "sync.job.kind": "\(job.kind.rawValue)", "sync.job.order_id": "\(job.orderID ?? "")",
                    "sync.job.attempts": "\(attempts)", "sync.reason": "\(reason)",
                ])
            } catch is JobsGone {
                return nil
            } catch {
                // The store itself failed: the job stays exactly where it is and is tried again later.
                logger.error("could not record a failed sync job", metadata: ["sync.reason": "\(error)"])
            }
            return .failed
        }
    }

    private func apply(_ job: JobRecord) async throws {
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
            let kept = try await fullSync(job)
            // Only now, with every page in hand, may missing orders be deleted.
            let removed = try await store.completeFullSync(keeping: kept, completing: job.id)
            logger.info("full sync finished", metadata: ["sync.orders": "\(kept.count)", "sync.removed": "\(removed)"])
        }
    }

    /// Applies every page of a full sync and returns the ids the backend returned. Pipelined in three
    /// stages, each as soon as its input is there: the next page is asked for once this one's cursor
    /// is read (the pages come one cursor after another), a page is decoded while the next is on its
    /// way, and applied on the executor while later ones are fetched and decoded. At most
    /// ``pagesAhead`` decoded pages wait for the store, one more is decoded and one fetched. A page
    /// that fails ends the job (the stages still running are cancelled) and the job is retried.
    private func fullSync(_ job: JobRecord) async throws -> Set<String> {
        let source = self.source
        let limit = configuration.pageSize
        let pages = BoundedHandOff<[OrderRecord]>(capacity: Self.pagesAhead)
        return try await withThrowingTaskGroup { group in
            // The stages before the store run on the global executor. A child inherits this task's
            // executor (the executor's one thread, busy with the applies), so a child that did not ask
            // for another one did not start until an apply had ended: a cold start of 100,000 orders
            // took the sum of the fetches and the applies, not the longer.
            group.addTask(executorPreference: globalConcurrentExecutor) {
                do {
                    let seen = try await Self.fetchAndDecode(source: source, limit: limit, into: pages)
                    pages.finish()
                    return seen
                } catch {
                    pages.finish(throwing: error)
                    throw error
                }
            }
            while let orders = try await pages.receive() {
                try await store.applyPage(orders, for: job.id)
            }
            guard let seen = try await group.next() else { throw SyncError("the full sync's fetches ended without a result") }
            return seen
        }
    }

    /// Decoded pages the store has not taken yet, at most.
    static let pagesAhead = 2

    /// Fetches every page, starting each request as soon as the cursor before it is read, and hands
    /// the decoded pages on in order. Returns every id the pages held: collected here, off the
    /// executor's thread (hashing 100,000 ids there was about 5 % of a cold start's apply time).
    private static func fetchAndDecode(
        source: any OrderSource, limit: Int, into pages: BoundedHandOff<[OrderRecord]>
    ) async throws -> Set<String> {
        var seen = Set<String>()
        var page = try await source.fetchPageForLater(cursor: nil, limit: limit)
        while true {
            let current = page
            let following: FetchedPage? = try await withThrowingTaskGroup { group in
                if let cursor = current.next {
                    group.addTask { try await source.fetchPageForLater(cursor: cursor, limit: limit) }
                }
                let orders = try current.orders()
                for order in orders { seen.insert(order.id) }
                try await pages.send(orders)
                return try await group.next()
            }
            guard let following else { return seen }
            page = following
        }
    }
}
