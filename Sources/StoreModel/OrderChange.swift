/// One applied change to the order table, as the change log keeps it (DESIGN §11).
public struct OrderChange: Sendable, Hashable {
    /// What happened to the order.
    public enum Kind: String, Sendable, Hashable {
        /// Inserted or replaced by a newer version.
        case upserted
        /// Removed (a tombstone is kept).
        case deleted
    }

    /// The fields the API's filters look at.
    public struct Fields: Sendable, Hashable {
        /// The status.
        public var status: String
        /// The store, if any.
        public var storeID: String?
        /// The courier, if any.
        public var courierID: String?

        /// Creates the fields.
        public init(status: String, storeID: String?, courierID: String?) {
            self.status = status
            self.storeID = storeID
            self.courierID = courierID
        }

        /// The fields `order` has.
        public init(of order: OrderRecord) {
            self.init(status: order.status, storeID: order.storeID, courierID: order.courierID)
        }
    }

    /// The change's position in this store's sequence: consecutive, never reused.
    public var seq: Int64
    /// The order.
    public var orderID: String
    /// What happened.
    public var kind: Kind
    /// The order's version after an upsert, or the version the delete carried.
    public var version: Int64?
    /// The order exactly as the backend sent it (upserts), nil for a delete.
    public var body: String?
    /// When it was applied, Unix seconds.
    public var at: Double
    /// The filter fields after the change (nil for a delete).
    public var after: Fields?
    /// The filter fields before the change (nil when the order was not stored).
    public var before: Fields?
    /// The trace of the push or event whose job made the change (``StoredTraceContext``), which its
    /// webhook attempts continue; nil for a full sync's change, or with tracing off.
    public var traceContext: String?

    /// Creates a change.
    public init(seq: Int64, orderID: String, kind: Kind, version: Int64?, body: String?, at: Double,
                after: Fields?, before: Fields?, traceContext: String? = nil) {
        self.seq = seq
        self.orderID = orderID
        self.kind = kind
        self.version = version
        self.body = body
        self.at = at
        self.after = after
        self.before = before
        self.traceContext = traceContext
    }
}

/// The orders matching a filter as of one change.
public struct OrderSnapshot: Sendable {
    /// The last change the orders include.
    public var seq: Int64
    /// The matching orders, sorted by id (numeric ids numerically).
    public var orders: [OrderRecord]

    /// Creates a snapshot (an engine reads one).
    public init(seq: Int64, orders: [OrderRecord]) {
        self.seq = seq
        self.orders = orders
    }
}

/// What a subscriber resuming after a change gets.
public enum ChangesAfter: Sendable {
    /// The changes after it, in order (at most the limit asked; empty when it is up to date).
    case changes([OrderChange])
    /// It cannot resume: the id is older than the kept history, newer than the last change, or from
    /// another store (a new database or a user switch). Carries why.
    case reset(String)
}

/// The change log's rules that do not depend on the engine: how far a prune may go. Both engines
/// read the numbers and call it, so they cannot drift apart.
public enum ChangeLogRules {
    /// The seq below which changes are removed to keep the last `keeping` (at most `batch` of them
    /// from `oldest`), or nil when nothing is to go. Overflow-checked: the numbers are read back
    /// from the database.
    public static func pruneEnd(oldest: Int64, head: Int64, keeping: Int, batch: Int) -> Int64? {
        let keep = Int64(max(1, keeping))
        let (byBatch, batchOverflow) = oldest.addingReportingOverflow(Int64(max(1, batch)))
        let (byHistory, historyOverflow) = head.subtractingReportingOverflow(keep - 1)
        guard !historyOverflow else { return nil }
        let end = batchOverflow ? byHistory : min(byBatch, byHistory)
        return end > oldest ? end : nil
    }
}
