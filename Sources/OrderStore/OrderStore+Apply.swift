import GRDB

/// Applying journaled jobs: the serial executor's side of the journal (DESIGN §4, §8).
extension OrderStore {
    /// The next job in journal order, if any.
    public func nextJob() throws -> JobRecord? {
        try writer.read { db in try JobRecord.order(Column("id")).fetchOne(db) }
    }

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
    public func applyPage(_ orders: [OrderRecord]) throws {
        let now = self.now()
        try changeWrite { db, changes in
            for order in orders { _ = try Self.upsert(order, at: now, in: db, changes: &changes) }
        }
    }

    /// Ends a full sync whose every page succeeded: local orders the backend no longer returned are
    /// deleted (with tombstones), and the job completes, in one transaction. Returns how many went.
    @discardableResult
    public func completeFullSync(keeping ids: Set<String>, completing jobID: Int64?) throws -> Int {
        let now = self.now()
        return try changeWrite { db, changes in
            var removed = 0
            for order in try OrderRecord.fetchAll(db) where !ids.contains(order.id) {
                _ = try Self.delete(orderID: order.id, version: order.version, at: now, in: db, changes: &changes)
                removed += 1
            }
            try Self.complete(jobID, in: db)
            return removed
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
                attempts: job.attempts, createdAt: now)
            try Self.complete(job.id, in: db)
            try letter.insert(db)
        }
    }

    /// DESIGN §8: apply only if newer; a tombstone stops an older upsert from resurrecting an order.
    /// An applied upsert is appended to the change log with the order's filter fields before and after.
    static func upsert(
        _ incoming: OrderRecord, at now: Double, in db: Database, changes: inout ChangeAppender
    ) throws -> UpsertOutcome {
        var order = incoming
        order.appliedAt = now
        // Hot path: cached raw statements, not query-interface requests built for every row.
        let currentRow = try Row.fetchOne(
            db.cachedStatement(sql: #"SELECT version, updated_at, status, store_id, courier_id FROM "order" WHERE id = ?"#),
            arguments: [order.id])
        var before: OrderChange.Fields?
        if let currentRow {
            let current = OrderFreshness(
                version: try currentRow.decode(atIndex: 0), updatedAt: try currentRow.decode(atIndex: 1))
            if !order.freshness.isNewer(than: current) { return .stale }
            before = OrderChange.Fields(
                status: try currentRow.decode(atIndex: 2), storeID: try currentRow.decode(atIndex: 3),
                courierID: try currentRow.decode(atIndex: 4))
        } else if let tombstone = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT version, updated_at FROM tombstone WHERE id = ?"), arguments: [order.id]) {
            guard order.freshness.isNewer(than: OrderFreshness(
                version: try tombstone.decode(atIndex: 0), updatedAt: try tombstone.decode(atIndex: 1))) else {
                return .stale
            }
            try db.cachedStatement(sql: "DELETE FROM tombstone WHERE id = ?").execute(arguments: [order.id])
        }
        try db.cachedStatement(sql: """
            INSERT INTO "order" (id, status, store_id, courier_id, version, updated_at, body, applied_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET status = excluded.status, store_id = excluded.store_id,
                courier_id = excluded.courier_id, version = excluded.version, updated_at = excluded.updated_at,
                body = excluded.body, applied_at = excluded.applied_at
            """).execute(arguments: [
                order.id, order.status, order.storeID, order.courierID, order.version, order.updatedAt, order.body,
                order.appliedAt,
            ])
        try changes.append(
            .upserted, orderID: order.id, version: order.version, body: order.body, at: now,
            after: OrderChange.Fields(status: order.status, storeID: order.storeID, courierID: order.courierID),
            before: before, in: db)
        return .applied
    }

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
        try db.cachedStatement(sql: """
            INSERT INTO job (kind, order_id, version, payload, source, attempts, not_before, last_error,
                             created_at, status, store_id, courier_id, updated_at)
            VALUES (?, ?, ?, ?, ?, 0, 0, NULL, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                job.kind.rawValue, job.orderID ?? order?.id, order?.version ?? job.version, order?.body,
                job.source, now, order?.status, order?.storeID, order?.courierID, order?.updatedAt,
            ])
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
