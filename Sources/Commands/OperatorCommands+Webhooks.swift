import Agent
import CheckedInput
import CurlHTTP
import Foundation
import StoreModel

/// `orderlive webhooks`: the outgoing webhook endpoints kept in the store, and what they are sent.
extension OperatorCommands {

    /// An endpoint id: a positive whole number.
    public static func webhookID(_ text: String) throws(CommandUsageError) -> Int64 {
        guard let id = Checked.int64(decimal: text), id > 0 else {
            throw CommandUsageError("'\(text)' is not an endpoint id: ids are positive whole numbers (see `orderlive webhooks list`)")
        }
        return id
    }

    /// Runs `body` on the configured store's endpoints, the refusal or failure in one line.
    func withOutbox<T: Sendable>(
        _ body: @escaping @Sendable (any WebhookOutbox & ChangeFeedSource) async throws -> T
    ) async throws -> T {
        do {
            return try await ConfiguredStore.withWebhooks(configuration, logger: quietLogger(), body)
        } catch let refusal as WebhookAdministration.Refusal {
            throw CommandFailure(refusal.description)
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure("cannot use the order database: \(error)")
        }
    }

    static func unknownWebhook(_ id: Int64) -> CommandFailure {
        CommandFailure("no webhook endpoint \(id); `orderlive webhooks list` shows the ids")
    }

    /// The signing key from `secretFile`, or a new one written 0600 beside the state (its file named).
    func signingKey(_ secretFile: String?) throws -> (secret: String, written: String?) {
        if let secretFile { return (try WebhookAdministration.secret(from: secretFile), nil) }
        let made = try WebhookAdministration.newSecret(in: configuration.store.stateDirectory)
        return (made.secret, made.file)
    }

    func noteWritten(_ written: String?) {
        if let written { console.note("orderlive: the endpoint's new signing key is in \(written) (0600); give it to the receiver") }
    }

    /// Adds an endpoint that receives the changes made from now on; writes its id.
    public func addWebhook(
        url: String, secretFile: String?, events: String?, storeIDs: String?, options input: WebhookOptionsInput = WebhookOptionsInput()
    ) async throws {
        let options: WebhookDeliveryOptions
        do {
            _ = try WebhookAdministration.checkedURL(url)
            try WebhookAdministration.checkedReach(url, configuration.webhooks.addressGuard)
            _ = try WebhookAdministration.checkedEvents(events)
            if let secretFile { _ = try WebhookAdministration.secret(from: secretFile) }
            options = try input.applied(to: WebhookDeliveryOptions())
        } catch {
            throw CommandFailure(error.description)
        }
        let (endpoint, written) = try await withOutbox { store in
            var (secret, written) = try signingKey(secretFile)
            let endpoint = try await store.addWebhookEndpoint(NewWebhookEndpoint(
                url: url, secret: secret, events: try WebhookAdministration.checkedEvents(events),
                storeIDs: WebhookEndpoint.split(storeIDs?.replacingOccurrences(of: " ", with: "")), options: options))
            secret = ""
            return (endpoint, written)
        }
        console.write("\(endpoint.id)")
        noteWritten(written)
    }

    /// Changes how an endpoint is sent its changes (`webhooks update`): the options given, the others kept.
    public func updateWebhook(_ id: Int64, options input: WebhookOptionsInput) async throws {
        guard !input.isEmpty else {
            throw CommandFailure("nothing to update: give --max-in-flight, --batch-size, --batch-ms, --rate, --header, --header-file, "
                + "--remove-header, --client-certificate or --client-key")
        }
        let options = try await withOutbox { store -> WebhookDeliveryOptions in
            guard let endpoint = try await store.webhookEndpoints().first(where: { $0.id == id }) else { throw Self.unknownWebhook(id) }
            let options = try input.applied(to: endpoint.options)
            guard try await store.updateWebhookEndpoint(id: id, options: options) else { throw Self.unknownWebhook(id) }
            return options
        }
        console.write("Updated webhook endpoint \(id): \(WebhookOutput.delivery(options)); running agents apply it within a second.")
    }

    /// The endpoints: state, filters, progress, last error.
    public func listWebhooks(json: Bool) async throws {
        let (endpoints, head) = try await withOutbox { store in
            (try await store.webhookEndpoints(), try await store.changeHead())
        }
        console.list(
            endpoints, json: json, empty: "No webhook endpoints; `orderlive webhooks add URL` adds one.",
            document: { WebhookOutput.listJSON($0, head: head) }, lines: { WebhookOutput.listLines($0, head: head) })
    }

    /// Removes an endpoint for good.
    public func removeWebhook(_ id: Int64) async throws {
        guard try await withOutbox({ try await $0.removeWebhookEndpoint(id: id) }) else { throw Self.unknownWebhook(id) }
        console.write("Removed webhook endpoint \(id).")
    }

    /// Enables an endpoint (delivery resumes from its cursor, attempts reset) or disables it (its cursor kept).
    public func setWebhook(_ id: Int64, enabled: Bool) async throws {
        let reason = enabled ? nil : "disabled by an operator"
        guard try await withOutbox({ try await $0.setWebhookEndpoint(id: id, enabled: enabled, reason: reason) }) else {
            throw Self.unknownWebhook(id)
        }
        console.write("\(enabled ? "Enabled" : "Disabled") webhook endpoint \(id).")
    }

    /// Sends the endpoint one signed test request and writes its answer; a failure unless it is 2xx.
    public func testWebhook(_ id: Int64) async throws {
        let settings = configuration.webhooks
        let (status, body) = try await withOutbox { store in
            guard let endpoint = try await store.webhookEndpoints().first(where: { $0.id == id }) else { throw Self.unknownWebhook(id) }
            return try await CurlLoop.withLoop(logger: quietLogger()) { loop in
                do {
                    return try await WebhookAdministration.ping(endpoint, settings: settings, loop: loop)
                } catch {
                    throw CommandFailure("the test request to endpoint \(id) failed: \(error)")
                }
            }
        }
        console.write("Endpoint \(id) answered \(status)\(body.isEmpty ? "" : ": " + body)")
        if !(200..<300).contains(status) { throw CommandFailure("endpoint \(id) did not answer 2xx") }
    }

    /// Gives an endpoint a new signing key; for 24 hours requests carry signatures with both.
    public func rotateWebhook(_ id: Int64, secretFile: String?) async throws {
        if let secretFile {
            do { _ = try WebhookAdministration.secret(from: secretFile) } catch { throw CommandFailure(error.description) }
        }
        let written = try await withOutbox { store -> String? in
            guard try await store.webhookEndpoints().contains(where: { $0.id == id }) else { throw Self.unknownWebhook(id) }
            let (secret, written) = try signingKey(secretFile)
            guard try await store.rotateWebhookSecret(id: id, to: secret) else { throw Self.unknownWebhook(id) }
            return written
        }
        console.write("Webhook endpoint \(id) signs with its new key, and with the old one beside it for 24 hours.")
        noteWritten(written)
    }
}
