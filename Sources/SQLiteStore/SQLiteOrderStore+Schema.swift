import GRDB
import StoreModel

/// The schema: migrations are frozen history with string table names (STYLE 11).
extension SQLiteOrderStore {
    /// Frozen history: never edit a shipped migration, add a new one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        registerFirstSchema(in: &migrator)
        registerJournalAndHealthMigrations(in: &migrator)
        registerWebhookAndIndexMigrations(in: &migrator)
        return migrator
    }

    /// v1: orders, tombstones, the journal, dead letters, dedupe keys and the stream cursor.
    private static func registerFirstSchema(in migrator: inout DatabaseMigrator) {
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
    }

    /// v2–v5: the job's order columns, the change log, the health probe, dead letters' origin.
    private static func registerJournalAndHealthMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2-job-order-columns") { db in
            // Upsert jobs carry the order's indexed fields, so applying them parses no JSON.
            try db.execute(sql: """
                ALTER TABLE job ADD COLUMN status TEXT;
                ALTER TABLE job ADD COLUMN store_id TEXT;
                ALTER TABLE job ADD COLUMN courier_id TEXT;
                ALTER TABLE job ADD COLUMN updated_at TEXT;
                """)
        }
        migrator.registerMigration("v3-order-change") { db in
            // The change log of the orders API (DESIGN §11). `change_log.floor` is the seq at and below
            // which no subscriber can resume: a random start for each database, raised at a user switch.
            try db.execute(sql: """
                CREATE TABLE order_change (
                    seq INTEGER PRIMARY KEY NOT NULL,
                    order_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    version INTEGER,
                    body TEXT,
                    at REAL NOT NULL,
                    status TEXT,
                    store_id TEXT,
                    courier_id TEXT,
                    before_status TEXT,
                    before_store_id TEXT,
                    before_courier_id TEXT
                );
                CREATE TABLE change_log (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    floor INTEGER NOT NULL
                );
                """)
            try db.execute(sql: "INSERT INTO change_log (id, floor) VALUES (1, ?)", arguments: [randomBase()])
        }
        migrator.registerMigration("v4-health-probe") { db in
            // Where the write probe (``SQLiteOrderStore/probeWrite()``) grows the file and gives the room back,
            // so an unwritable store is noticed writable again with nothing else written.
            try db.execute(sql: "CREATE TABLE health_probe (id INTEGER PRIMARY KEY, filler BLOB NOT NULL)")
        }
        migrator.registerMigration("v5-dead-letter-origin") { db in
            // What `orderlive dead-letters` shows and a retry needs: when the job was first journaled,
            // and the version it asked for.
            try db.execute(sql: "ALTER TABLE dead_letter ADD COLUMN first_attempt_at REAL")
            try db.execute(sql: "ALTER TABLE dead_letter ADD COLUMN version INTEGER")
        }
    }

    /// v6–v11: outgoing webhooks, the orders API's indexes, the webhook revision, bodies kept once, trace
    /// contexts, webhook delivery options.
    private static func registerWebhookAndIndexMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v6-webhooks") { db in
            // Outgoing webhooks (DESIGN §13): each endpoint's cursor in the change log, which is the outbox.
            try db.execute(sql: """
                CREATE TABLE webhook_endpoint (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    url TEXT NOT NULL,
                    secret TEXT NOT NULL,
                    events TEXT NOT NULL DEFAULT '',
                    store_ids TEXT NOT NULL DEFAULT '',
                    enabled INTEGER NOT NULL DEFAULT 1,
                    disabled_reason TEXT,
                    cursor INTEGER NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at REAL NOT NULL DEFAULT 0,
                    last_error TEXT,
                    last_error_at REAL,
                    last_success_at REAL,
                    created_at REAL NOT NULL,
                    previous_secret TEXT,
                    rotated_at REAL
                )
                """)
        }
        migrator.registerMigration("v7-order-indexes") { db in
            // DESIGN §9: every order change paid for five b-trees. The store and courier indexes served
            // only the orders API's filtered reads, which sort the whole result anyway and, without them,
            // scan the orders once (20-40 ms at 100,000, less than the unfiltered read the board makes);
            // each cost a push about 11,700 instructions. The status index stays: a status filter picks
            // a few active orders out of many, 20 ms scanned against nothing indexed.
            try db.execute(sql: "DROP INDEX order_store_id; DROP INDEX order_courier_id")
        }
        migrator.registerMigration("v8-webhook-revision") { db in
            // DESIGN §13: a replay or an enable moves the revision on, so the deliverer's next store of its
            // cursor (a compare-and-set) sees the move even when it left the cursor where it was.
            try db.execute(sql: "ALTER TABLE webhook_endpoint ADD COLUMN revision INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v9-order-body-change") { db in
            // DESIGN §9: a full sync's change of an order new to the store does not copy the body; the
            // order's row stands in for it (`body_change` is the change's seq) until the row next
            // changes or goes, when the body is copied into the change first.
            try db.execute(sql: #"ALTER TABLE "order" ADD COLUMN body_change INTEGER"#)
        }
        migrator.registerMigration("v10-trace-context") { db in
            // DESIGN §14: the trace of the push or event that journaled a job, so its apply joins it,
            // kept on the changes the job makes, so their webhook attempts continue it.
            try db.execute(sql: "ALTER TABLE job ADD COLUMN trace_context TEXT")
            try db.execute(sql: "ALTER TABLE order_change ADD COLUMN trace_context TEXT")
        }
        migrator.registerMigration("v11-webhook-delivery-options") { db in
            // DESIGN §14: how each endpoint is sent its changes (in flight, batches, rate, headers, client
            // certificate) as one JSON document; '{}' is the original one change at a time.
            try db.execute(sql: "ALTER TABLE webhook_endpoint ADD COLUMN delivery TEXT NOT NULL DEFAULT '{}'")
        }
    }
}
