import JSONToolkit
public import StoreModel

/// DESIGN §4 "Which notifications become jobs": pushes are hints (FIELD-NOTES 18), so an order push
/// schedules a fetch unless it carries the whole order; `orders.resync` schedules a full sync;
/// anything else is accepted and counted, and makes no job.
public enum PushTranslator {
    /// The jobs one notification makes (empty for a notification about something else).
    public static func jobs(for notification: GorushNotification, now: Double) -> [NewJob] {
        guard let data = notification.data else { return [] }
        if data.type == "orders.resync" { return [NewJob(kind: .fullSync, source: "push")] }
        guard data.type?.hasPrefix("order.") == true || data.orderID != nil else { return [] }
        if let order = fullOrder(data.order, now: now) {
            return [NewJob(kind: .upsert, orderID: order.id, order: order, source: "push")]
        }
        var id = data.orderID
        if id == nil, case .object(let members, _)? = data.order { id = members.first??.identifier }
        guard let id else { return [NewJob(kind: .fullSync, source: "push")] }
        return [NewJob(kind: .fetch, orderID: id, version: data.version, source: "push")]
    }

    /// `data.order` as an object (stored as the exact text received), or as a JSON string (FCM
    /// delivers data values as strings). Nil unless the one order decoder accepts it (DESIGN §3).
    static func fullOrder(_ order: PushData.Order?, now: Double) -> OrderRecord? {
        switch order {
        case .object(let members, let text)?:
            // An order the decoder refuses (no id or status, a version out of range) is no usable
            // whole order: the push becomes a fetch.
            return try? OrderRecord.decode(members: members, text: text, appliedAt: now)
        case .text(let string)?:
            return try? OrderRecord.decode(text: string, appliedAt: now)
        case .other?, nil:
            return nil
        }
    }
}
