import AsyncSignals
import Logging
public import StoreModel
import PostgresNIO

/// Pushes accepted exactly once (DESIGN §4): a batch decided from the keys already accepted and the
/// journal's depth, written in one statement, or one submission at a time when PostgreSQL refuses a value.
extension PostgresOrderStore {
    /// Accepts a batch of submissions in one transaction (group commit), each all-or-nothing; one
    /// outcome each, in order, none before the commit. Dedupe keys are the account's, shared by every
    /// agent of it. Under the journal lock the batch costs three round trips whatever its size: the
    /// journal's depth and every key the batch names are read in one query, the outcomes are decided
    /// here, and the new keys, the jobs and the executor's wake-up are written in one statement, then
    /// the commit. On the fenced leader with ``ImmediateApply``, a batch of whole-order pushes that
    /// finds the journal empty is applied in place instead (PostgresOrderStore+ImmediateApply.swift).
    /// Should a statement be refused (a value PostgreSQL will not store), the transaction is taken
    /// again one submission at a time, journaled, each in its own savepoint, so only a submission
    /// that fails alone fails.
    public func accept(_ submissions: [IdempotentSubmission], policy: SubmissionPolicy) async -> [SubmissionOutcome] {
        let now = self.now()
        let account = self.account
        let logger = self.logger
        // The epoch this agent leads with, when it applies whole-order pushes in place: the batch
        // reads the account's epoch under the fence's lock to know it still does.
        let leading = immediateApply == nil ? nil : fence.withLock { $0 }
        do {
            let batch = try await write(journal: true) { [self] connection -> AcceptedBatch in
                if let cutoff = policy.purgeKeysBefore {
                    try await connection.query(
                        "DELETE FROM orderlive_dedupe_key WHERE account = \(account) AND accepted_at < \(cutoff)",
                        logger: logger)
                }
                let read = try await Self.depthAndAcceptedResponses(
                    for: submissions, policy: policy, readingEpoch: leading != nil, account: account, on: connection,
                    logger: logger)
                let plan = AcceptPlan(submissions, known: read.known, depth: read.depth, highWater: policy.highWaterJobs)
                do {
                    if let leading, read.epoch == leading, read.depth == 0, plan.appliesInPlace {
                        return try await self.applyInPlace(plan, at: now, on: connection)
                    }
                    let journaled = try await Self.write(plan, account: account, at: now, on: connection, logger: logger)
                    return AcceptedBatch(outcomes: plan.outcomes(journaled: journaled))
                } catch let error as PSQLError where Self.refusesValue(error) {
                    // The statement was refused and the transaction with it: start it again and take
                    // the batch one submission at a time, journaled.
                    try await connection.query("ROLLBACK", logger: logger)
                    try await connection.query("BEGIN", logger: logger)
                    try await Self.lockJournal(account: account, on: connection, logger: logger)
                    let (depth, _, _) = try await Self.depthAndAcceptedResponses(
                        for: [], policy: policy, readingEpoch: false, account: account, on: connection, logger: logger)
                    let outcomes = try await Self.acceptOneByOne(
                        submissions, policy: policy, depth: depth, account: account, at: now, on: connection,
                        logger: logger)
                    if outcomes.contains(where: { if case .accepted(let jobs, _, _, _) = $0 { jobs > 0 } else { false } }) {
                        try await Self.notifyJobs(account: account, on: connection, logger: logger)
                    }
                    return AcceptedBatch(outcomes: outcomes)
                }
            }
            committed(batch)
            return batch.outcomes
        } catch {
            return submissions.map { _ in .failed(reason: "\(error)") }
        }
    }

    /// The journal's depth (counted up to the high-water mark, which is all the decisions need) and
    /// the responses of the keys `submissions` name (`request:` and `notification:`) that were
    /// accepted since the dedupe window began, in one query.
    /// With `readingEpoch`, also the account's epoch, read under the fence's share lock.
    private static func depthAndAcceptedResponses(
        for submissions: [IdempotentSubmission], policy: SubmissionPolicy, readingEpoch: Bool, account: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> (depth: Int, known: [String: String], epoch: Int64?) {
        var keys: [String] = []
        for submission in submissions {
            if let key = submission.requestKey { keys.append("request:" + key) }
            for part in submission.parts { if let key = part.key { keys.append("notification:" + key) } }
        }
        var depth = 0
        var known: [String: String] = [:]
        var epoch: Int64?
        let limit = Int64(clamping: policy.highWaterJobs)
        let rows = readingEpoch
            ? try await connection.execute(
                ReadDepthAndKeys<WithEpoch>(account: account, limit: limit, keys: keys, since: policy.dedupeSince), logger: logger)
            : try await connection.execute(
                ReadDepthAndKeys<WithoutEpoch>(account: account, limit: limit, keys: keys, since: policy.dedupeSince), logger: logger)
        for try await (count, ids, responses, current) in rows {
            depth = Int(clamping: count)
            for (id, response) in zip(ids, responses) { known[id] = response }
            epoch = current
        }
        return (depth, known, epoch)
    }

    /// Writes a decided batch: its new keys, its jobs in journal order and, when it added jobs, the
    /// executor's wake-up. One statement when the jobs are upserts and deletes (which never
    /// collapse), as every push of whole orders is; otherwise the keys, then
    /// ``insertAll(_:account:at:on:logger:)``. Whether each job was journaled, in order.
    private static func write(
        _ plan: AcceptPlan, account: String, at now: Double, on connection: PostgresConnection, logger: Logger
    ) async throws -> [Bool] {
        if plan.jobs.allSatisfy({ $0.kind == .upsert || $0.kind == .delete }) {
            try await writeJournal(
                keyIDs: plan.keyIDs, keyResponses: plan.keyResponses, jobs: plan.jobs, wake: !plan.jobs.isEmpty,
                account: account, at: now, on: connection, logger: logger)
            return Array(repeating: true, count: plan.jobs.count)
        }
        if !plan.keyIDs.isEmpty {
            try await writeJournal(
                keyIDs: plan.keyIDs, keyResponses: plan.keyResponses, jobs: [NewJob](), wake: false,
                account: account, at: now, on: connection, logger: logger)
        }
        let journaled = try await insertAll(plan.jobs, account: account, at: now, on: connection, logger: logger)
        if journaled.contains(true) { try await notifyJobs(account: account, on: connection, logger: logger) }
        return journaled
    }

    /// The batch one submission at a time, each in its own savepoint: a submission that fails
    /// alone fails; one whose failure the connection does not survive fails the transaction.
    private static func acceptOneByOne(
        _ submissions: [IdempotentSubmission], policy: SubmissionPolicy, depth: Int, account: String, at now: Double,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> [SubmissionOutcome] {
        var depth = depth
        var outcomes: [SubmissionOutcome] = []
        outcomes.reserveCapacity(submissions.count)
        for submission in submissions {
            if let key = submission.requestKey, let stored = try await acceptedResponse(
                for: "request:" + key, account: account, since: policy.dedupeSince, on: connection, logger: logger) {
                outcomes.append(DedupeEntry.outcome(request: key, stored: stored, fingerprint: submission.requestFingerprint))
                continue
            }
            guard depth < policy.highWaterJobs else {
                outcomes.append(.overloaded(depth: depth))
                continue
            }
            try await connection.query("SAVEPOINT submission", logger: logger)
            do {
                var journaled = 0
                var duplicates = 0
                var reused = 0
                for part in submission.parts {
                    if let key = part.key.map({ "notification:" + $0 }) {
                        let stored = try await acceptedResponse(
                            for: key, account: account, since: policy.dedupeSince, on: connection, logger: logger)
                        guard let accepting = DedupeEntry.accepting(notification: stored, fingerprint: part.fingerprint) else {
                            duplicates += 1
                            continue
                        }
                        if accepting.reused { reused += 1 }
                        try await remember(key, response: accepting.entry, account: account, at: now, on: connection, logger: logger)
                    }
                    for job in part.jobs where try await insert(job, account: account, at: now, on: connection, logger: logger) {
                        journaled += 1
                    }
                }
                if let key = submission.requestKey {
                    try await remember(
                        "request:" + key, response: submission.requestEntry, account: account, at: now, on: connection,
                        logger: logger)
                }
                try await connection.query("RELEASE SAVEPOINT submission", logger: logger)
                depth += journaled
                outcomes.append(.accepted(jobs: journaled, duplicateParts: duplicates, reusedParts: reused))
            } catch {
                try await connection.query("ROLLBACK TO SAVEPOINT submission", logger: logger)
                outcomes.append(.failed(reason: "\(readable(error))"))
            }
        }
        return outcomes
    }

    static func acceptedResponse(
        for key: String, account: String, since: Double, on connection: PostgresConnection, logger: Logger
    ) async throws -> String? {
        var response: String?
        for try await text in try await connection.query("""
            SELECT response FROM orderlive_dedupe_key WHERE account = \(account) AND id = \(key) AND accepted_at >= \(since)
            """, logger: logger).decode(String.self) {
            response = text
        }
        return response
    }

    static func remember(
        _ key: String, response: String, account: String, at now: Double, on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await connection.query("""
            INSERT INTO orderlive_dedupe_key (account, id, response, accepted_at) VALUES (\(account), \(key), \(response), \(now))
            ON CONFLICT (account, id) DO UPDATE SET response = excluded.response, accepted_at = excluded.accepted_at
            """, logger: logger)
    }
}

/// A push batch decided from the keys already accepted and the journal's depth (DESIGN §4): each
/// submission a duplicate, overloaded, or accepted with its jobs; the new keys and all the jobs to
/// write, in order.
struct AcceptPlan {
    enum Decision {
        case decided(SubmissionOutcome)
        case accepting(jobs: Range<Int>, duplicateParts: Int, reusedParts: Int)
    }

    private(set) var decisions: [Decision] = []
    private(set) var keyIDs: [String] = []
    private(set) var keyResponses: [String] = []
    private(set) var jobs: [NewJob] = []

    init(_ submissions: [IdempotentSubmission], known: [String: String], depth: Int, highWater: Int) {
        var known = known
        var depth = depth
        for submission in submissions {
            if let key = submission.requestKey, let stored = known["request:" + key] {
                decisions.append(.decided(DedupeEntry.outcome(request: key, stored: stored, fingerprint: submission.requestFingerprint)))
                continue
            }
            guard depth < highWater else {
                decisions.append(.decided(.overloaded(depth: depth)))
                continue
            }
            let first = jobs.count
            var duplicates = 0
            var reused = 0
            for part in submission.parts {
                if let key = part.key.map({ "notification:" + $0 }) {
                    guard let accepting = DedupeEntry.accepting(notification: known[key], fingerprint: part.fingerprint) else {
                        duplicates += 1
                        continue
                    }
                    if accepting.reused { reused += 1 }
                    let entry = accepting.entry
                    known[key] = entry
                    // A key written twice in one batch (reused within it) is written once, last value.
                    if let index = keyIDs.firstIndex(of: key) {
                        keyResponses[index] = entry
                    } else {
                        keyIDs.append(key)
                        keyResponses.append(entry)
                    }
                }
                jobs.append(contentsOf: part.jobs)
            }
            if let key = submission.requestKey {
                known["request:" + key] = submission.requestEntry
                keyIDs.append("request:" + key)
                keyResponses.append(submission.requestEntry)
            }
            // As the one-by-one path counts it: jobs that collapse into pending ones count too.
            depth += jobs.count - first
            decisions.append(.accepting(jobs: first..<jobs.count, duplicateParts: duplicates, reusedParts: reused))
        }
    }

    /// Each submission's outcome once its jobs were written; `journaled` says, per job, whether it
    /// was journaled (false: it collapsed into a pending one).
    /// With `applied`, the jobs were applied in place rather than journaled.
    func outcomes(journaled: [Bool], applied: Bool = false) -> [SubmissionOutcome] {
        decisions.map { decision in
            switch decision {
            case .decided(let outcome):
                return outcome
            case .accepting(let range, let duplicates, let reused):
                let jobs = journaled[range].count { $0 }
                return .accepted(jobs: jobs, duplicateParts: duplicates, applied: applied ? jobs : 0, reusedParts: reused)
            }
        }
    }
}
