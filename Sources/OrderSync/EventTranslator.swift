import JSONToolkit
public import StoreModel
public import ServerSentEvents

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
        // The one JSON reader validates the whole text; the order's body is kept as the exact text
        // received, and read by the one order decoder (DESIGN §3).
        let data = EventData(event.data)
        let orderID = data?.orderID?.identifier ?? data?.order?.members?[0]?.identifier
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
        let version = data.version?.integer
        if type == "order.deleted" {
            guard let orderID = data.orderID?.identifier else {
                return malformed("order.deleted without a usable order_id")
            }
            return EventTranslation(
                jobs: [NewJob(kind: .delete, orderID: orderID, version: version, source: "stream")],
                deadLetter: nil, disposition: .jobs)
        }
        if let order = data.order {
            guard let members = order.members else { return malformed("\(type): order is not an object") }
            guard let text = data.orderText else { return malformed("\(type): the order's text could not be located") }
            let record: OrderRecord
            do {
                record = try OrderRecord.decode(members: members, text: text, appliedAt: now)
            } catch {
                return malformed("\(type): \(error.message)")
            }
            return EventTranslation(
                jobs: [NewJob(kind: .upsert, orderID: record.id, order: record, source: "stream")],
                deadLetter: nil, disposition: .jobs)
        }
        guard let orderID = data.orderID?.identifier else {
            return malformed("\(type) has neither an order nor an order_id")
        }
        return EventTranslation(
            jobs: [NewJob(kind: .fetch, orderID: orderID, version: version, source: "stream")],
            deadLetter: nil, disposition: .jobs)
    }
}

/// The members of an event's data the translator reads, in one pass over its bytes: `order_id`,
/// `version`, and of `order` only what the order decoder reads, with the order's exact text. Every
/// other member is checked and skipped, and keys are matched as bytes, so the reading accepts what
/// a whole read accepts without building what nobody reads (the translator was the largest part of
/// stream → SQLite once the statements were direct). A repeated member counts as its last
/// occurrence; the order's text is its first, as `JSONObjectText` keeps texts.
struct EventData {
    /// `order`, as far as it is read.
    enum Order {
        /// An object: the decoder's members, by position in `OrderRecord.decodedKeys`.
        case object([JSONValue?])
        /// Any other value.
        case other

        /// The decoder's members, when it is an object.
        var members: [JSONValue?]? {
            if case .object(let members) = self { members } else { nil }
        }
    }

    private static let keys = JSONKeys(["order_id", "version", "order"])

    /// `order_id`, when present.
    var orderID: JSONValue?
    /// `version`, when present.
    var version: JSONValue?
    /// `order`, when present.
    var order: Order?
    /// The exact text of `order`'s value, when present.
    var orderText: String?

    private init() {}

    /// Reads `data` as one JSON object with nothing but whitespace after it; nil when it is not.
    init?(_ data: String) {
        var data = data
        let read = data.withUTF8 { buffer -> EventData? in
            var reader = JSONReader(buffer)
            var result = EventData()
            do {
                guard reader.peek() == 0x7B else { return nil }
                try reader.object(Self.keys) { (reader, position) throws(JSONReader.Failure) in
                    reader.skipWhitespace()
                    switch position {
                    case 0?:
                        result.orderID = try reader.value(depth: 1)
                    case 1?:
                        result.version = try reader.value(depth: 1)
                    case 2?:
                        let start = reader.index
                        result.order = try reader.members(OrderRecord.decodedKeys, depth: 1).map(Order.object) ?? .other
                        if result.orderText == nil { result.orderText = reader.text(start..<reader.index) }
                    default:
                        try reader.skipValue(depth: 1)
                    }
                }
            } catch {
                return nil
            }
            reader.skipWhitespace()
            return reader.atEnd ? result : nil
        }
        guard let read else { return nil }
        self = read
    }
}
