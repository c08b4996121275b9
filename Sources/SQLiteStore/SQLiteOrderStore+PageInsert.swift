import GRDB
import StoreModel

/// A full sync's page inserts the orders the store does not hold yet fifty to a statement: one
/// multi-row `INSERT` for the orders and one for their changes, instead of two statements per order.
/// At a cold start every order of every page is new; SQLite's per-statement work (binding, stepping,
/// opening and closing a cursor on each b-tree, resetting) was a large part of the apply.
extension SQLiteOrderStore {
    /// Rows per multi-row statement: 50 orders are 450 parameters and 50 changes 600, far under
    /// SQLite's limit, and a statement of one shape is compiled once per connection.
    static let insertBatchSize = 50

    /// Inserts the leading whole batches of `orders` that can go in as new; returns how many of
    /// `orders` it has dealt with (the caller upserts the rest one by one, in order). Only for a page
    /// whose lookup inserts first and whose store holds no tombstone (an insert then needs no check).
    ///
    /// Each row's `body_change` is bound to the seq its change would have if every row of the batch
    /// were new. When that is so (the changes count says), the changes go in as one statement.
    /// Otherwise the batch is sorted out row by row: a row whose `body_change` is its own provisional
    /// seq was inserted now (no other row can hold a seq above the log's head), gets the next seq in
    /// order and its change; every other order goes through the usual upsert after them, and the
    /// rest of the page is looked up first.
    static func insertNewBatches(
        _ orders: [OrderRecord], at now: Double, in db: Database, changes: inout ChangeAppender, known: inout PageLookup
    ) throws -> Int {
        guard known.insertsFirst, !known.tombstonesPossible else { return 0 }
        let size = insertBatchSize
        var start = 0
        while known.insertsFirst, orders.count - start >= size {
            let batch = orders[start..<(start + size)]
            let base = try changes.nextSeq(in: db)
            // Checked: the batch's provisional seqs must all be numbers (the log is never that near the end).
            guard !base.addingReportingOverflow(Int64(size)).overflow else { return start }
            try DirectStatement(.insertNewBatch, of: changes.statements, in: db).execute { values in
                for (offset, order) in batch.enumerated() {
                    var order = order
                    order.appliedAt = now
                    try bindColumns(of: order, to: &values)
                    try values.bind(base + Int64(offset))
                }
            }
            if DirectStatement.changesCount(of: db) == size {
                try appendNewBatch(batch, from: base, at: now, in: db, changes: &changes)
            } else {
                known.insertsFirst = false
                try sortOut(batch, insertedFrom: base, at: now, in: db, changes: &changes, known: &known)
            }
            start += size
        }
        return start
    }

    /// The changes of a batch whose every order was inserted, numbered from `base` in the batch's order.
    private static func appendNewBatch(
        _ batch: ArraySlice<OrderRecord>, from base: Int64, at now: Double, in db: Database, changes: inout ChangeAppender
    ) throws {
        try DirectStatement(.changeInsertBatch, of: changes.statements, in: db).execute { values in
            for (offset, order) in batch.enumerated() {
                try ChangeAppender.bind(
                    base + Int64(offset), .upserted, orderID: order.id, version: order.version, body: nil, at: now,
                    after: OrderChange.Fields(of: order), before: nil, to: &values)
            }
        }
        try changes.appended(batch.count, from: base)
    }

    /// A batch of which some orders were not inserted (the store held them, or the batch holds an id
    /// twice): the inserted ones get their changes in the batch's order, then the others are upserted.
    private static func sortOut(
        _ batch: ArraySlice<OrderRecord>, insertedFrom base: Int64, at now: Double, in db: Database,
        changes: inout ChangeAppender, known: inout PageLookup
    ) throws {
        var others: [OrderRecord] = []
        for (offset, order) in batch.enumerated() {
            let provisional = base + Int64(offset)
            let (current, _) = try known.state(of: order.id, in: db, statements: changes.statements)
            guard let current, current.bodyChange == provisional else {
                others.append(order)
                continue
            }
            let seq = try changes.nextSeq(in: db)
            if seq != provisional {
                try db.cachedStatement(sql: #"UPDATE "order" SET body_change = ? WHERE id = ?"#).execute(arguments: [seq, order.id])
            }
            try changes.append(
                .upserted, orderID: order.id, version: order.version, body: nil, at: now, after: current.fields, before: nil,
                in: db)
        }
        for order in others { _ = try upsert(order, at: now, in: db, changes: &changes, known: &known) }
    }

    /// Inserts up to ``insertBatchSize`` orders as new, each standing in for its change's body.
    static let insertNewBatchSQL = #"INSERT INTO "order" (id, status, store_id, courier_id, version, updated_at, body, "#
        + "applied_at, body_change) VALUES "
        + Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?)", count: insertBatchSize).joined(separator: ", ")
        + " ON CONFLICT(id) DO NOTHING"

    /// The changes of ``insertBatchSize`` orders inserted as new.
    static let changeInsertBatchSQL = "INSERT INTO order_change (seq, order_id, kind, version, body, at, status, "
        + "store_id, courier_id, before_status, before_store_id, before_courier_id) VALUES "
        + Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: insertBatchSize).joined(separator: ", ")
}
