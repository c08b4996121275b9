import ArgumentParser
import Commands

/// `orderlive webhooks`: outgoing webhooks for every order change (DESIGN §13).
struct Webhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send every order change, signed (Standard Webhooks), to endpoints kept in the store.",
        subcommands: [Add.self, List.self, Remove.self, Enable.self, Disable.self, Replay.self, Test.self, Rotate.self]
    )

    /// The configuration and one endpoint's id, for the commands on one endpoint.
    struct ChosenEndpoint: ParsableArguments {
        @OptionGroup var config: ConfigOption
        @Argument(help: "The endpoint's id (`orderlive webhooks list` shows them).") var id: String

        func validate() throws {
            try usage(OperatorCommands.webhookID(id))
        }

        var number: Int64 { (try? OperatorCommands.webhookID(id)) ?? 0 }
    }

    /// `orderlive webhooks add URL`
    struct Add: OperatorCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an endpoint; it receives the changes made from now on. Prints its id.")

        @OptionGroup var config: ConfigOption
        @Argument(help: "Where to POST each change (http:// or https://).") var url: String
        @Option(help: "A file holding the whsec_… signing key; without it a new key is made and written 0600 to a file named here.")
        var secretFile: String?
        @Option(help: "Only these event types: order.upserted, order.removed, order.deleted (comma-separated).") var events: String?
        @Option(name: .customLong("store-id"), help: "Only orders of these stores (comma-separated ids).") var storeIDs: String?

        func perform(_ commands: OperatorCommands) async throws {
            try await commands.addWebhook(url: url, secretFile: secretFile, events: events, storeIDs: storeIDs)
        }
    }

    /// `orderlive webhooks list`
    struct List: OperatorCommand {
        static let configuration = CommandConfiguration(abstract: "List the endpoints: state, filters, progress, last error.")

        @OptionGroup var config: ConfigOption
        @Flag(help: "A JSON array: id, url, events, store_ids, state, disabled_reason, last_delivered_seq, backlog, attempts, last_error, last_error_at, last_success_at.")
        var json = false

        func perform(_ commands: OperatorCommands) async throws { try await commands.listWebhooks(json: json) }
    }

    /// `orderlive webhooks remove ID`
    struct Remove: EndpointCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an endpoint for good.")
        @OptionGroup var endpoint: ChosenEndpoint

        func perform(_ commands: OperatorCommands, on id: Int64) async throws { try await commands.removeWebhook(id) }
    }

    /// `orderlive webhooks enable ID`
    struct Enable: EndpointCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable an endpoint: delivery resumes from its cursor, attempts reset, within a second.")
        @OptionGroup var endpoint: ChosenEndpoint

        func perform(_ commands: OperatorCommands, on id: Int64) async throws { try await commands.setWebhook(id, enabled: true) }
    }

    /// `orderlive webhooks disable ID`
    struct Disable: EndpointCommand {
        static let configuration = CommandConfiguration(abstract: "Disable an endpoint; its cursor is kept for `enable`.")
        @OptionGroup var endpoint: ChosenEndpoint

        func perform(_ commands: OperatorCommands, on id: Int64) async throws { try await commands.setWebhook(id, enabled: false) }
    }
}

/// A command on one webhook endpoint (`orderlive webhooks VERB ID`): an ``OperatorCommand`` that
/// hands the endpoint's id to ``perform(_:on:)`` as well.
protocol EndpointCommand: OperatorCommand {
    /// The configuration and the endpoint's id.
    var endpoint: Webhooks.ChosenEndpoint { get }
    /// Does the command's work on endpoint `id`.
    func perform(_ commands: OperatorCommands, on id: Int64) async throws
}

extension EndpointCommand {
    var config: ConfigOption { endpoint.config }

    func perform(_ commands: OperatorCommands) async throws {
        try await perform(commands, on: endpoint.number)
    }
}
