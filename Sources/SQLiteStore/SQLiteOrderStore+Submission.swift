import Foundation
import GRDB
public import StoreModel

extension SQLiteOrderStore {
    /// Accepts a batch of submissions in one transaction (group commit). Each submission is
    /// all-or-nothing inside its own savepoint: its jobs and keys are journaled (or, with
    /// ``ImmediateApply`` and an empty journal, applied) together or not at all, and a failing
    /// submission does not fail the others. Returns one outcome per submission, in order; nothing is
    /// acknowledged until the transaction has committed.
    public func accept(_ submissions: [IdempotentSubmission], policy: SubmissionPolicy) async -> [SubmissionOutcome] {
        let now = self.now()
        do {
            let (outcomes, intake) = try await groupCommit.write { db in
                try self.accept(submissions, policy: policy, at: now, in: db)
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
            let (outcomes, intake) = try groupCommit.write { db in
                try self.accept(submissions, policy: policy, at: now, in: db)
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
                outcomes.append(DedupeEntry.outcome(request: key, stored: stored, fingerprint: submission.requestFingerprint))
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
                            guard let accepting = DedupeEntry.accepting(notification: stored, fingerprint: part.fingerprint) else {
                                duplicates += 1
                                continue
                            }
                            if accepting.reused { reused += 1 }
                            try Self.remember(key, response: accepting.entry, at: now, in: db)
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

    /// Read and written directly (``DirectStatement``): through GRDB's `fetchOne` and
    /// `StatementArguments` each key cost about 27,000 instructions, two keys a keyed push (DESIGN §9).
    private static func acceptedResponse(for key: String, since: Double, in db: Database) throws -> String? {
        try DirectStatement("SELECT response FROM dedupe_key WHERE id = ? AND accepted_at >= ?", in: db).first({ values in
            try values.bind(key)
            try values.bind(since)
        }, read: { try $0.text(0) }) ?? nil
    }

    private static func remember(_ key: String, response: String, at now: Double, in db: Database) throws {
        try DirectStatement("""
            INSERT INTO dedupe_key (id, response, accepted_at) VALUES (?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET response = excluded.response, accepted_at = excluded.accepted_at
            """, in: db).execute { values in
            try values.bind(key)
            try values.bind(response)
            try values.bind(now)
        }
    }
}
