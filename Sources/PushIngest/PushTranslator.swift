import CheckedInput
import Foundation
import OrderStore

/// DESIGN §4 "Which notifications become jobs": pushes are hints (FIELD-NOTES 18), so an order push
/// schedules a fetch unless it carries the whole order; `orders.resync` schedules a full sync;
/// anything else is accepted and counted, and makes no job.
public enum PushTranslator {
    /// The jobs one notification makes (empty for a notification about something else).
    public static func jobs(for notification: GorushNotification, now: Double) -> [NewJob] {
        guard let data = notification.data else { return [] }
        let type: String? = if case .string(let value)? = data["type"] { value } else { nil }
        if type == "orders.resync" { return [NewJob(kind: .fullSync, source: "push")] }
        let orderID = identifier(data["order_id"])
        guard type?.hasPrefix("order.") == true || orderID != nil else { return [] }
        if let order = fullOrder(data["order"], text: notification.orderText, now: now) {
            return [NewJob(kind: .upsert, orderID: order.id, order: order, source: "push")]
        }
        let id = orderID ?? orderIDInside(data["order"])
        guard let id else { return [NewJob(kind: .fullSync, source: "push")] }
        return [NewJob(kind: .fetch, orderID: id, version: version(data["version"]), source: "push")]
    }

    /// `data.order` as an object (stored as the exact text received), or as a JSON string (FCM
    /// delivers data values as strings). Nil unless it has a usable `id` and `status` (DESIGN §3).
    static func fullOrder(_ value: JSONValue?, text: String?, now: Double) -> OrderRecord? {
        let fields: [String: JSONValue]
        let body: String
        switch value {
        case .object(let object)?:
            guard let text else { return nil }
            (fields, body) = (object, text)
        case .string(let string)?:
            guard case .object(let object)? = JSONReader.parse(Array(string.utf8)) else { return nil }
            (fields, body) = (object, string.trimmingCharacters(in: .whitespacesAndNewlines))
        default:
            return nil
        }
        guard let id = identifier(fields["id"]), case .string(let status)? = fields["status"], !status.isEmpty
        else { return nil }
        var version: Int64?
        switch fields["version"] {
        case .number(let number)?:
            // An out-of-range version makes this no usable whole order: the push becomes a fetch.
            guard let checked = Checked.jsonInteger(number) else { return nil }
            version = checked
        default:
            break
        }
        let updatedAt: String? = if case .string(let value)? = fields["updated_at"] { value } else { nil }
        return OrderRecord(
            id: id, status: status, storeID: identifier(fields["store_id"]), courierID: identifier(fields["courier_id"]),
            version: version, updatedAt: updatedAt, body: body, appliedAt: now)
    }

    private static func orderIDInside(_ value: JSONValue?) -> String? {
        if case .object(let fields)? = value { return identifier(fields["id"]) }
        return nil
    }

    /// An id as a number or a (numeric or not) string; compared as a string.
    static func identifier(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let string)? where !string.isEmpty: return string
        case .number(let number)?: return Checked.jsonInteger(number).map { String($0) }
        default: return nil
        }
    }

    static func version(_ value: JSONValue?) -> Int64? {
        switch value {
        case .number(let number)?: return Checked.jsonInteger(number)
        case .string(let string)?: return Checked.int64(decimal: string)
        default: return nil
        }
    }
}
