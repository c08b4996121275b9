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
    /// When it became a dead letter, Unix seconds.
    public var createdAt: Double
    /// When its job was first journaled, Unix seconds; nil for what never was a job (an event or a
    /// push that could not be read) and for dead letters kept before this was recorded.
    public var firstAttemptAt: Double?
    /// The version its job asked for, when it named one.
    public var version: Int64?

    enum CodingKeys: String, CodingKey {
        case id, kind, raw, reason, attempts, version
        case orderID = "order_id"
        case createdAt = "created_at"
        case firstAttemptAt = "first_attempt_at"
    }

    /// Creates a dead letter.
    public init(kind: String, orderID: String?, raw: String, reason: String, attempts: Int, createdAt: Double,
                firstAttemptAt: Double? = nil, version: Int64? = nil) {
        self.kind = kind
        self.orderID = orderID
        self.raw = raw
        self.reason = reason
        self.attempts = attempts
        self.createdAt = createdAt
        self.firstAttemptAt = firstAttemptAt
        self.version = version
    }
}
