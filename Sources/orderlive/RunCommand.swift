import ArgumentParser
import Commands

/// `orderlive run`
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the agent: the order stream and the push endpoint into the local store, until SIGINT/SIGTERM.",
        discussion: """
            Resumes the stream from the stored cursor, serves POST /api/push, /healthz, /readyz, /metrics and \
            /api/status on ingest.listen, and applies changes one at a time. SIGINT/SIGTERM: pushes get 503, the \
            job in hand finishes, the journal keeps the rest (exit 0 within 10 s); a second signal exits at once. \
            Without a session it still serves the endpoint and the store, and /readyz says why it is not syncing.
            """
    )

    @OptionGroup var config: ConfigOption

    func run() async throws {
        try await ProcessCommands.runAgent(config.load())
    }
}
