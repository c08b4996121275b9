import AsyncSignals
public import Logging

extension Sandbox {
    /// Runs a Sandbox for the duration of `body`, then stops it with ``stop()`` and waits until it has.
    public static func withRunning<Result: Sendable>(
        _ configuration: SandboxConfiguration = .init(port: 0),
        logger: Logger = Logger(label: "orderlive.sandbox", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (Sandbox) async throws -> Result
    ) async throws -> Result {
        let sandbox = Sandbox(configuration: configuration, logger: logger)
        return try await withServing({ try await sandbox.run() }, stop: { await sandbox.stop() }) {
            _ = await sandbox.port
            return try await body(sandbox)
        }
    }
}
