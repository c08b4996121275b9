import Logging
import OrderStore
import PostgresNIO

/// Applying the journal: the serial executor's side (DESIGN §4, §8), every transaction fenced by
/// the leader's epoch and appending what it changed to the change log with the next seqs.
extension PostgresOrderStore: JobApplier {
    /// Up to `limit` jobs from the head of this account's journal, in order.
    public func headJobs(limit: Int) async throws -> [JobRecord] {
        let account = self.account
        let logger = self.logger
        return try await read { connection in
            var jobs: [JobRecord] = []
            let rows = try await connection.query("""
                SELECT id, kind, order_id, version, payload, source, attempts, not_before, last_error, created_at,
                       status, store_id, courier_id, updated_at
                FROM orderlive_job WHERE account = \(account) ORDER BY id LIMIT \(max(1, limit))
                """, logger: logger)
            for try await row in rows {
                let (id, kind, orderID, version, payload, source, attempts, notBefore, lastError, createdAt, status,
                     storeID, courierID, updatedAt) = try row.decode(
                    (Int64, String, String?, Int64?, String?, String, Int64, Double, String?, Double, String?, String?,
                     String?, String?).self)
                jobs.append(JobRecord(
                    id: id, kind: JobKind(rawValue: kind) ?? .fullSync, orderID: orderID, version: version, payload: payload,
                    source: source, attempts: Int(clamping: attempts), notBefore: notBefore, lastError: lastError,
                    createdAt: createdAt, status: status, storeID: storeID, courierID: courierID, updatedAt: updatedAt))
            }
            return jobs
        }
    }

    /// Applies consecutive upsert and delete jobs in one transaction, completing each
    /// (``applyRun(_:at:on:changes:)``: a fixed number of round trips for the whole run).
    @discardableResult
    public func applyInOneTransaction(_ jobs: [JobRecord]) async throws -> Int {
        try await changeWrite { [self] connection, changes, now in
            let applied = try await self.applyRun(jobs, at: now, on: connection, changes: &changes)
            try await self.complete(jobs: applied, at: now, on: connection)
            return applied.count
        }
    }

    /// Applies an upsert and completes its job in one transaction.
    @discardableResult
    public func applyUpsert(_ order: OrderRecord, completing jobID: Int64? = nil) async throws -> UpsertOutcome {
        try await changeWrite { [self] connection, changes, now in
            let outcome = try await self.upsert(order, at: now, on: connection, changes: &changes)
            if let jobID { try await self.complete(jobs: [jobID], at: now, on: connection) }
            return outcome
        }
    }

    /// Applies a delete and completes its job in one transaction.
    @discardableResult
    public func applyDelete(orderID: String, version: Int64?, completing jobID: Int64? = nil) async throws -> DeleteOutcome {
        try await changeWrite { [self] connection, changes, now in
            let outcome = try await self.delete(orderID: orderID, version: version, at: now, on: connection, changes: &changes)
            if let jobID { try await self.complete(jobs: [jobID], at: now, on: connection) }
            return outcome
        }
    }

    /// Upserts one page of a full sync in one transaction.
    public func applyPage(_ orders: [OrderRecord]) async throws {
        try await changeWrite { [self] connection, changes, now in
            for order in orders { _ = try await self.upsert(order, at: now, on: connection, changes: &changes) }
        }
    }

    /// Ends a full sync: this account's orders the backend no longer returned are deleted (with
    /// tombstones) and the job completes, in one transaction. Returns how many went.
    @discardableResult
    public func completeFullSync(keeping ids: Set<String>, completing jobID: Int64?) async throws -> Int {
        try await changeWrite { [self] connection, changes, now in
            var removed = 0
            for order in try await Self.orders(account: self.account, status: nil, on: connection, logger: self.logger)
            where !ids.contains(order.id) {
                _ = try await self.delete(
                    orderID: order.id, version: order.version, at: now, on: connection, changes: &changes)
                removed += 1
            }
            if let jobID { try await self.complete(jobs: [jobID], at: now, on: connection) }
            return removed
        }
    }

    /// Records a failed attempt; the job stays in place until `retryAt`.
    public func recordFailure(jobID: Int64, reason: String, retryAt: Double, countsAttempt: Bool = true) async throws {
        let increment: Int64 = countsAttempt ? 1 : 0
        try await write(fenced: true) { [self] connection in
            _ = try await connection.query("""
                UPDATE orderlive_job SET attempts = attempts + \(increment), last_error = \(reason), not_before = \(retryAt)
                WHERE account = \(self.account) AND id = \(jobID)
                """, logger: self.logger)
        }
    }

    /// Moves a job that keeps failing to the dead letters, in one transaction.
    public func deadLetter(job: JobRecord, reason: String) async throws {
        let letter = DeadLetterRecord(
            kind: job.kind.rawValue, orderID: job.orderID, raw: job.payload ?? "", reason: reason,
            attempts: job.attempts, createdAt: now())
        try await write(fenced: true) { [self] connection in
            try await Self.insert(letter, account: self.account, on: connection, logger: self.logger)
            if let id = job.id {
                try await connection.query(
                    "DELETE FROM orderlive_job WHERE account = \(self.account) AND id = \(id)", logger: self.logger)
            }
        }
    }

    // MARK: One transaction's changes

    /// A fenced transaction that may append to the change log; tells `changesCommitted` after the commit.
    func changeWrite<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection, inout PostgresChangeAppender, Double) async throws -> T
    ) async throws -> T {
        let now = self.now()
        let account = self.account
        let logger = self.logger
        let (result, last) = try await write(fenced: true) { connection -> (T, Int64?) in
            var changes = PostgresChangeAppender(account: account)
            let result = try await body(connection, &changes, now)
            try await changes.notify(on: connection, logger: logger)
            return (result, changes.last)
        }
        if let last { changesCommitted(last) }
        return result
    }

    /// Completes applied jobs: removed from the journal, and recorded with the epoch this transaction
    /// holds. The fence checked that epoch under a share lock in this transaction, so the account's
    /// row is the epoch the jobs were applied under (null when no agent has led the account).
    private func complete(jobs ids: [Int64], at now: Double, on connection: PostgresConnection) async throws {
        guard !ids.isEmpty else { return }
        try await connection.query(
            "DELETE FROM orderlive_job WHERE account = \(account) AND id = ANY(\(ids))", logger: logger)
        try await connection.query("""
            INSERT INTO orderlive_job_applied (account, job_id, epoch, applied_at)
            SELECT \(account), job, (SELECT epoch FROM orderlive_leadership WHERE account = \(account)), \(now)
            FROM unnest(\(ids)::bigint[]) AS job
            """, logger: logger)
    }

    /// DESIGN §8: apply only if newer; a tombstone stops an older upsert from resurrecting an order.
    func upsert(
        _ incoming: OrderRecord, at now: Double, on connection: PostgresConnection, changes: inout PostgresChangeAppender
    ) async throws -> UpsertOutcome {
        var order = incoming
        order.appliedAt = now
        var current: (freshness: OrderFreshness, fields: OrderChange.Fields)?
        for try await (version, updatedAt, status, storeID, courierID) in try await connection.query("""
            SELECT version, updated_at, status, store_id, courier_id FROM orderlive_order
            WHERE account = \(account) AND id = \(order.id) FOR UPDATE
            """, logger: logger).decode((Int64?, String?, String, String?, String?).self) {
            current = (OrderFreshness(version: version, updatedAt: updatedAt),
                       OrderChange.Fields(status: status, storeID: storeID, courierID: courierID))
        }
        var before: OrderChange.Fields?
        if let current {
            if !order.freshness.isNewer(than: current.freshness) { return .stale }
            before = current.fields
        } else if let tombstone = try await tombstone(id: order.id, on: connection) {
            guard order.freshness.isNewer(than: tombstone.freshness) else { return .stale }
            try await connection.query(
                "DELETE FROM orderlive_tombstone WHERE account = \(account) AND id = \(order.id)", logger: logger)
        }
        try await connection.query("""
            INSERT INTO orderlive_order (account, id, status, store_id, courier_id, version, updated_at, body, applied_at)
            VALUES (\(account), \(order.id), \(order.status), \(order.storeID), \(order.courierID), \(order.version),
                    \(order.updatedAt), \(order.body), \(order.appliedAt))
            ON CONFLICT (account, id) DO UPDATE SET status = excluded.status, store_id = excluded.store_id,
                courier_id = excluded.courier_id, version = excluded.version, updated_at = excluded.updated_at,
                body = excluded.body, applied_at = excluded.applied_at
            """, logger: logger)
        try await changes.append(
            .upserted, orderID: order.id, version: order.version, body: order.body, at: now,
            after: OrderChange.Fields(status: order.status, storeID: order.storeID, courierID: order.courierID),
            before: before, on: connection, logger: logger)
        return .applied
    }

    /// A delete that removed an order is appended to the change log with the order's last fields.
    func delete(
        orderID: String, version: Int64?, at now: Double, on connection: PostgresConnection,
        changes: inout PostgresChangeAppender
    ) async throws -> DeleteOutcome {
        let incoming = OrderFreshness(version: version, updatedAt: nil)
        let current = try await Self.order(account: account, id: orderID, lock: true, on: connection, logger: logger)
        if let current, let version, let currentVersion = current.version, version < currentVersion {
            return .stale
        }
        var tombstone = TombstoneRecord(
            id: orderID, version: version ?? current?.version, updatedAt: current?.updatedAt, deletedAt: now)
        if let existing = try await self.tombstone(id: orderID, on: connection),
           !incoming.isNewer(than: existing.freshness), existing.version != nil {
            tombstone = existing
        }
        try await connection.query("""
            INSERT INTO orderlive_tombstone (account, id, version, updated_at, deleted_at)
            VALUES (\(account), \(tombstone.id), \(tombstone.version), \(tombstone.updatedAt), \(tombstone.deletedAt))
            ON CONFLICT (account, id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at,
                deleted_at = excluded.deleted_at
            """, logger: logger)
        guard let current else { return .absent }
        try await connection.query(
            "DELETE FROM orderlive_order WHERE account = \(account) AND id = \(orderID)", logger: logger)
        try await changes.append(
            .deleted, orderID: orderID, version: version ?? current.version, body: nil, at: now, after: nil,
            before: OrderChange.Fields(status: current.status, storeID: current.storeID, courierID: current.courierID),
            on: connection, logger: logger)
        return .deleted
    }

    func tombstone(id: String, on connection: PostgresConnection) async throws -> TombstoneRecord? {
        var found: TombstoneRecord?
        for try await (version, updatedAt, deletedAt) in try await connection.query(
            "SELECT version, updated_at, deleted_at FROM orderlive_tombstone WHERE account = \(account) AND id = \(id)",
            logger: logger).decode((Int64?, String?, Double).self) {
            found = TombstoneRecord(id: id, version: version, updatedAt: updatedAt, deletedAt: deletedAt)
        }
        return found
    }
}

/// Numbers one transaction's changes: the head is read once, then each change takes the next seq.
/// After the last, ``notify(on:logger:)`` queues a notification that PostgreSQL delivers at commit,
/// so every agent's change feed reads the log (its source of truth) as soon as the change is visible.
struct PostgresChangeAppender: Sendable {
    let account: String
    private var next: Int64?
    private(set) var last: Int64?

    init(account: String) {
        self.account = account
    }

    mutating func append(
        _ kind: OrderChange.Kind, orderID: String, version: Int64?, body: String?, at now: Double,
        after: OrderChange.Fields?, before: OrderChange.Fields?, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let seq: Int64
        if let next {
            seq = next
        } else {
            let (following, overflow) = try await PostgresOrderStore.changeHead(
                account: account, on: connection, logger: logger).addingReportingOverflow(1)
            guard !overflow else { throw PostgresStoreError("the change log's sequence is exhausted") }
            seq = following
        }
        try await connection.query("""
            INSERT INTO orderlive_order_change (account, seq, order_id, kind, version, body, at, status, store_id,
                courier_id, before_status, before_store_id, before_courier_id)
            VALUES (\(account), \(seq), \(orderID), \(kind.rawValue), \(version), \(body), \(now), \(after?.status),
                    \(after?.storeID), \(after?.courierID), \(before?.status), \(before?.storeID), \(before?.courierID))
            """, logger: logger)
        next = seq == .max ? nil : seq + 1
        last = seq
    }

    /// Notes that changes up to `seq` were appended by a statement of its own.
    mutating func setLast(_ seq: Int64) {
        next = seq == .max ? nil : seq + 1
        last = seq
    }

    /// Queues `account:seq` on the `orderlive_changes` channel, delivered at commit.
    func notify(on connection: PostgresConnection, logger: Logger) async throws {
        guard let last else { return }
        try await connection.query(
            "SELECT pg_notify(\(PostgresOrderStore.changeChannel), \(account + ":" + String(last)))", logger: logger)
    }
}
