public import Agent
import CheckedInput
public import CurlHTTP
public import Foundation
public import Logging
import PushIngest
import WebhookSigning

/// `orderlive push send`: posts a Gorush payload to a push endpoint the way a backend would, with the
/// configured `ingest.auth` — a bearer header, or Standard Webhooks headers signed over the exact
/// bytes sent.
public struct PushSend: Sendable {
    /// What the endpoint answered.
    public struct Answer: Sendable {
        /// The HTTP status.
        public var status: Int
        /// The response body as text.
        public var body: String
        /// `Retry-After`, when the endpoint sent one.
        public var retryAfter: String?
    }

    /// The endpoint's URL.
    public let url: String
    private let authentication: PushAuthentication
    private let logger: Logger

    /// Reads `ingest.auth` and its secret; the URL defaults to `http://<ingest.listen>/api/push`, with a
    /// wildcard listen address replaced by loopback.
    public init(configuration: OrderliveConfiguration, url: String?, logger: Logger) throws(CommandFailure) {
        do {
            self.authentication = try AgentBuilder.ingestAuthentication(configuration.ingest)
        } catch {
            throw CommandFailure(error.description)
        }
        self.logger = logger
        if let url {
            self.url = url
            return
        }
        guard let address = configuration.ingest.listenAddress else {
            throw CommandFailure("'ingest.listen' is empty, so there is no default push URL: pass --url")
        }
        // A wildcard listener is reached on loopback.
        let host = switch address.host {
        case "0.0.0.0": "127.0.0.1"
        case "::": "::1"
        default: address.host
        }
        self.url = "http://\(host.contains(":") ? "[\(host)]" : host):\(address.port)/api/push"
    }

    /// The headers that authenticate `body` under `ingest.auth`; `id` is the Standard Webhooks
    /// message id (a retry must reuse it so the endpoint can drop the duplicate).
    public func headers(for body: [UInt8], id: String, now: Int64) -> HTTPHeaders {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        switch authentication {
        case .none:
            break
        case .bearer(let secrets):
            // The newest secret is the file's first line (OPERATIONS: rotating the push secret).
            if let secret = secrets.first { headers.add(name: "Authorization", value: "Bearer \(secret)") }
        case .standardWebhooks(let verifiers):
            guard let webhooks = verifiers.first else { break }
            headers.add(name: "webhook-id", value: id)
            headers.add(name: "webhook-timestamp", value: String(now))
            headers.add(name: "webhook-signature", value: webhooks.sign(id: id, timestamp: now, body: body))
        }
        return headers
    }

    /// Posts `body` once. Throws a message naming the URL when the endpoint cannot be reached.
    public func send(_ body: [UInt8], id: String = "msg_" + UUID().uuidString.lowercased()) async throws(CommandFailure) -> Answer {
        let request = HTTPRequest(
            url: url, method: "POST",
            headers: headers(for: body, id: id, now: Checked.int64(clamping: Date().timeIntervalSince1970)),
            body: body, connectTimeout: .seconds(5), timeout: .seconds(30), maximumRedirects: 0,
            maximumResponseBytes: 1 << 20)
        let response: HTTPResponse
        do {
            response = try await CurlLoop.withLoop(logger: logger) { loop in try await loop.perform(request) }
        } catch let error as CurlError {
            throw CommandFailure("cannot post to \(url): \(error.description); is 'orderlive run' listening there?")
        } catch {
            throw CommandFailure("cannot post to \(url): \(error)")
        }
        return Answer(
            status: response.status, body: String(decoding: response.body, as: UTF8.self),
            retryAfter: response.head.headers["Retry-After"])
    }
}
