// OrderSync: order events and silent pushes become sync jobs; the serial executor applies them.
// (This slice holds the pure translator; the executor and the stream service build on it.)

import Foundation
import OrderStore
import ServerSentEvents

/// What one stream event means for the store.
public struct EventTranslation: Sendable, Hashable {
    /// Why the event made the jobs it made.
    public enum Disposition: Sendable, Hashable {
        /// An order event or a resync: `jobs` says what to do.
        case jobs
        /// `ping`, `heartbeat`: it only proves the stream is alive.
        case heartbeat
        /// A type orderlive does not know: counted, logged at debug; the cursor still advances.
        case unknownType
        /// The data could not be understood: kept as a dead letter, with a fetch or full sync.
        case malformed
    }

    /// The jobs to journal (with the event's cursor, in one transaction).
    public var jobs: [NewJob]
    /// The raw event, when it could not be understood.
    public var deadLetter: DeadLetterRecord?
    /// Why.
    public var disposition: Disposition
}

/// DESIGN §3's table, exactly: event type and data → jobs. Pure; the caller journals the result.
public enum EventTranslator {
    /// Translates one event received at `now` (Unix seconds).
    public static func translate(_ event: ServerSentEvent, now: Double) -> EventTranslation {
        let type = event.type
        switch type {
        case "ping", "heartbeat":
            return EventTranslation(jobs: [], deadLetter: nil, disposition: .heartbeat)
        case "orders.resync":
            return EventTranslation(jobs: [NewJob(kind: .fullSync, source: "stream")], deadLetter: nil, disposition: .jobs)
        default:
            break
        }
        guard type.hasPrefix("order.") else {
            return EventTranslation(jobs: [], deadLetter: nil, disposition: .unknownType)
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any]
        let orderID = OrderRecord.identifier(object?["order_id"])
            ?? OrderRecord.identifier((object?["order"] as? [String: Any])?["id"])
        func malformed(_ reason: String) -> EventTranslation {
            // Never dropped: the raw text is kept, and the order (or everything) is fetched again.
            let letter = DeadLetterRecord(
                kind: "event", orderID: orderID, raw: "event: \(type)\nid: \(event.lastEventID)\ndata: \(event.data)",
                reason: reason, attempts: 0, createdAt: now)
            let repair = orderID.map { NewJob(kind: .fetch, orderID: $0, source: "stream") }
                ?? NewJob(kind: .fullSync, source: "stream")
            return EventTranslation(jobs: [repair], deadLetter: letter, disposition: .malformed)
        }
        guard let object else { return malformed("the data of \(type) is not a JSON object") }
        let version = version(object["version"])
        if type == "order.deleted" {
            guard let orderID = OrderRecord.identifier(object["order_id"]) else {
                return malformed("order.deleted without a usable order_id")
            }
            return EventTranslation(
                jobs: [NewJob(kind: .delete, orderID: orderID, version: version, source: "stream")],
                deadLetter: nil, disposition: .jobs)
        }
        if let order = object["order"] {
            guard let order = order as? [String: Any] else { return malformed("\(type): order is not an object") }
            do {
                // The exact text the backend sent is kept as the body (DESIGN §3: nothing is lost).
                let record = try OrderRecord.parse(order, rawText: JSONSpan.member("order", in: event.data), appliedAt: now)
                return EventTranslation(
                    jobs: [NewJob(kind: .upsert, orderID: record.id, order: record, source: "stream")],
                    deadLetter: nil, disposition: .jobs)
            } catch {
                return malformed("\(type): \(error.message)")
            }
        }
        guard let orderID = OrderRecord.identifier(object["order_id"]) else {
            return malformed("\(type) has neither an order nor an order_id")
        }
        return EventTranslation(
            jobs: [NewJob(kind: .fetch, orderID: orderID, version: version, source: "stream")],
            deadLetter: nil, disposition: .jobs)
    }

    static func version(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber, !(value is String) else { return nil }
        let double = number.doubleValue
        guard double == double.rounded(), abs(double) < 9e15 else { return nil }
        return Int64(double)
    }
}
