import GRDB
public import StoreModel

/// Applying journaled jobs: the serial executor's side of the journal (DESIGN §4, §8).
extension SQLiteOrderStore {
    /// Applies an upsert and completes its job in one transaction (exactly once in effect).
    @discardableResult
    public func applyUpsert(_ order: OrderRecord, completing jobID: Int64? = nil) throws -> UpsertOutcome {
        let now = self.now()
        return try changeWrite { db, changes in
            changes.traceContext = try Self.complete(jobID, in: db)
            return try Self.upsert(order, at: now, in: db, changes: &changes)
        }
    }

    /// Applies a delete and completes its job in one transaction.
    @discardableResult
    public func applyDelete(orderID: String, version: Int64?, completing jobID: Int64? = nil) throws -> DeleteOutcome {
        let now = self.now()
        return try changeWrite { db, changes in
            changes.traceContext = try Self.complete(jobID, in: db)
            return try Self.delete(orderID: orderID, version: version, at: now, in: db, changes: &changes)
        }
    }

    private static let headJobsSQL = "SELECT id, kind, order_id, version, payload, source, attempts, not_before, "
        + "last_error, created_at, status, store_id, courier_id, updated_at, trace_context FROM job WHERE id > ? ORDER BY id LIMIT ?"

    /// Up to `limit` jobs from the head of the journal, in order.
    public func headJobs(limit: Int) throws -> [JobRecord] {
        try headJobs(after: 0, limit: limit)
    }

    /// Up to `limit` jobs after the job `id`, in journal order (ids start at 1).
    public func headJobs(after id: Int64, limit: Int) throws -> [JobRecord] {
        // A cached raw statement: the executor asks after every commit, and compiling the query
        // interface's SQL each time showed in the push-ingest profile.
        try writer.read { db in
            let statement = try db.cachedStatement(sql: Self.headJobsSQL)
            return try JobRecord.fetchAll(statement, arguments: [id, limit])
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
                changes.traceContext = job.traceContext
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
    /// An order new to the store is inserted without a lookup of its own, fifty to a statement, and
    /// its change refers to the order's row for its body instead of copying it (see ``PageLookup``,
    /// ``insertNewBatches`` and ``insertNew``).
    public func applyPage(_ orders: [OrderRecord], for jobID: Int64? = nil) throws {
        let now = self.now()
        try changeWrite { db, changes in
            if let jobID, try Int.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM job WHERE id = ?"), arguments: [jobID]) == nil {
                throw JobsGone()
            }
            var known = try PageLookup.forPage(in: db)
            let inserted = try Self.insertNewBatches(orders, at: now, in: db, changes: &changes, known: &known)
            for order in orders[inserted...] { _ = try Self.upsert(order, at: now, in: db, changes: &changes, known: &known) }
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
            // Read directly: through GRDB's `Row`s, 100,000 orders took 8 % of a cold start's apply time.
            var gone: [(id: String, version: Int64?)] = []
            try DirectStatement(#"SELECT id, version FROM "order""#, in: db).forEach({ _ in }, read: { columns in
                let id = try columns.requiredText(0)
                if !ids.contains(id) { gone.append((id, try columns.integer(1))) }
            })
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

    /// The upsert, looking up what the store holds of the order as `known` says (a full sync's page
    /// inserts first); `known` learns when inserting first stops paying.
    static func upsert(
        _ incoming: OrderRecord, at now: Double, in db: Database, changes: inout ChangeAppender, known: inout PageLookup
    ) throws -> UpsertOutcome {
        var order = incoming
        order.appliedAt = now
        if known.insertsFirst {
            if try insertNew(order, at: now, in: db, changes: &changes, known: known) { return .applied }
            // The order (or its tombstone) is there: the rest of the page is looked up first.
            known.insertsFirst = false
        }
        let (current, tombstone) = try known.state(of: order.id, in: db, statements: changes.statements)
        var before: OrderChange.Fields?
        if let current {
            if !order.freshness.isNewer(than: current.freshness) { return .stale }
            before = current.fields
            if let seq = current.bodyChange { try materialize(seq, of: order.id, in: db, statements: changes.statements) }
        } else if let tombstone {
            guard order.freshness.isNewer(than: tombstone) else { return .stale }
            try db.cachedStatement(sql: "DELETE FROM tombstone WHERE id = ?").execute(arguments: [order.id])
        }
        let after = OrderChange.Fields(of: order)
        try DirectStatement(.upsert, of: changes.statements, in: db).execute { values in
            try bindColumns(of: order, to: &values)
        }
        try changes.append(
            .upserted, orderID: order.id, version: order.version, body: order.body, at: now,
            after: after, before: before, in: db)
        return .applied
    }

    /// Inserts an order the store holds neither a row nor a tombstone of, with the change that
    /// records it; false (nothing written) when it holds either. The change carries no body: it
    /// refers to the order's row (`body_change` is its seq), which keeps that body until
    /// ``materialize`` copies it into the change, before the row is next changed or deleted.
    private static func insertNew(
        _ order: OrderRecord, at now: Double, in db: Database, changes: inout ChangeAppender, known: PageLookup
    ) throws -> Bool {
        if try known.tombstone(of: order.id, in: db, statements: changes.statements) != nil { return false }
        let seq = try changes.nextSeq(in: db)
        try DirectStatement(.insertNew, of: changes.statements, in: db).execute { values in
            try bindColumns(of: order, to: &values)
            try values.bind(seq)
        }
        guard DirectStatement.changesCount(of: db) == 1 else { return false }
        let after = OrderChange.Fields(of: order)
        try changes.append(.upserted, orderID: order.id, version: order.version, body: nil, at: now, after: after, before: nil, in: db)
        return true
    }

    /// Copies the order's body into change `seq`, which referred to it, before the row changes.
    /// A change pruned since is simply not there.
    static func materialize(_ seq: Int64, of orderID: String, in db: Database, statements: TransactionStatements) throws {
        try DirectStatement(.materialize, of: statements, in: db).execute { values in
            try values.bind(orderID)
            try values.bind(seq)
        }
    }

    /// The order's columns in ``upsertSQL``'s and ``insertNewSQL``'s order, up to `applied_at`.
    static func bindColumns(of order: OrderRecord, to values: inout Bindings) throws {
        try values.bind(order.id)
        try values.bind(order.status)
        try values.bind(order.storeID)
        try values.bind(order.courierID)
        try values.bind(order.version)
        try values.bind(order.updatedAt)
        try values.bind(order.body)
        try values.bind(order.appliedAt)
    }

    /// Writes the order; its change carries the body, so the row stands in for none (`body_change`).
    static let upsertSQL = """
        INSERT INTO "order" (id, status, store_id, courier_id, version, updated_at, body, applied_at, body_change)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
        ON CONFLICT(id) DO UPDATE SET status = excluded.status, store_id = excluded.store_id,
            courier_id = excluded.courier_id, version = excluded.version, updated_at = excluded.updated_at,
            body = excluded.body, applied_at = excluded.applied_at, body_change = NULL
        """

    /// Inserts an order only if the store has no row of it, standing in for change `body_change`'s body.
    static let insertNewSQL = """
        INSERT INTO "order" (id, status, store_id, courier_id, version, updated_at, body, applied_at, body_change)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING
        """

    /// ``materializeSQL`` for a delete, which does not read the order's `body_change` first.
    static let materializeBeforeDeleteSQL = """
        UPDATE order_change SET body = (SELECT body FROM "order" WHERE id = ?1)
        WHERE seq = (SELECT body_change FROM "order" WHERE id = ?1) AND body IS NULL
        """

    /// Copies an order's body into the change that referred to it.
    static let materializeSQL = #"UPDATE order_change SET body = (SELECT body FROM "order" WHERE id = ?) WHERE seq = ? AND body IS NULL"#

    private static let insertJobSQL = """
        INSERT INTO job (kind, order_id, version, payload, source, attempts, not_before, last_error,
                         created_at, status, store_id, courier_id, updated_at, trace_context)
        VALUES (?, ?, ?, ?, ?, 0, 0, NULL, ?, ?, ?, ?, ?, ?)
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
            try values.bind(job.traceContext)
        }
        return true
    }

    /// Completes (deletes) the job an apply was for, in the apply's transaction, returning its trace
    /// context for the changes the apply makes; throws ``JobsGone`` when it is no longer journaled,
    /// which rolls the whole apply back.
    @discardableResult
    static func complete(_ jobID: Int64?, in db: Database) throws -> String? {
        guard let jobID else { return nil }
        let statement = try db.cachedStatement(sql: "DELETE FROM job WHERE id = ? RETURNING trace_context")
        guard let row = try Row.fetchOne(statement, arguments: [jobID]) else { throw JobsGone() }
        return row[0]
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
        // A change that refers to the row for its body gets its copy before the row goes.
        try db.cachedStatement(sql: Self.materializeBeforeDeleteSQL).execute(arguments: [orderID])
        _ = try OrderRecord.deleteOne(db, key: orderID)
        try changes.append(
            .deleted, orderID: orderID, version: version ?? current.version, body: nil, at: now, after: nil,
            before: OrderChange.Fields(status: current.status, storeID: current.storeID, courierID: current.courierID),
            in: db)
        return .deleted
    }
}
