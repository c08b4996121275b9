import Logging
import StoreModel
import PostgresNIO

/// Every apply (a job, a run of jobs, a page of a full sync, its deletions, a push batch applied in
/// place) in two round trips: the rows it touches are read (and locked) in one statement, DESIGN §8
/// is applied to them here in order (``AppliedRows``), and every table's final state, the change
/// log and its notification are written in one more (PostgresAppliedStatements.swift). One
/// statement per row cost four or five round trips per job, which bounded the executor to a few
/// hundred jobs a second; one per table, six or seven an apply.
extension PostgresOrderStore {
    /// Reads and locks the rows of `ids` (one statement, ``ReadAppliedRows``), lets `body` apply to
    /// them in memory, then writes what it left, `keys` (a push batch's dedupe keys, when applied in
    /// place) and its changes with their notification (one more, ``WriteApplied``). `body` must touch
    /// only the orders `ids` names.
    func applying<T>(
        _ ids: [String], at now: Double, on connection: PostgresConnection, changes: inout PostgresChangeAppender,
        keys: (ids: [String], responses: [String]) = ([], []), _ body: (inout AppliedRows) -> T
    ) async throws -> T {
        var rows = AppliedRows(ids: ids)
        guard !rows.ids.isEmpty || !keys.ids.isEmpty else { return body(&rows) }
        if !rows.ids.isEmpty {
            for (isOrder, id, version, updatedAt, status, storeID, courierID, deletedAt) in try await connection.executeUnprepared(
                ReadAppliedRows(account: account, ids: rows.ids), logger: logger) {
                if isOrder, let status {
                    rows.slots[id]?.current = .init(
                        version: version, updatedAt: updatedAt,
                        fields: OrderChange.Fields(status: status, storeID: storeID, courierID: courierID))
                } else if !isOrder {
                    rows.slots[id]?.tombstone = TombstoneRecord(id: id, version: version, updatedAt: updatedAt, deletedAt: deletedAt)
                }
            }
        }
        let result = body(&rows)
        let write = WriteApplied(
            account: account, now: now, keyIDs: keys.ids, keyResponses: keys.responses, rows: AppliedColumns(rows),
            changes: ChangeColumns(rows.changes), channel: Self.changeChannel)
        for (last, _) in try await connection.executeUnprepared(write, logger: logger) {
            if let last { changes.appended(through: last) }
        }
        return result
    }

    /// Applies `jobs` (upserts and deletes; others are skipped) as one transaction's work on
    /// `connection`; returns the ids of the jobs it completed.
    func applyRun(
        _ jobs: [JobRecord], at now: Double, on connection: PostgresConnection, changes: inout PostgresChangeAppender
    ) async throws -> [Int64] {
        let ids = jobs.compactMap { job -> String? in
            switch job.kind {
            case .upsert: job.order?.id
            case .delete: job.orderID
            case .fetch, .fullSync: nil
            }
        }
        return try await applying(ids, at: now, on: connection, changes: &changes) { rows in
            var completed: [Int64] = []
            for job in jobs {
                rows.traceContext = job.traceContext
                guard rows.apply(job.kind, order: job.order, orderID: job.orderID, version: job.version, at: now)
                else { continue }
                if let id = job.id { completed.append(id) }
            }
            return completed
        }
    }
}

/// The orders one apply touches, as read and then as it leaves them, with the changes it made:
/// DESIGN §8 on the in-memory copy, one order at a time in the caller's order.
struct AppliedRows {
    /// What is known of one order id: its stored row and its tombstone, and whether either changed.
    struct Slot {
        struct Current {
            var version: Int64?
            var updatedAt: String?
            var fields: OrderChange.Fields
        }

        var current: Current?
        var written: OrderRecord?
        var orderChanged = false
        var tombstone: TombstoneRecord?
        var tombstoneChanged = false
    }

    /// The ids, each once, in the order first named.
    let ids: [String]
    var slots: [String: Slot] = [:]
    private(set) var changes: [PostgresChangeAppender.Pending] = []
    /// The trace context the next changes carry: the job's being applied (nil for a full sync's page).
    var traceContext: String?

    init(ids: [String]) {
        var unique: [String] = []
        var slots: [String: Slot] = [:]
        for id in ids where slots.updateValue(Slot(), forKey: id) == nil { unique.append(id) }
        self.ids = unique
        self.slots = slots
    }

    /// Applies a whole-order job (an upsert of `order`, a delete of `orderID` at `version`); false,
    /// changing nothing, for any other job or one without what its kind needs.
    mutating func apply(_ kind: JobKind, order: OrderRecord?, orderID: String?, version: Int64?, at now: Double) -> Bool {
        switch kind {
        case .upsert:
            guard let order else { return false }
            _ = upsert(order, at: now)
        case .delete:
            guard let orderID else { return false }
            _ = delete(orderID: orderID, version: version, at: now)
        case .fetch, .fullSync:
            return false
        }
        return true
    }

    /// Applies `incoming` if it is newer than the stored order, or than its tombstone when none is stored.
    mutating func upsert(_ incoming: OrderRecord, at now: Double) -> UpsertOutcome {
        var slot = slots[incoming.id] ?? Slot()
        defer { slots[incoming.id] = slot }
        var before: OrderChange.Fields?
        if let current = slot.current {
            guard incoming.freshness.isNewer(than: OrderFreshness(version: current.version, updatedAt: current.updatedAt)) else {
                return .stale
            }
            before = current.fields
        } else if let tombstone = slot.tombstone {
            guard incoming.freshness.isNewer(than: tombstone.freshness) else { return .stale }
            slot.tombstone = nil
            slot.tombstoneChanged = true
        }
        var order = incoming
        order.appliedAt = now
        let after = OrderChange.Fields(of: order)
        slot.current = Slot.Current(version: order.version, updatedAt: order.updatedAt, fields: after)
        slot.written = order
        slot.orderChanged = true
        changes.append(.init(kind: .upserted, orderID: order.id, version: order.version, body: order.body, after: after,
                             before: before, traceContext: traceContext))
        return .applied
    }

    /// Deletes the order unless the delete's version is older than the stored one; the tombstone
    /// keeps the newest freshness known, so an older upsert cannot resurrect the order.
    mutating func delete(orderID id: String, version: Int64?, at now: Double) -> DeleteOutcome {
        var slot = slots[id] ?? Slot()
        defer { slots[id] = slot }
        let current = slot.current
        if let current, let version, let currentVersion = current.version, version < currentVersion { return .stale }
        var tombstone = TombstoneRecord(id: id, version: version ?? current?.version, updatedAt: current?.updatedAt, deletedAt: now)
        if let existing = slot.tombstone, !OrderFreshness(version: version, updatedAt: nil).isNewer(than: existing.freshness),
           existing.version != nil {
            tombstone = existing
        }
        slot.tombstone = tombstone
        slot.tombstoneChanged = true
        guard let current else { return .absent }
        slot.current = nil
        slot.written = nil
        slot.orderChanged = true
        changes.append(.init(kind: .deleted, orderID: id, version: version ?? current.version, body: nil, after: nil,
                             before: current.fields, traceContext: traceContext))
        return .deleted
    }
}

/// Nullable columns of an `unnest` statement: PostgresNIO binds no array that holds NULLs, so an
/// absent value is bound as a placeholder and each row's mask has a bit per nullable column, set
/// when the value is there (the statement reads `CASE WHEN mask & bit <> 0 THEN column END`; the
/// first column added to a row is bit 1, the next 2, then 4…).
struct NullableColumns {
    private(set) var masks: [Int32] = []
    private var mask: Int32 = 0
    private var bit: Int32 = 1

    /// Appends `value` (or `empty` when nil) to `column` and notes whether it was there.
    mutating func add<T>(_ value: T?, to column: inout [T], empty: T) {
        column.append(value ?? empty)
        if value != nil { mask |= bit }
        bit <<= 1
    }

    /// Ends the row: its mask is appended and the next row starts at bit 1.
    mutating func endRow() {
        masks.append(mask)
        mask = 0
        bit = 1
    }
}

extension PostgresChangeAppender {
    /// One change for the log, numbered when appended.
    struct Pending {
        var kind: OrderChange.Kind
        var orderID: String
        var version: Int64?
        var body: String?
        var after: OrderChange.Fields?
        var before: OrderChange.Fields?
        var traceContext: String?
    }

    /// Appends `pending` with the next seqs, in order, and queues the feed's notification for the
    /// last, in one statement (a user switch's deletions; applies write theirs with ``WriteApplied``).
    mutating func append(_ pending: [Pending], at now: Double, on connection: PostgresConnection, logger: Logger) async throws {
        guard !pending.isEmpty else { return }
        let head = try await PostgresOrderStore.changeHead(account: account, on: connection, logger: logger)
        let (end, overflow) = head.addingReportingOverflow(Int64(pending.count))
        guard !overflow else { throw PostgresStoreError("the change log's sequence is exhausted") }
        let columns = ChangeColumns(pending)
        let seqs = (1...Int64(pending.count)).map { head + $0 }
        let notification = account + ":" + String(end)
        // One row; read to its end, since a failure of the insert arrives behind it.
        _ = try await PostgresOrderStore.count(try await connection.query("""
            WITH appended AS (
            INSERT INTO orderlive_order_change (account, seq, order_id, kind, version, body, at, status, store_id,
                courier_id, before_status, before_store_id, before_courier_id, trace_context)
            SELECT \(account), seq, order_id, kind, CASE WHEN mask & 1 <> 0 THEN version END,
                   CASE WHEN mask & 2 <> 0 THEN body END, \(now), CASE WHEN mask & 4 <> 0 THEN status END,
                   CASE WHEN mask & 8 <> 0 THEN store_id END, CASE WHEN mask & 16 <> 0 THEN courier_id END,
                   CASE WHEN mask & 32 <> 0 THEN before_status END, CASE WHEN mask & 64 <> 0 THEN before_store_id END,
                   CASE WHEN mask & 128 <> 0 THEN before_courier_id END, CASE WHEN mask & 256 <> 0 THEN trace_context END
            FROM unnest(\(seqs)::bigint[], \(columns.orderIDs)::text[], \(columns.kinds)::text[], \(columns.versions)::bigint[],
                        \(columns.bodies)::text[], \(columns.status)::text[], \(columns.storeID)::text[], \(columns.courierID)::text[],
                        \(columns.beforeStatus)::text[], \(columns.beforeStoreID)::text[], \(columns.beforeCourierID)::text[],
                        \(columns.traceContexts)::text[], \(columns.masks)::int4[])
                 AS c(seq, order_id, kind, version, body, status, store_id, courier_id, before_status, before_store_id,
                      before_courier_id, trace_context, mask)
            RETURNING 1)
            SELECT pg_notify(\(PostgresOrderStore.changeChannel), \(notification)) FROM (SELECT 1 FROM appended LIMIT 1) AS a
            """, logger: logger))
        appended(through: end)
    }
}
