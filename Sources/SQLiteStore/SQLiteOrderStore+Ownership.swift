import GRDB
import StoreModel

/// Whose data the store holds (FIELD-NOTES 15).
extension SQLiteOrderStore {
    /// The user the data belongs to.
    public func owner() throws -> String? {
        try writer.read { db in try String.fetchOne(db, sql: "SELECT user_id FROM owner WHERE id = 1") }
    }

    /// Makes `userID` the owner. A different user's orders, tombstones, journal, cursor and dedupe keys
    /// are cleared first, in the same transaction (FIELD-NOTES 15); the same user keeps everything.
    /// Returns true when a previous user's data was cleared.
    ///
    /// The change log gets one `deleted` change per cleared order (subscribers watching live see the
    /// orders go), loses the previous user's order bodies, and its floor moves past the switch, so a
    /// subscriber resuming from before it is told to reset (DESIGN §11).
    @discardableResult
    public func claim(for userID: String) throws -> Bool {
        let now = self.now()
        return try changeWrite { db, changes in
            let current = try String.fetchOne(db, sql: "SELECT user_id FROM owner WHERE id = 1")
            if current == userID { return false }
            if current != nil {
                let previousHead = try Self.changeHead(in: db)
                for order in try OrderRecord.fetchAll(db) {
                    try changes.append(
                        .deleted, orderID: order.id, version: order.version, body: nil, at: now, after: nil,
                        before: OrderChange.Fields(of: order),
                        in: db)
                }
                for table in ["\"order\"", "tombstone", "job", "stream_cursor", "dedupe_key", "dead_letter"] {
                    try db.execute(sql: "DELETE FROM \(table)")
                }
                try db.execute(sql: "DELETE FROM order_change WHERE seq <= ?", arguments: [previousHead])
                try db.execute(sql: "UPDATE change_log SET floor = ? WHERE id = 1", arguments: [changes.last ?? previousHead])
            }
            try db.execute(
                sql: "INSERT INTO owner (id, user_id, since) VALUES (1, ?, ?) "
                    + "ON CONFLICT(id) DO UPDATE SET user_id = excluded.user_id, since = excluded.since",
                arguments: [userID, now])
            return current != nil
        }
    }
}
