// The store as its callers use it, one protocol per capability (STYLE 17): the stream service and
// the push journal write the journal, the serial executor applies it, and everything that shows
// orders reads them. `SQLiteOrderStore` (SQLite) implements all three; a second engine plugs in here.

/// Writing the journal: jobs with the stream cursor, idempotent submissions, and the store's owner
/// (claimed before each stream).
public protocol JobJournal: Sendable {
    /// The stream cursor (`Last-Event-ID`), "" when none.
    func streamCursor() async throws -> String
    /// Journals jobs and dead letters and, in the same transaction, advances the stream cursor
    /// (DESIGN §3); returns how many jobs were journaled after collapsing (an engine that applies
    /// whole-order jobs at once while its journal is empty, ``ImmediateApply``, does not count those).
    @discardableResult
    func journal(_ jobs: [NewJob], cursor: String?, deadLetters: [DeadLetterRecord]) async throws -> Int
    /// Accepts a batch of submissions in one transaction, each all-or-nothing; one outcome each, in
    /// order, and none before the commit.
    func accept(_ submissions: [IdempotentSubmission], policy: SubmissionPolicy) async -> [SubmissionOutcome]
    /// How many ``accept(_:policy:)`` batches may usefully be in flight at once: 1 where they
    /// queue behind one writer anyway (SQLite); more where a batch spends most of its time waiting
    /// for round trips that the next one can overlap (PostgreSQL).
    var concurrentAccepts: Int { get }
    /// Makes `userID` the owner, clearing a different user's data first; true when data was cleared.
    @discardableResult
    func claim(for userID: String) async throws -> Bool
}

extension JobJournal {
    /// One batch at a time.
    public var concurrentAccepts: Int { 1 }
}

/// The job (or one of the jobs) an apply was to complete is no longer journaled: a user switch
/// (``JobJournal/claim(for:)``) cleared the journal between the executor's read of it and the apply.
/// Nothing of the apply was written: the previous user's order never reaches the new user's store
/// (FIELD-NOTES 15). The executor drops the job and reads the journal's head again.
public struct JobsGone: Error, CustomStringConvertible {
    /// Creates the error.
    public init() {}

    public var description: String { "the sync job is no longer journaled (a user switch cleared the journal)" }
}

/// Applying the journal, one job at a time in journal order (the serial executor, DESIGN §4 and §8).
public protocol JobApplier: Sendable {
    /// Up to `limit` jobs from the head of the journal, in order.
    func headJobs(limit: Int) async throws -> [JobRecord]
    /// Up to `limit` jobs after the job `id`, in journal order (the executor reads on past a lane that
    /// waits, DESIGN §8 "Sync").
    func headJobs(after id: Int64, limit: Int) async throws -> [JobRecord]
    /// Applies consecutive whole-order jobs and completes them in one transaction; returns how many.
    func applyInOneTransaction(_ jobs: [JobRecord]) async throws -> Int
    /// Applies an upsert and completes its job in one transaction.
    @discardableResult
    func applyUpsert(_ order: OrderRecord, completing jobID: Int64?) async throws -> UpsertOutcome
    /// Applies a delete and completes its job in one transaction.
    @discardableResult
    func applyDelete(orderID: String, version: Int64?, completing jobID: Int64?) async throws -> DeleteOutcome
    /// Upserts one page of the full sync `jobID`; throws ``JobsGone`` (writing nothing) when that job
    /// is no longer journaled, so a page fetched before a user switch never reaches the new user's store.
    func applyPage(_ orders: [OrderRecord], for jobID: Int64?) async throws
    /// Ends a full sync: removes what the backend no longer has; returns how many were removed.
    func completeFullSync(keeping ids: Set<String>, completing jobID: Int64?) async throws -> Int
    /// Keeps a failed job journaled, to be tried again at `retryAt`.
    func recordFailure(jobID: Int64, reason: String, retryAt: Double, countsAttempt: Bool) async throws
    /// Moves a job that will never succeed to the dead letters.
    func deadLetter(job: JobRecord, reason: String) async throws
}

/// Reading what the store holds: `orders`, `status`, `/metrics`, the demo.
public protocol OrderReader: Sendable {
    /// Stored orders sorted by id (numeric ids numerically), optionally of one status.
    func orders(status: String?) async throws -> [OrderRecord]
    /// One order, if stored.
    func order(id: String) async throws -> OrderRecord?
    /// The tombstone of an order, if it was deleted.
    func tombstone(id: String) async throws -> TombstoneRecord?
    /// Dead letters, oldest first.
    func deadLetters() async throws -> [DeadLetterRecord]
    /// One dead letter, if kept.
    func deadLetter(id: Int64) async throws -> DeadLetterRecord?
    /// Up to `limit` jobs waiting in the journal, in journal order (each order's jobs apply in it).
    func pendingJobs(limit: Int) async throws -> [JobRecord]
    /// Counts for `status` and `/metrics`.
    func counts() async throws -> StoreCounts
    /// The user the data belongs to.
    func owner() async throws -> String?
    /// The stream cursor, "" when none.
    func streamCursor() async throws -> String
    /// Whether writes succeed now, and why not when they do not.
    var writeHealth: StoreWriteHealth { get }
}

/// The change log as the orders API reads it (DESIGN §11): snapshots with their seq, the changes a
/// subscriber missed, the hub's read of what was just committed, and pruning.
public protocol ChangeFeedSource: Sendable {
    /// The last change's seq.
    func changeHead() async throws -> Int64
    /// The orders matching `filter` and the change they are as of, in one read.
    func snapshot(matching filter: OrderFilter) async throws -> OrderSnapshot
    /// One order, if stored.
    func order(id: String) async throws -> OrderRecord?
    /// Up to `limit` changes after `seq`, or why a subscriber at `seq` must reset.
    func changes(after seq: Int64, limit: Int) async throws -> ChangesAfter
    /// Up to `limit` changes after `seq` as the log holds them, for the fan-out hub.
    func appendedChanges(after seq: Int64, limit: Int) async throws -> [OrderChange]
    /// Removes the oldest changes beyond the last `keeping`, at most `batch`; returns how many.
    func pruneChanges(keeping: Int, batch: Int) async throws -> Int
}

/// Every capability: what the agent holds, whichever engine keeps the store.
public typealias OrderStoreEngine = JobJournal & JobApplier & OrderReader & ChangeFeedSource & WriteProbe & DeadLetterRepair
    & WebhookOutbox

/// What an operator does to dead letters (`orderlive dead-letters`, DESIGN §13).
public protocol DeadLetterRepair: Sendable {
    /// Removes the dead letters `ids` (every one when nil) in one transaction. When any of `ids` is
    /// not kept, nothing is removed and those ids are returned as unknown.
    func dropDeadLetters(_ ids: [Int64]?) async throws -> DeadLetterChange
    /// Turns the dead letters `ids` (every one when nil) back into jobs at the journal's tail, with no
    /// attempts made (``DeadLetterRecord/retryJob(source:)``), and removes them, in one transaction
    /// that wakes the executor of a running agent. When any of `ids` is not kept, nothing changes and
    /// those ids are returned as unknown.
    func retryDeadLetters(_ ids: [Int64]?) async throws -> DeadLetterChange
    /// Removes the oldest dead letters beyond the newest `keeping` (`sync.dead_letter_limit`);
    /// returns how many went.
    func pruneDeadLetters(keeping: Int) async throws -> Int
}

/// What a change to dead letters did.
public enum DeadLetterChange: Sendable, Hashable {
    /// Done to these dead letters.
    case done([DeadLetterRecord])
    /// These ids are not kept; nothing was changed.
    case unknown([Int64])
}

/// Trying the store while it is unwritable (DESIGN §10): readiness clears by itself when the cause
/// goes away, with no push and no stream event to make a write.
public protocol WriteProbe: Sendable {
    /// Makes the smallest write that fails as the store's writes fail (a full disk, a read-only file or
    /// database, a lock, an unreachable database) and notes its outcome in the store's write health;
    /// it leaves nothing behind.
    func probeWrite() async
}
