import CheckedInput
public import AuthSession
import Foundation
import JSONToolkit
import SQLiteStore
import StoreModel
public import PushIngest
import OrderSync

/// `/readyz`, `/api/status` and `/metrics` of the running agent, answered from what the agent last
/// observed of its store (``StoreObservation``), never waiting on the store past a short bound.
public struct AgentOperations: OperationsProvider {
    let session: Session
    let observation: StoreObservation
    var store: any OrderReader & WebhookOutbox & ChangeFeedSource { observation.store }
    let state: AgentState
    let metrics: AgentMetrics

    /// How long readiness and status wait for a fresh read of the store before answering from the last one.
    static let briefWait = Duration.milliseconds(100)
    /// How long `/metrics` waits (a scrape allows seconds; its counts should be fresh).
    static let metricsWait = Duration.seconds(1)

    /// The operations of an agent made of these parts.
    public init(session: Session, observation: StoreObservation, state: AgentState, metrics: AgentMetrics) {
        self.session = session
        self.observation = observation
        self.state = state
        self.metrics = metrics
    }

    /// `/readyz`: 503 with the first reason the agent cannot do its work, else 200; notes on the side.
    public func readiness() async -> Readiness {
        let snapshot = state.snapshot
        let auth = await session.snapshot
        let seen = await observation.seen(waiting: Self.briefWait)
        var reason: String?
        if snapshot.shuttingDown {
            reason = "shutting down"
        } else if let problem = observation.problem(in: seen) {
            reason = "the order store cannot be read: \(problem)"
        } else if let problem = store.writeHealth.reason {
            reason = "the order store cannot be written: \(problem)"
        } else if !snapshot.executorRunning, snapshot.cluster.role == "leader" {
            reason = "the executor is not running"
        }
        var notes: [String] = []
        switch auth.state {
        case .unauthenticated: notes.append("no session: run orderlive login, or configure auth.password_file")
        case .locked: notes.append("the stored credentials cannot be read now")
        default: break
        }
        if snapshot.stream != .open, let error = snapshot.lastStreamError { notes.append("stream: \(error)") }
        if let since = snapshot.backendUnavailableSince {
            // Still ready: pushes and events are journaled and kept; jobs that need the backend wait.
            notes.append("backend unavailable since \(StatusDocument.rfc3339(since))"
                + (snapshot.backendUnavailableReason.map { ": \($0)" } ?? "") + "; jobs that need it wait, no attempt is counted")
        }
        let json = "{" + [
            #""ready":\#(reason == nil)"#,
            #""reason":\#(reason.map(JSONText.string) ?? "null")"#,
            #""auth":{"state":\#(JSONText.string(auth.state.rawValue))}"#,
            #""stream":{"state":\#(JSONText.string(snapshot.stream.rawValue)),"reconnects":\#(snapshot.reconnects)}"#,
            #""cluster":\#(snapshot.cluster.json)"#,
            #""backend":{"available":\#(snapshot.backendUnavailableSince == nil),"unavailable_since":\#(snapshot.backendUnavailableSince.map { JSONText.string(StatusDocument.rfc3339($0)) } ?? "null")}"#,
            #""database":\#(databaseJSON(seen))"#,
            #""notes":[\#(notes.map(JSONText.string).joined(separator: ","))]"#,
        ].joined(separator: ",") + "}"
        return Readiness(isReady: reason == nil, json: json)
    }

    /// `/api/status`: `status --json` of the running agent, with the store as last seen.
    public func statusJSON() async -> String {
        let auth = await session.snapshot
        let seen = await observation.seen(waiting: Self.briefWait)
        var status = seen.status
        status?.writeProblem = store.writeHealth.reason
        return StatusDocument.json(auth, store: status, stream: state.snapshot, database: databaseJSON(seen))
    }

    /// `/metrics`, with the store's counts as last seen.
    public func metricsText() async -> String {
        await refreshMetrics()
        return metrics.text()
    }

    /// Brings the gauges that mirror the store and the agent's state up to date: before `/metrics`
    /// answers, and on every OTLP export interval (``MetricsRefresh``), where nothing scrapes.
    public func refreshMetrics() async {
        let auth = await session.snapshot
        let seen = await observation.seen(waiting: Self.metricsWait)
        metrics.record(webhooks: seen.webhooks.map { ($0.endpoint, $0.backlog, $0.oldestAge) })
        metrics.refresh(
            counts: seen.status?.counts, health: store.writeHealth, now: Date().timeIntervalSince1970,
            authenticated: auth.state == .authenticated || auth.state == .refreshing, state: state.snapshot)
    }

    /// `"database"`: how long ago the store last answered (seconds, one decimal; null before its
    /// first answer) and why its last read failed, if it did.
    func databaseJSON(_ seen: StoreObservation.Seen) -> String {
        let ago = seen.answeredAt.map { StoreObservation.seconds(observation.now() - $0) } ?? "null"
        return #"{"answered_s_ago":\#(ago),"error":\#(seen.failure.map(JSONText.string) ?? "null")}"#
    }
}
