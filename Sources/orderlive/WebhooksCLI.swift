import ArgumentParser
import Commands

/// `orderlive webhooks`: outgoing webhooks for every order change (DESIGN §13).
struct Webhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send every order change, signed (Standard Webhooks), to endpoints kept in the store.",
        subcommands: [Add.self, Update.self, List.self, Remove.self, Enable.self, Disable.self, Replay.self, Test.self, Rotate.self]
    )

    /// How an endpoint is sent its changes (`add` and `update`).
    struct DeliveryOptions: ParsableArguments {
        @Option(help: "Requests in flight at once (1-256, default 1); above 1, changes of different orders travel together, each order's in order.")
        var maxInFlight: String?
        @Option(help: "Changes per request (1-1000, default 1); above 1 the body is a JSON array signed as one message.")
        var batchSize: String?
        @Option(help: "How long a short batch waits for more changes, in ms (0-60000, default 0: sent at once).")
        var batchMs: String?
        @Option(help: "Requests per second at most (0 = no cap, the default; 0.5 is one every 2 s).")
        var rate: String?
        @Option(help: "An extra header NAME=VALUE sent with every request (repeatable).")
        var header: [String] = []
        @Option(help: "An extra header NAME=FILE whose value the agent reads from FILE, so a key is not on a command line (repeatable).")
        var headerFile: [String] = []
        @Option(help: "A PEM client certificate for an endpoint that asks for one (mTLS); '' removes it.")
        var clientCertificate: String?
        @Option(help: "The client certificate's PEM key, when not in the certificate's file.")
        var clientKey: String?

        func input(removing removed: [String] = []) -> WebhookOptionsInput {
            WebhookOptionsInput(
                maxInFlight: maxInFlight, batchSize: batchSize, batchMilliseconds: batchMs, rate: rate, headers: header,
                headerFiles: headerFile, removedHeaders: removed, clientCertificate: clientCertificate, clientKey: clientKey)
        }
    }

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
        @OptionGroup var delivery: DeliveryOptions

        func perform(_ commands: OperatorCommands) async throws {
            try await commands.addWebhook(url: url, secretFile: secretFile, events: events, storeIDs: storeIDs, options: delivery.input())
        }
    }

    /// `orderlive webhooks update ID`
    struct Update: EndpointCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change how an endpoint is sent its changes: the options given replace those it had, the others stay.")
        @OptionGroup var endpoint: ChosenEndpoint
        @OptionGroup var delivery: DeliveryOptions
        @Option(help: "Stop sending this extra header (repeatable).") var removeHeader: [String] = []

        func perform(_ commands: OperatorCommands, on id: Int64) async throws {
            try await commands.updateWebhook(id, options: delivery.input(removing: removeHeader))
        }
    }

    /// `orderlive webhooks list`
    struct List: OperatorCommand {
        static let configuration = CommandConfiguration(abstract: "List the endpoints: state, filters, progress, last error.")

        @OptionGroup var config: ConfigOption
        @Flag(help: "A JSON array: id, url, events, store_ids, state, disabled_reason, last_delivered_seq, backlog, attempts, last_error, last_error_at, last_success_at, max_in_flight, batch_size, batch_ms, rate_per_s, headers (values masked), client_certificate.")
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
