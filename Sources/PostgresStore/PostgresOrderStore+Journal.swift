import Logging
import OrderStore
import PostgresNIO

/// Writing the journal: the stream's jobs with its cursor, pushes accepted exactly once, and the
/// store's owner (DESIGN §3, §4, FIELD-NOTES 15), each in one transaction under the journal lock.
extension PostgresOrderStore: JobJournal {
    /// The stream cursor (`Last-Event-ID`), "" when none.
    public func streamCursor() async throws -> String {
        try await read { [self] connection in
            var value = ""
            let rows = try await connection.query(
                "SELECT value FROM orderlive_stream_cursor WHERE account = \(account)", logger: logger)
            for try await cursor in rows.decode(String.self) { value = cursor }
            return value
        }
    }

    /// Journals jobs and dead letters and, in the same transaction, advances the stream cursor. A
    /// cursor advance is the leader's: it is fenced.
    @discardableResult
    public func journal(_ jobs: [NewJob], cursor: String? = nil, deadLetters: [DeadLetterRecord] = []) async throws -> Int {
        let now = self.now()
        let account = self.account
        let logger = self.logger
        return try await write(journal: true, fenced: cursor != nil) { connection in
            let journaled = try await Self.insertAll(jobs, account: account, at: now, on: connection, logger: logger)
                .count { $0 }
            for letter in deadLetters {
                try await Self.insert(letter, account: account, on: connection, logger: logger)
            }
            if let cursor {
                try await connection.query("""
                    INSERT INTO orderlive_stream_cursor (account, value, updated_at) VALUES (\(account), \(cursor), \(now))
                    ON CONFLICT (account) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                    """, logger: logger)
            }
            if journaled > 0 { try await Self.notifyJobs(account: account, on: connection, logger: logger) }
            return journaled
        }
    }

    /// Two batches: while one commits under the journal lock, the next leases its connection,
    /// begins and waits for the lock, which PostgreSQL hands over at the commit without a round trip.
    public var concurrentAccepts: Int { 2 }

    /// Accepts a batch of submissions in one transaction (group commit), each all-or-nothing; one
    /// outcome each, in order, none before the commit. Dedupe keys are the account's, shared by every
    /// agent of it. Under the journal lock the batch costs three round trips whatever its size: the
    /// journal's depth and every key the batch names are read in one query, the outcomes are decided
    /// here, and the new keys, the jobs and the executor's wake-up are written in one statement, then
    /// the commit. Should that statement be refused (a value PostgreSQL will not store), the
    /// transaction is taken again one submission at a time, each in its own savepoint, so only a
    /// submission that fails alone fails.
    public func accept(_ submissions: [IdempotentSubmission], policy: SubmissionPolicy) async -> [SubmissionOutcome] {
        let now = self.now()
        let account = self.account
        let logger = self.logger
        do {
            return try await write(journal: true) { connection in
                if let cutoff = policy.purgeKeysBefore {
                    try await connection.query(
                        "DELETE FROM orderlive_dedupe_key WHERE account = \(account) AND accepted_at < \(cutoff)",
                        logger: logger)
                }
                let (depth, known) = try await Self.depthAndAcceptedResponses(
                    for: submissions, policy: policy, account: account, on: connection, logger: logger)
                let plan = AcceptPlan(submissions, known: known, depth: depth, highWater: policy.highWaterJobs)
                do {
                    let journaled = try await Self.write(plan, account: account, at: now, on: connection, logger: logger)
                    return plan.outcomes(journaled: journaled)
                } catch let error as PSQLError where Self.refusesValue(error) {
                    // The statement was refused and the transaction with it: start it again and take
                    // the batch one submission at a time.
                    try await connection.query("ROLLBACK", logger: logger)
                    try await connection.query("BEGIN", logger: logger)
                    try await Self.lockJournal(account: account, on: connection, logger: logger)
                    let (depth, _) = try await Self.depthAndAcceptedResponses(
                        for: [], policy: policy, account: account, on: connection, logger: logger)
                    let outcomes = try await Self.acceptOneByOne(
                        submissions, policy: policy, depth: depth, account: account, at: now, on: connection,
                        logger: logger)
                    if outcomes.contains(where: { if case .accepted(let jobs, _, _, _) = $0 { jobs > 0 } else { false } }) {
                        try await Self.notifyJobs(account: account, on: connection, logger: logger)
                    }
                    return outcomes
                }
            }
        } catch {
            return submissions.map { _ in .failed(reason: "\(error)") }
        }
    }

    /// The journal's depth (counted up to the high-water mark, which is all the decisions need) and
    /// the responses of the keys `submissions` name (`request:` and `notification:`) that were
    /// accepted since the dedupe window began, in one query.
    private static func depthAndAcceptedResponses(
        for submissions: [IdempotentSubmission], policy: SubmissionPolicy, account: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> (depth: Int, known: [String: String]) {
        var keys: [String] = []
        for submission in submissions {
            if let key = submission.requestKey { keys.append("request:" + key) }
            for part in submission.parts { if let key = part.key { keys.append("notification:" + key) } }
        }
        var depth = 0
        var known: [String: String] = [:]
        let read = ReadDepthAndKeys(
            account: account, limit: Int64(clamping: policy.highWaterJobs), keys: keys, since: policy.dedupeSince)
        for try await (count, ids, responses) in try await connection.execute(read, logger: logger) {
            depth = Int(clamping: count)
            for (id, response) in zip(ids, responses) { known[id] = response }
        }
        return (depth, known)
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
            try await connection.query("SAVEPOINT submission", logger: logger)
            do {
                var journaled = 0
                var duplicates = 0
                var reused = 0
                for part in submission.parts {
                    if let key = part.key.map({ "notification:" + $0 }) {
                        let stored = try await acceptedResponse(
                            for: key, account: account, since: policy.dedupeSince, on: connection, logger: logger)
                        let entry: String
                        switch DedupeEntry.verdict(notification: stored, fingerprint: part.fingerprint) {
                        case .duplicate:
                            duplicates += 1
                            continue
                        case .new(let new):
                            entry = new
                        case .reused(let new):
                            reused += 1
                            entry = new
                        }
                        try await remember(key, response: entry, account: account, at: now, on: connection, logger: logger)
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

    /// Makes `userID` the owner of this account's data, clearing a different user's orders,
    /// tombstones, journal, cursor, dedupe keys and dead letters first, in the same transaction
    /// (FIELD-NOTES 15); the change log gets a `deleted` change per cleared order and its floor moves
    /// past the switch. Only this account's rows are touched. Returns true when data was cleared.
    @discardableResult
    public func claim(for userID: String) async throws -> Bool {
        let now = self.now()
        let account = self.account
        let logger = self.logger
        let (cleared, last) = try await write(journal: true, fenced: true) { connection -> (Bool, Int64?) in
            var current: String?
            for try await owner in try await connection.query(
                "SELECT user_id FROM orderlive_owner WHERE account = \(account) FOR UPDATE", logger: logger)
                .decode(String.self) {
                current = owner
            }
            if current == userID { return (false, nil) }
            var changes = PostgresChangeAppender(account: account)
            if current != nil {
                let previousHead = try await Self.changeHead(account: account, on: connection, logger: logger)
                let cleared = try await Self.orders(account: account, status: nil, on: connection, logger: logger)
                try await changes.append(cleared.map { order in
                    .init(kind: .deleted, orderID: order.id, version: order.version, body: nil, after: nil,
                          before: OrderChange.Fields(status: order.status, storeID: order.storeID, courierID: order.courierID))
                }, at: now, on: connection, logger: logger)
                for table in ["orderlive_order", "orderlive_tombstone", "orderlive_job", "orderlive_stream_cursor",
                              "orderlive_dedupe_key", "orderlive_dead_letter"] {
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "DELETE FROM \(table) WHERE account = $1", binds: Self.binds(account)),
                        logger: logger)
                }
                try await connection.query(
                    "DELETE FROM orderlive_order_change WHERE account = \(account) AND seq <= \(previousHead)", logger: logger)
                try await connection.query(
                    "UPDATE orderlive_change_log SET floor = \(changes.last ?? previousHead) WHERE account = \(account)",
                    logger: logger)
            }
            try await connection.query("""
                INSERT INTO orderlive_owner (account, user_id, since) VALUES (\(account), \(userID), \(now))
                ON CONFLICT (account) DO UPDATE SET user_id = excluded.user_id, since = excluded.since
                """, logger: logger)
            try await changes.notify(on: connection, logger: logger)
            return (current != nil, changes.last)
        }
        if let last { changesCommitted(last) }
        return cleared
    }

    /// Deletes every row of this account (`logout --wipe`): orders, tombstones, journal, cursor,
    /// dedupe keys, dead letters, owner and change log. Returns how many rows went.
    public func wipeAccount() async throws -> Int {
        let account = self.account
        let logger = self.logger
        return try await write(journal: true) { connection in
            var removed = 0
            for table in ["orderlive_order", "orderlive_tombstone", "orderlive_job", "orderlive_stream_cursor",
                          "orderlive_dedupe_key", "orderlive_dead_letter", "orderlive_owner", "orderlive_order_change",
                          "orderlive_job_applied"] {
                for try await count in try await connection.query(PostgresQuery(
                    unsafeSQL: "WITH gone AS (DELETE FROM \(table) WHERE account = $1 RETURNING 1) SELECT COUNT(*) FROM gone",
                    binds: Self.binds(account)), logger: logger).decode(Int64.self) {
                    removed += Int(clamping: count)
                }
            }
            return removed
        }
    }

    /// True when PostgreSQL refused what a statement would store (a data exception, a constraint, a
    /// value over a limit), which another submission of the batch may not share; false for a
    /// connection, a timeout or a full disk, which every submission would meet again.
    static func refusesValue(_ error: PSQLError) -> Bool {
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
        return state.hasPrefix("22") || state.hasPrefix("23") || state.hasPrefix("54")
    }

    /// Takes the account's journal lock for the rest of the transaction.
    static func lockJournal(account: String, on connection: PostgresConnection, logger: Logger) async throws {
        for try await _ in try await connection.execute(LockJournal(account: account), logger: logger) {}
    }

    /// Queues `account:` on the jobs channel, delivered at commit: the leader's executor wakes.
    static func notifyJobs(account: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_notify(\(jobChannel), \(account + ":"))", logger: logger)
    }

    static func binds(_ text: String) -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(text)
        return bindings
    }

    /// Journals `jobs` in order; for each, whether it was journaled (false: it collapsed into a
    /// pending job). Each run of upsert and delete jobs is one statement, whatever its length; fetch
    /// and full-sync jobs, which collapse into or clear pending ones, go one at a time between them.
    static func insertAll(
        _ jobs: [NewJob], account: String, at now: Double, on connection: PostgresConnection, logger: Logger
    ) async throws -> [Bool] {
        var journaled: [Bool] = []
        journaled.reserveCapacity(jobs.count)
        var index = jobs.startIndex
        while index < jobs.endIndex {
            var end = index
            while end < jobs.endIndex, jobs[end].kind == .upsert || jobs[end].kind == .delete { end += 1 }
            if end - index > 1 {
                try await insertRun(jobs[index..<end], account: account, at: now, on: connection, logger: logger)
                journaled.append(contentsOf: repeatElement(true, count: end - index))
                index = end
            } else {
                journaled.append(try await insert(jobs[index], account: account, at: now, on: connection, logger: logger))
                index += 1
            }
        }
        return journaled
    }

    /// Inserts upsert and delete jobs (which never collapse) in one statement, ids in their order.
    private static func insertRun(
        _ jobs: ArraySlice<NewJob>, account: String, at now: Double, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await writeJournal(
            keyIDs: [], keyResponses: [], jobs: jobs, wake: false, account: account, at: now, on: connection,
            logger: logger)
    }

    /// Writes dedupe keys, then upsert and delete jobs in their order, and wakes the executor when
    /// `wake`, in one prepared statement (``WriteJournal``), read to its end: the inserts finish
    /// after its row is sent, and a failure of theirs follows it.
    private static func writeJournal(
        keyIDs: [String], keyResponses: [String], jobs: some Collection<NewJob>, wake: Bool, account: String,
        at now: Double, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let write = WriteJournal(
            account: account, now: now, keyIDs: keyIDs, keyResponses: keyResponses, jobs: JobColumns(jobs),
            channel: jobChannel, notify: wake)
        for try await _ in try await connection.execute(write, logger: logger) {}
    }

    /// Journals one job inside a transaction, collapsing as the SQLite engine does: pending fetches
    /// of one order become one (its version bound raised); a full sync makes pending fetches
    /// redundant. False when the job collapsed into a pending one.
    static func insert(
        _ job: NewJob, account: String, at now: Double, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        if job.kind == .fetch, let orderID = job.orderID {
            var pending: (id: Int64, version: Int64?)?
            for try await (id, version) in try await connection.query("""
                SELECT id, version FROM orderlive_job
                WHERE account = \(account) AND kind = \(JobKind.fetch.rawValue) AND order_id = \(orderID) AND attempts = 0
                ORDER BY id LIMIT 1
                """, logger: logger).decode((Int64, Int64?).self) {
                pending = (id, version)
            }
            if let pending {
                if let version = job.version {
                    let raised = max(pending.version ?? version, version)
                    try await connection.query(
                        "UPDATE orderlive_job SET version = \(raised) WHERE id = \(pending.id)", logger: logger)
                }
                return false
            }
        }
        if job.kind == .fullSync {
            try await connection.query(
                "DELETE FROM orderlive_job WHERE account = \(account) AND kind = \(JobKind.fetch.rawValue) AND attempts = 0",
                logger: logger)
        }
        let order = job.order
        try await connection.query("""
            INSERT INTO orderlive_job (account, kind, order_id, version, payload, source, attempts, not_before,
                                       last_error, created_at, status, store_id, courier_id, updated_at)
            VALUES (\(account), \(job.kind.rawValue), \(job.orderID ?? order?.id), \(order?.version ?? job.version),
                    \(order?.body), \(job.source), 0, 0, NULL, \(now), \(order?.status), \(order?.storeID),
                    \(order?.courierID), \(order?.updatedAt))
            """, logger: logger)
        return true
    }

    static func insert(
        _ letter: DeadLetterRecord, account: String, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query("""
            INSERT INTO orderlive_dead_letter (account, kind, order_id, raw, reason, attempts, created_at)
            VALUES (\(account), \(letter.kind), \(letter.orderID), \(letter.raw), \(letter.reason),
                    \(Int64(letter.attempts)), \(letter.createdAt))
            """, logger: logger)
    }

    private static func acceptedResponse(
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

    private static func remember(
        _ key: String, response: String, account: String, at now: Double, on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await connection.query("""
            INSERT INTO orderlive_dedupe_key (account, id, response, accepted_at) VALUES (\(account), \(key), \(response), \(now))
            ON CONFLICT (account, id) DO UPDATE SET response = excluded.response, accepted_at = excluded.accepted_at
            """, logger: logger)
    }
}

/// New jobs as the columns of one `unnest`, a NULL mask per row (PostgresNIO binds no arrays that
/// hold NULLs): bit 1 order id, 2 version, 4 payload, 8 status, 16 store, 32 courier, 64 updated at.
struct JobColumns {
    var kinds: [String] = [], sources: [String] = []
    var orderIDs: [String] = [], versions: [Int64] = [], payloads: [String] = []
    var statuses: [String] = [], storeIDs: [String] = [], courierIDs: [String] = [], updatedAts: [String] = []
    var masks: [Int32] { nullable.masks }
    private var nullable = NullableColumns()

    init(_ jobs: some Collection<NewJob>) {
        for job in jobs {
            let order = job.order
            kinds.append(job.kind.rawValue)
            sources.append(job.source)
            nullable.add(job.orderID ?? order?.id, to: &orderIDs, empty: "")
            nullable.add(order?.version ?? job.version, to: &versions, empty: 0)
            nullable.add(order?.body, to: &payloads, empty: "")
            nullable.add(order?.status, to: &statuses, empty: "")
            nullable.add(order?.storeID, to: &storeIDs, empty: "")
            nullable.add(order?.courierID, to: &courierIDs, empty: "")
            nullable.add(order?.updatedAt, to: &updatedAts, empty: "")
            nullable.endRow()
        }
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
                switch DedupeEntry.verdict(request: stored, fingerprint: submission.requestFingerprint) {
                case .duplicate(let response): decisions.append(.decided(.duplicate(response: response)))
                case .conflict: decisions.append(.decided(.conflict(key: key)))
                }
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
                    let entry: String
                    switch DedupeEntry.verdict(notification: known[key], fingerprint: part.fingerprint) {
                    case .duplicate:
                        duplicates += 1
                        continue
                    case .new(let new):
                        entry = new
                    case .reused(let new):
                        reused += 1
                        entry = new
                    }
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
    func outcomes(journaled: [Bool]) -> [SubmissionOutcome] {
        decisions.map { decision in
            switch decision {
            case .decided(let outcome):
                return outcome
            case .accepting(let range, let duplicates, let reused):
                return .accepted(jobs: journaled[range].count { $0 }, duplicateParts: duplicates, reusedParts: reused)
            }
        }
    }
}
