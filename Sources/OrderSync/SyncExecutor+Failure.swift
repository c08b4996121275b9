import CheckedInput
import Logging
import StoreModel

/// What a failed job costs (DESIGN §8 "Sync"): nothing while there is no session or the backend is
/// unavailable, an attempt when the failure is its own order's.
///
/// The rule for counting:
/// - no session (``SyncError/waitsForSession``): the job waits, uncounted, and is tried again soon;
/// - a failure that may be the backend's (``SyncError/unavailable``: no connection, a reset, a
///   timeout, TLS, DNS, 408, 429, any 5xx): the executor asks the backend about *another* order at
///   once (`GET orders?limit=1`, ``OrderSource/answersAtAll()``). If that answers, the backend
///   serves others and the failure is this order's own: it counts. If that fails too, the backend is
///   unavailable: nothing counts, jobs that need the backend pause, and this job is the next probe;
/// - anything else (a 4xx other than 401/404/408/429, a body that does not read, an older version than
///   was announced, a store failure): it counts.
/// A counted failure waits `retryBase × 2^attempts` (at most `retryMaximum`) in its lane, stepping
/// aside for other orders' jobs; at `maximumAttempts` the job becomes a dead letter.
extension SyncExecutor {
    /// Records the failure of `job`: how the attempt ended, or nil when the job was gone.
    func failed(_ job: JobRecord, _ error: any Error) async -> Outcome? {
        let syncError = error as? SyncError
        let reason = syncError?.message ?? "\(error)"
        if syncError?.waitsForSession == true {
            // Not the job's fault: it waits, uncounted, and runs once a session exists.
            let wait = min(max(configuration.retryMaximum, .seconds(1)), .seconds(5))
            await postpone(job, reason: reason, retryAt: now() + Checked.seconds(of: wait))
            logger.debug("sync job waits for a session", metadata: ["sync.job.kind": "\(job.kind.rawValue)"])
            return .failed
        }
        if let syncError, syncError.unavailable, await !backendAnswersForOthers() {
            let probeAt = availability.unavailable(reason: reason, nextProbeIn: probeDelay(retryAfter: syncError.retryAfter))
            await postpone(job, reason: reason, retryAt: probeAt)
            return .unavailable
        }
        return await counted(job, reason: reason)
    }

    /// Asks the backend about any order but the failing one's: whether it answers at all. An answer
    /// of any kind but an unavailable one (even an error about the request) is evidence of health.
    private func backendAnswersForOthers() async -> Bool {
        do {
            try await source.answersAtAll()
        } catch where error.unavailable || error.waitsForSession {
            logger.debug("the order backend does not answer about other orders either", metadata: [
                "sync.reason": "\(error.message)",
            ])
            return false
        } catch {
            // An answer, if not the one asked for: the backend is there.
        }
        availability.answered(source: "sync")
        return true
    }

    /// The delay before the next probe: `probeBase` doubled per failed probe up to `probeMaximum`,
    /// jittered within [d/2, d]; a longer `Retry-After` is honoured, up to `retryMaximum`.
    func probeDelay(retryAfter: Duration?) -> Duration {
        let failed = availability.snapshot.failedProbes
        let attempt = availability.isPaused ? Checked.saturatingSum(failed, 1) : 0
        let delay = ExponentialDelay.delay(
            attempt: attempt, base: configuration.probeBase, maximum: configuration.probeMaximum, unit: random())
        guard let retryAfter else { return delay }
        return max(delay, min(retryAfter, max(configuration.retryMaximum, configuration.probeMaximum)))
    }

    /// Keeps `job` where it is without counting an attempt, until `retryAt`.
    private func postpone(_ job: JobRecord, reason: String, retryAt: Double) async {
        guard let id = job.id else { return }
        do {
            try await store.recordFailure(jobID: id, reason: reason, retryAt: retryAt, countsAttempt: false)
        } catch {
            logger.error("could not postpone a sync job", metadata: ["sync.reason": "\(error)"])
        }
    }

    /// Counts a failure of `job`'s own: it waits in its lane for its retry, or becomes a dead letter.
    private func counted(_ job: JobRecord, reason: String) async -> Outcome? {
        // `attempts` is read back from the state directory: counted without overflow.
        let attempts = Checked.saturatingSum(job.attempts, 1)
        let metadata: Logger.Metadata = [
            "sync.job.kind": "\(job.kind.rawValue)", "sync.job.order_id": "\(job.orderID ?? "")",
            "sync.job.attempts": "\(attempts)", "sync.reason": "\(reason)",
        ]
        do {
            if attempts >= configuration.maximumAttempts {
                var failed = job
                failed.attempts = attempts
                try await store.deadLetter(job: failed, reason: reason)
                logger.error("sync job became a dead letter", metadata: metadata)
                return .deadLettered
            }
            let delay = Checked.seconds(of: ExponentialDelay.delay(
                attempt: job.attempts, base: configuration.retryBase, maximum: configuration.retryMaximum))
            if let id = job.id { try await store.recordFailure(jobID: id, reason: reason, retryAt: now() + delay, countsAttempt: true) }
            logger.warning("sync job failed; it waits for its retry while other orders' jobs go on", metadata: metadata)
        } catch is JobsGone {
            return nil
        } catch {
            // The store itself failed: the job stays exactly where it is and is tried again later.
            logger.error("could not record a failed sync job", metadata: ["sync.reason": "\(error)"])
        }
        return .failed
    }
}
