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
        if let order = fullOrder(data["order"], now: now) {
            return [NewJob(kind: .upsert, orderID: order.id, order: order, source: "push")]
        }
        let id = orderID ?? orderIDInside(data["order"])
        guard let id else { return [NewJob(kind: .fullSync, source: "push")] }
        return [NewJob(kind: .fetch, orderID: id, version: version(data["version"]), source: "push")]
    }

    /// `data.order` as an object, or as a JSON string (FCM delivers data values as strings).
    static func fullOrder(_ value: JSONValue?, now: Double) -> OrderRecord? {
        let object: [String: Any]?
        let text: String?
        switch value {
        case .object?:
            guard let encoded = encode(value) else { return nil }
            text = encoded
            object = (try? JSONSerialization.jsonObject(with: Data(encoded.utf8))) as? [String: Any]
        case .string(let string)?:
            text = string
            object = (try? JSONSerialization.jsonObject(with: Data(string.utf8))) as? [String: Any]
        default:
            return nil
        }
        guard let object, let text else { return nil }
        return try? OrderRecord.parse(object, rawText: text[...], appliedAt: now)
    }

    private static func orderIDInside(_ value: JSONValue?) -> String? {
        if case .object(let fields)? = value { return identifier(fields["id"]) }
        return nil
    }

    /// An id as a number or a (numeric or not) string; compared as a string.
    static func identifier(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let string)? where !string.isEmpty: return string
        case .number(let number)? where number == number.rounded() && abs(number) < 1e15: return String(Int64(number))
        default: return nil
        }
    }

    static func version(_ value: JSONValue?) -> Int64? {
        switch value {
        case .number(let number)? where number == number.rounded() && abs(number) < 9e15: return Int64(number)
        case .string(let string)?: return Int64(string)
        default: return nil
        }
    }

    /// Re-encodes a decoded value (sorted keys) for storage when the order came as an object.
    private static func encode(_ value: JSONValue?) -> String? {
        func plain(_ value: JSONValue) -> Any {
            switch value {
            case .null: return NSNull()
            case .bool(let bool): return bool
            case .number(let number): return number == number.rounded() && abs(number) < 9e15 ? Int64(number) as Any : number
            case .string(let string): return string
            case .array(let array): return array.map(plain)
            case .object(let object): return object.mapValues(plain)
            }
        }
        guard let value, let data = try? JSONSerialization.data(withJSONObject: plain(value), options: [.sortedKeys])
        else { return nil }
        return String(data: data, encoding: .utf8)
    }
}
