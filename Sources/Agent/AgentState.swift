import AsyncSignals
import Foundation
import JSONToolkit
public import OrderSync

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
        /// The cluster as this agent sees it (DESIGN §12).
        public var cluster = Cluster()
        /// Since when the order backend has been unavailable to the executor (Unix seconds); nil
        /// while it answers (DESIGN §8 "Sync").
        public var backendUnavailableSince: Double?
        /// The failure that found it unavailable.
        public var backendUnavailableReason: String?
        /// Seconds spent by pauses that ended.
        public var backendPausedSeconds: Double = 0

        /// Seconds the executor has spent paused for an unavailable backend, the current pause included.
        public func backendPausedSeconds(at now: Double) -> Double {
            backendPausedSeconds + (backendUnavailableSince.map { max(0, now - $0) } ?? 0)
        }
    }

    /// DESIGN §12 `cluster`: the engine, this agent's role and what it knows of the leader.
    public struct Cluster: Sendable, Hashable {
        /// `sqlite` or `postgres`.
        public var backend = "sqlite"
        /// The account (PostgreSQL).
        public var account: String?
        /// `leader` or `follower`; with SQLite always the leader.
        public var role = "leader"
        /// The account's fencing epoch, when known.
        public var epoch: Int64?
        /// The leader's `host:pid`, when known.
        public var leader: String?
        /// Takeovers by this agent.
        public var takeovers = 0
        /// "ok" or why the database cannot be used (PostgreSQL).
        public var database: String?

        /// The `cluster` object of `/readyz` and `status --json`.
        public var json: String {
            var fields = [#""backend":\#(JSONText.string(backend))"#]
            if let account { fields.append(#""account":\#(JSONText.string(account))"#) }
            fields.append(#""role":\#(JSONText.string(role))"#)
            if backend == "postgres" {
                fields.append(#""epoch":\#(epoch.map(String.init) ?? "null")"#)
                fields.append(#""leader":\#(leader.map(JSONText.string) ?? "null")"#)
                fields.append(#""takeovers":\#(takeovers)"#)
                fields.append(#""database":\#(JSONText.string(database ?? "ok"))"#)
            }
            return "{" + fields.joined(separator: ",") + "}"
        }
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
