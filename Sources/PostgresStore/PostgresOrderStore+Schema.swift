import Logging
import StoreModel
import PostgresNIO
import AsyncSignals

/// The schema: versioned migrations, frozen once released (never edit one, add the next), applied by
/// whichever agent starts first while it holds the migration lock; the others wait and find them done.
extension PostgresOrderStore {
    /// One migration: its version and its statements, run in one transaction.
    struct Migration: Sendable {
        var version: String
        var statements: [String]
    }

    /// Frozen history. Tables are prefixed so the store can share a database with other software;
    /// every table is keyed by account; JSON bodies are `text`, exactly as received.
    static let migrations: [Migration] = [
        Migration(version: "1", statements: [
            """
            CREATE TABLE orderlive_order (
                account text NOT NULL, id text NOT NULL, status text NOT NULL, store_id text, courier_id text,
                version bigint, updated_at text, body text NOT NULL, applied_at double precision NOT NULL,
                PRIMARY KEY (account, id))
            """,
            "CREATE INDEX orderlive_order_status ON orderlive_order (account, status)",
            "CREATE INDEX orderlive_order_store_id ON orderlive_order (account, store_id)",
            "CREATE INDEX orderlive_order_courier_id ON orderlive_order (account, courier_id)",
            """
            CREATE TABLE orderlive_tombstone (
                account text NOT NULL, id text NOT NULL, version bigint, updated_at text,
                deleted_at double precision NOT NULL, PRIMARY KEY (account, id))
            """,
            """
            CREATE TABLE orderlive_job (
                id bigserial PRIMARY KEY, account text NOT NULL, kind text NOT NULL, order_id text, version bigint,
                payload text, source text NOT NULL, attempts bigint NOT NULL DEFAULT 0,
                not_before double precision NOT NULL DEFAULT 0, last_error text, created_at double precision NOT NULL,
                status text, store_id text, courier_id text, updated_at text)
            """,
            "CREATE INDEX orderlive_job_account ON orderlive_job (account, id)",
            "CREATE INDEX orderlive_job_order_id ON orderlive_job (account, order_id)",
            """
            CREATE TABLE orderlive_stream_cursor (
                account text PRIMARY KEY, value text NOT NULL, updated_at double precision NOT NULL)
            """,
            """
            CREATE TABLE orderlive_dedupe_key (
                account text NOT NULL, id text NOT NULL, response text NOT NULL,
                accepted_at double precision NOT NULL, PRIMARY KEY (account, id))
            """,
            "CREATE INDEX orderlive_dedupe_key_accepted_at ON orderlive_dedupe_key (account, accepted_at)",
            """
            CREATE TABLE orderlive_dead_letter (
                id bigserial PRIMARY KEY, account text NOT NULL, kind text NOT NULL, order_id text, raw text NOT NULL,
                reason text NOT NULL, attempts bigint NOT NULL, created_at double precision NOT NULL)
            """,
            "CREATE INDEX orderlive_dead_letter_account ON orderlive_dead_letter (account, id)",
            """
            CREATE TABLE orderlive_owner (
                account text PRIMARY KEY, user_id text NOT NULL, since double precision NOT NULL)
            """,
            """
            CREATE TABLE orderlive_order_change (
                account text NOT NULL, seq bigint NOT NULL, order_id text NOT NULL, kind text NOT NULL,
                version bigint, body text, at double precision NOT NULL, status text, store_id text, courier_id text,
                before_status text, before_store_id text, before_courier_id text, PRIMARY KEY (account, seq))
            """,
            "CREATE TABLE orderlive_change_log (account text PRIMARY KEY, floor bigint NOT NULL)",
            """
            CREATE TABLE orderlive_leadership (
                account text PRIMARY KEY, epoch bigint NOT NULL, leader text NOT NULL,
                since double precision NOT NULL)
            """,
        ]),
        // Which epoch applied each job: the failover record behind "no job applied under two epochs"
        // (DESIGN §12). Not unique on the job: a second apply, were the fence ever to fail, must be
        // recorded to be seen, not refused out of sight. Pruned with the change log.
        Migration(version: "2", statements: [
            """
            CREATE TABLE orderlive_job_applied (
                account text NOT NULL, job_id bigint NOT NULL, epoch bigint, applied_at double precision NOT NULL)
            """,
            "CREATE INDEX orderlive_job_applied_job ON orderlive_job_applied (account, job_id)",
        ]),
        // What `orderlive dead-letters` shows and a retry needs: when the job was first journaled,
        // and the version it asked for.
        Migration(version: "3", statements: [
            "ALTER TABLE orderlive_dead_letter ADD COLUMN first_attempt_at double precision, ADD COLUMN version bigint",
        ]),
        Migration(version: "4", statements: [
            // Outgoing webhooks (DESIGN §13): each endpoint's cursor in the change log, which is the outbox.
            """
            CREATE TABLE orderlive_webhook_endpoint (
                id bigserial PRIMARY KEY, account text NOT NULL, url text NOT NULL, secret text NOT NULL,
                events text NOT NULL DEFAULT '', store_ids text NOT NULL DEFAULT '', enabled boolean NOT NULL DEFAULT true,
                disabled_reason text, cursor bigint NOT NULL, attempts bigint NOT NULL DEFAULT 0,
                next_attempt_at double precision NOT NULL DEFAULT 0, last_error text, last_error_at double precision,
                last_success_at double precision, created_at double precision NOT NULL, previous_secret text,
                rotated_at double precision)
            """,
            "CREATE INDEX orderlive_webhook_endpoint_account ON orderlive_webhook_endpoint (account, id)",
        ]),
        // DESIGN §9: the store and courier indexes served only filtered reads of the orders API, which
        // sort their whole result anyway; every order change paid for both. The status index stays.
        Migration(version: "5", statements: [
            "DROP INDEX orderlive_order_store_id",
            "DROP INDEX orderlive_order_courier_id",
        ]),
        // DESIGN §13: a replay or an enable moves the revision on, so the deliverer's next store of its
        // cursor (a compare-and-set) sees the move even when it left the cursor where it was.
        Migration(version: "6", statements: [
            "ALTER TABLE orderlive_webhook_endpoint ADD COLUMN revision bigint NOT NULL DEFAULT 0",
        ]),
        // DESIGN §14: the trace of the push or event that journaled a job, so its apply joins it, kept
        // on the changes the job makes, so their webhook attempts continue it.
        Migration(version: "7", statements: [
            "ALTER TABLE orderlive_job ADD COLUMN trace_context text",
            "ALTER TABLE orderlive_order_change ADD COLUMN trace_context text",
        ]),
        // DESIGN §14: how each endpoint is sent its changes (in flight, batches, rate, headers, client
        // certificate) as one JSON document; '{}' is the original one change at a time.
        Migration(version: "8", statements: [
            "ALTER TABLE orderlive_webhook_endpoint ADD COLUMN delivery text NOT NULL DEFAULT '{}'",
        ]),
        // DESIGN §12 (docs/PERFORMANCE.md "Push ingest on PostgreSQL, fourth pass"): the status index and the
        // dedupe keys' age index led with the account, so for an account the statistics did not know yet (a
        // new account beside others, its first minutes of load) the planner looked a batch's rows and keys up
        // by `account` through them and filtered every order or key of the account by id — 4 and 20 ms a
        // batch at 20,000, under the journal lock. Led by the status and the age, they serve the status
        // filter and the keys' purge as before and cannot serve `account` alone, which only the primary keys
        // (account, id) then do.
        Migration(version: "9", statements: [
            "DROP INDEX orderlive_order_status",
            "CREATE INDEX orderlive_order_status ON orderlive_order (status, account)",
            "DROP INDEX orderlive_dedupe_key_accepted_at",
            "CREATE INDEX orderlive_dedupe_key_accepted_at ON orderlive_dedupe_key (accepted_at, account)",
        ]),
    ]

    /// The key of the advisory lock migrations run under ("orderliv" in ASCII).
    static let migrationLock: Int64 = 0x6F72_6465_726C_6976

    /// Migrates the schema (under the migration lock) and opens this account's rows.
    public func prepare() async throws {
        do {
            try await withLease(preparing: true, within: configuration.longRoundTrip) { [self] connection in
                try await connection.query("SELECT pg_advisory_lock(\(Self.migrationLock))", logger: logger)
                do {
                    try await migrate(on: connection)
                    _ = try await connection.query("SELECT pg_advisory_unlock(\(Self.migrationLock))", logger: logger)
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.migrationLock))", logger: logger)
                    throw error
                }
            }
            try await write(preparing: true) { [self] connection in
                _ = try await connection.query(
                    """
                    INSERT INTO orderlive_change_log (account, floor) VALUES (\(account), \(Self.randomBase()))
                    ON CONFLICT (account) DO NOTHING
                    """,
                    logger: logger)
            }
            prepared.withLock { $0 = true }
        } catch {
            noteWrite(failure: error)
            throw Self.readable(error)
        }
    }

    /// The versions applied, in order.
    package func appliedMigrations() async throws -> [String] {
        try await read { [self] connection in
            var versions: [String] = []
            let rows = try await connection.query(
                "SELECT version FROM orderlive_migration ORDER BY applied_at, version", logger: logger)
            for try await version in rows.decode(String.self) { versions.append(version) }
            return versions
        }
    }

    private func migrate(on connection: PostgresConnection) async throws {
        try await connection.query("""
            CREATE TABLE IF NOT EXISTS orderlive_migration (
                version text PRIMARY KEY, applied_at double precision NOT NULL)
            """, logger: logger)
        var applied = Set<String>()
        for try await version in try await connection.query(
            "SELECT version FROM orderlive_migration", logger: logger).decode(String.self) {
            applied.insert(version)
        }
        for migration in Self.migrations where !applied.contains(migration.version) {
            try await connection.query("BEGIN", logger: logger)
            for statement in migration.statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.query(
                "INSERT INTO orderlive_migration (version, applied_at) VALUES (\(migration.version), \(now()))",
                logger: logger)
            try await connection.query("COMMIT", logger: logger)
            logger.notice("PostgreSQL schema migrated", metadata: ["store.schema_version": "\(migration.version)"])
        }
    }

    /// A random start for each account's seq, so an id from another account or database is told to reset.
    static func randomBase() -> Int64 {
        Int64.random(in: 1...(1 << 20)) << 32
    }
}
