import Logging
import PostgresNIO
public import StoreModel

/// What an operator does to this account's dead letters (`orderlive dead-letters drop|retry`), and
/// their retention. Each change is one transaction that returns what it removed, so two operators at
/// once never both act on one dead letter.
extension PostgresOrderStore: DeadLetterRepair {
    /// Removes this account's dead letters `ids` (all when nil) in one transaction, or none when one is unknown.
    public func dropDeadLetters(_ ids: [Int64]?) async throws -> DeadLetterChange {
        try await change(ids, journal: false) { _, _ in }
    }

    /// Journals each dead letter's ``DeadLetterRecord/retryJob(source:)`` and removes it, in one
    /// transaction under the journal lock; none when one of `ids` is unknown. The commit notifies the
    /// jobs channel, so the leader's executor wakes at once.
    public func retryDeadLetters(_ ids: [Int64]?) async throws -> DeadLetterChange {
        let now = self.now()
        let (account, logger) = (self.account, self.logger)
        return try await change(ids, journal: true) { letters, connection in
            for letter in letters {
                _ = try await Self.insert(letter.retryJob(), account: account, at: now, on: connection, logger: logger)
            }
            if !letters.isEmpty { try await Self.notifyJobs(account: account, on: connection, logger: logger) }
        }
    }

    /// Removes this account's oldest dead letters beyond the newest `keeping`; returns how many went.
    public func pruneDeadLetters(keeping: Int) async throws -> Int {
        let keeping = Int64(max(0, keeping))
        return try await write(within: configuration.longRoundTrip) { [self] connection in
            let rows = try await connection.query("""
                DELETE FROM orderlive_dead_letter WHERE account = \(account) AND id IN (
                    SELECT id FROM orderlive_dead_letter WHERE account = \(account) ORDER BY id DESC OFFSET \(keeping))
                RETURNING id
                """, logger: logger)
            return try await Self.count(rows)
        }
    }

    /// Removes the dead letters `ids` (all when nil), hands them to `then` in the same transaction,
    /// and reports them; when one of `ids` is not kept, rolls back and reports the unknown ones.
    private func change(
        _ ids: [Int64]?, journal: Bool,
        then: @escaping @Sendable ([DeadLetterRecord], PostgresConnection) async throws -> Void
    ) async throws -> DeadLetterChange {
        let wanted = ids ?? []
        let everyOne = ids == nil
        do {
            return try await write(journal: journal) { [self] connection in
                let rows = try await connection.query("""
                    DELETE FROM orderlive_dead_letter
                    WHERE account = \(account) AND (\(everyOne) OR id = ANY(\(wanted)))
                    RETURNING \(unescaped: Self.deadLetterColumns)
                    """, logger: logger)
                var letters = try await Self.deadLetters(rows)
                let removed = Set(letters.compactMap(\.id))
                let unknown = wanted.filter { !removed.contains($0) }
                if !unknown.isEmpty { throw UnknownDeadLetters(ids: unknown) }
                letters.sort { ($0.id ?? 0) < ($1.id ?? 0) }
                try await then(letters, connection)
                return .done(letters)
            }
        } catch let unknown as UnknownDeadLetters {
            return .unknown(unknown.ids)
        }
    }
}

/// Some of the dead letters asked for are not kept: the transaction rolls back.
private struct UnknownDeadLetters: Error {
    var ids: [Int64]
}
