/// Something that could not be understood or applied, kept with its raw text (DESIGN §3, §8).
public struct DeadLetterRecord: Codable, Sendable, Hashable {
    /// Its id.
    public var id: Int64?
    /// `event`, `push` or a job kind.
    public var kind: String
    /// The order it concerns, when known.
    public var orderID: String?
    /// The raw text as received.
    public var raw: String
    /// Why it is here.
    public var reason: String
    /// Attempts made.
    public var attempts: Int
    /// When, Unix seconds.
    public var createdAt: Double

    enum CodingKeys: String, CodingKey {
        case id, kind, raw, reason, attempts
        case orderID = "order_id"
        case createdAt = "created_at"
    }

    /// Creates a dead letter.
    public init(kind: String, orderID: String?, raw: String, reason: String, attempts: Int, createdAt: Double) {
        self.kind = kind
        self.orderID = orderID
        self.raw = raw
        self.reason = reason
        self.attempts = attempts
        self.createdAt = createdAt
    }
}
