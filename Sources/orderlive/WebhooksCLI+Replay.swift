import ArgumentParser
import Commands

extension Webhooks {
    /// `orderlive webhooks replay ID --since CHANGE|TIME`
    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send again what the change log still holds after a change id (seq) or since an RFC 3339 time.")
        @OptionGroup var config: ConfigOption
        @OptionGroup var endpoint: EndpointID
        @Option(help: "A change id (the changes after it are sent) or an RFC 3339 time (the changes applied from then).")
        var since: String

        func validate() throws {
            try usage(OperatorCommands.ReplayStart(since))
        }

        func run() async throws {
            try await config.commands()
                .replayWebhook(endpoint.number, from: OperatorCommands.ReplayStart(since), named: since)
        }
    }

    /// `orderlive webhooks test ID`
    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send the endpoint one signed test request and show its answer.")
        @OptionGroup var config: ConfigOption
        @OptionGroup var endpoint: EndpointID

        func run() async throws {
            try await config.commands().testWebhook(endpoint.number)
        }
    }

    /// `orderlive webhooks rotate ID`
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give an endpoint a new signing key; for 24 hours requests carry signatures with both, so the receiver can switch.")
        @OptionGroup var config: ConfigOption
        @OptionGroup var endpoint: EndpointID
        @Option(help: "A file holding the new whsec_… key; without it one is made and written 0600 to a file named here.")
        var secretFile: String?

        func run() async throws {
            try await config.commands().rotateWebhook(endpoint.number, secretFile: secretFile)
        }
    }
}
