public import AsyncSignals
public import AuthSession
import CheckedInput
import CoalescedLogging
public import CurlHTTP
public import EventStream
public import Foundation
public import Logging
public import StoreModel
import ServerSentEvents
public import ServiceLifecycle
public import Tracing

/// The order stream as a service: one authenticated SSE stream after another, resumed from the
/// stored cursor, each parser batch journaled in one transaction (group commit, see
/// `StreamService+Journal.swift`), until graceful shutdown. Before each stream the store is claimed
/// for the session's user (a different user's data is cleared first, FIELD-NOTES 15). What happens
/// is reported to a ``StreamObserver``; the executor is woken after every commit.
public struct StreamService<C: Clock>: Service where C.Duration == Duration {
    /// The event source every connection starts from; its `lastEventID` is replaced by the stored
    /// cursor at each connection.
    public let source: EventSourceConfiguration
    let loop: CurlLoop
    let session: Session
    let store: any JobJournal
    let wake: WakeSignal
    let observer: any StreamObserver
    let clock: C
    let now: @Sendable () -> Double
    /// Spans of the events that make jobs (``StreamEventTrace``); nil when traces are not exported.
    let tracer: (any Tracer)?
    let logger: Logger

    /// Creates the service. `clock` times reconnect waits, idle timeouts and the commit lag; `now`
    /// is the wall clock (Unix seconds) stamped on journaled jobs.
    public init(
        source: EventSourceConfiguration, loop: CurlLoop, session: Session, store: any JobJournal, wake: WakeSignal,
        observer: any StreamObserver = NoStreamObserver(), clock: C,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }, tracer: (any Tracer)? = nil, logger: Logger
    ) {
        self.source = source
        self.loop = loop
        self.session = session
        self.store = store
        self.wake = wake
        self.observer = observer
        self.clock = clock
        self.now = now
        self.tracer = tracer
        self.logger = logger
    }

    /// Streams until graceful shutdown, or until the backend answers `204`: then it returns, and the
    /// agent runs on without a stream (the agent's service group ignores this service's end).
    public func run() async throws {
        let stopping = StopFlag()
        try await withGracefulShutdownHandler {
            try await streamUntilStopped(stopping: stopping)
            observer.streamStateChanged(.stopped)
        } onGracefulShutdown: {
            stopping.stop()
        }
    }

    private func streamUntilStopped(stopping: StopFlag) async throws {
        // A store that stays unwritable is retried every second: one line, then one a minute.
        let storeFaults = LogCoalescer(logger: logger, interval: .seconds(60))
        // Cancellation (the service group ending because another service failed) ends the loop too:
        // a cancelled event source returns at once, and without this check the loop would spin.
        while !stopping.isStopped, !Task.isCancelled {
            let cursor: String
            do {
                try await claimStore()
                cursor = try await self.cursor()
            } catch {
                storeFaults.log(.error, "cannot read the order store; retrying", key: "store-read",
                                metadata: ["store.reason": "\(error)"])
                try await pause(stopping)
                continue
            }
            observer.streamStateChanged(.connecting)
            var configuration = source
            configuration.lastEventID = cursor
            let events = EventSource(
                configuration: configuration, loop: loop, headerProvider: SessionHeaderProvider(session: session),
                clock: clock, logger: logger)
            stopping.onStop { events.stop() }
            do {
                if try await stream(events, from: cursor) == .serverRequestedStop {
                    logger.warning("the backend answered 204: the stream stays stopped until restart")
                    return
                }
            } catch {
                // The journal could not be written: nothing after the stored cursor is lost, because the
                // next stream starts from it.
                observer.streamStateChanged(.backoff)
                storeFaults.log(.error, "could not journal an event; reconnecting from the stored cursor",
                                key: "store-journal", metadata: ["store.reason": "\(error)"])
                try await pause(stopping)
            }
        }
    }

    /// One event source until it ends: events are committed in the batches the parser hands over
    /// (group commit), one transaction journaling a batch's jobs with its last cursor, each batch
    /// translated while the one before it commits (``PipelinedJournal``).
    private func stream(_ events: EventSource<C>, from cursor: String) async throws -> EventSourceEnd {
        var pending: [ServerSentEvent] = []
        var firstArrival: C.Instant?
        var resumeFrom = cursor  // what the next (re)connection sends as Last-Event-ID
        var journal = pipelinedJournal()
        let (observer, wake, clock, logger, now) = (self.observer, self.wake, self.clock, self.logger, self.now)
        func flush() async throws {
            guard !pending.isEmpty else { return }
            let count = pending.count
            let arrival = firstArrival
            let ids = logger.logLevel <= .debug ? pending.map(\.lastEventID) : []
            try await journal.journal(pending) {
                observer.eventsJournaled(count: count, commitLag: arrival.map { $0.duration(to: clock.now) }, at: now())
                for id in ids { logger.debug("event journaled", metadata: ["stream.event.id": "\(id)"]) }
                wake.signal()
            }
            pending.removeAll(keepingCapacity: true)
            firstArrival = nil
        }
        defer { observer.streamClosed() }
        do {
            // One call per parsed chunk: its events join the pending batch here, and their data is made a
            // String only when the batch is journaled.
            let end = try await events.runBatches({ update in
                switch update {
                case .items(let items):
                    for item in items {
                        switch item {
                        case .event(let event):
                            if firstArrival == nil { firstArrival = clock.now }
                            pending.append(event)
                            resumeFrom = event.lastEventID
                        case .oversizedEventDiscarded(let id):
                            try await flush()
                            try await journal.settle()
                            try await journalOversizedEvent(lastEventID: id)
                            wake.signal()
                        case .comment, .retry:
                            break
                        }
                    }
                case .open:
                    observer.streamStateChanged(.open)
                    logger.info("stream open", metadata: ["stream.cursor": "\(resumeFrom)"])
                case .connectionLost(let error, let delay):
                    observer.streamLost(reason: error.message, retryIn: delay)
                    logger.warning("stream lost", metadata: [
                        "stream.error": "\(error.message)", "stream.retry_in_ms": "\(delay?.milliseconds ?? 0)",
                    ])
                }
            }, batchEnded: { try await flush() })
            try await journal.settle()
            return end
        } catch {
            // No commit outlives this stream: the next one reads the stored cursor after it.
            try? await journal.settle()
            throw error
        }
    }

    /// The store belongs to the session's user; claiming it for another user clears the old data.
    private func claimStore() async throws {
        guard let user = await session.snapshot.userID else { return }
        if try await store.claim(for: user) {
            logger.warning("a different user logged in: the previous user's orders were cleared",
                           metadata: ["store.owner": "\(user)"])
        }
    }

    private func pause(_ stopping: StopFlag) async throws {
        guard !stopping.isStopped else { return }
        try await clock.sleep(for: .seconds(1), tolerance: nil)
    }
}

/// What the stream service reports as it runs, for the agent's state and metrics.
public protocol StreamObserver: Sendable {
    /// The stream entered `state`.
    func streamStateChanged(_ state: StreamState)
    /// A connection was lost for `reason`; the next attempt is in `retryIn` (nil: no retry).
    func streamLost(reason: String, retryIn: Duration?)
    /// An event source ended (its connection is closed).
    func streamClosed()
    /// `count` events were journaled in one commit, `commitLag` after the first arrived, at `at` (Unix seconds).
    func eventsJournaled(count: Int, commitLag: Duration?, at: Double)
}

/// DESIGN §5 `stream.state`.
public enum StreamState: String, Sendable, Hashable {
    /// Opening a connection.
    case connecting
    /// Connected and reading.
    case open
    /// Waiting before the next attempt.
    case backoff
    /// Not streaming (not started, stopped, or told to stop by a 204).
    case stopped
}

extension StreamService where C == ContinuousClock {
    /// Creates the service on the continuous clock.
    public init(
        source: EventSourceConfiguration, loop: CurlLoop, session: Session, store: any JobJournal, wake: WakeSignal,
        observer: any StreamObserver = NoStreamObserver(),
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }, tracer: (any Tracer)? = nil, logger: Logger
    ) {
        self.init(source: source, loop: loop, session: session, store: store, wake: wake, observer: observer,
                  clock: ContinuousClock(), now: now, tracer: tracer, logger: logger)
    }
}

/// An observer that ignores everything.
public struct NoStreamObserver: StreamObserver {
    /// Creates the observer.
    public init() {}
    public func streamStateChanged(_ state: StreamState) {}
    public func streamLost(reason: String, retryIn: Duration?) {}
    public func streamClosed() {}
    public func eventsJournaled(count: Int, commitLag: Duration?, at: Double) {}
}
