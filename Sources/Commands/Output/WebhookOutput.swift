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
            "\"max_in_flight\":\(endpoint.options.maxInFlight)",
            "\"batch_size\":\(endpoint.options.batchSize)",
            "\"batch_ms\":\(endpoint.options.batchMilliseconds)",
            "\"rate_per_s\":\(number(endpoint.options.ratePerSecond))",
            "\"headers\":{\(endpoint.options.headers.map { JSONText.string($0.name) + ":" + JSONText.string(masked($0)) }.joined(separator: ","))}",
            "\"client_certificate\":\(endpoint.options.clientCertificate.isEmpty ? "null" : JSONText.string(endpoint.options.clientCertificate))",
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// A rate as written: whole numbers without a fraction.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? "\(Int64(value))" : "\(value)"
    }

    /// A header as listed: never its value, only where it comes from.
    static func masked(_ header: WebhookHeader) -> String {
        header.file.map { "(from \($0))" } ?? "(set)"
    }

    /// An endpoint's delivery options in a few words (`update`'s answer, `list`'s column).
    public static func delivery(_ options: WebhookDeliveryOptions) -> String {
        var words = ["\(options.maxInFlight) in flight"]
        if options.batchSize > 1 { words.append("batches of \(options.batchSize)" + (options.batchMilliseconds > 0 ? " within \(options.batchMilliseconds) ms" : "")) }
        if options.ratePerSecond > 0 { words.append("at most \(number(options.ratePerSecond))/s") }
        if !options.headers.isEmpty { words.append("headers " + options.headers.map(\.name).joined(separator: ",")) }
        if !options.clientCertificate.isEmpty { words.append("client certificate") }
        return words.joined(separator: ", ")
    }

    /// `webhooks list --json`: an array, by id.
    public static func listJSON(_ endpoints: [WebhookEndpoint], head: Int64) -> String {
        "[" + endpoints.map { json($0, head: head) }.joined(separator: ",") + "]"
    }

    /// `webhooks list`: one aligned line per endpoint.
    public static func listLines(_ endpoints: [WebhookEndpoint], head: Int64) -> [String] {
        FailureOutput.table(["ID", "STATE", "URL", "FILTERS", "DELIVERY", "DELIVERED", "BACKLOG", "LAST ERROR"], endpoints.map { endpoint in
            let filters = (endpoint.events.sorted() + endpoint.storeIDs.sorted().map { "store " + $0 }).joined(separator: ",")
            let state = endpoint.enabled ? "enabled" : "disabled: " + FailureOutput.oneLine(endpoint.disabledReason ?? "")
            let error = endpoint.lastError.map { FailureOutput.oneLine($0) + " (" + StatusDocument.rfc3339(endpoint.lastErrorAt ?? 0) + ")" }
            return ["\(endpoint.id)", state, endpoint.url, filters.isEmpty ? "all" : filters, delivery(endpoint.options), "\(endpoint.cursor)",
                    "\(max(0, head - endpoint.cursor))", error ?? "-"]
        })
    }
}
