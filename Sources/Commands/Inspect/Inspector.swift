public import Agent
import AuthSession
public import CurlHTTP
public import EventStream
public import Logging
import OrderSync
import UnixSignals
import ServerSentEvents

/// Runs `orderlive inspect`: one reconnecting stream, every update rendered to standard output.
public struct Inspector: Sendable {
    /// How an inspection ended, for the exit code.
    public enum Outcome: Sendable, Equatable {
        /// `--count` reached, `--duration` elapsed, a 204, SIGINT/SIGTERM, or a clean end with
        /// `--no-reconnect`: exit 0.
        case finished
        /// With `--no-reconnect`, the connection failed: exit 1 with this reason.
        case failed(String)
    }

    /// The options.
    public let options: InspectOptions
    private let output: LineWriter
    private let diagnostics: LineWriter
    private let logger: Logger

    /// Creates an inspector writing updates to `output` and notes to `diagnostics`.
    public init(
        options: InspectOptions, output: LineWriter = .standardOutput, diagnostics: LineWriter = .standardError,
        logger: Logger
    ) {
        self.options = options
        self.output = output
        self.diagnostics = diagnostics
        self.logger = logger
    }

    /// Validates the options, then streams until done. SIGHUP reconnects at once (no error line);
    /// SIGINT and SIGTERM end it. With `authenticatedBy`, each attempt carries a fresh bearer token
    /// from the session built from that configuration (`inspect --auth`).
    public func run(authenticatedBy configuration: OrderliveConfiguration? = nil) async throws -> Outcome {
        try options.validate()
        return try await CurlLoop.withLoop(logger: logger) { loop in
            guard let configuration else {
                return try await run(loop: loop, clock: ContinuousClock(), handlesSignals: true)
            }
            let session = try SessionFactory(configuration: configuration).session(loop: loop, logger: logger)
            // Fail fast with the reason instead of retrying a stream that cannot authenticate.
            do {
                _ = try await session.accessToken()
            } catch let error as AuthError {
                return .failed("--auth: \(error.message)")
            }
            // The token is refreshed ahead of expiry while the stream stays open (DESIGN §8).
            return try await withThrowingTaskGroup(of: Outcome?.self) { group in
                group.addTask {
                    await session.keepFresh()
                    return nil
                }
                group.addTask {
                    try await run(
                        loop: loop, clock: ContinuousClock(), headerProvider: SessionHeaderProvider(session: session),
                        handlesSignals: true)
                }
                defer { group.cancelAll() }
                while let outcome = try await group.next() {
                    if let outcome { return outcome }
                }
                return .failed("--auth: the session ended")
            }
        }
    }

    /// Streams on an existing loop and clock; for tests and `demo`.
    public func run<C: Clock>(
        loop: CurlLoop, clock: C, headerProvider: any EventStreamHeaderProvider = FixedHeaders(), handlesSignals: Bool
    ) async throws -> Outcome where C.Duration == Duration {
        var headers = options.headers
        if let token = options.bearerToken { headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token)") }
        let configuration = EventSourceConfiguration(
            url: options.url,
            method: options.method,
            body: options.body.map { Array($0.utf8) },
            headers: headers,
            lastEventID: options.lastEventID,
            initialDelay: options.initialDelay,
            idleTimeout: options.readTimeout,
            reconnects: options.reconnects,
            reportsComments: options.showsComments, userAgent: OrderliveVersion.userAgent)
        let source = EventSource(
            configuration: configuration, loop: loop, headerProvider: headerProvider, clock: clock, logger: logger)
        let renderer = InspectRenderer(
            json: options.json,
            color: options.color ?? (output.isTerminal && !environmentHasNoColor()))
        let duration = options.duration

        // Trap the signals before the first request, so an early SIGHUP cannot kill the process.
        let signals = handlesSignals ? await UnixSignalsSequence(trapping: .sighup, .sigint, .sigterm) : nil
        return try await withThrowingTaskGroup(of: Void.self) { group in
            if let signals {
                group.addTask {
                    for await signal in signals {
                        if signal == .sighup { source.restart() } else { source.stop() }
                    }
                }
            }
            if let duration {
                group.addTask {
                    try await clock.sleep(for: duration)
                    source.stop()
                }
            }
            defer { group.cancelAll() }
            var shown = 0
            let end = try await source.run { update in
                if case .event(let event) = update, !options.eventTypes.isEmpty, !options.eventTypes.contains(event.type) {
                    return
                }
                if case .oversizedEventDiscarded = update, options.json {
                    diagnostics.write(line: "orderlive: an event over the size limit was discarded")
                    return
                }
                if let line = renderer.line(for: update, time: localTimeOfDay()), !output.write(line: line) {
                    // The reader went away (a closed pipe): nobody is watching any more.
                    source.stop()
                    return
                }
                if case .event = update {
                    shown += 1
                    if let count = options.count, shown >= count { source.stop() }
                }
            }
            switch end {
            case .stopped:
                return .finished
            case .serverRequestedStop:
                if !options.json { diagnostics.write(line: "orderlive: the server answered 204: not reconnecting") }
                return .finished
            case .connectionLost(let error):
                return error.kind == .streamEnded ? .finished : .failed(error.message)
            }
        }
    }
}

private func environmentHasNoColor() -> Bool {
    guard let value = getenv("NO_COLOR") else { return false }
    return value.pointee != 0
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
