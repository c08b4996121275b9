import CheckedInput
import AuthSession
import CurlHTTP
import EventStream
import Foundation
import Logging
import OrderStore
import OrderSync
import ServerSentEvents
import ServiceLifecycle
import Synchronization

/// The order stream as a service: one authenticated SSE stream after another, resumed from the
/// stored cursor, each parser batch journaled in one transaction (group commit), until graceful
/// shutdown. Before each stream the store is claimed for the session's user (a different user's
/// data is cleared first, FIELD-NOTES 15).
struct StreamService: Service {
    let configuration: OrderliveConfiguration
    let loop: CurlLoop
    let session: Session
    let store: OrderStore
    let wake: WakeSignal
    let state: AgentState
    let metrics: AgentMetrics
    let logger: Logger

    func run() async throws {
        let stopping = StopFlag()
        try await withGracefulShutdownHandler {
            try await streamUntilStopped(stopping: stopping)
            state.update { $0.stream = .stopped }
            // A 204 ends streaming, but a service that returns would stop the whole group.
            if !stopping.isStopped { try? await gracefulShutdown() }
        } onGracefulShutdown: {
            stopping.stop()
        }
    }

    private func streamUntilStopped(stopping: StopFlag) async throws {
        let upstream = configuration.upstream
        let stream = configuration.stream
        let ingest = StreamIngest(store: store, logger: logger)
        while !stopping.isStopped {
            let cursor: String
            do {
                try await claimStore()
                cursor = try ingest.cursor()
            } catch {
                logger.error("cannot read the order store; retrying", metadata: ["store.reason": "\(error)"])
                try await pause(stopping)
                continue
            }
            state.update { $0.stream = .connecting }
            let source = EventSource(
                configuration: EventSourceConfiguration(
                    url: upstream.baseURL + upstream.eventsPath, lastEventID: cursor, initialDelay: stream.initialDelay,
                    maximumDelay: stream.maximumDelay, resetAfter: stream.resetAfter, idleTimeout: stream.idleTimeout,
                    connectTimeout: upstream.connectTimeout, tls: upstream.tls),
                loop: loop, headerProvider: SessionHeaderProvider(session: session), clock: ContinuousClock(),
                logger: logger)
            stopping.onStop { source.stop() }
            do {
                // Events are committed in the batches the parser hands over (group commit): one
                // transaction journals a batch's jobs with its last cursor.
                var pending: [ServerSentEvent] = []
                var firstArrival: ContinuousClock.Instant?
                var resumeFrom = cursor  // what the next (re)connection sends as Last-Event-ID
                func flush() throws {
                    guard !pending.isEmpty else { return }
                    try ingest.handle(batch: pending)
                    if let firstArrival { metrics.commitLag.recordNanoseconds(Checked.nanoseconds(of: .now - firstArrival)) }
                    metrics.streamEvents.increment(by: Int64(pending.count))
                    if logger.logLevel <= .debug {
                        for event in pending {
                            logger.debug("event journaled", metadata: ["stream.event.id": "\(event.lastEventID)"])
                        }
                    }
                    pending.removeAll(keepingCapacity: true)
                    firstArrival = nil
                    state.update { $0.lastEventAt = Date().timeIntervalSince1970 }
                    wake.signal()
                }
                let end = try await source.run({ update in
                    switch update {
                    case .event(let event):
                        if firstArrival == nil { firstArrival = .now }
                        pending.append(event)
                        resumeFrom = event.lastEventID
                    case .oversizedEventDiscarded(let id):
                        try flush()
                        try ingest.handleOversizedEvent(lastEventID: id)
                        wake.signal()
                    case .open:
                        state.update { $0.stream = .open }
                        metrics.streamOpen.set(Int64(1))
                        logger.info("stream open", metadata: ["stream.cursor": "\(resumeFrom)"])
                    case .connectionLost(let error, let delay):
                        state.update { state in
                            state.stream = delay == nil ? .stopped : .backoff
                            state.reconnects += 1
                            state.lastStreamError = error.message
                        }
                        metrics.streamOpen.set(Int64(0))
                        metrics.streamReconnects.increment()
                        logger.warning("stream lost", metadata: [
                            "stream.error": "\(error.message)", "stream.retry_in_ms": "\(delay?.milliseconds ?? 0)",
                        ])
                    case .comment:
                        break
                    }
                }, batchEnded: { try flush() })
                metrics.streamOpen.set(Int64(0))
                if end == .serverRequestedStop {
                    logger.warning("the backend answered 204: the stream stays stopped until restart")
                    return
                }
            } catch {
                // The journal could not be written: nothing after the stored cursor is lost, because the
                // next stream starts from it.
                metrics.streamOpen.set(Int64(0))
                state.update { $0.stream = .backoff }
                logger.error("could not journal an event; reconnecting from the stored cursor",
                             metadata: ["store.reason": "\(error)"])
                try await pause(stopping)
            }
        }
    }

    /// The store belongs to the session's user; claiming it for another user clears the old data.
    private func claimStore() async throws {
        guard let user = await session.snapshot.userID else { return }
        if try store.claim(for: user) {
            logger.warning("a different user logged in: the previous user's orders were cleared",
                           metadata: ["store.owner": "\(user)"])
        }
    }

    private func pause(_ stopping: StopFlag) async throws {
        guard !stopping.isStopped else { return }
        try await Task.sleep(for: .seconds(1))
    }
}

/// Set once on shutdown; runs the registered stop action.
final class StopFlag: Sendable {
    private let state = Mutex<(stopped: Bool, action: (@Sendable () -> Void)?)>((false, nil))

    var isStopped: Bool { state.withLock { $0.stopped } }

    func stop() {
        let action = state.withLock { state in
            state.stopped = true
            return state.action
        }
        action?()
    }

    func onStop(_ action: @escaping @Sendable () -> Void) {
        let stoppedAlready = state.withLock { state in
            state.action = action
            return state.stopped
        }
        if stoppedAlready { action() }
    }
}
