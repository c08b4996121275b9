import CurlHTTP
import Logging
import Sandbox
import UnixSignals

/// `orderlive demo`: the Sandbox backend on a free loopback port and a live view of its order
/// stream, in one process, until SIGINT/SIGTERM (or `duration`).
public struct Demo: Sendable {
    private let eventInterval: Duration
    private let duration: Duration?
    private let json: Bool
    private let logger: Logger

    /// Creates a demo; events arrive every `eventInterval`.
    public init(eventInterval: Duration = .milliseconds(700), duration: Duration? = nil, json: Bool = false, logger: Logger) {
        self.eventInterval = eventInterval
        self.duration = duration
        self.json = json
        self.logger = logger
    }

    /// Runs until interrupted or `duration` elapses.
    public func run() async throws {
        let sandboxLogger = Logger(label: "orderlive.sandbox", factory: { _ in SwiftLogNoOpLogHandler() })
        let sandbox = Sandbox(
            configuration: SandboxConfiguration(port: 0, eventInterval: eventInterval, heartbeatInterval: .seconds(5)),
            logger: sandboxLogger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await sandbox.run() }
            let url = await sandbox.baseURL + "/v1/events"
            if !json {
                LineWriter.standardError.write(line: "orderlive demo: sandbox backend on \(await sandbox.baseURL)")
                LineWriter.standardError.write(line: "orderlive demo: watching \(url) — orders change every "
                    + "\(InspectRenderer.seconds(eventInterval)); Ctrl-C to stop, kill -HUP \(processID()) to reconnect")
            }
            let inspector = Inspector(
                options: InspectOptions(url: url, showsComments: true, readTimeout: .seconds(20), duration: duration, json: json),
                logger: logger)
            _ = try await inspector.run()
            group.cancelAll()
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private func processID() -> Int32 { getpid() }
