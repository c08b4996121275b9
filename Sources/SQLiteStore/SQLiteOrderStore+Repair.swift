import GRDB
public import StoreModel

/// What an operator does to dead letters (`orderlive dead-letters drop|retry`) and their retention.
extension SQLiteOrderStore {
    /// Removes the dead letters `ids` (all when nil) in one transaction, or none when one is unknown.
    public func dropDeadLetters(_ ids: [Int64]?) async throws -> DeadLetterChange {
        try await recordedWrite { db in
            let chosen = try Self.chosenLetters(ids, in: db)
            guard case .done(let letters) = chosen else { return chosen }
            for letter in letters { _ = try letter.delete(db) }
            return chosen
        }
    }

    /// Journals each dead letter's ``DeadLetterRecord/retryJob(source:)`` and removes it, in one
    /// transaction; none when one of `ids` is unknown. A running agent's executor, in another
    /// process, sees the jobs at its next look at the journal (it looks every 250 ms while idle).
    public func retryDeadLetters(_ ids: [Int64]?) async throws -> DeadLetterChange {
        let now = self.now()
        return try await recordedWrite { db in
            let chosen = try Self.chosenLetters(ids, in: db)
            guard case .done(let letters) = chosen else { return chosen }
            for letter in letters {
                _ = try Self.insert(letter.retryJob(), at: now, in: db)
                _ = try letter.delete(db)
            }
            return chosen
        }
    }

    /// Removes the oldest dead letters beyond the newest `keeping`; returns how many went.
    public func pruneDeadLetters(keeping: Int) async throws -> Int {
        try await recordedWrite { db in
            try db.execute(
                sql: "DELETE FROM dead_letter WHERE id IN (SELECT id FROM dead_letter ORDER BY id DESC LIMIT -1 OFFSET ?)",
                arguments: [max(0, keeping)])
            return db.changesCount
        }
    }

    /// The dead letters `ids` (all when nil), oldest first, or the ids of those not kept.
    private static func chosenLetters(_ ids: [Int64]?, in db: Database) throws -> DeadLetterChange {
        let letters = try ids.map { try DeadLetterRecord.fetchAll(db, keys: $0) } ?? DeadLetterRecord.fetchAll(db)
        if let ids {
            let kept = Set(letters.compactMap(\.id))
            let unknown = ids.filter { !kept.contains($0) }
            if !unknown.isEmpty { return .unknown(unknown) }
        }
        return .done(letters.sorted { ($0.id ?? 0) < ($1.id ?? 0) })
    }
}
