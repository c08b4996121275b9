/// What applying an upsert did.
public enum UpsertOutcome: Sendable, Hashable {
    /// Inserted or replaced.
    case applied
    /// The stored order (or its tombstone) is as new or newer: nothing changed.
    case stale
}

/// What applying a delete did.
public enum DeleteOutcome: Sendable, Hashable {
    /// The order was removed and a tombstone kept.
    case deleted
    /// The stored order is newer than the delete: nothing changed.
    case stale
    /// There was no such order; the tombstone is kept so an older upsert cannot bring it back.
    case absent
}

/// Counts for `status`.
public struct StoreCounts: Sendable, Hashable {
    /// Stored orders.
    public var orders: Int
    /// Jobs in the journal.
    public var journalDepth: Int
    /// When the oldest journaled job was created, Unix seconds.
    public var oldestJobCreatedAt: Double?
    /// Dead letters.
    public var deadLetters: Int
    /// Orders whose lane waits for a retry: jobs whose `not_before` is after the time of the read
    /// (only a lane's first job ever waits, so this is one per lane).
    public var waitingLanes: Int
    /// When the oldest of those jobs was journaled, Unix seconds.
    public var oldestWaitingJobCreatedAt: Double?

    /// Creates counts (an engine reads them).
    public init(
        orders: Int, journalDepth: Int, oldestJobCreatedAt: Double?, deadLetters: Int, waitingLanes: Int = 0,
        oldestWaitingJobCreatedAt: Double? = nil
    ) {
        self.orders = orders
        self.journalDepth = journalDepth
        self.oldestJobCreatedAt = oldestJobCreatedAt
        self.deadLetters = deadLetters
        self.waitingLanes = waitingLanes
        self.oldestWaitingJobCreatedAt = oldestWaitingJobCreatedAt
    }
}
