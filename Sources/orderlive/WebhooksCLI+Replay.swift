import ArgumentParser
import Commands

extension Webhooks {
    /// `orderlive webhooks replay ID --since CHANGE|TIME`
    struct Replay: EndpointCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send again what the change log still holds after a change id (seq) or since an RFC 3339 time.")
        @OptionGroup var endpoint: ChosenEndpoint
        @Option(help: "A change id (the changes after it are sent) or an RFC 3339 time (the changes applied from then).")
        var since: String

        func validate() throws {
            try usage(OperatorCommands.ReplayStart(since))
        }

        func perform(_ commands: OperatorCommands, on id: Int64) async throws {
            try await commands.replayWebhook(id, from: OperatorCommands.ReplayStart(since), named: since)
        }
    }

    /// `orderlive webhooks test ID`
    struct Test: EndpointCommand {
        static let configuration = CommandConfiguration(abstract: "Send the endpoint one signed test request and show its answer.")
        @OptionGroup var endpoint: ChosenEndpoint

        func perform(_ commands: OperatorCommands, on id: Int64) async throws { try await commands.testWebhook(id) }
    }

    /// `orderlive webhooks rotate ID`
    struct Rotate: EndpointCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give an endpoint a new signing key; for 24 hours requests carry signatures with both, so the receiver can switch.")
        @OptionGroup var endpoint: ChosenEndpoint
        @Option(help: "A file holding the new whsec_… key; without it one is made and written 0600 to a file named here.")
        var secretFile: String?

        func perform(_ commands: OperatorCommands, on id: Int64) async throws {
            try await commands.rotateWebhook(id, secretFile: secretFile)
        }
    }
}
