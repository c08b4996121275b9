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
        translate(event, now: now, decoder: JSONDecoder())
    }

    /// Translates one event with a decoder the caller reuses across a batch.
    public static func translate(_ event: ServerSentEvent, now: Double, decoder: JSONDecoder) -> EventTranslation {
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
        // JSONDecoder (swift-foundation's parser) validates the whole text but materialises only the
        // fields the translator needs; the order's body is kept as the exact text received.
        let data = try? decoder.decode(EventData.self, from: Data(event.data.utf8))
        let orderID = data?.orderID?.text ?? data?.order?.object?.id?.text
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
        if type == "order.deleted" {
            guard let orderID = data.orderID?.text else { return malformed("order.deleted without a usable order_id") }
            return EventTranslation(
                jobs: [NewJob(kind: .delete, orderID: orderID, version: data.version?.integer, source: "stream")],
                deadLetter: nil, disposition: .jobs)
        }
        if let order = data.order {
            guard let fields = order.object else { return malformed("\(type): order is not an object") }
            guard let id = fields.id?.text else { return malformed("\(type): the order has no usable id") }
            guard let status = fields.status, !status.isEmpty else { return malformed("\(type): order \(id) has no status") }
            guard let body = JSONSpan.member("order", in: event.data) else {
                return malformed("\(type): the order's text could not be located")
            }
            let record = OrderRecord(
                id: id, status: status, storeID: fields.storeID?.text, courierID: fields.courierID?.text,
                version: fields.version?.integer, updatedAt: fields.updatedAt, body: String(body), appliedAt: now)
            return EventTranslation(
                jobs: [NewJob(kind: .upsert, orderID: record.id, order: record, source: "stream")],
                deadLetter: nil, disposition: .jobs)
        }
        guard let orderID = data.orderID?.text else {
            return malformed("\(type) has neither an order nor an order_id")
        }
        return EventTranslation(
            jobs: [NewJob(kind: .fetch, orderID: orderID, version: data.version?.integer, source: "stream")],
            deadLetter: nil, disposition: .jobs)
    }
}

/// The parts of an order event's data the translator reads (unknown fields are ignored).
struct EventData: Decodable {
    var order: OrderValue?
    var orderID: FlexibleValue?
    var version: FlexibleValue?

    enum CodingKeys: String, CodingKey {
        case order
        case orderID = "order_id"
        case version
    }
}

/// `order` when it is an object; any other JSON value decodes as "not an object".
struct OrderValue: Decodable {
    var object: OrderFields?

    init(from decoder: any Decoder) throws {
        object = try? OrderFields(from: decoder)
        if object == nil { _ = try decoder.singleValueContainer() }
    }
}

/// The indexed fields of an order.
struct OrderFields: Decodable {
    var id: FlexibleValue?
    var status: String?
    var version: FlexibleValue?
    var updatedAt: String?
    var storeID: FlexibleValue?
    var courierID: FlexibleValue?

    enum CodingKeys: String, CodingKey {
        case id, status, version
        case updatedAt = "updated_at"
        case storeID = "store_id"
        case courierID = "courier_id"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try? container.decodeIfPresent(FlexibleValue.self, forKey: .id)
        status = try? container.decodeIfPresent(String.self, forKey: .status)
        version = try? container.decodeIfPresent(FlexibleValue.self, forKey: .version)
        updatedAt = try? container.decodeIfPresent(String.self, forKey: .updatedAt)
        storeID = try? container.decodeIfPresent(FlexibleValue.self, forKey: .storeID)
        courierID = try? container.decodeIfPresent(FlexibleValue.self, forKey: .courierID)
    }
}

/// An id or version that may arrive as an integer, a string, or something else (then unusable).
struct FlexibleValue: Decodable {
    var text: String?
    var integer: Int64?

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            text = String(number)
            integer = number
        } else if let string = try? container.decode(String.self), !string.isEmpty {
            text = string
            integer = nil
        }
    }
}
