import AuthSession
import CurlHTTP
import EventStream
import Foundation
import Logging
import OrderStore
import OrderSync
import ServerSentEvents
import ServiceLifecycle
import UnixSignals

/// `orderlive run`, as far as it is built: the order stream (authenticated by the session, resumed
/// from the stored cursor) journaling into the store, and the serial executor applying the journal,
/// until SIGINT/SIGTERM. The push endpoint, health and metrics join it later.
public struct StreamAgent: Sendable {
    /// Why the agent could not start.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        /// What is wrong and what to do.
        public var description: String
    }

    private let configuration: OrderliveConfiguration
    private let logger: Logger

    /// Creates the agent.
    public init(configuration: OrderliveConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs until SIGINT or SIGTERM (or the task is cancelled). The job in hand finishes; the
    /// journal holds the rest for the next start.
    public func run(handlesSignals: Bool) async throws {
        try await run(handlesSignals: handlesSignals, stopping: StopFlag())
    }

    func run(handlesSignals: Bool, stopping: StopFlag) async throws {
        let signals = handlesSignals ? await UnixSignalsSequence(trapping: .sigint, .sigterm) : nil
        try await CurlLoop.withLoop(logger: logger) { loop in
            let session: Session
            do {
                session = try AuthCommands.makeSession(configuration: configuration, loop: loop, logger: logger)
                try AuthCommands.makeStore(configuration: configuration).ensureDirectory()
            } catch let error as AuthError {
                throw StartError(description: error.message)
            }
            do {
                _ = try await session.accessToken()
            } catch let error as AuthError where error.kind != .transient && error.kind != .invalidResponse {
                throw StartError(description: "\(error.message)")
            } catch let error as AuthError {
                logger.warning("the backend is not reachable yet; the stream will keep trying",
                               metadata: ["auth.reason": "\(error.message)"])
            }
            let store: OrderStore
            do {
                store = try OrderStore(
                    path: OrderCommands.databasePath(stateDirectory: configuration.store.stateDirectory),
                    durability: configuration.store.durability == .full ? .full : .normal)
            } catch {
                throw StartError(description: "cannot open the order database: \(error)")
            }
            if let user = await session.snapshot.userID, try store.claim(for: user) {
                logger.warning("a different user logged in: the previous user's orders were cleared",
                               metadata: ["store.owner": "\(user)"])
            }
            let wake = WakeSignal()
            let executor = SyncExecutor(
                store: store, source: OrdersClient(
                    loop: loop, session: session, baseURL: configuration.upstream.baseURL,
                    ordersPath: configuration.upstream.ordersPath, connectTimeout: configuration.upstream.connectTimeout,
                    requestTimeout: configuration.upstream.requestTimeout, tls: configuration.upstream.tls),
                configuration: .init(maximumAttempts: configuration.sync.maximumAttempts, pageSize: configuration.sync.pageSize),
                logger: logger)
            let ingest = StreamIngest(store: store, logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await executor.run(wake: wake) }
                if let signals {
                    group.addTask {
                        for await _ in signals {
                            self.logger.info("stopping: finishing the job in hand")
                            stopping.stop()
                            return
                        }
                    }
                }
                try await streamUntilStopped(loop: loop, session: session, ingest: ingest, wake: wake, stopping: stopping)
                group.cancelAll()
            }
            logger.info("stopped")
        }
    }

    /// One stream after another: a stream ends only when stopping, or when the journal could not be
    /// written — then a new one resumes from the durable cursor, so no event is skipped.
    private func streamUntilStopped(
        loop: CurlLoop, session: Session, ingest: StreamIngest, wake: WakeSignal, stopping: StopFlag
    ) async throws {
        let upstream = configuration.upstream
        let stream = configuration.stream
        while !stopping.isStopped {
            let cursor: String
            do {
                cursor = try ingest.cursor()
            } catch {
                logger.error("cannot read the stream cursor; retrying", metadata: ["store.reason": "\(error)"])
                try await Task.sleep(for: .seconds(1))
                continue
            }
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
                func flush() throws {
                    guard !pending.isEmpty else { return }
                    try ingest.handle(batch: pending)
                    for event in pending {
                        logger.debug("event journaled", metadata: ["stream.event.id": "\(event.lastEventID)"])
                    }
                    pending.removeAll(keepingCapacity: true)
                    wake.signal()
                }
                let end = try await source.run({ update in
                    switch update {
                    case .event(let event):
                        pending.append(event)
                    case .oversizedEventDiscarded(let id):
                        try flush()
                        try ingest.handleOversizedEvent(lastEventID: id)
                        wake.signal()
                    case .open:
                        logger.info("stream open", metadata: ["stream.cursor": "\(cursor)"])
                    case .connectionLost(let error, let delay):
                        logger.warning("stream lost", metadata: [
                            "stream.error": "\(error.message)", "stream.retry_in_ms": "\(delay?.milliseconds ?? 0)",
                        ])
                    case .comment:
                        break
                    }
                }, batchEnded: { try flush() })
                if end == .serverRequestedStop {
                    logger.warning("the backend answered 204: the stream stays stopped until restart")
                    return
                }
            } catch {
                // The journal could not be written: nothing after the stored cursor is lost, because the
                // next stream starts from it.
                logger.error("could not journal an event; reconnecting from the stored cursor",
                             metadata: ["store.reason": "\(error)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
    }
}

extension StreamAgent: Service {
    /// As a service in a `ServiceGroup`: graceful shutdown stops the stream and lets the job in hand
    /// finish; the method returns only then (a 204 from the backend keeps it waiting for shutdown).
    public func run() async throws {
        let stopping = StopFlag()
        try await withGracefulShutdownHandler {
            try await run(handlesSignals: false, stopping: stopping)
            if !stopping.isStopped { try? await gracefulShutdown() }
        } onGracefulShutdown: {
            stopping.stop()
        }
    }
}

/// Set once on SIGINT/SIGTERM; runs the registered stop action.
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

import Synchronization
