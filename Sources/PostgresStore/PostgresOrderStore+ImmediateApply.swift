import Logging
import StoreModel
import PostgresNIO

// Applying whole-order pushes in the transaction that accepts them (``ImmediateApply``) on the
// fenced leader: the order rows, the change log and its notification written there, instead of a
// job inserted, notified, read back by the executor, applied and deleted. Safe when, inside the
// accepting transaction:
//
// - the journal lock is held: every transaction that adds jobs, and every user switch or wipe,
//   waits for this one;
// - the journal is empty: a job leaves the journal only in the transaction that applies it, so an
//   executor transaction still applying one would leave it visible. No job waits, and none is in
//   the executor's hands, so nothing else appends to the change log now and the order rows are the
//   executor's last word. Applying the batch is what the executor would do next, in the same order;
// - the account's epoch, read under the fence's share lock, is the one this agent leads with: a
//   takeover's increment waits for this commit, and a deposed leader (whose fence still names its
//   old epoch) journals instead, as a follower does.
//
// Anything else (a fetch, a full sync, a follower, a journal with jobs in it) is journaled as before.

/// What a push batch's transaction did: each submission's outcome, the change log's last seq it
/// appended (applied in place), and how many jobs of each kind it applied.
struct AcceptedBatch: Sendable {
    var outcomes: [SubmissionOutcome]
    var lastChange: Int64? = nil
    var applied: [JobKind: Int] = [:]
}

extension PostgresOrderStore {
    /// Applies a decided batch whose jobs are all whole-order jobs (``AcceptPlan/appliesInPlace``)
    /// in the caller's transaction (see the rule above): the rows they name read and locked, the
    /// jobs applied to them in order, then the new keys, the rows, the change log and the feed's
    /// notification written in one statement. Two round trips, whatever the batch's size.
    func applyInPlace(_ plan: AcceptPlan, at now: Double, on connection: PostgresConnection) async throws -> AcceptedBatch {
        var changes = PostgresChangeAppender(account: account)
        var applied: [JobKind: Int] = [:]
        let orders = plan.jobs.compactMap(AcceptPlan.orderID(of:))
        try await applying(
            orders, at: now, on: connection, changes: &changes, keys: (plan.keyIDs, plan.keyResponses)
        ) { rows in
            for job in plan.jobs {
                rows.traceContext = job.traceContext
                // The order as the executor would read it back from the journal (the job's order id).
                var order = job.order
                if let id = job.orderID { order?.id = id }
                guard rows.apply(job.kind, order: order, orderID: job.orderID, version: job.version, at: now) else { continue }
                applied[job.kind, default: 0] += 1
            }
        }
        return AcceptedBatch(
            outcomes: plan.outcomes(journaled: Array(repeating: true, count: plan.jobs.count), applied: true),
            lastChange: changes.last, applied: applied)
    }

    /// The statements a fenced leader runs for a push batch applied in place, in order between
    /// `BEGIN` and `COMMIT`: the journal lock, the depth with the keys and the epoch, the rows read
    /// and locked, and everything written (the change log's notification on ``changeChannel``), as
    /// SQL with `$n` parameters. For references that run the same work elsewhere: the benchmark's
    /// pgbench runs them for one push per transaction (DESIGN §9).
    public static var inPlaceBatchStatements: [String] {
        [LockJournal.sql, ReadDepthAndKeys<WithEpoch>.sql, ReadAppliedRows.sql, WriteApplied.sql]
    }

    /// After the commit of a batch: wakes the change feed and reports what was applied in place.
    func committed(_ batch: AcceptedBatch) {
        if let last = batch.lastChange { changesCommitted(last) }
        guard let immediateApply else { return }
        for (kind, count) in batch.applied { immediateApply.applied(kind, count) }
    }
}

extension AcceptPlan {
    /// True when every job of the batch is a whole-order job (an upsert with its order, a delete with
    /// its id), and there is at least one: the batch may be applied in place.
    var appliesInPlace: Bool {
        !jobs.isEmpty && jobs.allSatisfy { Self.orderID(of: $0) != nil }
    }

    /// The order a whole-order job names; nil for any other job.
    static func orderID(of job: NewJob) -> String? {
        switch job.kind {
        case .upsert: job.order.map { job.orderID ?? $0.id }
        case .delete: job.orderID
        case .fetch, .fullSync: nil
        }
    }
}
