import GRDB
public import StoreModel

/// Reading the stored orders and the counts of `status` and `/metrics`.
extension SQLiteOrderStore {
    /// Stored orders sorted by id (numeric ids numerically), optionally of one status.
    public func orders(status: String? = nil) throws -> [OrderRecord] {
        try writer.read { db in
            var request = OrderRecord.all()
            if let status { request = request.filter(Column("status") == status) }
            return try request.order(sql: "length(id), id").fetchAll(db)
        }
    }

    /// One order, if stored.
    public func order(id: String) throws -> OrderRecord? {
        try writer.read { db in try OrderRecord.fetchOne(db, key: id) }
    }

    /// The tombstone of an order, if it was deleted.
    public func tombstone(id: String) throws -> TombstoneRecord? {
        try writer.read { db in try TombstoneRecord.fetchOne(db, key: id) }
    }

    /// Dead letters, oldest first.
    public func deadLetters() throws -> [DeadLetterRecord] {
        try writer.read { db in try DeadLetterRecord.order(Column("id")).fetchAll(db) }
    }

    /// One dead letter, if kept.
    public func deadLetter(id: Int64) throws -> DeadLetterRecord? {
        try writer.read { db in try DeadLetterRecord.fetchOne(db, key: id) }
    }

    /// Up to `limit` jobs waiting in the journal, in journal order (each order's jobs apply in it).
    public func pendingJobs(limit: Int) throws -> [JobRecord] {
        try headJobs(limit: limit)
    }

    /// Counts for `status`.
    public func counts() throws -> StoreCounts {
        let now = self.now()
        return try writer.read { db in
            let waiting = try Row.fetchOne(
                db, sql: "SELECT COUNT(*), MIN(created_at) FROM job WHERE not_before > ?", arguments: [now])
            return StoreCounts(
                orders: try OrderRecord.fetchCount(db),
                journalDepth: try JobRecord.fetchCount(db),
                oldestJobCreatedAt: try Double.fetchOne(db, sql: "SELECT MIN(created_at) FROM job"),
                deadLetters: try DeadLetterRecord.fetchCount(db),
                waitingLanes: waiting?[0] ?? 0, oldestWaitingJobCreatedAt: waiting?[1])
        }
    }
}
