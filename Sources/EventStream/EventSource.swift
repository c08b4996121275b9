import AsyncSignals
public import CurlHTTP
public import Logging
import ServerSentEvents

#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A reconnecting Server-Sent Events client (DESIGN §8 "Stream").
///
/// It reconnects after every loss — network error, clean end of body, failed first connect — with
/// exponential, jittered backoff; sends `Last-Event-ID` when the cursor is non-empty; asks its header
/// provider for headers before every attempt; drops a connection that stays silent past the idle
/// timeout; stops for good on 204. Time and randomness are injected.
public final class EventSource<C: Clock>: Sendable where C.Duration == Duration {
    /// The configuration it was made with.
    public let configuration: EventSourceConfiguration
    private let loop: CurlLoop
    private let headerProvider: any EventStreamHeaderProvider
    private let clock: C
    private let random: @Sendable () -> Double
    private let wallClock: @Sendable () -> Int64
    private let logger: Logger
    private let controls = EventSourceControls()

    /// Creates a client. `random` returns numbers in [0, 1] for jitter; `wallClock` the Unix time,
    /// for HTTP-date `Retry-After` values.
    public init(
        configuration: EventSourceConfiguration,
        loop: CurlLoop,
        headerProvider: any EventStreamHeaderProvider = FixedHeaders(),
        clock: C,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) },
        wallClock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) },
        logger: Logger
    ) {
        self.configuration = configuration
        self.loop = loop
        self.headerProvider = headerProvider
        self.clock = clock
        self.random = random
        self.wallClock = wallClock
        self.logger = logger
    }

    /// Drops the current connection and reconnects at once, without reporting a loss (a requested
    /// restart); during a backoff wait, ends the wait.
    public func restart() {
        controls.restart()
    }

    /// Ends the stream: no further request or update. ``run(_:)`` returns ``EventSourceEnd/stopped``.
    public func stop() {
        controls.stop()
    }

    /// Keeps the stream open, calling `handler` with every update, until stopped, told to stop by
    /// the server, or (with reconnects off) the first loss. Errors thrown by `handler` end the
    /// stream and are rethrown. Cancelling the task stops the stream.
    public func run(_ handler: (EventSourceUpdate) async throws -> Void) async throws -> EventSourceEnd {
        try await run(handler, batchEnded: {})
    }

    /// Like ``run(_:)``, and calls `batchEnded` after each batch of updates the parser handed over
    /// (and before a connection's end is reported), so a consumer can commit many events at once —
    /// group commit — without ever holding one back past the batch it arrived in.
    public func run(
        _ handler: (EventSourceUpdate) async throws -> Void, batchEnded: () async throws -> Void
    ) async throws -> EventSourceEnd {
        let controls = self.controls
        return try await runBatches({ update in
            switch update {
            case .open(let head):
                try await handler(.open(head))
            case .connectionLost(let error, let retryIn):
                try await handler(.connectionLost(error, retryIn: retryIn))
            case .items(let items):
                for item in items {
                    // Nothing is handed on once the stream is stopped; the stream ends after this batch.
                    if controls.isStopped { return }
                    switch item {
                    case .event(let event):
                        try await handler(.event(event))
                    case .comment(let comment):
                        try await handler(.comment(comment))
                    case .oversizedEventDiscarded(let id):
                        try await handler(.oversizedEventDiscarded(lastEventID: id))
                    case .retry:
                        break
                    }
                }
            }
        }, batchEnded: batchEnded)
    }

    /// Like ``run(_:batchEnded:)``, with one call per chunk's parsed items instead of one per event:
    /// for a consumer that takes events in bulk (a count, a group commit), and reads only what it needs
    /// of each.
    public func runBatches(
        _ handler: (EventSourceBatchUpdate) async throws -> Void, batchEnded: () async throws -> Void = {}
    ) async throws -> EventSourceEnd {
        try await withTaskCancellationHandler {
            try await runAttempts(handler, batchEnded: batchEnded)
        } onCancel: {
            controls.stop()
        }
    }

    private enum Outcome {
        case stopped
        case serverStop
        case restart(uptime: Duration?)
        case lost(EventSourceError, retryAfter: Duration?, uptime: Duration?)
    }

    /// What one connection hands to the next: the cursor it reached and the backoff's state
    /// (including a server's `retry:`).
    private struct Carried {
        var lastEventID: String
        var backoff: Backoff
    }

    private func runAttempts(
        _ handler: (EventSourceBatchUpdate) async throws -> Void, batchEnded: () async throws -> Void
    ) async throws -> EventSourceEnd {
        var carried = Carried(
            lastEventID: configuration.lastEventID,
            backoff: Backoff(
                initial: configuration.initialDelay, maximum: configuration.maximumDelay,
                resetAfter: configuration.resetAfter))
        var deadline: C.Instant?
        while true {
            if let wakeAt = deadline {
                _ = await controls.wait(until: wakeAt, clock: clock)
                deadline = nil
            }
            if controls.isStopped { return .stopped }

            let outcome: Outcome
            var sentHeaders = HTTPHeaders()
            do {
                sentHeaders = try await headerProvider.headers()
                outcome = try await connect(
                    providerHeaders: sentHeaders, carried: &carried, handler: handler, batchEnded: batchEnded)
            } catch let error as HeaderProviderFailure {
                outcome = .lost(EventSourceError(kind: .headers, message: error.message), retryAfter: nil, uptime: nil)
            } catch is CancellationError where controls.isStopped {
                return .stopped
            }

            switch outcome {
            case .stopped:
                return .stopped
            case .serverStop:
                logger.info("event stream stopped by the server (204)", metadata: ["stream.url": "\(configuration.url)"])
                return .serverRequestedStop
            case .restart(let uptime):
                if let uptime { carried.backoff.connectionEnded(uptime: uptime) }
                logger.debug("event stream restarting", metadata: ["stream.url": "\(configuration.url)"])
            case .lost(let error, let retryAfter, let uptime):
                if controls.isStopped { return .stopped }
                if let uptime { carried.backoff.connectionEnded(uptime: uptime) }
                if error.kind == .unauthorized { await headerProvider.unauthorized(sentHeaders) }
                guard configuration.reconnects else {
                    try await handler(.connectionLost(error, retryIn: nil))
                    return .connectionLost(error)
                }
                let delay = carried.backoff.nextDelay(unit: random(), retryAfter: retryAfter)
                deadline = clock.now.advanced(by: delay)
                logger.info("event stream lost", metadata: [
                    "stream.url": "\(configuration.url)", "stream.error": "\(error.message)",
                    "stream.retry_in_ms": "\(delay.milliseconds)",
                ])
                try await handler(.connectionLost(error, retryIn: delay))
            }
        }
    }

    private func makeRequest(providerHeaders: HTTPHeaders, lastEventID: String) -> HTTPRequest {
        var headers: HTTPHeaders = [
            "Accept": "text/event-stream",
            "Cache-Control": "no-cache",
            "User-Agent": configuration.userAgent,
        ]
        for field in configuration.headers { headers.replaceOrAdd(name: field.name, value: field.value) }
        for field in providerHeaders { headers.replaceOrAdd(name: field.name, value: field.value) }
        // SSE-RULES 22: Last-Event-ID only when non-empty; the value cannot hold NUL, CR or LF.
        headers.remove(name: "Last-Event-ID")
        if !lastEventID.isEmpty { headers.add(name: "Last-Event-ID", value: lastEventID) }
        return HTTPRequest(
            url: configuration.url, method: configuration.method, headers: headers, body: configuration.body,
            connectTimeout: configuration.connectTimeout, timeout: nil, tls: configuration.tls)
    }

    private func connect(
        providerHeaders: HTTPHeaders,
        carried: inout Carried,
        handler: (EventSourceBatchUpdate) async throws -> Void,
        batchEnded: () async throws -> Void
    ) async throws -> Outcome {
        let request = makeRequest(providerHeaders: providerHeaders, lastEventID: carried.lastEventID)
        let delegate = ParsingDelegate(configuration: configuration, lastEventID: carried.lastEventID, clock: clock)
        let transfer: StreamingTransfer
        do {
            transfer = try loop.startStream(request, delegate: delegate)
        } catch {
            return .lost(EventSourceError(kind: .transport(error.kind), message: error.message),
                         retryAfter: nil, uptime: nil)
        }
        delegate.attach(transfer)
        guard controls.attach(transfer) else {
            transfer.cancel()
            return .stopped
        }
        let idleTimeout = configuration.idleTimeout
        let clock = self.clock
        let controls = self.controls
        do {
            let outcome = try await withThrowingTaskGroup(of: Void.self) { group -> Outcome in
                if let idleTimeout {
                    group.addTask {
                        await Self.watchIdle(delegate: delegate, timeout: idleTimeout, clock: clock, controls: controls)
                    }
                }
                defer { group.cancelAll() }
                return try await consume(
                    delegate: delegate, transfer: transfer, carried: &carried, handler: handler,
                    batchEnded: batchEnded)
            }
            _ = controls.detach()
            // Whatever ended the connection, the events handled so far are committed before anything else.
            try await batchEnded()
            return outcome
        } catch {
            transfer.cancel()
            _ = controls.detach()
            throw error
        }
    }

    private func consume(
        delegate: ParsingDelegate<C>,
        transfer: StreamingTransfer,
        carried: inout Carried,
        handler: (EventSourceBatchUpdate) async throws -> Void,
        batchEnded: () async throws -> Void
    ) async throws -> Outcome {
        var openedAt: C.Instant?
        func uptime() -> Duration? { openedAt.map { $0.duration(to: clock.now) } }
        while true {
            let batch: [StreamItem]
            do {
                batch = try await delegate.channel.nextBatch()
            } catch is CancellationError {
                transfer.cancel()
                return .stopped
            }
            if batch.isEmpty {
                return .lost(EventSourceError(kind: .streamEnded, message: "stream ended"), retryAfter: nil,
                             uptime: uptime())
            }
            for item in batch {
                if controls.isStopped {
                    transfer.cancel()
                    return .stopped
                }
                switch item {
                case .head(let head):
                    switch ResponseDecision.classify(head, now: wallClock(), maximum: configuration.maximumDelay) {
                    case .open:
                        openedAt = clock.now
                        try await handler(.open(head))
                    case .stop:
                        transfer.cancel()
                        return .serverStop
                    case .unauthorized:
                        transfer.cancel()
                        return .lost(EventSourceError(kind: .unauthorized, message: "HTTP 401: credentials rejected"),
                                     retryAfter: nil, uptime: nil)
                    case .retry(let reason, let retryAfter):
                        transfer.cancel()
                        let kind: EventSourceError.Kind = head.status == 200 ? .contentType : .status(head.status)
                        return .lost(EventSourceError(kind: kind, message: reason), retryAfter: retryAfter, uptime: nil)
                    }
                case .parsed(let parsed):
                    for position in parsed.nonEventPositions {
                        switch parsed[position] {
                        case .retry(let milliseconds):
                            carried.backoff.serverRequested(milliseconds: milliseconds)
                        case .oversizedEventDiscarded:
                            logger.warning("event over the size limit discarded", metadata: [
                                "stream.url": "\(configuration.url)",
                                "stream.limit_bytes": "\(configuration.maximumEventBytes)",
                            ])
                        case .event, .comment:
                            break
                        }
                    }
                    try await handler(.items(parsed))
                    if controls.isStopped {
                        transfer.cancel()
                        return .stopped
                    }
                case .cursor(let id):
                    carried.lastEventID = id
                case .end(let result):
                    switch controls.pendingEndReason {
                    case .stop:
                        return .stopped
                    case .restart:
                        return .restart(uptime: uptime())
                    case .idleTimeout:
                        let timeout = configuration.idleTimeout ?? .zero
                        return .lost(EventSourceError(
                            kind: .idleTimeout, message: "no data for \(timeout.milliseconds) ms (idle timeout)"),
                            retryAfter: nil, uptime: uptime())
                    case nil:
                        break
                    }
                    switch result {
                    case .success:
                        return .lost(EventSourceError(kind: .streamEnded, message: "stream ended"),
                                     retryAfter: nil, uptime: uptime())
                    case .failure(let error):
                        return .lost(EventSourceError(kind: .transport(error.kind), message: error.description),
                                     retryAfter: nil, uptime: uptime())
                    }
                }
            }
            try await batchEnded()
        }
    }

    private static func watchIdle(
        delegate: ParsingDelegate<C>, timeout: Duration, clock: C, controls: EventSourceControls
    ) async {
        while !Task.isCancelled {
            let deadline = delegate.lastActivity.advanced(by: timeout)
            if clock.now >= deadline {
                if delegate.channel.consumerIsBehind {
                    // The consumer, not the server, is slow: that is not a dead connection.
                    delegate.touch()
                    continue
                }
                controls.idleTimedOut()
                return
            }
            // Sliced: this watcher is cancelled at every reconnect, and a whole 45 s sleep held memory
            // in proportion to the reconnects of the last 45 s (0.75 MB per 1,000 quick reconnects,
            // measured by `BENCH_ONLY=memory`).
            do { try await clock.sleepInSlices(until: deadline) } catch { return }
        }
    }
}
