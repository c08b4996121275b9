public import AsyncSignals
import CheckedInput
public import Foundation
public import Logging

/// Whether the order backend answers, as the serial executor has seen it (DESIGN §8 "Sync"). A job
/// that fails because the backend itself is unavailable, while the backend does not answer about
/// other orders either, *pauses* the executor: no attempt is counted, jobs that need the backend
/// wait, and one probe at a time is made, `probe` apart. The pause ends at the first evidence of
/// health: a request to the backend succeeding (the executor's own, a token refresh) or the stream
/// connecting again. Events on a stream that stayed open are no evidence: the orders endpoint can
/// be down while the events endpoint is up.
///
/// Shared by the executor (which pauses, probes and resumes), the stream and the session (which
/// bring evidence) and the agent's `/readyz`, `status` and `/metrics`.
public final class BackendAvailability: Sendable {
    /// What the executor knows of the backend now.
    public struct Snapshot: Sendable, Hashable {
        /// When the current pause began (Unix seconds); nil while the backend is available.
        public var unavailableSince: Double?
        /// Why the pause began: the failure that found the backend down.
        public var reason: String?
        /// Probes made in the current pause that failed.
        public var failedProbes = 0
        /// When the next probe may be made (Unix seconds); nil while available.
        public var nextProbeAt: Double?
        /// Seconds spent paused by pauses that ended.
        public var pausedSecondsEnded: Double = 0
        /// Pauses begun so far.
        public var pauses = 0

        /// True while paused.
        public var isPaused: Bool { unavailableSince != nil }
    }

    private let state = Locked(Snapshot())
    private let wake: WakeSignal?
    private let now: @Sendable () -> Double
    private let changed: @Sendable (Snapshot) -> Void
    private let logger: Logger

    /// A backend believed available. `wake` is the executor's, signalled when a pause ends so the
    /// jobs it held run at once; `changed` hears every pause and resume (for the agent's state).
    public init(
        wake: WakeSignal? = nil, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        changed: @escaping @Sendable (Snapshot) -> Void = { _ in }, logger: Logger
    ) {
        self.wake = wake
        self.now = now
        self.changed = changed
        self.logger = logger
    }

    /// The current view.
    public var snapshot: Snapshot { state.withLock { $0 } }

    /// True while jobs that need the backend wait for a probe.
    public var isPaused: Bool { state.withLock { $0.isPaused } }

    /// Whether a probe may be made now: false while available (no probe is needed) or before the
    /// next probe's time.
    func probeIsDue(at time: Double) -> Bool {
        state.withLock { state in
            guard state.isPaused, let next = state.nextProbeAt else { return false }
            return next <= time
        }
    }

    /// The backend did not answer for a job nor about any other order: pause (or stay paused), the
    /// next probe `delay` from now. Returns when that probe is due.
    @discardableResult
    public func unavailable(reason: String, nextProbeIn delay: Duration) -> Double {
        let time = now()
        let next = time + Checked.seconds(of: delay)
        let began = state.withLock { state -> Snapshot? in
            state.nextProbeAt = next
            guard state.unavailableSince == nil else {
                state.failedProbes = Checked.saturatingSum(state.failedProbes, 1)
                return nil
            }
            state.unavailableSince = time
            state.reason = reason
            state.failedProbes = 0
            state.pauses = Checked.saturatingSum(state.pauses, 1)
            return state
        }
        if let began {
            logger.warning("the order backend is unavailable; sync jobs that need it wait, no attempt is counted", metadata: [
                "sync.reason": "\(reason)", "sync.probe_in_s": "\(Checked.seconds(of: delay))",
            ])
            changed(began)
        }
        return next
    }

    /// Evidence that the backend answers: ends a pause at once and wakes the executor. `source` names
    /// the evidence for the log (`sync`, `stream`, `session`).
    public func answered(source: String) {
        let time = now()
        let ended = state.withLock { state -> (Snapshot, Double)? in
            guard let since = state.unavailableSince else { return nil }
            let paused = max(0, time - since)
            state.pausedSecondsEnded += paused
            state.unavailableSince = nil
            state.reason = nil
            state.nextProbeAt = nil
            state.failedProbes = 0
            return (state, paused)
        }
        guard let (snapshot, paused) = ended else { return }
        logger.notice("the order backend answers again; held sync jobs run now", metadata: [
            "sync.evidence": "\(source)", "sync.paused_s": "\((paused * 10).rounded() / 10)",
        ])
        changed(snapshot)
        wake?.signal()
    }
}
