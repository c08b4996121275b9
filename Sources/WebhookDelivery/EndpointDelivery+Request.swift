import CheckedInput
public import CurlHTTP
import Foundation
public import StoreModel
import WebhookSigning

/// How an endpoint's requests are made: signed with its secrets, carrying its extra headers, its
/// client certificate, the configured proxy and the address guard. Deliveries and `webhooks test`
/// both make theirs here, so a test request is what a delivery would be.
public enum WebhookRequest {
    /// What every request of one turn shares: the signers, the time they sign at, the extra headers
    /// (files read once per turn, so a key replaced in its file is sent from the next turn).
    public struct Signing: Sendable {
        var signers: [StandardWebhooks]
        var at: Double
        var headers: [(name: String, value: String)]
    }

    /// Why an endpoint's requests could not be made: its configuration is wrong.
    public struct SigningFailure: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// The signing and headers of requests to `endpoint` at `at` (Unix seconds); a failure names what
    /// is wrong with the endpoint.
    public static func signing(for endpoint: WebhookEndpoint, at: Double) throws(SigningFailure) -> Signing {
        let signers: [StandardWebhooks]
        do {
            signers = try endpoint.signingSecrets(at: at).map { secret throws(StandardWebhooksSecretError) in
                try StandardWebhooks(secret: secret)
            }
        } catch {
            throw SigningFailure(reason: "the endpoint's secret is not a Standard Webhooks key")
        }
        var headers: [(name: String, value: String)] = []
        for header in endpoint.options.headers {
            if let file = header.file {
                guard let data = FileManager.default.contents(atPath: file), data.count <= 8_192 else {
                    throw SigningFailure(reason: "cannot read the file \(file) of header \(header.name) (at most 8 KiB)")
                }
                headers.append((header.name, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
            } else {
                headers.append((header.name, header.value ?? ""))
            }
        }
        return Signing(signers: signers, at: at, headers: headers)
    }

    /// One POST of `body` under `messageID` to `endpoint`, signed as `signing` says, sent as `settings` say.
    public static func make(
        _ body: [UInt8], messageID: String, endpoint: WebhookEndpoint, signing: Signing, settings: WebhookSettings
    ) -> HTTPRequest {
        let timestamp = Int64(clamping: Checked.int64(clamping: signing.at))
        let signature = signing.signers.map { $0.sign(id: messageID, timestamp: timestamp, body: body) }.joined(separator: " ")
        var headers: HTTPHeaders = ["Content-Type": "application/json", "webhook-id": messageID, "webhook-timestamp": "\(timestamp)",
                                    "webhook-signature": signature]
        for header in signing.headers { headers.add(name: header.name, value: header.value) }
        return HTTPRequest(
            url: endpoint.url, method: "POST", headers: headers,
            body: body, connectTimeout: min(settings.timeout, .seconds(10)), timeout: settings.timeout,
            tls: TLSOptions(caFile: settings.caFile, clientCertificate: endpoint.options.clientCertificate,
                            clientKey: endpoint.options.clientKey),
            maximumRedirects: 0, maximumResponseBytes: 1 << 20, proxy: settings.proxy, addressGuard: settings.addressGuard)
    }
}

/// A delivery's requests, and what their answers mean for the endpoint.
extension EndpointDelivery {
    typealias Signing = WebhookRequest.Signing

    /// The signing of this turn's requests (``WebhookRequest/signing(for:at:)``).
    func signing(for endpoint: WebhookEndpoint, at: Double) throws(WebhookRequest.SigningFailure) -> Signing {
        try WebhookRequest.signing(for: endpoint, at: at)
    }

    /// One delivery's POST under the deliverer's settings.
    func request(_ body: [UInt8], messageID: String, endpoint: WebhookEndpoint, signing: Signing) -> HTTPRequest {
        WebhookRequest.make(body, messageID: messageID, endpoint: endpoint, signing: signing, settings: deliverer.settings)
    }

    enum Outcome {
        case delivered
        case gone(Int)
        case failed(String, retryAfter: Double?)
    }

    /// What an attempt's result means for the endpoint.
    static func outcome(_ result: Result<HTTPResponse, CurlError>) -> Outcome {
        switch result {
        case .success(let response):
            switch response.status {
            case 200..<300: return .delivered
            case 410: return .gone(410)
            default:
                let retryAfter = response.head.headers["Retry-After"].flatMap { Checked.nonNegative(decimal: $0) }.map(Double.init)
                return .failed("the endpoint answered \(response.status)", retryAfter: retryAfter)
            }
        case .failure(let error):
            return .failed("\(error)", retryAfter: nil)
        }
    }

    /// The URL without its query or user information, which may hold a token.
    static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "(unreadable URL)" }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        return parts.string ?? "(unreadable URL)"
    }
}
