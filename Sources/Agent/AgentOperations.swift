import CheckedInput
import AuthSession
import Foundation
import JSONToolkit
import OrderStore
import StoreModel
import PushIngest

/// `/readyz`, `/api/status` and `/metrics` of the running agent.
public struct AgentOperations: OperationsProvider {
    let session: Session
    let store: any OrderReader & WebhookOutbox & ChangeFeedSource
    let state: AgentState
    let metrics: AgentMetrics

    /// The operations of an agent made of these parts.
    public init(session: Session, store: any OrderReader & WebhookOutbox & ChangeFeedSource, state: AgentState, metrics: AgentMetrics) {
        self.session = session
        self.store = store
        self.state = state
        self.metrics = metrics
    }

    /// `/readyz`: 503 with the first reason the agent cannot do its work, else 200; notes on the side.
    public func readiness() async -> Readiness {
        let snapshot = state.snapshot
        let auth = await session.snapshot
        var reason: String?
        var storeReadable = true
        do {
            _ = try await store.counts()
        } catch {
            storeReadable = false
        }
        if snapshot.shuttingDown {
            reason = "shutting down"
        } else if !storeReadable {
            reason = "the order store cannot be read"
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
        let json = "{" + [
            #""ready":\#(reason == nil)"#,
            #""reason":\#(reason.map(JSONText.string) ?? "null")"#,
            #""auth":{"state":\#(JSONText.string(auth.state.rawValue))}"#,
            #""stream":{"state":\#(JSONText.string(snapshot.stream.rawValue)),"reconnects":\#(snapshot.reconnects)}"#,
            #""cluster":\#(snapshot.cluster.json)"#,
            #""notes":[\#(notes.map(JSONText.string).joined(separator: ","))]"#,
        ].joined(separator: ",") + "}"
        return Readiness(isReady: reason == nil, json: json)
    }

    /// `/api/status`: `status --json` of the running agent.
    public func statusJSON() async -> String {
        let auth = await session.snapshot
        return StatusOutput.json(auth, store: try? await StoreStatus(store), stream: state.snapshot)
    }

    /// `/metrics`.
    public func metricsText() async -> String {
        let auth = await session.snapshot
        metrics.record(webhooks: await webhookProgress(now: Date().timeIntervalSince1970))
        return metrics.text(
            counts: try? await store.counts(), health: store.writeHealth, now: Date().timeIntervalSince1970,
            authenticated: auth.state == .authenticated || auth.state == .refreshing)
    }

    /// Each webhook endpoint with its backlog and the age of the oldest change it has not had.
    private func webhookProgress(now: Double) async -> [(endpoint: WebhookEndpoint, backlog: Int64, oldestAge: Double)] {
        guard let endpoints = try? await store.webhookEndpoints(), !endpoints.isEmpty,
              let head = try? await store.changeHead() else { return [] }
        var progress: [(endpoint: WebhookEndpoint, backlog: Int64, oldestAge: Double)] = []
        for endpoint in endpoints {
            let backlog = max(0, Checked.difference(head, endpoint.cursor) ?? 0)
            var age = 0.0
            if backlog > 0, case .changes(let next)? = try? await store.changes(after: endpoint.cursor, limit: 1), let oldest = next.first {
                age = max(0, now - oldest.at)
            }
            progress.append((endpoint, backlog, age))
        }
        return progress
    }
}
