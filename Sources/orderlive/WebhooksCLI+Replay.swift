import Agent
import ArgumentParser
import CheckedInput
import CurlHTTP
import Foundation
import StoreModel

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
            guard Checked.nonNegative(decimal: since) != nil || Checked.rfc3339(since) != nil else {
                throw ValidationError("--since takes a change id (a whole number) or an RFC 3339 time such as 2026-11-26T09:00:00Z, not '\(since)'")
            }
        }

        func run() async throws {
            let (id, since) = (endpoint.number ?? 0, since)
            let from = try await Webhooks.withOutbox(config) { _, store -> Int64 in
                guard try await store.webhookEndpoints().contains(where: { $0.id == id }) else { throw Webhooks.unknown(id) }
                var seq: Int64
                if let number = Checked.nonNegative(decimal: since) {
                    seq = number
                } else {
                    guard let at = Checked.rfc3339(since), let before = try await store.lastChange(before: at) else {
                        throw RuntimeFailure(description: "the change log holds no changes to replay")
                    }
                    seq = before
                }
                if case .reset(let reason) = try await store.changes(after: seq, limit: 1) {
                    throw RuntimeFailure(description: "cannot replay from \(since): \(reason); nothing was changed")
                }
                guard try await store.rewindWebhookEndpoint(id: id, to: seq) else { throw Webhooks.unknown(id) }
                return seq
            }
            LineWriter.standardOutput.write(line: "Webhook endpoint \(id) is sent the changes after \(from) again (a running agent starts within a second).")
        }
    }

    /// `orderlive webhooks test ID`
    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send the endpoint one signed test request and show its answer.")
        @OptionGroup var config: ConfigOption
        @OptionGroup var endpoint: EndpointID

        func run() async throws {
            let id = endpoint.number ?? 0
            let (status, body) = try await Webhooks.withOutbox(config) { configuration, store in
                guard let endpoint = try await store.webhookEndpoints().first(where: { $0.id == id }) else { throw Webhooks.unknown(id) }
                return try await CurlLoop.withLoop(logger: authCommandLogger()) { loop in
                    do {
                        return try await WebhookAdministration.ping(endpoint, settings: configuration.webhooks, loop: loop)
                    } catch {
                        throw RuntimeFailure(description: "the test request to endpoint \(id) failed: \(error)")
                    }
                }
            }
            LineWriter.standardOutput.write(line: "Endpoint \(id) answered \(status)\(body.isEmpty ? "" : ": " + body)")
            if !(200..<300).contains(status) { throw RuntimeFailure(description: "endpoint \(id) did not answer 2xx") }
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
            let (id, secretFile) = (endpoint.number ?? 0, secretFile)
            if let secretFile {
                do { _ = try WebhookAdministration.secret(from: secretFile) } catch { throw RuntimeFailure(description: error.description) }
            }
            let written = try await Webhooks.withOutbox(config) { configuration, store -> String? in
                guard try await store.webhookEndpoints().contains(where: { $0.id == id }) else { throw Webhooks.unknown(id) }
                let (secret, written): (String, String?) = if let secretFile {
                    (try WebhookAdministration.secret(from: secretFile), nil)
                } else {
                    try { let made = try WebhookAdministration.newSecret(in: configuration.store.stateDirectory); return (made.secret, made.file) }()
                }
                guard try await store.rotateWebhookSecret(id: id, to: secret) else { throw Webhooks.unknown(id) }
                return written
            }
            LineWriter.standardOutput.write(line: "Webhook endpoint \(id) signs with its new key, and with the old one beside it for 24 hours.")
            if let written {
                LineWriter.standardError.write(line: "orderlive: the endpoint's new signing key is in \(written) (0600); give it to the receiver")
            }
        }
    }
}
