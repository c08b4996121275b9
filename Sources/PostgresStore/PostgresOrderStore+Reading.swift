import Logging
public import StoreModel
import PostgresNIO

/// Reading this account's orders, counts and change log: `orders`, `status`, `/metrics`, the orders
/// API and its change feed (DESIGN §11). Reads that must agree with each other run in one
/// repeatable-read snapshot.
extension PostgresOrderStore: OrderReader, ChangeFeedSource {
    /// The notification channel of committed changes (payload `account:seq`).
    public static let changeChannel = "orderlive_changes"
    /// The notification channel of journaled jobs (payload `account:`), which wakes the leader's executor.
    public static let jobChannel = "orderlive_jobs"

    static let orderColumns = "id, status, store_id, courier_id, version, updated_at, body, applied_at"
    /// SQLite's order: numeric ids numerically, then bytewise.
    static let orderOrder = #"ORDER BY length(id), id COLLATE "C""#

    public func orders(status: String? = nil) async throws -> [OrderRecord] {
        try await read { [self] connection in
            try await Self.orders(account: self.account, status: status, on: connection, logger: self.logger)
        }
    }

    public func order(id: String) async throws -> OrderRecord? {
        try await read { [self] connection in
            try await Self.order(account: self.account, id: id, lock: false, on: connection, logger: self.logger)
        }
    }

    public func tombstone(id: String) async throws -> TombstoneRecord? {
        try await read { [self] connection in
            var found: TombstoneRecord?
            for try await (version, updatedAt, deletedAt) in try await connection.query(
                "SELECT version, updated_at, deleted_at FROM orderlive_tombstone WHERE account = \(self.account) AND id = \(id)",
                logger: self.logger).decode((Int64?, String?, Double).self) {
                found = TombstoneRecord(id: id, version: version, updatedAt: updatedAt, deletedAt: deletedAt)
            }
            return found
        }
    }

    public func deadLetters() async throws -> [DeadLetterRecord] {
        try await deadLetters(id: nil)
    }

    public func deadLetter(id: Int64) async throws -> DeadLetterRecord? {
        try await deadLetters(id: id).first
    }

    /// This account's dead letters, oldest first, or the one with `id`.
    func deadLetters(id: Int64?) async throws -> [DeadLetterRecord] {
        try await read { [self] connection in
            try await Self.deadLetters(connection.query("""
                SELECT \(unescaped: Self.deadLetterColumns)
                FROM orderlive_dead_letter WHERE account = \(self.account) AND (\(id)::bigint IS NULL OR id = \(id))
                ORDER BY id
                """, logger: self.logger))
        }
    }

    /// The columns ``deadLetters(_:)`` reads, in its order.
    static let deadLetterColumns = "id, kind, order_id, raw, reason, attempts, created_at, first_attempt_at, version"

    /// Dead letters from rows of ``deadLetterColumns``.
    static func deadLetters(_ rows: PostgresRowSequence) async throws -> [DeadLetterRecord] {
        var letters: [DeadLetterRecord] = []
        for try await (rowID, kind, orderID, raw, reason, attempts, createdAt, firstAttemptAt, version) in rows.decode(
            (Int64, String, String?, String, String, Int64, Double, Double?, Int64?).self) {
            var letter = DeadLetterRecord(
                kind: kind, orderID: orderID, raw: raw, reason: reason, attempts: Int(clamping: attempts),
                createdAt: createdAt, firstAttemptAt: firstAttemptAt, version: version)
            letter.id = rowID
            letters.append(letter)
        }
        return letters
    }

    public func pendingJobs(limit: Int) async throws -> [JobRecord] {
        try await headJobs(limit: limit)
    }

    public func counts() async throws -> StoreCounts {
        let now = self.now()
        return try await read { [self] connection in
            var counts = StoreCounts(orders: 0, journalDepth: 0, oldestJobCreatedAt: nil, deadLetters: 0)
            let rows = try await connection.query("""
                SELECT (SELECT COUNT(*) FROM orderlive_order WHERE account = \(self.account)),
                       (SELECT COUNT(*) FROM orderlive_job WHERE account = \(self.account)),
                       (SELECT MIN(created_at) FROM orderlive_job WHERE account = \(self.account)),
                       (SELECT COUNT(*) FROM orderlive_dead_letter WHERE account = \(self.account)),
                       (SELECT COUNT(*) FROM orderlive_job WHERE account = \(self.account) AND not_before > \(now)),
                       (SELECT MIN(created_at) FROM orderlive_job WHERE account = \(self.account) AND not_before > \(now))
                """, logger: self.logger)
            for try await (orders, depth, oldest, letters, waiting, oldestWaiting) in rows.decode(
                (Int64, Int64, Double?, Int64, Int64, Double?).self) {
                counts = StoreCounts(
                    orders: Int(clamping: orders), journalDepth: Int(clamping: depth), oldestJobCreatedAt: oldest,
                    deadLetters: Int(clamping: letters), waitingLanes: Int(clamping: waiting),
                    oldestWaitingJobCreatedAt: oldestWaiting)
            }
            return counts
        }
    }

    public func owner() async throws -> String? {
        try await read { [self] connection in
            var owner: String?
            for try await user in try await connection.query(
                "SELECT user_id FROM orderlive_owner WHERE account = \(self.account)", logger: self.logger)
                .decode(String.self) {
                owner = user
            }
            return owner
        }
    }

    // MARK: Change feed

    public func changeHead() async throws -> Int64 {
        try await read { [self] connection in
            try await Self.changeHead(account: self.account, on: connection, logger: self.logger)
        }
    }

    public func snapshot(matching filter: OrderFilter) async throws -> OrderSnapshot {
        try await readSnapshot { [self] connection in
            var conditions = ["account = $1"]
            var bindings = Self.binds(self.account)
            for (column, values) in [("status", filter.statuses), ("store_id", filter.storeIDs),
                                     ("courier_id", filter.courierIDs)] where !values.isEmpty {
                bindings.append(values.sorted())
                conditions.append("\(column) = ANY($\(bindings.count))")
            }
            let query = PostgresQuery(
                unsafeSQL: "SELECT \(Self.orderColumns) FROM orderlive_order WHERE "
                    + conditions.joined(separator: " AND ") + " " + Self.orderOrder,
                binds: bindings)
            let orders = try await Self.decodeOrders(try await connection.query(query, logger: self.logger))
            let seq = try await Self.changeHead(account: self.account, on: connection, logger: self.logger)
            return OrderSnapshot(seq: seq, orders: orders)
        }
    }

    public func changes(after seq: Int64, limit: Int) async throws -> ChangesAfter {
        try await readSnapshot { [self] connection in
            let floor = try await Self.changeFloor(account: self.account, on: connection, logger: self.logger)
            let head = try await Self.changeHead(account: self.account, on: connection, logger: self.logger)
            if seq < floor { return .reset("the id is from before this store's data (another user or database)") }
            if seq > head { return .reset("the id is newer than this store's last change") }
            if seq == head { return .changes([]) }
            var oldest: Int64?
            for try await value in try await connection.query(
                "SELECT MIN(seq) FROM orderlive_order_change WHERE account = \(self.account)", logger: self.logger)
                .decode(Int64?.self) {
                oldest = value
            }
            if let oldest, seq < oldest {
                let gap = oldest.subtractingReportingOverflow(seq)
                if gap.overflow || gap.partialValue > 1 { return .reset("the id is older than the kept history") }
            }
            return .changes(try await self.changes(after: seq, limit: limit, on: connection))
        }
    }

    public func appendedChanges(after seq: Int64, limit: Int) async throws -> [OrderChange] {
        try await read { [self] connection in try await self.changes(after: seq, limit: limit, on: connection) }
    }

    /// Prunes the change log to its last `keeping` changes, and the record of applied jobs to the
    /// last `keeping` job ids (which epoch applied a job matters while a failover is investigated).
    @discardableResult
    public func pruneChanges(keeping: Int, batch: Int = 10_000) async throws -> Int {
        try await write(within: configuration.longRoundTrip) { [self] connection in
            let kept = Int64(clamping: max(0, keeping))
            try await connection.query("""
                DELETE FROM orderlive_job_applied WHERE account = \(self.account) AND job_id <
                    (SELECT MAX(job_id) FROM orderlive_job_applied WHERE account = \(self.account)) - \(kept)
                """, logger: self.logger)
            var oldest: Int64?
            for try await value in try await connection.query(
                "SELECT MIN(seq) FROM orderlive_order_change WHERE account = \(self.account)", logger: self.logger)
                .decode(Int64?.self) {
                oldest = value
            }
            guard let oldest else { return 0 }
            let head = try await Self.changeHead(account: self.account, on: connection, logger: self.logger)
            guard var end = ChangeLogRules.pruneEnd(oldest: oldest, head: head, keeping: keeping, batch: batch) else {
                return 0
            }
            // What an enabled webhook endpoint has not handled yet stays: the change log is its outbox.
            for try await owed in try await connection.query(
                "SELECT MIN(cursor) FROM orderlive_webhook_endpoint WHERE account = \(self.account) AND enabled", logger: self.logger)
                .decode(Int64?.self) {
                if let owed, !owed.addingReportingOverflow(1).overflow { end = min(end, owed + 1) }
            }
            if end <= oldest { return 0 }
            var removed = 0
            for try await count in try await connection.query("""
                WITH gone AS (DELETE FROM orderlive_order_change WHERE account = \(self.account) AND seq < \(end)
                              RETURNING 1)
                SELECT COUNT(*) FROM gone
                """, logger: self.logger).decode(Int64.self) {
                removed = Int(clamping: count)
            }
            return removed
        }
    }

    /// Changes kept in the log (for tests and `status`).
    public func changeCount() async throws -> Int {
        try await read { [self] connection in
            var total = 0
            for try await count in try await connection.query(
                "SELECT COUNT(*) FROM orderlive_order_change WHERE account = \(self.account)", logger: self.logger)
                .decode(Int64.self) {
                total = Int(clamping: count)
            }
            return total
        }
    }

    // MARK: Shared reads

    /// Runs `body` in a read-only repeatable-read transaction: every read in it sees one snapshot.
    func readSnapshot<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await read { [self] connection in
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: self.logger)
            do {
                let result = try await body(connection)
                try await connection.query("COMMIT", logger: self.logger)
                return result
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: self.logger)
                throw error
            }
        }
    }

    private func changes(after seq: Int64, limit: Int, on connection: PostgresConnection) async throws -> [OrderChange] {
        var changes: [OrderChange] = []
        let rows = try await connection.query("""
            SELECT seq, order_id, kind, version, body, at, status, store_id, courier_id, before_status,
                   before_store_id, before_courier_id, trace_context
            FROM orderlive_order_change WHERE account = \(account) AND seq > \(seq) ORDER BY seq LIMIT \(max(1, limit))
            """, logger: logger)
        for try await (seq, orderID, kindText, version, body, at, status, storeID, courierID, beforeStatus,
                       beforeStoreID, beforeCourierID, traceContext) in rows.decode(
            (Int64, String, String, Int64?, String?, Double, String?, String?, String?, String?, String?, String?, String?).self) {
            guard let kind = OrderChange.Kind(rawValue: kindText) else {
                throw PostgresStoreError("change \(seq) has an unknown kind '\(kindText)'")
            }
            changes.append(OrderChange(
                seq: seq, orderID: orderID, kind: kind, version: version, body: body, at: at,
                after: status.map { OrderChange.Fields(status: $0, storeID: storeID, courierID: courierID) },
                before: beforeStatus.map {
                    OrderChange.Fields(status: $0, storeID: beforeStoreID, courierID: beforeCourierID)
                }, traceContext: traceContext))
        }
        return changes
    }

    static func orders(
        account: String, status: String?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [OrderRecord] {
        var bindings = binds(account)
        var sql = "SELECT \(orderColumns) FROM orderlive_order WHERE account = $1"
        if let status {
            bindings.append(status)
            sql += " AND status = $2"
        }
        return try await decodeOrders(
            try await connection.query(PostgresQuery(unsafeSQL: sql + " " + orderOrder, binds: bindings), logger: logger))
    }

    static func order(
        account: String, id: String, lock: Bool, on connection: PostgresConnection, logger: Logger
    ) async throws -> OrderRecord? {
        var bindings = binds(account)
        bindings.append(id)
        let sql = "SELECT \(orderColumns) FROM orderlive_order WHERE account = $1 AND id = $2" + (lock ? " FOR UPDATE" : "")
        return try await decodeOrders(
            try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger)).first
    }

    static func decodeOrders(_ rows: PostgresRowSequence) async throws -> [OrderRecord] {
        var orders: [OrderRecord] = []
        for try await (id, status, storeID, courierID, version, updatedAt, body, appliedAt) in rows.decode(
            (String, String, String?, String?, Int64?, String?, String, Double).self) {
            orders.append(OrderRecord(
                id: id, status: status, storeID: storeID, courierID: courierID, version: version, updatedAt: updatedAt,
                body: body, appliedAt: appliedAt))
        }
        return orders
    }

    static func changeHead(account: String, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        var head: Int64?
        for try await value in try await connection.query(
            "SELECT MAX(seq) FROM orderlive_order_change WHERE account = \(account)", logger: logger).decode(Int64?.self) {
            head = value
        }
        if let head { return head }
        return try await changeFloor(account: account, on: connection, logger: logger)
    }

    static func changeFloor(account: String, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        var floor: Int64 = 0
        for try await value in try await connection.query(
            "SELECT floor FROM orderlive_change_log WHERE account = \(account)", logger: logger).decode(Int64.self) {
            floor = value
        }
        return floor
    }
}
