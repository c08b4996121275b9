import Agent
import JSONToolkit
public import StoreModel

/// `webhooks list`: each endpoint's URL, filters, state, progress and last error, as aligned lines or
/// JSON. Never its secret.
public enum WebhookOutput {
    /// One endpoint as a JSON object; `backlog` is how many changes the log holds after its cursor.
    public static func json(_ endpoint: WebhookEndpoint, head: Int64) -> String {
        let fields = [
            "\"id\":\(endpoint.id)",
            "\"url\":\(JSONText.string(endpoint.url))",
            "\"events\":[\(endpoint.events.sorted().map(JSONText.string).joined(separator: ","))]",
            "\"store_ids\":[\(endpoint.storeIDs.sorted().map(JSONText.string).joined(separator: ","))]",
            "\"state\":\(JSONText.string(endpoint.enabled ? "enabled" : "disabled"))",
            "\"disabled_reason\":\(endpoint.disabledReason.map(JSONText.string) ?? "null")",
            "\"last_delivered_seq\":\(endpoint.cursor)",
            "\"backlog\":\(max(0, head - endpoint.cursor))",
            "\"attempts\":\(endpoint.attempts)",
            "\"last_error\":\(endpoint.lastError.map(JSONText.string) ?? "null")",
            "\"last_error_at\":\(endpoint.lastErrorAt.map { JSONText.string(StatusDocument.rfc3339($0)) } ?? "null")",
            "\"last_success_at\":\(endpoint.lastSuccessAt.map { JSONText.string(StatusDocument.rfc3339($0)) } ?? "null")",
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// `webhooks list --json`: an array, by id.
    public static func listJSON(_ endpoints: [WebhookEndpoint], head: Int64) -> String {
        "[" + endpoints.map { json($0, head: head) }.joined(separator: ",") + "]"
    }

    /// `webhooks list`: one aligned line per endpoint.
    public static func listLines(_ endpoints: [WebhookEndpoint], head: Int64) -> [String] {
        FailureOutput.table(["ID", "STATE", "URL", "FILTERS", "DELIVERED", "BACKLOG", "LAST ERROR"], endpoints.map { endpoint in
            let filters = (endpoint.events.sorted() + endpoint.storeIDs.sorted().map { "store " + $0 }).joined(separator: ",")
            let state = endpoint.enabled ? "enabled" : "disabled: " + FailureOutput.oneLine(endpoint.disabledReason ?? "")
            let error = endpoint.lastError.map { FailureOutput.oneLine($0) + " (" + StatusDocument.rfc3339(endpoint.lastErrorAt ?? 0) + ")" }
            return ["\(endpoint.id)", state, endpoint.url, filters.isEmpty ? "all" : filters, "\(endpoint.cursor)",
                    "\(max(0, head - endpoint.cursor))", error ?? "-"]
        })
    }
}
