import AsyncSignals
import Foundation
import OrderSync

/// What the running agent knows about itself that is not on disk: the stream's state and counters,
/// and whether the executor runs. Written by the services, read by `/readyz`, `/api/status` and
/// `/metrics`.
public final class AgentState: Sendable {
    /// DESIGN §5 `stream.state`.
    public typealias StreamState = OrderSync.StreamState

    /// A consistent copy of the state.
    public struct Snapshot: Sendable, Hashable {
        /// The stream's state.
        public var stream = StreamState.stopped
        /// Connections lost so far.
        public var reconnects = 0
        /// When the last event arrived, Unix seconds.
        public var lastEventAt: Double?
        /// The last reason the stream was lost, if any.
        public var lastStreamError: String?
        /// Token refreshes that succeeded.
        public var tokenRefreshes = 0
        /// True while the executor's loop runs.
        public var executorRunning = false
        /// True once shutdown began.
        public var shuttingDown = false
    }

    private let state = Locked(Snapshot())
    /// Signalled on every update, for the stream-status recorder.
    let changes = WakeSignal()

    /// Creates an empty state.
    public init() {}

    /// The current state.
    public var snapshot: Snapshot { state.withLock { $0 } }

    /// Changes the state (the services do) and wakes the stream-status recorder.
    public func update(_ change: (inout Snapshot) -> Void) {
        state.withLock { change(&$0) }
        changes.signal()
    }
}
