import Foundation
import GRDB

/// One request to accept exactly once (a push request, DESIGN §4): the jobs of each of its parts with
/// the part's idempotency key (a push's `notif_id`), the request's own key (`webhook-id`), and the
/// answer to replay to a duplicate. Each key comes with the fingerprint of its content, so a key
/// reused for different content is never taken for a duplicate (``DedupeEntry``).
public struct IdempotentSubmission: Sendable, Hashable {
    /// One part's jobs and its idempotency key (a push's notification).
    public struct Part: Sendable, Hashable {
        /// The part's key (`notif_id`), when the sender gave one.
        public var key: String?
        /// A hash of the part's content; nil: any content under the key is the same part.
        public var fingerprint: String?
        /// The jobs it makes (none for a part about something else).
        public var jobs: [NewJob]

        /// Creates a part of a submission.
        public init(key: String?, fingerprint: String? = nil, jobs: [NewJob]) {
            self.key = key
            self.fingerprint = fingerprint
            self.jobs = jobs
        }
    }

    /// The request's key (`webhook-id`), when the sender gave one.
    public var requestKey: String?
    /// A hash of the request's body; nil: any request under the key is the same request.
    public var requestFingerprint: String?
    /// The parts, in request order.
    public var parts: [Part]
    /// The body answered with the 200, stored with the request's key.
    public var response: String

    /// Creates a submission.
    public init(requestKey: String?, requestFingerprint: String? = nil, parts: [Part], response: String) {
        self.requestKey = requestKey
        self.requestFingerprint = requestFingerprint
        self.parts = parts
        self.response = response
    }

    /// The entry its request key is stored with.
    public var requestEntry: String { DedupeEntry.request(fingerprint: requestFingerprint, response: response) }
}

/// What became of one submission.
public enum SubmissionOutcome: Sendable, Hashable {
    /// Committed: `jobs` new jobs (after collapsing), of which `applied` were applied at once instead
    /// of journaled (``ImmediateApply``); `duplicateParts` were seen before; `reusedParts` came under
    /// a key seen before with other content, and were accepted.
    case accepted(jobs: Int, duplicateParts: Int, applied: Int = 0, reusedParts: Int = 0)
    /// The request's key was accepted within the dedupe window: nothing new; answer as before.
    case duplicate(response: String)
    /// The request's key was accepted within the dedupe window for a different request: nothing of
    /// this one was accepted.
    case conflict(key: String)
    /// The journal is at or over its high-water mark: nothing of the request was accepted.
    case overloaded(depth: Int)
    /// The database refused the write: nothing of the request was accepted.
    case failed(reason: String)
}

/// Limits that apply to one batch of submissions.
public struct SubmissionPolicy: Sendable, Hashable {
    /// Keys accepted at or after this Unix time count as duplicates.
    public var dedupeSince: Double
    /// Journal depth at which submissions are refused.
    public var highWaterJobs: Int
    /// When set, keys accepted before this Unix time are deleted in the same transaction.
    public var purgeKeysBefore: Double?

    /// Creates a policy.
    public init(dedupeSince: Double, highWaterJobs: Int, purgeKeysBefore: Double? = nil) {
        self.dedupeSince = dedupeSince
        self.highWaterJobs = highWaterJobs
        self.purgeKeysBefore = purgeKeysBefore
    }
}

extension OrderStore {
    /// Accepts a batch of submissions in one transaction (group commit). Each submission is
    /// all-or-nothing inside its own savepoint: its jobs and keys are journaled (or, with
    /// ``ImmediateApply`` and an empty journal, applied) together or not at all, and a failing
    /// submission does not fail the others. Returns one outcome per submission, in order; nothing is
    /// acknowledged until the transaction has committed.
    public func accept(_ submissions: [IdempotentSubmission], policy: SubmissionPolicy) async -> [SubmissionOutcome] {
        let now = self.now()
        do {
            let (outcomes, intake) = try await writer.writeWithoutTransaction { db in
                try db.inCachedTransaction { try self.accept(submissions, policy: policy, at: now, in: db) }
            }
            return finish(outcomes, intake)
        } catch {
            noteWrite(failure: error)
            return submissions.map { _ in .failed(reason: "\(error)") }
        }
    }

    /// The same as the `async` ``accept(_:policy:)``, for a caller outside Swift concurrency: it
    /// blocks the calling thread until the transaction has committed. `make bench-instructions`
    /// counts the push path's store work through it (valgrind cannot run Swift concurrency).
    public func accept(_ submissions: [IdempotentSubmission], policy: SubmissionPolicy) -> [SubmissionOutcome] {
        let now = self.now()
        do {
            let (outcomes, intake) = try writer.writeWithoutTransaction { db in
                try db.inCachedTransaction { try self.accept(submissions, policy: policy, at: now, in: db) }
            }
            return finish(outcomes, intake)
        } catch {
            noteWrite(failure: error)
            return submissions.map { _ in .failed(reason: "\(error)") }
        }
    }

    private func finish(_ outcomes: [SubmissionOutcome], _ intake: JobIntake) -> [SubmissionOutcome] {
        if outcomes.contains(where: { if case .failed = $0 { false } else { true } }) { noteWrite(failure: nil) }
        committed(intake)
        return outcomes
    }

    private func accept(
        _ submissions: [IdempotentSubmission], policy: SubmissionPolicy, at now: Double, in db: Database
    ) throws -> ([SubmissionOutcome], JobIntake) {
        if let cutoff = policy.purgeKeysBefore {
            try db.execute(sql: "DELETE FROM dedupe_key WHERE accepted_at < ?", arguments: [cutoff])
        }
        // Read directly: GRDB's `fetchOne` costs about 9,000 instructions a call.
        var depth = Int(clamping: try DirectStatement("SELECT COUNT(*) FROM job", in: db).integer() ?? 0)
        var intake = JobIntake(applying: immediateApply != nil && depth == 0)
        var outcomes: [SubmissionOutcome] = []
        outcomes.reserveCapacity(submissions.count)
        for submission in submissions {
            if let key = submission.requestKey,
               let stored = try Self.acceptedResponse(for: "request:" + key, since: policy.dedupeSince, in: db) {
                switch DedupeEntry.verdict(request: stored, fingerprint: submission.requestFingerprint) {
                case .duplicate(let response): outcomes.append(.duplicate(response: response))
                case .conflict: outcomes.append(.conflict(key: key))
                }
                continue
            }
            guard depth < policy.highWaterJobs else {
                outcomes.append(.overloaded(depth: depth))
                continue
            }
            // Restored when the savepoint rolls back: the change log's numbers it used are free
            // again, and what it journaled or applied is not.
            let before = intake
            do {
                var accepted = 0
                var duplicates = 0
                var reused = 0
                try db.inCachedSavepoint {
                    for part in submission.parts {
                        if let key = part.key.map({ "notification:" + $0 }) {
                            let stored = try Self.acceptedResponse(for: key, since: policy.dedupeSince, in: db)
                            switch DedupeEntry.verdict(notification: stored, fingerprint: part.fingerprint) {
                            case .duplicate:
                                duplicates += 1
                                continue
                            case .new(let entry):
                                try Self.remember(key, response: entry, at: now, in: db)
                            case .reused(let entry):
                                reused += 1
                                try Self.remember(key, response: entry, at: now, in: db)
                            }
                        }
                        for job in part.jobs {
                            if try intake.take(job, at: now, in: db) { accepted += 1 }
                        }
                    }
                    if let key = submission.requestKey {
                        try Self.remember("request:" + key, response: submission.requestEntry, at: now, in: db)
                    }
                }
                depth += intake.journaled - before.journaled
                outcomes.append(.accepted(
                    jobs: accepted, duplicateParts: duplicates, applied: intake.appliedCount - before.appliedCount,
                    reusedParts: reused))
            } catch {
                intake = before
                noteWrite(failure: error)
                outcomes.append(.failed(reason: "\(error)"))
            }
        }
        return (outcomes, intake)
    }

    private static func acceptedResponse(for key: String, since: Double, in db: Database) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT response FROM dedupe_key WHERE id = ? AND accepted_at >= ?"),
            arguments: [key, since])
    }

    private static func remember(_ key: String, response: String, at now: Double, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO dedupe_key (id, response, accepted_at) VALUES (?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET response = excluded.response, accepted_at = excluded.accepted_at
            """).execute(arguments: [key, response, now])
    }
}
