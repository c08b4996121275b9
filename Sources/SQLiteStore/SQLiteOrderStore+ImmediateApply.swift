import GRDB
import StoreModel

// Applying whole-order jobs at once (``ImmediateApply``) on SQLite, where every write goes through
// one connection: a job leaves the journal only in the transaction that applies it, so an empty
// journal inside a write transaction means that no job is waiting and none is in the executor's
// hands. Applying a job then is what the executor would do next, in the same order, with nothing
// able to come between.

/// The jobs of one write transaction: applied at once while that is allowed, else journaled.
/// Copied before a savepoint and restored when it rolls back, so numbers and counts stay true.
struct JobIntake {
    /// True while a whole-order job may still be applied at once: the journal was empty when the
    /// transaction began and nothing has been journaled in it since.
    private(set) var applying: Bool
    /// The change log's numbering for the transaction.
    var changes = ChangeAppender()
    /// Jobs journaled (after collapsing).
    private(set) var journaled = 0
    /// Jobs applied at once, by kind.
    private(set) var applied: [JobKind: Int] = [:]

    /// An intake that applies at once only when `applying` (the store allows it and the journal is empty).
    init(applying: Bool) {
        self.applying = applying
    }

    /// Jobs applied at once, all kinds.
    var appliedCount: Int { applied.values.reduce(0, +) }

    /// Applies `job` at once when it is a whole-order job and nothing is ahead of it, else journals
    /// it. False when it collapsed into a pending job (neither journaled nor applied).
    mutating func take(_ job: NewJob, at now: Double, in db: Database) throws -> Bool {
        if applying {
            changes.traceContext = job.traceContext
            switch job.kind {
            case .upsert:
                if var order = job.order {
                    // As the executor would read it back from the journal (the job's order id).
                    order.id = job.orderID ?? order.id
                    _ = try SQLiteOrderStore.upsert(order, at: now, in: db, changes: &changes)
                    applied[.upsert, default: 0] += 1
                    return true
                }
            case .delete:
                if let id = job.orderID {
                    _ = try SQLiteOrderStore.delete(orderID: id, version: job.version, at: now, in: db, changes: &changes)
                    applied[.delete, default: 0] += 1
                    return true
                }
            case .fetch, .fullSync:
                break
            }
        }
        // From here on in this transaction, every job is journaled behind this one.
        applying = false
        guard try SQLiteOrderStore.insert(job, at: now, in: db) else { return false }
        journaled += 1
        return true
    }
}

extension SQLiteOrderStore {
    /// Whether the journal holds no job (inside a write transaction: none waits and none is in hand).
    static func journalIsEmpty(in db: Database) throws -> Bool {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM job)")) == 0
    }

    /// After the commit of a transaction that took jobs: wakes the change feed and reports what was
    /// applied at once.
    func committed(_ intake: JobIntake) {
        if let last = intake.changes.last { changesCommitted(last) }
        guard let immediateApply else { return }
        for (kind, count) in intake.applied { immediateApply.applied(kind, count) }
    }
}
