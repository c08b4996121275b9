import Logging
import OrderStore
import PostgresNIO

/// A run of upsert and delete jobs applied in one transaction at a fixed number of round trips:
/// the rows the run touches are read (and locked) in one query each, the jobs are applied here in
/// journal order by the same rules as one at a time (DESIGN §8), and each table's final state and
/// the change log are written in one statement each. One job at a time cost four or five round
/// trips per job, which bounded the executor to a few hundred jobs a second.
extension PostgresOrderStore {
    /// What the run knows of one order id: the stored row (as read, then as the run leaves it) and
    /// its tombstone, and whether the run changed either.
    struct ApplySlot {
        var current: (version: Int64?, updatedAt: String?, fields: OrderChange.Fields)?
        var written: OrderRecord?
        var orderChanged = false
        var tombstone: TombstoneRecord?
        var tombstoneChanged = false
    }

    /// One change for the log, numbered when written.
    struct PendingChange {
        var kind: OrderChange.Kind
        var orderID: String
        var version: Int64?
        var body: String?
        var after: OrderChange.Fields?
        var before: OrderChange.Fields?
    }

    /// Applies `jobs` (upserts and deletes; others are skipped) as one transaction's work on
    /// `connection`; returns the ids of the jobs it completed.
    func applyRun(
        _ jobs: [JobRecord], at now: Double, on connection: PostgresConnection, changes: inout PostgresChangeAppender
    ) async throws -> [Int64] {
        var ids: [String] = []
        for job in jobs {
            switch job.kind {
            case .upsert: if let id = job.order?.id { ids.append(id) }
            case .delete: if let id = job.orderID { ids.append(id) }
            case .fetch, .fullSync: continue
            }
        }
        var slots: [String: ApplySlot] = [:]
        for id in ids where slots[id] == nil { slots[id] = ApplySlot() }
        let unique = Array(slots.keys)
        for try await (id, version, updatedAt, status, storeID, courierID) in try await connection.query("""
            SELECT id, version, updated_at, status, store_id, courier_id FROM orderlive_order
            WHERE account = \(account) AND id = ANY(\(unique)) FOR UPDATE
            """, logger: logger).decode((String, Int64?, String?, String, String?, String?).self) {
            slots[id]?.current = (version, updatedAt, OrderChange.Fields(status: status, storeID: storeID, courierID: courierID))
        }
        for try await (id, version, updatedAt, deletedAt) in try await connection.query("""
            SELECT id, version, updated_at, deleted_at FROM orderlive_tombstone WHERE account = \(account) AND id = ANY(\(unique))
            """, logger: logger).decode((String, Int64?, String?, Double).self) {
            slots[id]?.tombstone = TombstoneRecord(id: id, version: version, updatedAt: updatedAt, deletedAt: deletedAt)
        }
        var pending: [PendingChange] = []
        var completed: [Int64] = []
        for job in jobs {
            switch job.kind {
            case .upsert:
                guard var order = job.order, var slot = slots[order.id] else { continue }
                order.appliedAt = now
                if let change = Self.upsert(order, into: &slot) { pending.append(change) }
                slots[order.id] = slot
            case .delete:
                guard let id = job.orderID, var slot = slots[id] else { continue }
                if let change = Self.delete(id, version: job.version, at: now, from: &slot) { pending.append(change) }
                slots[id] = slot
            case .fetch, .fullSync:
                continue
            }
            if let id = job.id { completed.append(id) }
        }
        try await write(slots, ordered: ids, on: connection)
        try await changes.append(pending, at: now, on: connection, logger: logger)
        return completed
    }

    /// DESIGN §8 for an upsert, on the run's copy of the row: the same rule as ``upsert(_:at:on:changes:)``.
    static func upsert(_ order: OrderRecord, into slot: inout ApplySlot) -> PendingChange? {
        var before: OrderChange.Fields?
        if let current = slot.current {
            guard order.freshness.isNewer(than: OrderFreshness(version: current.version, updatedAt: current.updatedAt)) else {
                return nil
            }
            before = current.fields
        } else if let tombstone = slot.tombstone {
            guard order.freshness.isNewer(than: tombstone.freshness) else { return nil }
            slot.tombstone = nil
            slot.tombstoneChanged = true
        }
        let after = OrderChange.Fields(status: order.status, storeID: order.storeID, courierID: order.courierID)
        slot.current = (order.version, order.updatedAt, after)
        slot.written = order
        slot.orderChanged = true
        return PendingChange(kind: .upserted, orderID: order.id, version: order.version, body: order.body, after: after, before: before)
    }

    /// DESIGN §8 for a delete, on the run's copy of the row: the same rule as ``delete(orderID:version:at:on:changes:)``.
    static func delete(_ id: String, version: Int64?, at now: Double, from slot: inout ApplySlot) -> PendingChange? {
        let current = slot.current
        if let current, let version, let currentVersion = current.version, version < currentVersion { return nil }
        var tombstone = TombstoneRecord(id: id, version: version ?? current?.version, updatedAt: current?.updatedAt, deletedAt: now)
        if let existing = slot.tombstone, !OrderFreshness(version: version, updatedAt: nil).isNewer(than: existing.freshness),
           existing.version != nil {
            tombstone = existing
        }
        slot.tombstone = tombstone
        slot.tombstoneChanged = true
        guard let current else { return nil }
        slot.current = nil
        slot.written = nil
        slot.orderChanged = true
        return PendingChange(kind: .deleted, orderID: id, version: version ?? current.version, body: nil, after: nil,
                             before: current.fields)
    }

    /// Writes each table's final state for the run: upserted and deleted orders, set and cleared
    /// tombstones, one statement each.
    private func write(_ slots: [String: ApplySlot], ordered ids: [String], on connection: PostgresConnection) async throws {
        var seen = Set<String>()
        var upserts: [OrderRecord] = [], deletes: [String] = []
        var tombstones: [TombstoneRecord] = [], cleared: [String] = []
        for id in ids where seen.insert(id).inserted {
            guard let slot = slots[id] else { continue }
            if slot.orderChanged {
                if let order = slot.written { upserts.append(order) } else { deletes.append(id) }
            }
            if slot.tombstoneChanged {
                if let tombstone = slot.tombstone { tombstones.append(tombstone) } else { cleared.append(id) }
            }
        }
        if !upserts.isEmpty {
            var masks: [Int32] = []
            var storeIDs: [String] = [], courierIDs: [String] = [], versions: [Int64] = [], updatedAts: [String] = []
            for order in upserts {
                var mask: Int32 = 0
                storeIDs.append(order.storeID ?? "")
                if order.storeID != nil { mask |= 1 }
                courierIDs.append(order.courierID ?? "")
                if order.courierID != nil { mask |= 2 }
                versions.append(order.version ?? 0)
                if order.version != nil { mask |= 4 }
                updatedAts.append(order.updatedAt ?? "")
                if order.updatedAt != nil { mask |= 8 }
                masks.append(mask)
            }
            try await connection.query("""
                INSERT INTO orderlive_order (account, id, status, store_id, courier_id, version, updated_at, body, applied_at)
                SELECT \(account), id, status, CASE WHEN mask & 1 <> 0 THEN store_id END,
                       CASE WHEN mask & 2 <> 0 THEN courier_id END, CASE WHEN mask & 4 <> 0 THEN version END,
                       CASE WHEN mask & 8 <> 0 THEN updated_at END, body, applied_at
                FROM unnest(\(upserts.map(\.id))::text[], \(upserts.map(\.status))::text[], \(storeIDs)::text[],
                            \(courierIDs)::text[], \(versions)::bigint[], \(updatedAts)::text[], \(upserts.map(\.body))::text[],
                            \(upserts.map(\.appliedAt))::float8[], \(masks)::int4[])
                     AS o(id, status, store_id, courier_id, version, updated_at, body, applied_at, mask)
                ON CONFLICT (account, id) DO UPDATE SET status = excluded.status, store_id = excluded.store_id,
                    courier_id = excluded.courier_id, version = excluded.version, updated_at = excluded.updated_at,
                    body = excluded.body, applied_at = excluded.applied_at
                """, logger: logger)
        }
        if !deletes.isEmpty {
            try await connection.query(
                "DELETE FROM orderlive_order WHERE account = \(account) AND id = ANY(\(deletes))", logger: logger)
        }
        if !tombstones.isEmpty {
            var masks: [Int32] = []
            var versions: [Int64] = [], updatedAts: [String] = []
            for tombstone in tombstones {
                var mask: Int32 = 0
                versions.append(tombstone.version ?? 0)
                if tombstone.version != nil { mask |= 1 }
                updatedAts.append(tombstone.updatedAt ?? "")
                if tombstone.updatedAt != nil { mask |= 2 }
                masks.append(mask)
            }
            try await connection.query("""
                INSERT INTO orderlive_tombstone (account, id, version, updated_at, deleted_at)
                SELECT \(account), id, CASE WHEN mask & 1 <> 0 THEN version END, CASE WHEN mask & 2 <> 0 THEN updated_at END,
                       deleted_at
                FROM unnest(\(tombstones.map(\.id))::text[], \(versions)::bigint[], \(updatedAts)::text[],
                            \(tombstones.map(\.deletedAt))::float8[], \(masks)::int4[])
                     AS t(id, version, updated_at, deleted_at, mask)
                ON CONFLICT (account, id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at,
                    deleted_at = excluded.deleted_at
                """, logger: logger)
        }
        if !cleared.isEmpty {
            try await connection.query(
                "DELETE FROM orderlive_tombstone WHERE account = \(account) AND id = ANY(\(cleared))", logger: logger)
        }
    }
}

extension PostgresChangeAppender {
    /// Appends `pending` with the next seqs, in order, in one statement.
    mutating func append(
        _ pending: [PostgresOrderStore.PendingChange], at now: Double, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !pending.isEmpty else { return }
        let head = try await PostgresOrderStore.changeHead(account: account, on: connection, logger: logger)
        let (end, overflow) = head.addingReportingOverflow(Int64(pending.count))
        guard !overflow else { throw PostgresStoreError("the change log's sequence is exhausted") }
        var seqs: [Int64] = [], kinds: [String] = [], orderIDs: [String] = [], versions: [Int64] = [], bodies: [String] = []
        var fields: [[String]] = Array(repeating: [], count: 6)
        var masks: [Int32] = []
        for (offset, change) in pending.enumerated() {
            var mask: Int32 = 0
            seqs.append(head + Int64(offset) + 1)
            kinds.append(change.kind.rawValue)
            orderIDs.append(change.orderID)
            versions.append(change.version ?? 0)
            if change.version != nil { mask |= 1 }
            bodies.append(change.body ?? "")
            if change.body != nil { mask |= 2 }
            let values = [change.after?.status, change.after?.storeID, change.after?.courierID,
                          change.before?.status, change.before?.storeID, change.before?.courierID]
            for (column, value) in values.enumerated() {
                fields[column].append(value ?? "")
                if value != nil { mask |= 4 << Int32(column) }
            }
            masks.append(mask)
        }
        try await connection.query("""
            INSERT INTO orderlive_order_change (account, seq, order_id, kind, version, body, at, status, store_id,
                courier_id, before_status, before_store_id, before_courier_id)
            SELECT \(account), seq, order_id, kind, CASE WHEN mask & 1 <> 0 THEN version END,
                   CASE WHEN mask & 2 <> 0 THEN body END, \(now), CASE WHEN mask & 4 <> 0 THEN status END,
                   CASE WHEN mask & 8 <> 0 THEN store_id END, CASE WHEN mask & 16 <> 0 THEN courier_id END,
                   CASE WHEN mask & 32 <> 0 THEN before_status END, CASE WHEN mask & 64 <> 0 THEN before_store_id END,
                   CASE WHEN mask & 128 <> 0 THEN before_courier_id END
            FROM unnest(\(seqs)::bigint[], \(orderIDs)::text[], \(kinds)::text[], \(versions)::bigint[], \(bodies)::text[],
                        \(fields[0])::text[], \(fields[1])::text[], \(fields[2])::text[], \(fields[3])::text[],
                        \(fields[4])::text[], \(fields[5])::text[], \(masks)::int4[])
                 AS c(seq, order_id, kind, version, body, status, store_id, courier_id, before_status, before_store_id,
                      before_courier_id, mask)
            """, logger: logger)
        setLast(end)
    }
}
