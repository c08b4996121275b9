/// What a sync job does (DESIGN §3/§8).
public enum JobKind: String, Sendable, Hashable, CaseIterable {
    /// Upsert the order carried in the job.
    case upsert
    /// Fetch one order (`GET orders/{id}`), then upsert it (404 → delete).
    case fetch
    /// Delete an order, keeping a tombstone.
    case delete
    /// Page through all orders, upsert them, then delete the local ones the backend no longer has.
    case fullSync = "full_sync"
}

/// A job to journal.
public struct NewJob: Sendable, Hashable {
    /// The kind.
    public var kind: JobKind
    /// The order it is about (none for a full sync).
    public var orderID: String?
    /// For a fetch: the lowest version worth applying; for a delete: the delete's version.
    public var version: Int64?
    /// For an upsert: the order record to apply.
    public var order: OrderRecord?
    /// Where it came from, for diagnostics: `stream` or `push`.
    public var source: String
    /// The trace of the work that journaled it (``StoredTraceContext``); nil when tracing is off.
    public var traceContext: String?

    /// Creates a job.
    public init(
        kind: JobKind, orderID: String? = nil, version: Int64? = nil, order: OrderRecord? = nil, source: String,
        traceContext: String? = nil
    ) {
        self.kind = kind
        self.orderID = orderID
        self.version = version
        self.order = order
        self.source = source
        self.traceContext = traceContext
    }
}

/// A journaled job.
public struct JobRecord: Sendable, Hashable {
    /// The journal position (applied in this order).
    public var id: Int64?
    /// The kind.
    public var kind: JobKind
    /// The order it is about.
    public var orderID: String?
    /// The version bound (see ``NewJob/version``).
    public var version: Int64?
    /// For an upsert, the order record as JSON.
    public var payload: String?
    /// Where it came from.
    public var source: String
    /// Failed attempts so far.
    public var attempts: Int
    /// Not before this Unix time (retry backoff).
    public var notBefore: Double
    /// The last failure, if any.
    public var lastError: String?
    /// When it was journaled, Unix seconds.
    public var createdAt: Double

    /// For an upsert: the order's indexed fields, so applying needs no JSON parsing (migration v2).
    public var status: String?
    /// The order's store.
    public var storeID: String?
    /// The order's courier.
    public var courierID: String?
    /// The order's `updated_at`.
    public var updatedAt: String?
    /// The trace of the work that journaled it (``StoredTraceContext``), which its apply joins.
    public var traceContext: String?

    /// Creates a job record.
    public init(
        id: Int64?, kind: JobKind, orderID: String?, version: Int64?, payload: String?, source: String, attempts: Int,
        notBefore: Double, lastError: String?, createdAt: Double, status: String? = nil, storeID: String? = nil,
        courierID: String? = nil, updatedAt: String? = nil, traceContext: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.orderID = orderID
        self.version = version
        self.payload = payload
        self.source = source
        self.attempts = attempts
        self.notBefore = notBefore
        self.lastError = lastError
        self.createdAt = createdAt
        self.status = status
        self.storeID = storeID
        self.courierID = courierID
        self.updatedAt = updatedAt
        self.traceContext = traceContext
    }

    /// Whether this job can be applied without the network: a delete, or an upsert whose order reads.
    public var isLocal: Bool {
        kind == .delete || (kind == .upsert && payload != nil && orderID != nil && status != nil)
    }

    /// The order an upsert job carries: its body (`payload`) and indexed fields, as journaled.
    public var order: OrderRecord? {
        guard kind == .upsert, let payload, let orderID, let status else { return nil }
        return OrderRecord(
            id: orderID, status: status, storeID: storeID, courierID: courierID, version: version,
            updatedAt: updatedAt, body: payload, appliedAt: createdAt)
    }
}
