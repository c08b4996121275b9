public import AuthSession
import CheckedInput
public import Foundation
import JSONToolkit
import StoreModel
import OrderSync

/// The status document (DESIGN §5): `status --json` and the running agent's `GET /api/status`, from
/// the session, the store and the stream's state. Never a token.
public enum StatusDocument {
    /// `status --json` (never a token): the auth section, then — when the order database exists —
    /// the stream (live from the running agent's `stream`, else `stopped` with the stored cursor),
    /// the journal, dead letters, orders, and the user the data belongs to.
    public static func json(
        _ snapshot: Session.Snapshot, store: StoreStatus? = nil, stream: AgentState.Snapshot? = nil,
        database: String? = nil, now: Double = Date().timeIntervalSince1970
    ) -> String {
        var fields = [#""state":\#(JSONText.string(snapshot.state.rawValue))"#]
        fields.append(#""user_id":\#(jsonIdentifier(snapshot.userID))"#)
        fields.append(#""role":\#(snapshot.role.map(JSONText.string) ?? "null")"#)
        fields.append(#""store_ids":[\#(snapshot.storeIDs.map(jsonIdentifier).joined(separator: ","))]"#)
        fields.append(#""access_expires_at":\#(snapshot.accessExpiresAt.map { JSONText.string(rfc3339($0)) } ?? "null")"#)
        fields.append(#""refresh_expires_at":\#(snapshot.refreshExpiresAt.map { JSONText.string(rfc3339($0)) } ?? "null")"#)
        var sections = [#""auth":{\#(fields.joined(separator: ","))}"#]
        if let store {
            let oldest = store.counts.oldestJobCreatedAt.map { max(0, Checked.int64(clamping: now - $0)) } ?? 0
            var streamFields = [
                #""state":\#(JSONText.string(stream?.stream.rawValue ?? "stopped"))"#,
                #""cursor":\#(JSONText.string(store.cursor))"#,
            ]
            if let stream {
                streamFields.append(#""reconnects":\#(stream.reconnects)"#)
                streamFields.append(#""last_event_at":\#(stream.lastEventAt.map { JSONText.string(rfc3339($0)) } ?? "null")"#)
            }
            sections.append(#""stream":{\#(streamFields.joined(separator: ","))}"#)
            sections.append(#""journal":{"depth":\#(store.counts.journalDepth),"oldest_age_s":\#(oldest)}"#)
            sections.append(syncJSON(store.counts, stream: stream, now: now))
            sections.append(#""dead_letters":\#(store.counts.deadLetters)"#)
            sections.append(#""orders":\#(store.counts.orders)"#)
            sections.append(#""owner_user_id":\#(jsonIdentifier(store.owner ?? snapshot.userID))"#)
            sections.append(
                #""store":{"writable":\#(store.writeProblem == nil),"reason":\#(store.writeProblem.map(JSONText.string) ?? "null")}"#)
            let hooks = store.webhooks.map { hook in
                #"{"id":\#(hook.id),"state":\#(JSONText.string(hook.enabled ? "enabled" : "disabled")),"disabled_reason":\#(hook.reason.map(JSONText.string) ?? "null"),"backlog":\#(hook.backlog),"last_error":\#(hook.lastError.map(JSONText.string) ?? "null")}"#
            }
            sections.append(#""webhooks":[\#(hooks.joined(separator: ","))]"#)
        } else {
            sections.append(#""owner_user_id":\#(jsonIdentifier(snapshot.userID))"#)
        }
        sections.append(#""cluster":\#((stream?.cluster ?? AgentState.Cluster()).json)"#)
        if let database { sections.append(#""database":\#(database)"#) }
        return "{" + sections.joined(separator: ",") + "}"
    }

    /// `"sync"`: whether the backend answers the executor (since when it has not, and why), and the
    /// orders whose lane waits for a retry (DESIGN §8 "Sync").
    static func syncJSON(_ counts: StoreCounts, stream: AgentState.Snapshot?, now: Double) -> String {
        let since = stream?.backendUnavailableSince
        let waitingAge = counts.oldestWaitingJobCreatedAt.map { max(0, Checked.int64(clamping: now - $0)) } ?? 0
        return "\"sync\":{" + [
            #""backend":\#(JSONText.string(backendState(stream)))"#,
            #""unavailable_since":\#(since.map { JSONText.string(rfc3339($0)) } ?? "null")"#,
            #""reason":\#(stream?.backendUnavailableReason.map(JSONText.string) ?? "null")"#,
            #""waiting_lanes":\#(counts.waitingLanes)"#,
            #""oldest_waiting_age_s":\#(waitingAge)"#,
        ].joined(separator: ",") + "}"
    }

    /// `unavailable` while the running agent's executor is paused, `available` while it runs with its
    /// stream, `unknown` when no agent runs (or its stream is stopped) to say.
    public static func backendState(_ stream: AgentState.Snapshot?) -> String {
        guard let stream else { return "unknown" }
        if stream.backendUnavailableSince != nil { return "unavailable" }
        return stream.stream == .stopped ? "unknown" : "available"
    }

    /// A user or store id as JSON: a number when it is all digits, else a string.
    static func jsonIdentifier(_ value: String?) -> String {
        guard let value else { return "null" }
        if !value.isEmpty, value.count < 16, value.allSatisfy(\.isASCII), value.allSatisfy(\.isNumber) { return value }
        return JSONText.string(value)
    }

    /// Unix seconds as RFC 3339 UTC; outside years 0000–9999 (a damaged credentials file), the
    /// number itself.
    public static func rfc3339(_ seconds: Double) -> String {
        let milliseconds = (seconds * 1000).rounded(.down)
        guard let exact = Int64(exactly: milliseconds),
              let text = Checked.rfc3339(unixMilliseconds: exact, fraction: false) else {
            return "\(seconds) (Unix seconds, outside years 0000–9999)"
        }
        return text
    }
}
