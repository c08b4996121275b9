import GRDB
import StoreModel

/// Applying journaled jobs: the serial executor's side of the journal (DESIGN §4, §8).
extension OrderStore {
    /// Applies an upsert and completes its job in one transaction (exactly once in effect).
    @discardableResult
    public func applyUpsert(_ order: OrderRecord, completing jobID: Int64? = nil) throws -> UpsertOutcome {
        let now = self.now()
        return try changeWrite { db, changes in
            try Self.complete(jobID, in: db)
            return try Self.upsert(order, at: now, in: db, changes: &changes)
        }
    }

    /// Applies a delete and completes its job in one transaction.
    @discardableResult
    public func applyDelete(orderID: String, version: Int64?, completing jobID: Int64? = nil) throws -> DeleteOutcome {
        let now = self.now()
        return try changeWrite { db, changes in
            try Self.complete(jobID, in: db)
            return try Self.delete(orderID: orderID, version: version, at: now, in: db, changes: &changes)
        }
    }

    private static let headJobsSQL = "SELECT id, kind, order_id, version, payload, source, attempts, not_before, "
        + "last_error, created_at, status, store_id, courier_id, updated_at FROM job ORDER BY id LIMIT ?"

    /// Up to `limit` jobs from the head of the journal, in order.
    public func headJobs(limit: Int) throws -> [JobRecord] {
        // A cached raw statement: the executor asks after every commit, and compiling the query
        // interface's SQL each time showed in the push-ingest profile.
        try writer.read { db in
            let statement = try db.cachedStatement(sql: Self.headJobsSQL)
            return try JobRecord.fetchAll(statement, arguments: [limit])
        }
    }

    /// Applies consecutive upsert and delete jobs in one transaction, completing each: the same
    /// effect, in the same order, as applying them one by one. Returns how many were applied.
    @discardableResult
    public func applyInOneTransaction(_ jobs: [JobRecord]) throws -> Int {
        let now = self.now()
        return try changeWrite { db, changes in
            var applied: [Int64] = []
            for job in jobs {
                switch job.kind {
                case .upsert:
                    guard let order = job.order else { continue }
                    _ = try Self.upsert(order, at: now, in: db, changes: &changes)
                case .delete:
                    guard let id = job.orderID else { continue }
                    _ = try Self.delete(orderID: id, version: job.version, at: now, in: db, changes: &changes)
                case .fetch, .fullSync:
                    continue
                }
                if let id = job.id { applied.append(id) }
            }
            // The applied jobs are usually one contiguous run of ids: one range delete instead of one
            // statement per job. Otherwise they are deleted one by one.
            if let first = applied.first, let last = applied.last, Int(last - first) + 1 == applied.count,
               applied == Array(first...last) {
                try db.cachedStatement(sql: "DELETE FROM job WHERE id BETWEEN ? AND ?").execute(arguments: [first, last])
                // Every one of them was still journaled, or none is applied (see JobsGone).
                guard db.changesCount == applied.count else { throw JobsGone() }
            } else {
                for id in applied { try Self.complete(id, in: db) }
            }
            return applied.count
        }
    }

    /// Upserts one page of a full sync in one transaction (each order by the usual freshness rule).
    /// What the store holds of the page's orders and tombstones is read in one query each, not two
    /// lookups per order (a cold start of 100,000 orders spent a third of its apply time in them).
    public func applyPage(_ orders: [OrderRecord], for jobID: Int64? = nil) throws {
        let now = self.now()
        try changeWrite { db, changes in
            if let jobID, try Int.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM job WHERE id = ?"), arguments: [jobID]) == nil {
                throw JobsGone()
            }
            var known = try PageLookup(ids: orders.map(\.id), in: db)
            for order in orders { _ = try Self.upsert(order, at: now, in: db, changes: &changes, known: &known) }
        }
    }

    /// Ends a full sync whose every page succeeded: local orders the backend no longer returned are
    /// deleted (with tombstones), and the job completes, in one transaction. Returns how many went.
    @discardableResult
    public func completeFullSync(keeping ids: Set<String>, completing jobID: Int64?) throws -> Int {
        let now = self.now()
        return try changeWrite { db, changes in
            // Only ids and versions are read (not every order's body, decoded), and the rows to go
            // are collected before any is deleted, so the cursor never walks a table being changed.
            var gone: [(id: String, version: Int64?)] = []
            let rows = try Row.fetchCursor(db.cachedStatement(sql: #"SELECT id, version FROM "order""#))
            while let row = try rows.next() {
                let id: String = try row.decode(atIndex: 0)
                if !ids.contains(id) { gone.append((id, try row.decode(atIndex: 1))) }
            }
            for order in gone {
                _ = try Self.delete(orderID: order.id, version: order.version, at: now, in: db, changes: &changes)
            }
            try Self.complete(jobID, in: db)
            return gone.count
        }
    }

    /// Records a failed attempt; the job stays in place and waits until `retryAt`. With
    /// `countsAttempt` false (the job could not run for a reason outside it, such as no session) the
    /// attempt is not counted towards `sync.max_attempts`.
    public func recordFailure(jobID: Int64, reason: String, retryAt: Double, countsAttempt: Bool = true) throws {
        try recordedWrite { db in
            try db.execute(
                sql: "UPDATE job SET attempts = attempts + ?, last_error = ?, not_before = ? WHERE id = ?",
                arguments: [countsAttempt ? 1 : 0, reason, retryAt, jobID])
        }
    }

    /// Moves a job that keeps failing to the dead letters, in one transaction.
    public func deadLetter(job: JobRecord, reason: String) throws {
        let now = self.now()
        try recordedWrite { db in
            var letter = DeadLetterRecord(
                kind: job.kind.rawValue, orderID: job.orderID, raw: job.payload ?? "", reason: reason,
                attempts: job.attempts, createdAt: now, firstAttemptAt: job.createdAt, version: job.version)
            try Self.complete(job.id, in: db)
            try letter.insert(db)
        }
    }

    /// DESIGN §8: apply only if newer; a tombstone stops an older upsert from resurrecting an order.
    /// An applied upsert is appended to the change log with the order's filter fields before and after.
    static func upsert(
        _ incoming: OrderRecord, at now: Double, in db: Database, changes: inout ChangeAppender
    ) throws -> UpsertOutcome {
        var known = PageLookup()
        return try upsert(incoming, at: now, in: db, changes: &changes, known: &known)
    }

    /// The upsert, with what the store holds of the order already read when `known` covers it (a
    /// page's lookup); `known` is kept true as the page is applied.
    static func upsert(
        _ incoming: OrderRecord, at now: Double, in db: Database, changes: inout ChangeAppender, known: inout PageLookup
    ) throws -> UpsertOutcome {
        var order = incoming
        order.appliedAt = now
        let (current, tombstone) = try known.state(of: order.id, in: db, statements: changes.statements)
        var before: OrderChange.Fields?
        if let current {
            if !order.freshness.isNewer(than: current.freshness) { return .stale }
            before = current.fields
        } else if let tombstone {
            guard order.freshness.isNewer(than: tombstone) else { return .stale }
            try db.cachedStatement(sql: "DELETE FROM tombstone WHERE id = ?").execute(arguments: [order.id])
            known.unburied(order.id)
        }
        let after = OrderChange.Fields(status: order.status, storeID: order.storeID, courierID: order.courierID)
        known.holds(order.id, (order.freshness, after))
        try DirectStatement(.upsert, of: changes.statements, in: db).execute { values in
            try values.bind(order.id)
            try values.bind(order.status)
            try values.bind(order.storeID)
            try values.bind(order.courierID)
            try values.bind(order.version)
            try values.bind(order.updatedAt)
            try values.bind(order.body)
            try values.bind(order.appliedAt)
        }
        try changes.append(
            .upserted, orderID: order.id, version: order.version, body: order.body, at: now,
            after: after, before: before, in: db)
        return .applied
    }

    static let upsertSQL = """
        INSERT INTO "order" (id, status, store_id, courier_id, version, updated_at, body, applied_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(id) DO UPDATE SET status = excluded.status, store_id = excluded.store_id,
            courier_id = excluded.courier_id, version = excluded.version, updated_at = excluded.updated_at,
            body = excluded.body, applied_at = excluded.applied_at
        """

    private static let insertJobSQL = """
        INSERT INTO job (kind, order_id, version, payload, source, attempts, not_before, last_error,
                         created_at, status, store_id, courier_id, updated_at)
        VALUES (?, ?, ?, ?, ?, 0, 0, NULL, ?, ?, ?, ?, ?)
        """

    /// Journals one job inside a transaction. Pending fetches of one order collapse into one (its
    /// version bound raised); a full sync makes the pending fetches before it redundant. Returns
    /// false when the job collapsed into a pending one.
    static func insert(_ job: NewJob, at now: Double, in db: Database) throws -> Bool {
        if job.kind == .fetch, let orderID = job.orderID,
           var pending = try JobRecord.filter(Column("kind") == JobKind.fetch.rawValue
                && Column("order_id") == orderID && Column("attempts") == 0).fetchOne(db) {
            if let version = job.version { pending.version = max(pending.version ?? version, version) }
            try pending.update(db)
            return false
        }
        if job.kind == .fullSync {
            try JobRecord.filter(Column("kind") == JobKind.fetch.rawValue && Column("attempts") == 0).deleteAll(db)
        }
        let order = job.order
        try DirectStatement(insertJobSQL, in: db).execute { values in
            try values.bind(job.kind.rawValue)
            try values.bind(job.orderID ?? order?.id)
            try values.bind(order?.version ?? job.version)
            try values.bind(order?.body)
            try values.bind(job.source)
            try values.bind(now)
            try values.bind(order?.status)
            try values.bind(order?.storeID)
            try values.bind(order?.courierID)
            try values.bind(order?.updatedAt)
        }
        return true
    }

    /// Completes (deletes) the job an apply was for, in the apply's transaction; throws ``JobsGone``
    /// when it is no longer journaled, which rolls the whole apply back.
    static func complete(_ jobID: Int64?, in db: Database) throws {
        guard let jobID else { return }
        try deleteJob(jobID, in: db)
        guard db.changesCount == 1 else { throw JobsGone() }
    }

    static func deleteJob(_ id: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM job WHERE id = ?").execute(arguments: [id])
    }

    /// A delete that removed an order is appended to the change log with the order's last filter fields.
    static func delete(
        orderID: String, version: Int64?, at now: Double, in db: Database, changes: inout ChangeAppender
    ) throws -> DeleteOutcome {
        let incoming = OrderFreshness(version: version, updatedAt: nil)
        let current = try OrderRecord.fetchOne(db, key: orderID)
        if let current, let version, let currentVersion = current.version, version < currentVersion {
            return .stale
        }
        var tombstone = TombstoneRecord(
            id: orderID, version: version ?? current?.version, updatedAt: current?.updatedAt, deletedAt: now)
        if let existing = try TombstoneRecord.fetchOne(db, key: orderID), !incoming.isNewer(than: existing.freshness),
           existing.version != nil {
            tombstone = existing
        }
        try tombstone.save(db)
        guard let current else { return .absent }
        _ = try OrderRecord.deleteOne(db, key: orderID)
        try changes.append(
            .deleted, orderID: orderID, version: version ?? current.version, body: nil, at: now, after: nil,
            before: OrderChange.Fields(status: current.status, storeID: current.storeID, courierID: current.courierID),
            in: db)
        return .deleted
    }
}

/// What the store holds of a set of orders (their freshness and filter fields) and of their
/// tombstones, read in one query each; an id outside the set is looked up on its own.
struct PageLookup {
    typealias Current = (freshness: OrderFreshness, fields: OrderChange.Fields)

    /// The ids read in bulk: absent from `orders` (or `tombstones`) means none.
    private var covered: Set<String> = []
    private var orders: [String: Current] = [:]
    private var tombstones: [String: OrderFreshness] = [:]

    /// Covers nothing: every id is looked up when asked for.
    init() {}

    /// Reads the orders and tombstones of `ids`, at most 500 per statement (SQLite's bound on
    /// parameters is far above; 500 keeps the statement cache to a few shapes).
    init(ids: [String], in db: Database) throws {
        covered = Set(ids)
        let unique = Array(covered)
        var start = 0
        while start < unique.count {
            let chunk = Array(unique[start..<min(start + 500, unique.count)])
            start += chunk.count
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            let arguments = StatementArguments(chunk)
            let rows = try Row.fetchCursor(db.cachedStatement(
                sql: #"SELECT id, version, updated_at, status, store_id, courier_id FROM "order" WHERE id IN ("# + marks + ")"),
                arguments: arguments)
            while let row = try rows.next() { orders[try row.decode(atIndex: 0)] = try Self.current(row, from: 1) }
            let buried = try Row.fetchCursor(db.cachedStatement(
                sql: "SELECT id, version, updated_at FROM tombstone WHERE id IN (" + marks + ")"), arguments: arguments)
            while let row = try buried.next() { tombstones[try row.decode(atIndex: 0)] = try Self.freshness(row, from: 1) }
        }
    }

    /// The order's current row and tombstone (a tombstone only matters when there is no row).
    mutating func state(
        of id: String, in db: Database, statements: TransactionStatements
    ) throws -> (current: Current?, tombstone: OrderFreshness?) {
        if covered.contains(id) { return (orders[id], orders[id] == nil ? tombstones[id] : nil) }
        // Hot path of single upserts, bound and read directly (a GRDB `Row` per lookup showed in the
        // stream → SQLite profile): the row by its key, and only when there is none, the tombstone.
        // One statement joining both to a one-row subquery cost about 3,600 instructions more per
        // stored order (a third of the lookup), much of it closing the subquery's cursor at every reset;
        // a new order now pays for two lookups, about 600 more than the join.
        let current = try DirectStatement(.orderRow, of: statements, in: db).first({ try $0.bind(id) }, read: { columns in
            (OrderFreshness(version: try columns.integer(0), updatedAt: try columns.text(1)),
             OrderChange.Fields(status: try columns.requiredText(2), storeID: try columns.text(3), courierID: try columns.text(4)))
        })
        if let current { return (current, nil) }
        let tombstone = try DirectStatement(.tombstoneRow, of: statements, in: db).first({ try $0.bind(id) }, read: { columns in
            OrderFreshness(version: try columns.integer(0), updatedAt: try columns.text(1))
        })
        return (nil, tombstone)
    }

    /// What ``state(of:in:statements:)`` reads of the order's row.
    static let orderRowSQL = #"SELECT version, updated_at, status, store_id, courier_id FROM "order" WHERE id = ?"#

    /// What ``state(of:in:statements:)`` reads of the order's tombstone.
    static let tombstoneRowSQL = "SELECT version, updated_at FROM tombstone WHERE id = ?"

    /// `version, updated_at` at `index` and after.
    private static func freshness(_ row: Row, from index: Int) throws -> OrderFreshness {
        OrderFreshness(version: try row.decode(atIndex: index), updatedAt: try row.decode(atIndex: index + 1))
    }

    /// `version, updated_at, status, store_id, courier_id` at `index` and after.
    private static func current(_ row: Row, from index: Int) throws -> Current {
        (try freshness(row, from: index),
         OrderChange.Fields(status: try row.decode(atIndex: index + 2), storeID: try row.decode(atIndex: index + 3),
                            courierID: try row.decode(atIndex: index + 4)))
    }

    /// After an upsert of a covered id: the row it now has.
    mutating func holds(_ id: String, _ current: Current) {
        if covered.contains(id) { orders[id] = current }
    }

    /// After the tombstone of a covered id was removed.
    mutating func unburied(_ id: String) {
        if covered.contains(id) { tombstones[id] = nil }
    }
}
