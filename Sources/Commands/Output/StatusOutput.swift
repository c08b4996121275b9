public import Agent
public import AuthSession
import StoreModel
import OrderSync

/// `status`'s readable lines (DESIGN §5), from the session, the store and the stream's state. Never a
/// token; `status --json` is the agent's ``StatusDocument``.
public enum StatusOutput {
    /// `status`'s readable lines.
    public static func lines(
        _ snapshot: Session.Snapshot, stateDirectory: String, store: StoreStatus? = nil,
        stream: AgentState.Snapshot? = nil
    ) -> [String] {
        var lines = ["auth:     \(snapshot.state.rawValue)"]
        if let user = snapshot.userID {
            let role = snapshot.role.map { ", role \($0)" } ?? ""
            let stores = snapshot.storeIDs.isEmpty ? "" : ", stores \(snapshot.storeIDs.joined(separator: ", "))"
            lines.append("user:     \(user)\(role)\(stores)")
        }
        if let access = snapshot.accessExpiresAt { lines.append("access:   expires \(StatusDocument.rfc3339(access))") }
        if let refresh = snapshot.refreshExpiresAt { lines.append("refresh:  expires \(StatusDocument.rfc3339(refresh))") }
        if let store {
            var streamLine = "stream:   \(stream?.stream.rawValue ?? "stopped"), cursor \(store.cursor.isEmpty ? "(none)" : store.cursor)"
            if let stream {
                streamLine += ", \(stream.reconnects) reconnect(s)"
                if let last = stream.lastEventAt { streamLine += ", last event \(StatusDocument.rfc3339(last))" }
            }
            lines.append(streamLine)
            lines.append("journal:  \(store.counts.journalDepth) job(s), \(store.counts.deadLetters) dead letter(s)")
            lines.append(syncLine(store.counts, stream: stream))
            lines.append("store:    " + (store.writeProblem.map { "NOT WRITABLE: \($0)" } ?? "writable"))
            lines.append("orders:   \(store.counts.orders)" + (store.owner.map { " (user \($0))" } ?? ""))
            for hook in store.webhooks {
                let state = hook.enabled ? "enabled" : "DISABLED: \(hook.reason ?? "")"
                lines.append("webhook:  \(hook.id) \(state), \(hook.backlog) change(s) behind" + (hook.lastError.map { ", last error: \($0)" } ?? ""))
            }
        } else {
            lines.append("orders:   no local order database yet")
        }
        if let cluster = stream?.cluster, cluster.backend == "postgres" {
            var line = "cluster:  postgres, account \(cluster.account ?? "?"), \(cluster.role)"
            if let epoch = cluster.epoch { line += ", epoch \(epoch)" }
            if let leader = cluster.leader { line += ", leader \(leader)" }
            if let database = cluster.database, database != "ok" { line += ", database: \(database)" }
            lines.append(line)
        }
        lines.append("state:    \(stateDirectory)")
        return lines
    }

    /// `status`'s `sync:` line.
    static func syncLine(_ counts: StoreCounts, stream: AgentState.Snapshot?) -> String {
        var line = "sync:     "
        if let since = stream?.backendUnavailableSince {
            line += "BACKEND UNAVAILABLE since \(StatusDocument.rfc3339(since))" + (stream?.backendUnavailableReason.map { " (\($0))" } ?? "")
                + "; jobs that need it wait, no attempt counted"
        } else {
            line += "backend \(StatusDocument.backendState(stream))"
        }
        line += counts.waitingLanes > 0 ? ", \(counts.waitingLanes) order(s) waiting for a retry" : ", no order waits for a retry"
        return line
    }

}
