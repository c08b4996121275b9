// OrderSync: order events and silent pushes become sync jobs; the serial executor applies them.
// (This slice holds the pure translator; the executor and the stream service build on it.)

import JSONToolkit
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
    /// The members of an event's data that ``translate(_:now:)`` reads.
    private static let envelope: [String: JSONMemberShape] = [
        "order_id": .whole, "version": .whole, "order": .members(OrderRecord.decodedMembers),
    ]

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
        // The one JSON reader validates the whole text; the order's body is kept as the exact text
        // received, and read by the one order decoder (DESIGN §3). Only the members read below are
        // built (of the order, the decoder's); the rest is checked and skipped.
        var text = event.data
        let data = text.withUTF8 { JSONObjectText(buffer: $0, keepingTextOf: ["order"], building: envelope) }
        let orderID = data?.fields["order_id"]?.identifier ?? data?.fields["order"]?.object?["id"]?.identifier
        func malformed(_ reason: String) -> EventTranslation {
            // Never dropped: the raw text is kept, and the order (or everything) is fetched again.
            let letter = DeadLetterRecord(
                kind: "event", orderID: orderID, raw: "event: \(type)\nid: \(event.lastEventID)\ndata: \(event.data)",
                reason: reason, attempts: 0, createdAt: now)
            let repair = orderID.map { NewJob(kind: .fetch, orderID: $0, source: "stream") }
                ?? NewJob(kind: .fullSync, source: "stream")
            return EventTranslation(jobs: [repair], deadLetter: letter, disposition: .malformed)
        }
        guard let data else { return malformed("the data of \(type) is not a JSON object") }
        let version = data.fields["version"]?.integer
        if type == "order.deleted" {
            guard let orderID = data.fields["order_id"]?.identifier else {
                return malformed("order.deleted without a usable order_id")
            }
            return EventTranslation(
                jobs: [NewJob(kind: .delete, orderID: orderID, version: version, source: "stream")],
                deadLetter: nil, disposition: .jobs)
        }
        if let order = data.fields["order"] {
            guard let fields = order.object else { return malformed("\(type): order is not an object") }
            guard let text = data.texts["order"] else { return malformed("\(type): the order's text could not be located") }
            let record: OrderRecord
            do {
                record = try OrderRecord.decode(fields, text: text, appliedAt: now)
            } catch {
                return malformed("\(type): \(error.message)")
            }
            return EventTranslation(
                jobs: [NewJob(kind: .upsert, orderID: record.id, order: record, source: "stream")],
                deadLetter: nil, disposition: .jobs)
        }
        guard let orderID = data.fields["order_id"]?.identifier else {
            return malformed("\(type) has neither an order nor an order_id")
        }
        return EventTranslation(
            jobs: [NewJob(kind: .fetch, orderID: orderID, version: version, source: "stream")],
            deadLetter: nil, disposition: .jobs)
    }
}
