import Logging
import StoreModel
import PostgresNIO

/// The store's owner (FIELD-NOTES 15): a user switch clears the previous user's data of this account,
/// and a wipe clears the account, each in one transaction under the journal lock.
extension PostgresOrderStore {
    /// Makes `userID` the owner of this account's data, clearing a different user's orders,
    /// tombstones, journal, cursor, dedupe keys and dead letters first, in the same transaction
    /// (FIELD-NOTES 15); the change log gets a `deleted` change per cleared order and its floor moves
    /// past the switch. Only this account's rows are touched. Returns true when data was cleared.
    @discardableResult
    public func claim(for userID: String) async throws -> Bool {
        let now = self.now()
        let account = self.account
        let logger = self.logger
        let (cleared, last) = try await write(journal: true, fenced: true) { connection -> (Bool, Int64?) in
            var current: String?
            for try await owner in try await connection.query(
                "SELECT user_id FROM orderlive_owner WHERE account = \(account) FOR UPDATE", logger: logger)
                .decode(String.self) {
                current = owner
            }
            if current == userID { return (false, nil) }
            var changes = PostgresChangeAppender(account: account)
            if current != nil {
                let previousHead = try await Self.changeHead(account: account, on: connection, logger: logger)
                let cleared = try await Self.orders(account: account, status: nil, on: connection, logger: logger)
                try await changes.append(cleared.map { order in
                    .init(kind: .deleted, orderID: order.id, version: order.version, body: nil, after: nil,
                          before: OrderChange.Fields(status: order.status, storeID: order.storeID, courierID: order.courierID))
                }, at: now, on: connection, logger: logger)
                for table in ["orderlive_order", "orderlive_tombstone", "orderlive_job", "orderlive_stream_cursor",
                              "orderlive_dedupe_key", "orderlive_dead_letter"] {
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "DELETE FROM \(table) WHERE account = $1", binds: Self.binds(account)),
                        logger: logger)
                }
                try await connection.query(
                    "DELETE FROM orderlive_order_change WHERE account = \(account) AND seq <= \(previousHead)", logger: logger)
                try await connection.query(
                    "UPDATE orderlive_change_log SET floor = \(changes.last ?? previousHead) WHERE account = \(account)",
                    logger: logger)
            }
            try await connection.query("""
                INSERT INTO orderlive_owner (account, user_id, since) VALUES (\(account), \(userID), \(now))
                ON CONFLICT (account) DO UPDATE SET user_id = excluded.user_id, since = excluded.since
                """, logger: logger)
            return (current != nil, changes.last)
        }
        if let last { changesCommitted(last) }
        return cleared
    }

    /// Deletes every row of this account (`logout --wipe`): orders, tombstones, journal, cursor,
    /// dedupe keys, dead letters, owner and change log. Returns how many rows went.
    public func wipeAccount() async throws -> Int {
        let account = self.account
        let logger = self.logger
        return try await write(journal: true) { connection in
            var removed = 0
            for table in ["orderlive_order", "orderlive_tombstone", "orderlive_job", "orderlive_stream_cursor",
                          "orderlive_dedupe_key", "orderlive_dead_letter", "orderlive_owner", "orderlive_order_change",
                          "orderlive_job_applied", "orderlive_webhook_endpoint"] {
                for try await count in try await connection.query(PostgresQuery(
                    unsafeSQL: "WITH gone AS (DELETE FROM \(table) WHERE account = $1 RETURNING 1) SELECT COUNT(*) FROM gone",
                    binds: Self.binds(account)), logger: logger).decode(Int64.self) {
                    removed += Int(clamping: count)
                }
            }
            return removed
        }
    }
}
