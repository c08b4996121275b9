public import Agent
public import CurlHTTP
import CheckedInput
import Foundation
import SQLiteStore
public import StoreModel
import WebhookDelivery
import WebhookSigning

#if canImport(Glibc)
import Glibc
#endif

/// What `orderlive webhooks` does to the configured store (DESIGN §13): the checks of what an operator
/// types, and the store they act on. Every refusal names what was wrong and changes nothing.
public enum WebhookAdministration {
    /// Why a webhooks command was refused.
    public struct Refusal: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// `url` when it is an absolute http(s) URL with a host.
    public static func checkedURL(_ url: String) throws(Refusal) -> String {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = parts.host, !host.isEmpty else {
            throw Refusal("'\(url)' is not an http:// or https:// URL with a host")
        }
        return url
    }

    /// Refuses `url` when its host is, or resolves to, an address `addressGuard` does not permit (a
    /// link-local or cloud metadata address); a host that does not resolve now is let through (the
    /// guard checks again at every connection).
    public static func checkedReach(_ url: String, _ addressGuard: AddressGuard) throws(Refusal) {
        guard let host = URLComponents(string: url)?.host else { return }
        for address in AddressGuard.resolve(host) where !addressGuard.permits(address) {
            throw Refusal("""
                \(host) is \(AddressRange.text(address) == host ? "" : "at ")\(AddressRange.text(address)), a link-local or cloud \
                metadata address, which webhooks may not reach; list it in webhooks.allow_private to allow it
                """)
        }
    }

    /// The event types of `--events`, each one the change feed names.
    public static func checkedEvents(_ list: String?) throws(Refusal) -> Set<String> {
        let events = WebhookEndpoint.split(list?.replacingOccurrences(of: " ", with: ""))
        for event in events where !WebhookEndpoint.eventTypes.contains(event) {
            throw Refusal("unknown event type '\(event)'; use \(WebhookEndpoint.eventTypes.sorted().joined(separator: ", "))")
        }
        return events
    }

    /// The secret in `file` (one `whsec_…` line), checked.
    public static func secret(from file: String) throws(Refusal) -> String {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw Refusal("cannot read the secret file \(file); give a file holding one whsec_… key, or leave --secret-file out to have one made")
        }
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard secret.hasPrefix("whsec_"), (try? StandardWebhooks(secret: secret)) != nil else {
            throw Refusal("the secret file \(file) does not hold a Standard Webhooks key (whsec_ followed by base64)")
        }
        return secret
    }

    /// A new secret (24 random bytes), written 0600 to a new file in `directory`; returns both.
    public static func newSecret(in directory: String) throws -> (secret: String, file: String) {
        var bytes = [UInt8](repeating: 0, count: 24)
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = UInt8.random(in: .min ... .max, using: &generator) }
        let secret = "whsec_" + Data(bytes).base64EncodedString()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/webhook-secret-\(UUID().uuidString.prefix(8).lowercased()).txt"
        let descriptor = open(file, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Refusal("cannot write a new secret file in \(directory): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let line = Array((secret + "\n").utf8)
        guard write(descriptor, line, line.count) == line.count else {
            throw Refusal("cannot write the new secret file \(file): \(String(cString: strerror(errno)))")
        }
        return (secret, file)
    }

    /// One signed test request to `endpoint` (`webhooks test`): its status and the start of its body.
    public static func ping(_ endpoint: WebhookEndpoint, settings: WebhooksConfiguration, loop: CurlLoop) async throws -> (Int, String) {
        let now = Date().timeIntervalSince1970
        let body = Array(#"{"type":"webhook.test","endpoint":\#(endpoint.id)}"#.utf8)
        let signing = try WebhookRequest.signing(for: endpoint, at: now)
        let response = try await loop.perform(WebhookRequest.make(
            body, messageID: "msg_\(endpoint.id)_test_\(Int64(now))", endpoint: endpoint, signing: signing, settings: settings.settings))
        return (response.status, String(decoding: response.body.prefix(500), as: UTF8.self))
    }
}
