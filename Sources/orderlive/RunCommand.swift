import Agent
import ArgumentParser
import Logging
import ServiceLifecycle

/// `orderlive run`
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the agent: the order stream into the local store, until SIGINT/SIGTERM.",
        discussion: """
            Needs a session (orderlive login, or a configured password). Resumes from the stored cursor, \
            applies changes one at a time, and on SIGINT/SIGTERM finishes the job in hand; the journal \
            keeps the rest for the next start. (The push endpoint, /readyz and /metrics come later.)
            """
    )

    @OptionGroup var config: ConfigOption

    func run() async throws {
        let configuration = try await config.load()
        // The one logging bootstrap of the process (STYLE 7); levels come from log.level.
        let level = configuration.log.level
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "orderlive")
        logger.logLevel = level
        // The service group owns the long-running work and turns SIGTERM/SIGINT into graceful shutdown.
        let group = ServiceGroup(configuration: .init(
            services: [StreamAgent(configuration: configuration, logger: logger)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        do {
            try await group.run()
        } catch let error as StreamAgent.StartError {
            throw RuntimeFailure(description: error.description)
        } catch {
            throw RuntimeFailure(description: "\(error)")
        }
    }
}
