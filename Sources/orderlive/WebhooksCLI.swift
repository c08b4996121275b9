import Agent
import ArgumentParser
import CheckedInput
import CurlHTTP
import Foundation
import StoreModel

/// `orderlive webhooks`: outgoing webhooks for every order change (issue 40).
struct Webhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send every order change, signed (Standard Webhooks), to endpoints kept in the store.",
        subcommands: [Add.self, List.self, Remove.self, Enable.self, Disable.self, Replay.self, Test.self, Rotate.self]
    )

    /// Runs `body` on the configured store's endpoints, the refusal or failure in one line.
    static func withOutbox<T: Sendable>(
        _ config: ConfigOption, _ body: @escaping @Sendable (OrderliveConfiguration, any WebhookOutbox & ChangeFeedSource) async throws -> T
    ) async throws -> T {
        let configuration = try await config.load()
        do {
            return try await ConfiguredStore.withWebhooks(configuration, logger: authCommandLogger()) {
                try await body(configuration, $0)
            }
        } catch let refusal as WebhookAdministration.Refusal {
            throw RuntimeFailure(description: refusal.description)
        } catch let failure as RuntimeFailure {
            throw failure
        } catch {
            throw RuntimeFailure(description: "cannot use the order database: \(error)")
        }
    }

    /// An endpoint id argument.
    struct EndpointID: ParsableArguments {
        @Argument(help: "The endpoint's id (`orderlive webhooks list` shows them).")
        var id: String

        func validate() throws {
            guard number != nil else {
                throw ValidationError("'\(id)' is not an endpoint id: ids are positive whole numbers (see `orderlive webhooks list`)")
            }
        }

        var number: Int64? { Checked.int64(decimal: id).flatMap { $0 > 0 ? $0 : nil } }
    }

    static func unknown(_ id: Int64) -> RuntimeFailure {
        RuntimeFailure(description: "no webhook endpoint \(id); `orderlive webhooks list` shows the ids")
    }

    /// `orderlive webhooks add URL`
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an endpoint; it receives the changes made from now on. Prints its id.")

        @OptionGroup var config: ConfigOption
        @Argument(help: "Where to POST each change (http:// or https://).") var url: String
        @Option(help: "A file holding the whsec_… signing key; without it a new key is made and written 0600 to a file named here.")
        var secretFile: String?
        @Option(help: "Only these event types: order.upserted, order.removed, order.deleted (comma-separated).") var events: String?
        @Option(name: .customLong("store-id"), help: "Only orders of these stores (comma-separated ids).") var storeIDs: String?

        func run() async throws {
            do {
                _ = try WebhookAdministration.checkedURL(url)
                _ = try WebhookAdministration.checkedEvents(events)
                if let secretFile { _ = try WebhookAdministration.secret(from: secretFile) }
            } catch {
                throw RuntimeFailure(description: error.description)
            }
            let (url, events, storeIDs, secretFile) = (url, events, storeIDs, secretFile)
            let (endpoint, written) = try await Webhooks.withOutbox(config) { configuration, store in
                var secret: String
                var written: String?
                if let secretFile {
                    secret = try WebhookAdministration.secret(from: secretFile)
                } else {
                    (secret, written) = try WebhookAdministration.newSecret(in: configuration.store.stateDirectory)
                }
                let endpoint = try await store.addWebhookEndpoint(NewWebhookEndpoint(
                    url: url, secret: secret, events: try WebhookAdministration.checkedEvents(events),
                    storeIDs: WebhookEndpoint.split(storeIDs?.replacingOccurrences(of: " ", with: ""))))
                secret = ""
                return (endpoint, written)
            }
            LineWriter.standardOutput.write(line: "\(endpoint.id)")
            if let written {
                LineWriter.standardError.write(line: "orderlive: the endpoint's new signing key is in \(written) (0600); give it to the receiver")
            }
        }
    }

    /// `orderlive webhooks list`
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the endpoints: state, filters, progress, last error.")

        @OptionGroup var config: ConfigOption
        @Flag(help: "A JSON array: id, url, events, store_ids, state, disabled_reason, last_delivered_seq, backlog, attempts, last_error, last_error_at, last_success_at.")
        var json = false

        func run() async throws {
            let (endpoints, head) = try await Webhooks.withOutbox(config) { _, store in
                (try await store.webhookEndpoints(), try await store.changeHead())
            }
            if json {
                LineWriter.standardOutput.write(line: WebhookOutput.listJSON(endpoints, head: head))
            } else if endpoints.isEmpty {
                LineWriter.standardOutput.write(line: "No webhook endpoints; `orderlive webhooks add URL` adds one.")
            } else {
                for line in WebhookOutput.listLines(endpoints, head: head) { LineWriter.standardOutput.write(line: line) }
            }
        }
    }

    /// `orderlive webhooks remove ID`
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an endpoint for good.")
        @OptionGroup var config: ConfigOption
        @OptionGroup var endpoint: EndpointID

        func run() async throws {
            let id = endpoint.number ?? 0
            guard try await Webhooks.withOutbox(config, { try await $1.removeWebhookEndpoint(id: id) }) else { throw Webhooks.unknown(id) }
            LineWriter.standardOutput.write(line: "Removed webhook endpoint \(id).")
        }
    }

    /// `orderlive webhooks enable ID`
    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable an endpoint: delivery resumes from its cursor, attempts reset, within a second.")
        @OptionGroup var config: ConfigOption
        @OptionGroup var endpoint: EndpointID

        func run() async throws {
            let id = endpoint.number ?? 0
            guard try await Webhooks.withOutbox(config, { try await $1.setWebhookEndpoint(id: id, enabled: true, reason: nil) }) else {
                throw Webhooks.unknown(id)
            }
            LineWriter.standardOutput.write(line: "Enabled webhook endpoint \(id).")
        }
    }

    /// `orderlive webhooks disable ID`
    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable an endpoint; its cursor is kept for `enable`.")
        @OptionGroup var config: ConfigOption
        @OptionGroup var endpoint: EndpointID

        func run() async throws {
            let id = endpoint.number ?? 0
            guard try await Webhooks.withOutbox(config, {
                try await $1.setWebhookEndpoint(id: id, enabled: false, reason: "disabled by an operator")
            }) else { throw Webhooks.unknown(id) }
            LineWriter.standardOutput.write(line: "Disabled webhook endpoint \(id).")
        }
    }
}
