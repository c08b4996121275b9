import ServerSentEvents
/// The Sandbox's live feed: event `n` is a pure function of `n`, so a client resuming with
/// `Last-Event-ID: n` gets exactly the events after `n`.
public struct OrderFeed: Sendable {
    /// The order lifecycle the feed walks each order through.
    public static let statuses = ["created", "assigned", "picked_up", "delivering", "delivered"]

    /// How many distinct orders the feed cycles through.
    public let orderCount: Int

    /// Creates a feed.
    public init(orderCount: Int) {
        self.orderCount = max(1, orderCount)
    }

    /// The order id event `sequence` is about (1-based).
    public func orderID(sequence: Int) -> Int {
        (sequence - 1) % orderCount + 1
    }

    /// The order's version after event `sequence`.
    public func version(sequence: Int) -> Int {
        (sequence - 1) / orderCount + 1
    }

    /// The event's type: `order.created` for an order's first event, then `order.status_changed`.
    public func type(sequence: Int) -> String {
        version(sequence: sequence) % Self.statuses.count == 1 ? "order.created" : "order.status_changed"
    }

    /// The order object after event `sequence`, as JSON.
    public func orderJSON(sequence: Int) -> String {
        let id = orderID(sequence: sequence)
        let version = version(sequence: sequence)
        let status = Self.statuses[(version - 1) % Self.statuses.count]
        let storeID = (id - 1) % 3 + 1
        let courierID = status == "created" ? "null" : String(100 + id % 7)
        // Seconds after 2026-11-21T00:00:00Z, so the timestamp grows with the sequence.
        let updatedAt = Self.timestamp(secondsAfterBase: sequence)
        return #"{"id":\#(id),"store_id":\#(storeID),"courier_id":\#(courierID),"status":"\#(status)","#
            + #""version":\#(version),"updated_at":"\#(updatedAt)","total_cents":\#(1_000 + id * 137),"#
            + #""customer":"Customer \#(id)"}"#
    }

    /// Event `sequence` as wire text: `id`, `event` and one `data` line, then a blank line.
    public func wireEvent(sequence: Int) -> String {
        ServerSentEventWriter.event(type(sequence: sequence), id: String(sequence), data: #"{"order":"# + orderJSON(sequence: sequence) + "}")
    }

    /// Whole live-feed events filling about 64 KiB; the firehose route repeats it.
    public static let firehoseBlock: [UInt8] = {
        let feed = OrderFeed(orderCount: 12)
        var bytes: [UInt8] = []
        var sequence = 1
        while bytes.count < 64 * 1024 - 512 {
            bytes += Array(feed.wireEvent(sequence: sequence).utf8)
            sequence += 1
        }
        return bytes
    }()

    /// How many events ``firehoseBlock`` holds.
    public static let firehoseEventsPerBlock: Int = {
        var count = 0
        var previous: UInt8 = 0
        for byte in firehoseBlock {
            if byte == 0x0A, previous == 0x0A { count += 1 }
            previous = byte
        }
        return count
    }()

    static func timestamp(secondsAfterBase seconds: Int) -> String {
        let day = seconds / 86_400
        let second = seconds % 86_400
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        // Day 0 is 2026-11-21; the feed stays within a few days, so months roll over by hand.
        var dayOfMonth = 21 + day
        var month = 11
        var year = 2026
        while dayOfMonth > (month == 11 ? 30 : 31) {
            dayOfMonth -= month == 11 ? 30 : 31
            month += 1
            if month == 13 {
                month = 1
                year += 1
            }
        }
        return "\(year)-\(two(month))-\(two(dayOfMonth))T\(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60))Z"
    }
}
