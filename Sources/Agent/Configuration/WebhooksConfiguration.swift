package import CheckedInput
public import CurlHTTP
public import WebhookDelivery
import Foundation

/// `webhooks.*`: how outgoing webhooks are sent (DESIGN §13); the endpoints themselves are in the store
/// (`orderlive webhooks add`).
public struct WebhooksConfiguration: Sendable, Hashable {
    /// The deliverer's own defaults, which these keys start from.
    private static let deliverer = WebhookSettings()

    /// One attempt's deadline.
    public var timeout = deliverer.timeout
    /// The waits between attempts, as written (`5s,5m,30m,…`).
    public var retrySchedule = "5s,5m,30m,2h,5h,10h,14h,20h,24h"
    /// Extra CA certificates for https endpoints.
    public var caFile = ""
    /// Changes an endpoint may fall behind before it is disabled.
    public var maximumBacklog = Int(deliverer.maximumBacklog)
    /// The proxy for every delivery; empty for none (the environment's proxy variables are not read).
    public var proxy = ""
    /// Hosts reached without the proxy (`NO_PROXY`'s syntax).
    public var noProxy = ""
    /// Link-local or metadata ranges endpoints may reach anyway (CIDRs, comma-separated).
    public var allowPrivate = ""

    /// The built-in defaults.
    public init() {}

    /// Reads and validates `webhooks.timeout_ms`, `retry_schedule`, `ca_file`, `max_backlog`, `proxy`,
    /// `no_proxy` and `allow_private`.
    public init(reading section: ConfigurationSection) throws(ConfigurationError) {
        timeout = try section.milliseconds("timeout_ms", minimum: 1, default: timeout)
        retrySchedule = section.string("retry_schedule", default: retrySchedule)
        caFile = section.string("ca_file", default: caFile)
        maximumBacklog = try section.integer("max_backlog", minimum: 1, maximum: 1_000_000_000, default: maximumBacklog)
        proxy = section.string("proxy", default: proxy)
        noProxy = section.string("no_proxy", default: noProxy)
        allowPrivate = section.string("allow_private", default: allowPrivate)
        _ = try Self.schedule(retrySchedule)
        _ = try Self.ranges(allowPrivate)
        if !proxy.isEmpty {
            guard let parts = URLComponents(string: proxy), let scheme = parts.scheme?.lowercased(),
                  ["http", "https", "socks5", "socks5h"].contains(scheme), !(parts.host ?? "").isEmpty else {
                throw ConfigurationError("webhooks.proxy must be a proxy URL such as http://proxy.internal:3128, not '\(proxy)'")
            }
        }
    }

    /// The ranges of `webhooks.allow_private`.
    package static func ranges(_ text: String) throws(ConfigurationError) -> [AddressRange] {
        switch AddressRange.list(text) {
        case .success(let ranges): return ranges
        case .failure(let invalid):
            throw ConfigurationError(
                "webhooks.allow_private: '\(invalid.entry)' is not an IP address or CIDR range such as 169.254.169.254/32 or fe80::/10")
        }
    }

    /// The guard every delivery and `webhooks add` apply.
    public var addressGuard: AddressGuard {
        AddressGuard(allowed: (try? Self.ranges(allowPrivate)) ?? [], hint: "list it in webhooks.allow_private to allow it")
    }

    /// The schedule as durations: comma-separated whole numbers of seconds, minutes or hours (`5s`,
    /// `30m`, `2h`), each at most a week; at most 50 of them.
    package static func schedule(_ text: String) throws(ConfigurationError) -> [Duration] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !parts.isEmpty, parts.count <= 50 else {
            throw ConfigurationError("webhooks.retry_schedule must list 1 to 50 waits such as 5s,5m,2h, not '\(text)'")
        }
        var waits: [Duration] = []
        for part in parts {
            let unit: Int64? = switch part.last { case "s": 1; case "m": 60; case "h": 3_600; default: nil }
            guard let unit, let count = Checked.nonNegative(decimal: part.dropLast()), count <= 604_800 / unit else {
                throw ConfigurationError("webhooks.retry_schedule: '\(part)' is not a wait such as 5s, 30m or 2h (at most a week)")
            }
            waits.append(.seconds(count * unit))
        }
        return waits
    }

    /// The deliverer's settings.
    public var settings: WebhookSettings {
        WebhookSettings(
            timeout: timeout, retrySchedule: (try? Self.schedule(retrySchedule)) ?? WebhookSettings.standardSchedule,
            caFile: caFile, maximumBacklog: Int64(maximumBacklog), proxy: ProxyRoute(url: proxy, bypass: noProxy),
            addressGuard: addressGuard)
    }
}
