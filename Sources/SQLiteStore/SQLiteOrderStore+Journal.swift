import GRDB
public import StoreModel

/// Journaling jobs with the stream cursor (the stream service's side of the journal, DESIGN §3).
extension SQLiteOrderStore {
    /// Journals jobs and, in the same transaction, advances the stream cursor (DESIGN §3: the cursor
    /// moves only with the job of its event). Jobs collapse as ``insert(_:at:in:)`` says; with
    /// ``ImmediateApply``, whole-order jobs that find the journal empty are applied instead. Returns
    /// how many jobs were journaled (those applied at once are not counted). Blocks the calling
    /// thread until the commit: for a thread of its own (a test's, a command's); async code calls the
    /// async overload, as the stream service does through ``JobJournal``.
    @discardableResult
    public func journal(_ jobs: [NewJob], cursor: String? = nil, deadLetters: [DeadLetterRecord] = []) throws -> Int {
        let intake = try recordedWrite(journalUnit(jobs, cursor: cursor, deadLetters: deadLetters))
        committed(intake)
        return intake.journaled
    }

    /// The same, waiting for the commit without holding a thread.
    @discardableResult
    public func journal(_ jobs: [NewJob], cursor: String? = nil, deadLetters: [DeadLetterRecord] = []) async throws -> Int {
        let intake = try await recordedWrite(journalUnit(jobs, cursor: cursor, deadLetters: deadLetters))
        committed(intake)
        return intake.journaled
    }

    /// The journal's writes, as one unit of the store's writer.
    private func journalUnit(
        _ jobs: [NewJob], cursor: String?, deadLetters: [DeadLetterRecord]
    ) -> @Sendable (Database) throws -> JobIntake {
        let now = self.now()
        return { db in
            // The journal is only looked at when the store may apply at once.
            var intake = JobIntake(applying: try self.immediateApply != nil && Self.journalIsEmpty(in: db))
            for job in jobs { _ = try intake.take(job, at: now, in: db) }
            for var letter in deadLetters { try letter.insert(db) }
            if let cursor {
                try db.execute(
                    sql: "INSERT INTO stream_cursor (id, value, updated_at) VALUES ('stream', ?, ?) "
                        + "ON CONFLICT(id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    arguments: [cursor, now])
            }
            return intake
        }
    }

    /// The stream cursor (`Last-Event-ID`), "" when none.
    public func streamCursor() throws -> String {
        try writer.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM stream_cursor WHERE id = 'stream'") ?? ""
        }
    }
}
