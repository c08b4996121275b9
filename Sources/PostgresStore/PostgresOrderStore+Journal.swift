import Logging
public import StoreModel
import PostgresNIO

/// Writing the journal: the stream's jobs with its cursor, and the statements every journal write
/// shares (DESIGN §3), each in one transaction under the journal lock. Pushes accepted exactly once
/// are +Accept's; the store's owner is +Ownership's.
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
    static func writeJournal(
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
                                       last_error, created_at, status, store_id, courier_id, updated_at, trace_context)
            VALUES (\(account), \(job.kind.rawValue), \(job.orderID ?? order?.id), \(order?.version ?? job.version),
                    \(order?.body), \(job.source), 0, 0, NULL, \(now), \(order?.status), \(order?.storeID),
                    \(order?.courierID), \(order?.updatedAt), \(job.traceContext))
            """, logger: logger)
        return true
    }

    static func insert(
        _ letter: DeadLetterRecord, account: String, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query("""
            INSERT INTO orderlive_dead_letter (account, kind, order_id, raw, reason, attempts, created_at,
                                               first_attempt_at, version)
            VALUES (\(account), \(letter.kind), \(letter.orderID), \(letter.raw), \(letter.reason),
                    \(Int64(letter.attempts)), \(letter.createdAt), \(letter.firstAttemptAt), \(letter.version))
            """, logger: logger)
    }
}

/// New jobs as the columns of one `unnest`, a NULL mask per row (PostgresNIO binds no arrays that
/// hold NULLs): bit 1 order id, 2 version, 4 payload, 8 status, 16 store, 32 courier, 64 updated at,
/// 128 trace context.
struct JobColumns {
    var kinds: [String] = [], sources: [String] = []
    var orderIDs: [String] = [], versions: [Int64] = [], payloads: [String] = []
    var statuses: [String] = [], storeIDs: [String] = [], courierIDs: [String] = [], updatedAts: [String] = []
    var traceContexts: [String] = []
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
            nullable.add(job.traceContext, to: &traceContexts, empty: "")
            nullable.endRow()
        }
    }
}
