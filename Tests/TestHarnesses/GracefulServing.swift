import AsyncSignals
import Logging
public import ServiceLifecycle

/// Runs `server` (a Hummingbird application, an orderlive listener: any ServiceLifecycle service)
/// while `body` runs, then shuts it down gracefully and waits for it: its listening socket closes,
/// every connection it accepted is served, and what is still open after `grace` (a feed, a held
/// request) is cancelled. Cancelling a server's task instead can trap in swift-nio when a connection
/// was accepted but not yet served (apple/swift-nio#2637; `SandboxStopTests` shows it), and that
/// trap would end the whole test process.
public func withGracefulServing<Result: Sendable>(
    _ server: any Service, grace: Duration = .milliseconds(500), _ body: () async throws -> Result
) async throws -> Result {
    var configuration = ServiceGroupConfiguration(
        services: [server], logger: Logger(label: "test-server", factory: { _ in SwiftLogNoOpLogHandler() }))
    configuration.maximumGracefulShutdownDuration = grace
    let serving = ServiceGroup(configuration: configuration)
    return try await withServing({ try await serving.run() }, stop: { await serving.triggerGracefulShutdown() }, body)
}

/// A server that says when it is running, or that it ended: `port` gets the bound port, or nil
/// when `run` returns or throws (a bind that failed), so a test waiting for it never hangs.
public struct ReportingServer: Service {
    let run: @Sendable () async throws -> Void
    let ended: @Sendable () -> Void

    /// `run` serves; `ended` runs when it stops, however it stops.
    public init(run: @escaping @Sendable () async throws -> Void, ended: @escaping @Sendable () -> Void) {
        self.run = run
        self.ended = ended
    }

    public func run() async throws {
        defer { ended() }
        try await run()
    }
}
