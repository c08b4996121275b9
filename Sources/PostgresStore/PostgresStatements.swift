import Logging
import PostgresNIO

// The statements every push batch and every apply runs, prepared once per connection: PostgresNIO
// names each after its type and prepares it on the connection's first use, and PostgreSQL parses
// and plans it once instead of at every call (the push batch's two statements were a fifth of the
// server's planning time, docs/PERFORMANCE.md). Statements that run rarely, or whose text depends
// on their arguments, stay unprepared.
//
// Behind PgBouncer in transaction pooling mode, named prepared statements need PgBouncer 1.21 or
// later with `max_prepared_statements` set (README, "PostgreSQL").

/// A prepared statement whose one argument is the account.
protocol AccountStatement: PostgresPreparedStatement {
    var account: String { get }
}

extension AccountStatement {
    func makeBindings() -> PostgresBindings { .of(account) }
}

extension PostgresBindings {
    /// The bindings `$1`, `$2`, … of a prepared statement, in order.
    static func of<each Value: PostgresDynamicTypeEncodable>(_ values: repeat each Value) -> PostgresBindings {
        var bindings = PostgresBindings()
        repeat bindings.append(each values)
        return bindings
    }
}

/// The account's journal lock, held until the transaction ends.
struct LockJournal: AccountStatement {
    static let sql = "SELECT true FROM pg_advisory_xact_lock(hashtextextended($1, 1))"
    typealias Row = Bool
    let account: String

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
}

/// The fence: the account's epoch, read under a share lock that a takeover's increment must wait for.
struct ReadEpoch: AccountStatement {
    static let sql = "SELECT epoch FROM orderlive_leadership WHERE account = $1 FOR SHARE"
    typealias Row = Int64
    let account: String

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
}

/// Whether a push batch's read (``ReadDepthAndKeys``) also reads the account's epoch.
protocol EpochReading: Sendable {
    /// The read's fourth column.
    static var epochColumn: String { get }
}

/// A follower's (or a deposed leader's) read: no epoch, and no share lock on the fence.
enum WithoutEpoch: EpochReading {
    static var epochColumn: String { "NULL::bigint" }
}

/// The fenced leader's read: the account's epoch, read under the share lock of the fence
/// (``ReadEpoch``) in the same round trip. A batch that finds the journal empty and the epoch still
/// this agent's is applied in place (``ImmediateApply``); a takeover's increment waits for its commit.
enum WithEpoch: EpochReading {
    static var epochColumn: String { "(SELECT epoch FROM orderlive_leadership WHERE account = $1 FOR SHARE)" }
}

/// A push batch's read: the journal's depth, counted up to `limit`, the responses of `keys`
/// accepted since `since` (each key looked up on its own, as ``ReadAppliedRows`` does its rows), and
/// the epoch when `Epoch` is ``WithEpoch``.
struct ReadDepthAndKeys<Epoch: EpochReading>: PostgresPreparedStatement {
    static var sql: String {
        """
        SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM orderlive_job WHERE account = $1 LIMIT $2) AS j),
               k.ids, k.responses, \(Epoch.epochColumn)
        FROM (SELECT COALESCE(array_agg(d.id), '{}') AS ids, COALESCE(array_agg(d.response), '{}') AS responses
              FROM unnest($3::text[]) AS n(id)
              CROSS JOIN LATERAL (SELECT id, response FROM orderlive_dedupe_key
                                  WHERE account = $1 AND id = n.id AND accepted_at >= $4) AS d) AS k
        """
    }
    typealias Row = (Int64, [String], [String], Int64?)
    let account: String
    let limit: Int64
    let keys: [String]
    let since: Double

    func makeBindings() -> PostgresBindings { .of(account, limit, keys, since) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// The common table expression `keys` of ``WriteJournal`` and ``WriteApplied``: the dedupe keys
/// `$3` with their responses `$4`, accepted at `$2` for the account `$1`.
let keysWritten = """
    keys AS (
            INSERT INTO orderlive_dedupe_key (account, id, response, accepted_at)
            SELECT $1, id, response, $2 FROM unnest($3::text[], $4::text[]) AS k(id, response)
            ON CONFLICT (account, id) DO UPDATE SET response = excluded.response, accepted_at = excluded.accepted_at
        )
    """

/// Journal rows: new dedupe keys, upsert and delete jobs in journal order (one `unnest` with a NULL
/// mask per row, ``JobColumns``), and the executor's wake-up when `notify` (a push batch writes all
/// three; a stream batch's run of jobs only the jobs). One row; the caller reads it to the end,
/// since the inserts finish after it is sent and a failure of theirs arrives behind it.
struct WriteJournal: PostgresPreparedStatement {
    static let sql = """
        WITH \(keysWritten), jobs AS (
            INSERT INTO orderlive_job (account, kind, order_id, version, payload, source, attempts, not_before,
                                       last_error, created_at, status, store_id, courier_id, updated_at, trace_context)
            SELECT $1, kind, CASE WHEN mask & 1 <> 0 THEN order_id END, CASE WHEN mask & 2 <> 0 THEN version END,
                   CASE WHEN mask & 4 <> 0 THEN payload END, source, 0, 0, NULL, $2,
                   CASE WHEN mask & 8 <> 0 THEN status END, CASE WHEN mask & 16 <> 0 THEN store_id END,
                   CASE WHEN mask & 32 <> 0 THEN courier_id END, CASE WHEN mask & 64 <> 0 THEN updated_at END,
                   CASE WHEN mask & 128 <> 0 THEN trace_context END
            FROM unnest($5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[],
                        $12::text[], $13::text[], $14::text[], $15::int4[])
                 WITH ORDINALITY AS job(kind, order_id, version, payload, source, status, store_id, courier_id,
                                        updated_at, trace_context, mask, n)
            ORDER BY n
        )
        SELECT COUNT(*) FROM (SELECT pg_notify($16, $17) WHERE $18) AS wake
        """
    typealias Row = Int64
    let account: String
    let now: Double
    let keyIDs: [String]
    let keyResponses: [String]
    let jobs: JobColumns
    let channel: String
    let notify: Bool

    func makeBindings() -> PostgresBindings {
        .of(account, now, keyIDs, keyResponses, jobs.kinds, jobs.orderIDs, jobs.versions, jobs.payloads, jobs.sources,
            jobs.statuses, jobs.storeIDs, jobs.courierIDs, jobs.updatedAts, jobs.traceContexts, jobs.masks, channel, account + ":",
            notify)
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
}

extension PostgresConnection {
    /// Runs `statement`'s text as an unnamed statement, planned for its own arguments at every call,
    /// and reads its rows. For a statement whose best plan depends on how big its tables are now: a
    /// prepared one is planned generically after five calls, and a plan made while a table was
    /// analyzed empty keeps scanning it as it grows (PostgresAppliedStatements.swift).
    func executeUnprepared<Statement: PostgresPreparedStatement>(
        _ statement: Statement, logger: Logger
    ) async throws -> [Statement.Row] {
        var rows: [Statement.Row] = []
        let query = PostgresQuery(unsafeSQL: Statement.sql, binds: try statement.makeBindings())
        for try await row in try await self.query(query, logger: logger) { rows.append(try statement.decodeRow(row)) }
        return rows
    }
}
