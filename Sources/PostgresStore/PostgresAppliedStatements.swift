import PostgresNIO
import StoreModel

// An apply's two statements: the rows it touches read and locked in one round trip, and everything
// it leaves written in one more — the orders, the tombstones, a push batch's dedupe keys, the change
// log numbered after its head and the feed's notification. Each was a round trip of its own (five to
// seven per apply), which on the leader's push path (ImmediateApply) were held under the journal lock
// (docs/PERFORMANCE.md "Push ingest on PostgreSQL, third pass").
//
// Both run unprepared (``PostgresConnection/executeUnprepared(_:logger:)``), planned for their own
// arguments and the tables' sizes now at every call. Prepared, PostgreSQL plans a statement
// generically after five calls, from the tables' statistics: a table analyzed while empty (a new
// database, a new account's first minute) gets a sequential scan for the deletes and the change
// log's head, and a pooled connection keeps that plan while the table grows — the write took 4.2 ms
// a call instead of 0.5 within ten seconds of pushes. Planning costs the server about 0.5 ms for the
// write and 0.15 ms for the read, per batch (docs/PERFORMANCE.md, the same section).

/// The stored rows and tombstones of `ids` (each once), the rows locked `FOR UPDATE` for the rest of
/// the transaction: `true` rows are orders, `false` rows tombstones (status, store and courier null,
/// `deleted_at` set). Each id is looked up on its own (a lateral join): given `account = $1 AND id =
/// ANY($2)`, the planner read an account its statistics still counted as nearly empty (a new
/// account's first minutes of load) as one range of the primary key and filtered every order of it
/// by id — 4 ms a batch at 20,000 orders, under the journal lock (docs/PERFORMANCE.md, its fourth pass).
struct ReadAppliedRows: PostgresPreparedStatement {
    static let sql = """
        SELECT true, o.id, o.version, o.updated_at, o.status, o.store_id, o.courier_id, 0::float8
        FROM unnest($2::text[]) AS k(id)
        CROSS JOIN LATERAL (SELECT id, version, updated_at, status, store_id, courier_id FROM orderlive_order
                            WHERE account = $1 AND id = k.id FOR UPDATE) AS o
        UNION ALL
        SELECT false, t.id, t.version, t.updated_at, NULL, NULL, NULL, t.deleted_at
        FROM unnest($2::text[]) AS k(id)
        CROSS JOIN LATERAL (SELECT id, version, updated_at, deleted_at FROM orderlive_tombstone
                            WHERE account = $1 AND id = k.id) AS t
        """
    typealias Row = (Bool, String, Int64?, String?, String?, String?, String?, Double)
    let account: String
    let ids: [String]

    func makeBindings() -> PostgresBindings { .of(account, ids) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// What an apply leaves, in one statement: dedupe keys (a push batch applied in place; none for the
/// executor), upserted and deleted orders, set and cleared tombstones, and the changes numbered
/// after the change log's head (its last seq, or its floor when it is empty), with the notification
/// PostgreSQL delivers at commit. One row: the last seq appended (null when none) and the
/// notification's count. Each id appears once per table (``AppliedRows`` keeps one final state per
/// order), so no row is written twice; deletions look each id up on its own, as ``ReadAppliedRows``.
struct WriteApplied: PostgresPreparedStatement {
    static let sql = """
        WITH \(keysWritten), upserted AS (
            INSERT INTO orderlive_order (account, id, status, store_id, courier_id, version, updated_at, body, applied_at)
            SELECT $1, id, status, CASE WHEN mask & 1 <> 0 THEN store_id END,
                   CASE WHEN mask & 2 <> 0 THEN courier_id END, CASE WHEN mask & 4 <> 0 THEN version END,
                   CASE WHEN mask & 8 <> 0 THEN updated_at END, body, applied_at
            FROM unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[], $11::text[],
                        $12::float8[], $13::int4[])
                 AS o(id, status, store_id, courier_id, version, updated_at, body, applied_at, mask)
            ON CONFLICT (account, id) DO UPDATE SET status = excluded.status, store_id = excluded.store_id,
                courier_id = excluded.courier_id, version = excluded.version, updated_at = excluded.updated_at,
                body = excluded.body, applied_at = excluded.applied_at
        ), deleted AS (
            DELETE FROM orderlive_order WHERE (account, id) IN (SELECT $1::text, unnest($14::text[]))
        ), tombstoned AS (
            INSERT INTO orderlive_tombstone (account, id, version, updated_at, deleted_at)
            SELECT $1, id, CASE WHEN mask & 1 <> 0 THEN version END, CASE WHEN mask & 2 <> 0 THEN updated_at END,
                   deleted_at
            FROM unnest($15::text[], $16::bigint[], $17::text[], $18::float8[], $19::int4[])
                 AS t(id, version, updated_at, deleted_at, mask)
            ON CONFLICT (account, id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at,
                deleted_at = excluded.deleted_at
        ), cleared AS (
            DELETE FROM orderlive_tombstone WHERE (account, id) IN (SELECT $1::text, unnest($20::text[]))
        ), head AS (
            SELECT COALESCE((SELECT MAX(seq) FROM orderlive_order_change WHERE account = $1),
                            (SELECT floor FROM orderlive_change_log WHERE account = $1), 0) AS seq
        ), appended AS (
            INSERT INTO orderlive_order_change (account, seq, order_id, kind, version, body, at, status, store_id,
                courier_id, before_status, before_store_id, before_courier_id, trace_context)
            SELECT $1, head.seq + c.n, order_id, kind, CASE WHEN mask & 1 <> 0 THEN version END,
                   CASE WHEN mask & 2 <> 0 THEN body END, $2, CASE WHEN mask & 4 <> 0 THEN status END,
                   CASE WHEN mask & 8 <> 0 THEN store_id END, CASE WHEN mask & 16 <> 0 THEN courier_id END,
                   CASE WHEN mask & 32 <> 0 THEN before_status END, CASE WHEN mask & 64 <> 0 THEN before_store_id END,
                   CASE WHEN mask & 128 <> 0 THEN before_courier_id END, CASE WHEN mask & 256 <> 0 THEN trace_context END
            FROM head, unnest($21::text[], $22::text[], $23::bigint[], $24::text[], $25::text[], $26::text[],
                              $27::text[], $28::text[], $29::text[], $30::text[], $31::text[], $32::int4[])
                 WITH ORDINALITY AS c(order_id, kind, version, body, status, store_id, courier_id, before_status,
                                      before_store_id, before_courier_id, trace_context, mask, n)
        )
        SELECT CASE WHEN cardinality($21::text[]) > 0 THEN head.seq + cardinality($21::text[]) END,
               (SELECT COUNT(*) FROM (SELECT pg_notify($33, $1 || ':' || (head.seq + cardinality($21::text[])))
                                      WHERE cardinality($21::text[]) > 0) AS wake)
        FROM head
        """
    typealias Row = (Int64?, Int64)
    let account: String
    let now: Double
    let keyIDs: [String]
    let keyResponses: [String]
    let rows: AppliedColumns
    let changes: ChangeColumns
    let channel: String

    func makeBindings() -> PostgresBindings {
        .of(account, now, keyIDs, keyResponses,
            rows.ids, rows.statuses, rows.storeIDs, rows.courierIDs, rows.versions, rows.updatedAts, rows.bodies,
            rows.appliedAt, rows.upsertMasks, rows.deletes,
            rows.tombstoneIDs, rows.tombstoneVersions, rows.tombstoneUpdatedAts, rows.deletedAt, rows.tombstoneMasks,
            rows.cleared,
            changes.orderIDs, changes.kinds, changes.versions, changes.bodies, changes.status, changes.storeID,
            changes.courierID, changes.beforeStatus, changes.beforeStoreID, changes.beforeCourierID, changes.traceContexts,
            changes.masks, channel)
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// The orders and tombstones an apply leaves, as the columns of ``WriteApplied``'s `unnest`s.
struct AppliedColumns {
    var ids: [String] = [], statuses: [String] = [], bodies: [String] = [], appliedAt: [Double] = []
    var storeIDs: [String] = [], courierIDs: [String] = [], versions: [Int64] = [], updatedAts: [String] = []
    var deletes: [String] = []
    var tombstoneIDs: [String] = [], deletedAt: [Double] = [], tombstoneVersions: [Int64] = []
    var tombstoneUpdatedAts: [String] = []
    var cleared: [String] = []
    var upsertMasks: [Int32] { upserts.masks }
    var tombstoneMasks: [Int32] { tombstones.masks }
    private var upserts = NullableColumns(), tombstones = NullableColumns()

    init(_ rows: AppliedRows) {
        for id in rows.ids {
            guard let slot = rows.slots[id] else { continue }
            if slot.orderChanged {
                if let order = slot.written {
                    ids.append(order.id)
                    statuses.append(order.status)
                    bodies.append(order.body)
                    appliedAt.append(order.appliedAt)
                    upserts.add(order.storeID, to: &storeIDs, empty: "")
                    upserts.add(order.courierID, to: &courierIDs, empty: "")
                    upserts.add(order.version, to: &versions, empty: 0)
                    upserts.add(order.updatedAt, to: &updatedAts, empty: "")
                    upserts.endRow()
                } else {
                    deletes.append(id)
                }
            }
            if slot.tombstoneChanged {
                if let tombstone = slot.tombstone {
                    tombstoneIDs.append(id)
                    deletedAt.append(tombstone.deletedAt)
                    tombstones.add(tombstone.version, to: &tombstoneVersions, empty: 0)
                    tombstones.add(tombstone.updatedAt, to: &tombstoneUpdatedAts, empty: "")
                    tombstones.endRow()
                } else {
                    cleared.append(id)
                }
            }
        }
    }
}

/// Changes for the log, in order, as the columns of an `unnest` (numbered where they are inserted).
struct ChangeColumns {
    var orderIDs: [String] = [], kinds: [String] = [], versions: [Int64] = [], bodies: [String] = []
    var status: [String] = [], storeID: [String] = [], courierID: [String] = []
    var beforeStatus: [String] = [], beforeStoreID: [String] = [], beforeCourierID: [String] = []
    var traceContexts: [String] = []
    var masks: [Int32] { nullable.masks }
    private var nullable = NullableColumns()

    init(_ pending: [PostgresChangeAppender.Pending]) {
        for change in pending {
            kinds.append(change.kind.rawValue)
            orderIDs.append(change.orderID)
            nullable.add(change.version, to: &versions, empty: 0)
            nullable.add(change.body, to: &bodies, empty: "")
            nullable.add(change.after?.status, to: &status, empty: "")
            nullable.add(change.after?.storeID, to: &storeID, empty: "")
            nullable.add(change.after?.courierID, to: &courierID, empty: "")
            nullable.add(change.before?.status, to: &beforeStatus, empty: "")
            nullable.add(change.before?.storeID, to: &beforeStoreID, empty: "")
            nullable.add(change.before?.courierID, to: &beforeCourierID, empty: "")
            nullable.add(change.traceContext, to: &traceContexts, empty: "")
            nullable.endRow()
        }
    }
}
