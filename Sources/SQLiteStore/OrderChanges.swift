import GRDB
public import StoreModel

extension OrderChange {
    /// The columns ``init(row:)`` reads, from `order_change`. An upsert's change written by a full
    /// sync's page has no body of its own while the order's row still holds it (`body_change`):
    /// it is read from there.
    static let columns = """
        seq, order_id, kind, version,
        CASE WHEN body IS NULL AND kind = 'upserted' THEN (SELECT o.body FROM "order" o
            WHERE o.id = order_change.order_id AND o.body_change = order_change.seq) ELSE body END,
        at, status, store_id, courier_id, before_status, before_store_id, before_courier_id, trace_context
        """

    /// Decodes a row of ``columns``; a hand-edited row is an error, never a trap.
    init(row: Row) throws {
        let seq: Int64 = try row.decode(atIndex: 0)
        let kindText: String = try row.decode(atIndex: 2)
        guard let kind = Kind(rawValue: kindText) else {
            throw OrderParseError("change \(seq) has an unknown kind '\(kindText)'")
        }
        let status: String? = try row.decode(atIndex: 6)
        let beforeStatus: String? = try row.decode(atIndex: 9)
        self.init(
            seq: seq, orderID: try row.decode(atIndex: 1), kind: kind, version: try row.decode(atIndex: 3),
            body: try row.decode(atIndex: 4), at: try row.decode(atIndex: 5),
            after: try status.map { Fields(status: $0, storeID: try row.decode(atIndex: 7), courierID: try row.decode(atIndex: 8)) },
            before: try beforeStatus.map {
                Fields(status: $0, storeID: try row.decode(atIndex: 10), courierID: try row.decode(atIndex: 11))
            },
            traceContext: try row.decode(atIndex: 12))
    }
}

/// Appends the changes of one write transaction, numbering them from the log's head: one per
/// transaction, so a rolled-back transaction uses no numbers.
struct ChangeAppender {
    private var next: Int64?
    /// The last change appended, if any.
    private(set) var last: Int64?
    /// The transaction's per-order statements (shared by the copies a savepoint makes).
    let statements = TransactionStatements()
    /// The trace context the next changes carry: the job's being applied (nil for a full sync's page).
    var traceContext: String?

    static let insertSQL = """
        INSERT INTO order_change (seq, order_id, kind, version, body, at, status, store_id, courier_id,
                                  before_status, before_store_id, before_courier_id, trace_context)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// Records that `count` changes were inserted from `first` on, which must be ``nextSeq(in:)``.
    mutating func appended(_ count: Int, from first: Int64) throws {
        guard count > 0 else { return }
        let (end, overflow) = first.addingReportingOverflow(Int64(count))
        guard next == first, !overflow else { throw OrderParseError("the change log's numbering went wrong at seq \(first)") }
        last = end - 1
        next = end
    }

    /// The `seq` the next ``append`` gives its change.
    mutating func nextSeq(in db: Database) throws -> Int64 {
        if let next { return next }
        // The head is read back from the database: numbered without overflow.
        let (following, overflow) = try SQLiteOrderStore.changeHead(in: db).addingReportingOverflow(1)
        guard !overflow else { throw OrderParseError("the change log's sequence is exhausted") }
        next = following
        return following
    }

    /// Appends a change with the next `seq`. A nil `body` for an upsert means the order's row holds it
    /// (its `body_change` is this seq; see ``SQLiteOrderStore/materialize(_:of:in:statements:)``).
    mutating func append(
        _ kind: OrderChange.Kind, orderID: String, version: Int64?, body: String?, at now: Double,
        after: OrderChange.Fields?, before: OrderChange.Fields?, in db: Database
    ) throws {
        let seq = try nextSeq(in: db)
        try DirectStatement(.changeInsert, of: statements, in: db).execute { values in
            try Self.bind(seq, kind, orderID: orderID, version: version, body: body, at: now, after: after, before: before, to: &values)
            try values.bind(traceContext)
        }
        next = seq == .max ? nil : seq + 1
        last = seq
    }

    /// One change's values in ``insertSQL``'s order (a multi-row insert repeats them per row).
    static func bind(
        _ seq: Int64, _ kind: OrderChange.Kind, orderID: String, version: Int64?, body: String?, at now: Double,
        after: OrderChange.Fields?, before: OrderChange.Fields?, to values: inout Bindings
    ) throws {
        try values.bind(seq)
        try values.bind(orderID)
        try values.bind(kind.rawValue)
        try values.bind(version)
        try values.bind(body)
        try values.bind(now)
        try values.bind(after?.status)
        try values.bind(after?.storeID)
        try values.bind(after?.courierID)
        try values.bind(before?.status)
        try values.bind(before?.storeID)
        try values.bind(before?.courierID)
    }
}

/// The change log: numbering, reading for subscribers, pruning (DESIGN §11).
extension SQLiteOrderStore {
    /// Where a new store's sequence starts: a random multiple of 2^32 below 2^52, so that an id from
    /// another database is almost never inside this one's range (and every seq stays an exact
    /// number in JavaScript, below 2^53).
    static func randomBase() -> Int64 {
        Int64.random(in: 1...(1 << 20)) << 32
    }

    /// The last change's seq, or the log's floor when it has none.
    static func changeHead(in db: Database) throws -> Int64 {
        // Read directly: GRDB's `fetchOne` costs about 9,000 instructions, and every change asks.
        if let head = try DirectStatement("SELECT MAX(seq) FROM order_change", in: db).integer() { return head }
        return try changeFloor(in: db)
    }

    /// The seq at and below which no subscriber can resume (the store's start, or its last user switch).
    static func changeFloor(in db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT floor FROM change_log WHERE id = 1")) ?? 0
    }

    /// Writes with a change appender; tells ``changesCommitted`` the last change once it committed.
    func changeWrite<T: Sendable>(_ updates: @escaping @Sendable (Database, inout ChangeAppender) throws -> T) throws -> T {
        let (result, last) = try recordedWrite { db -> (T, Int64?) in
            var appender = ChangeAppender()
            let result = try updates(db, &appender)
            return (result, appender.last)
        }
        if let last { changesCommitted(last) }
        return result
    }

    /// The last change's seq (the floor when there is none yet).
    public func changeHead() throws -> Int64 {
        try writer.read { db in try Self.changeHead(in: db) }
    }

    /// The orders matching `filter`, and the change they are as of, in one read transaction.
    public func snapshot(matching filter: OrderFilter) throws -> OrderSnapshot {
        try writer.read { db in
            var request = OrderRecord.all()
            if !filter.statuses.isEmpty { request = request.filter(filter.statuses.sorted().contains(Column("status"))) }
            if !filter.storeIDs.isEmpty { request = request.filter(filter.storeIDs.sorted().contains(Column("store_id"))) }
            if !filter.courierIDs.isEmpty {
                request = request.filter(filter.courierIDs.sorted().contains(Column("courier_id")))
            }
            let orders = try request.order(sql: "length(id), id").fetchAll(db)
            return OrderSnapshot(seq: try Self.changeHead(in: db), orders: orders)
        }
    }

    /// Up to `limit` changes after `seq`, or why a subscriber at `seq` cannot resume. One read
    /// transaction, so pruning cannot open a gap between the check and the read.
    public func changes(after seq: Int64, limit: Int) throws -> ChangesAfter {
        try writer.read { db in
            let floor = try Self.changeFloor(in: db)
            let head = try Self.changeHead(in: db)
            if seq < floor { return .reset("the id is from before this store's data (another user or database)") }
            if seq > head { return .reset("the id is newer than this store's last change") }
            if seq == head { return .changes([]) }
            // seq < head here, so every order_change row is after the floor and oldest > seq is a gap.
            if let oldest = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MIN(seq) FROM order_change")), seq < oldest {
                let gap = oldest.subtractingReportingOverflow(seq)
                if gap.overflow || gap.partialValue > 1 { return .reset("the id is older than the kept history") }
            }
            let statement = try db.cachedStatement(
                sql: "SELECT \(OrderChange.columns) FROM order_change WHERE seq > ? ORDER BY seq LIMIT ?")
            let rows = try Row.fetchCursor(statement, arguments: [seq, max(1, limit)])
            var changes: [OrderChange] = []
            while let row = try rows.next() { changes.append(try OrderChange(row: row)) }
            return .changes(changes)
        }
    }

    /// Up to `limit` changes after `seq` as the log holds them now, whatever the floor (the fan-out
    /// hub's read: it checks that they follow on from what it has sent).
    public func appendedChanges(after seq: Int64, limit: Int) throws -> [OrderChange] {
        try writer.read { db in
            let statement = try db.cachedStatement(
                sql: "SELECT \(OrderChange.columns) FROM order_change WHERE seq > ? ORDER BY seq LIMIT ?")
            let rows = try Row.fetchCursor(statement, arguments: [seq, max(1, limit)])
            var changes: [OrderChange] = []
            while let row = try rows.next() { changes.append(try OrderChange(row: row)) }
            return changes
        }
    }

    /// Removes the oldest changes beyond the last `keeping`, at most `batch` at a time (so one
    /// call never holds the write lock long). Returns how many went; call again while it is `batch`.
    @discardableResult
    public func pruneChanges(keeping: Int, batch: Int = 10_000) async throws -> Int {
        try await recordedWrite { db in
            guard let oldest = try Int64.fetchOne(db, sql: "SELECT MIN(seq) FROM order_change") else { return 0 }
            let head = try Self.changeHead(in: db)
            guard var end = ChangeLogRules.pruneEnd(oldest: oldest, head: head, keeping: keeping, batch: batch) else {
                return 0
            }
            // What an enabled webhook endpoint has not handled yet stays: the change log is its outbox.
            if let owed = try Int64.fetchOne(db, sql: "SELECT MIN(cursor) FROM webhook_endpoint WHERE enabled = 1") {
                end = min(end, owed.addingReportingOverflow(1).overflow ? end : owed + 1)
                if end <= oldest { return 0 }
            }
            try db.execute(sql: "DELETE FROM order_change WHERE seq < ?", arguments: [end])
            return db.changesCount
        }
    }

    /// How many changes the log keeps now.
    public func changeCount() throws -> Int {
        try writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM order_change") ?? 0 }
    }
}
