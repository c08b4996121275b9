/// A deleted order: stops an older upsert from bringing it back.
public struct TombstoneRecord: Codable, Sendable, Hashable {
    /// The order id.
    public var id: String
    /// The version the delete carried, if any.
    public var version: Int64?
    /// The `updated_at` of the last known state, if any.
    public var updatedAt: String?
    /// When it was deleted locally, Unix seconds.
    public var deletedAt: Double

    /// Creates a tombstone (an engine reads one).
    public init(id: String, version: Int64?, updatedAt: String?, deletedAt: Double) {
        self.id = id
        self.version = version
        self.updatedAt = updatedAt
        self.deletedAt = deletedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, version
        case updatedAt = "updated_at"
        case deletedAt = "deleted_at"
    }

    /// The freshness of the delete.
    public var freshness: OrderFreshness { OrderFreshness(version: version, updatedAt: updatedAt) }
}
