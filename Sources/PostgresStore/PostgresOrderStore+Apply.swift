import Logging
public import StoreModel
import PostgresNIO

/// Applying the journal: the serial executor's side (DESIGN §4, §8), every transaction fenced by
/// the leader's epoch and appending what it changed to the change log with the next seqs.
extension PostgresOrderStore: JobApplier {
    /// Up to `limit` jobs from the head of this account's journal, in order.
    public func headJobs(limit: Int) async throws -> [JobRecord] {
        try await headJobs(after: 0, limit: limit)
    }

    /// Up to `limit` jobs after the job `id`, in journal order (ids start at 1).
    public func headJobs(after id: Int64, limit: Int) async throws -> [JobRecord] {
        let account = self.account
        let logger = self.logger
        return try await read { connection in
            var jobs: [JobRecord] = []
            let rows = try await connection.query("""
                SELECT id, kind, order_id, version, payload, source, attempts, not_before, last_error, created_at,
                       status, store_id, courier_id, updated_at, trace_context
                FROM orderlive_job WHERE account = \(account) AND id > \(id) ORDER BY id LIMIT \(max(1, limit))
                """, logger: logger)
            for try await row in rows {
                let (id, kind, orderID, version, payload, source, attempts, notBefore, lastError, createdAt, status,
                     storeID, courierID, updatedAt, traceContext) = try row.decode(
                    (Int64, String, String?, Int64?, String?, String, Int64, Double, String?, Double, String?, String?,
                     String?, String?, String?).self)
                jobs.append(JobRecord(
                    id: id, kind: JobKind(rawValue: kind) ?? .fullSync, orderID: orderID, version: version, payload: payload,
                    source: source, attempts: Int(clamping: attempts), notBefore: notBefore, lastError: lastError,
                    createdAt: createdAt, status: status, storeID: storeID, courierID: courierID, updatedAt: updatedAt,
                    traceContext: traceContext))
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
            let traced = try await self.completeTraced(job: jobID, at: now, on: connection)
            return try await self.applying([order.id], at: now, on: connection, changes: &changes) {
                $0.traceContext = traced
                return $0.upsert(order, at: now)
            }
        }
    }

    /// Applies a delete and completes its job in one transaction.
    @discardableResult
    public func applyDelete(orderID: String, version: Int64?, completing jobID: Int64? = nil) async throws -> DeleteOutcome {
        try await changeWrite { [self] connection, changes, now in
            let traced = try await self.completeTraced(job: jobID, at: now, on: connection)
            return try await self.applying([orderID], at: now, on: connection, changes: &changes) {
                $0.traceContext = traced
                return $0.delete(orderID: orderID, version: version, at: now)
            }
        }
    }

    /// Upserts one page of a full sync in one transaction.
    public func applyPage(_ orders: [OrderRecord], for jobID: Int64? = nil) async throws {
        try await changeWrite { [self] connection, changes, now in
            if let jobID {
                // FOR SHARE: a user switch deleting the job waits for this page's commit, and then
                // clears what it wrote with the rest of the account.
                let journaled = try await connection.query(
                    "SELECT 1 FROM orderlive_job WHERE account = \(self.account) AND id = \(jobID) FOR SHARE", logger: self.logger)
                guard try await Self.count(journaled) == 1 else { throw JobsGone() }
            }
            try await self.applying(orders.map(\.id), at: now, on: connection, changes: &changes) { rows in
                for order in orders { _ = rows.upsert(order, at: now) }
            }
        }
    }

    /// Ends a full sync: this account's orders the backend no longer returned are deleted (with
    /// tombstones) and the job completes, in one transaction. Returns how many went.
    @discardableResult
    public func completeFullSync(keeping ids: Set<String>, completing jobID: Int64?) async throws -> Int {
        // It reads and may delete every order of the account: the long deadline.
        try await changeWrite(within: configuration.longRoundTrip) { [self] connection, changes, now in
            let gone = try await Self.orders(account: self.account, status: nil, on: connection, logger: self.logger)
                .filter { !ids.contains($0.id) }
            try await self.applying(gone.map(\.id), at: now, on: connection, changes: &changes) { rows in
                for order in gone { _ = rows.delete(orderID: order.id, version: order.version, at: now) }
            }
            if let jobID { try await self.complete(jobs: [jobID], at: now, on: connection) }
            return gone.count
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
            attempts: job.attempts, createdAt: now(), firstAttemptAt: job.createdAt, version: job.version)
        try await write(fenced: true) { [self] connection in
            if let id = job.id {
                let deleted = try await connection.query(
                    "DELETE FROM orderlive_job WHERE account = \(self.account) AND id = \(id) RETURNING id", logger: self.logger)
                guard try await Self.count(deleted) == 1 else { throw JobsGone() }
            }
            try await Self.insert(letter, account: self.account, on: connection, logger: self.logger)
        }
    }

    // MARK: One transaction's changes

    /// A fenced transaction that may append to the change log; tells `changesCommitted` after the commit.
    func changeWrite<T: Sendable>(
        within limit: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection, inout PostgresChangeAppender, Double) async throws -> T
    ) async throws -> T {
        let now = self.now()
        let account = self.account
        let (result, last) = try await write(fenced: true, within: limit) { connection -> (T, Int64?) in
            var changes = PostgresChangeAppender(account: account)
            let result = try await body(connection, &changes, now)
            return (result, changes.last)
        }
        if let last { changesCommitted(last) }
        return result
    }

    /// Completes applied jobs: removed from the journal, and recorded with the epoch this transaction
    /// holds. The fence checked that epoch under a share lock in this transaction, so the account's
    /// row is the epoch the jobs were applied under (null when no agent has led the account). Throws
    /// ``JobsGone`` (rolling the apply back) when any of them is no longer journaled. Returns their
    /// trace contexts (``StoredTraceContext``), in no particular order.
    @discardableResult
    private func complete(jobs ids: [Int64], at now: Double, on connection: PostgresConnection) async throws -> [String?] {
        guard !ids.isEmpty else { return [] }
        let rows = try await connection.query("""
            WITH gone AS (DELETE FROM orderlive_job WHERE account = \(account) AND id = ANY(\(ids)) RETURNING id, trace_context),
            applied AS (
                INSERT INTO orderlive_job_applied (account, job_id, epoch, applied_at)
                SELECT \(account), id, (SELECT epoch FROM orderlive_leadership WHERE account = \(account)), \(now)
                FROM gone RETURNING job_id)
            SELECT gone.trace_context FROM gone JOIN applied ON applied.job_id = gone.id
            """, logger: logger)
        var contexts: [String?] = []
        for try await traceContext in rows.decode(String?.self) { contexts.append(traceContext) }
        guard contexts.count == ids.count else { throw JobsGone() }
        return contexts
    }

    /// Completes the job an apply is for, first in the apply's transaction (which rolls back whole if
    /// the job is gone), returning its trace context for the changes the apply makes.
    private func completeTraced(job id: Int64?, at now: Double, on connection: PostgresConnection) async throws -> String? {
        guard let id else { return nil }
        return try await complete(jobs: [id], at: now, on: connection).first ?? nil
    }

    /// The number of rows in `rows`, read to their end.
    static func count(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }
}

/// One transaction's changes to the change log, each numbered after the head and its notification
/// queued on the `orderlive_changes` channel in the statement that appends it (``WriteApplied``, or
/// ``append(_:at:on:logger:)`` for a user switch's deletions). PostgreSQL delivers a notification at
/// commit, so every agent's change feed reads the log (its source of truth) as soon as the change is
/// visible; ``last`` is what the committing agent tells its own feed.
struct PostgresChangeAppender: Sendable {
    let account: String
    /// The last seq appended in this transaction.
    var last: Int64?

    init(account: String) {
        self.account = account
    }

    /// Notes changes appended through `seq`, their notification queued by the same statement.
    mutating func appended(through seq: Int64) {
        last = seq
    }
}
