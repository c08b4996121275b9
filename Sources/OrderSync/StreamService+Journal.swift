import Foundation
import Logging
import StoreModel
import ServerSentEvents

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
        var jobs: [NewJob] = []
        var letters: [DeadLetterRecord] = []
        var dispositions: [EventTranslation.Disposition] = []
        var cursor: String?
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
            jobs += translation.jobs
            if let letter = translation.deadLetter { letters.append(letter) }
            if !event.lastEventID.isEmpty { cursor = event.lastEventID }
            dispositions.append(translation.disposition)
        }
        try await store.journal(jobs, cursor: cursor, deadLetters: letters)
        return dispositions
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
