import JSONToolkit
public import StoreModel

/// What an endpoint is sent for one change (DESIGN §13): the change feed's event type and JSON, with the
/// type inside, or nil when the endpoint's filters do not take it.
public enum WebhookPayload {
    /// The event type and body for `change` at `endpoint`, or nil when its filters skip it. A store
    /// filter works as the change feed's views do: an order that leaves the filtered stores is
    /// `order.removed` for it, and a deletion reaches it only when the order was in them.
    public static func event(for change: OrderChange, to endpoint: WebhookEndpoint) -> (type: String, body: String)? {
        let filter = OrderFilter(storeIDs: endpoint.storeIDs)
        let wasIn = change.before.map(filter.matches) ?? false
        let type: String
        switch change.kind {
        case .upserted:
            if change.after.map(filter.matches) ?? false {
                type = "order.upserted"
            } else if wasIn {
                type = "order.removed"
            } else {
                return nil
            }
        case .deleted:
            guard wasIn || filter.acceptsAll else { return nil }
            type = "order.deleted"
        }
        guard endpoint.events.isEmpty || endpoint.events.contains(type) else { return nil }
        let head = #"{"type":\#(JSONText.string(type)),"seq":\#(change.seq)"#
        switch type {
        case "order.upserted":
            return (type, head + #","order":"# + (change.body ?? "null") + "}")
        case "order.removed":
            return (type, head + #","order_id":\#(JSONText.string(change.orderID))}"#)
        default:
            let version = change.version.map { String($0) } ?? "null"
            return (type, head + #","order_id":\#(JSONText.string(change.orderID)),"version":\#(version)}"#)
        }
    }

    /// The `webhook-id` of a change for an endpoint: the same on every attempt, different per endpoint.
    public static func messageID(endpoint: Int64, seq: Int64) -> String { "msg_\(endpoint)_\(seq)" }

    /// The `webhook-id` of a batch of changes `first` through `last` (in change-log order) for an
    /// endpoint: the same on every attempt of that batch.
    public static func batchID(endpoint: Int64, first: Int64, last: Int64) -> String { "msg_\(endpoint)_\(first)-\(last)" }
}
