import Foundation
import GRDB

/// What applying an upsert did.
public enum UpsertOutcome: Sendable, Hashable {
    /// Inserted or replaced.
    case applied
    /// The stored order (or its tombstone) is as new or newer: nothing changed.
    case stale
}

/// What applying a delete did.
public enum DeleteOutcome: Sendable, Hashable {
    /// The order was removed and a tombstone kept.
    case deleted
    /// The stored order is newer than the delete: nothing changed.
    case stale
    /// There was no such order; the tombstone is kept so an older upsert cannot bring it back.
    case absent
}

/// Counts for `status`.
public struct StoreCounts: Sendable, Hashable {
    /// Stored orders.
    public var orders: Int
    /// Jobs in the journal.
    public var journalDepth: Int
    /// When the oldest journaled job was created, Unix seconds.
    public var oldestJobCreatedAt: Double?
    /// Dead letters.
    public var deadLetters: Int
}

/// How durable each commit is.
public enum StoreDurability: String, Sendable, Hashable, CaseIterable {
    /// `synchronous=NORMAL` in WAL mode: survives a process crash.
    case normal
    /// `synchronous=FULL`: also survives a power loss.
    case full
}

/// The process's one owner of `orderlive.sqlite`. Other processes may read it at any time (WAL).
public final class OrderStore: Sendable {
    /// The database file.
    public let path: String
    let pool: DatabasePool
    let now: @Sendable () -> Double

    /// Opens (creating and migrating) the database at `path`.
    /// `busyTimeout` is how long a write waits for another process's lock before failing (then the
    /// job stays journaled and is tried again).
    public init(
        path: String, durability: StoreDurability = .normal, busyTimeout: Double = 5,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) throws {
        self.path = path
        self.now = now
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
        if durability == .full {
            // GRDB sets NORMAL on its writer after opening (STACK-NOTES); FULL must be set afterwards.
            try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        }
    }

    /// Frozen history: never edit a shipped migration, add a new one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE "order" (
                    id TEXT PRIMARY KEY NOT NULL,
                    status TEXT NOT NULL,
                    store_id TEXT,
                    courier_id TEXT,
                    version INTEGER,
                    updated_at TEXT,
                    body TEXT NOT NULL,
                    applied_at REAL NOT NULL
                );
                CREATE INDEX order_status ON "order"(status);
                CREATE INDEX order_store_id ON "order"(store_id);
                CREATE INDEX order_courier_id ON "order"(courier_id);
                CREATE TABLE tombstone (
                    id TEXT PRIMARY KEY NOT NULL,
                    version INTEGER,
                    updated_at TEXT,
                    deleted_at REAL NOT NULL
                );
                CREATE TABLE job (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    kind TEXT NOT NULL,
                    order_id TEXT,
                    version INTEGER,
                    payload TEXT,
                    source TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    not_before REAL NOT NULL DEFAULT 0,
                    last_error TEXT,
                    created_at REAL NOT NULL
                );
                CREATE INDEX job_order_id ON job(order_id);
                CREATE TABLE stream_cursor (
                    id TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL,
                    updated_at REAL NOT NULL
                );
                CREATE TABLE dedupe_key (
                    id TEXT PRIMARY KEY NOT NULL,
                    response TEXT NOT NULL,
                    accepted_at REAL NOT NULL
                );
                CREATE TABLE dead_letter (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    kind TEXT NOT NULL,
                    order_id TEXT,
                    raw TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    created_at REAL NOT NULL
                );
                CREATE TABLE owner (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    user_id TEXT NOT NULL,
                    since REAL NOT NULL
                );
                """)
        }
        migrator.registerMigration("v2-job-order-columns") { db in
            // Upsert jobs carry the order's indexed fields, so applying them parses no JSON.
            try db.execute(sql: """
                ALTER TABLE job ADD COLUMN status TEXT;
                ALTER TABLE job ADD COLUMN store_id TEXT;
                ALTER TABLE job ADD COLUMN courier_id TEXT;
                ALTER TABLE job ADD COLUMN updated_at TEXT;
                """)
        }
        return migrator
    }

    // MARK: Journal

    /// Journals jobs and, in the same transaction, advances the stream cursor (DESIGN §3: the cursor
    /// moves only with the job of its event). Jobs collapse as ``insert(_:at:in:)`` says.
    @discardableResult
    public func journal(_ jobs: [NewJob], cursor: String? = nil, deadLetters: [DeadLetterRecord] = []) throws -> Int {
        let now = self.now()
        return try pool.write { db in
            var journaled = 0
            for job in jobs {
                if try Self.insert(job, at: now, in: db) { journaled += 1 }
            }
            for var letter in deadLetters { try letter.insert(db) }
            if let cursor {
                try db.execute(
                    sql: "INSERT INTO stream_cursor (id, value, updated_at) VALUES ('stream', ?, ?) "
                        + "ON CONFLICT(id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    arguments: [cursor, now])
            }
            return journaled
        }
    }

    /// The stream cursor (`Last-Event-ID`), "" when none.
    public func streamCursor() throws -> String {
        try pool.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM stream_cursor WHERE id = 'stream'") ?? ""
        }
    }

    /// The next job in journal order, if any.
    public func nextJob() throws -> JobRecord? {
        try pool.read { db in try JobRecord.order(Column("id")).fetchOne(db) }
    }

    /// Applies an upsert and completes its job in one transaction (exactly once in effect).
    @discardableResult
    public func applyUpsert(_ order: OrderRecord, completing jobID: Int64? = nil) throws -> UpsertOutcome {
        let now = self.now()
        return try pool.write { db in
            let outcome = try Self.upsert(order, at: now, in: db)
            if let jobID { _ = try JobRecord.deleteOne(db, key: jobID) }
            return outcome
        }
    }

    /// Applies a delete and completes its job in one transaction.
    @discardableResult
    public func applyDelete(orderID: String, version: Int64?, completing jobID: Int64? = nil) throws -> DeleteOutcome {
        let now = self.now()
        return try pool.write { db in
            let outcome = try Self.delete(orderID: orderID, version: version, at: now, in: db)
            if let jobID { _ = try JobRecord.deleteOne(db, key: jobID) }
            return outcome
        }
    }

    private static let headJobsSQL = "SELECT id, kind, order_id, version, payload, source, attempts, not_before, "
        + "last_error, created_at, status, store_id, courier_id, updated_at FROM job ORDER BY id LIMIT ?"

    /// Up to `limit` jobs from the head of the journal, in order.
    public func headJobs(limit: Int) throws -> [JobRecord] {
        // A cached raw statement: the executor asks after every commit, and compiling the query
        // interface's SQL each time showed in the push-ingest profile.
        try pool.read { db in
            let statement = try db.cachedStatement(sql: Self.headJobsSQL)
            return try JobRecord.fetchAll(statement, arguments: [limit])
        }
    }

    /// Applies consecutive upsert and delete jobs in one transaction, completing each: the same
    /// effect, in the same order, as applying them one by one. Returns how many were applied.
    @discardableResult
    public func applyInOneTransaction(_ jobs: [JobRecord]) throws -> Int {
        let now = self.now()
        return try pool.write { db in
            var applied: [Int64] = []
            for job in jobs {
                switch job.kind {
                case .upsert:
                    guard let order = job.order else { continue }
                    _ = try Self.upsert(order, at: now, in: db)
                case .delete:
                    guard let id = job.orderID else { continue }
                    _ = try Self.delete(orderID: id, version: job.version, at: now, in: db)
                case .fetch, .fullSync:
                    continue
                }
                if let id = job.id { applied.append(id) }
            }
            // The applied jobs are usually one contiguous run of ids: one range delete instead of one
            // statement per job. Otherwise they are deleted one by one.
            if let first = applied.first, let last = applied.last, Int(last - first) + 1 == applied.count,
               applied == Array(first...last) {
                try db.cachedStatement(sql: "DELETE FROM job WHERE id BETWEEN ? AND ?").execute(arguments: [first, last])
            } else {
                for id in applied { try Self.deleteJob(id, in: db) }
            }
            return applied.count
        }
    }

    /// Upserts one page of a full sync in one transaction (each order by the usual freshness rule).
    public func applyPage(_ orders: [OrderRecord]) throws {
        let now = self.now()
        try pool.write { db in
            for order in orders { _ = try Self.upsert(order, at: now, in: db) }
        }
    }

    /// Ends a full sync whose every page succeeded: local orders the backend no longer returned are
    /// deleted (with tombstones), and the job completes, in one transaction. Returns how many went.
    @discardableResult
    public func completeFullSync(keeping ids: Set<String>, completing jobID: Int64?) throws -> Int {
        let now = self.now()
        return try pool.write { db in
            var removed = 0
            for order in try OrderRecord.fetchAll(db) where !ids.contains(order.id) {
                _ = try Self.delete(orderID: order.id, version: order.version, at: now, in: db)
                removed += 1
            }
            if let jobID { _ = try JobRecord.deleteOne(db, key: jobID) }
            return removed
        }
    }

    /// Records a failed attempt; the job stays in place and waits until `retryAt`. With
    /// `countsAttempt` false (the job could not run for a reason outside it, such as no session) the
    /// attempt is not counted towards `sync.max_attempts`.
    public func recordFailure(jobID: Int64, reason: String, retryAt: Double, countsAttempt: Bool = true) throws {
        try pool.write { db in
            try db.execute(
                sql: "UPDATE job SET attempts = attempts + ?, last_error = ?, not_before = ? WHERE id = ?",
                arguments: [countsAttempt ? 1 : 0, reason, retryAt, jobID])
        }
    }

    /// Moves a job that keeps failing to the dead letters, in one transaction.
    public func deadLetter(job: JobRecord, reason: String) throws {
        let now = self.now()
        try pool.write { db in
            var letter = DeadLetterRecord(
                kind: job.kind.rawValue, orderID: job.orderID, raw: job.payload ?? "", reason: reason,
                attempts: job.attempts, createdAt: now)
            try letter.insert(db)
            if let id = job.id { _ = try JobRecord.deleteOne(db, key: id) }
        }
    }

    // MARK: Reading

    /// Stored orders sorted by id (numeric ids numerically), optionally of one status.
    public func orders(status: String? = nil) throws -> [OrderRecord] {
        try pool.read { db in
            var request = OrderRecord.all()
            if let status { request = request.filter(Column("status") == status) }
            return try request.order(sql: "length(id), id").fetchAll(db)
        }
    }

    /// One order, if stored.
    public func order(id: String) throws -> OrderRecord? {
        try pool.read { db in try OrderRecord.fetchOne(db, key: id) }
    }

    /// The tombstone of an order, if it was deleted.
    public func tombstone(id: String) throws -> TombstoneRecord? {
        try pool.read { db in try TombstoneRecord.fetchOne(db, key: id) }
    }

    /// Dead letters, oldest first.
    public func deadLetters() throws -> [DeadLetterRecord] {
        try pool.read { db in try DeadLetterRecord.order(Column("id")).fetchAll(db) }
    }

    /// Counts for `status`.
    public func counts() throws -> StoreCounts {
        try pool.read { db in
            StoreCounts(
                orders: try OrderRecord.fetchCount(db),
                journalDepth: try JobRecord.fetchCount(db),
                oldestJobCreatedAt: try Double.fetchOne(db, sql: "SELECT MIN(created_at) FROM job"),
                deadLetters: try DeadLetterRecord.fetchCount(db))
        }
    }

    // MARK: Ownership

    /// The user the data belongs to.
    public func owner() throws -> String? {
        try pool.read { db in try String.fetchOne(db, sql: "SELECT user_id FROM owner WHERE id = 1") }
    }

    /// Makes `userID` the owner. A different user's orders, tombstones, journal, cursor and dedupe keys
    /// are cleared first, in the same transaction (FIELD-NOTES 15); the same user keeps everything.
    /// Returns true when a previous user's data was cleared.
    @discardableResult
    public func claim(for userID: String) throws -> Bool {
        let now = self.now()
        return try pool.write { db in
            let current = try String.fetchOne(db, sql: "SELECT user_id FROM owner WHERE id = 1")
            if current == userID { return false }
            if current != nil {
                for table in ["\"order\"", "tombstone", "job", "stream_cursor", "dedupe_key", "dead_letter"] {
                    try db.execute(sql: "DELETE FROM \(table)")
                }
            }
            try db.execute(
                sql: "INSERT INTO owner (id, user_id, since) VALUES (1, ?, ?) "
                    + "ON CONFLICT(id) DO UPDATE SET user_id = excluded.user_id, since = excluded.since",
                arguments: [userID, now])
            return current != nil
        }
    }

    // MARK: Rules, inside a transaction

    /// DESIGN §8: apply only if newer; a tombstone stops an older upsert from resurrecting an order.
    static func upsert(_ incoming: OrderRecord, at now: Double, in db: Database) throws -> UpsertOutcome {
        var order = incoming
        order.appliedAt = now
        // Hot path: cached raw statements, not query-interface requests built for every row.
        let currentRow = try Row.fetchOne(
            db.cachedStatement(sql: #"SELECT version, updated_at FROM "order" WHERE id = ?"#), arguments: [order.id])
        if let currentRow {
            let current = OrderFreshness(version: currentRow[0], updatedAt: currentRow[1])
            if !order.freshness.isNewer(than: current) { return .stale }
        } else if let tombstone = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT version, updated_at FROM tombstone WHERE id = ?"), arguments: [order.id]) {
            guard order.freshness.isNewer(than: OrderFreshness(version: tombstone[0], updatedAt: tombstone[1])) else {
                return .stale
            }
            try db.cachedStatement(sql: "DELETE FROM tombstone WHERE id = ?").execute(arguments: [order.id])
        }
        try db.cachedStatement(sql: """
            INSERT INTO "order" (id, status, store_id, courier_id, version, updated_at, body, applied_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET status = excluded.status, store_id = excluded.store_id,
                courier_id = excluded.courier_id, version = excluded.version, updated_at = excluded.updated_at,
                body = excluded.body, applied_at = excluded.applied_at
            """).execute(arguments: [
                order.id, order.status, order.storeID, order.courierID, order.version, order.updatedAt, order.body,
                order.appliedAt,
            ])
        return .applied
    }

    /// Journals one job inside a transaction. Pending fetches of one order collapse into one (its
    /// version bound raised); a full sync makes the pending fetches before it redundant. Returns
    /// false when the job collapsed into a pending one.
    static func insert(_ job: NewJob, at now: Double, in db: Database) throws -> Bool {
        if job.kind == .fetch, let orderID = job.orderID,
           var pending = try JobRecord.filter(Column("kind") == JobKind.fetch.rawValue
                && Column("order_id") == orderID && Column("attempts") == 0).fetchOne(db) {
            if let version = job.version { pending.version = max(pending.version ?? version, version) }
            try pending.update(db)
            return false
        }
        if job.kind == .fullSync {
            try JobRecord.filter(Column("kind") == JobKind.fetch.rawValue && Column("attempts") == 0).deleteAll(db)
        }
        let order = job.order
        try db.cachedStatement(sql: """
            INSERT INTO job (kind, order_id, version, payload, source, attempts, not_before, last_error,
                             created_at, status, store_id, courier_id, updated_at)
            VALUES (?, ?, ?, ?, ?, 0, 0, NULL, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                job.kind.rawValue, job.orderID ?? order?.id, order?.version ?? job.version, order?.body,
                job.source, now, order?.status, order?.storeID, order?.courierID, order?.updatedAt,
            ])
        return true
    }

    static func deleteJob(_ id: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM job WHERE id = ?").execute(arguments: [id])
    }

    static func delete(orderID: String, version: Int64?, at now: Double, in db: Database) throws -> DeleteOutcome {
        let incoming = OrderFreshness(version: version, updatedAt: nil)
        let current = try OrderRecord.fetchOne(db, key: orderID)
        if let current, let version, let currentVersion = current.version, version < currentVersion {
            return .stale
        }
        var tombstone = TombstoneRecord(
            id: orderID, version: version ?? current?.version, updatedAt: current?.updatedAt, deletedAt: now)
        if let existing = try TombstoneRecord.fetchOne(db, key: orderID), !incoming.isNewer(than: existing.freshness),
           existing.version != nil {
            tombstone = existing
        }
        try tombstone.save(db)
        guard current != nil else { return .absent }
        _ = try OrderRecord.deleteOne(db, key: orderID)
        return .deleted
    }
}
