import AsyncSignals
import CurlHTTP
import EventStream
import Logging
import Sandbox
import ServerSentEvents
import TestKit
import Testing

/// A Sandbox, a curl loop and a manual clock for one test.
struct Harness {
    let sandbox: Sandbox
    let loop: CurlLoop
    let clock = ManualClock()
    let baseURL: String

    static func run(_ body: (Harness) async throws -> Void) async throws {
        try await Sandbox.withRunning { sandbox in
            let baseURL = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: quietLogger) { loop in
                try await body(Harness(sandbox: sandbox, loop: loop, baseURL: baseURL))
            }
        }
    }

    /// A source on the Sandbox's event stream with no idle timeout and jitter pinned to the full delay.
    func source(
        provider: any EventStreamHeaderProvider = FixedHeaders(),
        logger: Logger = quietLogger,
        _ configure: (inout EventSourceConfiguration) -> Void = { _ in }
    ) -> EventSource<ManualClock> {
        var configuration = EventSourceConfiguration(url: baseURL + "/v1/events", idleTimeout: nil)
        configure(&configuration)
        return EventSource(
            configuration: configuration, loop: loop, headerProvider: provider, clock: clock,
            random: { 1.0 }, wallClock: { 1_000_000 }, logger: logger)
    }
}

func isLoss(_ update: EventSourceUpdate) -> Bool {
    if case .connectionLost = update { return true }
    return false
}

func events(_ updates: [EventSourceUpdate]) -> [ServerSentEvent] {
    updates.compactMap { if case .event(let event) = $0 { event } else { nil } }
}

/// Issues `token-1`, then `token-2` once told the first was rejected.
final class RotatingTokens: EventStreamHeaderProvider {
    private let state = Locked((current: 1, rejected: [String]()))

    var rejected: [String] { state.withLock { $0.rejected } }

    func headers() async throws -> HTTPHeaders {
        let current = state.withLock { $0.current }
        return ["Authorization": "Bearer token-\(current)"]
    }

    func unauthorized(_ headers: HTTPHeaders) async {
        state.withLock { state in
            state.rejected.append(headers["Authorization"] ?? "")
            state.current += 1
        }
    }
}
