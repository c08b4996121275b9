import AsyncSignals
import CoreMetrics
import CurlHTTP
import Foundation
import OrdersAPI

/// Fetches `api.jwt.jwks_url` through the agent's own HTTP loop (DESIGN §14), with the usual
/// deadlines and a bounded body. The API's settings are checked before the loop exists
/// (``AgentBuilder``), so the loop and the failure counter are handed over once they do (``bind(loop:factory:)``);
/// until then a fetch fails (and the verifier keeps what it has).
final class JWKSFetcher: Sendable {
    private let url: String
    private let bound = Locked<(loop: CurlLoop, failures: Counter)?>(nil)

    /// The `# HELP` text of the family made here.
    static let help = [
        "orderlive_api_jwks_fetch_failures_total": "Fetches of api.jwt.jwks_url that failed or did not read; the last good keys stayed in use",
    ]

    /// The most bytes of a JWKS document read.
    static let largestDocument = 1 << 20

    init(url: String) {
        self.url = url
    }

    /// Hands over the loop and the metrics.
    func bind(loop: CurlLoop, factory: any MetricsFactory) {
        bound.withLock { $0 = (loop, Counter(label: "orderlive_api_jwks_fetch_failures_total", factory: factory)) }
    }

    /// Counts a failed fetch.
    func failed() {
        bound.withLock { $0?.failures }?.increment()
    }

    /// The document, or why not (never a 200 with another body: a JWKS URL that answers an error
    /// page keeps the last good keys).
    func fetch() async throws -> String {
        guard let loop = bound.withLock({ $0?.loop }) else { throw JWKSFetchError(description: "the agent is still starting") }
        let response = try await loop.perform(HTTPRequest(
            url: url, headers: ["Accept": "application/json"], connectTimeout: .seconds(5), timeout: .seconds(10),
            maximumRedirects: 3, maximumResponseBytes: Self.largestDocument))
        guard response.status == 200 else { throw JWKSFetchError(description: "api.jwt.jwks_url answered \(response.status)") }
        return String(decoding: response.body, as: UTF8.self)
    }
}

/// A JWKS fetch that failed: why, without the document.
struct JWKSFetchError: Error, CustomStringConvertible {
    var description: String
}
