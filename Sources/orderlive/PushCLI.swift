import ArgumentParser
import Commands

/// `orderlive push`
struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Talk to a push endpoint the way a backend does.",
        subcommands: [Send.self]
    )

    /// `orderlive push send FILE|-`
    struct Send: OperatorCommand {
        static let configuration = CommandConfiguration(
            abstract: "POST a Gorush payload to the push endpoint and print the answer.",
            discussion: """
                Authenticates as ingest.auth says: a bearer header, or Standard Webhooks headers signed with \
                ingest.secret_file over the exact bytes sent. Prints the status and the body; exits 1 unless \
                the answer is 2xx.
                """
        )

        @OptionGroup var config: ConfigOption

        @Argument(help: "The JSON payload file, or - for standard input.") var file: String

        @Option(help: "The endpoint (default: http://<ingest.listen>/api/push).") var url: String?

        @Option(help: "The Standard Webhooks message id; reuse one to test duplicate handling (default: random).")
        var id: String?

        func perform(_ commands: OperatorCommands) async throws {
            try await commands.sendPush(file: file, url: url, id: id)
        }
    }
}
