import AsyncSignals
import CoalescedLogging
import CoreMetrics
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging

/// The way into the orders API: every route and the change feed get their ``APIAccess`` here, so
/// authentication, the scope rule and the audit (DESIGN §14; logs and
/// `orderlive_api_requests_total{consumer,outcome}`) happen in one place for all of them.
struct APIGate: Sendable {
    let authentication: APIAuthentication
    let audit: APIAudit

    /// The access of a request with these headers and URI on `route`, or its denial; either is counted,
    /// and a denial logged (coalesced). A JWT is verified here, once for the request.
    func access(headers: HTTPFields, uri: URI, route: String, query use: APIAccess.Query) async throws(APIDenial) -> APIAccess {
        let principal: APIPrincipal
        do throws(APIDenial) {
            principal = try await authentication.principal(headers: headers, uri: uri)
        } catch {
            audit.denied(error, route: route, principal: nil)
            throw error
        }
        do throws(APIDenial) {
            let access = try APIAccess(principal: principal, uri: uri, query: use)
            audit.record(.ok, principal: principal)
            return access
        } catch {
            audit.denied(error, route: route, principal: principal)
            throw error
        }
    }

    /// The access of `request` (see ``access(headers:uri:route:query:)``).
    func access(_ request: Request, route: String, query use: APIAccess.Query) async throws(APIDenial) -> APIAccess {
        try await access(headers: request.headers, uri: request.uri, route: route, query: use)
    }
}

/// What the orders API tells operators about its consumers (DESIGN §14): who subscribed, started or
/// ended a session, or was refused, by name (never the token), with the route and the stores; and
/// the requests counted by consumer and outcome. The `consumer` label is a configured name,
/// `anyone` (`api.auth: none`) or `unknown`, so the series stay as few as the tokens file's lines.
final class APIAudit: Sendable {
    /// How a request went; the `outcome` label.
    enum Outcome: String, Sendable, CaseIterable {
        case ok
        case unauthorized
        case forbidden
        case badRequest = "bad_request"
    }

    private let factory: any MetricsFactory
    /// A counter's place: the consumer's name and the outcome.
    private struct Series: Hashable {
        var name: String
        var outcome: Outcome
    }

    private let counters = Locked<[Series: Counter]>([:])
    private let logger: Logger
    private let refusals: LogCoalescer

    /// The `# HELP` text of the family made here.
    static let help: [String: String] = [
        "orderlive_api_requests_total": "Orders-API requests by consumer (a tokens-file name, anyone or unknown) and outcome",
    ]

    /// The most distinct consumer labels kept; past it, new names count as `unknown`.
    static let maximumConsumers = 1_024

    init(factory: any MetricsFactory, logger: Logger) {
        self.factory = factory
        self.logger = logger
        refusals = LogCoalescer(logger: logger, interval: .seconds(10))
    }

    /// Counts a request of `principal` (nil: not known) with `outcome`. A JWT's consumer counts as
    /// `jwt`: its names come from tokens, not from the configuration, so they are not bounded.
    func record(_ outcome: Outcome, principal: APIPrincipal?) {
        let name = principal.map { $0.isJWT ? "jwt" : $0.consumer.name } ?? "unknown"
        let key = Series(name: name, outcome: outcome)
        let counter = counters.withLock { counters -> Counter in
            if let counter = counters[key] { return counter }
            let label = counters.count < Self.maximumConsumers * Outcome.allCases.count ? name : "unknown"
            let counter = Counter(label: "orderlive_api_requests_total",
                                  dimensions: [("consumer", label), ("outcome", outcome.rawValue)], factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
    }

    /// Counts and logs a refused request: 401 at `notice` with "unknown", 403 with the consumer's
    /// name and stores; 400 is only counted.
    func denied(_ denial: APIDenial, route: String, principal: APIPrincipal?) {
        switch denial {
        case .unauthorized(let reason):
            record(.unauthorized, principal: nil)
            refusals.log(.notice, "orders API request refused: not authenticated", key: "401 \(route) \(reason)", metadata: [
                "api.consumer": "unknown", "api.route": "\(route)", "api.reason": "\(reason)",
            ])
        case .forbidden(let reason):
            record(.forbidden, principal: principal)
            let name = principal?.consumer.name ?? "unknown"
            refusals.log(.notice, "orders API request refused: outside the consumer's stores", key: "403 \(route) \(name)", metadata: [
                "api.consumer": "\(name)", "api.route": "\(route)", "api.stores": "\(principal?.consumer.storesText ?? "none")",
                "api.reason": "\(reason)",
            ])
        case .badRequest:
            record(.badRequest, principal: principal)
        }
    }

    /// Logs a feed subscription (info; one line per subscriber is the feed's own rate, coalesced by consumer).
    func subscribed(_ principal: APIPrincipal, filter: String) {
        refusals.log(.info, "change-feed subscriber connected", key: "subscribe \(principal.consumer.name) \(filter)", metadata: [
            "api.consumer": "\(principal.consumer.name)", "api.route": "\(ChangeFeed.path)",
            "api.stores": "\(principal.consumer.storesText)", "api.via": "\(principal.via)",
        ])
    }

    /// Logs a session's start or end (info).
    func session(_ event: String, _ principal: APIPrincipal?) {
        logger.info("orders API session \(event)", metadata: [
            "api.consumer": "\(principal?.consumer.name ?? "unknown")", "api.route": "/v1/session",
            "api.stores": "\(principal?.consumer.storesText ?? "none")",
        ])
    }

    /// Logs a change of the consumers (SIGHUP): who was revoked, what ended.
    func replaced(_ replacement: APICredentials.Replacement, feedsEnded: Int) {
        logger.notice("orders API tokens reloaded", metadata: [
            "api.revoked": "\(replacement.revoked.isEmpty ? "none" : replacement.revoked.joined(separator: ","))",
            "api.sessions_ended": "\(replacement.sessionsEnded)", "api.feeds_ended": "\(feedsEnded)",
        ])
    }
}
