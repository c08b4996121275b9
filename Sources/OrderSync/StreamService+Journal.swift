import Foundation
import Logging
package import StoreModel
public import ServerSentEvents

/// Journaling: each event's jobs, dead letter and cursor are committed in one transaction, so the
/// cursor never passes an event whose job is not durable (DESIGN §3).
extension StreamService {
    /// The cursor to resume the stream from (`Last-Event-ID`), "" when none.
    public func cursor() async throws -> String {
        try await store.streamCursor()
    }

    /// Journals what one event means; returns how it was read.
    @discardableResult
    public func journal(_ event: ServerSentEvent) async throws -> EventTranslation.Disposition {
        try await journal(batch: [event])[0]
    }

    /// Journals a batch of events in one transaction (group commit): all their jobs and dead letters,
    /// and the cursor of the last one that had an id. Same effect as one by one, far fewer commits.
    /// Returns how each event was read.
    @discardableResult
    public func journal(batch events: [ServerSentEvent]) async throws -> [EventTranslation.Disposition] {
        guard !events.isEmpty else { return [] }
        let batch = translate(batch: events)
        try await batch.journal(into: store)
        return batch.dispositions
    }

    /// Journals parser batches in order, one transaction each, each batch translated while the
    /// batch before it commits (``PipelinedJournal``).
    public func pipelinedJournal() -> PipelinedJournal {
        PipelinedJournal(translate: { translate(batch: $0) }, commit: { [store] batch in try await batch.journal(into: store) })
    }

    /// What a batch of events means: its jobs and dead letters, the cursor of its last event with an
    /// id, and how each event was read.
    func translate(batch events: [ServerSentEvent]) -> TranslatedBatch {
        var batch = TranslatedBatch()
        let receivedAt = now()
        for event in events {
            let translation = EventTranslator.translate(event, now: receivedAt)
            switch translation.disposition {
            case .unknownType:
                logger.debug("unknown event type; cursor advances", metadata: ["stream.event.type": "\(event.type)"])
            case .malformed:
                logger.warning("event data not understood; kept as a dead letter", metadata: [
                    "stream.event.type": "\(event.type)", "stream.event.id": "\(event.lastEventID)",
                ])
            case .jobs, .heartbeat:
                break
            }
            var jobs = translation.jobs
            if let tracer, !jobs.isEmpty { batch.traces.append(StreamEventTrace(tracer, event: event, jobs: &jobs)) }
            batch.jobs += jobs
            if let letter = translation.deadLetter { batch.deadLetters.append(letter) }
            if !event.lastEventID.isEmpty { batch.cursor = event.lastEventID }
            batch.dispositions.append(translation.disposition)
        }
        return batch
    }

    /// An event over the parser's size limit: what it said is unknown, so everything is fetched again.
    public func journalOversizedEvent(lastEventID: String) async throws {
        let letter = DeadLetterRecord(
            kind: "event", orderID: nil, raw: "", reason: "an event over the size limit was discarded", attempts: 0,
            createdAt: now())
        try await store.journal([NewJob(kind: .fullSync, source: "stream")], cursor: lastEventID.isEmpty ? nil : lastEventID,
                          deadLetters: [letter])
    }
}

/// A parser batch as the journal takes it.
public struct TranslatedBatch: Sendable {
    /// The batch's jobs, in order.
    package var jobs: [NewJob] = []
    /// Events kept as dead letters.
    package var deadLetters: [DeadLetterRecord] = []
    /// The last event id of the batch, if any event had one.
    package var cursor: String?
    /// How each event was read.
    package var dispositions: [EventTranslation.Disposition] = []
    /// The spans of the events that made jobs, ended with the commit (traces exported only).
    var traces: [StreamEventTrace] = []

    /// An empty batch.
    package init() {}

    /// Journals the jobs and dead letters with the cursor, in one transaction.
    func journal(into store: any JobJournal) async throws {
        do {
            try await store.journal(jobs, cursor: cursor, deadLetters: deadLetters)
        } catch {
            for trace in traces { trace.end(error) }
            throw error
        }
        for trace in traces { trace.end(nil) }
    }
}

/// Parser batches journaled in order, one transaction each (group commit), with each batch's
/// translation (reading every event's JSON, about a fifth of an event's cost in `make
/// bench-instructions`) done while the batch before it commits, on another core, instead of before.
/// The rules of DESIGN §3 hold as with one call at a time: a batch's commit starts only after the
/// commit before it has succeeded, so batches commit in stream order and the stored cursor never
/// passes an event whose job is not durable; when a commit fails, the next ``journal(_:committed:)``
/// or ``settle()`` throws its error and nothing after it is committed (the stream reconnects from
/// the stored cursor and the events come again). Used by one task; ``settle()`` must be awaited
/// before it is dropped, so that no commit outlives the stream that made it.
public struct PipelinedJournal {
    private let translate: ([ServerSentEvent]) -> TranslatedBatch
    private let commit: @Sendable (TranslatedBatch) async throws -> Void
    /// The commit of the last batch handed over, while it may still be running. A task of its own so
    /// that the caller can read the next batch meanwhile; it is not left unowned: the next
    /// ``journal(_:committed:)`` and ``settle()`` await it, and the stream settles on every way out.
    private var committing: Task<Void, any Error>?

    /// A pipeline that reads each batch with `translate` and commits it with `commit`.
    package init(translate: @escaping ([ServerSentEvent]) -> TranslatedBatch,
                 commit: @escaping @Sendable (TranslatedBatch) async throws -> Void) {
        self.translate = translate
        self.commit = commit
    }

    /// Translates `events`, waits for the batch before them to be committed (throwing its error, in
    /// which case these are not committed), then starts their commit and returns; `committed` runs
    /// after it has succeeded.
    public mutating func journal(_ events: [ServerSentEvent], committed: @escaping @Sendable () -> Void) async throws {
        guard !events.isEmpty else { return }
        let batch = translate(events)
        try await settle()
        let commit = self.commit
        committing = Task {
            try await commit(batch)
            committed()
        }
    }

    /// Waits for the batch in flight to be committed; throws its error.
    public mutating func settle() async throws {
        guard let running = committing else { return }
        committing = nil
        try await running.value
    }
}
